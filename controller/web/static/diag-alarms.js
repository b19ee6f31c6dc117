// The alarms (an ES module): those open now first, newest first, each with its time of day
// and age and whether it stops play; the cleared ones (their cause has ended, waiting to be
// acknowledged) folded below.

import { dateTime } from "./format.js";
import { $, el } from "./dom.js";
import { action, ageEl, page } from "./diag-api.js";

function alarmItem(alarm) {
  const cleared = alarm.active === false;
  const button = el("button", { type: "button", class: "ack", "data-testid": "ack", "data-alarm-id": alarm.id }, "Acknowledge");
  button.addEventListener("click", () => action(button, $("alarms-msg"), "/api/alarms/ack", { alarm: alarm.id }, `Alarm ${alarm.id} acknowledged`));
  const raised = alarm.utc_ms
    ? [el("span", { class: "when", "data-testid": "alarm-when", text: `raised ${dateTime(alarm.utc_ms, page.zone)}` }), " (", ageEl(alarm.utc_ms), ")"]
    : [el("span", { class: "when", "data-testid": "alarm-when", text: "raised before the table last started (time not known)" })];
  const where = `#${alarm.id} ${String(alarm.code).replace(/_/g, " ")}` + (alarm.spot ? ` · spot ${alarm.spot}` : "") + (alarm.round ? ` · round ${alarm.round}` : "");
  const what = cleared
    ? [`Cleared by itself: ${alarm.cleared || "its cause has ended"}`, alarm.cleared_utc_ms ? ` at ${dateTime(alarm.cleared_utc_ms, page.zone)}` : "", "; acknowledge to remove it"].join("")
    : alarm.action;
  return el(
    "li",
    {
      class: `alarm${cleared ? " cleared" : ""}${alarm.blocking && !cleared ? " blocking" : ""}`,
      "data-testid": "alarm",
      "data-alarm-id": alarm.id,
      "data-code": alarm.code,
      "data-active": cleared ? "no" : "yes",
    },
    el(
      "div",
      { class: "alarm-text" },
      el("strong", { class: "alarm-what", text: alarm.count > 1 ? `${alarm.text} (×${alarm.count})` : alarm.text }),
      alarm.blocking && !cleared ? el("span", { class: "tag bad", text: "STOPS PLAY" }) : null,
      el("div", { class: "alarm-action", text: what }),
      el("div", { class: "meta" }, ...raised, ` · ${where}`),
    ),
    button,
  );
}

export function renderAlarms(snap) {
  const alarms = snap.alarms || [];
  const newest = (a, b) => (b.utc_ms ?? 0) - (a.utc_ms ?? 0) || b.id - a.id;
  // an alarm whose cause has ended stays until acknowledged, folded below, and is not counted
  const active = alarms.filter((alarm) => alarm.active !== false).sort(newest);
  const cleared = alarms.filter((alarm) => alarm.active === false).sort(newest);
  $("alarm-count").textContent = String(active.length);
  $("alarm-count").classList.toggle("hot", active.length > 0);
  $("nav-alarms").textContent = String(active.length);
  $("nav-alarms").classList.toggle("hot", active.length > 0);
  $("ack-all").disabled = alarms.length === 0;
  const items = active.map(alarmItem);
  if (snap.alarms_dropped) {
    items.push(el("li", { class: "warn", text: `${snap.alarms_dropped} older alarm(s) dropped unacknowledged (too many open)` }));
  }
  if (!items.length) items.push(el("li", { class: "none", text: cleared.length ? "No alarm open now." : "No open alarm." }));
  $("alarms").replaceChildren(...items);
  $("cleared-box").hidden = !cleared.length;
  $("cleared-what").textContent = `${cleared.length} cleared alarm${cleared.length === 1 ? "" : "s"}: the cause has ended; acknowledge to remove them`;
  $("cleared-alarms").replaceChildren(...cleared.map(alarmItem));
}
