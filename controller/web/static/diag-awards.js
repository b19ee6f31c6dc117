// Jackpot awards waiting for their hand pay (issue 28; an ES module): a supervisor confirms one.

import { betName, money } from "./format.js";
import { $, el, say } from "./dom.js";
import { action, page } from "./diag-api.js";

export function renderAwards(awards) {
  $("award-count").textContent = String(awards.length);
  const items = awards.map((a) => {
    const typed = el("input", { type: "text", inputmode: "decimal", placeholder: "type the amount again", "aria-label": `amount of award ${a.award_id}`, "data-testid": "award-amount" });
    const button = el("button", { type: "button", "data-testid": "award-confirm", disabled: !page.mayConfirm, title: page.mayConfirm ? null : "only a supervisor account confirms a hand pay" }, "Confirm hand pay");
    button.addEventListener("click", () => {
      if (!typed.value.trim()) {
        say($("awards-msg"), `Type the amount of award ${a.award_id} again first`, "err");
        return;
      }
      action(button, $("awards-msg"), "/api/awards/confirm", { award: a.award_id, amount: typed.value.trim() }, `Award ${a.award_id} confirmed`);
    });
    return el(
      "li",
      { "data-award": a.award_id },
      el("strong", { text: `${a.award_id}: spot ${a.spot} ${betName(a.pool)} ${a.line}, ${money(a.amount)} hand pay` }),
      el("div", { class: "actions" }, typed, button),
    );
  });
  if (!items.length) items.push(el("li", { class: "none", text: "No award waits for a hand pay." }));
  $("awards").replaceChildren(...items);
}
