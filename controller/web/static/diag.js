// The diagnostics page: the bundle of /api/stream, live, and the technician's actions.
// Everything from the server is written with textContent (never innerHTML): alarm texts,
// names and log lines are data, not markup.
"use strict";

(() => {
  const { el, money, cardEl } = window.TableUI;
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
      button.disabled = button.id === "light-test" && lightTestRunning;
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
    if (changed("tiles", [status, health])) renderTiles(status, snap, health);
    if (changed("faults", [status.faults, status.journal_fault, (snap.shoe || {}).fault])) {
      renderFaults(status, snap);
    }
    if (changed("alarms", [snap.alarms || [], snap.alarms_dropped])) renderAlarms(snap);
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
    }
  }

  function renderHeader(bundle) {
    $("table-id").textContent = bundle.table;
    $("game").textContent = bundle.game;
    $("version").textContent = bundle.version;
    const sum = bundle.config_checksum || "";
    $("checksum").textContent = sum.slice(0, 12);
    $("checksum").title = sum;
    $("uptime").textContent = duration(bundle.uptime_s);
    document.title = `${bundle.table}: diagnostics`;
  }

  function errorsText(errors) {
    const kinds = Object.entries(errors || {});
    if (!kinds.length) return "none";
    return kinds.map(([kind, n]) => `${kind} ${n}`).join(", ");
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

  function extraLines(part, known) {
    const out = [];
    for (const [key, value] of Object.entries(part || {})) {
      if (known.includes(key) || value === null || typeof value === "object") continue;
      out.push([key.replace(/_/g, " "), String(value)]);
    }
    return out;
  }

  function renderTiles(status, snap, health) {
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
        ["link", status.jackpot_link ? "up" : "DOWN: progressive wagers refused"],
      ]),
    );
    $("tiles").replaceChildren(...tiles);
  }

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
          el("strong", { text: kind }),
          `: ${fault.detail || "lost"} `,
          el("span", { class: "tag", text: fault.active ? "present" : "gone, latched" }),
        ),
      );
    }
    const shoeFault = (snap.shoe || {}).fault;
    if (shoeFault) {
      items.push(el("li", { class: "bad", "data-testid": "fault", "data-fault": "shoe" }, `Shoe: ${shoeFault}`));
    }
    if (!items.length) items.push(el("li", { class: "none", text: "No fault latched." }));
    $("faults").replaceChildren(...items);
  }

  function renderAlarms(snap) {
    const alarms = snap.alarms || [];
    $("alarm-count").textContent = String(alarms.length);
    $("alarm-count").classList.toggle("hot", alarms.length > 0);
    $("ack-all").disabled = alarms.length === 0;
    const items = alarms.map((alarm) => {
      const button = el("button", { type: "button", class: "ack", "data-testid": "ack", "data-alarm-id": alarm.id }, "Acknowledge");
      button.addEventListener("click", () => action(button, $("alarms-msg"), "/api/alarms/ack", { alarm: alarm.id }, `Alarm ${alarm.id} acknowledged`));
      return el(
        "li",
        { class: "alarm", "data-testid": "alarm", "data-alarm-id": alarm.id, "data-code": alarm.code },
        el(
          "div",
          { class: "alarm-text" },
          el("strong", { class: "alarm-what", text: alarm.text }),
          el("div", { class: "alarm-action", text: alarm.action }),
          el(
            "div",
            { class: "meta" },
            `#${alarm.id} ${alarm.code}` + (alarm.spot ? ` · spot ${alarm.spot}` : "") + (alarm.round ? ` · round ${alarm.round}` : ""),
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

  const CIRCLES = { main: "main" };

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
        el("li", { "data-circle": circle }, `${CIRCLES[circle] || circle.replace(/_/g, " ")} ${money(cents)}`),
      );
      for (const extra of ["insurance", "even_money", "ez_bust"]) {
        if (spot[extra]) {
          wagers.push(el("li", {}, `${extra.replace(/_/g, " ")} ${typeof spot[extra] === "number" ? money(spot[extra]) : "yes"}`));
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
          el("div", { class: "total", text: `${totalText(hand.total, hand.soft)}  ${money(hand.wager)}` }),
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
      const bets = (snap.bets || []).map((b) => `spot ${b.spot} ${b.circle.replace(/_/g, " ")}`);
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
        return `Refused ${item.event}: ${item.reason}`;
      case "settled": {
        const where = `spot ${item.spot}` + (item.hand ? ` hand ${item.hand + 1}` : "");
        return `Settled ${where} ${item.wager.replace(/_/g, " ")}: ${item.outcome}, stake ${money(item.stake)}, paid ${money(item.paid)}, returned ${money(item.returned)}${item.reason ? ` (${item.reason})` : ""}`;
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

  function renderGpio(gpio) {
    const inputs = Object.entries((gpio && gpio.inputs) || {}).map(([name, input]) => {
      // active: the pin's level now (null: cannot be read); confirmed: after the debounce
      const state = input.active === null || input.active === undefined ? "unknown" : input.active ? "on" : "off";
      const note = state !== "unknown" && input.active !== input.confirmed ? " (not yet confirmed)" : "";
      return el(
        "li",
        { class: state, "data-testid": `input-${name}`, "data-state": state, title: `pin ${input.pin}` },
        el("span", { class: "dot", "aria-hidden": "true" }),
        el("span", { class: "name", text: name }),
        el("span", { class: "meta", text: `${state}${note} · pin ${input.pin} · ${input.edges} edges${input.rejected ? `, ${input.rejected} rejected` : ""}` }),
      );
    });
    if (!inputs.length) inputs.push(el("li", { class: "none", text: "No inputs." }));
    $("inputs").replaceChildren(...inputs);
    const lights = Object.entries((gpio && gpio.lights) || {}).map(([name, state]) =>
      el(
        "li",
        { class: state, "data-testid": `light-${name}`, "data-state": state },
        el("span", { class: "dot", "aria-hidden": "true" }),
        el("span", { class: "name", text: name }),
        el("span", { class: "meta", text: state }),
      ),
    );
    if (!lights.length) lights.push(el("li", { class: "none", text: "No lights." }));
    $("lights").replaceChildren(...lights);
  }

  function renderLightTest(test) {
    const out = $("light-test-state");
    lightTestRunning = Boolean(test && test.running);
    if (!test) {
      out.hidden = true;
      out.removeAttribute("data-state");
      $("light-test").disabled = false;
      return;
    }
    out.hidden = false;
    out.classList.toggle("ok", !test.running);
    if (test.running) {
      out.dataset.state = "running";
      out.replaceChildren(
        `Light test running (${test.by}): ${test.light || "…"} — ${test.done} of ${test.lights} lights done `,
        el("progress", { max: test.lights, value: test.done }),
      );
    } else {
      out.dataset.state = "done";
      out.replaceChildren(`Light test (${test.by}) ${test.result}`);
    }
    $("light-test").disabled = Boolean(test.running);
  }

  // -- recall and log (fetched, not streamed) ---------------------------------------------

  // The last 10 rounds (path /api/rounds), or a search across the journal's files.
  async function loadRecall(search) {
    recallSearch = search || null;
    const path = recallSearch ? `/api/rounds/search?${new URLSearchParams(recallSearch)}` : "/api/rounds";
    const { status, data } = await api("GET", path);
    $("recall-what").textContent = recallSearch ? `(${searchWords(recallSearch)})` : "(last 10 rounds)";
    if (status !== 200) {
      say($("recall-msg"), data.error || `recall failed (HTTP ${status})`, "err");
      if (recallSearch) $("recall").replaceChildren();
      return;
    }
    const unreadable = data.unreadable || [];
    say($("recall-msg"), unreadable.length ? `Not searched (cannot be read): ${unreadable.join("; ")}` : "", "err");
    const open = new Set([...document.querySelectorAll("#recall details[open]")].map((d) => d.dataset.round));
    const rounds = (data.rounds || []).map((record) => {
      const settlements = (record.result && record.result.settlements) || [];
      const result = record.result || {};
      const summary = el(
        "summary",
        {},
        el("strong", { text: `Round ${record.round}` }),
        record.void ? el("span", { class: "tag bad", text: "VOID" }) : null,
        el("span", { class: "when", "data-testid": "round-when", text: ` ${record.when || ""}` }),
        ` · dealer ${(record.dealer || []).join(" ") || "–"} · ${settlements.length} wager(s) · stakes ${money(result.stake)}, paid ${money(result.paid)}, returned ${money(result.returned)}`,
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
        el("pre", { class: "round-text", text: record.text }),
        link,
      );
      if (open.has(String(record.round))) details.open = true;
      return details;
    });
    if (!rounds.length) rounds.push(el("p", { class: "none", text: "No round settled yet." }));
    $("recall").replaceChildren(...rounds);
  }

  function searchWords(search) {
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

    $("logout").addEventListener("click", async () => {
      const { data: out } = await api("POST", "/logout", {});
      if (out.ok) window.location.assign("/login");
      else problem(out.error || "logout failed");
    });
    $("clear-faults").addEventListener("click", () => action($("clear-faults"), $("faults-msg"), "/api/faults/clear", {}, "Faults cleared"));
    $("ack-all").addEventListener("click", () => action($("ack-all"), $("alarms-msg"), "/api/alarms/ack", { alarm: 0 }, "All alarms acknowledged"));
    $("light-test").addEventListener("click", () => action($("light-test"), $("light-test-msg"), "/api/lights/test", {}, "Light test started"));
    $("recall-refresh").addEventListener("click", () => loadRecall(null));
    $("recall-search").addEventListener("submit", searchRecall);
    $("rotate-journal").addEventListener("click", () => action($("rotate-journal"), $("rotate-msg"), "/api/journal/rotate", {}, "New journal file started"));
    $("log-refresh").addEventListener("click", loadLog);

    const first = await api("GET", "/api/status");
    if (first.status === 200) render(first.data);
    else problem(first.data.error || `status failed (HTTP ${first.status})`);
    connect();
    setInterval(watchdog, 1000);
    setInterval(loadLog, LOG_EVERY_MS);
  }

  start();
})();
