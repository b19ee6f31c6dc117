"""Cards and shoes: the text a dealer or reader writes, and what a shoe holds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import CardError, TableControllerError
from controller.rules.cards import (
    ALL_CARDS,
    Card,
    Rank,
    ShoeComposition,
    Suit,
    format_cards,
    parse_card,
    parse_cards,
)

# Seed 000: "The Jack, Queen and King count ten. The Ace counts as one or eleven. All other
# cards are counted at their face value."


@pytest.mark.parametrize(
    ("text", "rank", "suit"),
    [
        ("QH", Rank.QUEEN, Suit.HEARTS),
        ("10D", Rank.TEN, Suit.DIAMONDS),
        ("TD", Rank.TEN, Suit.DIAMONDS),
        ("AS", Rank.ACE, Suit.SPADES),
        ("2C", Rank.TWO, Suit.CLUBS),
        ("9H", Rank.NINE, Suit.HEARTS),
        ("JC", Rank.JACK, Suit.CLUBS),
        ("KS", Rank.KING, Suit.SPADES),
        ("qh", Rank.QUEEN, Suit.HEARTS),
        ("td", Rank.TEN, Suit.DIAMONDS),
        ("10d", Rank.TEN, Suit.DIAMONDS),
        ("aS", Rank.ACE, Suit.SPADES),
        (" 7d ", Rank.SEVEN, Suit.DIAMONDS),
    ],
)
def test_parse_card_reads_rank_then_suit_in_any_case(text, rank, suit):
    assert parse_card(text) == Card(rank, suit)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("AS", 1),  # "The Ace counts as one or eleven" (1 here; hand_total makes it 11)
        ("2C", 2),
        ("9D", 9),  # "All other cards are counted at their face value"
        ("10H", 10),
        ("JC", 10),  # "The Jack, Queen and King count ten"
        ("QD", 10),
        ("KS", 10),
    ],
)
def test_card_value_is_the_seed_000_point_count(text, value):
    assert parse_card(text).value == value


@pytest.mark.parametrize(
    "text", ["", "Q", "H", "QX", "1D", "11H", "0S", "ZZ", "10", "Q H", "QHH", "AS,KD", "🂡"]
)
def test_unknown_card_text_raises_card_error_naming_the_text(text):
    with pytest.raises(CardError) as info:
        parse_card(text)
    assert repr(text) in str(info.value)
    # CardError is both the package's error and a ValueError (callers may catch either)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, TableControllerError)


@pytest.mark.parametrize("value", [None, 10, b"QH", ("Q", "H")])
def test_non_text_card_raises_card_error(value):
    with pytest.raises(CardError, match="must be a string"):
        parse_card(value)


def test_parse_cards_accepts_commas_spaces_and_iterables():
    expected = (Card(Rank.QUEEN, Suit.HEARTS), Card(Rank.SEVEN, Suit.DIAMONDS))
    assert parse_cards("QH,7D") == expected
    assert parse_cards("QH 7D") == expected
    assert parse_cards(" qh , 7d ") == expected
    assert parse_cards(["QH", "7D"]) == expected
    assert parse_cards("") == ()


def test_parse_cards_names_the_bad_card_in_a_list():
    with pytest.raises(CardError, match="'XX'"):
        parse_cards("QH,XX,7D")


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("QH", "QH"), ("TD", "10D"), ("td", "10D"), ("as", "AS"), ("10c", "10C")],
)
def test_formatting_is_canonical(text, canonical):
    assert str(parse_card(text)) == canonical


@given(st.lists(st.sampled_from(ALL_CARDS), max_size=12))
def test_format_then_parse_round_trips(hand):
    text = format_cards(hand)
    assert parse_cards(text) == tuple(hand)
    assert "T" not in text  # canonical form writes ten as 10


@given(st.sampled_from(ALL_CARDS), st.booleans())
def test_every_card_parses_from_its_own_text_in_either_case(one, lower):
    text = str(one).lower() if lower else str(one)
    assert parse_card(text) == one


def test_a_deck_is_52_distinct_cards_13_of_each_suit():
    assert len(ALL_CARDS) == len(set(ALL_CARDS)) == 52
    for suit in Suit:
        assert sum(c.suit is suit for c in ALL_CARDS) == 13


def test_suit_colours():
    assert Suit.HEARTS.is_red and Suit.DIAMONDS.is_red
    assert not Suit.CLUBS.is_red and not Suit.SPADES.is_red


@pytest.mark.parametrize("decks", [1, 2, 6, 8])
def test_shoe_of_n_decks_holds_n_of_every_card(decks):
    shoe = ShoeComposition.of_decks(decks)
    assert shoe.total == 52 * decks
    assert len(shoe) == 52
    assert all(shoe[c] == decks for c in ALL_CARDS)
    assert shoe.count_rank(Rank.ACE) == 4 * decks
    assert shoe.count_rank(Rank.QUEEN) == 4 * decks
    assert shoe.count_points(1) == 4 * decks  # aces
    assert shoe.count_points(10) == 16 * decks  # 10, J, Q, K
    assert shoe.count_points(7) == 4 * decks


@pytest.mark.parametrize("decks", [0, -1, 1.5, "6", True, None])
def test_shoe_needs_a_whole_number_of_decks(decks):
    with pytest.raises(CardError, match="whole number of decks"):
        ShoeComposition.of_decks(decks)


def test_without_removes_dealt_cards_and_leaves_the_original_alone():
    shoe = ShoeComposition.of_decks(6)
    after = shoe.without(parse_cards("QH,QH,7D"))
    assert after[parse_card("QH")] == 4
    assert after[parse_card("7D")] == 5
    assert after.total == 312 - 3
    assert after.count_points(10) == 96 - 2
    assert shoe[parse_card("QH")] == 6 and shoe.total == 312  # immutable


def test_without_refuses_a_card_the_shoe_lacks():
    shoe = ShoeComposition.of_decks(1).without(parse_cards("QH"))
    with pytest.raises(CardError, match="holds no more QH"):
        shoe.without(parse_cards("QH"))
    with pytest.raises(CardError, match="QH"):
        ShoeComposition.of_decks(1).without(parse_cards("QH,7D,QH"))


def test_a_shoe_cannot_hold_a_negative_count():
    with pytest.raises(CardError, match="-1"):
        ShoeComposition({parse_card("AS"): -1})


@given(st.integers(1, 8), st.lists(st.sampled_from(ALL_CARDS), max_size=30))
def test_without_keeps_the_count_of_every_card(decks, dealt):
    shoe = ShoeComposition.of_decks(decks)
    if any(dealt.count(c) > decks for c in dealt):
        with pytest.raises(CardError):
            shoe.without(dealt)
        return
    after = shoe.without(dealt)
    assert after.total == shoe.total - len(dealt)
    for c in ALL_CARDS:
        assert after[c] == decks - dealt.count(c)


def test_non_cards_are_refused_with_a_card_error():
    with pytest.raises(CardError, match="cards must be text"):
        parse_cards(None)
    with pytest.raises(CardError, match="parse the text first"):
        ShoeComposition.of_decks(1).without(["QH"])
