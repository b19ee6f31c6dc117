"""Player actions checked against the house rules.

Each ``check_*`` returns ``None`` when the action is allowed and raises
:class:`~controller.errors.RuleViolation` naming the rule when it is not. Each ``*_refusal``
returns that rule's words instead (None: allowed), without raising: the table asks them for
every prompt of the players' turn, which lists the choices the rules allow now.
Amounts are in cents. The table state machine calls these; they know nothing
of the round's timing beyond what they are told.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from controller.errors import RuleViolation
from controller.fast_init import fast_init
from controller.rules.cards import Card
from controller.rules.hand import hand_total, is_blackjack, is_pair
from controller.rules.pays import format_cents
from controller.rules.profile import HouseRules


@fast_init
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


class Hittable(Protocol):
    """What :func:`hit_refusal` reads of a hand: a :class:`HandState`, or the table's hand in
    play itself (no copy to build for every card of the players' turn)."""

    @property
    def cards(self) -> Sequence[Card]: ...
    @property
    def split_aces(self) -> bool: ...
    @property
    def double_down(self) -> int: ...
    @property
    def double_up(self) -> int: ...


def _extra_wager(kind: str, amount: int, wager: int, rule: str) -> str | None:
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        return f"the {kind} wager must be more than $0, in whole cents: {amount!r}"
    if rule == "equal" and amount != wager:
        return (
            f"the {kind} wager must equal the original wager, {format_cents(wager)}, "
            f"not {format_cents(amount)}"
        )
    if amount > wager:
        return (
            f"the {kind} wager may not exceed the original wager: at most {format_cents(wager)}, "
            f"not {format_cents(amount)}"
        )
    return None


def _closed(hand: HandState | Hittable, action: str) -> str | None:
    """Why no further action is open on a hand closed by a Double Up or a double down."""
    if hand.double_up:
        return f"no {action}: after a Double Up wager the hand must stand (Double Up rule 5)"
    if hand.double_down:
        return f"no {action}: a doubled hand receives one card only"
    return None


def _raise(refusal: str | None) -> None:
    if refusal is not None:
        raise RuleViolation(refusal)


def hit_refusal(hand: HandState | Hittable, rules: HouseRules) -> str | None:
    """Why :func:`check_hit` refuses, or None."""
    if hand.split_aces and rules.split.split_aces_one_card:
        return "split aces receive one card each: no hit"
    closed = _closed(hand, "hit")
    if closed is not None:
        return closed
    total = hand_total(hand.cards).total
    if total >= 21:
        return f"the hand counts {total}: no hit"
    return None


def check_hit(hand: HandState, rules: HouseRules) -> None:
    """Hit: one more card to a hand that is still open."""
    _raise(hit_refusal(hand, rules))


_DOUBLE_ON = {"9_10_11": frozenset({9, 10, 11}), "10_11": frozenset({10, 11})}


def double_refusal(hand: HandState, amount: int, rules: HouseRules) -> str | None:
    """Why :func:`check_double` refuses, or None."""
    closed = _closed(hand, "double down")
    if closed is not None:
        return closed
    if not hand.two_cards:
        return "double down only on the first two cards of a hand"
    if hand.split_aces and rules.split.split_aces_one_card:
        return "split aces receive one card each: no double down"
    if hand.from_split and not rules.double.after_split:
        return "this game allows no double down after a split"
    if is_blackjack(hand.cards, from_split=hand.from_split):
        return "a blackjack cannot double down"
    count = hand_total(hand.cards)
    if count.total == 21 and not rules.double.on_two_card_21:
        return "no double down on a count of 21 in two cards"
    allowed = _DOUBLE_ON.get(rules.double.allowed_on)
    if allowed is not None and (count.soft or count.total not in allowed):
        return f"double down only on a hard {' or '.join(map(str, sorted(allowed)))}"
    return _extra_wager("double down", amount, hand.wager, rules.double.amount)


def check_double(hand: HandState, amount: int, rules: HouseRules) -> None:
    """Double down: one more card for an additional wager."""
    _raise(double_refusal(hand, amount, rules))


def split_refusal(hand: HandState, hands_at_spot: int, rules: HouseRules) -> str | None:
    """Why :func:`check_split` refuses, or None."""
    closed = _closed(hand, "split")
    if closed is not None:
        return closed
    if not hand.two_cards:
        return "split only a hand of two cards"
    first, second = hand.cards
    if not is_pair(first, second, match=rules.split.match):
        same = "rank" if rules.split.match == "rank" else "value"
        return f"split only two cards of the same {same}: {first} and {second} are not"
    aces = first.value == 1
    limit = (
        min(rules.split.max_hands_aces, rules.split.max_hands) if aces else rules.split.max_hands
    )
    if limit <= 1:
        return "this game allows no splitting" + (" of aces" if aces else "")
    if hands_at_spot >= limit:
        what = "a pair of aces" if aces else "a pair"
        return f"{what} may be split into at most {limit} hands; this spot has {hands_at_spot}"
    return None


def check_split(hand: HandState, hands_at_spot: int, rules: HouseRules) -> None:
    """Split a pair into two hands; ``hands_at_spot`` counts the spot's hands now."""
    _raise(split_refusal(hand, hands_at_spot, rules))


def surrender_refusal(hand: HandState, rules: HouseRules, *, dealer_checked: bool) -> str | None:
    """Why :func:`check_surrender` refuses, or None."""
    if rules.surrender.allowed == "none":
        return "this game offers no surrender"
    closed = _closed(hand, "surrender")
    if closed is not None:
        return closed
    if not dealer_checked:
        return "surrender only after the dealer has checked for blackjack"
    if not hand.two_cards:
        return "surrender only on the first two cards"
    if hand.from_split and not rules.surrender.after_split:
        return "a split hand cannot surrender"
    return None


def check_surrender(hand: HandState, rules: HouseRules, *, dealer_checked: bool) -> None:
    """Surrender: give up half the wager instead of playing the hand.

    ``dealer_checked``: the dealer is known not to have blackjack (checked by
    the peek, or an up card of 2-9 that cannot make one).
    """
    _raise(surrender_refusal(hand, rules, dealer_checked=dealer_checked))


def double_up_refusal(hand: HandState, amount: int, rules: HouseRules) -> str | None:
    """Why :func:`check_double_up` refuses, or None."""
    if not rules.double_up.offered:
        return "this game offers no Double Up wager"
    closed = _closed(hand, "second Double Up")
    if closed is not None:
        return closed
    if not hand.two_cards:
        return "Double Up only on a two-card hand"
    if is_blackjack(hand.cards, from_split=hand.from_split):
        return "no Double Up on a natural blackjack"
    if hand.from_split and not rules.double_up.after_split:
        return "this game allows no Double Up on split hands"
    if hand.split_aces and not rules.double_up.after_split_aces:
        return "split aces take no further action: no Double Up"
    return _extra_wager("Double Up", amount, hand.wager, rules.double_up.amount)


def check_double_up(hand: HandState, amount: int, rules: HouseRules) -> None:
    """Double Up (seed 003 rule 4): an extra wager on a two-card hand, then stand."""
    _raise(double_up_refusal(hand, amount, rules))


def check_even_money(cards: Sequence[Card], up_card: Card, rules: HouseRules) -> None:
    """Even money: a blackjack against an ace up, paid 1:1 at once."""
    if not rules.blackjack.even_money:
        raise RuleViolation("this game offers no even money")
    if up_card.value != 1:
        raise RuleViolation("even money only when the dealer shows an ace")
    if not is_blackjack(cards):
        raise RuleViolation("even money only on a blackjack")
