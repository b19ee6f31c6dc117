"""Blazing 7's: a fixed $5 progressive wager on sevens in the player's first
two cards and the dealer's up card (seeds 000 and 001).

"The player's Blazing 7's wager will win if the player has any 7's in their
initial two cards. If the player has two 7's in the first two cards and the
dealer's up card is a 7, then the player will qualify for one of the Three 7's
payouts." Awards are fixed amounts; "Original wager is not returned." The two
top lines are shares of the linked meter, returned as data for the jackpot
controller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from controller.rules.cards import Card, Rank, Suit
from controller.rules.pays import FixedAward, MeterShare, Pay
from controller.rules.schema import key
from controller.rules.sidebets import SideBetResult, lost, require_cards, won

BET = "blazing_7s"

LABELS = {
    "three_sevens_diamonds": "Three 7's - Diamonds",
    "three_sevens_suited": "Three 7's - Suited (Other)",
    "three_sevens_same_color": "Three 7's - Same Color",
    "three_sevens": "Three 7's",
    "first_two_sevens": "First Two Cards 7's",
    "one_seven": "Either of First Two Cards - 7's",
}


@dataclass(frozen=True)
class Blazing7sRules:
    """Profile section ``[side_bets.blazing_7s]``."""

    OUTCOMES: ClassVar[tuple[str, ...]] = tuple(LABELS)
    DEFAULT_PAYS: ClassVar[dict[str, Pay]] = {
        "three_sevens_diamonds": MeterShare(Fraction(100)),
        "three_sevens_suited": MeterShare(Fraction(10)),
        "three_sevens_same_color": FixedAward(250_000),
        "three_sevens": FixedAward(100_000),
        "first_two_sevens": FixedAward(12_500),
        "one_seven": FixedAward(1_000),
    }
    STAKE_RETURNED: ClassVar[bool] = False  # "Original wager is not returned."
    PAY_KINDS: ClassVar[dict[str, tuple[type, ...]]] = dict.fromkeys(
        LABELS, (FixedAward, MeterShare)
    )

    wager: int = key(500, "the fixed wager in dollars ('$5 side wager')", kind="cents", minimum=1)
    pool: str = key("blazing_7s", "the jackpot controller's pool the meter lines are paid from")
    pays: Mapping[str, Pay] = key(
        DEFAULT_PAYS, "paytable, outcome = fixed award or meter share", kind="paytable"
    )


def evaluate(first_two: Sequence[Card], up_card: Card, rules: Blazing7sRules) -> SideBetResult:
    """Settle Blazing 7's on the player's first two cards and the dealer's up card."""
    require_cards(first_two, 2, "the player's first two cards")
    require_cards((up_card,), 1, "the dealer's up card")
    first, second = first_two
    sevens = (first.rank is Rank.SEVEN) + (second.rank is Rank.SEVEN)  # no generator to sum
    if sevens == 0:
        return lost(BET)
    pays = dict(rules.pays)
    if sevens == 1:
        return won(BET, "one_seven", LABELS, pays)
    if up_card.rank is not Rank.SEVEN:
        return won(BET, "first_two_sevens", LABELS, pays)
    cards = (*first_two, up_card)
    suits = {card.suit for card in cards}
    if suits == {Suit.DIAMONDS}:
        outcome = "three_sevens_diamonds"
    elif len(suits) == 1:
        outcome = "three_sevens_suited"
    elif len({card.suit.is_red for card in cards}) == 1:
        outcome = "three_sevens_same_color"
    else:
        outcome = "three_sevens"
    return won(BET, outcome, LABELS, pays)
