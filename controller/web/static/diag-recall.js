// Game recall (an ES module): the newest 10 rounds, 10 older ones, or a search across the
// journal's files; each round's hands as cards, its settlements, its event script.

import { betName, cardText, dateTime, duration, money, totalText, typedDateTime, zoneName } from "./format.js";
import { $, cardEl, el, say } from "./dom.js";
import { api, page } from "./diag-api.js";

let recallSearch = null; // the search shown (null: the last 10, reloaded as rounds settle)

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

export async function loadRecall(search) {
  recallSearch = search || null;
  const asked = ++recallAsked;
  let path = "/api/rounds";
  if (recallSearch && recallSearch.before) path = `/api/rounds/older?before=${encodeURIComponent(recallSearch.before)}`;
  else if (recallSearch) path = `/api/rounds/search?${new URLSearchParams(recallSearch)}`;
  const { status, data } = await api("GET", path);
  if (asked !== recallAsked) return;
  $("recall-what").textContent = recallSearch ? `(${searchWords(recallSearch, data)})` : "(newest 10 rounds)";
  $("search-zone").textContent = zoneName(page.zone);
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
      el("span", { class: "when", "data-testid": "round-when", text: ` ${roundWhen(record)}` }),
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
      recallSteps(record),
      el("ul", { class: "recall-settlements" }, ...bySpot(settlements).map((line) => el("li", { "data-testid": "recall-settlement", text: settlementText(line, split) }))),
      el("details", { class: "round-full" }, el("summary", { text: "The whole record as text, as the recall command prints it" }), el("pre", { class: "round-text", text: record.text })),
      link,
    );
    if (open.has(String(record.round))) details.open = true;
    return details;
  });
  if (!rounds.length) rounds.push(el("p", { class: "none", text: "No round settled yet." }));
  $("recall").replaceChildren(...rounds);
}

function searchWords(search, answer) {
  if (search.before) return `the 10 rounds before round ${search.before}`;
  if (search.round) return `round ${search.round}`;
  const at = answer.at_utc_ms ? dateTime(answer.at_utc_ms, page.zone) : search.at;
  if (search.to) return `settled from ${at} to ${answer.to_utc_ms ? dateTime(answer.to_utc_ms, page.zone) : search.to}`;
  return `nearest ${at}`;
}

export function searchRecall(event) {
  event.preventDefault();
  const round = $("search-round").value.trim();
  const typedAt = $("search-at").value.trim();
  const typedTo = $("search-to").value.trim();
  const at = typedDateTime(typedAt);
  const to = typedDateTime(typedTo);
  if (round) {
    loadRecall({ round });
  } else if (at && (to || !typedTo)) {
    loadRecall(to ? { at, to } : { at });
  } else if (typedAt || typedTo) {
    say($("recall-msg"), `Write the time as YYYY-MM-DD HH:MM, the table's time (${zoneName(page.zone)}), e.g. 2026-11-26 13:09`, "err");
  } else {
    say($("recall-msg"), "Give a round number, or a date and time", "err");
  }
}

// When a round was played: its settlement in the page's one format, and how long it took.
function roundWhen(record) {
  if (!record.settled_utc_ms) return record.when || "";
  const took = record.started_utc_ms ? ` (dealt in ${duration((record.settled_utc_ms - record.started_utc_ms) / 1000)})` : "";
  return `settled ${dateTime(record.settled_utc_ms, page.zone)}${took}`;
}

// Every action of the round in order: its time, the spot and hand, what was done, the cards
// dealt as faces, what the table said.
function recallSteps(record) {
  const steps = record.steps || [];
  if (!steps.length) return null;
  const rows = steps.map((s) =>
    el(
      "tr",
      { "data-testid": "recall-step", class: s.refused ? "refused" : "" },
      el("td", { class: "time", text: s.utc_ms ? dateTime(s.utc_ms, page.zone) : "–" }),
      el("td", { class: "who", text: s.who }),
      el("td", { text: s.refused ? `${s.what} (refused: ${s.refused})` : s.what }),
      el("td", { class: "cards" }, ...s.cards.map(cardEl)),
      el("td", { class: "said", text: s.said.join("; ") }),
    ),
  );
  const rough = steps.some((s) => s.approximate) ? " Times approximate: the table restarted or its clock stepped during this round." : "";
  return el(
    "details",
    { class: "round-steps", open: "" },
    el("summary", { text: `Every action, step by step (${steps.length})${rough}` }),
    el(
      "div",
      { class: "table-scroll" },
      el(
        "table",
        { class: "steps-table", "data-testid": "recall-steps" },
        el("thead", {}, el("tr", {}, ...["Time", "Spot and hand", "Action", "Cards", "The table said"].map((h) => el("th", { text: h })))),
        el("tbody", {}, ...rows),
      ),
    ),
  );
}

// The newest 10 reload as rounds settle; a search stays as it is.
export function recallLive() {
  return !recallSearch;
}

export function loadOlder() {
  if (recallOldest) loadRecall({ before: String(recallOldest) });
}
