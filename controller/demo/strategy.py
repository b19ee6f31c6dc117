"""Basic strategy for the demo's autopilot players, as data.

The charts are the Wizard of Odds "4-Deck to 8-Deck Blackjack Strategy" charts
(https://wizardofodds.com/games/blackjack/strategy/4-decks/), dealer stands on soft 17
(``S17``) or hits soft 17 (``H17``), double after split allowed, late surrender. Every profile
in ``controller/profiles`` deals six decks. Where a profile forbids something a chart cell asks for,
the cell's fallback applies: ``Ds`` doubles or else stands, ``D`` doubles or else hits, ``Ph``
splits only with double after split (``[double] after_split``) or else hits, ``Rh``/``Rs``/``Rp``
surrender or else hit/stand/split. What the profile and the hand allow (``can_double`` ...) is
the caller's to say: the autopilot asks :mod:`controller.rules.actions`, as the table does.
The charts assume the dealer peeks for blackjack (every profile here does); without a peek
they are close, not exact.

Each row lists the action against the dealer's up card 2, 3, 4, 5, 6, 7, 8, 9, ten-value, ace.

>>> from controller.games import load_game
>>> pa, du = load_game("pa-standard"), load_game("double-up")
>>> def play(cards, up, rules=pa, **allowed):
...     allowed = {"can_double": True, "can_split": True, "can_surrender": True, **allowed}
...     return basic_strategy(cards.split(), up, rules=rules, **allowed)
>>> play("10H 6C", "10S"), play("10H 6C", "10S", can_surrender=False)
('surrender', 'hit')
>>> play("8H 8C", "AS"), play("8H 8C", "AS", rules=du, can_surrender=False)
('split', 'split')
>>> play("AH 7C", "2S"), play("AH 7C", "2S", rules=du)
('stand', 'double')
>>> play("AH 7C", "4S", can_double=False), play("6H 5C", "AS"), play("6H 5C", "AS", rules=du)
('stand', 'hit', 'double')
>>> play("9H 9C", "7S"), play("QH 4C 2D", "6S"), play("AH AC", "10S", can_split=False)
('stand', 'stand', 'hit')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from controller.errors import CardError
from controller.rules.cards import Card, parse_card
from controller.rules.hand import hand_total
from controller.rules.profile import HouseRules

Decision = Literal["hit", "stand", "double", "split", "surrender"]

UP_CARDS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 1)
"""Column order of every chart row: the dealer's up card value (ace = 1, last)."""

TOKENS = frozenset({"H", "S", "D", "Ds", "P", "Ph", "Rh", "Rs", "Rp"})


def _rows(chart: dict[int, str]) -> dict[int, tuple[str, ...]]:
    rows = {key: tuple(row.split()) for key, row in chart.items()}
    for key, row in rows.items():
        if len(row) != len(UP_CARDS) or not set(row) <= TOKENS:
            raise ValueError(f"strategy chart row {key} is malformed: {row}")
    return rows


# Hard totals (rows not listed: 8 and below hit, 17 and above stand).
#                 2  3  4  5  6  7  8  9  T  A
HARD_S17 = _rows({
    9:  "H  D  D  D  D  H  H  H  H  H",
    10: "D  D  D  D  D  D  D  D  H  H",
    11: "D  D  D  D  D  D  D  D  D  H",
    12: "H  H  S  S  S  H  H  H  H  H",
    13: "S  S  S  S  S  H  H  H  H  H",
    14: "S  S  S  S  S  H  H  H  H  H",
    15: "S  S  S  S  S  H  H  H  Rh H",
    16: "S  S  S  S  S  H  H  Rh Rh Rh",
    17: "S  S  S  S  S  S  S  S  S  S",
})  # fmt: skip
HARD_H17 = {
    **HARD_S17,
    **_rows({
        11: "D  D  D  D  D  D  D  D  D  D",
        15: "S  S  S  S  S  H  H  H  Rh Rh",
        17: "S  S  S  S  S  S  S  S  S  Rs",
    }),
}  # fmt: skip

# Soft totals, keyed by the total (A-2 is soft 13); soft 12 (two aces unsplit) hits,
# soft 20 and 21 stand.
#                 2  3  4  5  6  7  8  9  T  A
SOFT_S17 = _rows({
    13: "H  H  H  D  D  H  H  H  H  H",
    14: "H  H  H  D  D  H  H  H  H  H",
    15: "H  H  D  D  D  H  H  H  H  H",
    16: "H  H  D  D  D  H  H  H  H  H",
    17: "H  D  D  D  D  H  H  H  H  H",
    18: "S  Ds Ds Ds Ds S  S  H  H  H",
    19: "S  S  S  S  S  S  S  S  S  S",
})  # fmt: skip
SOFT_H17 = {
    **SOFT_S17,
    **_rows({
        18: "Ds Ds Ds Ds Ds S  S  H  H  H",
        19: "S  S  S  S  Ds S  S  S  S  S",
    }),
}  # fmt: skip

# Pairs, keyed by the card value (ace = 1). Pairs not listed (5-5, ten-value) play as
# their total.
#                 2  3  4  5  6  7  8  9  T  A
PAIRS_S17 = _rows({
    1:  "P  P  P  P  P  P  P  P  P  P",
    2:  "Ph Ph P  P  P  P  H  H  H  H",
    3:  "Ph Ph P  P  P  P  H  H  H  H",
    4:  "H  H  H  Ph Ph H  H  H  H  H",
    6:  "Ph P  P  P  P  H  H  H  H  H",
    7:  "P  P  P  P  P  P  H  H  H  H",
    8:  "P  P  P  P  P  P  P  P  P  P",
    9:  "P  P  P  P  P  S  P  P  S  S",
})  # fmt: skip
PAIRS_H17 = {
    **PAIRS_S17,
    **_rows({8: "P  P  P  P  P  P  P  P  P  Rp"}),
}  # fmt: skip


def _card(card: str | Card) -> Card:
    return card if isinstance(card, Card) else parse_card(card)


def _column(up: Card) -> int:
    return UP_CARDS.index(up.value)


def basic_strategy(
    cards: Sequence[str | Card],
    dealer_up: str | Card,
    *,
    can_double: bool,
    can_split: bool,
    can_surrender: bool,
    rules: HouseRules,
) -> Decision:
    """What basic strategy does with ``cards`` (``"QH"``...) against ``dealer_up``.

    ``can_*`` say what the profile and the hand allow now; a chart cell that asks for
    something not allowed falls back as the chart's legend says. The chart is H17 when the
    profile's dealer hits soft 17 (``[dealer] soft_17``), else S17.
    """
    hand = [_card(c) for c in cards]
    if len(hand) < 2:
        raise CardError(f"basic strategy needs a hand of at least two cards, got {cards!r}")
    up = _card(dealer_up)
    col = _column(up)
    h17 = rules.dealer.hit_soft_17
    das = rules.double.after_split
    if can_split and len(hand) == 2 and hand[0].value == hand[1].value:
        row = (PAIRS_H17 if h17 else PAIRS_S17).get(hand[0].value)
        token = row[col] if row else "H"
        if token == "Rp":
            return "surrender" if can_surrender else "split"
        if token == "P" or (token == "Ph" and das):
            return "split"
    count = hand_total(hand)
    if count.total >= 21:
        return "stand"
    if count.soft:
        row = (SOFT_H17 if h17 else SOFT_S17).get(count.total)
        token = "H" if count.total < 13 else row[col] if row else "S"
    else:
        chart = HARD_H17 if h17 else HARD_S17
        token = "H" if count.total < 9 else chart[min(count.total, 17)][col]
    return _resolve(token, can_double=can_double, can_surrender=can_surrender)


def _resolve(token: str, *, can_double: bool, can_surrender: bool) -> Decision:
    if token == "D":
        return "double" if can_double else "hit"
    if token == "Ds":
        return "double" if can_double else "stand"
    if token in ("Rh", "Rs"):
        if can_surrender:
            return "surrender"
        return "hit" if token == "Rh" else "stand"
    return "stand" if token == "S" else "hit"


def double_up_advised(cards: Sequence[str | Card], dealer_up: str | Card) -> bool:
    """Whether an autopilot player makes Double Up Blackjack's Double Up wager (an equal
    extra wager, then the hand stands; a tie loses it: seed 003 rules 4-8) on a hand basic
    strategy stands on.

    Not from a published chart: a rule of thumb for the demo. A 19 or 20 against a dealer 2
    to 9, or a 20 against a ten, wins more often than it loses or ties; a split hand's 21 in
    two cards (no natural, rule 4) loses the Double Up only to a dealer 21.

    >>> double_up_advised(["KH", "QS"], "10C"), double_up_advised(["9H", "KS"], "10C")
    (True, False)
    >>> double_up_advised(["KH", "AS"], "AC")
    True
    """
    total = hand_total([_card(c) for c in cards]).total
    up = _card(dealer_up).value
    if total == 21:
        return True
    if total == 20:
        return up != 1
    return total == 19 and 2 <= up <= 9
