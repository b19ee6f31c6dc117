"""The dealer's final totals for many player hands at once, by exact recursion over the shoe.

The dealer's hand after the up card is a multiset of drawn cards; whether the
dealer draws again depends only on its total, and the chance of each next card
only on what is left of the shoe. So the dealer's play is a walk over those
multisets, level by level (cards drawn), each carrying the probability of
having reached it, for every player hand at once: a NumPy vector with one
entry per set of cards the player's hands removed from the shoe.

Card values are indexed 0 (ace) to 9 (ten-value). Outcomes (columns):
:data:`D16` a total of 16 that ends the game (Double Up rule 10), :data:`D17`
to ``D17 + 4`` totals 17-21, :data:`BUST`, :data:`BJ` a dealer blackjack.

With a peek the hole card is conditioned on no blackjack *without*
renormalising: a row sums to the probability that the dealer has no
blackjack. Multiplied through the player's recursion this gives the
expected value on the no-blackjack branch exactly (the hole card is
exchangeable with the cards the player draws, who never sees it).
"""

from __future__ import annotations

import numpy as np

D16, D17, BUST, BJ = 0, 1, 6, 7
OUTCOMES = 8
OUTCOME_NAMES = ("16", "17", "18", "19", "20", "21", "bust", "blackjack")


def _status(hard: int, ace: bool, cards: int, hit_soft_17: bool, stop_on_16: bool) -> int:
    """-1 while the dealer must draw, else the outcome column."""
    if cards < 2:
        return -1
    soft = ace and hard <= 11
    total = hard + 10 if soft else hard
    if total > 21:
        return BUST
    if total == 16 and stop_on_16:
        return D16
    if total < 17 or (total == 17 and soft and hit_soft_17):
        return -1
    return D17 + total - 17


def dealer_outcomes(
    shoe: tuple[int, ...],
    up: int,
    removals: np.ndarray,
    *,
    hit_soft_17: bool,
    stop_on_16: bool,
    peek: bool,
) -> np.ndarray:
    """Probabilities (``len(removals)`` x :data:`OUTCOMES`) of the dealer's final hand.

    ``shoe`` counts each value left after the up card (index ``up``) came out;
    ``removals`` (K x 10 integers) are the cards the player's hands took out.
    With ``peek`` the blackjack branch is left out (not renormalised).
    """
    removals = np.asarray(removals, dtype=np.int64)
    count = len(removals)
    avail = (np.asarray(shoe, dtype=np.int64)[None, :] - removals).T.astype(np.float64)
    left = avail.sum(axis=0)
    out = np.zeros((OUTCOMES, count))
    level: dict[tuple[int, ...], tuple[np.ndarray, int, bool]] = {
        (0,) * 10: (np.ones(count), up + 1, up == 0)
    }
    drawn = 0
    while level:
        inverse = 1.0 / np.maximum(left - drawn, 1.0)  # a row this deep has no weight left
        following: dict[tuple[int, ...], tuple[np.ndarray, int, bool]] = {}
        for key, (prob, hard, ace) in level.items():
            status = _status(hard, ace, drawn + 1, hit_soft_17, stop_on_16)
            if status >= 0:
                out[status] += prob
                continue
            weighted = prob * inverse
            for value in range(10):
                column = avail[value]
                if key[value]:
                    column = np.maximum(column - key[value], 0.0)
                p = weighted * column
                if drawn == 0 and {up, value} == {0, 9}:
                    if not peek:
                        out[BJ] += p
                    continue
                child = (*key[:value], key[value] + 1, *key[value + 1 :])
                found = following.get(child)
                if found is None:
                    following[child] = (p, hard + value + 1, ace or value == 0)
                else:
                    found[0].__iadd__(p)
        level = following
        drawn += 1
    return out.T.copy()
