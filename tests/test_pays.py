"""Paytable text and exact payout arithmetic in integer cents."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import TableControllerError
from controller.rules.pays import (
    FixedAward,
    MeterShare,
    Odds,
    PayError,
    format_cents,
    parse_cents,
    parse_pay,
)


@pytest.mark.parametrize(
    ("text", "pay"),
    [
        ("3 to 2", Odds(3, 2)),  # seed 000: "pay the Blackjack odds of 3 to 2"
        ("3:2", Odds(3, 2)),  # seed 003 rule 1: "paid 3:2 or 6:5"
        ("6:5", Odds(6, 5)),
        ("2 to 1", Odds(2, 1)),  # seed 000: "paid to odds of 2 to 1"
        ("1,000 to 1", Odds(1000, 1)),  # seed 001: "1000 to 1"
        ("1000 to 1", Odds(1000, 1)),
        ("50 to1", Odds(50, 1)),  # seed 003 paytable, as printed: "50 to1"
        ("  25 TO 1 ", Odds(25, 1)),
        ("$2,500", FixedAward(250_000)),  # seed 000: "Three 7's - Same Color $2,500"
        ("$1,000", FixedAward(100_000)),
        ("$125", FixedAward(12_500)),
        ("$10", FixedAward(1_000)),
        ("$ 12.50", FixedAward(1_250)),
        ("100% of meter", MeterShare(Fraction(100))),  # seed 000: "100% of meter"
        ("10% of meter", MeterShare(Fraction(10))),
        ("12.5% OF METER", MeterShare(Fraction(25, 2))),
    ],
)
def test_parse_pay(text, pay):
    assert parse_pay(text) == pay


@pytest.mark.parametrize(
    ("pay", "text"),
    [
        (Odds(3, 2), "3 to 2"),
        (Odds(1000, 1), "1,000 to 1"),
        (FixedAward(250_000), "$2,500"),
        (FixedAward(1_250), "$12.50"),
        (MeterShare(Fraction(100)), "100% of meter"),
        (MeterShare(Fraction(25, 2)), "12.5% of meter"),
    ],
)
def test_pay_formatting(pay, text):
    assert str(pay) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "3-2",
        "three to two",
        "0 to 1",
        "3 to 0",
        "-3 to 2",
        "$0",
        "$",
        "$2.5",
        "0% of meter",
        "101% of meter",
        "10%",
        "even money",
    ],
)
def test_unreadable_pay_raises_pay_error_naming_the_text(text):
    with pytest.raises(PayError) as info:
        parse_pay(text)
    assert repr(text) in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TableControllerError)


@pytest.mark.parametrize("text", [", to 1", "$,", ",,, to 2"])
def test_comma_only_numbers_raise_pay_error(text):
    with pytest.raises(PayError):
        parse_pay(text)


def test_non_text_pay_raises_pay_error():
    with pytest.raises(PayError):
        parse_pay(25)


@pytest.mark.parametrize(
    ("odds", "stake", "winnings", "rule"),
    [
        ("3 to 2", 500, 750, "3:2 on $5 pays $7.50"),
        ("3 to 2", 1000, 1500, "3:2 on $10 pays $15"),
        ("6 to 5", 2500, 3000, "6:5 on $25 pays $30.00"),
        ("6 to 5", 1000, 1200, "6:5 on $10 pays $12"),
        ("2 to 1", 250, 500, "insurance of $2.50 pays $5"),
        ("1 to 1", 500, 500, "even money"),
        ("1000 to 1", 100, 100_000, "Lucky Ladies top line on $1"),
        ("3 to 2", 501, 751, "breakage to the house: $7.515 rounds down to $7.51"),
        ("6 to 5", 501, 601, "breakage: $6.012 rounds down to $6.01"),
    ],
)
def test_odds_amount_in_exact_cents(odds, stake, winnings, rule):
    assert parse_pay(odds).amount(stake) == winnings, rule


@given(st.integers(1, 1000), st.integers(1, 10), st.integers(0, 10**8))
def test_odds_amount_is_an_int_never_above_the_exact_amount(win, per, stake):
    amount = Odds(win, per).amount(stake)
    assert type(amount) is int
    exact = Fraction(stake * win, per)
    assert exact - 1 < amount <= exact  # rounded down, never by a whole cent


@given(st.integers(1, 10**6), st.sampled_from(["3 to 2", "6 to 5", "2 to 1", "25 to 1"]))
def test_whole_dollar_wagers_have_no_breakage(dollars, odds):
    """README: "whole-dollar wagers have no breakage at 3:2, 6:5, 2:1 or N:1"."""
    pay = parse_pay(odds)
    assert Fraction(pay.amount(dollars * 100)) == pay.ratio * dollars * 100


plausible_pays = st.one_of(
    st.builds(Odds, st.integers(1, 100_000), st.integers(1, 100)),
    st.builds(FixedAward, st.integers(1, 10**9)),
    st.builds(MeterShare, st.integers(1, 10_000).map(lambda n: Fraction(n, 100))),
)


@given(plausible_pays)
def test_pay_text_round_trips(pay):
    assert parse_pay(str(pay)) == pay


@pytest.mark.parametrize(
    ("cents", "whole", "text"),
    [
        (750, False, "$7.50"),
        (3000, False, "$30.00"),
        (12500, False, "$125.00"),
        (250_000, True, "$2,500"),
        (250_050, True, "$2,500.50"),
        (5, False, "$0.05"),
        (0, False, "$0.00"),
        (-250, False, "-$2.50"),
        (123_456_789, False, "$1,234,567.89"),
    ],
)
def test_format_cents(cents, whole, text):
    assert format_cents(cents, whole=whole) == text


@given(st.integers(0, 10**10))
def test_format_cents_round_trips_through_parse_cents(cents):
    assert parse_cents(format_cents(cents)) == cents
    assert parse_cents(format_cents(cents, whole=True)) == cents


@pytest.mark.parametrize(
    ("text", "cents"), [("$5", 500), ("$5.50", 550), ("5.50", 550), ("$2,500", 250_000), (700, 700)]
)
def test_parse_cents(text, cents):
    assert parse_cents(text) == cents


@pytest.mark.parametrize("text", ["five", "$5.5", "$5.505", 5.0, True, None, "-$5"])
def test_parse_cents_refuses_what_is_not_an_amount(text):
    with pytest.raises(PayError, match="cannot read amount"):
        parse_cents(text)
