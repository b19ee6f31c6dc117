"""Lucky Ladies: the player's first two cards total 20 (seeds 000 and 001).

"Lucky Ladies is an optional side bet on where you win if your hand totals 20
on your first two cards. If you are lucky enough to get suited 20 (both cards
same suit), matched 20 (both cards the identical) or two Queen of Hearts the
payouts get bigger." The top line also needs the dealer's blackjack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from controller.rules.cards import Card, Rank, Suit
from controller.rules.hand import hand_total
from controller.rules.pays import Odds, Pay
from controller.rules.schema import key
from controller.rules.sidebets import SideBetResult, lost, require_cards, won

BET = "lucky_ladies"
QUEEN_OF_HEARTS = Card(Rank.QUEEN, Suit.HEARTS)

LABELS = {
    "queen_hearts_pair_dealer_blackjack": "2 Queen of Hearts with Dealer Blackjack",
    "queen_hearts_pair": "2 Queen of Hearts",
    "matched_20": "Matched 20",
    "suited_20": "Suited 20",
    "any_20": "Any 20",
}


@dataclass(frozen=True)
class LuckyLadiesRules:
    """Profile section ``[side_bets.lucky_ladies]``."""

    OUTCOMES: ClassVar[tuple[str, ...]] = tuple(LABELS)
    DEFAULT_PAYS: ClassVar[dict[str, Pay]] = {
        "queen_hearts_pair_dealer_blackjack": Odds(1000),
        "queen_hearts_pair": Odds(200),
        "matched_20": Odds(25),
        "suited_20": Odds(10),
        "any_20": Odds(4),
    }

    soft_20_qualifies: bool = key(
        True, "an ace and a nine (soft 20) counts as a 20; the card says 'totals 20'"
    )
    pays: Mapping[str, Pay] = key(DEFAULT_PAYS, "paytable, outcome = odds", kind="paytable")


def evaluate(
    first_two: Sequence[Card], dealer_blackjack: bool, rules: LuckyLadiesRules
) -> SideBetResult:
    """Settle Lucky Ladies on the player's first two cards and whether the dealer has blackjack."""
    require_cards(first_two, 2, "the player's first two cards")
    first, second = first_two
    count = hand_total(first_two)
    if count.total != 20 or (count.soft and not rules.soft_20_qualifies):
        return lost(BET)
    pays = dict(rules.pays)
    if first == second == QUEEN_OF_HEARTS:
        outcome = "queen_hearts_pair_dealer_blackjack" if dealer_blackjack else "queen_hearts_pair"
    elif first == second:
        outcome = "matched_20"
    elif first.suit == second.suit:
        outcome = "suited_20"
    else:
        outcome = "any_20"
    return won(BET, outcome, LABELS, pays)
