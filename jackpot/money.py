"""Money as text: exact cents and dollars for reports and messages, never through a float.

>>> cents_text(Fraction(75, 2)), dollars_text(Fraction(75, 2))
('37.5', '0.375')
>>> cents_text(Fraction(50, 3)), dollars_text(Fraction(50, 3))
('50/3', '1/6')
>>> dollars(Fraction(100_000_01, 1)), dollars(Fraction(-5, 2))
('$100,000.01', '-$0.02 and 1/2 cent')
>>> percent(Fraction(3, 200))
'1.5%'
"""

from __future__ import annotations

from fractions import Fraction


def exact_decimal(value: Fraction) -> str:
    """``value`` as a decimal if it terminates (``37.5``), else ``num/den``."""
    value = Fraction(value)
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    places = max(twos, fives)
    if places == 0:
        return str(value.numerator)
    scaled = abs(value.numerator) * (10**places // value.denominator)
    sign = "-" if value < 0 else ""
    digits = str(scaled).rjust(places + 1, "0")
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def cents_text(cents: Fraction | int) -> str:
    """Exact cents as text (``7500``, ``37.5``, ``50/3``)."""
    return exact_decimal(Fraction(cents))


def dollars_text(cents: Fraction | int) -> str:
    """Exact dollars as text for a report column (``75.00``, ``0.375``)."""
    value = Fraction(cents) / 100
    text = exact_decimal(value)
    if "/" in text:
        return text
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac.ljust(2, '0')}"


def dollars(cents: Fraction | int) -> str:
    """``$10,000.00`` for 1000000 cents, as a person reads it; a fraction of a cent is named."""
    value = Fraction(cents)
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole_cents = value.numerator // value.denominator
    frac = value - whole_cents
    text = f"{sign}${whole_cents // 100:,}.{whole_cents % 100:02d}"
    return text + (f" and {frac} cent" if frac else "")


def percent(rate: Fraction) -> str:
    """A rate of the stake as a percentage (``1.5%``), exact."""
    return f"{exact_decimal(Fraction(rate) * 100)}%"
