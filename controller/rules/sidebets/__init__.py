"""Side bets: one module per bet, each holding its paytable keys, its profile
section and its evaluator (cards in, :class:`SideBetResult` out).

Evaluators look only at the cards their rule card names, so the par-sheet tool
and the table settle with the same code.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from controller.errors import CardError, WagerError
from controller.fast_init import fast_init
from controller.rules.cards import ALL_CARDS, Card
from controller.rules.pays import Pay

TITLES = {
    "lucky_ladies": "Lucky Ladies",
    "twenty_one_plus_three_xtreme": "21+3 Xtreme",
    "blazing_7s": "Blazing 7's",
    "ez_bust": "EZ Bust",
    "bonus_16": "16 Bonus",
    "blackjack_tie": "Blackjack Tie",
}
"""Each side bet's name as the rule cards and the dealer say it."""

POOL_NAMES = {**TITLES, "mystery": "Must-Hit-By Mystery"}
"""Jackpot pools as the dealer and the signs say them (a pool not listed shows its name)."""


def pool_name(pool: str) -> str:
    """``blazing_7s`` -> ``Blazing 7's``; ``mystery`` -> ``Must-Hit-By Mystery``."""
    return POOL_NAMES.get(pool, pool)


class BetResult(enum.Enum):
    """How a wager ends."""

    WIN = "win"
    LOSE = "lose"
    PUSH = "push"


@fast_init
@dataclass(frozen=True, slots=True)
class SideBetResult:
    """The result of one side bet: ``outcome`` is the paytable key (``"matched_20"``),
    ``label`` the casino wording, ``pays`` the paytable line when it wins."""

    bet: str
    result: BetResult
    outcome: str
    label: str
    pays: Pay | None = None

    @property
    def wins(self) -> bool:
        return self.result is BetResult.WIN


_DECK = frozenset(ALL_CARDS)
"""The 52 cards: interned, so a tuple of them is checked by identity, in C."""


def require_cards(cards: object, count: int, what: str) -> None:
    """Refuse anything but exactly ``count`` Card objects for ``what``."""
    if type(cards) is tuple and len(cards) == count:
        try:
            if _DECK.issuperset(cards):  # the cards of a deck (most): Card objects
                return
        except TypeError:  # an unhashable item: not a card, refused below
            pass
    if isinstance(cards, tuple | list) and len(cards) == count:
        for card in cards:  # a loop, not all() over a generator: a hot path
            if not isinstance(card, Card):
                break
        else:
            return
    raise CardError(f"{what} must be exactly {count} cards, got {cards!r}")


def require_stake(stake: object, what: str) -> int:
    """Refuse a stake that is not a whole number of cents above 0."""
    if isinstance(stake, bool) or not isinstance(stake, int) or stake <= 0:
        raise WagerError(f"the {what} stake must be more than $0 in whole cents, got {stake!r}")
    return stake


_LOST: dict[tuple[str, str], SideBetResult] = {}


def lost(bet: str, label: str = "no qualifying hand") -> SideBetResult:
    """A losing result for ``bet`` (made once per bet and label, then shared: results are
    immutable values, and most side bets lose)."""
    result = _LOST.get((bet, label))
    if result is None:
        if len(_LOST) >= 1024:  # labels are a few per bet: never, in practice
            _LOST.clear()
        result = _LOST[(bet, label)] = SideBetResult(bet, BetResult.LOSE, "lose", label)
    return result


def won(bet: str, outcome: str, labels: dict[str, str], pays: dict[str, Pay]) -> SideBetResult:
    """A winning result for ``bet`` on paytable line ``outcome``."""
    return SideBetResult(bet, BetResult.WIN, outcome, labels[outcome], pays[outcome])
