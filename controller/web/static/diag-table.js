// The live table (an ES module): round, phase, the dealer's and every spot's cards, and the
// dealer's prompts and events, newest first.

import { betName, money, totalText } from "./format.js";
import { $, cardEl, el } from "./dom.js";

const FEED_SHOWN = 20;

export function renderTable(snap) {
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

export function renderFeed(feed) {
  const items = feed
    .slice(-FEED_SHOWN)
    .reverse()
    .map((item) =>
      el("li", { class: `feed-${item.kind}`, "data-kind": item.kind }, el("span", { class: "meta", text: item.round ? `R${item.round}` : "" }), feedText(item)),
    );
  if (!items.length) items.push(el("li", { class: "none", text: "Nothing yet." }));
  $("feed").replaceChildren(...items);
}
