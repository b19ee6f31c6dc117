"""Paytable entries and exact payout arithmetic in integer cents.

A paytable line is one of three kinds, parsed from profile text:

- :class:`Odds`: ``"3 to 2"`` or ``"3:2"``: wins ``stake * 3 // 2`` and the stake comes back;
- :class:`FixedAward`: ``"$2,500"``: a fixed amount (Blazing 7's);
- :class:`MeterShare`: ``"10% of meter"``: a share of a progressive meter, paid by the
  jackpot controller, so its amount is not known at the table.

Payouts that fall between cents are rounded down (breakage to the house); with
whole-dollar wagers no 3:2, 6:5, 2:1 or N:1 payout has breakage.

>>> parse_pay("3 to 2").amount(1000), str(parse_pay("6:5"))
(1500, '6 to 5')
>>> parse_pay("$2,500"), str(parse_pay("100% of meter"))
(FixedAward(cents=250000), '100% of meter')
>>> format_cents(12500), format_cents(-250)
('$125.00', '-$2.50')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.errors import TableControllerError


class PayError(TableControllerError, ValueError):
    """Paytable text that is not ``"N to M"``, ``"$X"`` or ``"P% of meter"``."""


@dataclass(frozen=True, slots=True)
class Odds:
    """Pays ``win`` for every ``per`` staked; the stake is returned."""

    win: int
    per: int = 1

    def amount(self, stake: int) -> int:
        """Winnings in cents for ``stake`` cents, rounded down to the cent."""
        return stake * self.win // self.per

    @property
    def ratio(self) -> Fraction:
        return Fraction(self.win, self.per)

    def __str__(self) -> str:
        return f"{self.win:,} to {self.per}"


@dataclass(frozen=True, slots=True)
class FixedAward:
    """A fixed award of ``cents``, whatever the (fixed) stake."""

    cents: int

    def __str__(self) -> str:
        return format_cents(self.cents, whole=True)


@dataclass(frozen=True, slots=True)
class MeterShare:
    """``percent`` of a progressive meter (the jackpot controller knows the amount)."""

    percent: Fraction

    def __str__(self) -> str:
        pct = self.percent
        text = str(pct.numerator) if pct.denominator == 1 else str(float(pct))
        return f"{text}% of meter"


Pay = Odds | FixedAward | MeterShare

_NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+)"  # 2500 or 2,500; never a stray comma
_ODDS = re.compile(rf"^\s*{_NUMBER}\s*(?:to|:)\s*(\d+)\s*$", re.IGNORECASE)
_FIXED = re.compile(rf"^\s*\$\s*{_NUMBER}(?:\.(\d\d))?\s*$")
_METER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*of\s+meter\s*$", re.IGNORECASE)


def parse_pay(text: str) -> Pay:
    """Parse ``"25 to 1"``, ``"3:2"``, ``"$2,500"`` or ``"10% of meter"``."""
    if not isinstance(text, str):
        raise PayError(f"a paytable entry must be text like '25 to 1', got {text!r}")
    if match := _ODDS.match(text):
        win, per = int(match[1].replace(",", "")), int(match[2])
        if per < 1 or win < 1:
            raise PayError(f"odds {text!r} must be positive whole numbers, e.g. '3 to 2'")
        return Odds(win, per)
    if match := _FIXED.match(text):
        cents = int(match[1].replace(",", "")) * 100 + int(match[2] or 0)
        if cents < 1:
            raise PayError(f"a fixed award {text!r} must be more than $0")
        return FixedAward(cents)
    if match := _METER.match(text):
        percent = Fraction(match[1])
        if not 0 < percent <= 100:
            raise PayError(f"a meter share {text!r} must be above 0% and at most 100%")
        return MeterShare(percent)
    raise PayError(
        f"cannot read paytable entry {text!r}: write odds as '25 to 1' (or '25:1'), "
        "a fixed award as '$2,500', or a progressive tier as '10% of meter'"
    )


def format_cents(cents: int, *, whole: bool = False) -> str:
    """``12500`` -> ``'$125.00'``; with ``whole`` and no cents, ``'$125'``."""
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(cents), 100)
    if whole and rest == 0:
        return f"{sign}${dollars:,}"
    return f"{sign}${dollars:,}.{rest:02d}"


_MONEY = re.compile(r"^\s*\$?\s*(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s*$")


def parse_money(text: Any) -> Fraction:
    """An exact amount in cents, fractions of a cent allowed (a jackpot contribution):
    ``"$0.75"`` -> 75, ``"$0.075"`` -> 15/2; an int is taken as cents.

    >>> parse_money("$1,000.075")
    Fraction(200015, 2)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        return Fraction(text)
    if isinstance(text, str) and (match := _MONEY.match(text)):
        cents = Fraction(int(match[1].replace(",", ""))) * 100
        if match[2]:
            cents += Fraction(int(match[2]) * 100, 10 ** len(match[2]))
        return cents
    raise ValueError(f"cannot read amount {text!r}: write dollars like '$5' or '$0.75'")


def parse_cents(text: str | int) -> int:
    """``"$5"``, ``"$5.50"`` or ``"5.50"`` -> cents; an int is taken as cents."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if isinstance(text, str):
        match = re.fullmatch(rf"\s*\$?\s*{_NUMBER}(?:\.(\d\d))?\s*", text)
        if match:
            return int(match[1].replace(",", "")) * 100 + int(match[2] or 0)
    raise PayError(f"cannot read amount {text!r}: write dollars like '$5' or '$12.50'")
