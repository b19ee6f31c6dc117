"""Settlement of the main wager and its companions, in integer cents.

A :class:`Settlement` says, for one wager, what was staked, what comes back of
the stake and what is paid on top: ``net = paid + returned - stake``. The main
wager of a hand settles with its Double Down and Double Up wagers
(:func:`settle_hand`); insurance and even money settle on their own.

Rules quoted are from seeds 000/001 (PA standard), 003 (Double Up Blackjack)
and 002 (online casino).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from controller.errors import WagerError
from controller.fast_init import fast_init
from controller.rules.cards import Card
from controller.rules.hand import HandTotal, hand_total, is_blackjack
from controller.rules.pays import FixedAward, MeterShare, Odds, Pay, format_cents
from controller.rules.profile import HouseRules
from controller.rules.sidebets import BetResult, SideBetResult, require_stake


class Outcome(enum.Enum):
    """How a wager ended, in casino words."""

    WIN = "win"
    BLACKJACK = "blackjack"
    LOSE = "lose"
    PUSH = "push"
    SURRENDER = "surrender"


@fast_init
@dataclass(frozen=True, slots=True)
class Settlement:
    """One settled wager, amounts in cents.

    ``paid`` is paid to the player on top of the ``returned`` part of the stake;
    a meter line (``meter`` set) is paid by the jackpot controller, so ``paid``
    is 0 here and the award comes as a hand pay.
    """

    wager: str
    stake: int
    outcome: Outcome
    paid: int
    returned: int
    pays: Pay | None = None
    reason: str = ""
    meter: MeterShare | None = None
    meter_pool: str | None = None

    @property
    def net(self) -> int:
        """The player's gain (negative: loss) in cents, meter awards excluded."""
        return self.paid + self.returned - self.stake


LINES_KEPT = 4096
"""Settlement lines :func:`_win` (at even money), :func:`_lose` and :func:`_push` remember
each, by everything they are made of; then they are forgotten at once."""

_LINES: dict[tuple[object, ...], Settlement] = {}
"""The lines made so far, by maker, wager, stake and reason: immutable values, shared (the
same few lines come again and again, and building one costs more than looking it up)."""


def _made(key: tuple[object, ...], line: Settlement) -> Settlement:
    if len(_LINES) >= LINES_KEPT:
        _LINES.clear()
    _LINES[key] = line
    return line


def _win(
    wager: str, stake: int, odds: Odds, reason: str, outcome: Outcome = Outcome.WIN
) -> Settlement:
    if odds is EVEN and outcome is Outcome.WIN and type(stake) is int:
        key = ("win", wager, stake, reason)
        line = _LINES.get(key)
        if line is None:
            line = _made(key, Settlement(wager, stake, outcome, stake, stake, odds, reason))
        return line
    return Settlement(wager, stake, outcome, odds.amount(stake), stake, odds, reason)


def _lose(wager: str, stake: int, reason: str) -> Settlement:
    if type(stake) is not int:  # remembered by a plain int stake only (True == 1)
        return Settlement(wager, stake, Outcome.LOSE, 0, 0, None, reason)
    key = ("lose", wager, stake, reason)
    line = _LINES.get(key)
    if line is None:
        line = _made(key, Settlement(wager, stake, Outcome.LOSE, 0, 0, None, reason))
    return line


def _push(wager: str, stake: int, reason: str) -> Settlement:
    if type(stake) is not int:
        return Settlement(wager, stake, Outcome.PUSH, 0, stake, None, reason)
    key = ("push", wager, stake, reason)
    line = _LINES.get(key)
    if line is None:
        line = _made(key, Settlement(wager, stake, Outcome.PUSH, 0, stake, None, reason))
    return line


EVEN = Odds(1, 1)


@fast_init
@dataclass(frozen=True, slots=True)
class PlayerHand:
    """A player's finished hand and the wagers on it (cents).

    ``split_index`` is 0 for the spot's first hand; hands made by splitting
    have ``from_split`` set (the first hand too, once split).
    """

    cards: tuple[Card, ...]
    wager: int
    double_down: int = 0
    double_up: int = 0
    from_split: bool = False
    split_index: int = 0
    surrendered: bool = False

    def __post_init__(self) -> None:
        wager, double_down, double_up = self.wager, self.double_down, self.double_up
        if not (
            type(wager) is int  # the common case, checked without a loop (a hot path)
            and type(double_down) is int
            and type(double_up) is int
            and wager >= 0
            and double_down >= 0
            and double_up >= 0
        ):
            for name in ("wager", "double_down", "double_up"):
                amount = getattr(self, name)
                if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
                    raise WagerError(f"{name} must be a whole number of cents >= 0, got {amount!r}")
        for card in self.cards:
            if not isinstance(card, Card):
                raise WagerError(f"a hand's cards must be Card objects, got {self.cards!r}")
        if self.split_index < 0 or (self.split_index > 0 and not self.from_split):
            raise WagerError("a hand after the first at a spot comes from a split (from_split)")
        if self.wager == 0:
            raise WagerError("a hand needs a main wager above $0")
        if self.surrendered and (self.double_down or self.double_up):
            raise WagerError("a surrendered hand carries no Double Down or Double Up wager")
        if self.double_up and self.is_blackjack:
            raise WagerError("a natural blackjack takes no Double Up wager (Double Up rule 4)")
        if self.double_up and self.double_down:
            raise WagerError(
                "a hand cannot both Double Up and double down: it stands after a Double Up"
            )

    @property
    def is_blackjack(self) -> bool:
        return is_blackjack(self.cards, from_split=self.from_split)


def settle_hand(
    hand: PlayerHand,
    dealer_cards: Sequence[Card],
    rules: HouseRules,
    *,
    dealer_count: tuple[HandTotal, bool] | None = None,
) -> list[Settlement]:
    """Settle a hand's main, Double Down and Double Up wagers against the dealer's final hand.

    ``dealer_cards`` is the dealer's whole hand, up card first. Wagers of 0
    produce no settlement line. ``dealer_count`` is ``(hand_total(dealer_cards),
    is_blackjack(dealer_cards))`` where the caller counted them once for every hand it
    settles.
    """
    lines = _settle_hand(hand, tuple(dealer_cards), rules, dealer_count)
    for line in lines:
        if line.stake <= 0:
            return [line for line in lines if line.stake > 0]
    return lines  # a new list already: most hands have no 0 stake


def settle_main_wager(
    cards: Sequence[Card],
    wager: int,
    dealer_cards: Sequence[Card],
    rules: HouseRules,
    *,
    dealer_count: tuple[HandTotal, bool] | None = None,
) -> list[Settlement]:
    """``settle_hand(PlayerHand(tuple(cards), wager), dealer_cards, rules, ...)``: a hand with
    its main wager alone (never split, surrendered or doubled), settled without making the
    :class:`PlayerHand`; the same checks, the same lines, the same errors."""
    if type(wager) is not int or wager <= 0:
        return settle_hand(PlayerHand(tuple(cards), wager), dealer_cards, rules,
                           dealer_count=dealer_count)  # fmt: skip
    for card in cards:
        if not isinstance(card, Card):
            raise WagerError(f"a hand's cards must be Card objects, got {tuple(cards)!r}")
    lines = _settle_lines(
        cards, wager, 0, 0, False, 0, False, tuple(dealer_cards), rules, dealer_count
    )
    for line in lines:
        if line.stake <= 0:
            return [line for line in lines if line.stake > 0]
    return lines


def _settle_hand(
    hand: PlayerHand,
    dealer: tuple[Card, ...],
    rules: HouseRules,
    dealer_count: tuple[HandTotal, bool] | None = None,
) -> list[Settlement]:
    return _settle_lines(
        hand.cards,
        hand.wager,
        hand.double_down,
        hand.double_up,
        hand.from_split,
        hand.split_index,
        hand.surrendered,
        dealer,
        rules,
        dealer_count,
    )


def _settle_lines(
    cards: Sequence[Card],
    wager: int,
    double_down: int,
    double_up: int,
    from_split: bool,
    split_index: int,
    surrendered: bool,
    dealer: tuple[Card, ...],
    rules: HouseRules,
    dealer_count: tuple[HandTotal, bool] | None = None,
) -> list[Settlement]:
    """:func:`_settle_hand` of a :class:`PlayerHand` made of these fields (checked already)."""
    # Wagers of 0 make no line (settle_hand drops them): none is made for them at all. Most
    # hands carry their main wager alone (``only``): its one line is made without the loop.
    only = not double_down and not double_up
    stakes = {"main": wager}
    if not only:
        if double_down:
            stakes["double_down"] = double_down
        if double_up:
            stakes["double_up"] = double_up
    player = hand_total(cards)
    if dealer_count is None:
        dealer_total = hand_total(dealer)
        dealer_bj = is_blackjack(dealer)
    else:
        dealer_total, dealer_bj = dealer_count

    if surrendered:
        # "giving up half their bet": half comes back, rounded down to the cent
        line = Settlement(
            "main",
            wager,
            Outcome.SURRENDER,
            0,
            wager // 2,
            None,
            "surrender: half the wager returned",
        )
        return [line]
    if is_blackjack(cards, from_split=from_split):  # PlayerHand.is_blackjack
        if len(dealer) < 2 and (not dealer or dealer[0].value in (1, 10)):
            raise WagerError("the dealer's second card decides this blackjack: settle after it")
        if dealer_bj:
            return [_push("main", wager, "blackjack against dealer blackjack: push")]
        odds = rules.blackjack.pays
        return [_win("main", wager, odds, f"blackjack pays {odds}", Outcome.BLACKJACK)]
    if player.total > 21:  # bust (read without the property: a hot path)
        why = f"player breaks with {player.total}"
        if only:
            return [_lose("main", wager, why)]
        return [_lose(name, stake, why) for name, stake in stakes.items()]
    # dealer_must_hit(dealer, ...), from the total and natural counted above (a hot path)
    house = rules.dealer
    if len(dealer) < 2:
        unfinished = True
    elif dealer_bj or (dealer_total.total == 16 and house.ends_on_16):
        unfinished = False
    else:
        unfinished = dealer_total.total < 17 or (
            dealer_total.total == 17 and dealer_total.soft and house.hit_soft_17
        )
    if unfinished:
        raise WagerError(
            "the dealer's hand is not finished: settle after the dealer stands or breaks"
        )
    if dealer_bj:
        reason = "dealer blackjack beats every hand but a blackjack"
        if rules.dealer.peek == "none" and rules.dealer.blackjack_takes == "original_wager":
            lines = [
                _push(name, stake, "dealer blackjack takes the original wager only")
                for name, stake in stakes.items()
                if name != "main"
            ]
            if split_index == 0:
                return [_lose("main", wager, reason), *lines]
            return [
                _push("main", wager, "dealer blackjack takes the original wager only"),
                *lines,
            ]
        return [_lose(name, stake, reason) for name, stake in stakes.items()]
    if rules.dealer.ends_on_16 and len(dealer) >= 2 and dealer_total.total == 16:
        if player.total == 21:
            return [
                _win(name, stake, EVEN, "dealer ends on 16, player 21 paid even money")
                for name, stake in stakes.items()
            ]
        return [
            _push(name, stake, "dealer ends on 16: every wager pushes")
            for name, stake in stakes.items()
        ]
    dealer_bust = dealer_total.total > 21
    if dealer_bust or player.total > dealer_total.total:
        why = "dealer breaks" if dealer_bust else f"{player.total} beats {dealer_total.total}"
        if only:
            return [_win("main", wager, EVEN, why)]
        return [_win(name, stake, EVEN, why) for name, stake in stakes.items()]
    if player.total < dealer_total.total:
        why = f"{dealer_total.total} beats {player.total}"
        if only:
            return [_lose("main", wager, why)]
        return [_lose(name, stake, why) for name, stake in stakes.items()]
    if (
        player.total == 21
        and len(cards) == 2
        and len(dealer) > 2
        and rules.split.two_card_21_beats_dealer_21
    ):
        # seed 000: "If you achieve a score of 21 in two cards and a dealer achieves a score
        # of 21 in more than two cards, you win." A split hand's two-card 21 is no blackjack:
        # it is paid 1 to 1.
        why = f"21 in two cards beats the dealer's 21 in {len(dealer)} cards"
        return [_win(name, stake, EVEN, why) for name, stake in stakes.items()]
    why = f"standoff at {player.total}"
    lines = [_push("main", wager, why), _push("double_down", double_down, why)]
    lines.append(_lose("double_up", double_up, f"{why}: a tie loses the Double Up wager"))
    return lines


def settle_insurance(stake: int, dealer_blackjack: bool, rules: HouseRules) -> Settlement:
    """Insurance wins (2:1 by default) when the dealer's second card makes blackjack."""
    require_stake(stake, "insurance")
    if dealer_blackjack:
        odds = rules.insurance.pays
        return _win("insurance", stake, odds, f"dealer blackjack: insurance pays {odds}")
    return _lose("insurance", stake, "dealer has no blackjack: insurance loses")


def settle_even_money(wager: int) -> Settlement:
    """A blackjack against an ace up taken as even money: paid 1:1 at once."""
    require_stake(wager, "main")
    return _win("main", wager, EVEN, "even money on blackjack", Outcome.BLACKJACK)


def insurance_limit(wager: int, rules: HouseRules) -> int:
    """Most insurance (cents) on ``wager``: half of it (rounded down to the cent)."""
    return wager // 2


def check_insurance(wager: int, stake: int, rules: HouseRules) -> None:
    """Refuse an insurance stake the profile does not allow."""
    require_stake(wager, "main")
    require_stake(stake, "insurance")
    if not rules.insurance.offered:
        raise WagerError("this game offers no insurance")
    limit = insurance_limit(wager, rules)
    if rules.insurance.amount == "fixed_half":
        if stake <= 0 or stake != limit:
            raise WagerError(
                f"insurance is fixed at half the wager: {format_cents(limit)} on a wager of "
                f"{format_cents(wager)}, not {format_cents(stake)}"
            )
        return
    if stake <= 0 or stake > limit:
        raise WagerError(
            f"insurance of {format_cents(stake)} refused: it must be more than $0 and at most "
            f"half the wager, {format_cents(limit)} on {format_cents(wager)}"
        )


def settle_side_bet(
    stake: int, result: SideBetResult, *, stake_returned: bool = True, pool: str | None = None
) -> Settlement:
    """Settle a side bet from its evaluator's result.

    Odds lines pay ``stake * odds`` and return the stake; fixed awards pay the
    award; meter lines leave the amount to the jackpot controller. With
    ``stake_returned=False`` ("Original wager is not returned", Blazing 7's) a
    winning stake is kept by the house. ``pool`` names the jackpot pool of a
    meter line.
    """
    require_stake(stake, result.bet)
    if result.result is BetResult.PUSH:
        return _push(result.bet, stake, result.label)
    if result.result is BetResult.LOSE:
        return _lose(result.bet, stake, result.label)
    pays = result.pays
    returned = stake if stake_returned else 0
    reason = f"{result.label} pays {pays}"
    if isinstance(pays, Odds):
        return Settlement(
            result.bet, stake, Outcome.WIN, pays.amount(stake), returned, pays, reason
        )
    if isinstance(pays, FixedAward):
        return Settlement(result.bet, stake, Outcome.WIN, pays.cents, returned, pays, reason)
    return Settlement(
        result.bet, stake, Outcome.WIN, 0, returned, pays, reason, meter=pays, meter_pool=pool
    )


def settle_offered_side_bet(stake: int, result: SideBetResult, rules: HouseRules) -> Settlement:
    """Settle a side bet on the terms of ``rules``: whether the stake comes back, the
    fixed wager a bet demands (Blazing 7's $5) and the pool its meter lines draw on."""
    section = getattr(rules.side_bets, result.bet, None)
    if section is None:
        raise WagerError(f"{rules.name} offers no {result.bet} side bet")
    fixed = getattr(section, "wager", None)
    if fixed is not None and stake != fixed:
        raise WagerError(
            f"the {result.bet} wager is fixed at {format_cents(fixed)}, not {format_cents(stake)}"
        )
    return settle_side_bet(
        stake,
        result,
        stake_returned=getattr(section, "STAKE_RETURNED", True),
        pool=getattr(section, "pool", None),
    )
