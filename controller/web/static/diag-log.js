// The recent log (an ES module): fetched, not streamed, at most once a second; a level
// filter; warnings and errors are kept by the table apart from the prompts, so they stay.

import { dateTime } from "./format.js";
import { $, changed, el, say } from "./dom.js";
import { api, page } from "./diag-api.js";

const LOG_SOONEST_MS = 1000;
let logTimer = null;
let logLoaded = 0;
let logAsked = 0;

const LEVEL_WORDS = {
  all: "everything kept",
  warning: "warnings and errors",
  error: "errors",
  info: "information and prompts",
};

// The log at most once a second, however fast the table goes.
export function logSoon() {
  if (logTimer) return;
  const wait = Math.max(0, logLoaded + LOG_SOONEST_MS - Date.now());
  logTimer = setTimeout(() => {
    logTimer = null;
    loadLog();
  }, wait);
}

export async function loadLog() {
  logLoaded = Date.now();
  const asked = ++logAsked;
  const level = $("log-level").value;
  const { status, data } = await api("GET", level === "all" ? "/api/log" : `/api/log?level=${encodeURIComponent(level)}`);
  if (asked !== logAsked) return; // a later request (another level) answers instead
  if (status !== 200) {
    say($("log-msg"), data.error || `log failed (HTTP ${status})`, "err");
    return;
  }
  say($("log-msg"), "", null);
  const records = (data.records || []).slice().reverse();
  const kept = data.kept || {};
  if (kept.warning !== undefined) {
    $("nav-warnings").textContent = String(kept.warning);
    $("nav-warnings").classList.toggle("hot", kept.warning > 0);
  }
  if (!changed("log", [level, records, page.zone])) return;
  const n = records.length;
  const keeps = kept.warning !== undefined ? `; the table keeps ${kept.warning} warning(s) and error(s) apart from ${kept.info} other record(s)` : "";
  $("log-what").textContent = `(${LEVEL_WORDS[level] || level}: ${n} record${n === 1 ? "" : "s"}, newest first${keeps})`;
  const items = records.map((r) =>
    el(
      "li",
      { class: `level-${String(r.level).toLowerCase()}`, "data-level": r.level, "data-testid": "log-record" },
      el("span", { class: "time", text: dateTime(Math.round(r.t * 1000), page.zone) }),
      el("span", { class: "level", text: r.level }),
      el("span", { class: "logger", text: r.logger }),
      el("span", { class: "msg", text: r.message }),
    ),
  );
  if (!items.length) items.push(el("li", { class: "none", text: level === "all" ? "No log record." : `No ${LEVEL_WORDS[level] || level} kept.` }));
  $("log").replaceChildren(...items);
}
