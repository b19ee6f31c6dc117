"""Jackpot pools: exact meter arithmetic (and, re-exported, the config).

Pure: no clock, no randomness (the Must-Hit-By trigger is drawn by a function the caller
passes in). Money is integer cents; a meter and a contribution are exact
:class:`~fractions.Fraction` s of a cent. The config (``config/jackpot.example.toml``) is
read by :mod:`jackpot.config_read` into :mod:`jackpot.config`; their names are importable
from here as before.

>>> parse_money("$0.75")
Fraction(75, 1)
>>> split_meter(Fraction(2501, 2))
(1250, Fraction(1, 2))
>>> share_award(Fraction(100_001, 3), Fraction(10))
3333
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.link.messages import VERSION
from controller.rules.pays import parse_money
from jackpot.config import (
    DEFAULT_SPOTS,
    HaConfig,
    JackpotConfig,
    JackpotConfigError,
    JackpotConfigErrors,
    MysteryPool,
    Pool,
    ProgressivePool,
    Property,
    TableEntry,
)
from jackpot.config_read import load_config, parse_config, parse_rate, parse_share

__all__ = [
    "DEFAULT_SPOTS",
    "HaConfig",
    "JackpotConfig",
    "JackpotConfigError",
    "JackpotConfigErrors",
    "MeterReading",
    "MysteryPool",
    "MysteryStep",
    "Pool",
    "ProgressivePool",
    "Property",
    "TableEntry",
    "contribution",
    "draw_trigger",
    "load_config",
    "mystery_ceiling_problem",
    "mystery_step",
    "parse_config",
    "parse_money",
    "parse_rate",
    "parse_share",
    "share_award",
    "split_meter",
]


# -- meter arithmetic ------------------------------------------------------------------------


#: :func:`contribution`'s results by (the rate's numerator and denominator, the stake):
#: a table's stakes are a few amounts, and ``Fraction * int`` is Python (2.4 us; the lookup
#: 0.2). Kept up to :data:`_CONTRIBUTIONS_MOST` entries; a Fraction is immutable.
_CONTRIBUTIONS: dict[tuple[int, int, int], Fraction] = {}
_CONTRIBUTIONS_MOST = 4096


def contribution(pool: Pool, stake: int) -> Fraction:
    """What ``stake`` cents of wager add to ``pool``, exactly (``pool.rate * stake``)."""
    rate = pool.rate
    key = (rate.numerator, rate.denominator, stake)
    added = _CONTRIBUTIONS.get(key)
    if added is None or type(stake) is not int:
        added = rate * stake
        if type(stake) is int and len(_CONTRIBUTIONS) < _CONTRIBUTIONS_MOST:
            _CONTRIBUTIONS[key] = added
    return added


def split_meter(meter: Fraction) -> tuple[int, Fraction]:
    """Whole cents and the fraction of a cent left."""
    whole = math.floor(meter)
    return whole, meter - whole


def share_award(meter: Fraction, percent: Fraction) -> int:
    """``percent`` of the meter, floored to whole cents (the rest stays on the meter)."""
    return math.floor(meter * percent / 100)


@dataclass(frozen=True)
class MysteryStep:
    """One eligible contribution on the Must-Hit-By meter.

    Hit: the meter reached the trigger; ``award`` is the trigger (the meter is capped there,
    never above ``must_hit_by``) and ``meter`` is the seed plus the contribution's excess.
    """

    meter: Fraction
    hit: bool
    award: int = 0
    excess: Fraction = Fraction(0)

    def __repr__(self) -> str:  # a hit reveals nothing before it happens
        return f"MysteryStep(hit={self.hit})"


def mystery_ceiling_problem(pool: MysteryPool, added: Fraction) -> str | None:
    """Why a contribution of ``added`` could leave the meter at or past ``must_hit_by``, or
    None.

    Decided without the trigger, so a refusal tells nothing about the secret. Without a hit
    the meter stays below the trigger, at most ``must_hit_by``; with one it restarts at the
    seed plus the excess over the trigger, which is less than ``added`` (the meter was below
    the trigger): so ``seed + added <= must_hit_by`` keeps it below. A contribution larger
    than that is too large for the pool's range, whatever the trigger.

    >>> pool = MysteryPool("m", Fraction(1, 2), 100, 100, 200, ("b7",))
    >>> mystery_ceiling_problem(pool, Fraction(100)) is None
    True
    >>> mystery_ceiling_problem(pool, Fraction(201, 2))
    'a contribution of 201/2 cents could restart the meter after a hit at must_hit_by or above'
    """
    # pool.seed + added <= pool.must_hit_by, in integers (the denominator is positive)
    if added.numerator <= (pool.must_hit_by - pool.seed) * added.denominator:
        return None
    return (
        f"a contribution of {added} cents could restart the meter after a hit at must_hit_by "
        "or above"
    )


def mystery_step(pool: MysteryPool, meter: Fraction, added: Fraction, trigger: int) -> MysteryStep:
    """Add ``added`` to the mystery meter whose hidden trigger is ``trigger`` cents.
    ValueError if the meter would reach ``must_hit_by`` (the ledger refuses such a
    contribution first: :func:`mystery_ceiling_problem`)."""
    reached = meter + added
    # the comparisons with whole cents in integers (a Fraction's denominator is positive)
    if reached.numerator < trigger * reached.denominator:
        step = MysteryStep(reached, False)
    else:
        excess = reached - trigger
        step = MysteryStep(pool.seed + excess, True, trigger, excess)
    if step.meter.numerator >= pool.must_hit_by * step.meter.denominator:
        raise ValueError(f"the {pool.name} meter would reach must_hit_by")
    return step


def draw_trigger(pool: MysteryPool, randbelow: Callable[[int], int]) -> int:
    """A trigger uniform over [must_hit_from, must_hit_by] in whole cents."""
    return pool.must_hit_from + randbelow(pool.must_hit_by - pool.must_hit_from + 1)


@dataclass(frozen=True)
class MeterReading:
    """What a sign shows: whole cents, the exact fraction left, a sequence per pool."""

    pool: str
    amount: int
    fraction: Fraction
    seq: int
    must_hit_by: int | None = None

    def message(self, sent_t: int) -> dict[str, Any]:
        """The retained ``meter`` message (controller/link/schemas/meter.json)."""
        out = {
            "v": VERSION,
            "pool": self.pool,
            "amount": self.amount,
            "fraction": f"{self.fraction.numerator}/{self.fraction.denominator}",
            "seq": self.seq,
            "sent_t": sent_t,
        }
        if self.must_hit_by is not None:
            out["must_hit_by"] = self.must_hit_by
        return out
