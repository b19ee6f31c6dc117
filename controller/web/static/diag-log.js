// The recent log (an ES module): fetched, not streamed; at most once a second.

import { clock } from "./format.js";
import { $, changed, el, say } from "./dom.js";
import { api } from "./diag-api.js";

const LOG_SOONEST_MS = 1000;
let logTimer = null;
let logLoaded = 0;

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
