"""The player's expected value against one dealer up card, by recursion over compositions.

A hand is known by the cards it removed from the shoe: a base-32 code of ten
counts (:data:`POW`), ace first. :class:`UpCard` enumerates every set of
removed cards a hand can stand with (plus the pair cards of split hands),
gets the dealer's final totals for all of them at once
(:func:`~controller.rules.ev.dealer.dealer_outcomes`) and turns them into the
value of standing and of Double Up for each player total. The player's
recursion then walks hands card by card with a memo keyed on the removed
cards and the hand's total.

Values are per initial wager and, with a peek, on the no-blackjack branch
without renormalising (see :mod:`controller.rules.ev.dealer`); the caller adds
the dealer's blackjack. A :class:`Policy` plays the hand (basic strategy, the
autopilot's chart); without one every decision is the best for the cards.
"""

from __future__ import annotations

from array import array
from typing import Protocol

import numpy as np

from controller.rules.ev.dealer import BJ, BUST, D16, D17, OUTCOMES, dealer_outcomes
from controller.rules.ev.game import Game

B = 32
POW = tuple(B**i for i in range(10))
TWO_21 = 22  # column: stand on a two-card 21 of a split hand
DU = 23  # columns DU + total: stand with a Double Up wager
DU_TWO_21 = 45
COLUMNS = 46

STAND, HIT, DOUBLE, SURRENDER, DOUBLE_UP, SPLIT = (
    "stand",
    "hit",
    "double",
    "surrender",
    "double_up",
    "split",
)


class Policy(Protocol):
    """How a strategy plays: hit or stand on three or more cards, and a two-card choice."""

    def multi(self, up: int, total: int, soft: bool) -> str: ...

    def two(
        self,
        up: int,
        hand: tuple[int, ...],
        total: int,
        soft: bool,
        allowed: frozenset[str],
        split: bool,
    ) -> str: ...


def digits(code: int) -> tuple[int, ...]:
    """The ten counts of a code."""
    return tuple((code // POW[v]) % B for v in range(10))


def shoe_counts(game: Game) -> list[int]:
    """Cards of each value, ace first, in a full shoe (``game.shoe`` when set, for tests)."""
    if game.shoe is not None:
        return list(game.shoe)
    return [4 * game.decks] * 9 + [16 * game.decks]


def _base_codes(game: Game) -> list[int]:
    """Codes of every hand (any number of cards) whose points, aces as 1, are at most 21."""
    avail = shoe_counts(game)
    found: list[int] = []

    def walk(value: int, left: int, code: int) -> None:
        if value == 10:
            found.append(code)
            return
        step = POW[value]
        for n in range(min(avail[value], left // (value + 1)) + 1):
            walk(value + 1, left - n * (value + 1), code + n * step)

    walk(0, 21, 0)
    return found


def removal_codes(game: Game) -> np.ndarray:
    """Every set of cards a hand can stand with: the hand's cards, and for a split hand the
    pair cards of the other hands (as many as the game allows)."""
    base = _base_codes(game)
    codes = list(base)
    for pair in range(10):
        limit = game.split_limit_aces if pair == 0 else game.max_hands
        step = POW[pair]
        with_pair = [c for c in base if (c // step) % B]
        if pair == 0 and game.aces_one_card:
            with_pair = [POW[0] + POW[card] for card in range(10)]
        for extra in range(1, limit):
            codes.extend(c + extra * step for c in with_pair)
    return np.unique(np.array(codes, dtype=np.int64))


def _rows(codes: np.ndarray) -> np.ndarray:
    return (codes[:, None] // np.array(POW, dtype=np.int64)[None, :]) % B


MEASURES = ("win", "push", "loss")
"""Instead of money, count the hands whose main wager wins, pushes or loses."""


def payoff_matrix(game: Game, measure: str | None = None) -> np.ndarray:
    """Outcome x column: what standing (and Double Up) wins per initial wager; with a
    ``measure``, 1 where the hand's main wager ends that way (a surrender is a loss)."""
    if measure is not None:
        money = payoff_matrix(game)
        main = np.sign(np.concatenate([money[:, :DU], money[:, :DU]], axis=1))
        main[:, DU_TWO_21] = main[:, TWO_21]
        if not (game.peek or game.original_bets_only):
            main[BJ, :] = -1.0
        wanted = {"win": 1.0, "push": 0.0, "loss": -1.0}[measure]
        return (main == wanted).astype(float)
    m = np.zeros((OUTCOMES, COLUMNS))
    enhc_loss = 0.0 if (game.peek or game.original_bets_only) else -1.0
    for total in range(22):
        for col, two_21, stake in (
            (total, False, 1),
            (DU + total, False, 2),
            (TWO_21, True, 1),
            (DU_TWO_21, True, 2),
        ):
            if two_21 and total != 21:
                continue
            m[D16, col] = stake if total == 21 else 0
            m[BUST, col] = stake
            m[BJ, col] = enhc_loss * stake
            for dealer in range(17, 22):
                if total > dealer or (two_21 and dealer == 21 and game.two_card_21_wins):
                    pay = stake
                elif total < dealer:
                    pay = -stake
                else:
                    pay = -1 if stake == 2 else 0  # a tie loses the Double Up wager only
                m[D17 + dealer - 17, col] = pay
    return m


_CACHE: dict[tuple[object, int], tuple[np.ndarray, np.ndarray]] = {}
_FLAT: dict[tuple[object, int, str | None], tuple[dict[int, int], array]] = {}


def _table_key(game: Game) -> tuple[object, ...]:
    """What the dealer tables depend on (two games that differ elsewhere share them)."""
    return (
        game.decks,
        game.shoe,
        game.hit_soft_17,
        game.ends_on_16,
        game.peek,
        game.original_bets_only,
        game.max_hands,
        game.split_limit_aces,
        game.aces_one_card,
        game.two_card_21_wins,
    )


def _tables(
    game: Game, up: int, measure: str | None = None
) -> tuple[dict[int, int], np.ndarray, array]:
    """For up card ``up``: each removal code's offset in the flat value table, the dealer's
    outcome probabilities (rows in code order) and the flat table of standing values (one
    row of :data:`COLUMNS` per code). Kept for the last game's dealer rules (both strategies
    share them; about 70 MB at 8 decks), the counting tables of a ``measure`` are not."""
    table_key = _table_key(game)
    key = (table_key, up)
    if key not in _CACHE:
        if _CACHE and next(iter(_CACHE))[0] != table_key:
            _CACHE.clear()
            _FLAT.clear()
        shoe = shoe_counts(game)
        shoe[up] -= 1
        codes = removal_codes(game)
        rows = _rows(codes)
        keep = (rows <= np.array(shoe)[None, :]).all(axis=1)
        codes, rows = codes[keep], rows[keep]
        outcomes = dealer_outcomes(
            tuple(shoe),
            up,
            rows,
            hit_soft_17=game.hit_soft_17,
            stop_on_16=game.ends_on_16,
            peek=game.peek,
        )
        _CACHE[key] = (codes, outcomes)
    codes, outcomes = _CACHE[key]
    flat_key = (table_key, up, measure)
    if flat_key not in _FLAT:
        flat = array("d", (outcomes @ payoff_matrix(game, measure)).tobytes())
        index = dict(zip(codes.tolist(), range(0, len(codes) * COLUMNS, COLUMNS), strict=True))
        if measure is not None:  # counted once: not kept (a table is ~6 MB at 8 decks)
            return index, outcomes, flat
        _FLAT[flat_key] = (index, flat)
    index, flat = _FLAT[flat_key]
    return index, outcomes, flat


class UpCard:
    """The player's expected values against up card ``up`` (0 ace .. 9 ten-value)."""

    def __init__(
        self, game: Game, up: int, policy: Policy | None = None, measure: str | None = None
    ):
        if measure is not None and policy is None:
            raise ValueError("a measure counts the hands of a given strategy (a policy)")
        self.game, self.up, self.policy, self.measure = game, up, policy, measure
        shoe = shoe_counts(game)
        shoe[up] -= 1
        self.shoe, self.left = shoe, sum(shoe)
        self.conditioned = game.peek or game.original_bets_only
        self.checked = game.peek or up not in (0, 9)  # surrender: the dealer has no blackjack
        self.memo: dict[int, float] = {}
        tables = _tables(game, up, measure)
        varies = self.conditioned and up in (0, 9) and measure in (None, "loss")
        self.bust_value = None if varies else self.busted(0, 0)  # the same for every hand
        self.index, self.outcomes, self.flat = tables

    # -- probabilities ---------------------------------------------------------------------------

    def no_blackjack(self, code: int, cards: int) -> float:
        """The probability the dealer has no blackjack, ``code`` removed (``cards`` of them)."""
        if self.up == 0:
            return 1.0 - (self.shoe[9] - (code // POW[9]) % B) / (self.left - cards)
        if self.up == 9:
            return 1.0 - (self.shoe[0] - code % B) / (self.left - cards)
        return 1.0

    def busted(self, code: int, cards: int) -> float:
        """A busted hand's value per wager (on the no-blackjack branch with a peek)."""
        if self.measure is not None:
            if self.measure != "loss":
                return 0.0
            return self.no_blackjack(code, cards) if self.conditioned else 1.0
        return -self.no_blackjack(code, cards) if self.conditioned else -1.0

    # -- three or more cards: hit or stand -------------------------------------------------------

    def hit_or_stand(self, code: int, cards: int, hard: int, ace: bool) -> float:
        key = code * 64 + hard * 2 + ace
        value = self.memo.get(key)
        if value is not None:
            return value
        soft = ace and hard <= 11
        total = hard + 10 if soft else hard
        stand = self.flat[self.index[code] + total]
        if total >= 21:
            value = stand
        elif self.policy is None:
            value = max(stand, self.hit(code, cards, hard, ace))
        elif self.policy.multi(self.up, total, soft) == HIT:
            value = self.hit(code, cards, hard, ace)
        else:
            value = stand
        self.memo[key] = value
        return value

    def hit(self, code: int, cards: int, hard: int, ace: bool) -> float:
        """Take one card, then play on."""
        shoe, bust_value = self.shoe, self.bust_value
        inverse = 1.0 / (self.left - cards)
        total = 0.0
        for value in range(10):
            count = shoe[value] - (code // POW[value]) % B
            if count <= 0:
                continue
            new_hard = hard + value + 1
            if new_hard > 21:
                if bust_value is None:
                    total += count * inverse * self.busted(code + POW[value], cards + 1)
                else:
                    total += count * inverse * bust_value
            else:
                total += (
                    count
                    * inverse
                    * self.hit_or_stand(code + POW[value], cards + 1, new_hard, ace or value == 0)
                )
        return total

    def double(self, code: int, cards: int, hard: int, ace: bool) -> float:
        """Double down: one card, two wagers."""
        shoe = self.shoe
        inverse = 1.0 / (self.left - cards)
        total = 0.0
        for value in range(10):
            count = shoe[value] - (code // POW[value]) % B
            if count <= 0:
                continue
            child = code + POW[value]
            new_hard = hard + value + 1
            if new_hard > 21:
                total += count * inverse * self.busted(child, cards + 1)
            else:
                soft = (ace or value == 0) and new_hard <= 11
                stand = self.flat[self.index[child] + (new_hard + 10 if soft else new_hard)]
                total += count * inverse * stand
        return total if self.measure is not None else 2.0 * total

    # -- two cards -------------------------------------------------------------------------------

    def allowed(self, total: int, soft: bool, *, split: bool, aces: bool) -> frozenset[str]:
        """The two-card choices the rules allow (split itself not included)."""
        game = self.game
        one_card = aces and game.aces_one_card
        moves = {STAND}
        if not one_card and total < 21:
            moves.add(HIT)
        if (
            not one_card
            and (not split or game.double_after_split)
            and (total != 21 or game.double_on_21)
            and (game.double_totals is None or (not soft and total in game.double_totals))
        ):
            moves.add(DOUBLE)
        if game.surrender and self.checked and (not split or game.surrender_after_split):
            moves.add(SURRENDER)
        if (
            game.double_up
            and (not split or game.double_up_after_split)
            and (not aces or game.double_up_after_split_aces)
        ):
            moves.add(DOUBLE_UP)
        return frozenset(moves)

    def option(self, move: str, code: int, cards: int, hard: int, ace: bool) -> float:
        soft = ace and hard <= 11
        total = hard + 10 if soft else hard
        if move == STAND:
            return self.flat[self.index[code] + (TWO_21 if total == 21 else total)]
        if move == HIT:
            return self.hit(code, cards, hard, ace)
        if move == DOUBLE:
            return self.double(code, cards, hard, ace)
        if move == SURRENDER:
            unconditioned = self.no_blackjack(code, cards) if self.conditioned else 1.0
            if self.measure is not None:
                return unconditioned if self.measure == "loss" else 0.0
            return -0.5 * unconditioned
        if move == DOUBLE_UP:
            return self.flat[self.index[code] + (DU_TWO_21 if total == 21 else DU + total)]
        raise ValueError(f"no such move {move!r}")

    def two_cards(
        self,
        code: int,
        cards: int,
        hand: tuple[int, ...],
        *,
        split: bool,
        aces: bool,
        extra: frozenset[str] = frozenset(),
    ) -> tuple[str, float]:
        """The choice made on a two-card hand ``hand`` (removing ``code``) and its value.

        ``extra`` adds choices valued by the caller (split); they come back unvalued (nan).
        """
        hard = sum((v + 1) * n for v, n in enumerate(hand))
        ace = hand[0] > 0
        soft = ace and hard <= 11
        total = hard + 10 if soft else hard
        allowed = self.allowed(total, soft, split=split, aces=aces) | extra
        if self.policy is not None:
            move = self.policy.two(self.up, hand, total, soft, allowed, split)
            if move not in allowed:
                raise ValueError(f"the strategy chose {move!r}, not allowed here: {allowed}")
            if move in extra:
                return move, float("nan")
            return move, self.option(move, code, cards, hard, ace)
        best, best_value = STAND, -9.0
        for move in sorted(allowed - extra):
            value = self.option(move, code, cards, hard, ace)
            if value > best_value:
                best, best_value = move, value
        return best, best_value

    # -- splits ----------------------------------------------------------------------------------

    def split(self, pair: int) -> float:
        """Split a pair of value ``pair``: the expected sum over the split hands.

        Hands form as pair cards are drawn (resplit whenever allowed); each hand is
        played with the ``h`` pair cards that began hands so far removed, ``h`` counted
        exactly along the way; cards other split hands drew are not removed.
        """
        game, shoe, left = self.game, self.shoe, self.left
        aces = pair == 0
        limit = game.split_limit_aces if aces else game.max_hands
        if game.split_by_rank and pair == 9:
            pair_cards = 4 * game.decks - (0.25 if self.up == 9 else 0.0)
        else:
            pair_cards = float(shoe[pair])

        def hand_value(hands: int, card: int) -> float:
            hand = [0] * 10
            hand[pair] += 1
            hand[card] += 1
            code = hands * POW[pair] + POW[card]
            return self.two_cards(code, hands + 1, tuple(hand), split=True, aces=aces)[1]

        def dealt(hands: int) -> tuple[float, float]:
            """The value of one hand's second card (unweighted by hands) and P(pair card)."""
            if hands > shoe[pair]:
                return 0.0, 0.0  # not so many pair cards in the shoe
            inverse = 1.0 / (left - hands)
            total = 0.0
            for card in range(10):
                count = shoe[card] - (hands if card == pair else 0)
                if count > 0:
                    total += count * inverse * hand_value(hands, card)
            return total, max(pair_cards - hands, 0.0) * inverse

        closing, _ = dealt(limit)
        open_value: dict[int, tuple[float, float]] = {}
        for hands in range(2, limit):
            total, p_pair = dealt(hands)
            total -= p_pair * hand_value(hands, pair) if p_pair else 0.0
            open_value[hands] = (total, p_pair)
        memo: dict[tuple[int, int], float] = {}

        def rest(hands: int, waiting: int) -> float:
            if waiting == 0:
                return 0.0
            if hands >= limit:
                return waiting * closing
            key = (hands, waiting)
            if key not in memo:
                value, p_pair = open_value[hands]
                memo[key] = (
                    p_pair * rest(hands + 1, waiting + 1)
                    + value
                    + (1.0 - p_pair) * rest(hands, waiting - 1)
                )
            return memo[key]

        return rest(2, 2)

    def may_split(self, pair: int) -> bool:
        game = self.game
        return (game.split_limit_aces if pair == 0 else game.max_hands) >= 2

    # -- the round -------------------------------------------------------------------------------

    def initial(self, first: int, second: int, *, same_rank: bool = True) -> tuple[str, float]:
        """The choice on the first two cards (no blackjack) and its value, dealer blackjack
        excluded (the caller adds it)."""
        hand = [0] * 10
        hand[first] += 1
        hand[second] += 1
        code = POW[first] + POW[second]
        pair = first == second and same_rank and self.may_split(first)
        move, value = self.two_cards(
            code,
            2,
            tuple(hand),
            split=False,
            aces=False,
            extra=frozenset({SPLIT}) if pair else frozenset(),
        )
        if pair and self.policy is None:
            split_value = self.split(first)
            if split_value > value:
                return SPLIT, split_value
        elif move == SPLIT:
            return SPLIT, self.split(first)
        return move, value

    def same_rank_share(self) -> float:
        """Of two ten-value cards dealt after this up card, the share of one rank."""
        decks, tens = self.game.decks, self.shoe[9]
        per = 4 * decks
        same = (per - 1) * (per - 2) + 3 * per * (per - 1) if self.up == 9 else 4 * per * (per - 1)
        return same / (tens * (tens - 1))

    def round_value(self) -> float:
        """The expected value of a round given this up card, per initial wager."""
        shoe, left, game = self.shoe, self.left, self.game
        total = 0.0
        for first in range(10):
            for second in range(first, 10):
                weight = shoe[first] * (shoe[second] - (first == second)) / (left * (left - 1))
                if weight <= 0:
                    continue
                weight *= 1 if first == second else 2
                code = POW[first] + POW[second]
                no_bj = self.no_blackjack(code, 2)
                if {first, second} == {0, 9}:
                    if self.measure is None:
                        total += weight * float(game.blackjack_pays) * no_bj
                    else:  # a natural wins, or pushes a dealer blackjack
                        total += (
                            weight * {"win": no_bj, "push": 1.0 - no_bj, "loss": 0.0}[self.measure]
                        )
                    continue
                base = -(1.0 - no_bj) if self.conditioned else 0.0
                if self.measure is not None:
                    base = -base if self.measure == "loss" else 0.0
                if first == second == 9 and game.split_by_rank:
                    share = self.same_rank_share()
                    value = (
                        share * self.initial(9, 9)[1]
                        + (1 - share) * self.initial(9, 9, same_rank=False)[1]
                    )
                else:
                    value = self.initial(first, second)[1]
                total += weight * (base + value)
        return total


def up_card_weights(game: Game) -> list[float]:
    """The chance of each up card from a full shoe."""
    shoe = shoe_counts(game)
    return [n / sum(shoe) for n in shoe]


def expected_value(
    game: Game, policy: Policy | None = None, measure: str | None = None
) -> tuple[float, list[float]]:
    """The expected value of a round per initial wager, and per up card; ``policy`` plays
    (None: every decision the best for the cards). With a ``measure`` (:data:`MEASURES`,
    a policy needed): the expected number of hands whose main wager wins, pushes or loses."""
    weights = up_card_weights(game)
    by_up = [
        UpCard(game, up, policy, measure).round_value() if weights[up] else 0.0 for up in range(10)
    ]
    return sum(w * v for w, v in zip(weights, by_up, strict=True)), by_up
