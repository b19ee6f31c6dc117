"""What the dealer display's browser tests measure on the page (issue 30): every visible text's
size and contrast, and every card's box and corner index.

The page is asked for facts only (computed styles, boxes, what is on top at a point); the
judgement is here, in Python: WCAG 2 relative luminance and contrast ratio from the computed
colours, composited over every background layer behind the text up to the first opaque one
(a gradient counts as each of its colours: the worst decides).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MIN_PX = 14.0
"""No text a dealer reads under 14 px at 800x480."""
MIN_CONTRAST = 4.5
HEADLINE_CONTRAST = 7.0

TEXTS_JS = """() => {
  const parse = (c) => {
    const m = String(c).match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const colours = (image) => (String(image).match(/rgba?\\([^)]+\\)/g) || []).map(parse);
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    if (!text) continue;
    const el = node.parentElement;
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    if (!rects.length) continue;
    const box = range.getBoundingClientRect();
    if (box.right <= 0 || box.bottom <= 0) continue;
    if (box.left >= innerWidth || box.top >= innerHeight) continue;
    const first = rects[0];
    const x = first.left + first.width / 2;
    const hit = document.elementFromPoint(x, first.top + first.height / 2);
    const layers = [];
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      opacity *= Number(cs.opacity);
      layers.push({
        colour: parse(cs.backgroundColor),
        gradient: cs.backgroundImage === "none" ? [] : colours(cs.backgroundImage),
        who: (e.dataset && e.dataset.testid) || e.className || e.tagName,
      });
    }
    const cs = getComputedStyle(el);
    const holder = el.closest("[data-testid]");
    out.push({
      text,
      where: holder ? holder.dataset.testid : el.tagName,
      cls: String(el.className),
      font: parseFloat(cs.fontSize),
      colour: parse(cs.color),
      opacity,
      layers,
      covered: !(hit && (hit === el || el.contains(hit))),
      headline: Boolean(el.closest(".prompt.newest")),
      clipped: el.scrollWidth > el.clientWidth + 1 && cs.overflow !== "visible"
        && cs.display !== "inline",
      box: [box.left, box.top, box.right, box.bottom],
    });
  }
  return out;
}"""
"""Every text node on screen: its text, the computed font size and colour of its element,
the background layers from its element up (colour and gradient colours), whether something
else is on top of its first line's centre, and whether its element cuts it (an ellipsis)."""

CARDS_JS = """() => {
  const glyph = (g) => {
    const range = document.createRange();
    range.selectNodeContents(g);
    const r = range.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  };
  const hands = [...document.querySelectorAll('#spots .hand, #dealer-cards')];
  return hands.map((hand) => {
    const spot = hand.closest('.spot');
    const sb = (spot || hand).getBoundingClientRect();
    const cards = [...hand.querySelectorAll('.card')].map((card) => {
      const b = card.getBoundingClientRect();
      const glyphs = [...card.querySelectorAll('.index .rank, .index .suit')].map(glyph);
      const onTop = ([x, y]) => {
        const hit = document.elementFromPoint(x, y);
        return Boolean(hit && card.contains(hit));
      };
      const seen = glyphs.every(([l, t, r, b2]) => [
        [l + 1, t + 1], [r - 1, t + 1], [l + 1, b2 - 1], [r - 1, b2 - 1],
        [(l + r) / 2, (t + b2) / 2],
      ].every(onTop));
      const rank = card.querySelector('.index .rank');
      return {
        card: card.dataset.card,
        rank: rank ? rank.textContent : null,
        box: [b.left, b.top, b.right, b.bottom],
        glyphs,
        index_seen: card.dataset.card === 'back' || seen,
      };
    });
    return {
      spot: spot ? spot.dataset.testid : 'dealer',
      fit: spot ? spot.dataset.fit : null,
      scale: spot ? spot.dataset.scale : null,
      spot_box: [sb.left, sb.top, sb.right, sb.bottom],
      cards,
    };
  });
}"""
"""Every hand on screen (and the dealer's): its spot's box and, per card, its box, the boxes
of its index's glyphs (rank, suit) and whether each glyph is on top at its corners and
centre (nothing covers it)."""


def luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0-255 channels)."""

    def channel(c: float) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """WCAG 2 contrast ratio (1 to 21).

    >>> round(contrast((255, 255, 255), (0, 0, 0)), 1)
    21.0
    >>> round(contrast((119, 119, 119), (255, 255, 255)), 2)
    4.48
    """
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def over(top: list[float], below: tuple[float, float, float]) -> tuple[float, float, float]:
    """``top`` (r, g, b, alpha) composited over the opaque ``below``."""
    alpha = top[3]
    return tuple(top[i] * alpha + below[i] * (1 - alpha) for i in range(3))  # type: ignore[return-value]


def backgrounds(layers: list[dict[str, Any]]) -> list[tuple[float, float, float]]:
    """Every colour that may be behind a text, from its element's layers (its own first):
    from the first opaque layer (a gradient counts as each of its colours) up to the text."""
    stack: list[dict[str, Any]] = []
    for layer in layers:
        stack.append(layer)
        colour = layer["colour"]
        gradient = [c for c in layer["gradient"] if c]
        if (colour and colour[3] >= 1) or (gradient and all(c[3] >= 1 for c in gradient)):
            break
    else:
        stack.append({"colour": [255, 255, 255, 1], "gradient": []})  # the canvas
    bottom = stack[-1]
    base = bottom["colour"] if bottom["colour"] and bottom["colour"][3] >= 1 else [255, 255, 255, 1]
    found = [tuple(base[:3])]
    if bottom["gradient"]:
        found = [over(c, tuple(base[:3])) for c in bottom["gradient"] if c]
    for layer in reversed(stack[:-1]):
        tops = [c for c in layer["gradient"] if c] or []
        colour = layer["colour"]
        found = [over(colour, bg) if colour and colour[3] > 0 else bg for bg in found]
        if tops:
            found = [over(c, bg) for c in tops for bg in found]
    return found  # type: ignore[return-value]


@dataclass
class TextCheck:
    text: str
    where: str
    font: float
    ratio: float
    headline: bool
    clipped: bool


def measure(texts: list[dict[str, Any]]) -> list[TextCheck]:
    """The visible, uncovered texts with their size and their worst contrast."""
    out = []
    for t in texts:
        if t["covered"] or t["colour"] is None:
            continue
        colour = list(t["colour"])
        colour[3] *= t["opacity"]
        ratios = [contrast(over(colour, bg), bg) for bg in backgrounds(t["layers"])]
        out.append(
            TextCheck(t["text"], t["where"], t["font"], min(ratios), t["headline"], t["clipped"])
        )
    return out


def legibility_problems(page: Any) -> tuple[list[str], list[TextCheck]]:
    """Every visible text under 14 px, under 4.5:1 (the headline: under 7:1) or cut short,
    as lines saying which; and the texts measured."""
    checks = measure(page.evaluate(TEXTS_JS))
    problems = []
    for c in checks:
        need = HEADLINE_CONTRAST if c.headline else MIN_CONTRAST
        if c.font < MIN_PX - 0.05:
            problems.append(f"{c.font:.1f} px: {c.text!r} ({c.where})")
        if c.ratio < need:
            problems.append(f"contrast {c.ratio:.2f}:1 < {need}: {c.text!r} ({c.where})")
        if c.clipped:
            problems.append(f"cut short: {c.text!r} ({c.where})")
    return problems, checks


def _meets(a: list[float], b: list[float]) -> bool:
    """Whether two boxes (left, top, right, bottom) overlap by more than a hairline."""
    return min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5


def card_problems(page: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """Every card clipped by its spot or the screen, whose index (rank, suit) a later card
    covers or anything hides; and the hands measured."""
    hands = page.evaluate(CARDS_JS)
    size = page.viewport_size
    screen = [0, 0, size["width"], size["height"]]
    problems = []
    for hand in hands:
        for i, card in enumerate(hand["cards"]):
            box = card["box"]
            inside = all(
                [
                    box[0] >= hand["spot_box"][0] - 0.5,
                    box[1] >= hand["spot_box"][1] - 0.5,
                    box[2] <= hand["spot_box"][2] + 0.5,
                    box[3] <= hand["spot_box"][3] + 0.5,
                    box[0] >= screen[0] and box[1] >= screen[1],
                    box[2] <= screen[2] and box[3] <= screen[3],
                ]
            )
            if not inside:
                problems.append(
                    f"{hand['spot']}: {card['card']} clipped: {box} in {hand['spot_box']}"
                )
            if not card["index_seen"]:
                problems.append(f"{hand['spot']}: {card['card']}'s index is covered")
            for later in hand["cards"][i + 1 :]:
                for glyph in card["glyphs"]:
                    if _meets(later["box"], glyph):
                        problems.append(
                            f"{hand['spot']}: {later['card']} covers {card['card']}'s index"
                        )
    return problems, hands
