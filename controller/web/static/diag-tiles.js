// The "at a glance" tiles (an ES module): one per part of the table, its state in colour.

import { duration, yesNo } from "./format.js";
import { $, el } from "./dom.js";

function errorsText(errors) {
  const kinds = Object.entries(errors || {});
  if (!kinds.length) return "none";
  return kinds.map(([kind, n]) => `${kind.replace(/_/g, " ")} ${n}`).join(", ");
}

// The jackpot controller's signed heartbeat, as the link last heard it (issue 28 item 3).
function controllerText(c) {
  if (!c || !c.state) return "not heard yet";
  const heard = c.heard_age_s == null ? "no heartbeat yet" : `heartbeat ${duration(c.heard_age_s)} ago`;
  return `${c.state} (boot ${c.boot}), ${heard}`;
}

function tile(id, title, state, lines) {
  const list = el("dl", {});
  for (const [name, value] of lines) {
    if (value === undefined) continue;
    list.append(el("dt", { text: name }), el("dd", { text: value === null ? "–" : value }));
  }
  return el(
    "div",
    { class: `tile ${state}`, id: `tile-${id}`, "data-testid": `tile-${id}`, "data-state": state },
    el("h3", {}, el("span", { class: "dot", "aria-hidden": "true" }), title, el("span", { class: "state", text: state })),
    list,
  );
}

// Health fields the tiles do not name themselves, in words: yes/no, times with units
const FIELD_WORDS = {
  url: "port",
  next_retry_ms: "next try in",
  reconnects: "reconnects",
  shuffling: "shuffling",
  source: "source",
  frames: "frames read",
};

function fieldValue(key, value) {
  if (typeof value === "boolean") return yesNo(value);
  if (key.endsWith("_ms") && typeof value === "number") return `${(value / 1000).toFixed(1)} s`;
  if (key.endsWith("_s") && typeof value === "number") return duration(value);
  return String(value);
}

function extraLines(part, known) {
  const out = [];
  for (const [key, value] of Object.entries(part || {})) {
    if (known.includes(key) || value === null || typeof value === "object") continue;
    const name = FIELD_WORDS[key] || key.replace(/_(ms|s)$/, "").replace(/_/g, " ");
    out.push([name, fieldValue(key, value)]);
  }
  return out;
}

export function renderTiles(status, snap, health, history) {
  const tiles = [];
  const shoe = health.shoe;
  const shoeSnap = snap.shoe || {};
  if (shoe) {
    const bad = !shoe.connected || shoeSnap.fault;
    tiles.push(
      tile("shoe", "Shoe", bad ? "bad" : Object.keys(shoe.errors || {}).length ? "warn" : "ok", [
        ["connected", shoe.connected ? "yes" : "no"],
        ["state", shoe.state],
        ["firmware", shoe.firmware],
        ["errors", errorsText(shoe.errors)],
        ["last message", shoe.last_message_age_ms === null ? "none yet" : `${(shoe.last_message_age_ms / 1000).toFixed(1)} s ago`],
        ["cards dealt", shoeSnap.dealt],
        ["fault", shoeSnap.fault || "none"],
        ["door", shoeSnap.door_open ? "open" : "closed"],
        ["cut card", shoeSnap.cut_card_out ? "out" : "in"],
        ...extraLines(shoe, ["connected", "state", "firmware", "errors", "last_message_age_ms", "name"]),
      ]),
    );
  } else {
    tiles.push(tile("shoe", "Shoe", "off", [["shoe", "none configured (cards keyed in)"]]));
  }
  const gpio = health.gpio;
  if (gpio) {
    const bad = !gpio.connected || gpio.faulted;
    tiles.push(
      tile("gpio", "GPIO", bad ? "bad" : Object.keys(gpio.errors || {}).length ? "warn" : "ok", [
        ["connected", gpio.connected ? "yes" : "no"],
        ["faulted", gpio.faulted || "no"],
        ["errors", errorsText(gpio.errors)],
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
      tile("camera", "Camera", !camera.connected ? "bad" : Object.keys(camera.errors || {}).length ? "warn" : "ok", [
        ["connected", camera.connected ? "yes" : "no"],
        ["errors", errorsText(camera.errors)],
        ["last message", camera.last_message_age_ms == null ? "none yet" : `${(camera.last_message_age_ms / 1000).toFixed(1)} s ago`],
        ...extraLines(camera, ["connected", "errors", "last_message_age_ms", "name"]),
      ]),
    );
  } else {
    tiles.push(tile("camera", "Camera", "off", [["camera", "none configured"]]));
  }
  const link = health.link;
  if (link) {
    tiles.push(
      tile("link", "MQTT link", !link.connected ? "bad" : Object.keys(link.errors || {}).length ? "warn" : "ok", [
        ["connected", link.connected ? "yes" : "no"],
        ["errors", errorsText(link.errors)],
        ["last ack", link.last_ack_age_s === null ? "none yet" : `${duration(link.last_ack_age_s)} ago`],
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
  tiles.push(
    tile("jackpot", "Jackpot link", status.jackpot_link ? "ok" : "bad", [
      ["link", status.jackpot_link ? "up" : `DOWN: ${status.jackpot_link_words ? `${status.jackpot_link_words}; ` : ""}progressive wagers refused`],
      ["controller", controllerText(health.link && health.link.controller)],
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
