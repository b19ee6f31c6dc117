// The dealer display: /api/dealer/stream, live; read-only (no button, no input).
// Texts from the server are written with textContent only. The server words everything
// (controller/web/views.py dealer_view): the headline (a blocking alarm's instruction, or the
// table's prompt), what the last event said, merged and aged alarm lines, the table picture
// (`layout`: every spot in table order), the betting strip, the last round shown again.
// An ES module: the one shared formatting (format.js) and element building (dom.js) of both
// pages; dealer_fit.js (classic, window.DealerFit) runs before it, as module scripts are
// deferred in document order.

import { money, SUITS } from "./format.js";
import { el } from "./dom.js";

(() => {
  const { fit, weight } = window.DealerFit;
  const STALE_MS = 5000;
  const RECONNECT_MS = 2000;
  const MAX_ALARM_LINES = 3;
  const VERBS = { pay: "Pay", take: "Take", push: "Push", return: "Return", returned: "Returned", meter: "Hand pay" };
  const $ = (id) => document.getElementById(id);
  let source = null;
  let connectedAt = 0;
  let lastUpdate = 0;
  let last = null;
  let lastFelt = null;

  // "10H" -> a card: its corner index (rank over suit) and a pip; "back" -> face down
  function cardEl(text) {
    if (text === "back") {
      return el("span", { class: "card back", "data-card": "back", title: "hole card, face down", "aria-label": "card face down" });
    }
    const suit = text.slice(-1);
    const rank = text.slice(0, -1);
    const symbol = SUITS[suit] || suit;
    const colour = suit === "H" || suit === "D" ? "red" : "black";
    return el(
      "span",
      { class: `card ${colour}`, "data-card": text, title: rank + symbol },
      el(
        "span",
        { class: "index" },
        el("span", { class: rank === "10" ? "rank ten" : "rank", text: rank }),
        el("span", { class: "suit", text: symbol }),
      ),
      el("span", { class: "pip", "aria-hidden": "true", text: symbol }),
    );
  }

  function totalClass(text) {
    if (text.startsWith("BUST")) return "total bust";
    if (text === "Blackjack") return "total blackjack";
    return "total";
  }

  function renderHeadline(view) {
    const prompt = view.prompt || {};
    const stop = Boolean(prompt.stop);
    $("next").className = stop ? "next stop" : "next";
    const lines = [el("div", { class: "prompt newest", "data-testid": "next-newest", "data-code": prompt.code, "data-stop": stop ? "yes" : "no", text: prompt.text || "" })];
    if (stop && prompt.since) lines.push(el("div", { class: "stop-since", "data-testid": "stop-since", text: `This alarm has lasted ${prompt.since.replace(/^for /, "")}` }));
    if (stop && prompt.then) lines.push(el("div", { class: "then", "data-testid": "stop-then", text: prompt.then }));
    $("next").replaceChildren(...lines);
    $("refused").textContent = view.refused || "";
    $("refused").hidden = !view.refused;
  }

  function renderAlarms(lines) {
    const shown = lines.slice(0, MAX_ALARM_LINES).map((a) =>
      el(
        "div",
        { class: "alarm", "data-testid": "alarm", "data-code": a.code, "data-count": a.count },
        a.count > 1 ? el("span", { class: "alarm-count", "data-testid": "alarm-count", text: `\u00d7${a.count}` }) : null,
        el("span", { class: "alarm-text", text: a.text }),
        a.since ? el("span", { class: "alarm-since", "data-testid": "alarm-since", text: `(${a.since})` }) : null,
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

  // one line: what to do first, then for how much and which wager ("Return $5.00 Blazing 7's")
  function lineEls(what, amount, name) {
    const sum = what === "meter" ? "meter share" : what === "returned" || amount === null || amount === undefined ? "" : money(amount);
    // "Hand 1", "Double 2": never a number alone on a line
    const words = String(name).replace(/ (\d+)$/, "\u00a0$1");
    return [el("span", { class: "verb", text: VERBS[what] || what }), " ", sum ? el("span", { class: "amount", text: sum }) : null, sum ? " " : null, el("span", { class: "name", text: words })];
  }

  // a chip on a circle: its name and amount; once settled (or no wager) what to do with it
  function chipEl(chip) {
    const settled = chip.not_wager ? "return" : chip.settled;
    const classes = ["chip"];
    if (chip.settled) classes.push("settled", `pay-${chip.settled}`);
    if (chip.not_wager) classes.push("not-wager");
    if (chip.chips_off) classes.push("chips-off");
    const title = chip.not_wager ? "not a wager: return the chips" : chip.chips_off ? "the chips left the circle" : null;
    const amount = chip.settled ? chip.settled_amount : chip.amount;
    return el(
      "div",
      { class: classes.join(" "), "data-testid": "chip", "data-circle": chip.circle, "data-settled": chip.settled, "data-state": chip.not_wager ? "not-wager" : chip.chips_off ? "chips-off" : "wager", title },
      ...(settled
        ? lineEls(settled, amount, chip.name)
        : [el("span", { class: "name", text: chip.name }), " ", el("span", { class: "amount", text: amount === null || amount === undefined ? "" : money(amount) })]),
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
        el("div", { class: `chip pay-line pay-${line.what}`, "data-testid": "pay-line", "data-what": line.what, "data-spot": spot }, ...lineEls(line.what, line.amount, line.name)),
      ),
    );
  }

  function spotEl(spot) {
    const hands = spot.hands || [];
    // a hand's own stake is worth showing when it is not the main chip's: split or doubled
    const stake = (hand) => (hands.length > 1 || hand.double_down || hand.double_up ? money(hand.wager + (hand.double_down || 0) + (hand.double_up || 0)) : "");
    const classes = ["spot"];
    if (spot.in_action) classes.push("in-action");
    if (!spot.playing && !(spot.chips || []).length) classes.push("empty");
    const handEls = hands.map((hand) =>
      el(
        "div",
        { class: hand.in_action ? "hand in-action" : "hand", "data-testid": "hand", "data-total": hand.total },
        el("div", { class: "cards" }, ...(hand.cards || []).map(cardEl)),
        el("div", { class: totalClass(hand.total || "") }, hand.total || "", el("span", { class: "wager", text: stake(hand) })),
      ),
    );
    const bottom = spot.settlement ? settleEl(spot.spot, spot.settlement) : el("div", { class: "chips" }, ...(spot.chips || []).map(chipEl));
    return el(
      "div",
      { class: classes.join(" "), "data-testid": `spot-${spot.spot}`, "data-in-action": spot.in_action ? "yes" : "no", "data-playing": spot.playing ? "yes" : "no", "data-weight": weight(spot).toFixed(2) },
      handEls.length ? el("div", { class: "hands" }, ...handEls) : null,
      bottom,
      el("div", { class: "spot-number", text: String(spot.spot) }),
    );
  }

  function renderBetting(view, shown) {
    const box = $("betting");
    const betting = view.betting || {};
    if (view.phase !== "betting" || !shown) {
      box.hidden = true;
      return;
    }
    const meters = (betting.meters || []).map((m) =>
      el(
        "div",
        { class: m.offline ? "meter offline" : "meter", "data-testid": "meter", "data-pool": m.pool, "data-offline": m.offline ? "yes" : "no" },
        el("span", { class: "name", text: m.name }),
        el("strong", { text: m.offline ? "OFFLINE" : money(m.amount) }),
      ),
    );
    const limits = (betting.limits || []).map((l) => el("span", { class: "limit", "data-testid": "limit" }, `${l.name} `, el("strong", { text: `${money(l.low)} to ${money(l.high)}` })));
    const seen = el(
      "span",
      { class: "seen", "data-testid": "chips-seen" },
      "Chips on the layout: ",
      el("strong", { text: `${betting.spots_bet || 0} spot${betting.spots_bet === 1 ? "" : "s"}, ${money(betting.chips_total || 0)}` }),
    );
    box.replaceChildren(...(meters.length ? [el("div", { class: "meters" }, ...meters)] : []), el("div", { class: "limits" }, ...limits, seen));
    box.hidden = false;
  }

  // the dealer and every spot: the live table's, or the last settled round shown again.
  // Drawn again only when it changed (an alarm's age changes every second; the felt does
  // not), and fitted again then or when its room changes (the ResizeObserver below).
  function renderFelt(view) {
    const recall = view.recall;
    const key = JSON.stringify([recall, view.layout, view.dealer, view.dealer_words, view.recent, view.betting, view.phase]);
    if (key === lastFelt) return;
    lastFelt = key;
    const dealer = recall ? recall.dealer.cards : (view.dealer || {}).cards || [];
    const words = recall ? recall.dealer : view.dealer_words || {};
    $("felt").classList.toggle("recall", Boolean(recall));
    $("recall").hidden = !recall;
    if (recall) {
      const why = recall.why === "end_round" ? "held after end round" : "recalled from the console";
      $("recall").textContent = `Round ${recall.round} again, ${why} (settled ${recall.ago} ago): not this round. The live table in ${recall.left_s} s`;
    }
    $("recent").hidden = Boolean(recall);
    $("recent").replaceChildren(...(view.recent || []).map((text) => el("div", { class: "prompt older", "data-testid": "next-older", text })));
    $("dealer-cards").replaceChildren(...dealer.map(cardEl));
    $("dealer-total").className = totalClass(words.total || "");
    $("dealer-total").textContent = words.total || (words.showing ? `Showing ${words.showing}` : "");
    renderBetting(view, !recall);
    const layout = recall ? recall.layout : view.layout || [];
    $("spots").replaceChildren(...layout.map(spotEl));
    fit($("spots"));
  }

  function render(view) {
    const key = JSON.stringify(view);
    if (key !== last) {
      draw(view);
      last = key;
    }
    lastUpdate = Date.now(); // drawn: the screen is up to date
    setStale(false);
  }

  function draw(view) {
    $("table-id").textContent = view.table || "";
    document.title = `${view.table}: dealer`;
    $("round").textContent = view.round ?? "–";
    $("phase").textContent = view.phase_words || "";
    $("jackpot-down").hidden = view.jackpot_link !== false;
    if (view.jackpot_link_words) $("jackpot-down").textContent = view.jackpot_link_words;
    $("software").hidden = !view.software; // the self-check: "unverified build" (issue 29)
    $("software").textContent = view.software || "";
    renderHeadline(view);
    renderAlarms(view.alarm_lines || []);
    renderFelt(view);
  }

  // No update for STALE_MS: the whole screen is covered, the headline hidden (its
  // instruction may be out of date); the next update uncovers it.
  function setStale(stale) {
    document.body.classList.toggle("stale", stale);
    $("stale-cover").hidden = !stale;
    if (stale) {
      const age = lastUpdate ? Math.round((Date.now() - lastUpdate) / 1000) : null;
      $("stale-text").textContent = age === null ? "No news from the table yet." : `No news from the table for ${age} s.`;
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
      } catch (error) {
        // a broken message: the next one (at most a second away) repairs the screen, or
        // none does and the screen goes stale; the error is reported, not swallowed
        setTimeout(() => {
          throw error;
        });
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

  // the spots' room changed (the alarm band grew, the window ...): fitted again, next frame
  new ResizeObserver(() => requestAnimationFrame(() => fit($("spots")))).observe($("spots"));
  fetch("/api/dealer")
    .then((r) => (r.ok ? r.json() : null))
    .then((view) => view && render(view))
    .catch(() => {});
  connect();
  setInterval(watchdog, 1000);
})();
