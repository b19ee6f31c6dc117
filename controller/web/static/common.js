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
      { class: `card ${colour}`, "data-card": text, title: text },
      rank + (SUITS[suit] || suit),
    );
  }

  return { el, money, cardEl, SUITS };
})();
