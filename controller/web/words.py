"""The dealer display's words for cards, circles, totals, phases and settled wagers (pure).

Shared by :mod:`controller.web.views` (the dealer view and its alarms) and
:mod:`controller.web.felt` (the table picture, the settlement rows, the recalled round).
Amounts are integer cents; ``format_cents`` writes them for people.
"""

from __future__ import annotations

import re
from typing import Any

from controller.rules.pays import format_cents
from controller.table.effects import Settled, field_names
from controller.table.view import bet_name, settlement_prompt

SUITS = {"H": "\u2665", "D": "\u2666", "C": "\u2663", "S": "\u2660"}
"""Suits as the dealer display writes them: 10H -> 10\u2665."""
_CARD = re.compile(r"(?<![\w$.])(10|[2-9AJQK])([HDCS])(?![\w])")
SHORT_NAMES = {"main": "Main", "double_down": "Double Down", "insurance": "Insurance"}
"""Bet circles as the table picture labels them (others: :func:`bet_name`)."""

PHASE_WORDS = {
    "betting": "Place your bets",
    "dealing": "Dealing",
    "insurance": "Insurance",
    "ez_bust": "EZ Bust offer",
    "players": "Players' turn",
    "dealer": "Dealer's turn",
    "settled": "Settle the wagers",
}
"""Phases as the dealer display names them (an unknown phase shows its own name)."""

BETWEEN_ROUNDS_WORDS = {
    "shuffle_now": "Shuffle",
    "shuffled": "Burn a card",
    "jackpot_hand_pay": "Jackpot hand pay",
    "jackpot_paid_ready": "Jackpot hand pay",
}
"""The bar's words between rounds when the table's prompt is not "place your bets": after
the cut card the bar says shuffle, as the headline does (issue 30)."""


def phase_words(phase: str, prompt_code: str | None = None) -> str:
    """The bar's phase; between rounds what the table waits for (``prompt_code``: the code of
    its prompt of the moment).

    >>> phase_words("betting"), phase_words("betting", "shuffle_now")
    ('Place your bets', 'Shuffle')
    """
    if phase == "betting" and prompt_code in BETWEEN_ROUNDS_WORDS:
        return BETWEEN_ROUNDS_WORDS[prompt_code]
    return PHASE_WORDS.get(phase, phase.replace("_", " ").capitalize())


def _settled(item: dict[str, Any]) -> Settled:
    return Settled(**{name: item.get(name) for name in field_names(Settled)})


def pay_line(item: dict[str, Any]) -> dict[str, Any]:
    """One settlement of the feed as the dealer display lists it: what to do with whose chips.

    ``what`` is ``pay``, ``take``, ``push``, ``return`` (half a surrender or a void) or
    ``meter`` (a jackpot share: hand pay, the jackpot controller sends the amount)."""
    line = _settled(item)
    if line.meter is not None:
        what = "meter"
    elif line.outcome == "void" or line.outcome == "surrender":
        what = "return"
    elif line.paid:
        what = "pay"
    elif line.returned == line.stake:
        what = "push"
    else:
        what = "take"
    return {
        "spot": line.spot,
        "hand": line.hand,
        "wager": bet_name(line.wager),
        "what": what,
        "amount": line.paid if what == "pay" else line.returned if what == "return" else line.stake,
        "text": settlement_prompt(line),
    }


def card_words(text: str) -> str:
    """Every card in a text with its suit symbol (``Burn card 10H`` -> ``Burn card 10\u2665``).

    >>> card_words("Dealer turns the hole card: 10C 6D, 16; spot 3 pays $5.00")
    'Dealer turns the hole card: 10\u2663 6\u2666, 16; spot 3 pays $5.00'
    """
    return _CARD.sub(lambda m: m[1] + SUITS[m[2]], text)


def circle_name(circle: str) -> str:
    """``main`` -> ``Main``; ``blazing_7s`` -> ``Blazing 7's`` (the rule cards' names)."""
    return SHORT_NAMES.get(circle) or bet_name(circle)


def total_words(cards: list[str], total: int | None, soft: bool, *, natural: bool = True) -> str:
    """A hand's total as the dealer says it: ``soft 17``, ``BUST 25``, ``Blackjack``; empty
    for a hand without cards (never a total of 0)."""
    if total is None or not cards:
        return ""
    if total > 21:
        return f"BUST {total}"
    if natural and total == 21 and len(cards) == 2:
        return "Blackjack"
    return f"soft {total}" if soft else str(total)


def money(cents: int | None) -> str:
    return "" if cents is None else format_cents(cents)
