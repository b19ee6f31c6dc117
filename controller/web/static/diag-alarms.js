// The open alarms (an ES module), each with its Acknowledge button.

import { $, el } from "./dom.js";
import { action } from "./diag-api.js";

export function renderAlarms(snap) {
  const alarms = snap.alarms || [];
  // an alarm whose cause has ended stays until acknowledged, marked, and is not counted
  const active = alarms.filter((alarm) => alarm.active !== false).length;
  $("alarm-count").textContent = String(active);
  $("alarm-count").classList.toggle("hot", active > 0);
  $("ack-all").disabled = alarms.length === 0;
  const items = alarms.map((alarm) => {
    const button = el("button", { type: "button", class: "ack", "data-testid": "ack", "data-alarm-id": alarm.id }, "Acknowledge");
    button.addEventListener("click", () => action(button, $("alarms-msg"), "/api/alarms/ack", { alarm: alarm.id }, `Alarm ${alarm.id} acknowledged`));
    return el(
      "li",
      { class: alarm.active === false ? "alarm cleared" : "alarm", "data-testid": "alarm", "data-alarm-id": alarm.id, "data-code": alarm.code },
      el(
        "div",
        { class: "alarm-text" },
        el("strong", { class: "alarm-what", text: alarm.count > 1 ? `${alarm.text} (×${alarm.count})` : alarm.text }),
        el("div", { class: "alarm-action", text: alarm.active === false ? `Cleared by itself: ${alarm.cleared || "its cause has ended"}; acknowledge to remove it` : alarm.action }),
        el(
          "div",
          { class: "meta" },
          `#${alarm.id} ${String(alarm.code).replace(/_/g, " ")}` + (alarm.spot ? ` · spot ${alarm.spot}` : "") + (alarm.round ? ` · round ${alarm.round}` : ""),
        ),
      ),
      button,
    );
  });
  if (snap.alarms_dropped) {
    items.push(el("li", { class: "warn", text: `${snap.alarms_dropped} older alarm(s) dropped unacknowledged (too many open)` }));
  }
  if (!items.length) items.push(el("li", { class: "none", text: "No open alarm." }));
  $("alarms").replaceChildren(...items);
}
