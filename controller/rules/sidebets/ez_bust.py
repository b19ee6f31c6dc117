"""EZ Bust: a wager, offered after the deal against a dealer 2-6, that the
dealer busts (seed 000).

"Resolution of the EZ Bust Blackjack side bet wager is based solely on whether
or not the dealer hand busts after drawing at least one card. [...] If all
players' hands bust, the dealer does not play its hand to completion and any
undecided EZ Bust Blackjack bet is a push."

The card does not say what happens when the dealer draws no card at all (6 up,
ace in the hole, dealer stands on soft 17): ``no_draw`` decides.

"If all players' hands bust" is read to the letter (``dealer_plays_out``): a blackjack
already paid and a surrendered hand are not busted hands, so unless every hand
busted the dealer plays out while an EZ Bust wager is on the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from controller.errors import WagerError
from controller.rules.cards import Card
from controller.rules.hand import hand_total
from controller.rules.pays import Odds, Pay
from controller.rules.schema import key
from controller.rules.sidebets import BetResult, SideBetResult, lost, won

BET = "ez_bust"
BUST_CARDS = frozenset({2, 3, 4, 5, 6})
"""Up-card points against which EZ Bust is offered ("a two, three, four, five or six")."""

LABELS = {"dealer_busts": "Dealer busts"}


@dataclass(frozen=True)
class EzBustRules:
    """Profile section ``[side_bets.ez_bust]``."""

    OUTCOMES: ClassVar[tuple[str, ...]] = tuple(LABELS)
    DEFAULT_PAYS: ClassVar[dict[str, Pay]] = {"dealer_busts": Odds(1)}

    no_draw: str = key(
        "lose",
        "when the dealer stands without drawing (6 up, ace in the hole, S17): the dealer did "
        "not bust, so the wager loses; 'push' returns it",
        choices=("lose", "push"),
    )
    dealer_plays_out: str = key(
        "unless_all_bust",
        "'unless_all_bust': the dealer plays out for EZ Bust unless every player hand busted (a "
        "blackjack already paid or a surrendered hand is no bust); "
        "'unless_all_bust_or_surrendered': surrendered hands count with the busted ones; "
        "'for_open_hands': only while a hand is not yet settled, else EZ Bust pushes",
        choices=("unless_all_bust", "unless_all_bust_or_surrendered", "for_open_hands"),
    )
    pays: Mapping[str, Pay] = key(DEFAULT_PAYS, "paytable, outcome = odds", kind="paytable")


def is_offered(up_card: Card) -> bool:
    """EZ Bust is offered only against a dealer up card of 2 to 6."""
    return up_card.value in BUST_CARDS


def check_offered(up_card: Card) -> None:
    """Refuse an EZ Bust wager against an up card other than 2-6."""
    if not is_offered(up_card):
        raise WagerError(
            f"EZ Bust is offered only when the dealer shows a 2, 3, 4, 5 or 6; the dealer "
            f"shows {up_card}: return the wager"
        )


def evaluate(
    dealer_cards: Sequence[Card], *, all_player_hands_busted: bool, rules: EzBustRules
) -> SideBetResult:
    """Settle EZ Bust on the dealer's final hand (up card first).

    ``all_player_hands_busted``: every player hand at the table busted, so the
    dealer did not play on.
    """
    if not dealer_cards:
        raise WagerError("EZ Bust settles on the dealer's hand, and no dealer card was given")
    check_offered(dealer_cards[0])
    if all_player_hands_busted:
        return SideBetResult(BET, BetResult.PUSH, "push", "All player hands busted")
    if len(dealer_cards) <= 2:
        label = "Dealer stood without drawing"
        if rules.no_draw == "push":
            return SideBetResult(BET, BetResult.PUSH, "push", label)
        return lost(BET, label)
    if hand_total(dealer_cards).is_bust:
        return won(BET, "dealer_busts", LABELS, dict(rules.pays))
    return lost(BET, "Dealer did not bust")
