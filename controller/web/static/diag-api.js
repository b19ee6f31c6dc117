// The diagnostics page's link to the server (an ES module): requests with the session's
// CSRF token, action buttons, and the little the panels share about the page.

import { duration } from "./format.js";
import { $, el, say } from "./dom.js";

export const page = {
  csrf: null, // the session's token, sent with every action
  zone: null, // the table's time zone (null: the browser's)
  lightTestRunning: false,
  faultsLatched: false,
  mayConfirm: false, // a supervisor account: may confirm an award's hand pay
  skewMs: 0, // the table's wall clock minus the browser's (ages are the table's)
};

// The table's wall clock now (UTC ms), from the last bundle's `now_utc_ms`.
export function tableNow() {
  return Date.now() + page.skewMs;
}

export function problem(text) {
  say($("message"), text, "err");
}

export async function api(method, path, body) {
  const options = { method, credentials: "same-origin", headers: {} };
  if (method !== "GET") {
    options.headers["Content-Type"] = "application/json";
    options.headers["X-CSRF-Token"] = page.csrf || "";
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
export function action(button, out, path, body, done) {
  button.disabled = true;
  say(out, "", null);
  api("POST", path, body).then(({ data }) => {
    button.disabled = (button.id === "light-test" && page.lightTestRunning) || (button.id === "clear-faults" && !page.faultsLatched);
    const text = data.message || data.error || (data.ok ? done : "refused");
    say(out, data.ok ? data.message || done : text, data.ok ? "ok" : "err");
  });
}

// An age the page keeps current (tickAges, once a second): "<prefix>3 min 5 s<suffix>".
export function ageEl(sinceMs, prefix = "", suffix = " ago") {
  if (sinceMs === null || sinceMs === undefined) return null;
  const node = el("span", { class: "age", "data-since-ms": sinceMs, "data-prefix": prefix, "data-suffix": suffix });
  node.textContent = ageText(node);
  return node;
}

function ageText(node) {
  const seconds = Math.max(0, (tableNow() - Number(node.dataset.sinceMs)) / 1000);
  return `${node.dataset.prefix || ""}${duration(seconds)}${node.dataset.suffix || ""}`;
}

export function tickAges() {
  for (const node of document.querySelectorAll("[data-since-ms]")) node.textContent = ageText(node);
}
