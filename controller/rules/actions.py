"""Player actions checked against the house rules.

Each ``check_*`` returns ``None`` when the action is allowed and raises
:class:`~controller.errors.RuleViolation` naming the rule when it is not.
Amounts are in cents. The table state machine calls these; they know nothing
of the round's timing beyond what they are told.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.errors import RuleViolation
from controller.rules.cards import Card
from controller.rules.hand import hand_total, is_blackjack, is_pair
from controller.rules.pays import format_cents
from controller.rules.profile import HouseRules


@dataclass(frozen=True, slots=True)
class HandState:
    """What the rules need to know of a hand in play."""

    cards: tuple[Card, ...]
    wager: int
    from_split: bool = False
    split_aces: bool = False
    double_down: int = 0
    double_up: int = 0

    @property
    def two_cards(self) -> bool:
        return len(self.cards) == 2


def _extra_wager(kind: str, amount: int, wager: int, rule: str) -> None:
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        raise RuleViolation(f"the {kind} wager must be more than $0, in whole cents: {amount!r}")
    if rule == "equal" and amount != wager:
        raise RuleViolation(
            f"the {kind} wager must equal the original wager, {format_cents(wager)}, "
            f"not {format_cents(amount)}"
        )
    if amount > wager:
        raise RuleViolation(
            f"the {kind} wager may not exceed the original wager: at most {format_cents(wager)}, "
            f"not {format_cents(amount)}"
        )


def _check_open(hand: HandState, action: str) -> None:
    """Refuse any further action on a hand that is closed by a Double Up or a double down."""
    if hand.double_up:
        raise RuleViolation(
            f"no {action}: after a Double Up wager the hand must stand (Double Up rule 5)"
        )
    if hand.double_down:
        raise RuleViolation(f"no {action}: a doubled hand receives one card only")


def check_hit(hand: HandState, rules: HouseRules) -> None:
    """Hit: one more card to a hand that is still open."""
    if hand.split_aces and rules.split.split_aces_one_card:
        raise RuleViolation("split aces receive one card each: no hit")
    _check_open(hand, "hit")
    if hand_total(hand.cards).total >= 21:
        raise RuleViolation(f"the hand counts {hand_total(hand.cards).total}: no hit")


def check_double(hand: HandState, amount: int, rules: HouseRules) -> None:
    """Double down: one more card for an additional wager."""
    _check_open(hand, "double down")
    if not hand.two_cards:
        raise RuleViolation("double down only on the first two cards of a hand")
    if hand.split_aces and rules.split.split_aces_one_card:
        raise RuleViolation("split aces receive one card each: no double down")
    if hand.from_split and not rules.double.after_split:
        raise RuleViolation("this game allows no double down after a split")
    if is_blackjack(hand.cards, from_split=hand.from_split):
        raise RuleViolation("a blackjack cannot double down")
    count = hand_total(hand.cards)
    if count.total == 21 and not rules.double.on_two_card_21:
        raise RuleViolation("no double down on a count of 21 in two cards")
    allowed = {"9_10_11": {9, 10, 11}, "10_11": {10, 11}}.get(rules.double.allowed_on)
    if allowed is not None and (count.soft or count.total not in allowed):
        raise RuleViolation(f"double down only on a hard {' or '.join(map(str, sorted(allowed)))}")
    _extra_wager("double down", amount, hand.wager, rules.double.amount)


def check_split(hand: HandState, hands_at_spot: int, rules: HouseRules) -> None:
    """Split a pair into two hands; ``hands_at_spot`` counts the spot's hands now."""
    _check_open(hand, "split")
    if not hand.two_cards:
        raise RuleViolation("split only a hand of two cards")
    first, second = hand.cards
    if not is_pair(first, second, match=rules.split.match):
        same = "rank" if rules.split.match == "rank" else "value"
        raise RuleViolation(
            f"split only two cards of the same {same}: {first} and {second} are not"
        )
    aces = first.value == 1
    limit = (
        min(rules.split.max_hands_aces, rules.split.max_hands) if aces else rules.split.max_hands
    )
    if limit <= 1:
        raise RuleViolation("this game allows no splitting" + (" of aces" if aces else ""))
    if hands_at_spot >= limit:
        what = "a pair of aces" if aces else "a pair"
        raise RuleViolation(
            f"{what} may be split into at most {limit} hands; this spot has {hands_at_spot}"
        )


def check_surrender(hand: HandState, rules: HouseRules, *, dealer_checked: bool) -> None:
    """Surrender: give up half the wager instead of playing the hand.

    ``dealer_checked``: the dealer is known not to have blackjack (checked by
    the peek, or an up card of 2-9 that cannot make one).
    """
    if rules.surrender.allowed == "none":
        raise RuleViolation("this game offers no surrender")
    _check_open(hand, "surrender")
    if not dealer_checked:
        raise RuleViolation("surrender only after the dealer has checked for blackjack")
    if not hand.two_cards:
        raise RuleViolation("surrender only on the first two cards")
    if hand.from_split and not rules.surrender.after_split:
        raise RuleViolation("a split hand cannot surrender")


def check_double_up(hand: HandState, amount: int, rules: HouseRules) -> None:
    """Double Up (seed 003 rule 4): an extra wager on a two-card hand, then stand."""
    if not rules.double_up.offered:
        raise RuleViolation("this game offers no Double Up wager")
    _check_open(hand, "second Double Up")
    if not hand.two_cards:
        raise RuleViolation("Double Up only on a two-card hand")
    if is_blackjack(hand.cards, from_split=hand.from_split):
        raise RuleViolation("no Double Up on a natural blackjack")
    if hand.from_split and not rules.double_up.after_split:
        raise RuleViolation("this game allows no Double Up on split hands")
    if hand.split_aces and not rules.double_up.after_split_aces:
        raise RuleViolation("split aces take no further action: no Double Up")
    _extra_wager("Double Up", amount, hand.wager, rules.double_up.amount)


def check_even_money(cards: Sequence[Card], up_card: Card, rules: HouseRules) -> None:
    """Even money: a blackjack against an ace up, paid 1:1 at once."""
    if not rules.blackjack.even_money:
        raise RuleViolation("this game offers no even money")
    if up_card.value != 1:
        raise RuleViolation("even money only when the dealer shows an ace")
    if not is_blackjack(cards):
        raise RuleViolation("even money only on a blackjack")
