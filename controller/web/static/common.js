// Helpers both live pages use (loaded before dealer.js and diag.js): DOM building with
// textContent only (texts from the server are data, never markup), money, cards.
"use strict";

window.TableUI = (() => {
  const SUITS = { H: "\u2665", D: "\u2666", C: "\u2663", S: "\u2660" };

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // integer cents -> "$1,234.50" (negative: "-$...")
  function money(cents) {
    if (cents === null || cents === undefined) return "";
    const sign = cents < 0 ? "-" : "";
    const abs = Math.abs(cents);
    const dollars = Math.floor(abs / 100).toLocaleString("en-US");
    return `${sign}$${dollars}.${String(abs % 100).padStart(2, "0")}`;
  }

  // "10H" -> a card face; "back" -> the hole card face down (the server never sends more)
  function cardEl(text) {
    if (text === "back") {
      return el("span", {
        class: "card back",
        "data-card": "back",
        title: "hole card, face down",
        "aria-label": "card face down",
      });
    }
    const suit = text.slice(-1);
    const rank = text.slice(0, -1);
    const colour = suit === "H" || suit === "D" ? "red" : "black";
    return el(
      "span",
      { class: `card ${colour}`, "data-card": text, title: rank + (SUITS[suit] || suit) },
      rank + (SUITS[suit] || suit),
    );
  }

  // The rule cards' names of the wagers and pools (never the internal ones)
  const BET_NAMES = {
    main: "main wager",
    double_down: "Double Down",
    double_up: "Double Up",
    insurance: "insurance",
    even_money: "even money",
    lucky_ladies: "Lucky Ladies",
    twenty_one_plus_three_xtreme: "21+3 Xtreme",
    blazing_7s: "Blazing 7's",
    ez_bust: "EZ Bust",
    bonus_16: "16 Bonus",
    blackjack_tie: "Blackjack Tie",
    mystery: "Must-Hit-By Mystery",
  };
  const TIE_BONUS = { left_side: "LS", right_side: "RS", tie_blackjack: "Blackjack" };

  // "lucky_ladies" -> "Lucky Ladies"; "blackjack_tie.tie_17" -> "Blackjack Tie 17"
  function betName(wager) {
    const text = String(wager ?? "");
    if (text.startsWith("blackjack_tie.")) {
      const bonus = text.slice("blackjack_tie.".length);
      return `Blackjack Tie ${TIE_BONUS[bonus] || bonus.replace(/^tie_/, "")}`;
    }
    return BET_NAMES[text] || text.replace(/_/g, " ");
  }

  // true/false -> yes/no; anything else as it is
  function yesNo(value) {
    if (value === true) return "yes";
    if (value === false) return "no";
    return value;
  }

  // "10H" -> "10♥" (text, for titles and summaries)
  function cardText(text) {
    if (!text || text === "back") return "face down";
    return text.slice(0, -1) + (SUITS[text.slice(-1)] || text.slice(-1));
  }

  return { el, money, cardEl, cardText, betName, yesNo, SUITS };
})();
