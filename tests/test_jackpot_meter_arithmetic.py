"""The meter arithmetic's shortcuts (jackpot/pools.py) give exactly what the plain Fractions give.

Issue 32's sixth round: :func:`~jackpot.pools.contribution` keeps its results by rate and
stake, and the Must-Hit-By checks compare whole cents with a Fraction in integers
(``n < t * d`` for ``n/d < t``: ``d`` is positive). Held here to the code they replaced
(copied below as it was) over random rates, stakes, seeds, meters and triggers: the same
value and type, the same verdict, the same words, the same ValueError.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpot import pools
from jackpot.config import MysteryPool, ProgressivePool
from jackpot.pools import MysteryStep, contribution, mystery_ceiling_problem, mystery_step


def old_contribution(pool, stake):
    return pool.rate * stake


def old_ceiling(pool, added):
    if pool.seed + added <= pool.must_hit_by:
        return None
    return (
        f"a contribution of {added} cents could restart the meter after a hit at must_hit_by "
        "or above"
    )


def old_step(pool, meter, added, trigger):
    reached = meter + added
    if reached < trigger:
        step = MysteryStep(reached, False)
    else:
        excess = reached - trigger
        step = MysteryStep(pool.seed + excess, True, trigger, excess)
    if step.meter >= pool.must_hit_by:
        raise ValueError(f"the {pool.name} meter would reach must_hit_by")
    return step


rates = st.fractions(min_value=0, max_value=2, max_denominator=10_000)
cents = st.integers(min_value=0, max_value=2**53 - 1)
small = st.integers(min_value=0, max_value=10_000_000)


def same_fraction(a, b) -> bool:
    return type(a) is type(b) and a == b and str(a) == str(b)


@settings(max_examples=400, deadline=None)
@given(rate=rates, stakes=st.lists(cents | small, min_size=1, max_size=8))
def test_a_kept_contribution_is_the_product(rate, stakes) -> None:
    pool = ProgressivePool("b7", rate, 100, 100, (), ("blazing_7s",))
    for stake in stakes + stakes:  # the second time from what was kept
        assert same_fraction(contribution(pool, stake), old_contribution(pool, stake))


def test_a_bool_stake_is_not_kept_as_an_int() -> None:
    pool = ProgressivePool("b7", Fraction(3, 20), 100, 100, (), ("blazing_7s",))
    assert same_fraction(contribution(pool, 20), Fraction(3))
    assert contribution(pool, True) == Fraction(3, 20)


def test_what_is_kept_is_bounded(monkeypatch) -> None:
    monkeypatch.setattr(pools, "_CONTRIBUTIONS", {})
    monkeypatch.setattr(pools, "_CONTRIBUTIONS_MOST", 3)
    pool = ProgressivePool("b7", Fraction(1, 7), 100, 100, (), ("blazing_7s",))
    for stake in range(10):
        assert same_fraction(contribution(pool, stake), Fraction(stake, 7))
    assert len(pools._CONTRIBUTIONS) == 3


def mystery_pool(rate: Fraction, seed: int, span: int, by: int) -> MysteryPool:
    return MysteryPool("m", rate, seed, seed + span, seed + span + by, ("blazing_7s",))


mystery_pools = st.builds(mystery_pool, rates, small, small, small)
meters = st.fractions(min_value=0, max_value=30_000_000, max_denominator=100_000) | small


@settings(max_examples=600, deadline=None)
@given(pool=mystery_pools, added=st.fractions(min_value=0, max_value=30_000_000) | small)
def test_the_ceiling_check_is_the_fractions(pool, added) -> None:
    assert mystery_ceiling_problem(pool, added) == old_ceiling(pool, added)


def outcome(step, *args):
    try:
        got = step(*args)
    except ValueError as exc:
        return "refused", str(exc)
    return "step", (got.hit, got.award, got.meter, type(got.meter), got.excess, str(got.meter))


@settings(max_examples=1000, deadline=None)
@given(
    pool=mystery_pools,
    meter=meters,
    added=st.fractions(min_value=0, max_value=1000, max_denominator=10_000) | small,
    trigger=small,
    near=st.booleans(),
)
def test_a_mystery_step_is_the_fractions(pool, meter, added, trigger, near) -> None:
    if near:  # the edges: the meter reaching the trigger or must_hit_by exactly
        trigger = pool.must_hit_from
        meter = Fraction(trigger) - added
    assert outcome(mystery_step, pool, meter, added, trigger) == outcome(
        old_step, pool, meter, added, trigger
    )


@pytest.mark.parametrize("offset", [Fraction(-1, 3), Fraction(0), Fraction(1, 3)])
def test_the_edges_exactly(offset) -> None:
    pool = MysteryPool("m", Fraction(1, 3), 100, 500, 1000, ("blazing_7s",))
    for trigger in (500, 999, 1000):
        for added in (Fraction(1, 3), Fraction(2, 3), Fraction(1)):
            meter = trigger - added + offset
            assert outcome(mystery_step, pool, meter, added, trigger) == outcome(
                old_step, pool, meter, added, trigger
            )
    for added in (Fraction(900) + offset, Fraction(899) + offset, Fraction(2700, 3)):
        assert mystery_ceiling_problem(pool, added) == old_ceiling(pool, added)
