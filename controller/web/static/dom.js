// Building the page (an ES module): elements with textContent only (texts from the server
// are data, never markup), SVG, card faces, result lines, re-render only on change.

import { SUITS } from "./format.js";

export const $ = (id) => document.getElementById(id);

export function el(tag, props, ...children) {
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

const SVGNS = "http://www.w3.org/2000/svg";

export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

// "10H" -> a card face; "back" -> the hole card face down (the server never sends more)
export function cardEl(text) {
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

// A result line: `text` shown (hidden when empty), green for "ok", red for "err".
export function say(node, text, kind) {
  node.textContent = text || "";
  node.hidden = !text;
  node.classList.toggle("ok", kind === "ok");
  node.classList.toggle("err", kind === "err");
}

const shown = new Map(); // section -> JSON of what it shows (re-render only on change)

// Whether `data` differs from what `section` shows now (and remember it).
export function changed(section, data) {
  const key = JSON.stringify(data === undefined ? null : data);
  if (shown.get(section) === key) return false;
  shown.set(section, key);
  return true;
}
