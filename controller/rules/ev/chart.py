"""Total-dependent basic strategy: one action per total (hard or soft), pair and up card.

A chart cell holds the action on three or more cards (hit or stand, the
*base*) and the action on the first two cards: the base again, or double,
surrender or Double Up *with the base as fallback* where the rules refuse it
(``Dh``: double, else hit; ``Rs``: surrender, else stand; ``Us``: Double Up,
else stand). A pair row says whether to split; a pair not split (or not
allowed to split again) plays as its total.

How the chart is chosen, for each up card:

1. hit or stand, hard totals 20 down to 11, soft 20 to 12, hard 10 to 4: the action with
   the larger sum over every hand of that total (two or more cards, the cards of
   the hand removed), each weighted by the chance its cards are the first dealt
   to the player, playing on by the chart's higher totals (already chosen);
2. the two-card action of each total: the best, summed over the two-card hands of
   that total weighted by their chance, among the base and what the rules allow on
   two cards (a split hand's two-card 21, which no first two cards make, is chosen
   on a split ten and ace);
3. split or not, per pair, by the expected value of each with the chart.

The chart's expected value is then computed exactly like the optimal strategy's,
with every decision taken from the chart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

from controller.rules.ev.engine import (
    DOUBLE,
    DOUBLE_UP,
    HIT,
    POW,
    SPLIT,
    STAND,
    SURRENDER,
    UpCard,
    _base_codes,
    digits,
    shoe_counts,
)
from controller.rules.ev.game import Game

UP_ORDER = (1, 2, 3, 4, 5, 6, 7, 8, 9, 0)
"""Chart columns: the up card's value index, 2 to ten-value, then the ace."""

LEGEND = {
    "H": "hit",
    "S": "stand",
    "Dh": "double, else hit",
    "Ds": "double, else stand",
    "Rh": "surrender, else hit",
    "Rs": "surrender, else stand",
    "Uh": "Double Up, else hit",
    "Us": "Double Up, else stand",
    "P": "split",
    "-": "do not split: play the total",
}

_LETTER = {DOUBLE: "D", SURRENDER: "R", DOUBLE_UP: "U"}


@dataclass
class Chart:
    """A total-dependent strategy. Keys: ``(soft, total)``; lists by up card value index."""

    base: dict[tuple[bool, int], list[str]] = field(default_factory=dict)
    two: dict[tuple[bool, int], list[str]] = field(default_factory=dict)
    pairs: dict[int, list[bool]] = field(default_factory=dict)

    def cell(self, soft: bool, total: int, up: int) -> str:
        """The printed token of a total's cell (``H``, ``S``, ``Dh``, ``Rs``...)."""
        base = self.base.get((soft, total), [STAND] * 10)[up]
        two = self.two.get((soft, total), [base] * 10)[up]
        letter = "H" if base == HIT else "S"
        return letter if two in (HIT, STAND) else _LETTER[two] + letter.lower()


class ChartPolicy:
    """Plays by a :class:`Chart` (cells not yet chosen raise ``KeyError``)."""

    def __init__(self, chart: Chart):
        self.chart = chart

    def multi(self, up: int, total: int, soft: bool) -> str:
        return self.chart.base[(soft, total)][up]

    def two(
        self,
        up: int,
        hand: tuple[int, ...],
        total: int,
        soft: bool,
        allowed: frozenset[str],
        split: bool,
    ) -> str:
        chart = self.chart
        if SPLIT in allowed:
            pair = hand.index(2)
            if chart.pairs.get(pair, [False] * 10)[up]:
                return SPLIT
        if total == 21 and (soft, 21) not in chart.base:
            base = STAND
        else:
            base = chart.base[(soft, total)][up]
        move = chart.two.get((soft, total), [base] * 10)[up]
        if move in allowed:
            return move
        return base if base in allowed else STAND


def _hands_by_total(
    game: Game, up: int
) -> dict[tuple[bool, int], list[tuple[int, int, int, bool]]]:
    """Every hand of two or more cards, by (soft, total): (code, cards, hard, ace)."""
    shoe = shoe_counts(game)
    shoe[up] -= 1
    found: dict[tuple[bool, int], list[tuple[int, int, int, bool]]] = {}
    for code in _base_codes(game):
        counts = digits(code)
        cards = sum(counts)
        if cards < 2 or any(n > s for n, s in zip(counts, shoe, strict=True)):
            continue
        hard = sum((v + 1) * n for v, n in enumerate(counts))
        ace = counts[0] > 0
        soft = ace and hard <= 11
        found.setdefault((soft, hard + 10 if soft else hard), []).append((code, cards, hard, ace))
    return found


def _weight(code: int, cards: int, shoe: list[int], left: int) -> float:
    """The chance that the first ``cards`` cards dealt are these, in any order."""
    weight = 1.0
    remaining = cards
    for value, n in enumerate(digits(code)):
        if n:
            weight *= comb(remaining, n)
            remaining -= n
            for i in range(n):
                weight *= shoe[value] - i
    for i in range(cards):
        weight /= left - i
    return weight


def build_chart(game: Game) -> Chart:
    """The total-dependent basic strategy of ``game`` (see the module's steps)."""
    chart = Chart()
    policy = ChartPolicy(chart)
    for up in range(10):
        if not shoe_counts(game)[up]:
            continue
        solver = UpCard(game, up, policy)
        _choose_up_card(chart, solver, up)
    return chart


def _choose_up_card(chart: Chart, solver: UpCard, up: int) -> None:
    shoe, left = solver.shoe, solver.left
    hands = _hands_by_total(solver.game, up)
    order = [(False, t) for t in range(21, 10, -1)] + [(True, t) for t in range(21, 11, -1)]
    order += [(False, t) for t in range(10, 3, -1)]  # a hard 10 or less may draw a soft total
    for soft, total in order:
        row = chart.base.setdefault((soft, total), [STAND] * 10)
        if total >= 21:
            continue
        stand = hit = 0.0
        for code, cards, hard, ace in hands.get((soft, total), ()):
            weight = _weight(code, cards, shoe, left)
            stand += weight * solver.flat[solver.index[code] + total]
            hit += weight * solver.hit(code, cards, hard, ace)
        row[up] = HIT if hit > stand else STAND
    for soft, total in order:
        base = chart.base[(soft, total)][up]
        row = chart.two.setdefault((soft, total), list(chart.base[(soft, total)]))
        two_card = [h for h in hands.get((soft, total), ()) if h[1] == 2]
        if soft and total == 21:  # only a split hand: a ten split, an ace drawn
            two_card = [(POW[0] + 2 * POW[9], 3, 11, True)]
            allowed = solver.allowed(21, True, split=True, aces=False)
            weights = [1.0]
        else:
            allowed = solver.allowed(total, soft, split=False, aces=False)
            weights = [_weight(code, 2, shoe, left) for code, *_ in two_card]
        if not two_card:
            row[up] = base
            continue
        candidates = [base, *sorted(allowed & {DOUBLE, SURRENDER, DOUBLE_UP})]
        best, best_value = base, None
        for move in candidates:
            value = sum(
                w * solver.option(move, code, cards, hard, ace)
                for w, (code, cards, hard, ace) in zip(weights, two_card, strict=True)
            )
            if best_value is None or value > best_value + 1e-12:
                best, best_value = move, value
        row[up] = best
    for pair in range(10):
        row = chart.pairs.setdefault(pair, [False] * 10)
        if not solver.may_split(pair) or shoe[pair] < 2:
            continue
        hand = tuple(2 if v == pair else 0 for v in range(10))
        _, keep = solver.two_cards(2 * POW[pair], 2, hand, split=False, aces=False)
        row[up] = solver.split(pair) > keep


def format_chart(chart: Chart, game: Game) -> str:
    """The chart as casinos print it: hard, soft and pair rows against the up card."""
    head = "       " + " ".join(
        f"{'A' if v == 0 else 'T' if v == 9 else v + 1:>3}" for v in UP_ORDER
    )
    lines = ["Hard", head]
    for total in range(4, 21):
        cells = " ".join(f"{chart.cell(False, total, up):>3}" for up in UP_ORDER)
        lines.append(f"  {total:>3}  {cells}")
    lines += ["Soft", head]
    for total in range(12, 22):
        if total == 21 and not _soft_21_matters(chart):
            continue
        label = "A,A" if total == 12 else f"A,{'T' if total == 21 else total - 11}"
        cells = " ".join(f"{chart.cell(True, total, up):>3}" for up in UP_ORDER)
        lines.append(f"  {label:>3}  {cells}" + ("  (split hands)" if total == 21 else ""))
    lines += ["Pairs", head]
    for pair in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9):
        label = "A,A" if pair == 0 else "T,T" if pair == 9 else f"{pair + 1},{pair + 1}"
        row = chart.pairs.get(pair, [False] * 10)
        cells = " ".join(f"{'P' if row[up] else '-':>3}" for up in UP_ORDER)
        lines.append(f"  {label:>3}  {cells}")
    used = {chart.cell(s, t, u) for (s, t) in chart.base for u in range(10)} | {"P", "-"}
    lines.append("")
    lines.append("  " + "; ".join(f"{k} {v}" for k, v in LEGEND.items() if k in used))
    if game.split_by_rank:
        lines.append("  T,T: two ten-value cards of one rank (split by rank)")
    return "\n".join(lines) + "\n"


def _soft_21_matters(chart: Chart) -> bool:
    return any(move != STAND for move in chart.two.get((True, 21), []))
