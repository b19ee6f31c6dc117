"""Hand totals, blackjack and how the dealer draws (seeds 000, 002, 003)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.rules.cards import ALL_CARDS, parse_card, parse_cards
from controller.rules.hand import HandTotal, dealer_must_hit, hand_total, is_blackjack, is_pair

hands = st.lists(st.sampled_from(ALL_CARDS), min_size=1, max_size=11)


@pytest.mark.parametrize(
    ("hand", "total", "soft"),
    [
        ("10H,7D", 17, False),
        ("KS,QD", 20, False),
        ("AS,6D", 17, True),  # "The Ace counts as one or eleven"
        ("AS,6D,10C", 17, False),  # the ace drops to one rather than break
        ("AS,AD", 12, True),  # only one ace can count eleven
        ("AS,AD,AC,AH", 14, True),
        ("AS,AD,9C", 21, True),
        ("AS,AD,10C", 12, False),
        ("5H,6D", 11, False),
        ("AS,KD", 21, True),
        ("9C,7D,5S", 21, False),
        ("10H,6D,9S", 25, False),  # "Exceeding 21 is a 'break'"
        ("AS,5D", 16, True),
        ("2C,3C,4C,5C,AS", 15, False),
        ("2C,2D,2H,2S,AS", 19, True),
    ],
)
def test_hand_total(cards, hand, total, soft):
    assert hand_total(cards(hand)) == HandTotal(total, soft)


@pytest.mark.parametrize(
    ("hand", "bust"),
    [("10H,6D,6S", True), ("10H,6D,5S", False), ("AS,AD,10C,10D", True), ("AS,10C,10D", False)],
)
def test_bust_is_over_21(cards, hand, bust):
    # seed 000: "Exceeding 21 is a 'break' and you automatically lose."
    assert hand_total(cards(hand)).is_bust is bust


@given(hands)
def test_total_is_the_best_count_not_over_21(hand):
    """The ace counts one or eleven "whatever better suits the hand" (seed 002)."""
    hard = sum(c.value for c in hand)
    aces = sum(c.value == 1 for c in hand)
    counts = {hard + 10 * k for k in range(aces + 1)}
    valid = [n for n in counts if n <= 21]
    result = hand_total(hand)
    assert result.total == (max(valid) if valid else hard)
    assert hard <= result.total <= hard + 10
    if result.soft:
        assert aces >= 1
        assert result.total == hard + 10 <= 21
    else:
        assert result.total == hard
    assert result.is_bust is (result.total > 21)


@given(hands, st.sampled_from(ALL_CARDS))
def test_a_card_never_lowers_a_hard_total(hand, extra):
    before = hand_total(hand)
    after = hand_total([*hand, extra])
    if not before.soft:
        assert after.total >= before.total
    assert sum(c.value for c in [*hand, extra]) <= after.total


@given(st.permutations(parse_cards("AS,5D,KC,2H")))
def test_order_does_not_change_the_total(hand):
    assert hand_total(hand) == HandTotal(18, False)


BLACKJACK_RULE = (
    "If the first two cards dealt to a player or dealer are any Ace and any 10, Jack, Queen, "
    "or King, the hand is considered a Blackjack."  # seed 000
)


@pytest.mark.parametrize(
    ("ace", "ten"), list(itertools.product(["AS", "AH"], ["10D", "JC", "QH", "KS"]))
)
def test_any_ace_with_any_ten_value_card_is_blackjack(cards, ace, ten):
    assert is_blackjack(cards(f"{ace},{ten}")), BLACKJACK_RULE
    assert is_blackjack(cards(f"{ten},{ace}")), BLACKJACK_RULE


@pytest.mark.parametrize(
    ("hand", "from_split", "expected", "rule"),
    [
        ("AS,JS", False, True, BLACKJACK_RULE),
        (
            "AS,JS",
            True,
            False,
            "seed 004 rule 6: split aces + ten 'is considered 21, and NOT BLACKJACK'",
        ),
        (
            "KD,AC",
            True,
            False,
            "seed 004 rule 8: 21 occurs 'when splitting aces and receiving a ten value card'",
        ),
        ("7S,7D,7C", False, False, "seed 004 rule 8: '21 occurs with three cards or more'"),
        ("AS,5D,5C", False, False, "seed 000: a 3 or more card 21 is not a 2 card 21"),
        ("AS,9D", False, False, "20 is no blackjack"),
        ("AS,AD", False, False, "two aces are no blackjack"),
        ("AS", False, False, "one card"),
    ],
)
def test_blackjack_only_as_the_first_two_cards_of_an_unsplit_hand(
    cards, hand, from_split, expected, rule
):
    assert is_blackjack(cards(hand), from_split=from_split) is expected, rule


@given(st.lists(st.sampled_from(ALL_CARDS), min_size=1, max_size=6), st.booleans())
def test_blackjack_implies_two_card_21(hand, from_split):
    if is_blackjack(hand, from_split=from_split):
        assert len(hand) == 2 and not from_split
        assert hand_total(hand) == HandTotal(21, True)
    elif len(hand) == 2 and not from_split:
        assert hand_total(hand).total != 21


@pytest.mark.parametrize(
    ("first", "second", "match", "expected"),
    [
        ("8S", "8D", "value", True),
        ("8S", "8D", "rank", True),
        ("JS", "KD", "value", True),  # seed 000: "two cards of identical value"
        ("JS", "KD", "rank", False),  # seed 002: "jack/king ... cannot be split"
        ("10S", "QD", "rank", False),  # seed 002: "ten/queen ... cannot be split"
        ("JS", "JD", "rank", True),  # seed 002: "two fives or two jacks"
        ("AS", "AD", "value", True),
        ("8S", "9S", "value", False),
        ("AS", "10S", "value", False),
    ],
)
def test_is_pair_by_value_or_rank(first, second, match, expected):
    assert is_pair(parse_card(first), parse_card(second), match=match) is expected


@pytest.mark.parametrize(
    ("hand", "hit_soft_17", "must_hit", "rule"),
    [
        # seed 000: "Dealer must draw to 16, and stand on all 17's."
        ("10H,6D", False, True, "draw to 16"),
        ("10H,7D", False, False, "stand on all 17's"),
        ("AS,6D", False, False, "stand on all 17's (soft too)"),
        ("5S,AD,AC", False, False, "soft 17 of three cards stands"),
        ("AS,5D", False, True, "soft 16 draws"),
        ("10H,8D", False, False, "18 stands"),
        ("2H,3D", False, True, "5 draws"),
        ("10H,6D,9S", False, False, "a broken hand draws no more"),
        ("AS,KD", False, False, "a natural never draws"),
        # seed 003 rule 11: "The dealer will hit on soft 17 and stand on all other 17's."
        ("AS,6D", True, True, "hit on soft 17"),
        ("AS,3D,3C", True, True, "hit on soft 17 (three cards)"),
        ("10H,7D", True, False, "stand on all other 17's"),
        ("AS,6D,10C", True, False, "hard 17 after a soft 17 stands"),
        ("AS,7D", True, False, "soft 18 stands"),
        # seed 002: "taking cards until her total hand value is greater than sixteen"
        ("9H,7D", False, True, "16 or less draws"),
        ("AS", False, True, "one card: the hole card is still to come"),
        ("", False, True, "no cards yet"),
    ],
)
def test_dealer_must_hit(cards, hand, hit_soft_17, must_hit, rule):
    assert dealer_must_hit(cards(hand), hit_soft_17=hit_soft_17) is must_hit, rule


DOUBLE_UP_RULE_10 = (
    "If the dealer is dealt or draws to a soft or hard total of 16, the game ends."  # seed 003
)


@pytest.mark.parametrize(
    ("hand", "must_hit"),
    [
        ("10H,6D", False),  # dealt hard 16
        ("AS,5D", False),  # dealt soft 16
        ("9S,7D", False),
        ("2S,4D,10C", False),  # draws to hard 16
        ("AS,2D,3C", False),  # draws to soft 16
        ("AS,6D,9C", False),  # soft 17 hit (rule 11), then hard 16
        ("10H,5D", True),  # 15 still draws
        ("AS,4D", True),  # soft 15 still draws
        ("AS,6D", True),  # rule 11: soft 17 hits
        ("10H,7D", False),
    ],
)
def test_double_up_dealer_stops_on_16(cards, hand, must_hit):
    got = dealer_must_hit(cards(hand), hit_soft_17=True, stop_on_16=True)
    assert got is must_hit, DOUBLE_UP_RULE_10


@given(st.lists(st.sampled_from(ALL_CARDS), min_size=2, max_size=8), st.booleans())
def test_dealer_rule_matches_the_total(hand, hit_soft_17):
    count = hand_total(hand)
    expected = count.total < 17 or (count.total == 17 and count.soft and hit_soft_17)
    if is_blackjack(hand):
        expected = False
    assert dealer_must_hit(hand, hit_soft_17=hit_soft_17) is expected
    if count.total == 16:
        assert not dealer_must_hit(hand, hit_soft_17=hit_soft_17, stop_on_16=True)
