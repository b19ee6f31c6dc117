// The dealer display: /api/dealer/stream, live; read-only (no button, no input).
// Texts from the server are written with textContent only. The server words everything
// (controller/web/views.py dealer_view): the headline prompt, merged alarm lines, the table
// picture (`layout`: every spot in table order), the betting strip.
"use strict";

(() => {
  const { el, money, SUITS } = window.TableUI;
  const STALE_MS = 5000;
  const RECONNECT_MS = 2000;
  const MAX_ALARM_LINES = 3;
  const VERBS = { pay: "Pay", take: "Take", push: "Push", return: "Return", meter: "Meter" };
  const $ = (id) => document.getElementById(id);
  let source = null;
  let connectedAt = 0;
  let lastUpdate = 0;
  let last = null;

  // "10H" -> a card with its corner index; "back" -> the hole card face down
  function cardEl(text) {
    if (text === "back") {
      return el("span", { class: "card back", "data-card": "back", title: "hole card, face down", "aria-label": "card face down" });
    }
    const suit = text.slice(-1);
    const rank = text.slice(0, -1);
    const colour = suit === "H" || suit === "D" ? "red" : "black";
    return el(
      "span",
      { class: `card ${colour}`, "data-card": text, title: rank + (SUITS[suit] || suit) },
      el("span", { class: "rank", text: rank }),
      el("span", { class: "suit", text: SUITS[suit] || suit }),
    );
  }

  function cardsEl(cards, testid) {
    const list = cards || [];
    return el("div", { class: list.length > 4 ? "cards many" : "cards", "data-testid": testid }, ...list.map(cardEl));
  }

  function totalClass(text) {
    if (text.startsWith("BUST")) return "total bust";
    if (text === "Blackjack") return "total blackjack";
    return "total";
  }

  function renderAlarms(lines) {
    const shown = lines.slice(0, MAX_ALARM_LINES).map((a) =>
      el(
        "div",
        { class: "alarm", "data-testid": "alarm", "data-code": a.code, "data-count": a.count },
        a.count > 1 ? el("span", { class: "alarm-count", "data-testid": "alarm-count", text: `\u00d7${a.count}` }) : null,
        el("span", { class: "alarm-text", text: a.text }),
        el("span", { class: "alarm-action", text: a.action }),
      ),
    );
    const more = lines.length - shown.length;
    if (more > 0) {
      shown.push(el("div", { class: "alarms-more", "data-testid": "alarms-more", text: `and ${more} more kind${more > 1 ? "s" : ""} of alarm: see the diagnostics page` }));
    }
    $("alarms").replaceChildren(...shown);
    $("alarms").hidden = shown.length === 0;
  }

  // a chip on a circle: its name and amount; once settled, what to do and for how much
  function chipEl(chip) {
    const settled = chip.settled;
    const amount = settled ? chip.settled_amount : chip.amount;
    const classes = ["chip"];
    if (settled) classes.push("settled", `pay-${settled}`);
    if (chip.not_wager) classes.push("not-wager");
    if (chip.chips_off) classes.push("chips-off");
    const title = chip.not_wager ? "not a wager: return the chips" : chip.chips_off ? "the chips left the circle" : null;
    return el(
      "div",
      { class: classes.join(" "), "data-testid": "chip", "data-circle": chip.circle, "data-settled": settled, "data-state": chip.not_wager ? "not-wager" : chip.chips_off ? "chips-off" : "wager", title },
      ...(settled
        ? [
            // settled: what to do first, as on the settlement rows ("Take $5.00 Lucky Ladies")
            el("span", { class: "verb", text: VERBS[settled] || settled }),
            " ",
            el("span", { class: "amount", text: settled === "meter" ? "meter share" : money(amount) }),
            " ",
            el("span", { class: "name", text: chip.name }),
          ]
        : [
            el("span", { class: "name", text: chip.name }),
            " ",
            el("span", { class: "amount", text: amount === null || amount === undefined ? "" : money(amount) }),
          ]),
    );
  }

  function settleEl(spot, row) {
    const net = row.net;
    const netText = row.meter ? "hand pay" : net > 0 ? `+${money(net)}` : net < 0 ? money(net) : "even";
    const netClass = row.meter || net > 0 ? "up" : net < 0 ? "down" : "even";
    return el(
      "div",
      { class: "settle", "data-testid": "settlement", "data-spot": spot },
      el("div", { class: `net ${netClass}`, "data-testid": "net", text: netText }),
      ...row.lines.map((line) =>
        el(
          "div",
          { class: `chip pay-line pay-${line.what}`, "data-testid": "pay-line", "data-what": line.what, "data-spot": spot },
          el("span", { class: "verb", text: line.what === "meter" ? "Hand pay" : VERBS[line.what] || line.what }),
          " ",
          el("span", { class: "amount", text: line.what === "meter" ? "meter share" : money(line.amount) }),
          " ",
          el("span", { class: "name", text: line.name }),
        ),
      ),
    );
  }

  function spotEl(spot, index, count) {
    const arc = Math.min(index, count - 1 - index, 3);
    const hands = spot.hands || [];
    // a hand's own stake is worth showing when it is not the main chip's: split or doubled
    const stake = (hand) => (hands.length > 1 || hand.double_down || hand.double_up ? money(hand.wager + (hand.double_down || 0) + (hand.double_up || 0)) : "");
    const classes = ["spot", `arc-${arc}`, `hands-${Math.max(1, hands.length)}`];
    if (spot.in_action) classes.push("in-action");
    if (!spot.playing && !(spot.chips || []).length) classes.push("empty");
    const handEls = hands.map((hand) =>
      el(
        "div",
        { class: hand.in_action ? "hand in-action" : "hand", "data-testid": "hand", "data-total": hand.total },
        cardsEl(hand.cards, null),
        el(
          "div",
          { class: totalClass(hand.total || "") },
          hand.total || "",
          el("span", { class: "wager", text: stake(hand) }),
        ),
      ),
    );
    const bottom = spot.settlement
      ? settleEl(spot.spot, spot.settlement)
      : el("div", { class: "chips" }, ...(spot.chips || []).map(chipEl));
    return el(
      "div",
      { class: classes.join(" "), "data-testid": `spot-${spot.spot}`, "data-in-action": spot.in_action ? "yes" : "no", "data-playing": spot.playing ? "yes" : "no" },
      el("div", { class: "hands" }, ...handEls),
      bottom,
      el("div", { class: "spot-number", text: String(spot.spot) }),
    );
  }

  function renderBetting(view) {
    const box = $("betting");
    const betting = view.betting || {};
    if (view.phase !== "betting") {
      box.hidden = true;
      return;
    }
    const meters = (betting.meters || []).map((m) =>
      el("div", { class: "meter", "data-testid": "meter", "data-pool": m.pool }, el("span", { class: "name", text: m.name }), el("strong", { text: money(m.amount) })),
    );
    const limits = (betting.limits || []).map((l) =>
      el("span", { class: "limit", "data-testid": "limit" }, `${l.name} `, el("strong", { text: `${money(l.low)} to ${money(l.high)}` })),
    );
    const seen = el(
      "span",
      { class: "seen", "data-testid": "chips-seen" },
      "Chips on the layout: ",
      el("strong", { text: `${betting.spots_bet || 0} spot${betting.spots_bet === 1 ? "" : "s"}, ${money(betting.chips_total || 0)}` }),
    );
    box.replaceChildren(
      ...(meters.length ? [el("div", { class: "meters" }, ...meters)] : []),
      el("div", { class: "limits" }, ...limits, seen),
    );
    box.hidden = false;
  }

  function render(view) {
    lastUpdate = Date.now();
    setStale(false);
    const key = JSON.stringify(view);
    if (key === last) return;
    last = key;

    $("table-id").textContent = view.table || "";
    document.title = `${view.table}: dealer`;
    $("round").textContent = view.round ?? "–";
    $("phase").textContent = view.phase_words || "";
    $("jackpot-down").hidden = view.jackpot_link !== false;
    if (view.jackpot_link_words) $("jackpot-down").textContent = view.jackpot_link_words;
    $("software").hidden = !view.software;  // the self-check: "unverified build" (issue 29)
    $("software").textContent = view.software || "";

    const prompt = view.prompt ? view.prompt.text : "";
    $("next").replaceChildren(
      el("div", { class: "prompt newest", "data-testid": "next-newest", "data-code": view.prompt ? view.prompt.code : null, text: prompt }),
      ...(view.recent || []).slice(-1).map((text) => el("div", { class: "prompt older", "data-testid": "next-older", text })),
    );
    $("refused").textContent = view.refused || "";
    $("refused").hidden = !view.refused;

    renderAlarms(view.alarm_lines || []);

    const dealer = view.dealer || {};
    const words = view.dealer_words || {};
    $("dealer-cards").replaceChildren(...(dealer.cards || []).map(cardEl));
    const dealerTotal = $("dealer-total");
    dealerTotal.className = totalClass(words.total || "");
    dealerTotal.textContent = words.total || (words.showing ? `Showing ${words.showing}` : "");

    const layout = view.layout || [];
    $("spots").replaceChildren(...layout.map((spot, i) => spotEl(spot, i, layout.length)));
    renderBetting(view);
  }

  function setStale(stale) {
    document.body.classList.toggle("stale", stale);
    $("stale").hidden = !stale;
    if (stale) {
      const age = lastUpdate ? Math.round((Date.now() - lastUpdate) / 1000) : null;
      $("stale").textContent = age === null ? "STALE: no data" : `STALE: no update for ${age} s`;
    }
  }

  function connect() {
    if (source) source.close();
    connectedAt = Date.now();
    const es = new EventSource("/api/dealer/stream");
    source = es;
    es.addEventListener("update", (event) => {
      try {
        render(JSON.parse(event.data));
      } catch (_) {
        // a broken message: the next one (at most a second away) repairs the screen
      }
    });
    es.addEventListener("error", () => {
      // a dropped connection is retried by the browser; a refused one closes the source
      if (es.readyState === EventSource.CLOSED) {
        setTimeout(() => es === source && connect(), RECONNECT_MS);
      }
    });
  }

  // Stale: no update for STALE_MS. A stream that stays silent that long is started again,
  // whatever state the browser thinks it is in.
  function watchdog() {
    if (Date.now() - lastUpdate <= STALE_MS) return;
    setStale(true);
    if (Date.now() - connectedAt > STALE_MS) connect();
  }

  fetch("/api/dealer")
    .then((r) => (r.ok ? r.json() : null))
    .then((view) => view && render(view))
    .catch(() => {});
  connect();
  setInterval(watchdog, 1000);
})();
