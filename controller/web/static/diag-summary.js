// The summary line at the top of the page (an ES module): healthy, or what is wrong now, in
// words. Its problems are the server's (the same list /healthz answers with); below them
// what needs a look but does not stop play: alarms open that do not stop the game, parts
// with errors in the last hour, cleared alarms waiting to be acknowledged.

import { dateTime } from "./format.js";
import { $, changed, el } from "./dom.js";
import { ageEl, page } from "./diag-api.js";

const PARTS = { shoe: "Shoe", camera: "Camera", gpio: "GPIO" };

function errorWords(errors) {
  return Object.entries(errors || {})
    .map(([kind, n]) => `${kind.replace(/_/g, " ")} ${n}`)
    .join(", ");
}

function line(text, kind, sinceMs) {
  return el(
    "li",
    { class: kind, "data-testid": "summary-item", "data-kind": kind },
    text,
    sinceMs ? el("span", { class: "meta" }, " (since ", dateTime(sinceMs, page.zone), ", for ", ageEl(sinceMs, "", ""), ")") : null,
  );
}

// `stale`: seconds without an update from the table (null: live)
export function renderSummary(bundle, stale) {
  const box = $("summary");
  const summary = bundle.summary || { ok: true, problems: [] };
  const snap = (bundle.status || {}).snapshot || {};
  const alarms = snap.alarms || [];
  const health = bundle.health || {};
  const hour = Object.keys(PARTS).map((key) => (health[key] || {}).errors_last_hour);
  if (!changed("summary", [summary, alarms, hour, stale, page.zone])) return;
  const items = [];
  let state;
  let head;
  if (stale !== null && stale !== undefined) {
    state = "bad";
    head = `No update from the table for ${stale} s: what this page shows may be out of date`;
  } else if (!summary.ok) {
    state = "bad";
    const n = summary.problems.length;
    head = `Not healthy: ${n} problem${n === 1 ? "" : "s"} now`;
  } else {
    state = "ok";
    head = "Healthy: every part answers, no fault, nothing stops play";
  }
  for (const p of summary.problems || []) items.push(line(p.text, "bad", p.since_utc_ms));
  const open = alarms.filter((a) => a.active !== false && !a.blocking);
  for (const a of open) items.push(line(`Alarm open: ${a.text}: ${a.action}`, "warn", a.utc_ms));
  for (const [key, word] of Object.entries(PARTS)) {
    const errors = (health[key] || {}).errors_last_hour;
    if (errors && Object.keys(errors).length) items.push(line(`${word}: errors in the last hour: ${errorWords(errors)}`, "warn"));
  }
  const cleared = alarms.filter((a) => a.active === false).length;
  if (cleared) items.push(line(`${cleared} cleared alarm${cleared === 1 ? "" : "s"} to acknowledge (below)`, "note"));
  if (state === "ok" && items.some((i) => i.classList.contains("warn"))) {
    state = "warn";
    head = "Healthy, but look at:";
  }
  box.dataset.state = state;
  $("summary-head").textContent = head;
  $("summary-list").replaceChildren(...items);
}
