// The diagnostics page: the bundle of /api/stream, live, and the technician's actions.
// Everything from the server is written with textContent (never innerHTML): alarm texts,
// names and log lines are data, not markup.
"use strict";

(() => {
  const { el, money, cardEl, cardText, betName, yesNo } = window.TableUI;
  const STALE_MS = 5000;
  const RECONNECT_MS = 2000;
  const LOG_EVERY_MS = 5000;
  const LOG_SOONEST_MS = 1000;
  const FEED_SHOWN = 20;

  const $ = (id) => document.getElementById(id);
  let csrf = null;
  let source = null;
  let connectedAt = 0;
  let lastUpdate = 0;
  let recallKey = null;
  let recallSearch = null; // the search shown (null: the last 10, reloaded as rounds settle)
  let logTimer = null;
  let logLoaded = 0;
  let lightTestRunning = false;
  let faultsLatched = false;
  let zone = null; // the table's time zone (null: the browser's)
  let historyTimer = null;
  let historyLoaded = 0;
  const HISTORY_EVERY_MS = 60000;
  const HISTORY_SOONEST_MS = 10000;
  const shown = new Map(); // section -> JSON of what it shows (re-render only on change)

  // -- small helpers ------------------------------------------------------------------

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "never";
    const s = Math.round(seconds);
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    const h = Math.floor(s / 3600);
    if (h < 48) return `${h} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(h / 24)} d ${h % 24} h`;
  }

  function clock(epochS) {
    const d = new Date(epochS * 1000);
    const pad = (n, w = 2) => String(n).padStart(w, "0");
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  }

  function changed(section, data) {
    const key = JSON.stringify(data === undefined ? null : data);
    if (shown.get(section) === key) return false;
    shown.set(section, key);
    return true;
  }

  function say(node, text, kind) {
    node.textContent = text || "";
    node.hidden = !text;
    node.classList.toggle("ok", kind === "ok");
    node.classList.toggle("err", kind === "err");
  }

  function problem(text) {
    say($("message"), text, "err");
  }

  // -- the server ---------------------------------------------------------------------

  async function api(method, path, body) {
    const options = { method, credentials: "same-origin", headers: {} };
    if (method !== "GET") {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRF-Token"] = csrf || "";
      options.body = JSON.stringify(body || {});
    }
    let response;
    try {
      response = await fetch(path, options);
    } catch (exc) {
      return { status: 0, data: { ok: false, error: `the table controller does not answer (${exc.message})` } };
    }
    let data = {};
    try {
      data = await response.json();
    } catch (_) {
      data = {};
    }
    if (response.status === 401) {
      window.location.assign("/login");
    }
    if (!response.ok && !data.error && !data.message) {
      data.error = `HTTP ${response.status}`;
    }
    return { status: response.status, data };
  }

  // An action button: off while the request runs; the answer (or refusal) shown in `out`.
  function action(button, out, path, body, done) {
    button.disabled = true;
    say(out, "", null);
    api("POST", path, body).then(({ data }) => {
      button.disabled = (button.id === "light-test" && lightTestRunning) || (button.id === "clear-faults" && !faultsLatched);
      const text = data.message || data.error || (data.ok ? done : "refused");
      say(out, data.ok ? data.message || done : text, data.ok ? "ok" : "err");
    });
  }

  // -- the bundle -----------------------------------------------------------------------

  function render(bundle) {
    lastUpdate = Date.now();
    setStale(false);
    const status = bundle.status || {};
    const snap = status.snapshot || {};
    const health = bundle.health || {};
    renderHeader(bundle);
    zone = bundle.zone || null;
    if (changed("tiles", [status, health, bundle.history])) renderTiles(status, snap, health, bundle.history);
    if (changed("faults", [status.faults, status.journal_fault, (snap.shoe || {}).fault])) {
      renderFaults(status, snap);
    }
    if (changed("alarms", [snap.alarms || [], snap.alarms_dropped])) renderAlarms(snap);
    if (changed("awards", snap.awards || [])) renderAwards(snap.awards || []);
    if (changed("table", snap)) renderTable(snap);
    if (changed("feed", bundle.feed)) {
      renderFeed(bundle.feed || []);
      logSoon(); // what the table just did is in the log too
    }
    if (changed("gpio", health.gpio)) renderGpio(health.gpio);
    if (changed("lighttest", bundle.light_test)) renderLightTest(bundle.light_test);
    const key = `${snap.round}/${snap.phase}`;
    if (key !== recallKey) {
      recallKey = key;
      if (!recallSearch) loadRecall();
      logSoon();
      historySoon();
    }
  }

  function renderHeader(bundle) {
    $("table-id").textContent = bundle.table;
    $("game").textContent = bundle.game;
    $("version").textContent = bundle.build || bundle.version;  // with the manifest's digest
    const sum = bundle.config_checksum || "";
    $("checksum").textContent = sum.slice(0, 12);
    $("checksum").title = sum;
    $("uptime").textContent = duration(bundle.uptime_s);
    document.title = `${bundle.table}: diagnostics`;
  }

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

  function renderTiles(status, snap, health, history) {
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

  const FAULT_WORDS = { shoe: "Shoe", camera: "Camera", gpio: "GPIO", link: "Jackpot link", journal: "Journal", software: "Software" };

  function renderFaults(status, snap) {
    const items = [];
    if (status.journal_fault) {
      items.push(el("li", { class: "bad", "data-testid": "fault", "data-fault": "journal" }, `Journal: ${status.journal_fault}`));
    }
    for (const [kind, fault] of Object.entries(status.faults || {})) {
      items.push(
        el(
          "li",
          { class: fault.active ? "bad" : "warn", "data-testid": "fault", "data-fault": kind },
          el("strong", { text: FAULT_WORDS[kind] || kind.replace(/_/g, " ") }),
          `: ${fault.detail || "lost"} `,
          el("span", { class: "tag", text: fault.active ? "present" : "gone, latched" }),
        ),
      );
    }
    const shoeFault = (snap.shoe || {}).fault;
    if (shoeFault) {
      items.push(el("li", { class: "bad", "data-testid": "fault", "data-fault": "shoe" }, `Shoe: ${shoeFault}`));
    }
    const latched = Boolean(status.journal_fault) || Object.keys(status.faults || {}).length > 0;
    faultsLatched = latched;
    $("clear-faults").disabled = !latched;
    $("clear-faults").title = latched ? "Clear the latched faults (after fixing their cause)" : "No fault is latched";
    if (!items.length) items.push(el("li", { class: "none", text: "No fault latched." }));
    $("faults").replaceChildren(...items);
  }

  // -- jackpot awards waiting for their hand pay (issue 28): a supervisor confirms one ----------

  let mayConfirm = false;

  function renderAwards(awards) {
    $("award-count").textContent = String(awards.length);
    const items = awards.map((a) => {
      const typed = el("input", { type: "text", inputmode: "decimal", placeholder: "type the amount again", "aria-label": `amount of award ${a.award_id}`, "data-testid": "award-amount" });
      const button = el("button", { type: "button", "data-testid": "award-confirm", disabled: !mayConfirm, title: mayConfirm ? null : "only a supervisor account confirms a hand pay" }, "Confirm hand pay");
      button.addEventListener("click", () => {
        if (!typed.value.trim()) {
          say($("awards-msg"), `Type the amount of award ${a.award_id} again first`, "err");
          return;
        }
        action(button, $("awards-msg"), "/api/awards/confirm", { award: a.award_id, amount: typed.value.trim() }, `Award ${a.award_id} confirmed`);
      });
      return el(
        "li",
        { "data-award": a.award_id },
        el("strong", { text: `${a.award_id}: spot ${a.spot} ${betName(a.pool)} ${a.line}, ${money(a.amount)} hand pay` }),
        el("div", { class: "actions" }, typed, button),
      );
    });
    if (!items.length) items.push(el("li", { class: "none", text: "No award waits for a hand pay." }));
    $("awards").replaceChildren(...items);
  }

  function renderAlarms(snap) {
    const alarms = snap.alarms || [];
    // an alarm whose cause has ended stays until acknowledged, marked, and is not counted
    const active = alarms.filter((alarm) => alarm.active !== false).length;
    $("alarm-count").textContent = String(active);
    $("alarm-count").classList.toggle("hot", active > 0);
    $("ack-all").disabled = alarms.length === 0;
    const items = alarms.map((alarm) => {
      const button = el("button", { type: "button", class: "ack", "data-testid": "ack", "data-alarm-id": alarm.id }, "Acknowledge");
      button.addEventListener("click", () => action(button, $("alarms-msg"), "/api/alarms/ack", { alarm: alarm.id }, `Alarm ${alarm.id} acknowledged`));
      return el(
        "li",
        { class: alarm.active === false ? "alarm cleared" : "alarm", "data-testid": "alarm", "data-alarm-id": alarm.id, "data-code": alarm.code },
        el(
          "div",
          { class: "alarm-text" },
          el("strong", { class: "alarm-what", text: alarm.count > 1 ? `${alarm.text} (×${alarm.count})` : alarm.text }),
          el("div", { class: "alarm-action", text: alarm.active === false ? `Cleared by itself: ${alarm.cleared || "its cause has ended"}; acknowledge to remove it` : alarm.action }),
          el(
            "div",
            { class: "meta" },
            `#${alarm.id} ${String(alarm.code).replace(/_/g, " ")}` + (alarm.spot ? ` · spot ${alarm.spot}` : "") + (alarm.round ? ` · round ${alarm.round}` : ""),
          ),
        ),
        button,
      );
    });
    if (snap.alarms_dropped) {
      items.push(el("li", { class: "warn", text: `${snap.alarms_dropped} older alarm(s) dropped unacknowledged (too many open)` }));
    }
    if (!items.length) items.push(el("li", { class: "none", text: "No open alarm." }));
    $("alarms").replaceChildren(...items);
  }

  function totalText(total, soft) {
    if (total === null || total === undefined) return "";
    if (total > 21) return `bust ${total}`;
    return soft ? `soft ${total}` : String(total);
  }

  function renderTable(snap) {
    $("round").textContent = snap.round ?? "–";
    $("phase").textContent = snap.phase ? snap.phase.replace(/_/g, " ") : "–";
    const act = snap.in_action;
    $("in-action").textContent = act ? `spot ${act.spot}` + (act.hand ? ` hand ${act.hand + 1}` : "") : "–";
    const shoe = snap.shoe || {};
    $("shoe-line").textContent =
      `${shoe.dealt ?? 0} dealt` + (shoe.cut_card_out ? ", cut card out" : "") + (shoe.door_open ? ", door OPEN" : "") + (snap.pending_cards ? `, ${snap.pending_cards} card(s) waiting for a decision` : "");
    const dealer = snap.dealer || {};
    $("dealer-cards").replaceChildren(...(dealer.cards || []).map(cardEl));
    let dealerText = "";
    if (dealer.total !== undefined && dealer.total !== null) dealerText = totalText(dealer.total, dealer.soft);
    else if (dealer.showing) dealerText = `showing ${dealer.showing}`;
    if (dealer.checked_no_blackjack) dealerText += " (checked: no blackjack)";
    $("dealer-total").textContent = dealerText;

    const spots = (snap.spots || []).map((spot) => {
      const active = act && act.spot === spot.spot;
      const wagers = Object.entries(spot.wagers || {}).map(([circle, cents]) =>
        el("li", { "data-circle": circle }, `${betName(circle)} ${money(cents)}`),
      );
      for (const extra of ["insurance", "even_money", "ez_bust"]) {
        if (spot[extra]) {
          wagers.push(el("li", {}, `${betName(extra)} ${typeof spot[extra] === "number" ? money(spot[extra]) : "yes"}`));
        }
      }
      const hands = (spot.hands || []).map((hand, i) => {
        const flags = [];
        for (const flag of ["double_down", "double_up", "surrendered", "stood", "settled"]) {
          if (hand[flag]) flags.push(flag.replace(/_/g, " "));
        }
        const here = active && (act.hand ?? 0) === i;
        return el(
          "div",
          { class: `hand${here ? " in-action" : ""}`, "data-testid": "hand" },
          el("div", { class: "cards" }, ...(hand.cards || []).map(cardEl)),
          el("div", { class: "total", text: `${(hand.cards || []).length ? totalText(hand.total, hand.soft) : ""}  ${money(hand.wager)}` }),
          flags.length ? el("div", { class: "meta", text: flags.join(", ") }) : null,
        );
      });
      return el(
        "div",
        { class: `spot${active ? " in-action" : ""}`, "data-testid": `spot-${spot.spot}` },
        el("div", { class: "label", text: `Spot ${spot.spot}` }),
        el("ul", { class: "wagers" }, ...wagers),
        ...hands,
      );
    });
    if (!spots.length) {
      const bets = (snap.bets || []).map((b) => `spot ${b.spot} ${betName(b.circle)}`);
      spots.push(el("div", { class: "none", text: bets.length ? `Chips on: ${bets.join(", ")}` : "No round dealt." }));
    }
    $("spots").replaceChildren(...spots);
  }

  function feedText(item) {
    switch (item.kind) {
      case "prompt":
        return item.text;
      case "alarm":
        return `ALARM ${item.text}: ${item.action}`;
      case "refused":
        return `Refused ${String(item.event).replace(/_/g, " ")}: ${item.reason}`;
      case "settled": {
        const where = `spot ${item.spot}` + (item.hand ? ` hand ${item.hand + 1}` : "");
        return `Settled ${where} ${betName(item.wager)}: ${item.outcome}, stake ${money(item.stake)}, paid ${money(item.paid)}, returned ${money(item.returned)}${item.reason ? ` (${item.reason})` : ""}`;
      }
      default:
        return JSON.stringify(item);
    }
  }

  function renderFeed(feed) {
    const items = feed
      .slice(-FEED_SHOWN)
      .reverse()
      .map((item) =>
        el("li", { class: `feed-${item.kind}`, "data-kind": item.kind }, el("span", { class: "meta", text: item.round ? `R${item.round}` : "" }), feedText(item)),
      );
    if (!items.length) items.push(el("li", { class: "none", text: "Nothing yet." }));
    $("feed").replaceChildren(...items);
  }

  // -- the GPIO picture ---------------------------------------------------------------

  const SVGNS = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVGNS, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  const CIRCLE_ORDER = ["main", "lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s", "ez_bust", "bonus_16", "blackjack_tie"];
  const CIRCLE_SHORT = {
    main: "",
    lucky_ladies: "LL",
    twenty_one_plus_three_xtreme: "21+3",
    blazing_7s: "B7",
    ez_bust: "EZ",
    bonus_16: "16",
    blackjack_tie: "Tie",
    insurance: "Ins",
  };
  const BUTTON_WORDS = {
    lockout: "No more bets",
    next: "Next",
    double: "Double",
    split: "Split",
    surrender: "Surrender",
    end_round: "End round",
    burn: "Burn",
    misdeal: "Misdeal",
    void_round: "Void round",
    supervisor_key: "Supervisor key",
    insurance: "Insurance",
    even_money: "Even money",
    ez_bust: "EZ Bust",
    double_up: "Double Up",
  };
  const LAMP_WORDS = { lockout: "No-more-bets lamp", alarm: "Alarm tower" };
  const STATE_WORDS = { on: "on", off: "off", unknown: "cannot be read", pending: "changing (not yet confirmed)" };

  function inputState(input) {
    if (!input || input.active === null || input.active === undefined) return "unknown";
    if (input.confirmed !== undefined && input.active !== input.confirmed) return "pending";
    return input.active ? "on" : "off";
  }

  function inputDetail(input) {
    if (!input) return "";
    const rejected = input.rejected ? `, ${input.rejected} rejected as bounce` : "";
    return `pin ${input.pin}, ${input.edges ?? 0} changes${rejected}`;
  }

  // The pin names of the status, sorted into the picture: spots (circles with their sensor
  // and lamp, the action lamp, per-spot buttons), the dealer's console and the table's lamps.
  function gpioModel(gpio) {
    const spots = new Map();
    const buttons = [];
    const lamps = [];
    const spot = (n) => {
      if (!spots.has(n)) spots.set(n, { circles: new Map(), action: null });
      return spots.get(n);
    };
    const circle = (n, name) => {
      const s = spot(n);
      if (!s.circles.has(name)) s.circles.set(name, {});
      return s.circles.get(name);
    };
    for (const [name, input] of Object.entries((gpio && gpio.inputs) || {})) {
      let m;
      if ((m = name.match(/^sensors\.(\d+)\.(.+)$/))) {
        Object.assign(circle(Number(m[1]), m[2]), { input, inputName: name });
      } else if ((m = name.match(/^console\.([a-z_]+)\.(\d+)$/))) {
        buttons.push({ name, input, word: `${BUTTON_WORDS[m[1]] || m[1].replace(/_/g, " ")} ${m[2]}` });
      } else {
        const key = name.replace(/^console\./, "");
        buttons.push({ name, input, word: BUTTON_WORDS[key] || key.replace(/[._]/g, " "), keySwitch: key === "supervisor_key" });
      }
    }
    for (const [name, state] of Object.entries((gpio && gpio.lights) || {})) {
      let m;
      if ((m = name.match(/^spot(\d+)\.action$/))) spot(Number(m[1])).action = { name, state };
      else if ((m = name.match(/^spot(\d+)\.(.+)$/))) Object.assign(circle(Number(m[1]), m[2]), { light: state, lightName: name });
      else lamps.push({ name, state, word: LAMP_WORDS[name] || name.replace(/_/g, " ") });
    }
    const rank = (name) => {
      const i = CIRCLE_ORDER.indexOf(name);
      return i < 0 ? CIRCLE_ORDER.length : i;
    };
    const sorted = [...spots.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([n, s]) => ({
        spot: n,
        action: s.action,
        circles: [...s.circles.entries()].sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0])).map(([name, c]) => ({ circle: name, ...c })),
      }));
    const order = Object.keys(BUTTON_WORDS);
    const place = (b) => {
      const key = b.name.replace(/^console\./, "").replace(/\.\d+$/, "");
      const i = order.indexOf(key);
      return i < 0 ? order.length : i;
    };
    buttons.sort((a, b) => place(a) - place(b) || a.name.localeCompare(b.name, "en", { numeric: true }));
    return { spots: sorted, buttons, lamps };
  }

  // "spot3.action" -> "spot 3 action lamp"; "spot1.main" -> "spot 1 main wager lamp"
  function lampWords(name) {
    const m = String(name).match(/^spot(\d+)\.(.+)$/);
    if (m) return `spot ${m[1]} ${m[2] === "action" ? "action" : betName(m[2])} lamp`;
    return (LAMP_WORDS[name] || String(name).replace(/_/g, " ")).replace(/^./, (c) => c.toLowerCase());
  }

  function lampClass(state) {
    return state === "on" ? "lamp-on" : state === "blink" ? "lamp-blink" : state === "off" ? "lamp-off" : "lamp-unknown";
  }

  function renderGpio(gpio) {
    const box = $("gpio-picture");
    const model = gpioModel(gpio);
    if (!model.spots.length && !model.buttons.length && !model.lamps.length) {
      box.replaceChildren(el("p", { class: "none", text: "No GPIO pins in this table's pin map." }));
      return;
    }
    const W = 1000;
    const n = Math.max(1, model.spots.length);
    const margin = 30;
    const slot = (W - 2 * margin) / n;
    const perRow = 8;
    const consoleRows = Math.max(1, Math.ceil(model.buttons.length / perRow));
    const consoleTop = 330;
    const H = Math.max(consoleTop + 36 + consoleRows * 46 + 10, consoleTop + 20 + model.lamps.length * 34 + 10);
    const picture = svg("svg", {
      viewBox: `0 0 ${W} ${H}`,
      class: "gpio-svg",
      role: "img",
      "aria-label": `The table with ${model.spots.length} spots and the dealer's console`,
      "data-testid": "gpio-svg",
    });
    picture.append(svg("path", { class: "felt", d: `M 10 300 L 10 170 C 10 -20 ${W - 10} -20 ${W - 10} 170 L ${W - 10} 300 Z` }));
    picture.append(svg("text", { x: W / 2, y: 292, class: "g-label dealer-label", "text-anchor": "middle", text: "Dealer" }));

    model.spots.forEach((s, i) => {
      const x = margin + (i + 0.5) * slot;
      const u = (x - W / 2) / (W / 2 - margin);
      const y = 60 + 110 * u * u; // along the table's curved edge
      const group = svg("g", { class: "g-spot", "data-testid": `gpio-spot-${s.spot}` });
      const mains = s.circles.filter((c) => c.circle === "main");
      const sides = s.circles.filter((c) => c.circle !== "main");
      const sideR = Math.min(14, slot / (2.6 * Math.max(1, sides.length)));
      const mainR = Math.min(26, slot / 4);
      const place = [];
      sides.forEach((c, k) => place.push([c, x + (k - (sides.length - 1) / 2) * (2.4 * sideR + 2), y, sideR]));
      mains.forEach((c) => place.push([c, x, y + sideR + mainR + 10, mainR]));
      for (const [c, cx, cy, r] of place) {
        const state = c.input ? inputState(c.input) : "none";
        const lamp = c.light ? lampClass(c.light) : "";
        const title = `Spot ${s.spot} ${betName(c.circle)}: ` +
          (c.input ? `chips ${state === "on" ? "seen" : state === "off" ? "not seen" : STATE_WORDS[state]} (${inputDetail(c.input)})` : "no sensor") +
          (c.light ? `; circle lamp ${c.light}` : "");
        const node = svg(
          "g",
          { class: `g-circle ${state} ${lamp}`, "data-testid": c.inputName ? `gpio-${c.inputName}` : null, "data-state": state, "data-lamp": c.light || null },
          svg("title", { text: title }),
          c.light ? svg("circle", { class: "ring", cx, cy, r: r + 4, "data-testid": `gpio-${c.lightName}`, "data-state": c.light }) : null,
          svg("circle", { class: "disc", cx, cy, r }),
          svg("text", { x: cx, y: cy + 4, "text-anchor": "middle", class: "g-short", text: CIRCLE_SHORT[c.circle] ?? c.circle.slice(0, 3) }),
        );
        group.append(node);
      }
      const labelY = y + sideR + 2 * mainR + 32;
      group.append(svg("text", { x: x - 6, y: labelY, "text-anchor": "middle", class: "g-label", text: `Spot ${s.spot}` }));
      if (s.action) {
        group.append(
          svg(
            "circle",
            { class: `g-lamp ${lampClass(s.action.state)}`, cx: x + 32, cy: labelY - 5, r: 7, "data-testid": `gpio-${s.action.name}`, "data-state": s.action.state },
            svg("title", { text: `Spot ${s.spot} action lamp: ${s.action.state}` }),
          ),
        );
      }
      picture.append(group);
    });

    // the dealer's console: a panel of buttons, the table's lamps beside it
    const panelW = W - 20 - (model.lamps.length ? 215 : 0);
    picture.append(svg("rect", { class: "console", x: 10, y: consoleTop, width: panelW, height: H - consoleTop - 6, rx: 8 }));
    picture.append(svg("text", { x: 20, y: consoleTop + 22, class: "g-label", text: "Dealer's console" }));
    const bw = Math.min(112, (panelW - 20) / Math.min(perRow, Math.max(1, model.buttons.length)) - 8);
    model.buttons.forEach((b, k) => {
      const bx = 20 + (k % perRow) * (bw + 8);
      const by = consoleTop + 32 + Math.floor(k / perRow) * 46;
      const state = inputState(b.input);
      const word = b.word;
      picture.append(
        svg(
          "g",
          { class: `g-button ${state}`, "data-testid": `gpio-${b.name}`, "data-state": state },
          svg("title", { text: `${b.word}: ${b.keySwitch ? (state === "on" ? "key turned" : state === "off" ? "key off" : STATE_WORDS[state]) : state === "on" ? "pressed" : state === "off" ? "not pressed" : STATE_WORDS[state]} (${inputDetail(b.input)})` }),
          svg("rect", { x: bx, y: by, width: bw, height: 36, rx: 6 }),
          svg("text", { x: bx + bw / 2, y: by + 23, "text-anchor": "middle", "font-size": Math.min(13, (bw - 6) / (0.58 * word.length)).toFixed(1), text: word }),
        ),
      );
    });
    model.lamps.forEach((l, k) => {
      const lx = W - 195;
      const ly = consoleTop + 20 + k * 34;
      picture.append(
        svg(
          "g",
          { class: `g-table-lamp ${lampClass(l.state)}`, "data-testid": `gpio-${l.name}`, "data-state": l.state },
          svg("title", { text: `${l.word}: ${l.state}` }),
          svg("circle", { class: "g-lamp", cx: lx, cy: ly, r: 11 }),
          svg("text", { x: lx + 18, y: ly + 5, class: "g-label", text: `${l.word} ${l.state}` }),
        ),
      );
    });
    box.replaceChildren(picture);
  }

  function renderLightTest(test) {
    const out = $("light-test-state");
    lightTestRunning = Boolean(test && (test.running || test.pending));
    if (!test) {
      out.hidden = true;
      out.removeAttribute("data-state");
      $("light-test").disabled = false;
      return;
    }
    out.hidden = false;
    out.classList.toggle("ok", !test.running && !test.pending);
    if (test.pending) {
      out.dataset.state = "pending";
      out.replaceChildren(`Light test queued (${test.by}): it runs when ${test.waiting_for || "the round ends"}; ${test.lights} lights`);
      $("light-test").disabled = true;
      return;
    }
    if (test.running) {
      out.dataset.state = "running";
      out.replaceChildren(
        `Light test running (${test.by}): ${test.light ? lampWords(test.light) : "…"} — ${test.done} of ${test.lights} lights done `,
        el("progress", { max: test.lights, value: test.done }),
      );
    } else {
      out.dataset.state = "done";
      out.replaceChildren(`Light test (${test.by}) ${test.result}`);
    }
    $("light-test").disabled = Boolean(test.running);
  }

  // -- recall and log (fetched, not streamed) ---------------------------------------------

  // The newest 10 rounds (path /api/rounds), 10 older ones, or a search across the files.
  let recallOldest = null; // the oldest round number shown (the "Older 10" button)

  function settlementText(line, split) {
    const where = `Spot ${line.spot}` + (line.hand !== undefined && line.hand !== null && split.has(line.spot) ? ` hand ${line.hand + 1}` : "");
    const net = line.paid + line.returned - line.stake;
    const sign = net > 0 ? "+" : net < 0 ? "-" : "±";
    return `${where} ${betName(line.wager)}: ${line.outcome}${line.pays ? ` ${line.pays}` : ""}, stake ${money(line.stake)}, paid ${money(line.paid)}, returned ${money(line.returned)}, net ${sign}${money(Math.abs(net))}`;
  }

  // a round's settlements spot by spot, each spot's main wager first (as the table pays)
  function bySpot(settlements) {
    const rank = (w) => (w === "main" ? 0 : ["double_down", "double_up", "insurance", "even_money"].includes(w) ? 1 : 2);
    return settlements
      .map((line, i) => [line, i])
      .sort(([a, i], [b, j]) => a.spot - b.spot || (a.hand ?? 0) - (b.hand ?? 0) || rank(a.wager) - rank(b.wager) || i - j)
      .map(([line]) => line);
  }

  function recallHands(record) {
    if (!record.hands) return el("p", { class: "meta", text: "Hands not shown: this round's events do not replay (see the text below)." });
    const rows = record.hands.map((hand) =>
      el(
        "div",
        { class: "recall-hand", "data-testid": "recall-hand" },
        el("span", { class: "who", text: hand.who }),
        el("span", { class: "cards" }, ...hand.cards.map(cardEl)),
        el("span", { class: "total", text: hand.cards.length ? totalText(hand.total, hand.soft) : "no cards" }),
        hand.done && hand.done.length ? el("span", { class: "meta", text: hand.done.join(", ") }) : null,
      ),
    );
    return el("div", { class: "recall-hands" }, ...rows);
  }

  let recallAsked = 0; // the last request: an older answer arriving late is dropped

  async function loadRecall(search) {
    recallSearch = search || null;
    const asked = ++recallAsked;
    let path = "/api/rounds";
    if (recallSearch && recallSearch.before) path = `/api/rounds/older?before=${encodeURIComponent(recallSearch.before)}`;
    else if (recallSearch) path = `/api/rounds/search?${new URLSearchParams(recallSearch)}`;
    const { status, data } = await api("GET", path);
    if (asked !== recallAsked) return;
    $("recall-what").textContent = recallSearch ? `(${searchWords(recallSearch)})` : "(newest 10 rounds)";
    if (status !== 200) {
      say($("recall-msg"), data.error || `recall failed (HTTP ${status})`, "err");
      if (recallSearch) $("recall").replaceChildren();
      return;
    }
    const unreadable = data.unreadable || [];
    say($("recall-msg"), unreadable.length ? `Not searched (cannot be read): ${unreadable.join("; ")}` : "", "err");
    const open = new Set([...document.querySelectorAll("#recall details[open]")].map((d) => d.dataset.round));
    const numbers = (data.rounds || []).map((r) => r.round);
    recallOldest = numbers.length ? Math.min(...numbers) : recallOldest;
    $("recall-older").disabled = !numbers.length || recallOldest <= 1;
    const rounds = (data.rounds || []).map((record) => {
      const settlements = (record.result && record.result.settlements) || [];
      const result = record.result || {};
      const split = new Set(settlements.filter((l) => l.hand).map((l) => l.spot));
      const summary = el(
        "summary",
        {},
        el("strong", { text: `Round ${record.round}` }),
        record.void ? el("span", { class: "tag bad", text: "VOID" }) : null,
        el("span", { class: "when", "data-testid": "round-when", text: ` ${record.when || ""}` }),
        ` · dealer ${(record.dealer || []).map(cardText).join(" ") || "–"} · ${settlements.length} wager(s) · stakes ${money(result.stake)}, paid ${money(result.paid)}, returned ${money(result.returned)}`,
        el("span", { class: "meta", "data-testid": "round-file", text: ` · ${record.file || ""}` }),
      );
      const link = el("a", {
        href: `/api/rounds/${record.round}/script`,
        download: "",
        class: "download",
        "data-testid": "download-script",
        text: "Download event script",
      });
      const details = el(
        "details",
        { class: "round", "data-testid": "recall-round", "data-round": record.round },
        summary,
        recallHands(record),
        el("ul", { class: "recall-settlements" }, ...bySpot(settlements).map((line) => el("li", { "data-testid": "recall-settlement", text: settlementText(line, split) }))),
        el("details", { class: "round-full" }, el("summary", { text: "The whole record, with every action" }), el("pre", { class: "round-text", text: record.text })),
        link,
      );
      if (open.has(String(record.round))) details.open = true;
      return details;
    });
    if (!rounds.length) rounds.push(el("p", { class: "none", text: "No round settled yet." }));
    $("recall").replaceChildren(...rounds);
  }

  function searchWords(search) {
    if (search.before) return `the 10 rounds before round ${search.before}`;
    if (search.round) return `round ${search.round}`;
    if (search.to) return `settled from ${search.at} to ${search.to}, local time`;
    return `nearest ${search.at}, local time`;
  }

  // datetime-local gives "YYYY-MM-DDTHH:MM"; the server reads "YYYY-MM-DD HH:MM"
  const localText = (value) => value.replace("T", " ");

  function searchRecall(event) {
    event.preventDefault();
    const round = $("search-round").value.trim();
    const at = $("search-at").value;
    const to = $("search-to").value;
    if (round) {
      loadRecall({ round });
    } else if (at) {
      loadRecall(to ? { at: localText(at), to: localText(to) } : { at: localText(at) });
    } else {
      say($("recall-msg"), "Give a round number, or a local date and time", "err");
    }
  }

  // The log at most once a second, however fast the table goes.
  function logSoon() {
    if (logTimer) return;
    const wait = Math.max(0, logLoaded + LOG_SOONEST_MS - Date.now());
    logTimer = setTimeout(() => {
      logTimer = null;
      loadLog();
    }, wait);
  }

  async function loadLog() {
    logLoaded = Date.now();
    const { status, data } = await api("GET", "/api/log");
    if (status !== 200) {
      say($("log-msg"), data.error || `log failed (HTTP ${status})`, "err");
      return;
    }
    say($("log-msg"), "", null);
    const records = (data.records || []).slice().reverse();
    if (!changed("log", records)) return;
    const items = records.map((r) =>
      el(
        "li",
        { class: `level-${String(r.level).toLowerCase()}`, "data-level": r.level },
        el("span", { class: "time", text: clock(r.t) }),
        el("span", { class: "level", text: r.level }),
        el("span", { class: "logger", text: r.logger }),
        el("span", { class: "msg", text: r.message }),
      ),
    );
    if (!items.length) items.push(el("li", { class: "none", text: "No log record." }));
    $("log").replaceChildren(...items);
  }

  // -- the audit list (issue 28): who did what, in UTC --------------------------------------

  async function loadAudit() {
    const { status, data } = await api("GET", "/api/audit");
    if (status !== 200) {
      say($("audit-msg"), data.error || `audit list failed (HTTP ${status})`, "err");
      return;
    }
    say($("audit-msg"), data.kept ? "" : "No audit list is kept on this table.", data.kept ? null : "err");
    const rows = data.entries || [];
    if (!changed("audit", rows)) return;
    const utc = (ms) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);
    const items = rows.map((r) =>
      el(
        "tr",
        { class: `outcome-${r.outcome}`, "data-action": r.action, "data-outcome": r.outcome },
        ...[utc(r.utc_ms), r.account, r.role, r.action.replace(/_/g, " "), r.object, r.outcome, r.detail, r.source].map((text) => el("td", { text: text || "" })),
      ),
    );
    if (!items.length) items.push(el("tr", {}, el("td", { colspan: "8", text: "Nothing recorded yet." })));
    $("audit-rows").replaceChildren(...items);
  }

  // -- history: the charts (uPlot, vendored) -----------------------------------------------

  let lastHistory = null;
  const charts = [];
  const COLOURS = { ok: "#1a7f37", warn: "#b7791f", bad: "#b42318", accent: "#0b5cad", muted: "#65717e", band: "rgba(11,92,173,0.14)" };
  const POOL_COLOURS = ["#b42318", "#0b5cad", "#1a7f37", "#8250df", "#b7791f"];

  function historySoon() {
    if (historyTimer) return;
    const wait = Math.max(0, historyLoaded + HISTORY_SOONEST_MS - Date.now());
    historyTimer = setTimeout(() => {
      historyTimer = null;
      loadHistory();
    }, wait);
  }

  let historyAsked = 0;

  async function loadHistory() {
    historyLoaded = Date.now();
    const asked = ++historyAsked;
    const hours = $("history-hours").value;
    const { status, data } = await api("GET", `/api/history?hours=${encodeURIComponent(hours)}`);
    if (asked !== historyAsked) return; // a later request answers instead
    if (status !== 200) {
      say($("history-msg"), data.error || `history failed (HTTP ${status})`, "err");
      return;
    }
    const notes = [];
    if (data.problem) notes.push(`History not being written: ${data.problem}`);
    if (data.par_problem) notes.push(data.par_problem);
    say($("history-msg"), notes.join("; "), notes.length ? "err" : null);
    const n = (data.t || []).length;
    const every = data.every_s === 60 ? "one a minute" : `one every ${duration(data.every_s)}`;
    $("history-what").textContent = `(${n} point${n === 1 ? "" : "s"}; ${every}, and soon after each round)`;
    lastHistory = data;
    drawHistory(data);
    renderBetsTable(data);
  }

  const pct = (v, digits = 1) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(digits)}%`);

  function dollars(cents) {
    return cents === null || cents === undefined ? "–" : money(Math.round(cents));
  }

  // One chart: `lines` = [{label, values, colour, scale, stepped, dash, fmt}], `bands` = [[hiIndex, loIndex]]
  function chart(id, title, t, lines, options = {}) {
    const box = el("figure", { class: "chart", "data-testid": `chart-${id}`, id: `chart-${id}` }, el("figcaption", { text: title }));
    const points = lines.length ? lines[0].values.filter((v) => v !== null && v !== undefined).length : 0;
    box.dataset.points = String(points);
    box.dataset.series = String(lines.length);
    $("charts").append(box);
    if (!t.length) {
      box.append(el("p", { class: "none", text: "No history yet." }));
      return;
    }
    const width = Math.max(260, box.clientWidth - 4);
    const series = [{ value: (u, v) => (v === null ? "" : localTime(v)) }];
    for (const line of lines) {
      series.push({
        label: line.label,
        stroke: line.colour,
        width: line.width || 2,
        scale: line.scale || "y",
        dash: line.dash,
        spanGaps: line.spanGaps !== false,
        points: { show: t.length < 40 && !line.dash },
        paths: line.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
        value: (u, v) => (v === null || v === undefined ? "–" : (line.fmt || String)(v)),
      });
    }
    const axes = [{ stroke: COLOURS.muted, grid: { stroke: "#eef0f2" } }];
    const scales = { x: { time: true } };
    for (const axis of options.axes || [{ scale: "y" }]) {
      axes.push({
        scale: axis.scale,
        side: axis.side ?? 3,
        stroke: COLOURS.muted,
        grid: { show: axis.side !== 1, stroke: "#eef0f2" },
        // wide enough for its longest label ("$10,000.00")
        size: (u, values) => 18 + 7 * Math.max(3, ...(values || []).map((v) => String(v).length)),
        values: axis.fmt ? (u, vals) => vals.map((v) => axis.fmt(v)) : undefined,
        splits: axis.splits,
      });
      scales[axis.scale] = axis.range ? { range: axis.range } : { auto: true };
    }
    const opts = {
      width,
      height: options.height || 190,
      series,
      axes,
      scales,
      bands: (options.bands || []).map(([hi, lo]) => ({ series: [hi, lo], fill: COLOURS.band })),
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
    };
    if (zone && uPlot.tzDate) opts.tzDate = (ts) => uPlot.tzDate(new Date(ts * 1000), zone);
    const plot = new uPlot(opts, [t, ...lines.map((l) => l.values)], box);
    charts.push(plot);
  }

  function localTime(epochS) {
    const d = new Date(epochS * 1000);
    try {
      return d.toLocaleString("en-GB", { timeZone: zone || undefined, hour12: false });
    } catch (_) {
      return d.toLocaleString("en-GB", { hour12: false });
    }
  }

  function drawHistory(data) {
    while (charts.length) charts.pop().destroy();
    $("charts").replaceChildren();
    const t = data.t || [];
    chart("link", "Jackpot link (up or down) and messages waiting in the outbox", t, [
      { label: "link up", values: data.link_up || [], colour: COLOURS.ok, scale: "updown", stepped: true, fmt: (v) => (v ? "up" : "DOWN") },
      { label: "outbox", values: data.outbox || [], colour: COLOURS.warn, scale: "n", fmt: (v) => `${v} waiting` },
    ], {
      axes: [
        { scale: "updown", range: [0, 1.05], splits: () => [0, 1], fmt: (v) => (v === 1 ? "up" : v === 0 ? "down" : "") },
        { scale: "n", side: 1, fmt: (v) => String(v) },
      ],
    });
    chart("shoe", "Shoe: errors and reconnects since the point before", t, [
      { label: "errors", values: data.shoe_errors || [], colour: COLOURS.bad, stepped: true },
      { label: "reconnects", values: data.shoe_reconnects || [], colour: COLOURS.accent, stepped: true },
    ]);
    chart("pace", "Pace: cards and rounds per hour", t, [
      { label: "cards per hour", values: data.cards_per_hour || [], colour: COLOURS.accent, scale: "cards", fmt: (v) => Math.round(v) },
      { label: "rounds per hour", values: data.rounds_per_hour || [], colour: COLOURS.ok, scale: "rounds", fmt: (v) => Math.round(v) },
    ], { axes: [{ scale: "cards" }, { scale: "rounds", side: 1 }] });
    const meters = Object.entries(data.meters || {});
    if (meters.length) {
      chart("meters", "Progressive meters", t, meters.map(([, m], i) => ({ label: m.title, values: m.cents, colour: POOL_COLOURS[i % POOL_COLOURS.length], fmt: dollars })), {
        axes: [{ scale: "y", fmt: dollars }],
      });
    }
    const pools = Object.entries(data.pools || {});
    chart("pools", "Progressive pools: stakes this table fed each one (cumulative)", t, pools.map(([, p], i) => ({ label: p.title, values: p.cents, colour: POOL_COLOURS[i % POOL_COLOURS.length], fmt: dollars })), {
      axes: [{ scale: "y", fmt: dollars }],
    });
    for (const [bet, line] of Object.entries(data.bets || {})) {
      if (!line.wagers && line.par_hit === null) continue; // offered, never played, no par: nothing to draw
      const par = (v) => t.map(() => v);
      // the house keeps at most all of the stakes; a band far below -200% only squashes the chart
      const clip = (values) => values.map((v) => (v === null || v === undefined ? null : Math.max(-2, Math.min(1, v))));
      const parWords = (v) => (v === null || v === undefined ? "no single par (it depends on the up card)" : `par ${pct(v, 2)}`);
      chart(`hit-${bet}`, `${line.title}: hit frequency seen, ${parWords(line.par_hit)}, 95% band`, t, [
        { label: "seen", values: line.hit, colour: COLOURS.bad, fmt: (v) => pct(v, 2) },
        { label: "par", values: par(line.par_hit ?? null), colour: COLOURS.ok, dash: [6, 4], width: 1.5, fmt: (v) => pct(v, 2) },
        { label: "band high", values: line.hit_hi, colour: "rgba(11,92,173,0.4)", width: 1, fmt: (v) => pct(v, 2) },
        { label: "band low", values: line.hit_lo, colour: "rgba(11,92,173,0.4)", width: 1, fmt: (v) => pct(v, 2) },
      ], { axes: [{ scale: "y", fmt: (v) => pct(v, 0) }], bands: [[3, 4]], height: 170 });
      chart(`hold-${bet}`, `${line.title}: hold seen, ${parWords(line.par_hold)}, 95% band`, t, [
        { label: "seen", values: line.hold, colour: COLOURS.bad, fmt: (v) => pct(v, 1) },
        { label: "par", values: par(line.par_hold ?? null), colour: COLOURS.ok, dash: [6, 4], width: 1.5, fmt: (v) => pct(v, 2) },
        { label: "band high", values: clip(line.hold_hi), colour: "rgba(11,92,173,0.4)", width: 1, fmt: (v) => pct(v, 1) },
        { label: "band low", values: clip(line.hold_lo), colour: "rgba(11,92,173,0.4)", width: 1, fmt: (v) => pct(v, 1) },
      ], { axes: [{ scale: "y", fmt: (v) => pct(v, 0) }], bands: [[3, 4]], height: 170 });
    }
  }

  function verdict(inBand) {
    if (inBand === null || inBand === undefined) return ["–", ""];
    return inBand ? ["within the band", "ok"] : ["OUTSIDE the band: look at it", "bad"];
  }

  function renderBetsTable(data) {
    const head = el(
      "tr",
      {},
      ...["Side bet", "Wagers", "Hits", "Hit frequency seen (95% interval)", "Par", "", "Hold seen", "Par hold", ""].map((h) => el("th", { text: h })),
    );
    const rows = Object.entries(data.bets || {}).map(([bet, b]) => {
      const interval = b.seen_hit_interval ? ` (${pct(b.seen_hit_interval[0])}–${pct(b.seen_hit_interval[1])})` : "";
      const [hitWords, hitClass] = verdict(b.hit_in_band);
      const [holdWords, holdClass] = verdict(b.hold_in_band);
      return el(
        "tr",
        { "data-testid": `bet-row-${bet}` },
        el("th", { text: b.title }),
        el("td", { text: b.wagers }),
        el("td", { text: b.hits }),
        el("td", { text: b.wagers ? `${pct(b.seen_hit, 2)}${interval}` : "no wager yet" }),
        el("td", { text: pct(b.par_hit, 2) }),
        el("td", { class: hitClass, text: hitWords }),
        el("td", { text: b.stakes ? `${pct(b.seen_hold)} of ${money(b.stakes)}` : "–" }),
        el("td", { text: b.par_hold === null || b.par_hold === undefined ? "not computed" : pct(b.par_hold, 2) }),
        el("td", { class: holdClass, text: holdWords }),
      );
    });
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 9, class: "none", text: "This game has no side bet." })));
    $("bets-table").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
  }

  // -- live stream, stale marker --------------------------------------------------------

  function setStale(stale) {
    document.body.classList.toggle("stale", stale);
    $("stale").hidden = !stale;
    if (stale) {
      const age = lastUpdate ? Math.round((Date.now() - lastUpdate) / 1000) : null;
      $("stale").textContent = age === null ? "STALE: no data yet" : `STALE: no update for ${age} s`;
    }
  }

  function connect() {
    if (source) source.close();
    connectedAt = Date.now();
    setLive("connecting…", "");
    const es = new EventSource("/api/stream");
    source = es;
    es.addEventListener("update", (event) => {
      let bundle;
      try {
        bundle = JSON.parse(event.data);
      } catch (_) {
        return; // a broken message: the next one (at most a second away) repairs the page
      }
      setLive("live", "ok");
      render(bundle);
    });
    es.addEventListener("logout", () => {
      es.close();
      window.location.assign("/login");
    });
    es.addEventListener("error", () => {
      if (es !== source) return;
      setLive("reconnecting…", "err");
      // After a dropped connection the browser retries by itself; a refused one (401, 503)
      // closes the source: check the session (401 goes to the login page), then start again.
      if (es.readyState === EventSource.CLOSED) {
        setTimeout(async () => {
          const { status } = await api("GET", "/api/session");
          if (es === source && status !== 401) connect();
        }, RECONNECT_MS);
      }
    });
  }

  function setLive(text, kind) {
    $("live").textContent = text;
    $("live").className = kind ? `live ${kind}` : "live";
  }

  // Stale: no update for STALE_MS. A stream that stays silent that long is started again,
  // whatever state the browser thinks it is in.
  function watchdog() {
    if (Date.now() - lastUpdate <= STALE_MS) return;
    setStale(true);
    if (Date.now() - connectedAt > STALE_MS) connect();
  }

  async function start() {
    const { status, data } = await api("GET", "/api/session");
    if (status !== 200) {
      if (status !== 401) problem(data.error || "cannot reach the table controller");
      return;
    }
    csrf = data.csrf;
    $("user").textContent = data.user;
    $("role").textContent = data.role ? `(${data.role})` : "";
    // what this account may not do is shown disabled, with why (the server refuses it too)
    const may = new Set(data.permissions || []);
    mayConfirm = may.has("confirm_award");
    for (const [id, permission] of [["clear-faults", "clear_faults"], ["ack-all", "acknowledge_alarm"], ["light-test", "light_test"], ["rotate-journal", "rotate_journal"]]) {
      if (!may.has(permission) && $(id)) {
        $(id).dataset.denied = "1";
        $(id).title = `${/^[aeiou]/.test(data.role) ? "an" : "a"} ${data.role} account may not do this`;
      }
    }

    $("logout").addEventListener("click", async () => {
      const { data: out } = await api("POST", "/logout", {});
      if (out.ok) window.location.assign("/login");
      else problem(out.error || "logout failed");
    });
    $("clear-faults").addEventListener("click", () => action($("clear-faults"), $("faults-msg"), "/api/faults/clear", {}, "Faults cleared"));
    $("ack-all").addEventListener("click", () => action($("ack-all"), $("alarms-msg"), "/api/alarms/ack", { alarm: 0 }, "All alarms acknowledged"));
    $("light-test").addEventListener("click", () => action($("light-test"), $("light-test-msg"), "/api/lights/test", {}, "Light test started"));
    $("recall-refresh").addEventListener("click", () => loadRecall(null));
    $("recall-older").addEventListener("click", () => {
      if (recallOldest) loadRecall({ before: String(recallOldest) });
    });
    $("history-refresh").addEventListener("click", loadHistory);
    $("history-hours").addEventListener("change", loadHistory);
    let resizeTimer = null;
    window.addEventListener("resize", () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => lastHistory && drawHistory(lastHistory), 250);
    });
    $("recall-search").addEventListener("submit", searchRecall);
    $("rotate-journal").addEventListener("click", () => action($("rotate-journal"), $("rotate-msg"), "/api/journal/rotate", {}, "New journal file started"));
    $("log-refresh").addEventListener("click", loadLog);
    $("audit-refresh").addEventListener("click", loadAudit);

    const first = await api("GET", "/api/status");
    if (first.status === 200) render(first.data);
    else problem(first.data.error || `status failed (HTTP ${first.status})`);
    connect();
    setInterval(watchdog, 1000);
    setInterval(loadLog, LOG_EVERY_MS);
    loadAudit();
    setInterval(loadAudit, LOG_EVERY_MS);
    loadHistory();
    setInterval(loadHistory, HISTORY_EVERY_MS);
  }

  start();
})();
