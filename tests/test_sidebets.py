"""Side bets through their evaluators and settle_side_bet (seeds 000, 001, 003, 004)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from conftest import edit_profile
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import WagerError
from controller.games import load_game
from controller.rules.cards import ALL_CARDS, Rank, parse_card, parse_cards
from controller.rules.hand import dealer_must_hit, hand_total
from controller.rules.pays import FixedAward, MeterShare, Odds
from controller.rules.settlement import (
    Outcome,
    settle_offered_side_bet,
    settle_side_bet,
)
from controller.rules.sidebets import (
    BetResult,
    SideBetResult,
    blackjack_tie,
    blazing_7s,
    bonus_16,
    ez_bust,
    lucky_ladies,
)
from controller.rules.sidebets import xtreme as xtreme_bet

PA = load_game("pa-standard")
LL = PA.side_bets.lucky_ladies
XT = PA.side_bets.twenty_one_plus_three_xtreme
B7 = PA.side_bets.blazing_7s
EZ = PA.side_bets.ez_bust
B16 = load_game("double-up").side_bets.bonus_16
TIE = load_game("blackjack-tie").side_bets.blackjack_tie

any_card = st.sampled_from(ALL_CARDS)


# ---- Lucky Ladies (seed 000) -----------------------------------------------------------------

LUCKY_LADIES_RULE = (
    "Lucky Ladies is an optional side bet on where you win if your hand totals 20 on your first "
    "two cards. If you are lucky enough to get suited 20 (both cards same suit), matched 20 (both "
    "cards the identical) or two Queen of Hearts the payouts get bigger."
)

LUCKY_LADIES = [
    (
        "QH,QH",
        True,
        "queen_hearts_pair_dealer_blackjack",
        1000,
        "2 Queen of Hearts with Dealer Blackjack 1,000 to 1",
    ),
    ("QH,QH", False, "queen_hearts_pair", 200, "2 Queen of Hearts 200 to 1"),
    ("KS,KS", False, "matched_20", 25, "Matched Pair 25 to 1 (both cards the identical)"),
    ("KS,KS", True, "matched_20", 25, "the dealer's blackjack lifts only two Queen of Hearts"),
    ("10D,10D", False, "matched_20", 25, "Matched Pair"),
    ("QD,QD", False, "matched_20", 25, "two queens of diamonds: matched, not Queen of Hearts"),
    ("KS,QS", False, "suited_20", 10, "Suited Pair 10 to 1 (both cards same suit)"),
    ("QH,KH", True, "suited_20", 10, "a suited 20 with one Queen of Hearts"),
    ("AS,9S", False, "suited_20", 10, "suited 20 (A-9 totals 20; docs: 'A-9 suited')"),
    ("QS,QH", False, "any_20", 4, "two queens of different suits are not identical"),
    ("QH,QD", True, "any_20", 4, "one Queen of Hearts is not two"),
    ("JC,10D", False, "any_20", 4, "Any 20 4 to 1"),
    ("AD,9C", False, "any_20", 4, "an ace and a nine totals 20"),
]


@pytest.mark.parametrize(("hand", "dealer_bj", "outcome", "win", "line"), LUCKY_LADIES)
def test_lucky_ladies_tiers(hand, dealer_bj, outcome, win, line):
    result = lucky_ladies.evaluate(parse_cards(hand), dealer_bj, LL)
    assert (result.result, result.outcome, result.pays) == (BetResult.WIN, outcome, Odds(win)), line
    assert result.bet == "lucky_ladies"
    settled = settle_side_bet(500, result)
    assert (settled.paid, settled.returned, settled.net) == (500 * win, 500, 500 * win)


@pytest.mark.parametrize("hand", ["10H,9D", "AS,KD", "QH,AH", "5C,5D", "2S,8H", "9C,9D"])
def test_lucky_ladies_loses_without_a_20(hand):
    result = lucky_ladies.evaluate(parse_cards(hand), True, LL)
    assert result.result is BetResult.LOSE, LUCKY_LADIES_RULE
    assert settle_side_bet(500, result).net == -500


@pytest.mark.parametrize(("hand", "outcome"), [("AS,9S", "suited_20"), ("AS,9D", "any_20")])
def test_soft_20_qualifies_per_profile(hand, outcome):
    assert lucky_ladies.evaluate(parse_cards(hand), False, LL).outcome == outcome
    hard_only = edit_profile(
        "pa-standard", ("soft_20_qualifies = true", "soft_20_qualifies = false")
    ).side_bets.lucky_ladies
    assert lucky_ladies.evaluate(parse_cards(hand), False, hard_only).result is BetResult.LOSE
    # hard 20s still win
    assert lucky_ladies.evaluate(parse_cards("KS,QS"), False, hard_only).outcome == "suited_20"


@given(any_card, any_card, st.booleans())
def test_lucky_ladies_wins_exactly_on_a_two_card_20(first, second, dealer_bj):
    result = lucky_ladies.evaluate((first, second), dealer_bj, LL)
    assert result.wins is (hand_total((first, second)).total == 20)
    if result.wins:
        assert result.pays == LL.pays[result.outcome]
        if first.suit == second.suit:
            assert result.outcome != "any_20"  # suited pays at least the suited line
        if result.outcome.startswith("queen_hearts"):
            assert first == second == parse_card("QH")


# ---- 21+3 Xtreme (seed 000) ------------------------------------------------------------------

XTREME_RULE = "Your first two cards and the dealer up card make up your three card hand."

XTREME = [
    ("9H,10H", "JH", "straight_flush", 30, "Straight Flush 30 to 1"),
    ("3S,2S", "AS", "straight_flush", 30, "Note: 3-2-Ace sequence wins (suited)"),
    ("QD,KD", "AD", "straight_flush", 30, "Q-K-A suited, queen_king_ace_straight = true"),
    ("7C,7D", "7S", "three_of_a_kind", 20, "Three-of-a-Kind 20 to 1"),
    ("7D,7D", "7D", "three_of_a_kind", 20, "suited trips pay as three of a kind, not flush"),
    ("QH,QH", "QH", "three_of_a_kind", 20, "suited trips"),
    ("9H,10C", "JH", "straight", 10, "Straight 10 to 1"),
    ("3S,2D", "AC", "straight", 10, "Note: 3-2-Ace sequence wins."),
    ("AS,2D", "3C", "straight", 10, "3-2-Ace in any order"),
    ("KS,AD", "QC", "straight", 10, "Q-K-A per queen_king_ace_straight = true"),
    ("10S,JD", "QC", "straight", 10, "a ten in a straight"),
    ("2H,9H", "KH", "flush", 5, "Flush 5 to 1"),
    ("AH,9H", "KH", "flush", 5, "an ace-high flush that is no straight"),
]


@pytest.mark.parametrize(("hand", "up", "outcome", "win", "line"), XTREME)
def test_xtreme_lines(hand, up, outcome, win, line):
    result = xtreme_bet.evaluate(parse_cards(hand), parse_card(up), XT)
    assert (result.result, result.outcome, result.pays) == (BetResult.WIN, outcome, Odds(win)), line
    assert settle_side_bet(1000, result).net == 1000 * win


@pytest.mark.parametrize(
    ("hand", "up", "outcome", "why"),
    [
        ("KS,AD", "2C", "lose", "K-A-2 never wraps"),
        ("AS,2D", "KC", "lose", "K-A-2 never wraps, in any order"),
        ("KS,AS", "2S", "flush", "K-A-2 suited is only a flush"),
        ("7C,7D", "8S", "lose", "a pair is nothing"),
        ("2C,4D", "6S", "lose", "no sequence"),
        ("QS,KD", "JC", "straight", "J-Q-K is a straight"),
    ],
)
def test_xtreme_wraparound_and_near_misses(hand, up, outcome, why):
    assert xtreme_bet.evaluate(parse_cards(hand), parse_card(up), XT).outcome == outcome, why


def test_queen_king_ace_follows_the_profile_key():
    no_qka = edit_profile(
        "pa-standard", ("queen_king_ace_straight = true", "queen_king_ace_straight = false")
    ).side_bets.twenty_one_plus_three_xtreme
    assert xtreme_bet.evaluate(parse_cards("QC,KD"), parse_card("AS"), no_qka).result is (
        BetResult.LOSE
    )
    assert xtreme_bet.evaluate(parse_cards("QD,KD"), parse_card("AD"), no_qka).outcome == "flush"
    # "3-2-Ace sequence wins" whatever the key says
    assert xtreme_bet.evaluate(parse_cards("3C,2D"), parse_card("AS"), no_qka).outcome == (
        "straight"
    )


@given(any_card, any_card, any_card)
def test_xtreme_is_a_three_card_poker_hand(a, b, up):
    result = xtreme_bet.evaluate((a, b), up, XT)
    ranks = sorted(int(c.rank) for c in (a, b, up))
    suited = a.suit == b.suit == up.suit
    run = ranks in ([1, 2, 3], [1, 12, 13]) or (len(set(ranks)) == 3 and ranks[2] - ranks[0] == 2)
    trips = len(set(ranks)) == 1
    expected = (
        "three_of_a_kind"
        if trips
        else "straight_flush"
        if run and suited
        else "straight"
        if run
        else "flush"
        if suited
        else "lose"
    )
    assert result.outcome == expected
    # the order of the three cards does not matter
    for x, y, z in itertools.permutations((a, b, up)):
        assert xtreme_bet.evaluate((x, y), z, XT).outcome == expected


# ---- Blazing 7's (seeds 000, 001) -------------------------------------------------------------

BLAZING = [
    (
        "7D,7D",
        "7D",
        "three_sevens_diamonds",
        MeterShare(Fraction(100)),
        "Three 7's - Diamonds 100% of meter",
    ),
    (
        "7S,7S",
        "7S",
        "three_sevens_suited",
        MeterShare(Fraction(10)),
        "Three 7's - Suited (Other) 10% of meter",
    ),
    ("7H,7H", "7H", "three_sevens_suited", MeterShare(Fraction(10)), "hearts are 'other'"),
    ("7C,7C", "7C", "three_sevens_suited", MeterShare(Fraction(10)), "clubs are 'other'"),
    (
        "7H,7D",
        "7H",
        "three_sevens_same_color",
        FixedAward(250_000),
        "Three 7's - Same Color $2,500 (red)",
    ),
    ("7D,7D", "7H", "three_sevens_same_color", FixedAward(250_000), "two diamonds and a heart"),
    ("7S,7C", "7C", "three_sevens_same_color", FixedAward(250_000), "black"),
    ("7S,7D", "7C", "three_sevens", FixedAward(100_000), "Three 7's $1,000"),
    ("7D,7D", "7S", "three_sevens", FixedAward(100_000), "two diamonds and a spade"),
    ("7S,7D", "8C", "first_two_sevens", FixedAward(12_500), "First Two Cards 7's $125"),
    ("7D,7D", "AD", "first_two_sevens", FixedAward(12_500), "two 7s, no third"),
    (
        "7S,KD",
        "7C",
        "one_seven",
        FixedAward(1_000),
        "Either of First Two Cards - 7's $10 (a dealer 7 with one player 7 is not three 7's)",
    ),
    ("2D,7D", "7D", "one_seven", FixedAward(1_000), "Either of First Two Cards - 7's $10"),
]


@pytest.mark.parametrize(("hand", "up", "outcome", "pay", "line"), BLAZING)
def test_blazing_7s_lines(hand, up, outcome, pay, line):
    result = blazing_7s.evaluate(parse_cards(hand), parse_card(up), B7)
    assert (result.result, result.outcome, result.pays) == (BetResult.WIN, outcome, pay), line


@pytest.mark.parametrize(("hand", "up"), [("8S,6D", "7C"), ("KD,AD", "7D"), ("6D,8D", "7D")])
def test_blazing_7s_needs_a_seven_in_the_first_two_cards(hand, up):
    """ "The player's Blazing 7's wager will win if the player has any 7's in their initial two
    cards." A dealer 7 alone wins nothing."""
    result = blazing_7s.evaluate(parse_cards(hand), parse_card(up), B7)
    assert result.result is BetResult.LOSE
    assert settle_offered_side_bet(500, result, PA).net == -500


@pytest.mark.parametrize(
    ("hand", "up", "net"),
    [
        # "Original wager is NOT returned": a $10 award on the $5 wager nets the player $5
        ("7S,KD", "2C", 500),
        ("7S,7D", "8C", 12_000),  # $125 - $5
        ("7S,7D", "7C", 99_500),  # $1,000 - $5
        ("7H,7D", "7H", 249_500),  # $2,500 - $5
    ],
)
def test_blazing_7s_stake_is_not_returned(hand, up, net):
    result = blazing_7s.evaluate(parse_cards(hand), parse_card(up), B7)
    direct = settle_side_bet(500, result, stake_returned=False)
    assert (direct.returned, direct.net) == (0, net)
    offered = settle_offered_side_bet(500, result, PA)
    assert (offered.outcome, offered.returned, offered.net) == (Outcome.WIN, 0, net)
    assert offered.paid == result.pays.cents
    assert offered.meter is None


@pytest.mark.parametrize(("hand", "up", "share"), [("7D,7D", "7D", 100), ("7S,7S", "7S", 10)])
def test_blazing_7s_meter_lines_go_to_the_jackpot_controller(hand, up, share):
    result = blazing_7s.evaluate(parse_cards(hand), parse_card(up), B7)
    settled = settle_offered_side_bet(500, result, PA)
    assert settled.meter == MeterShare(Fraction(share))
    assert settled.meter_pool == "blazing_7s"  # linked across the four properties
    assert (settled.paid, settled.returned, settled.net) == (0, 0, -500)
    assert settled.outcome is Outcome.WIN


def test_blazing_7s_wager_is_fixed_at_5_dollars():
    """ "Players may place the optional $5 side wager"."""
    result = blazing_7s.evaluate(parse_cards("7S,KD"), parse_card("2C"), B7)
    for stake in (100, 499, 501, 1000):
        with pytest.raises(WagerError, match=r"fixed at \$5\.00"):
            settle_offered_side_bet(stake, result, PA)


def test_a_side_bet_the_game_does_not_offer_is_refused():
    result = lucky_ladies.evaluate(parse_cards("KS,QS"), False, LL)
    with pytest.raises(WagerError, match="offers no lucky_ladies"):
        settle_offered_side_bet(500, result, load_game("online-6deck"))


@given(any_card, any_card, any_card)
def test_blazing_7s_award_grows_with_the_sevens(a, b, up):
    result = blazing_7s.evaluate((a, b), up, B7)
    sevens = sum(c.rank is Rank.SEVEN for c in (a, b))
    assert result.wins is (sevens > 0)
    if sevens == 1:
        assert result.outcome == "one_seven"
    elif sevens == 2 and up.rank is not Rank.SEVEN:
        assert result.outcome == "first_two_sevens"
    elif sevens == 2:
        assert result.outcome.startswith("three_sevens")


# ---- EZ Bust (seed 000) ----------------------------------------------------------------------

EZ_OFFER_RULE = (
    "each player is offered the opportunity to place an EZ Bust wager if the dealer is showing "
    'a "bust card," i.e., a two, three, four, five or six.'
)


@pytest.mark.parametrize("up", ["2C", "3D", "4H", "5S", "6C"])
def test_ez_bust_offered_against_2_to_6(up):
    assert ez_bust.is_offered(parse_card(up)), EZ_OFFER_RULE
    ez_bust.check_offered(parse_card(up))


@pytest.mark.parametrize("up", ["AS", "7C", "8D", "9H", "10S", "JC", "QD", "KH"])
def test_ez_bust_refused_against_other_up_cards(up):
    assert not ez_bust.is_offered(parse_card(up))
    with pytest.raises(WagerError, match=f"shows {up}"):
        ez_bust.check_offered(parse_card(up))
    with pytest.raises(WagerError, match="only when the dealer shows a 2, 3, 4, 5 or 6"):
        ez_bust.evaluate(parse_cards(f"{up},KD,5C"), all_player_hands_busted=False, rules=EZ)


EZ_BUST = [
    (
        "6C,10D,8S",
        False,
        BetResult.WIN,
        500,
        "If the dealer draws at least one additional card and busts, all EZ Bust Blackjack wagers "
        "win. The player is paid 1:1",
    ),
    ("2C,2D,2S,2H,5C,10D", False, BetResult.WIN, 500, "busts after drawing several cards"),
    (
        "6C,10D,AS",
        False,
        BetResult.LOSE,
        -500,
        "If the dealer fails to bust after drawing at least one card, all EZ Bust Blackjack wagers "
        "lose",
    ),
    ("5C,10D,6S", False, BetResult.LOSE, -500, "the dealer draws to 21"),
    (
        "6C,10D",
        True,
        BetResult.PUSH,
        0,
        "If all players' hands bust, the dealer does not play its hand to completion and any "
        "undecided EZ Bust Blackjack bet is a push.",
    ),
    (
        "6C,AD",
        False,
        BetResult.LOSE,
        -500,
        "no_draw = 'lose': the dealer stood on 6-A without drawing and did not bust",
    ),
    ("6C,KD", False, BetResult.LOSE, -500, "a two-card 16 did not bust either"),
]


@pytest.mark.parametrize(("dealer", "all_busted", "result", "net", "rule"), EZ_BUST)
def test_ez_bust(dealer, all_busted, result, net, rule):
    got = ez_bust.evaluate(parse_cards(dealer), all_player_hands_busted=all_busted, rules=EZ)
    assert got.result is result, rule
    assert settle_offered_side_bet(500, got, PA).net == net, rule


def test_ez_bust_no_draw_push_returns_the_wager():
    push_rules = edit_profile(
        "pa-standard", ('no_draw = "lose"', 'no_draw = "push"')
    ).side_bets.ez_bust
    got = ez_bust.evaluate(parse_cards("6C,AD"), all_player_hands_busted=False, rules=push_rules)
    assert got.result is BetResult.PUSH
    settled = settle_side_bet(500, got)
    assert (settled.outcome, settled.returned, settled.net) == (Outcome.PUSH, 500, 0)
    # a dealer who drew still settles on the bust
    drew = ez_bust.evaluate(
        parse_cards("6C,AD,5S,KD"), all_player_hands_busted=False, rules=push_rules
    )
    assert drew.result is BetResult.WIN


@given(
    st.sampled_from([c for c in ALL_CARDS if 2 <= c.value <= 6]),
    st.lists(any_card, min_size=2, max_size=7),
)
def test_ez_bust_wins_only_when_the_dealer_drew_and_broke(up, rest):
    dealer = (up, *rest)
    got = ez_bust.evaluate(dealer, all_player_hands_busted=False, rules=EZ)
    assert got.wins is hand_total(dealer).is_bust
    assert got.result is not BetResult.PUSH


# ---- 16 Bonus (seed 003) ---------------------------------------------------------------------

BONUS_16_RULE = (
    "The 16 Bonus side wager wins, if the dealer's hand reaches a total of 16. The number of "
    "cards in the dealer's hand determines the payout according to the pay tables below"
)

BONUS_16 = [
    # dealer hand, paytable, line, odds
    ("10S,6D", "1", "2", 4),
    ("AS,5D", "1", "2", 4),  # soft 16: "a soft or hard total of 16" (rule 10)
    ("5S,AD", "2", "2", 4),
    ("2S,4D,10C", "1", "3", 5),
    ("AS,2D,3C", "1", "3", 5),  # soft 16 in three cards
    ("2S,2D,2C,10H", "1", "4", 10),
    ("2S,2D,2C,2H,8C", "2", "5", 50),
    ("2S,2D,2C,2H,2C,6D", "1", "6+", 100),
    ("2S,2D,2C,2H,2C,6D", "2", "6", 100),
    ("AS,AD,AC,AH,AS,AD", "1", "6+", 100),  # six aces: soft 16
    ("2S,2D,2C,2H,2C,2D,4H", "1", "6+", 100),  # paytable 1: 6+ pays 100 to 1
    ("2S,2D,2C,2H,2C,2D,4H", "2", "7+", 500),  # paytable 2: 7+ pays 500 to 1
    ("2S,2D,2C,2H,2C,2D,2H,2S", "2", "7+", 500),
    ("AS,AD,AC,AH,2S,2D,2C,AD", "1", "5", 50),  # soft 16 at the fifth card
]


@pytest.mark.parametrize(("dealer", "paytable", "line", "win"), BONUS_16)
def test_bonus_16_pays_by_the_dealers_card_count(dealer, paytable, line, win):
    got = bonus_16.evaluate(parse_cards(dealer), B16, paytable)
    assert (got.result, got.outcome, got.pays) == (BetResult.WIN, line, Odds(win)), BONUS_16_RULE
    assert settle_side_bet(500, got).net == 500 * win


@pytest.mark.parametrize("dealer", ["10S,7D", "10S,5D,2C", "AS,6D,10C,2D", "10S,QD", "AS,KD"])
def test_bonus_16_loses_when_the_dealer_never_totals_16(dealer):
    for paytable in ("1", "2"):
        assert bonus_16.evaluate(parse_cards(dealer), B16, paytable).result is BetResult.LOSE


def test_bonus_16_paytable_in_force_comes_from_the_profile():
    seven = parse_cards("2S,2D,2C,2H,2C,2D,4H")
    assert bonus_16.evaluate(seven, B16).pays == Odds(100)  # double-up.toml: paytable = "1"
    table_2 = edit_profile("double-up", ('paytable = "1"', 'paytable = "2"')).side_bets.bonus_16
    assert bonus_16.evaluate(seven, table_2).pays == Odds(500)


def test_bonus_16_counts_cards_when_16_is_first_reached():
    """Under rule 10 the game ends at 16, so the dealer hand played by the profile ends there."""
    hand = parse_cards("AS,6D")  # soft 17: rule 11 hits
    assert dealer_must_hit(hand, hit_soft_17=True, stop_on_16=True)
    hand = parse_cards("AS,6D,9C")  # hard 16: the game ends
    assert not dealer_must_hit(hand, hit_soft_17=True, stop_on_16=True)
    assert bonus_16.evaluate(hand, B16).outcome == "3"


# ---- Blackjack Tie (seed 004) ----------------------------------------------------------------

TIE_RULE_2 = (
    "2. If the player made a bonus wager, and the dealers hand ties the players hand exactly, "
    "... the player wins the total of that bonus (See paytable below) and pushes the primary "
    "wager."
)
TIE_RULE_4 = (
    "4. Left Side (LS) and Right Side (RS) bonus wagers win ONLY if the player and dealer have a "
    "respective matching hand or exact tie."
)
TIE_RULE_8 = (
    "8. ... 21 Value hands do not tie with Blackjack hands, resulting in losing bonus wagers."
)

TIES = [
    # player, dealer: the tie, and every bonus wager that wins on it with its odds
    ("10H,7D", "9S,8C", {"tie_17": 50, "left_side": 18}),
    ("10H,8D", "9S,9C", {"tie_18": 55, "left_side": 18}),
    ("10H,9D", "10S,9C", {"tie_19": 55, "left_side": 18}),
    ("10H,QD", "KS,QC", {"tie_20": 25, "right_side": 24}),
    ("7H,7D,7C", "10S,6C,5D", {"tie_21": 250, "right_side": 24}),
    ("AS,KD", "AH,QC", {"tie_blackjack": 400, "right_side": 24}),
    ("AS,6D", "10S,7C", {"tie_17": 50, "left_side": 18}),  # soft 17 ties hard 17
]


@pytest.mark.parametrize(("player", "dealer", "winners"), TIES)
@pytest.mark.parametrize("bonus", list(blackjack_tie.LABELS))
def test_blackjack_tie_bonus_wagers(player, dealer, winners, bonus):
    got = blackjack_tie.evaluate(bonus, parse_cards(player), parse_cards(dealer), TIE)
    if bonus in winners:
        assert (got.result, got.outcome, got.pays) == (
            BetResult.WIN,
            bonus,
            Odds(winners[bonus]),
        ), TIE_RULE_2
        assert settle_side_bet(100, got).net == 100 * winners[bonus]
    else:
        # "3. ... The player would win 55 to 1 on the Tie 18 bonus wager and lose the other
        # bonus wagers."
        assert got.result is BetResult.LOSE, TIE_RULE_4


NO_TIE = [
    (
        "10H,8D",
        "10S,7C",
        "4. If the dealer makes 17 and the player makes 18 with a bonus wager on "
        "LS then the player loses the LS wager.",
    ),
    ("7H,7D,7C", "AH,QC", TIE_RULE_8),
    ("AS,KD", "7H,7D,7C", TIE_RULE_8),
    ("10H,6D,9C", "10S,6C,9D", "a broken hand ties nothing"),
    ("10H,5D", "10S,6C,9D", "no tie against a broken dealer"),
]


@pytest.mark.parametrize(("player", "dealer", "rule"), NO_TIE)
@pytest.mark.parametrize("bonus", list(blackjack_tie.LABELS))
def test_blackjack_tie_loses_without_an_exact_tie(player, dealer, rule, bonus):
    got = blackjack_tie.evaluate(bonus, parse_cards(player), parse_cards(dealer), TIE)
    assert got.result is BetResult.LOSE, rule


@pytest.mark.parametrize("bonus", list(blackjack_tie.LABELS))
def test_split_aces_and_ten_is_21_not_blackjack(bonus):
    """6. "When splitting aces, only the 1st hand is used for the bonus wager and this is
    considered 21, and NOT BLACKJACK in the event a ten value card is drawn."."""
    first_hand = parse_cards("AS,KD")
    against_21 = blackjack_tie.evaluate(
        bonus, first_hand, parse_cards("10S,6C,5D"), TIE, player_from_split=True
    )
    assert against_21.wins is (bonus in ("tie_21", "right_side"))
    if bonus == "tie_21":
        assert against_21.pays == Odds(250)
    against_blackjack = blackjack_tie.evaluate(
        bonus, first_hand, parse_cards("AH,QC"), TIE, player_from_split=True
    )
    assert against_blackjack.result is BetResult.LOSE


@pytest.mark.parametrize("bonus", list(blackjack_tie.LABELS))
def test_a_surrendered_hand_ties_nothing(bonus):
    got = blackjack_tie.evaluate(
        bonus, parse_cards("10H,7D"), parse_cards("9S,8C"), TIE, surrendered=True
    )
    assert got.result is BetResult.LOSE


def test_an_unknown_bonus_is_refused():
    with pytest.raises(WagerError, match="'tie_22' is no Blackjack Tie bonus wager"):
        blackjack_tie.evaluate("tie_22", parse_cards("10H,7D"), parse_cards("9S,8C"), TIE)


TIE_RULE_5 = (
    "5. The player may only wager a total of all bonus wagers not to exceed the total of the "
    "primary blackjack wager. Example: If $10 is bet on the primary wager, only a total of $10 "
    "may be wagered on one or distributed among all bonus bets."
)


@pytest.mark.parametrize(
    "bonus_wagers",
    [
        {"tie_18": 1000},
        {"tie_17": 300, "tie_18": 300, "tie_21": 400},
        {"left_side": 500, "right_side": 500},
        {"tie_blackjack": 100},
        {},
    ],
)
def test_bonus_wagers_up_to_the_primary_wager_are_allowed(bonus_wagers):
    blackjack_tie.check_wagers(1000, bonus_wagers)


@pytest.mark.parametrize(
    ("bonus_wagers", "total"),
    [
        ({"tie_18": 1001}, "$10.01"),
        ({"tie_17": 500, "tie_18": 500, "tie_21": 100}, "$11.00"),
        ({"left_side": 1000, "right_side": 1000}, "$20.00"),
    ],
)
def test_bonus_wagers_above_the_primary_wager_are_refused(bonus_wagers, total):
    with pytest.raises(WagerError) as info:
        blackjack_tie.check_wagers(1000, bonus_wagers)
    message = str(info.value)
    assert f"bonus wagers total {total}" in message, TIE_RULE_5
    assert "primary wager of $10.00" in message
    assert "may not exceed the primary wager" in message


@pytest.mark.parametrize(
    ("bonus_wagers", "fragment"),
    [
        ({"tie_16": 100}, "'tie_16' is no Blackjack Tie bonus wager"),
        ({"tie_17": 0}, "more than $0"),
    ],
)
def test_malformed_bonus_wagers_are_refused(bonus_wagers, fragment):
    with pytest.raises(WagerError, match=fragment.replace("$", r"\$")):
        blackjack_tie.check_wagers(1000, bonus_wagers)


@given(
    st.lists(any_card, min_size=2, max_size=5),
    st.lists(any_card, min_size=2, max_size=5),
    st.sampled_from(list(blackjack_tie.LABELS)),
)
def test_tie_bonus_needs_equal_hands(player, dealer, bonus):
    got = blackjack_tie.evaluate(bonus, player, dealer, TIE)
    if got.wins:
        p, d = hand_total(player), hand_total(dealer)
        assert p.total == d.total and not p.is_bust and p.total >= 17
        assert (len(player) == 2) == (len(dealer) == 2) or p.total != 21


# ---- settle_side_bet -------------------------------------------------------------------------

results = st.one_of(
    st.builds(
        SideBetResult,
        st.just("x"),
        st.just(BetResult.WIN),
        st.just("line"),
        st.just("Line"),
        st.one_of(
            st.builds(Odds, st.integers(1, 1000), st.integers(1, 5)),
            st.builds(FixedAward, st.integers(1, 10**7)),
            st.builds(MeterShare, st.integers(1, 100).map(Fraction)),
        ),
    ),
    st.builds(
        SideBetResult,
        st.just("x"),
        st.sampled_from([BetResult.LOSE, BetResult.PUSH]),
        st.just("lose"),
        st.just("No"),
    ),
)


@given(st.integers(1, 10**6), results, st.booleans())
def test_settle_side_bet_money(stake, result, stake_returned):
    settled = settle_side_bet(stake, result, stake_returned=stake_returned)
    for amount in (settled.stake, settled.paid, settled.returned, settled.net):
        assert type(amount) is int
    assert settled.stake == stake
    if result.result is BetResult.PUSH:
        assert (settled.paid, settled.returned, settled.net) == (0, stake, 0)
    elif result.result is BetResult.LOSE:
        assert settled.net == -stake
    else:
        pay = result.pays
        assert settled.returned == (stake if stake_returned else 0)
        if isinstance(pay, Odds):
            assert settled.paid == pay.amount(stake)
            assert 0 <= settled.net + (0 if stake_returned else stake) <= stake * pay.ratio
        elif isinstance(pay, FixedAward):
            assert settled.paid == pay.cents
        else:
            assert (settled.paid, settled.meter) == (0, pay)


def test_malformed_settlement_calls_are_refused_with_a_clear_error():
    from controller.errors import WagerError
    from controller.games import load_game
    from controller.rules.sidebets import bonus_16, ez_bust

    pa, double_up = load_game("pa-standard"), load_game("double-up")
    with pytest.raises(WagerError, match="no dealer card"):
        ez_bust.evaluate((), all_player_hands_busted=False, rules=pa.side_bets.ez_bust)
    with pytest.raises(WagerError, match="paytables: '1', '2'"):
        bonus_16.evaluate(parse_cards("10H,6D"), double_up.side_bets.bonus_16, "3")
