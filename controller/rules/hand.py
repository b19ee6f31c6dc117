"""Hand totals, blackjack, and how the dealer plays.

A hand is a sequence of :class:`~controller.rules.cards.Card`. The *total* is
the best count not over 21 when an ace can count eleven (a *soft* total),
else the hard count.

>>> from controller.rules.cards import parse_cards
>>> hand_total(parse_cards("AS,6D"))
HandTotal(total=17, soft=True)
>>> hand_total(parse_cards("AS,6D,10C"))
HandTotal(total=17, soft=False)
>>> is_blackjack(parse_cards("AS,KD")), is_blackjack(parse_cards("AS,KD"), from_split=True)
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.rules.cards import Card


@dataclass(frozen=True, slots=True)
class HandTotal:
    """A hand's count: ``total`` in points, ``soft`` when an ace counts eleven in it."""

    total: int
    soft: bool

    @property
    def is_bust(self) -> bool:
        """Over 21 (a "break")."""
        return self.total > 21


_HARD = tuple(HandTotal(points, False) for points in range(64))
_SOFT = tuple(HandTotal(points + 10, True) for points in range(12))
# Totals are immutable values: hand_total hands out these shared instances (equal to new
# ones) because building a frozen dataclass costs more than counting the cards.


_COUNTED: dict[tuple[Card, ...], HandTotal] = {}
_COUNTED_MAX = 1 << 15
# Counts remembered by the hand's cards (interned, so hashed and compared by identity in C):
# bench/replay_rounds.py generating, checking and replaying 2,000 rounds asks 247,600 counts of
# 13,280 hands. Process-wide; it stops growing when full (then counts afresh). A total is a
# function of the cards alone, so what it answers never depends on it.


def hand_total(cards: Sequence[Card]) -> HandTotal:
    """The best total of ``cards`` (aces count 11 where that stays at or under 21)."""
    key = tuple(cards)
    try:
        return _COUNTED[key]
    except KeyError:
        pass
    except TypeError:  # a card that cannot be hashed: counted, not remembered
        return _count(cards)
    count = _count(key)
    if len(_COUNTED) < _COUNTED_MAX:
        _COUNTED[key] = count
    return count


def _count(cards: Sequence[Card]) -> HandTotal:
    """``hand_total`` counted afresh."""
    hard = 0
    has_ace = False
    for card in cards:
        value = card.points  # = RANK_POINTS[card.rank], in the card's slot
        hard += value
        if value == 1:
            has_ace = True
    if has_ace and hard <= 11:
        return _SOFT[hard]
    return _HARD[hard] if hard < 64 else HandTotal(hard, False)


def is_blackjack(cards: Sequence[Card], *, from_split: bool = False) -> bool:
    """A natural: an ace and a ten-value card as the first two cards of an unsplit hand.

    A split ace plus a ten is 21, not blackjack (``from_split=True``).
    """
    if from_split or len(cards) != 2:
        return False
    first, second = cards
    a, b = first.points, second.points  # = RANK_POINTS[card.rank]
    return (a == 1 and b == 10) or (a == 10 and b == 1)  # no sets to build: a hot path


def is_pair(first: Card, second: Card, *, match: str = "value") -> bool:
    """Whether two cards may be split: ``match="value"`` (any two ten-value cards
    pair) or ``"rank"`` (a jack pairs only with a jack)."""
    if match == "rank":
        return first.rank == second.rank
    return first.value == second.value


def dealer_must_hit(cards: Sequence[Card], *, hit_soft_17: bool, stop_on_16: bool = False) -> bool:
    """Whether the dealer draws another card to ``cards``.

    The dealer draws to 16 and stands on 17 or more; with ``hit_soft_17`` a
    soft 17 draws too. A natural never draws. With ``stop_on_16`` (Double Up
    Blackjack rule 10) a soft or hard total of 16 ends the dealer's hand.
    """
    if len(cards) < 2:
        return True
    if is_blackjack(cards):
        return False
    count = hand_total(cards)
    if count.total == 16 and stop_on_16:
        return False
    if count.total < 17:
        return True
    return count.total == 17 and count.soft and hit_soft_17
