"""Blackjack Tie bonus wagers (seed 004): the player's hand ties the dealer's.

"If the player made a bonus wager, and the dealers hand ties the players hand
exactly [...] the player wins the total of that bonus and pushes the primary
wager." Left Side wins on a tie at 17, 18 or 19, Right Side at 20, 21 or
blackjack. "21 Value hands do not tie with Blackjack hands". After a split
"only the first hand is used to determine the tie wager", and a split ace with
a ten is 21, not blackjack. "The player may only wager a total of all bonus
wagers not to exceed the total of the primary blackjack wager."
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from controller.errors import WagerError
from controller.rules.cards import Card
from controller.rules.hand import hand_total, is_blackjack
from controller.rules.pays import Odds, Pay, format_cents
from controller.rules.schema import key
from controller.rules.sidebets import SideBetResult, lost, won

BET = "blackjack_tie"

LABELS = {
    "left_side": "LS (left side bet) 17, 18, or 19",
    "right_side": "RS (right side bet) 20, 21 and Blackjack",
    "tie_17": "Tie 17",
    "tie_18": "Tie 18",
    "tie_19": "Tie 19",
    "tie_20": "Tie 20",
    "tie_21": "Tie 21 (with 3 or more cards)",
    "tie_blackjack": "Tie Blackjack (two cards only)",
}

TIES_WON_BY = {
    "left_side": frozenset({"17", "18", "19"}),
    "right_side": frozenset({"20", "21", "blackjack"}),
    "tie_17": frozenset({"17"}),
    "tie_18": frozenset({"18"}),
    "tie_19": frozenset({"19"}),
    "tie_20": frozenset({"20"}),
    "tie_21": frozenset({"21"}),
    "tie_blackjack": frozenset({"blackjack"}),
}
"""Which exact tie (a total, or ``"blackjack"``) each bonus wager wins on."""


@dataclass(frozen=True)
class BlackjackTieRules:
    """Profile section ``[side_bets.blackjack_tie]``."""

    OUTCOMES: ClassVar[tuple[str, ...]] = tuple(LABELS)
    DEFAULT_PAYS: ClassVar[dict[str, Pay]] = {
        "left_side": Odds(18),
        "right_side": Odds(24),
        "tie_17": Odds(50),
        "tie_18": Odds(55),
        "tie_19": Odds(55),
        "tie_20": Odds(25),
        "tie_21": Odds(250),
        "tie_blackjack": Odds(400),
    }

    pays: Mapping[str, Pay] = key(DEFAULT_PAYS, "paytable, bonus wager = odds", kind="paytable")


def tie_class(cards: Sequence[Card], *, from_split: bool = False) -> str | None:
    """What a finished hand can tie as: ``"blackjack"``, a total ``"17"``..``"21"``,
    or None (busted, or under 17 which no bonus wager names)."""
    if is_blackjack(cards, from_split=from_split):
        return "blackjack"
    count = hand_total(cards)
    if count.is_bust or count.total < 17:
        return None
    return str(count.total)


def check_wagers(primary_wager: int, bonus_wagers: Mapping[str, int]) -> None:
    """Refuse bonus wagers that name no bonus, are not positive, or together exceed the
    primary wager (amounts in cents)."""
    for name, amount in bonus_wagers.items():
        if name not in LABELS:
            raise WagerError(
                f"'{name}' is no Blackjack Tie bonus wager; use one of {', '.join(LABELS)}"
            )
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise WagerError(
                f"the {LABELS[name]} wager must be more than $0, in whole cents, got {amount!r}"
            )
    total = sum(bonus_wagers.values())
    if total > primary_wager:
        raise WagerError(
            f"bonus wagers total {format_cents(total)}, more than the primary wager of "
            f"{format_cents(primary_wager)}: all bonus wagers together may not exceed the primary "
            "wager; reduce the bonus wagers"
        )


def evaluate(
    bonus: str,
    player_cards: Sequence[Card],
    dealer_cards: Sequence[Card],
    rules: BlackjackTieRules,
    *,
    player_from_split: bool = False,
    surrendered: bool = False,
) -> SideBetResult:
    """Settle one bonus wager on the player's (first) hand against the dealer's final hand.

    A surrendered hand has no final total and ties nothing.
    """
    if bonus not in LABELS:
        raise WagerError(
            f"'{bonus}' is no Blackjack Tie bonus wager; use one of {', '.join(LABELS)}"
        )
    player = None if surrendered else tie_class(player_cards, from_split=player_from_split)
    dealer = tie_class(dealer_cards)
    if player is None or player != dealer:
        return lost(BET, "No tie" if player is None or dealer is None else f"No tie on {bonus}")
    if player not in TIES_WON_BY[bonus]:
        return lost(BET, f"Tie on {player}, not covered by {LABELS[bonus]}")
    return won(BET, bonus, LABELS, dict(rules.pays))
