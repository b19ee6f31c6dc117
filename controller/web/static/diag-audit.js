// The audit list (issue 28; an ES module): who did what, in UTC, newest first.

import { $, changed, el, say } from "./dom.js";
import { api } from "./diag-api.js";

export async function loadAudit() {
  const { status, data } = await api("GET", "/api/audit");
  if (status !== 200) {
    say($("audit-msg"), data.error || `audit list failed (HTTP ${status})`, "err");
    return;
  }
  say($("audit-msg"), data.kept ? "" : "No audit list is kept on this table.", data.kept ? null : "err");
  const rows = data.entries || [];
  if (!changed("audit", rows)) return;
  const utc = (ms) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);
  const items = rows.map((r) =>
    el(
      "tr",
      { class: `outcome-${r.outcome}`, "data-action": r.action, "data-outcome": r.outcome },
      ...[utc(r.utc_ms), r.account, r.role, r.action.replace(/_/g, " "), r.object, r.outcome, r.detail, r.source].map((text) => el("td", { text: text || "" })),
    ),
  );
  if (!items.length) items.push(el("tr", {}, el("td", { colspan: "8", text: "Nothing recorded yet." })));
  $("audit-rows").replaceChildren(...items);
}
