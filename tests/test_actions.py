"""Player actions checked against the house rules: each refusal names the rule it enforces."""

from __future__ import annotations

import pytest
from conftest import edit_profile
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import RuleViolation
from controller.games import load_game
from controller.rules.actions import (
    HandState,
    check_double,
    check_double_up,
    check_even_money,
    check_hit,
    check_split,
    check_surrender,
)
from controller.rules.cards import ALL_CARDS, parse_card, parse_cards
from controller.rules.hand import hand_total, is_blackjack, is_pair

PROFILES = {name: load_game(name) for name in ("pa-standard", "double-up", "online-6deck")}


def hand(text: str, wager: int = 1000, **kwargs) -> HandState:
    return HandState(parse_cards(text), wager, **kwargs)


PA_DOUBLE_RULE = (
    'You may "double down" on any two cards or the first two of any split pair except for '
    "Blackjack or a count of 21 in two cards. You must make an additional wager not in excess "
    "of the amount of your original wager. Only one card is dealt to the hand."  # seed 000
)

# ---- double down --------------------------------------------------------------------------

ALLOWED_DOUBLES = [
    # profile, hand, kwargs, amount
    ("pa-standard", "5H,6D", {}, 1000),  # "on any two cards"
    ("pa-standard", "10H,8D", {}, 1000),  # any two: a hard 18 too
    ("pa-standard", "AS,7D", {}, 1000),  # a soft 18
    ("pa-standard", "AS,AD", {}, 1000),  # two aces, unsplit
    ("pa-standard", "5H,6D", {}, 500),  # "not in excess of the amount of your original wager"
    ("pa-standard", "5H,6D", {}, 1),
    ("pa-standard", "8S,3D", {"from_split": True}, 1000),  # "or the first two of any split pair"
    ("double-up", "8S,3D", {"from_split": True}, 1000),  # 14. "Double down after splits."
    ("double-up", "10H,8D", {}, 700),  # 13. "Double down on any 2-card hand." ("up_to": open)
    ("online-6deck", "5H,6D", {}, 1000),  # "duplicate the bet"
    ("blackjack-tie", "9H,2D", {}, 1000),
]


@pytest.mark.parametrize(("name", "cards", "kwargs", "amount"), ALLOWED_DOUBLES)
def test_double_down_allowed(name, cards, kwargs, amount):
    check_double(hand(cards, **kwargs), amount, load_game(name))


REFUSED_DOUBLES = [
    # profile, hand, kwargs, amount, fragment of the refusal, the rule
    ("pa-standard", "AS,KD", {}, 1000, "a blackjack cannot double down", PA_DOUBLE_RULE),
    (
        "pa-standard",
        "10S,AD",
        {"from_split": True},
        1000,
        "no double down on a count of 21 in two cards",
        PA_DOUBLE_RULE,
    ),
    (
        "pa-standard",
        "5H,6D",
        {},
        1001,
        "may not exceed the original wager: at most $10.00",
        PA_DOUBLE_RULE,
    ),
    ("pa-standard", "5H,6D", {}, 2000, "at most $10.00, not $20.00", PA_DOUBLE_RULE),
    ("pa-standard", "5H,6D", {}, 0, "must be more than $0", PA_DOUBLE_RULE),
    (
        "pa-standard",
        "5H,3D,3C",
        {},
        1000,
        "only on the first two cards",
        "Only one card is dealt to the hand.",
    ),
    (
        "pa-standard",
        "AS,6D",
        {"from_split": True, "split_aces": True},
        1000,
        "split aces receive one card each: no double down",
        "A pair of Aces may only be split one time and each will receive one card.",
    ),
    (
        "online-6deck",
        "8S,3D",
        {"from_split": True},
        1000,
        "no double down after a split",
        'The "Double Down" option is not available to split hands.',
    ),
    (
        "online-6deck",
        "5H,6D",
        {},
        500,
        "must equal the original wager, $10.00, not $5.00",
        'By clicking the "DOUBLE" button the player can duplicate the bet',
    ),
    ("online-6deck", "5H,6D", {}, 1500, "must equal the original wager", "duplicate the bet"),
    (
        "double-up",
        "AS,9D",
        {"from_split": True, "split_aces": True},
        1000,
        "split aces receive one card each",
        "15. Cannot hit or double down after split aces.",
    ),
    (
        "double-up",
        "AS,QD",
        {},
        1000,
        "a blackjack cannot double down",
        "(house rules: no double on a natural)",
    ),
]


@pytest.mark.parametrize(("name", "cards", "kwargs", "amount", "fragment", "rule"), REFUSED_DOUBLES)
def test_double_down_refused(name, cards, kwargs, amount, fragment, rule):
    with pytest.raises(RuleViolation) as info:
        check_double(hand(cards, **kwargs), amount, load_game(name))
    assert fragment in str(info.value), rule


@pytest.mark.parametrize(
    ("allowed_on", "cards", "ok"),
    [
        ("9_10_11", "4H,5D", True),
        ("9_10_11", "5H,6D", True),
        ("9_10_11", "4H,4D", False),
        ("9_10_11", "10H,2D", False),
        ("10_11", "4H,5D", False),
        ("10_11", "4H,6D", True),
        ("10_11", "AS,9D", False),  # soft 20
    ],
)
def test_double_restricted_to_hard_totals(allowed_on, cards, ok):
    rules = edit_profile("pa-standard", ('allowed_on = "any_two"', f'allowed_on = "{allowed_on}"'))
    if ok:
        check_double(hand(cards), 1000, rules)
    else:
        with pytest.raises(RuleViolation, match="double down only on a hard"):
            check_double(hand(cards), 1000, rules)


def test_two_card_21_may_double_where_the_profile_says_so():
    rules = edit_profile("pa-standard", ("on_two_card_21 = false", "on_two_card_21 = true"))
    check_double(hand("10S,AD", from_split=True), 1000, rules)
    with pytest.raises(RuleViolation, match="blackjack"):
        check_double(hand("10S,AD"), 1000, rules)  # a natural never doubles


@given(st.lists(st.sampled_from(ALL_CARDS), min_size=2, max_size=2), st.integers(-10, 3000))
def test_pa_double_any_two_but_21_for_up_to_the_wager(cards, amount):
    rules = PROFILES["pa-standard"]
    allowed = hand_total(cards).total != 21 and 0 < amount <= 1000
    try:
        check_double(HandState(tuple(cards), 1000), amount, rules)
    except RuleViolation:
        assert not allowed
    else:
        assert allowed, PA_DOUBLE_RULE


# ---- split ---------------------------------------------------------------------------------

PA_SPLIT_RULE = (
    "You may split two cards of identical value by making a wager on the second hand so formed "
    "in an amount equal to the original wager. If the third card is of identical value, you may "
    "split one more time for a total of three hands. A pair of Aces may only be split one time "
    "and each will receive one card."  # seed 000
)

ALLOWED_SPLITS = [
    ("pa-standard", "8S,8D", 1),
    ("pa-standard", "8S,8D", 2),  # "you may split one more time for a total of three hands"
    ("pa-standard", "JS,KD", 1),  # "two cards of identical value"
    ("pa-standard", "10S,QD", 2),
    ("pa-standard", "AS,AD", 1),  # "A pair of Aces may only be split one time"
    ("double-up", "8S,8D", 3),  # 12. "split pairs other than Aces, 3 times for 4 hands"
    ("double-up", "AS,AD", 1),  # 16. "Cannot re-split aces.": the first split is allowed
    ("online-6deck", "JS,JD", 2),  # "two fives or two jacks"; "up to two times"
    ("blackjack-tie", "QS,KD", 1),  # PA house rules: by value
]


@pytest.mark.parametrize(("name", "cards", "hands_at_spot"), ALLOWED_SPLITS)
def test_split_allowed(name, cards, hands_at_spot):
    check_split(hand(cards), hands_at_spot, load_game(name))


REFUSED_SPLITS = [
    (
        "pa-standard",
        "8S,8D",
        3,
        "a pair may be split into at most 3 hands; this spot has 3",
        PA_SPLIT_RULE,
    ),
    ("pa-standard", "AS,AD", 2, "a pair of aces may be split into at most 2 hands", PA_SPLIT_RULE),
    (
        "pa-standard",
        "8S,9D",
        1,
        "split only two cards of the same value: 8S and 9D are not",
        PA_SPLIT_RULE,
    ),
    ("pa-standard", "8S,8D,2C", 1, "split only a hand of two cards", PA_SPLIT_RULE),
    (
        "double-up",
        "8S,8D",
        4,
        "a pair may be split into at most 4 hands",
        "12. Player can split pairs other than Aces, 3 times for 4 hands.",
    ),
    (
        "double-up",
        "AS,AD",
        2,
        "a pair of aces may be split into at most 2 hands",
        "16. Cannot re-split aces.",
    ),
    ("double-up", "JS,KD", 1, "split only two cards of the same rank", "12. split pairs"),
    (
        "online-6deck",
        "JS,KD",
        1,
        "same rank: JS and KD are not",
        "Combinations of different cards such as a jack/king, ten/queen, jack/queen pair, etc. "
        "cannot be split.",
    ),
    ("online-6deck", "10S,QD", 1, "same rank", "ten/queen ... cannot be split"),
    (
        "online-6deck",
        "8S,8D",
        3,
        "at most 3 hands",
        "The original hand may be split up to two times, making a maximum of three separate hands.",
    ),
]


@pytest.mark.parametrize(("name", "cards", "hands_at_spot", "fragment", "rule"), REFUSED_SPLITS)
def test_split_refused(name, cards, hands_at_spot, fragment, rule):
    with pytest.raises(RuleViolation) as info:
        check_split(hand(cards), hands_at_spot, load_game(name))
    assert fragment in str(info.value), rule


def test_no_splitting_where_max_hands_is_1():
    rules = edit_profile("pa-standard", ("max_hands = 3", "max_hands = 1"))
    with pytest.raises(RuleViolation, match="allows no splitting"):
        check_split(hand("8S,8D"), 1, rules)


def test_no_splitting_means_no_splitting_of_aces_either():
    rules = edit_profile("pa-standard", ("max_hands = 3", "max_hands = 1"))
    with pytest.raises(RuleViolation, match="no splitting"):
        check_split(hand("AS,AD"), 1, rules)


@given(
    st.sampled_from(ALL_CARDS),
    st.sampled_from(ALL_CARDS),
    st.integers(1, 5),
    st.sampled_from(["pa-standard", "double-up", "online-6deck"]),
)
def test_split_limits(first, second, hands_at_spot, name):
    rules = PROFILES[name]
    pair = is_pair(first, second, match=rules.split.match)
    limit = rules.split.max_hands_aces if first.value == 1 else rules.split.max_hands
    allowed = pair and hands_at_spot < limit
    try:
        check_split(HandState((first, second), 1000), hands_at_spot, rules)
    except RuleViolation:
        assert not allowed
    else:
        assert allowed


# ---- surrender -----------------------------------------------------------------------------

SURRENDER_RULE = (
    'After the dealer has checked for Blackjack, the player may "surrender" by giving up half '
    "their bet and not playing out the hand."  # seed 000
)


@pytest.mark.parametrize("name", ["pa-standard", "online-6deck", "blackjack-tie"])
def test_late_surrender_after_the_dealer_checked(name):
    check_surrender(hand("10H,6D"), load_game(name), dealer_checked=True)


@pytest.mark.parametrize(
    ("name", "cards", "kwargs", "checked", "fragment", "rule"),
    [
        (
            "pa-standard",
            "10H,6D",
            {},
            False,
            "surrender only after the dealer has checked for blackjack",
            SURRENDER_RULE,
        ),
        (
            "online-6deck",
            "10H,6D",
            {},
            False,
            "after the dealer has checked",
            "offered in every hand only after the two first cards have been dealt",
        ),
        (
            "pa-standard",
            "10H,3D,3C",
            {},
            True,
            "surrender only on the first two cards",
            "by giving up half their bet and not playing out the hand",
        ),
        (
            "pa-standard",
            "10H,6D",
            {"from_split": True},
            True,
            "a split hand cannot surrender",
            "docs: the cards speak of surrendering 'the hand' on its first two cards",
        ),
        (
            "double-up",
            "10H,6D",
            {},
            True,
            "this game offers no surrender",
            "17. Surrender is not allowed.",
        ),
        ("double-up", "10H,6D", {}, False, "offers no surrender", "17. Surrender is not allowed."),
    ],
)
def test_surrender_refused(name, cards, kwargs, checked, fragment, rule):
    with pytest.raises(RuleViolation) as info:
        check_surrender(hand(cards, **kwargs), load_game(name), dealer_checked=checked)
    assert fragment in str(info.value), rule


def test_no_peek_late_surrender_still_waits_for_the_dealers_check(no_peek):
    with pytest.raises(RuleViolation, match="after the dealer has checked"):
        check_surrender(hand("10H,6D"), no_peek("all_wagers"), dealer_checked=False)


# ---- Double Up (seed 003) ------------------------------------------------------------------

RULE_4 = (
    "4. Any player can make an optional Double Up wager, equal to the amount of their original "
    "wager, on any 2-card hand, including split hands, except for a natural blackjack."
)


@pytest.mark.parametrize(
    ("cards", "kwargs"),
    [
        ("10H,8D", {}),
        ("5H,6D", {}),
        ("AS,7D", {}),
        ("8S,3D", {"from_split": True}),  # "including split hands"
        ("10S,AD", {"from_split": True}),  # a split 21 is no natural
    ],
)
def test_double_up_allowed(double_up, cards, kwargs):
    check_double_up(hand(cards, **kwargs), 1000, double_up)


@pytest.mark.parametrize(
    ("cards", "kwargs", "amount", "fragment", "rule"),
    [
        ("AS,KD", {}, 1000, "no Double Up on a natural blackjack", RULE_4),
        ("5H,3D,3C", {}, 1000, "Double Up only on a two-card hand", RULE_4),
        ("10H,8D", {}, 500, "the Double Up wager must equal the original wager, $10.00", RULE_4),
        ("10H,8D", {}, 2000, "must equal the original wager", RULE_4),
        ("10H,8D", {}, 0, "must be more than $0", RULE_4),
    ],
)
def test_double_up_refused(double_up, cards, kwargs, amount, fragment, rule):
    with pytest.raises(RuleViolation) as info:
        check_double_up(hand(cards, **kwargs), amount, double_up)
    assert fragment in str(info.value), rule


def test_double_up_on_split_aces_read_literally(double_up):
    """4. "on any 2-card hand, including split hands, except for a natural blackjack"; 15.
    "Cannot hit or double down after split aces." forbids hitting and doubling only (issue 31)."""
    check_double_up(hand("AS,7D", from_split=True, split_aces=True), 1000, double_up)


def test_no_double_up_on_split_aces_where_the_casino_decides_so():
    rules = edit_profile("double-up", ("after_split_aces = true", "after_split_aces = false"))
    with pytest.raises(RuleViolation, match="split aces take no further action"):
        check_double_up(hand("AS,7D", from_split=True, split_aces=True), 1000, rules)


def test_double_up_for_less_where_the_licensee_allows_it():
    """4a. "At their discretion, the licensee may allow the player to place a Double Up wager at
    a lesser amount than the original wager."."""
    rules = edit_profile("double-up", ('amount = "equal"', 'amount = "up_to"'))
    check_double_up(hand("10H,8D"), 500, rules)
    check_double_up(hand("10H,8D"), 1000, rules)
    with pytest.raises(RuleViolation, match="may not exceed the original wager"):
        check_double_up(hand("10H,8D"), 1001, rules)


@pytest.mark.parametrize("name", ["pa-standard", "online-6deck", "blackjack-tie"])
def test_no_double_up_outside_double_up_blackjack(name):
    with pytest.raises(RuleViolation, match="offers no Double Up"):
        check_double_up(hand("10H,8D"), 1000, load_game(name))


def test_no_double_up_on_split_hands_where_the_profile_says_so():
    rules = edit_profile(
        "double-up",
        ("after_split = true\nafter_split_aces", "after_split = false\nafter_split_aces"),
    )
    with pytest.raises(RuleViolation, match="no Double Up on split hands"):
        check_double_up(hand("8S,3D", from_split=True), 1000, rules)


def test_a_double_up_hand_must_stand(double_up):
    """5. "If the player makes a Double Up Wager they must stand on that hand (i.e. they may not
    take any additional cards)."."""
    doubled_up = HandState(parse_cards("8S,8D"), 1000, double_up=1000)
    with pytest.raises(RuleViolation, match="Double Up"):
        check_double(doubled_up, 1000, double_up)
    with pytest.raises(RuleViolation, match="Double Up"):
        check_split(doubled_up, 1, double_up)


# ---- even money ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pa-standard", "double-up", "blackjack-tie"])
def test_even_money_on_a_blackjack_against_an_ace(name):
    """Seed 003 rule 3: "Player's with a blackjack may elect to take even money when the dealer
    shows an Ace."."""
    check_even_money(parse_cards("AS,KD"), parse_card("AH"), load_game(name))


@pytest.mark.parametrize(
    ("name", "cards", "up", "fragment"),
    [
        ("pa-standard", "AS,KD", "KH", "even money only when the dealer shows an ace"),
        ("pa-standard", "AS,KD", "9H", "only when the dealer shows an ace"),
        ("pa-standard", "AS,5D,5C", "AH", "even money only on a blackjack"),
        ("pa-standard", "10S,KD", "AH", "only on a blackjack"),
        ("online-6deck", "AS,KD", "AH", "this game offers no even money"),
    ],
)
def test_even_money_refused(name, cards, up, fragment):
    with pytest.raises(RuleViolation) as info:
        check_even_money(parse_cards(cards), parse_card(up), load_game(name))
    assert fragment in str(info.value)


@given(st.lists(st.sampled_from(ALL_CARDS), min_size=2, max_size=3), st.sampled_from(ALL_CARDS))
def test_even_money_exactly_on_blackjack_against_an_ace(cards, up):
    allowed = is_blackjack(cards) and up.value == 1
    try:
        check_even_money(cards, up, PROFILES["pa-standard"])
    except RuleViolation:
        assert not allowed
    else:
        assert allowed


# ---- hit ---------------------------------------------------------------------------------------


def test_an_open_hand_may_hit(pa):
    check_hit(hand("8S,5D"), pa)
    check_hit(hand("8S,5D,2C"), pa)


@pytest.mark.parametrize(
    ("name", "state", "fragment"),
    [
        # seed 000: "A pair of Aces may only be split one time and each will receive one card."
        ("pa-standard", hand("AS,9D", from_split=True, split_aces=True), "one card each"),
        # seed 000: "Only one card is dealt to the hand." (double down)
        ("pa-standard", hand("5S,6D,2C", double_down=1000), "one card only"),
        # seed 003 rule 5: "If the player makes a Double Up Wager they must stand on that hand"
        ("double-up", hand("9S,2D", double_up=1000), "must stand"),
        ("pa-standard", hand("KS,5D,6C"), "counts 21"),
    ],
)
def test_a_closed_hand_takes_no_card(name, state, fragment):
    with pytest.raises(RuleViolation, match=fragment):
        check_hit(state, load_game(name))


def test_a_doubled_hand_cannot_split_or_double_again(pa):
    doubled = hand("8S,8D", double_down=1000)
    with pytest.raises(RuleViolation, match="one card only"):
        check_split(doubled, 1, pa)
    with pytest.raises(RuleViolation, match="one card only"):
        check_double(doubled, 1000, pa)
