// The latched faults (an ES module) and the Clear faults button's state.

import { $, el } from "./dom.js";
import { page } from "./diag-api.js";

const FAULT_WORDS = { shoe: "Shoe", camera: "Camera", gpio: "GPIO", link: "Jackpot link", journal: "Journal", software: "Software" };

export function renderFaults(status, snap) {
  const items = [];
  if (status.journal_fault) {
    items.push(el("li", { class: "bad", "data-testid": "fault", "data-fault": "journal" }, `Journal: ${status.journal_fault}`));
  }
  for (const [kind, fault] of Object.entries(status.faults || {})) {
    items.push(
      el(
        "li",
        { class: fault.active ? "bad" : "warn", "data-testid": "fault", "data-fault": kind },
        el("strong", { text: FAULT_WORDS[kind] || kind.replace(/_/g, " ") }),
        `: ${fault.detail || "lost"} `,
        el("span", { class: "tag", text: fault.active ? "present" : "gone, latched" }),
      ),
    );
  }
  const shoeFault = (snap.shoe || {}).fault;
  if (shoeFault) {
    items.push(el("li", { class: "bad", "data-testid": "fault", "data-fault": "shoe" }, `Shoe: ${shoeFault}`));
  }
  const latched = Boolean(status.journal_fault) || Object.keys(status.faults || {}).length > 0;
  page.faultsLatched = latched;
  $("clear-faults").disabled = !latched;
  $("clear-faults").title = latched ? "Clear the latched faults (after fixing their cause)" : "No fault is latched";
  if (!items.length) items.push(el("li", { class: "none", text: "No fault latched." }));
  $("faults").replaceChildren(...items);
}
