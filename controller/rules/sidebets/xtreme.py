"""21+3 Xtreme: the player's first two cards and the dealer's up card as a
three-card poker hand (seeds 000 and 001).

"Your first two cards and the dealer up card make up your three card hand.
Note: 3-2-Ace sequence wins." A suited three of a kind is paid as three of a
kind (the higher of the two lines it makes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from controller.rules.cards import Card, Rank
from controller.rules.pays import Odds, Pay
from controller.rules.schema import key
from controller.rules.sidebets import SideBetResult, lost, require_cards, won

BET = "twenty_one_plus_three_xtreme"

LABELS = {
    "straight_flush": "Straight Flush",
    "three_of_a_kind": "Three-of-a-Kind",
    "straight": "Straight",
    "flush": "Flush",
}


@dataclass(frozen=True)
class XtremeRules:
    """Profile section ``[side_bets.twenty_one_plus_three_xtreme]``."""

    OUTCOMES: ClassVar[tuple[str, ...]] = tuple(LABELS)
    DEFAULT_PAYS: ClassVar[dict[str, Pay]] = {
        "straight_flush": Odds(30),
        "three_of_a_kind": Odds(20),
        "straight": Odds(10),
        "flush": Odds(5),
    }

    queen_king_ace_straight: bool = key(
        True, "Q-K-A counts as a straight (the card only says 3-2-A wins, which always counts)"
    )
    pays: Mapping[str, Pay] = key(DEFAULT_PAYS, "paytable, outcome = odds", kind="paytable")


def is_straight(ranks: Sequence[Rank], *, queen_king_ace: bool) -> bool:
    """Three consecutive ranks; the ace is low (A-2-3) and, if allowed, high (Q-K-A)."""
    values = sorted(int(rank) for rank in ranks)
    if len(set(values)) != 3:
        return False
    if values[2] - values[0] == 2:
        return True
    return queen_king_ace and values == [1, 12, 13]


def _outcome(first_two: Sequence[Card], up_card: Card, queen_king_ace: bool) -> str | None:
    """The paytable line three cards make, or None (the bet loses)."""
    cards = (*first_two, up_card)
    flush = len({card.suit for card in cards}) == 1
    straight = is_straight([card.rank for card in cards], queen_king_ace=queen_king_ace)
    if len({card.rank for card in cards}) == 1:
        return "three_of_a_kind"
    if straight and flush:
        return "straight_flush"
    if straight:
        return "straight"
    if flush:
        return "flush"
    return None


_UNSEEN = object()
_OUTCOMES: dict[tuple[Rank, Rank, Rank, bool, bool], str | None] = {}
""":func:`_outcome` by the three ranks, whether the suits are all one, and whether Q-K-A is a
straight: all it reads of the cards (at most 13 * 13 * 13 * 2 * 2 entries)."""


def evaluate(first_two: Sequence[Card], up_card: Card, rules: XtremeRules) -> SideBetResult:
    """Settle 21+3 Xtreme on the player's first two cards and the dealer's up card."""
    require_cards(first_two, 2, "the player's first two cards")
    require_cards((up_card,), 1, "the dealer's up card")
    first, second = first_two
    suit = first.suit
    key = (
        first.rank,
        second.rank,
        up_card.rank,
        suit == second.suit and suit == up_card.suit,  # len({suits}) == 1
        rules.queen_king_ace_straight,
    )
    outcome = _OUTCOMES.get(key, _UNSEEN)
    if outcome is _UNSEEN:
        outcome = _OUTCOMES[key] = _outcome(first_two, up_card, key[4])
    if outcome is None:
        return lost(BET)
    return won(BET, outcome, LABELS, dict(rules.pays))  # type: ignore[arg-type]
