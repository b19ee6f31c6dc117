// History (an ES module): the charts of the daemon's history (uPlot, vendored: window.uPlot)
// and the side bets against the par sheet.

import { dateTime, dollars, duration, money, pct } from "./format.js";
import { $, el, say } from "./dom.js";
import { api, page } from "./diag-api.js";

const HISTORY_SOONEST_MS = 10000;
let historyTimer = null;
let historyLoaded = 0;

let lastHistory = null;
const charts = [];
const COLOURS = { ok: "#1a7f37", warn: "#b7791f", bad: "#b42318", accent: "#0b5cad", muted: "#65717e", band: "rgba(11,92,173,0.14)" };
const POOL_COLOURS = ["#b42318", "#0b5cad", "#1a7f37", "#8250df", "#b7791f"];

export function historySoon() {
  if (historyTimer) return;
  const wait = Math.max(0, historyLoaded + HISTORY_SOONEST_MS - Date.now());
  historyTimer = setTimeout(() => {
    historyTimer = null;
    loadHistory();
  }, wait);
}

let historyAsked = 0;

export async function loadHistory() {
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

// An axis as wide as its longest label, measured in the chart's font (uPlot's own recipe):
// no label is cut short, whatever the amounts ("$10,031.50") or the sizes of the page.
function axisSize(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  let size = axis.ticks.size + axis.gap;
  const longest = (values || []).flatMap((v) => String(v).split("\n")).reduce((a, v) => (v.length > a.length ? v : a), "");
  if (longest) {
    u.ctx.font = axis.font[0];
    size += u.ctx.measureText(longest).width / (window.devicePixelRatio || 1);
  }
  size = Math.ceil(size) + 8;
  // uPlot lays out again when the ticks change: never narrower than the last layout, so the
  // layouts settle and no label is cut
  return cycleNum > 1 ? Math.max(axis._size || 0, size) : size;
}

// The time axis in the page's one format, on two lines: "2026-11-26" over "13:09:36 EST".
function timeValues(u, splits) {
  return splits.map((v) => (v === null ? "" : dateTime(v * 1000, page.zone).replace(" ", "\n")));
}

// One chart: `lines` = [{label, values, colour, scale, stepped, dash, fmt}];
// options.axes = [{scale, label (with its unit), side, fmt, range, splits}], bands = [[hi, lo]],
// reference = the value of the chart's reference line, as the server sent it (data-reference)
function chart(id, title, t, lines, options = {}) {
  const box = el("figure", { class: "chart", "data-testid": `chart-${id}`, id: `chart-${id}` }, el("figcaption", { text: title }));
  const points = lines.length ? lines[0].values.filter((v) => v !== null && v !== undefined).length : 0;
  box.dataset.points = String(points);
  box.dataset.series = String(lines.length);
  if (options.reference !== undefined) box.dataset.reference = options.reference === null ? "" : String(options.reference);
  $("charts").append(box);
  if (!t.length) {
    box.append(el("p", { class: "none", text: "No history yet." }));
    return;
  }
  const width = Math.max(260, box.clientWidth - 4);
  const series = [{ label: "time", value: (u, v) => (v === null ? "" : dateTime(v * 1000, page.zone)) }];
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
  const axes = [{ stroke: COLOURS.muted, grid: { stroke: "#eef0f2" }, values: timeValues, space: 110, size: 52 }];
  // one point: an hour around it (uPlot alone would stretch it over years)
  const scales = { x: { time: true, range: (u, min, max) => (min === max ? [min - 1800, max + 1800] : [min, max]) } };
  for (const axis of options.axes || [{ scale: "y" }]) {
    axes.push({
      scale: axis.scale,
      side: axis.side ?? 3,
      label: axis.label,
      labelSize: axis.label ? 20 : 0,
      stroke: COLOURS.muted,
      grid: { show: axis.side !== 1, stroke: "#eef0f2" },
      size: axisSize,
      values: axis.fmt ? (u, vals) => vals.map((v) => axis.fmt(v)) : undefined,
      splits: axis.splits,
    });
    scales[axis.scale] = axis.range ? { range: axis.range } : { auto: true };
  }
  const opts = {
    width,
    height: options.height || 210,
    series,
    axes,
    scales,
    bands: (options.bands || []).map(([hi, lo]) => ({ series: [hi, lo], fill: COLOURS.band })),
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
  };
  if (page.zone && uPlot.tzDate) opts.tzDate = (ts) => uPlot.tzDate(new Date(ts * 1000), page.zone);
  const plot = new uPlot(opts, [t, ...lines.map((l) => l.values)], box);
  charts.push(plot);
}

const whole = (v) => (Number.isInteger(v) ? String(v) : "");

export function drawHistory(data) {
  while (charts.length) charts.pop().destroy();
  $("charts").replaceChildren();
  const t = data.t || [];
  chart("link", "Jackpot link (up or down) and messages waiting in the outbox", t, [
    { label: "link", values: data.link_up || [], colour: COLOURS.ok, scale: "updown", stepped: true, fmt: (v) => (v ? "up" : "DOWN") },
    { label: "outbox", values: data.outbox || [], colour: COLOURS.warn, scale: "n", fmt: (v) => `${v} waiting` },
  ], {
    axes: [
      { scale: "updown", label: "jackpot link", range: [0, 1.05], splits: () => [0, 1], fmt: (v) => (v === 1 ? "up" : v === 0 ? "down" : "") },
      { scale: "n", side: 1, label: "messages waiting", fmt: whole },
    ],
  });
  chart("shoe", "Shoe: errors and reconnects in each interval between points", t, [
    { label: "errors", values: data.shoe_errors || [], colour: COLOURS.bad, stepped: true },
    { label: "reconnects", values: data.shoe_reconnects || [], colour: COLOURS.accent, stepped: true },
  ], { axes: [{ scale: "y", label: "count per interval", fmt: whole }] });
  chart("pace", "Pace: cards and rounds per hour", t, [
    { label: "cards per hour", values: data.cards_per_hour || [], colour: COLOURS.accent, scale: "cards", fmt: (v) => Math.round(v) },
    { label: "rounds per hour", values: data.rounds_per_hour || [], colour: COLOURS.ok, scale: "rounds", fmt: (v) => Math.round(v) },
  ], { axes: [{ scale: "cards", label: "cards per hour", fmt: (v) => Math.round(v).toLocaleString("en-US") }, { scale: "rounds", side: 1, label: "rounds per hour", fmt: (v) => Math.round(v).toLocaleString("en-US") }] });
  // each meter on its own scale: a $250 Mystery meter is no flat line beside a $10,000 one
  Object.entries(data.meters || {}).forEach(([pool, m], i) => {
    chart(`meter-${pool}`, `Progressive meter: ${m.title} (dollars, as the jackpot controller signed it)`, t, [
      { label: m.title, values: m.cents, colour: POOL_COLOURS[i % POOL_COLOURS.length], fmt: dollars },
    ], { axes: [{ scale: "y", label: "meter ($)", fmt: dollars }] });
  });
  const pools = Object.entries(data.pools || {});
  chart("pools", "Progressive pools: stakes this table fed each one, cumulative (dollars)", t, pools.map(([, p], i) => ({ label: p.title, values: p.cents, colour: POOL_COLOURS[i % POOL_COLOURS.length], fmt: dollars })), {
    axes: [{ scale: "y", label: "stakes fed ($)", fmt: dollars }],
  });
  if (data.main) mainChart(data.main, t);
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
    ], { axes: [{ scale: "y", label: "hands that hit (%)", fmt: (v) => pct(v, 0) }], bands: [[3, 4]], height: 190 });
    chart(`hold-${bet}`, `${line.title}: hold seen, ${parWords(line.par_hold)}, 95% band`, t, [
      { label: "seen", values: line.hold, colour: COLOURS.bad, fmt: (v) => pct(v, 1) },
      { label: "par", values: par(line.par_hold ?? null), colour: COLOURS.ok, dash: [6, 4], width: 1.5, fmt: (v) => pct(v, 2) },
      { label: "band high", values: clip(line.hold_hi), colour: "rgba(11,92,173,0.4)", width: 1, fmt: (v) => pct(v, 1) },
      { label: "band low", values: clip(line.hold_lo), colour: "rgba(11,92,173,0.4)", width: 1, fmt: (v) => pct(v, 1) },
    ], { axes: [{ scale: "y", label: "house keeps (% of stakes)", fmt: (v) => pct(v, 0) }], bands: [[3, 4]], height: 190 });
  }
}

// The main game's words for its reference line: "basic-strategy edge 0.52%", or why there is
// none yet. Never a verdict: players do not all play basic strategy.
function edgeWords(main) {
  if (main.edge !== null && main.edge !== undefined) return `basic-strategy edge ${pct(main.edge, 2)}`;
  if (main.edge_state === "failed") return `basic-strategy edge not computed (${main.edge_problem || "unknown reason"})`;
  return "basic-strategy edge: reference being computed";
}

// The main game's hold seen (house net over initial wagers, since the history began) beside
// the basic-strategy edge and its 95% band: a reference line in neutral colours, not an alarm.
function mainChart(main, t) {
  const clip = (values) => values.map((v) => (v === null || v === undefined ? null : Math.max(-2, Math.min(1, v))));
  const edge = main.edge ?? null;
  chart("hold-main", `Main game hold seen, ${edgeWords(main)} (${main.note}), 95% band`, t, [
    { label: "seen", values: main.hold || [], colour: COLOURS.accent, fmt: (v) => pct(v, 1) },
    { label: "basic-strategy edge", values: t.map(() => edge), colour: COLOURS.muted, dash: [6, 4], width: 1.5, fmt: (v) => pct(v, 2) },
    { label: "band high", values: clip(main.hold_hi || []), colour: "rgba(101,113,126,0.4)", width: 1, fmt: (v) => pct(v, 1) },
    { label: "band low", values: clip(main.hold_lo || []), colour: "rgba(101,113,126,0.4)", width: 1, fmt: (v) => pct(v, 1) },
  ], { axes: [{ scale: "y", label: "house keeps (%)", fmt: (v) => pct(v, 0) }], bands: [[3, 4]], height: 190, reference: edge });
}

function mainRow(main) {
  const band = main.band ? ` (95% band ${pct(main.band[0], 1)} to ${pct(main.band[1], 1)})` : "";
  return el(
    "tr",
    { "data-testid": "bet-row-main", "data-reference": main.edge === null || main.edge === undefined ? "" : String(main.edge) },
    el("th", { text: "Main game (initial wagers)" }),
    el("td", { text: main.wagers }),
    el("td", { text: "–" }),
    el("td", { text: "–" }),
    el("td", { text: "–" }),
    el("td", { text: "" }),
    el("td", { text: main.stakes ? `${pct(main.seen_hold)} of ${money(main.stakes)}` : "no wager yet" }),
    el("td", { text: edgeWords(main) }),
    el("td", { class: "note", text: `${main.note}${band}` }),
  );
}

function verdict(inBand) {
  if (inBand === null || inBand === undefined) return ["–", ""];
  return inBand ? ["within the band", "ok"] : ["OUTSIDE the band: look at it", "bad"];
}

function renderBetsTable(data) {
  const head = el(
    "tr",
    {},
    ...["Bet", "Wagers", "Hits", "Hit frequency seen (95% interval)", "Par", "", "Hold seen", "Par hold", ""].map((h) => el("th", { text: h })),
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
  if (data.main) rows.unshift(mainRow(data.main));
  $("bets-table").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
}

// Draw the charts again at the page's new width.
export function redrawHistory() {
  if (lastHistory) drawHistory(lastHistory);
}
