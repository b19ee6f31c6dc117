// The dealer display: /api/dealer/stream, live; read-only (no button, no input).
// Texts from the server are written with textContent only.
"use strict";

(() => {
  const { el, money, cardEl, SUITS } = window.TableUI;
  const STALE_MS = 5000;
  const RECONNECT_MS = 2000;
  const $ = (id) => document.getElementById(id);
  let source = null;
  let connectedAt = 0;
  let lastUpdate = 0;
  let last = null;

  function totalEl(total, soft) {
    if (total === null || total === undefined) return el("span", {});
    if (total > 21) return el("span", { class: "bust", text: `BUST ${total}` });
    return el("span", { text: soft ? `soft ${total}` : String(total) });
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

    const alarms = (view.alarms || []).map((a) =>
      el(
        "div",
        { class: "alarm", "data-testid": "alarm", "data-code": a.code },
        el("div", { class: "alarm-text", text: (a.spot ? `Spot ${a.spot}: ` : "") + a.text }),
        el("div", { class: "alarm-action", text: a.action }),
      ),
    );
    $("alarms").replaceChildren(...alarms);
    $("alarms").hidden = alarms.length === 0;

    const next = (view.next || []).slice().reverse();
    $("next").replaceChildren(
      ...next.map((text, i) => el("div", { class: i === 0 ? "prompt newest" : "prompt", "data-testid": i === 0 ? "next-newest" : "next-older", text })),
    );

    $("refused").textContent = view.refused || "";
    $("refused").hidden = !view.refused;

    const pay = (view.pay || []).map((line) =>
      el(
        "li",
        { class: `pay-${line.what}`, "data-testid": "pay-line", "data-what": line.what, "data-spot": line.spot },
        el("span", { class: "text", text: line.text }),
        el("span", { class: "amount", text: `${line.what === "meter" ? "meter" : line.what} ${line.what === "meter" ? "" : money(line.amount)}`.trim() }),
      ),
    );
    $("pay").replaceChildren(...pay);
    $("pay-box").hidden = pay.length === 0;

    const dealer = view.dealer || {};
    $("dealer-cards").replaceChildren(...(dealer.cards || []).map(cardEl));
    const dealerTotal = $("dealer-total");
    if (dealer.total !== null && dealer.total !== undefined) {
      dealerTotal.replaceChildren(totalEl(dealer.total, false));
    } else if (dealer.showing) {
      dealerTotal.replaceChildren(`Showing ${dealer.showing.slice(0, -1)}${SUITS[dealer.showing.slice(-1)] || ""}`);
    } else {
      dealerTotal.replaceChildren();
    }

    const act = view.in_action;
    const spots = (view.spots || []).map((spot) => {
      const active = Boolean(act && act.spot === spot.spot);
      const hands = (spot.hands || []).map((hand, i) => {
        const here = active && (act.hand ?? 0) === i;
        return el(
          "div",
          { class: here ? "hand in-action" : "hand" },
          el("div", { class: "cards" }, ...(hand.cards || []).map(cardEl)),
          el("div", { class: "total" }, totalEl(hand.total, hand.soft), el("span", { class: "wager", text: money(hand.wager) })),
        );
      });
      return el(
        "div",
        { class: active ? "spot in-action" : "spot", "data-testid": `spot-${spot.spot}`, "data-in-action": active ? "yes" : "no" },
        el("div", { class: "who", text: `Spot ${spot.spot}` }),
        ...hands,
      );
    });
    $("spots").replaceChildren(...spots);
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
