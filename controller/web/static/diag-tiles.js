// The health tiles (an ES module): one per part of the table, its state in colour, judged
// by what it does now (issue 30): a part is red while it is down, amber while it had errors
// in the last hour, green otherwise; one blip does not leave it amber for good.

import { dateTime, duration } from "./format.js";
import { $, el } from "./dom.js";
import { page } from "./diag-api.js";

function errorsText(errors) {
  const kinds = Object.entries(errors || {});
  if (!kinds.length) return "none";
  return kinds.map(([kind, n]) => `${kind.replace(/_/g, " ")} ${n}`).join(", ");
}

const seconds = (ms) => (ms === null || ms === undefined ? null : ms / 1000);
const agoText = (s) => (s === null || s === undefined ? "none yet" : `${duration(s)} ago`);

function tile(id, title, state, lines) {
  const list = el("dl", {});
  for (const [name, value] of lines) {
    if (value === undefined) continue;
    list.append(el("dt", { text: name }), el("dd", { text: value === null ? "–" : value }));
  }
  const words = { ok: "ok", warn: "look", bad: "down", off: "off" };
  return el(
    "div",
    { class: `tile ${state}`, id: `tile-${id}`, "data-testid": `tile-${id}`, "data-state": state },
    el("h3", {}, el("span", { class: "dot", "aria-hidden": "true" }), title, el("span", { class: "state", text: words[state] || state })),
    list,
  );
}

// A driver's errors: amber while any came in the last hour (a driver without the hour's
// count: since it started)
function recentErrors(part) {
  const hour = part.errors_last_hour;
  return Object.keys(hour === undefined ? part.errors || {} : hour).length > 0;
}

function errorLines(part) {
  return [
    ["errors, last hour", part.errors_last_hour === undefined ? undefined : errorsText(part.errors_last_hour)],
    ["errors since start", errorsText(part.errors)],
    ["last error", part.last_error_age_ms == null ? undefined : agoText(seconds(part.last_error_age_ms))],
  ];
}

// The shoe in one sentence, from what it does now: never "connected yes / state offline".
function shoeNow(shoe, fault) {
  const heard = shoe.last_message_age_ms == null ? "nothing heard yet" : `last message ${duration(seconds(shoe.last_message_age_ms))} ago`;
  if (fault && fault !== "offline") return [`FAULT: ${fault}`, "bad"];
  if (!shoe.connected) {
    const retry = shoe.next_retry_ms ? `; trying again in ${(shoe.next_retry_ms / 1000).toFixed(1)} s` : "";
    return [`OFFLINE: the port is not open (cable or power?)${retry}`, "bad"];
  }
  if (shoe.state === "offline" || fault === "offline") return [`OFFLINE: the port is open but the shoe is silent (${heard})`, "bad"];
  if (shoe.state === "online") return [`online: reading cards (${heard})`, recentErrors(shoe) ? "warn" : "ok"];
  return [`${String(shoe.state || "starting")}: ${heard}`, "warn"];
}

function shoeTile(shoe, shoeSnap) {
  if (!shoe) return tile("shoe", "Shoe", "off", [["shoe", "none configured (cards keyed in)"]]);
  const [now, state] = shoeNow(shoe, shoeSnap.fault);
  return tile("shoe", "Shoe", state, [
    ["now", now],
    ...errorLines(shoe),
    ["port", shoe.url],
    ["firmware", shoe.firmware],
    ["cards dealt", shoeSnap.dealt],
    ["door", shoeSnap.door_open ? "OPEN" : "closed"],
    ["cut card", shoeSnap.cut_card_out ? "out" : "in"],
    ["shuffling", shoe.shuffling ? "yes" : "no"],
    ["reconnects", shoe.reconnects],
  ]);
}

// The jackpot link from the controller's signed heartbeat and the last ack (issue 28 item 3):
// down while the table refuses progressive wagers, or the heartbeat is older than the limit.
function jackpotTile(status, link) {
  const c = (link && link.controller) || {};
  const limit = link && link.controller_timeout_s;
  const heard = c.heard_age_s;
  const silent = limit != null && (heard == null || heard >= limit);
  const down = !status.jackpot_link || c.state === "offline" || (link && silent);
  const late = !down && limit != null && heard != null && heard >= limit / 2; // a heartbeat or two missed
  const why = status.jackpot_link_words ? `${status.jackpot_link_words}; ` : silent && link ? "no heartbeat from the jackpot controller; " : "";
  return tile("jackpot", "Jackpot link", down ? "bad" : late ? "warn" : "ok", [
    ["link", down ? `DOWN: ${why}progressive wagers refused` : "up: progressive wagers taken"],
    ["controller", c.state ? `${c.state} (boot ${c.boot})` : "not heard yet"],
    ["last heartbeat", heard == null ? "none yet" : `${duration(heard)} ago` + (limit != null ? ` (down after ${limit} s without one)` : "")],
    ["last ack", !link || link.last_ack_age_s == null ? "none yet" : `${duration(link.last_ack_age_s)} ago (message ${link.last_ack})`],
    ["waiting for an ack", link ? `${link.depth} message${link.depth === 1 ? "" : "s"}` : undefined],
  ]);
}

export function renderTiles(status, snap, health, history) {
  const tiles = [shoeTile(health.shoe, snap.shoe || {})];
  const gpio = health.gpio;
  if (gpio) {
    const bad = !gpio.connected || gpio.faulted;
    tiles.push(
      tile("gpio", "GPIO", bad ? "bad" : recentErrors(gpio) ? "warn" : "ok", [
        ["now", gpio.connected ? (gpio.faulted ? `FAULT: ${gpio.faulted}` : "reading the pins") : "NOT CONNECTED"],
        ...errorLines(gpio),
        ["inputs", Object.keys(gpio.inputs || {}).length],
        ["lights", Object.keys(gpio.lights || {}).length],
      ]),
    );
  } else {
    tiles.push(tile("gpio", "GPIO", "off", [["gpio", "none"]]));
  }
  const camera = health.camera;
  if (camera) {
    tiles.push(
      tile("camera", "Camera", !camera.connected ? "bad" : recentErrors(camera) ? "warn" : "ok", [
        ["now", camera.connected ? "reading cards" : "NOT CONNECTED"],
        ["last message", agoText(seconds(camera.last_message_age_ms))],
        ...errorLines(camera),
        ["source", camera.source],
        ["frames read", camera.frames],
      ]),
    );
  } else {
    tiles.push(tile("camera", "Camera", "off", [["camera", "none configured"]]));
  }
  const link = health.link;
  tiles.push(jackpotTile(status, link));
  if (link) {
    tiles.push(
      tile("link", "MQTT link", !link.connected ? "bad" : Object.keys(link.errors || {}).length ? "warn" : "ok", [
        ["broker", link.connected ? "connected" : "NOT CONNECTED"],
        ["errors since start", errorsText(link.errors)],
        ["last ack", agoText(link.last_ack_age_s)],
        ["controller", controllerText(link.controller)],
        ["stopped", link.stopped_at || undefined],
      ]),
    );
    tiles.push(
      tile("outbox", "Outbox", link.depth > 0 ? "warn" : "ok", [
        ["waiting", `${link.depth} message(s)`],
        ["last ack seq", link.last_ack],
        ["last ack age", link.last_ack_age_s === null ? "none yet" : duration(link.last_ack_age_s)],
        ["next seq", link.next_seq],
      ]),
    );
  } else {
    tiles.push(tile("link", "MQTT link", "off", [["link", "not running"]]));
  }
  tiles.push(
    tile("journal", "Journal", status.journal_fault ? "bad" : status.events_dropped ? "warn" : "ok", [
      ["events", status.journal_events],
      ["handled", status.events_handled],
      ["refused", status.events_refused],
      ["dropped", status.events_dropped],
      ["queue", status.queue],
      ["fault", status.journal_fault || "none"],
    ]),
  );
  if (history) {
    tiles.push(
      tile("history", "History", history.problem ? "warn" : "ok", [
        ["samples written", history.samples_written ?? "–"],
        ["samples", history.every_s ? `${history.every_s === 60 ? "one a minute" : `one every ${duration(history.every_s)}`}, and after each round` : undefined],
        ["kept", history.keep_hours ? `${history.keep_hours} h` : undefined],
        ["problem", history.problem || "none"],
      ]),
    );
  }
  $("tiles").replaceChildren(...tiles);
}

// The controller's last signed status in a few words.
function controllerText(controller) {
  if (!controller || !controller.state) return "not heard yet";
  const heard = controller.heard_age_s == null ? "no heartbeat yet" : `heartbeat ${duration(controller.heard_age_s)} ago`;
  return `${controller.state} (boot ${controller.boot}), ${heard}`;
}

// The header's "Times in" and "Up": the zone every time on the page is in, and since when.
export function renderZone(bundle) {
  $("zone").textContent = page.zone ? `${page.zone}` : "UTC";
  const since = bundle.started ? dateTime(bundle.started * 1000, page.zone) : "";
  $("uptime").title = since ? `since ${since}` : "";
}
