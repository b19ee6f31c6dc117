// The audit list (issue 28; an ES module): who did what, newest first, each time in the
// table's zone (the list itself keeps UTC).

import { dateTime } from "./format.js";
import { $, changed, el, say } from "./dom.js";
import { api, page } from "./diag-api.js";

export async function loadAudit() {
  const { status, data } = await api("GET", "/api/audit");
  if (status !== 200) {
    say($("audit-msg"), data.error || `audit list failed (HTTP ${status})`, "err");
    return;
  }
  say($("audit-msg"), data.kept ? "" : "No audit list is kept on this table.", data.kept ? null : "err");
  const rows = data.entries || [];
  if (!changed("audit", [rows, page.zone])) return;
  const items = rows.map((r) =>
    el(
      "tr",
      { class: `outcome-${r.outcome}`, "data-action": r.action, "data-outcome": r.outcome },
      ...[dateTime(r.utc_ms, page.zone), r.account, r.role, r.action.replace(/_/g, " "), r.object, r.outcome, r.detail, r.source].map((text) => el("td", { text: text || "" })),
    ),
  );
  if (!items.length) items.push(el("tr", {}, el("td", { colspan: "8", text: "Nothing recorded yet." })));
  $("audit-rows").replaceChildren(...items);
}
