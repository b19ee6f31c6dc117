"""Settlement of the main wager, Double Down, Double Up, insurance and even money, in cents.

Rules quoted from seeds 000/001 (PA standard), 002 (online), 003 (Double Up Blackjack).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import edit_profile
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import WagerError
from controller.games import load_game
from controller.rules.cards import ALL_CARDS, Card, parse_cards
from controller.rules.hand import dealer_must_hit, hand_total, is_blackjack
from controller.rules.pays import Odds
from controller.rules.profile import HouseRules
from controller.rules.settlement import (
    Outcome,
    PlayerHand,
    Settlement,
    check_insurance,
    insurance_limit,
    settle_even_money,
    settle_hand,
    settle_insurance,
    settle_side_bet,
)
from controller.rules.sidebets import xtreme

WIN, LOSE, PUSH, BJ, SURRENDER = (
    Outcome.WIN,
    Outcome.LOSE,
    Outcome.PUSH,
    Outcome.BLACKJACK,
    Outcome.SURRENDER,
)


def lines(settlements: list[Settlement]) -> dict[str, tuple[Outcome, int]]:
    """``{wager: (outcome, net)}`` of a hand's settlement."""
    result = {s.wager: (s.outcome, s.net) for s in settlements}
    assert len(result) == len(settlements), "one line per wager"
    return result


# ---- the main wager, PA standard (seed 000) ------------------------------------------------

MAIN = [
    (
        "10H,8D",
        "10S,7C",
        WIN,
        1000,
        "If your hand and the dealer's hand both total under 21 but your total count is higher, "
        "you win and the payout odds are 1 to 1.",
    ),
    (
        "10H,7D",
        "10S,8C",
        LOSE,
        -1000,
        "The object is to draw cards that add up to 21 or as close to it as possible.",
    ),
    (
        "10H,8D",
        "10S,8C",
        PUSH,
        0,
        'If your count is the same as the dealer\'s it is a standoff, or a "push."',
    ),
    (
        "10H,5D",
        "10S,6C,9D",
        WIN,
        1000,
        "If your total count is 21 or less and the point count of the dealer is in excess of 21, "
        "you win and the payout odds are 1 to 1.",
    ),
    ("10H,2D", "10S,6C,9D", WIN, 1000, "a 12 wins when the dealer breaks"),
    (
        "10H,5D,9C",
        "10S,6C,9D",
        LOSE,
        -1000,
        'If you "break" (over 21), you lose, even if the dealer breaks.',
    ),
    ("10H,5D,9C", "10S,7C", LOSE, -1000, 'Exceeding 21 is a "break" and you automatically lose.'),
    ("AS,KD", "10S,7C", BJ, 1500, "your Blackjack shall be paid at odds of 3 to 2"),
    (
        "KD,AS",
        "9S,8C",
        BJ,
        1500,
        "If the first face up card dealt to the dealer is 2, 3, 4, 5, 6, 7, 8 or 9 and you have a "
        "Blackjack, the dealer shall announce and pay the Blackjack odds of 3 to 2",
    ),
    (
        "AS,KD",
        "10S,6C,5D",
        BJ,
        1500,
        "Should the dealer draw a 3 or more card 21, this does not beat your 2 card 21 "
        "(Blackjack).",
    ),
    (
        "AS,JC",
        "2S,9C,QD",
        BJ,
        1500,
        "If you achieve a score of 21 in two cards and a dealer achieves a score of 21 in more "
        "than two cards, you win.",
    ),
    (
        "AS,KD",
        "AH,QC",
        PUSH,
        0,
        "If however, the dealer's second card gives him Blackjack, the wager of the player having "
        "Blackjack shall be voided and constitute a push.",
    ),
    (
        "7S,7D,7C",
        "AH,QC",
        LOSE,
        -1000,
        "If you have a 3 or more card 21 and the dealer has a 2 card 21 (Blackjack), you lose.",
    ),
    ("10H,QD", "AH,QC", LOSE, -1000, "a dealer Blackjack beats a 20"),
    ("9S,2D,10C", "10H,6C,5D", PUSH, 0, "21 against a 3 or more card 21 is a push"),
    ("AS,6D", "10H,7C", PUSH, 0, "soft 17 against hard 17 is a standoff"),
    ("AS,7D", "10H,7C", WIN, 1000, "soft 18 beats 17"),
    ("AS,5D,10C", "10H,7C", LOSE, -1000, "a soft 16 that drew a ten is a hard 16"),
]


@pytest.mark.parametrize(("player", "dealer", "outcome", "net", "rule"), MAIN)
def test_main_wager_pa_standard(pa, cards, player, dealer, outcome, net, rule):
    [line] = settle_hand(PlayerHand(cards(player), 1000), cards(dealer), pa)
    assert (line.wager, line.outcome, line.net) == ("main", outcome, net), rule
    assert line.stake == 1000


@pytest.mark.parametrize(
    ("pays", "stake", "paid", "rule"),
    [
        ("3 to 2", 500, 750, "3:2 on $5 = $7.50 (seed 000: 'Blackjack odds of 3 to 2')"),
        ("3 to 2", 2500, 3750, "3:2 on $25 = $37.50"),
        ("6 to 5", 2500, 3000, "seed 003 rule 1: 'paid 3:2 or 6:5': 6:5 on $25 = $30.00"),
        ("6 to 5", 500, 600, "6:5 on $5 = $6.00"),
    ],
)
def test_blackjack_pays_the_profiles_odds_in_exact_cents(cards, pays, stake, paid, rule):
    rules = edit_profile("double-up", ('pays = "3 to 2"', f'pays = "{pays}"'))
    [line] = settle_hand(PlayerHand(cards("AS,QH"), stake), cards("10C,8D"), rules)
    assert (line.outcome, line.paid, line.returned) == (BJ, paid, stake), rule
    assert line.pays == rules.blackjack.pays


def test_6_to_5_blackjack_against_dealer_blackjack_still_pushes(cards):
    """Seed 003 rule 2: "Natural Blackjacks push when the dealer also has a blackjack."."""
    rules = edit_profile("double-up", ('pays = "3 to 2"', 'pays = "6 to 5"'))
    [line] = settle_hand(PlayerHand(cards("AS,QH"), 2500), cards("AD,KC"), rules)
    assert (line.outcome, line.paid, line.returned) == (PUSH, 0, 2500)


# ---- Double Down ----------------------------------------------------------------------------

DOUBLE_DOWN = [
    # seed 000: "You must make an additional wager not in excess of the amount of your original
    # wager. Only one card is dealt to the hand." Doubled wagers settle like the main wager.
    ("5H,6D,9C", 1000, "10S,8C", WIN, 1000, WIN, 1000),
    ("5H,6D,2C", 1000, "10S,8C", LOSE, -1000, LOSE, -1000),
    ("5H,6D,7C", 1000, "10S,8C", PUSH, 0, PUSH, 0),
    ("5H,6D,2C", 1000, "10S,6C,8D", WIN, 1000, WIN, 1000),  # the dealer breaks
    ("5H,6D,10C", 500, "10S,7C", WIN, 1000, WIN, 500),  # doubled for less
    ("AS,5D,AC", 1000, "9S,9C", LOSE, -1000, LOSE, -1000),  # soft 17 loses to 18
    ("AS,7D,AC", 1000, "9S,9C", WIN, 1000, WIN, 1000),  # soft 19 beats 18
]


@pytest.mark.parametrize(
    ("player", "double", "dealer", "main", "main_net", "dd", "dd_net"), DOUBLE_DOWN
)
def test_double_down(pa, cards, player, double, dealer, main, main_net, dd, dd_net):
    hand = PlayerHand(cards(player), 1000, double_down=double)
    assert lines(settle_hand(hand, cards(dealer), pa)) == {
        "main": (main, main_net),
        "double_down": (dd, dd_net),
    }


# ---- split hands ---------------------------------------------------------------------------

SPLIT = [
    (
        "AS,KD",
        "10S,7C",
        WIN,
        1000,
        "seed 004 rule 6/8: split ace + ten 'is considered 21, and NOT BLACKJACK': paid 1 to 1",
    ),
    ("KD,AS", "10S,7C", WIN, 1000, "a split ten that draws an ace is 21, paid 1 to 1"),
    (
        "AS,KD",
        "10S,6C,5D",
        WIN,
        1000,
        "seed 000: 'If you achieve a score of 21 in two cards and a dealer achieves a score of 21 "
        "in more than two cards, you win.' (1 to 1: a split 21 is no blackjack)",
    ),
    ("KD,AS", "3S,8C,KD", WIN, 1000, "a split ten that draws an ace beats a 3-card 21"),
    ("7S,4D,KC", "10S,6C,5D", PUSH, 0, "a split hand's 3-card 21 ties the dealer's 3-card 21"),
    ("8S,2D,7C", "10S,9C", LOSE, -1000, "a split hand settles like any hand"),
    ("8S,3D,10C", "10S,9C", WIN, 1000, "a split hand settles like any hand"),
    ("9D,QC", "2C,7D,KS", PUSH, 0, "two cards beating more cards is for 21 only: 19 ties 19"),
]


@pytest.mark.parametrize(("player", "dealer", "outcome", "net", "rule"), SPLIT)
def test_split_hands(pa, cards, player, dealer, outcome, net, rule):
    hand = PlayerHand(cards(player), 1000, from_split=True, split_index=1)
    [line] = settle_hand(hand, cards(dealer), pa)
    assert (line.outcome, line.net) == (outcome, net), rule


TWO_CARD_21 = (
    "seed 000: If you achieve a score of 21 in two cards and a dealer achieves a "
    "score of 21 in more than two cards, you win."
)


@pytest.mark.parametrize("split_index", [0, 1, 2])
def test_split_two_card_21_beats_a_dealer_21_of_more_cards(pa, cards, split_index):
    hand = PlayerHand(cards("AS,KD"), 1000, from_split=True, split_index=split_index)
    [line] = settle_hand(hand, cards("5S,6C,KH"), pa)
    assert (line.outcome, line.paid, line.returned) == (WIN, 1000, 1000), TWO_CARD_21
    assert line.reason == "21 in two cards beats the dealer's 21 in 3 cards"
    [line] = settle_hand(hand, cards("2S,2C,2H,5D,KH"), pa)
    assert (line.outcome, line.net) == (WIN, 1000), TWO_CARD_21
    # "If you have a 3 or more card 21 and the dealer has a 2 card 21 (Blackjack), you lose":
    # a split hand is no natural, so its two-card 21 still loses to the dealer's natural
    [line] = settle_hand(hand, cards("AH,QC"), pa)
    assert (line.outcome, line.net) == (LOSE, -1000)


def test_split_two_card_21_pushes_where_the_profile_says_so(edited, cards):
    """``[split] two_card_21_beats_dealer_21 = false``: the two 21s push (the earlier reading)."""
    rules = edited(
        "pa-standard",
        ("two_card_21_beats_dealer_21 = true", "two_card_21_beats_dealer_21 = false"),
    )
    hand = PlayerHand(cards("AS,KD"), 1000, from_split=True, split_index=1)
    [line] = settle_hand(hand, cards("5S,6C,KH"), rules)
    assert (line.outcome, line.net) == (PUSH, 0)


@pytest.mark.parametrize(
    ("game", "beats"),
    [
        ("pa-standard", True),
        ("blackjack-tie", False),
        ("double-up", False),
        ("online-6deck", False),
    ],
)
def test_which_profiles_pay_a_split_two_card_21_against_a_dealer_21(game, beats, cards):
    """PA's card says so; Blackjack Tie rule 2 pushes the primary wager on a tie (rule 8 makes
    the split 21 "21", which ties a dealer 21); Double Up rule 8 and the online card ("hands of
    the same value [...] push") say a tie pushes."""
    rules = load_game(game)
    assert rules.split.two_card_21_beats_dealer_21 is beats
    hand = PlayerHand(cards("QS,AD"), 1000, from_split=True, split_index=1)
    [line] = settle_hand(hand, cards("9S,5C,7H"), rules)
    assert line.outcome is (WIN if beats else PUSH)


def test_split_hand_with_double_down(pa, cards):
    hand = PlayerHand(cards("9S,2D,9C"), 1000, double_down=1000, from_split=True, split_index=1)
    assert lines(settle_hand(hand, cards("10S,7C"), pa)) == {
        "main": (WIN, 1000),
        "double_down": (WIN, 1000),
    }


# ---- surrender -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wager", "returned", "rule"),
    [
        (1000, 500, 'seed 000: the player may "surrender" by giving up half their bet'),
        (2500, 1250, "seed 002: only half the bet is lost, the other half being returned"),
        (501, 250, "docs/profiles.md: a surrender returns half the wager, rounded down"),
        (1, 0, "half of one cent rounds down to nothing"),
    ],
)
def test_surrender_returns_half_the_wager(pa, cards, wager, returned, rule):
    hand = PlayerHand(cards("10H,6D"), wager, surrendered=True)
    # the dealer's hand does not matter: the hand was not played out
    for dealer in ("10S,7C", "10S,6C,9D", "10S,6C"):
        [line] = settle_hand(hand, cards(dealer), pa)
        assert (line.outcome, line.paid, line.returned) == (SURRENDER, 0, returned), rule
        assert line.net == returned - wager


# ---- insurance and even money (seed 000 "INSURANCE WAGERS") --------------------------------

INSURANCE_RULE = (
    "Whenever the first card dealt to the dealer is an Ace, you have the right to make an "
    '"insurance wager" which wins if the dealer\'s second card is a King, Queen, Jack or 10 '
    '... Winning "insurance wagers" shall be paid to odds of 2 to 1.'
)


@pytest.mark.parametrize("name", ["pa-standard", "double-up", "online-6deck", "blackjack-tie"])
@pytest.mark.parametrize(
    ("stake", "dealer_blackjack", "outcome", "paid", "returned"),
    [(500, True, WIN, 1000, 500), (500, False, LOSE, 0, 0), (250, True, WIN, 500, 250)],
)
def test_insurance_pays_2_to_1(name, stake, dealer_blackjack, outcome, paid, returned):
    line = settle_insurance(stake, dealer_blackjack, load_game(name))
    assert (line.wager, line.outcome, line.paid, line.returned) == (
        "insurance",
        outcome,
        paid,
        returned,
    ), INSURANCE_RULE


@pytest.mark.parametrize(
    ("wager", "stake"),
    # seed 000: "Up to half of the initial wager may be bet as insurance"
    [(1000, 500), (1000, 100), (1000, 1), (2500, 1250), (501, 250)],
)
def test_insurance_up_to_half_accepted(pa, wager, stake):
    check_insurance(wager, stake, pa)


@pytest.mark.parametrize(
    ("wager", "stake", "limit_text"),
    [(1000, 501, "$5.00"), (1000, 1000, "$5.00"), (2500, 1300, "$12.50"), (501, 251, "$2.50")],
)
def test_insurance_over_half_refused_naming_the_limit(pa, wager, stake, limit_text):
    with pytest.raises(WagerError) as info:
        check_insurance(wager, stake, pa)
    assert f"half the wager, {limit_text}" in str(info.value)


@pytest.mark.parametrize("stake", [0, -100])
def test_insurance_of_nothing_refused(pa, stake):
    with pytest.raises(WagerError, match="more than \\$0"):
        check_insurance(1000, stake, pa)


def test_online_insurance_is_fixed_at_half(online):
    """Seed 002: "The insurance bet is fixed as half the original bet"."""
    check_insurance(1000, 500, online)
    for stake in (250, 499, 501, 1000):
        with pytest.raises(WagerError, match=r"fixed at half the wager: \$5\.00"):
            check_insurance(1000, stake, online)


def test_fixed_half_insurance_is_never_nothing(online):
    with pytest.raises(WagerError):
        check_insurance(1, 0, online)


def test_insurance_refused_where_not_offered(edited):
    rules = edited("pa-standard", ("offered = true\namount", "offered = false\namount"))
    assert not rules.insurance.offered
    with pytest.raises(WagerError, match="no insurance"):
        check_insurance(1000, 500, rules)


@given(st.integers(1, 10**7), st.integers(-10, 10**7))
def test_insurance_limit_is_exactly_half_rounded_down(wager, stake):
    rules = PROFILES["pa-standard"]
    assert insurance_limit(wager, rules) == wager // 2
    allowed = 0 < stake <= wager // 2
    try:
        check_insurance(wager, stake, rules)
    except WagerError:
        assert not allowed
    else:
        assert allowed


def test_even_money_is_paid_1_to_1_at_once():
    """Seed 003 rule 3: "Player's with a blackjack may elect to take even money when the dealer
    shows an Ace."."""
    line = settle_even_money(1000)
    assert (line.wager, line.outcome, line.paid, line.returned, line.net) == (
        "main",
        BJ,
        1000,
        1000,
        1000,
    )
    assert line.pays == Odds(1, 1)


@given(st.integers(1, 10**6).map(lambda n: n * 2), st.booleans())
def test_even_money_equals_a_blackjack_insured_for_half(wager, dealer_blackjack):
    """Docs: even money "is insurance of half on a blackjack": at 3:2 the player nets the wager
    whatever the hole card."""
    rules = PROFILES["pa-standard"]
    dealer = parse_cards("AD,KC" if dealer_blackjack else "AD,7C")
    main = settle_hand(PlayerHand(parse_cards("AS,QH"), wager), dealer, rules)
    insurance = settle_insurance(wager // 2, dealer_blackjack, rules)
    insured = sum(line.net for line in main) + insurance.net
    assert insured == settle_even_money(wager).net == wager


# ---- Double Up Blackjack (seed 003) ----------------------------------------------------------

RULE_6 = (
    "6. If the player has a higher final total than the dealer, they will be paid even "
    "money on their main wager and their Double Up wager, if placed."
)
RULE_7 = (
    "7. If the dealer has a higher total than the player, the player will lose both their "
    "main wager and their Double Up wager, if placed."
)
RULE_8 = (
    "8. If the dealer and player tie, the player's main wager is a push, but they will "
    "lose their Double Up wager, if placed."
)
RULE_10 = (
    "10. If the dealer is dealt or draws to a soft or hard total of 16, the game ends. If "
    "the player has a total of 21, the dealer pay all active wagers including Double Up "
    "and Double Down wagers, if placed, even money. If the player has a total other than "
    "21, all active wagers including Double Up and Double Down wagers push."
)

DOUBLE_UP = [
    ("10H,9D", "10S,8C", {"main": (WIN, 1000), "double_up": (WIN, 1000)}, RULE_6),
    (
        "10H,9D",
        "10S,6C,8D",
        {"main": (WIN, 1000), "double_up": (WIN, 1000)},
        "9. All other winning wagers Main Wager, Double Up, or Double Down pay even money.",
    ),
    ("10H,7D", "10S,8C", {"main": (LOSE, -1000), "double_up": (LOSE, -1000)}, RULE_7),
    ("10H,8D", "10S,8C", {"main": (PUSH, 0), "double_up": (LOSE, -1000)}, RULE_8),
    ("AS,7D", "10S,8C", {"main": (PUSH, 0), "double_up": (LOSE, -1000)}, RULE_8 + " (soft 18)"),
    ("10H,QD", "AS,9C", {"main": (PUSH, 0), "double_up": (LOSE, -1000)}, RULE_8 + " (20 v 20)"),
    (
        "10H,AD",
        "9S,2C,KD",
        {"main": (PUSH, 0), "double_up": (LOSE, -1000)},
        RULE_8 + " (a split 10-A is 21, not blackjack)",
    ),
    # rule 10: the dealer stops on 16
    ("10H,8D", "10S,6C", {"main": (PUSH, 0), "double_up": (PUSH, 0)}, RULE_10),
    ("10H,7D", "AS,5C", {"main": (PUSH, 0), "double_up": (PUSH, 0)}, RULE_10 + " (soft 16)"),
    (
        "10H,4D",
        "2S,4C,10D",
        {"main": (PUSH, 0), "double_up": (PUSH, 0)},
        RULE_10 + " (draws to 16; the player's 14 pushes too)",
    ),
    (
        "10H,AD",
        "10S,6C",
        {"main": (WIN, 1000), "double_up": (WIN, 1000)},
        RULE_10 + " (a split hand's 2-card 21)",
    ),
]


@pytest.mark.parametrize(("player", "dealer", "expected", "rule"), DOUBLE_UP)
def test_double_up_wager(double_up, cards, player, dealer, expected, rule):
    # rule 4: no Double Up on a natural, so a two-card 21 with a Double Up came from a split
    hand = PlayerHand(cards(player), 1000, double_up=1000, from_split=is_blackjack(cards(player)))
    assert lines(settle_hand(hand, cards(dealer), double_up)) == expected, rule


@pytest.mark.parametrize(
    ("player", "dealer", "expected"),
    [
        # rule 10, player 21 after a Double Down: all active wagers paid even money
        ("5H,6D,KC", "10S,6C", {"main": (WIN, 1000), "double_down": (WIN, 1000)}),
        ("7H,7D,7C", "AS,5C", {"main": (WIN, 1000), "double_down": (WIN, 1000)}),
        # a player total other than 21: push, even one that would beat 16
        ("5H,6D,9C", "10S,6C", {"main": (PUSH, 0), "double_down": (PUSH, 0)}),
        ("5H,6D,2C", "9S,7C", {"main": (PUSH, 0), "double_down": (PUSH, 0)}),
        # a broken hand is no longer active: it lost when it broke
        ("5H,6D,2C,KD", "10S,6C", {"main": (LOSE, -1000), "double_down": (LOSE, -1000)}),
        # rule 8 does not apply to a Double Down: a tie pushes it
        ("5H,6D,7C", "10S,8C", {"main": (PUSH, 0), "double_down": (PUSH, 0)}),
    ],
)
def test_double_up_game_double_down_and_dealer_16(double_up, cards, player, dealer, expected):
    hand = PlayerHand(cards(player), 1000, double_down=1000)
    assert lines(settle_hand(hand, cards(dealer), double_up)) == expected, RULE_10


def test_dealer_16_does_not_end_a_standard_game(pa, cards):
    """Only Double Up Blackjack ends on 16: elsewhere "Dealer must draw to 16", so a dealer
    16 is no final hand and settling on it is refused; the drawn hand settles."""
    with pytest.raises(WagerError, match="not finished"):
        settle_hand(PlayerHand(cards("10H,8D"), 1000), cards("10S,6C"), pa)
    [line] = settle_hand(PlayerHand(cards("10H,8D"), 1000), cards("10S,6C,QD"), pa)
    assert (line.outcome, line.net) == (WIN, 1000)


@pytest.mark.parametrize(
    ("player", "dealer", "fragment"),
    [
        # seed 000: against an A or ten-value up "[the dealer] shall make no payment ... until
        # ... the dealer receives his second card"
        ("AS,KD", "AH", "second card decides"),
        ("10S,8D", "10H", "not finished"),
        ("10S,8D", "10H,2D", "not finished"),
    ],
)
def test_an_unfinished_dealer_hand_settles_nothing(pa, cards, player, dealer, fragment):
    with pytest.raises(WagerError, match=fragment):
        settle_hand(PlayerHand(cards(player), 1000), cards(dealer), pa)


def test_a_bust_loses_at_once_whatever_the_dealer_shows(pa, cards):
    """Seed 000: "If you "break" (over 21), you lose, even if the dealer breaks."."""
    [line] = settle_hand(PlayerHand(cards("10S,6D,9C"), 1000), cards("AH"), pa)
    assert (line.outcome, line.net) == (Outcome.LOSE, -1000)


def test_a_natural_against_a_2_to_9_is_paid_before_the_dealers_second_card(pa, cards):
    """Seed 000: against 2-9 up "the dealer shall announce and pay the Blackjack odds of 3 to 2
    and shall remove your cards before any player receives a third card"."""
    [line] = settle_hand(PlayerHand(cards("AS,KD"), 1000), cards("9H"), pa)
    assert (line.outcome, line.net) == (BJ, 1500)


@pytest.mark.parametrize("stake", [2.5, True, "500", -1])
def test_side_bet_and_insurance_stakes_are_whole_cents(pa, stake):
    xtreme_rules = pa.side_bets.twenty_one_plus_three_xtreme
    result = xtreme.evaluate(parse_cards("QH,KH"), parse_cards("JH")[0], xtreme_rules)
    with pytest.raises(WagerError, match="whole cents"):
        settle_side_bet(stake, result)
    with pytest.raises(WagerError, match="whole cents"):
        settle_insurance(stake, True, pa)


def test_double_up_blackjack_rules_1_and_2(double_up, cards):
    """1. "Natural Blackjacks are paid 3:2 or 6:5 when the dealer does not have a blackjack."
    2. "Natural Blackjacks push when the dealer also has a blackjack." """
    [paid] = settle_hand(PlayerHand(cards("AS,KD"), 1000), cards("10S,7C"), double_up)
    assert (paid.outcome, paid.net) == (BJ, 1500)
    [push] = settle_hand(PlayerHand(cards("AS,KD"), 1000), cards("AH,KC"), double_up)
    assert (push.outcome, push.net) == (PUSH, 0)


# ---- no hole-card reader: what a dealer blackjack takes --------------------------------------


@pytest.mark.parametrize(
    ("takes", "split_index", "expected"),
    [
        ("all_wagers", 0, {"main": (LOSE, -1000), "double_down": (LOSE, -1000)}),
        ("all_wagers", 1, {"main": (LOSE, -1000), "double_down": (LOSE, -1000)}),
        ("original_wager", 0, {"main": (LOSE, -1000), "double_down": (PUSH, 0)}),
        # a hand made by splitting carries no part of the original wager: all returned
        ("original_wager", 1, {"main": (PUSH, 0), "double_down": (PUSH, 0)}),
    ],
)
def test_dealer_blackjack_without_peek(no_peek, cards, takes, split_index, expected):
    rules = no_peek(takes)
    assert (rules.dealer.peek, rules.dealer.blackjack_takes) == ("none", takes)
    hand = PlayerHand(
        cards("5H,6D,9C"),
        1000,
        double_down=1000,
        from_split=split_index > 0,
        split_index=split_index,
    )
    assert lines(settle_hand(hand, cards("AH,KC"), rules)) == expected


@pytest.mark.parametrize("takes", ["all_wagers", "original_wager"])
def test_no_peek_blackjack_against_blackjack_still_pushes(no_peek, cards, takes):
    [line] = settle_hand(PlayerHand(cards("AS,QD"), 1000), cards("AH,KC"), no_peek(takes))
    assert (line.outcome, line.net) == (PUSH, 0)


def test_blackjack_takes_matters_only_without_a_peek(edited, cards):
    """``blackjack_takes``: "without a peek, what a dealer blackjack takes"; with the reader's
    peek every wager on the hand goes to a dealer blackjack."""
    rules = edited(
        "pa-standard",
        ("ends_on_16 = false", 'ends_on_16 = false\nblackjack_takes = "original_wager"'),
    )
    assert rules.dealer.peek == "electronic"
    hand = PlayerHand(cards("5H,6D,9C"), 1000, double_down=1000)
    assert lines(settle_hand(hand, cards("AH,KC"), rules)) == {
        "main": (LOSE, -1000),
        "double_down": (LOSE, -1000),
    }


def test_no_peek_split_aces_21_loses_to_dealer_blackjack(no_peek, cards):
    hand = PlayerHand(cards("AS,QD"), 1000, from_split=True, split_index=0)
    [line] = settle_hand(hand, cards("AH,KC"), no_peek("original_wager"))
    assert (line.outcome, line.net) == (LOSE, -1000)


# ---- wagers are whole cents -----------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"wager": 10.0},
        {"wager": 0},
        {"wager": -500},
        {"wager": True},
        {"wager": "1000"},
        {"wager": 1000, "double_down": 500.0},
        {"wager": 1000, "double_up": -1},
    ],
)
def test_player_hand_refuses_money_that_is_not_whole_cents(cards, kwargs):
    with pytest.raises(WagerError):
        PlayerHand(cards("10H,7D"), **kwargs)


@pytest.mark.parametrize(
    ("player", "kwargs"),
    [
        ("AS,KD", {"double_up": 1000}),  # seed 003 rule 4: "except for a natural blackjack"
        ("10H,6D", {"double_down": 1000, "surrendered": True}),
        ("10H,6D", {"double_up": 1000, "surrendered": True}),
    ],
)
def test_no_stake_is_silently_dropped(double_up, cards, player, kwargs):
    """Every cent on the layout is either refused up front or settled by a line."""
    try:
        hand = PlayerHand(cards(player), 1000, **kwargs)
    except WagerError:
        return
    settled = settle_hand(hand, cards("10S,7C"), double_up)
    assert sum(s.stake for s in settled) == 1000 + sum(
        kwargs.get(k, 0) for k in ("double_down", "double_up")
    )


def test_wagers_of_zero_make_no_line(pa, cards):
    settled = settle_hand(PlayerHand(cards("10H,9D"), 1000), cards("10S,7C"), pa)
    assert [s.wager for s in settled] == ["main"]


# ---- properties ------------------------------------------------------------------------------

PROFILES: dict[str, HouseRules] = {
    name: load_game(name) for name in ("pa-standard", "double-up", "online-6deck")
}
PROFILES["six-to-five"] = edit_profile("double-up", ('pays = "3 to 2"', 'pays = "6 to 5"'))
for _takes in ("all_wagers", "original_wager"):
    PROFILES[f"no-peek-{_takes}"] = edit_profile(
        "pa-standard",
        ('hole_card = "face_down"', 'hole_card = "after_players"'),
        ('peek = "electronic"', f'peek = "none"\nblackjack_takes = "{_takes}"'),
    )

any_card = st.sampled_from(ALL_CARDS)


def play_dealer(draw: list[Card], rules: HouseRules) -> tuple[Card, ...]:
    """The dealer's final hand from the cards in ``draw``, played by the profile's rules."""
    hand: list[Card] = []
    extra = iter(parse_cards("KS") * 20)
    for next_card in [*draw, *extra]:
        hand.append(next_card)
        if len(hand) >= 2 and not dealer_must_hit(
            hand, hit_soft_17=rules.dealer.hit_soft_17, stop_on_16=rules.dealer.ends_on_16
        ):
            break
    return tuple(hand)


@st.composite
def settled_hands(draw):
    name = draw(st.sampled_from(sorted(PROFILES)))
    rules = PROFILES[name]
    wager = draw(st.integers(1, 10**6))
    player = tuple(draw(st.lists(any_card, min_size=2, max_size=6)))
    two = len(player) == 2
    surrendered = two and draw(st.booleans()) and draw(st.booleans())
    double_down = 0
    double_up = 0
    if len(player) == 3:  # "Only one card is dealt to the hand." (seed 000)
        double_down = draw(st.integers(0, wager))
    if two and not surrendered and rules.double_up.offered and not is_blackjack(player):
        # seed 003 rule 4 ("any 2-card hand ... except for a natural blackjack") and rule 5
        # (then "they must stand on that hand")
        double_up = draw(st.integers(0, wager))
    split_index = draw(st.integers(0, 3))
    from_split = split_index > 0 or draw(st.booleans())
    hand = PlayerHand(
        player,
        wager,
        double_down=double_down,
        double_up=double_up,
        from_split=from_split,
        split_index=split_index,
        surrendered=surrendered,
    )
    dealer = play_dealer(draw(st.lists(any_card, min_size=2, max_size=10)), rules)
    return name, rules, hand, dealer


def max_odds(rules: HouseRules) -> Fraction:
    return max(rules.blackjack.pays.ratio, Fraction(1))


@given(settled_hands())
def test_settlement_money_is_whole_cents_and_bounded(case):
    _, rules, hand, dealer = case
    settled = settle_hand(hand, dealer, rules)
    stakes = hand.wager + hand.double_down + hand.double_up
    assert settled
    assert sum(s.stake for s in settled) == stakes  # every wager placed is settled
    net = 0
    for line in settled:
        for amount in (line.stake, line.paid, line.returned, line.net):
            assert type(amount) is int  # money is never a float
        assert line.stake > 0
        assert line.paid >= 0
        assert 0 <= line.returned <= line.stake
        assert -line.stake <= line.net <= line.stake * max_odds(rules)
        net += line.net
    assert -stakes <= net <= stakes * max_odds(rules)


@given(settled_hands())
def test_each_outcome_moves_the_money_it_names(case):
    _, rules, hand, dealer = case
    for line in settle_hand(hand, dealer, rules):
        if line.outcome is PUSH:
            assert (line.paid, line.returned, line.net) == (0, line.stake, 0)
        elif line.outcome is LOSE:
            assert (line.paid, line.returned) == (0, 0)
        elif line.outcome is WIN:
            assert line.returned == line.stake
            assert line.paid == line.stake  # every non-natural win is even money
        elif line.outcome is BJ:
            assert line.returned == line.stake
            assert line.paid == rules.blackjack.pays.amount(line.stake)
        else:
            assert line.outcome is SURRENDER
            assert (line.paid, line.returned) == (0, line.stake // 2)


@given(settled_hands())
def test_busted_hands_lose_every_wager_and_naturals_never_lose(case):
    _, rules, hand, dealer = case
    settled = settle_hand(hand, dealer, rules)
    if hand.surrendered:
        assert [s.outcome for s in settled] == [SURRENDER]
    elif hand_total(hand.cards).is_bust:
        # seed 000: "If you "break" (over 21), you lose, even if the dealer breaks."
        assert {s.outcome for s in settled} == {LOSE}
    elif hand.is_blackjack:
        [line] = settled
        assert line.outcome is (PUSH if is_blackjack(dealer) else BJ)
    elif is_blackjack(dealer):
        # seed 000: "If you have a 3 or more card 21 and the dealer has a 2 card 21
        # (Blackjack), you lose." Without a peek some wagers may come back; none wins.
        main = next(s for s in settled if s.wager == "main")
        assert main.net <= 0
        assert all(s.outcome in (LOSE, PUSH) for s in settled)
        if rules.dealer.blackjack_takes == "all_wagers" or hand.split_index == 0:
            assert main.outcome is LOSE


@given(settled_hands())
def test_main_wager_follows_the_totals(case):
    _, rules, hand, dealer = case
    if hand.surrendered or hand.is_blackjack or is_blackjack(dealer):
        return
    player, house = hand_total(hand.cards), hand_total(dealer)
    if player.is_bust:
        return
    main = next(s for s in settle_hand(hand, dealer, rules) if s.wager == "main")
    if rules.dealer.ends_on_16 and house.total == 16:
        assert main.outcome is (WIN if player.total == 21 else PUSH), RULE_10
    elif house.is_bust or player.total > house.total:
        assert main.outcome is WIN
    elif player.total < house.total:
        assert main.outcome is LOSE
    elif (
        player.total == 21
        and len(hand.cards) == 2
        and len(dealer) > 2
        and rules.split.two_card_21_beats_dealer_21
    ):
        # a split hand's 21 in two cards against a dealer's 21 in more (seed 000)
        assert main.outcome is WIN
    else:
        assert main.outcome is PUSH


@given(settled_hands(), st.integers(2, 5))
def test_settlement_scales_with_the_stake(case, factor):
    """Every wager multiplied by ``factor`` multiplies every line by ``factor`` (up to the
    breakage of a natural's odds)."""
    _, rules, hand, dealer = case
    bigger = PlayerHand(
        hand.cards,
        hand.wager * factor,
        double_down=hand.double_down * factor,
        double_up=hand.double_up * factor,
        from_split=hand.from_split,
        split_index=hand.split_index,
        surrendered=hand.surrendered,
    )
    small = settle_hand(hand, dealer, rules)
    big = settle_hand(bigger, dealer, rules)
    assert [(s.wager, s.outcome) for s in small] == [(s.wager, s.outcome) for s in big]
    for s, b in zip(small, big, strict=True):
        assert b.stake == s.stake * factor
        if s.outcome in (WIN, LOSE, PUSH):
            assert b.net == s.net * factor
        else:
            assert abs(b.net - s.net * factor) < factor


@given(
    st.lists(any_card, min_size=2, max_size=5),
    st.lists(any_card, min_size=2, max_size=5),
    st.lists(any_card, min_size=2, max_size=8),
)
def test_a_better_total_never_settles_worse(first, second, dealer_draw):
    """Between two unbroken, unsplit non-natural hands against the same dealer hand, the one
    with the higher total never nets less (PA rules)."""
    rules = PROFILES["pa-standard"]
    dealer = play_dealer(dealer_draw, rules)
    hands = []
    for player in (first, second):
        count = hand_total(player)
        if count.is_bust or is_blackjack(player):
            return
        [line] = settle_hand(PlayerHand(tuple(player), 1000), dealer, rules)
        hands.append((count.total, line.net))
    (t1, n1), (t2, n2) = sorted(hands)
    assert n1 <= n2
    if t1 == t2:
        assert n1 == n2
