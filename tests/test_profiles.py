"""House-rule profiles: the four shipped games carry what their rule cards say, and a broken
profile is refused with an error naming the file, the section and the key."""

from __future__ import annotations

import functools
import hashlib
from fractions import Fraction

import pytest
from conftest import PROFILES, profile_text

from controller.errors import ProfileError
from controller.games import PACKAGED_GAMES, available_games, find_game, load_game, read_game
from controller.rules.pays import FixedAward, MeterShare, Odds
from controller.rules.profile import HouseRules, parse_profile
from controller.rules.sidebets.bonus_16 import PAYTABLE_1, PAYTABLE_2


def dig(rules: HouseRules, path: str):
    return functools.reduce(getattr, path.split("."), rules)


@pytest.mark.parametrize("name", PROFILES)
def test_every_shipped_profile_loads(name):
    rules = load_game(name)
    assert rules.name == name
    assert name in available_games()
    assert rules.game.sources, "a profile names the rule cards it implements"


CARD_VALUES = [
    # ---- seed 000/001: PA standard
    ("pa-standard", "dealer.soft_17", "stand", "Dealer must draw to 16, and stand on all 17's."),
    ("pa-standard", "dealer.ends_on_16", False, "Dealer must draw to 16"),
    ("pa-standard", "blackjack.pays", Odds(3, 2), "pay the Blackjack odds of 3 to 2"),
    (
        "pa-standard",
        "insurance.amount",
        "up_to_half",
        "Up to half of the initial wager may be bet as insurance",
    ),
    (
        "pa-standard",
        "insurance.pays",
        Odds(2, 1),
        'Winning "insurance wagers" shall be paid to odds of 2 to 1.',
    ),
    ("pa-standard", "double.allowed_on", "any_two", 'You may "double down" on any two cards'),
    ("pa-standard", "double.after_split", True, "or the first two of any split pair"),
    (
        "pa-standard",
        "double.on_two_card_21",
        False,
        "except for Blackjack or a count of 21 in two cards",
    ),
    (
        "pa-standard",
        "double.amount",
        "up_to",
        "an additional wager not in excess of the amount of your original wager",
    ),
    ("pa-standard", "split.match", "value", "You may split two cards of identical value"),
    ("pa-standard", "split.max_hands", 3, "you may split one more time for a total of three hands"),
    ("pa-standard", "split.max_hands_aces", 2, "A pair of Aces may only be split one time"),
    ("pa-standard", "split.split_aces_one_card", True, "and each will receive one card"),
    ("pa-standard", "surrender.allowed", "late", "After the dealer has checked for Blackjack"),
    ("pa-standard", "dealer.peek", "electronic", "After the dealer has checked for Blackjack"),
    ("pa-standard", "double_up.offered", False, "(no Double Up wager on the PA card)"),
    ("pa-standard", "side_bets.blazing_7s.wager", 500, "the optional $5 side wager"),
    ("pa-standard", "mystery.offered", True, "If you make a Five Card Progressive wager"),
    ("pa-standard", "mystery.eligible_wagers", ("blazing_7s",), "Five Card Progressive wager"),
    # ---- seed 002: online six-deck
    ("online-6deck", "shoe.decks", 6, "played with a six-deck shoe"),
    (
        "online-6deck",
        "shoe.reshuffle_after",
        Fraction(2, 3),
        "with a reshuffle after two thirds of the cards have been drawn",
    ),
    (
        "online-6deck",
        "dealer.soft_17",
        "stand",
        "taking cards until her total hand value is greater than sixteen",
    ),
    ("online-6deck", "blackjack.pays", Odds(3, 2), "one and a half times the bet (3 to 2 odds)"),
    (
        "online-6deck",
        "insurance.amount",
        "fixed_half",
        "The insurance bet is fixed as half the original bet",
    ),
    ("online-6deck", "insurance.pays", Odds(2, 1), "and pays 2 to 1 if the dealer has a blackjack"),
    (
        "online-6deck",
        "double.after_split",
        False,
        'The "Double Down" option is not available to split hands.',
    ),
    ("online-6deck", "double.amount", "equal", "the player can duplicate the bet"),
    (
        "online-6deck",
        "split.match",
        "rank",
        "Combinations of different cards such as a jack/king ... cannot be split.",
    ),
    ("online-6deck", "split.max_hands", 3, "making a maximum of three separate hands"),
    (
        "online-6deck",
        "split.split_aces_one_card",
        True,
        "split aces, which are dealt one and only one additional card",
    ),
    ("online-6deck", "surrender.allowed", "late", 'The "Surrender" option'),
    ("online-6deck", "blackjack.even_money", False, "(card offers only INSURANCE and SKIP)"),
    # ---- seed 003: Double Up Blackjack
    (
        "double-up",
        "dealer.soft_17",
        "hit",
        "11. The dealer will hit on soft 17 and stand on all other 17's.",
    ),
    (
        "double-up",
        "dealer.ends_on_16",
        True,
        "10. If the dealer is dealt or draws to a soft or hard total of 16, the game ends.",
    ),
    (
        "double-up",
        "split.max_hands",
        4,
        "12. Player can split pairs other than Aces, 3 times for 4 hands.",
    ),
    ("double-up", "split.max_hands_aces", 2, "16. Cannot re-split aces."),
    (
        "double-up",
        "split.split_aces_one_card",
        True,
        "15. Cannot hit or double down after split aces.",
    ),
    ("double-up", "surrender.allowed", "none", "17. Surrender is not allowed."),
    ("double-up", "double.allowed_on", "any_two", "13. Double down on any 2-card hand."),
    ("double-up", "double.after_split", True, "14. Double down after splits."),
    (
        "double-up",
        "insurance.pays",
        Odds(2, 1),
        "18. Insurance if taken when the dealer shows an Ace pays 2:1.",
    ),
    (
        "double-up",
        "blackjack.even_money",
        True,
        "3. Player's with a blackjack may elect to take even money when the dealer shows an Ace.",
    ),
    ("double-up", "double_up.offered", True, "4. Any player can make an optional Double Up wager"),
    (
        "double-up",
        "double_up.amount",
        "equal",
        "4. ... equal to the amount of their original wager",
    ),
    (
        "double-up",
        "double_up.after_split",
        True,
        "4. ... on any 2-card hand, including split hands",
    ),
    ("double-up", "side_bets.bonus_16.paytable", "1", "Paytable 1"),
    # ---- seed 004: Blackjack Tie (on the PA house rules)
    ("blackjack-tie", "blackjack.pays", Odds(3, 2), "1. ... according to casino house rules"),
    (
        "blackjack-tie",
        "dealer.hole_card",
        "face_down",
        "2. ... the dealer will receive two cards with his 2nd card face down",
    ),
]


@pytest.mark.parametrize(
    ("name", "path", "value", "rule"), CARD_VALUES, ids=[f"{n}:{p}" for n, p, *_ in CARD_VALUES]
)
def test_profile_carries_what_its_card_says(name, path, value, rule):
    assert dig(load_game(name), path) == value, rule


@pytest.mark.parametrize(
    ("name", "offered"),
    [
        ("pa-standard", ("lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s", "ez_bust")),
        ("double-up", ("bonus_16",)),
        ("online-6deck", ()),  # seed 002: no side bets
        ("blackjack-tie", ("blackjack_tie",)),
    ],
)
def test_each_game_offers_exactly_its_cards_side_bets(name, offered):
    assert load_game(name).side_bets.offered() == offered


PA_PAYTABLES = [
    # seed 000, LUCKY LADIES table
    (
        "lucky_ladies",
        "queen_hearts_pair_dealer_blackjack",
        Odds(1000),
        "2 Queen of Hearts with Dealer Blackjack 1,000 to 1",
    ),
    ("lucky_ladies", "queen_hearts_pair", Odds(200), "2 Queen of Hearts 200 to 1"),
    ("lucky_ladies", "matched_20", Odds(25), "Matched Pair 25 to 1"),
    ("lucky_ladies", "suited_20", Odds(10), "Suited Pair 10 to 1"),
    ("lucky_ladies", "any_20", Odds(4), "Any 20 4 to 1"),
    # seed 000, 21+3 XTREME table
    ("twenty_one_plus_three_xtreme", "straight_flush", Odds(30), "Straight Flush 30 to 1"),
    ("twenty_one_plus_three_xtreme", "three_of_a_kind", Odds(20), "Three-of-a-Kind 20 to 1"),
    ("twenty_one_plus_three_xtreme", "straight", Odds(10), "Straight 10 to 1"),
    ("twenty_one_plus_three_xtreme", "flush", Odds(5), "Flush 5 to 1"),
    # seed 000, BLAZING 7'S table
    (
        "blazing_7s",
        "three_sevens_diamonds",
        MeterShare(Fraction(100)),
        "Three 7's - Diamonds 100% of meter",
    ),
    (
        "blazing_7s",
        "three_sevens_suited",
        MeterShare(Fraction(10)),
        "Three 7's - Suited (Other) 10% of meter",
    ),
    ("blazing_7s", "three_sevens_same_color", FixedAward(250_000), "Three 7's - Same Color $2,500"),
    ("blazing_7s", "three_sevens", FixedAward(100_000), "Three 7's $1,000"),
    ("blazing_7s", "first_two_sevens", FixedAward(12_500), "First Two Cards 7's $125"),
    ("blazing_7s", "one_seven", FixedAward(1_000), "Either of First Two Cards - 7's $10"),
    # seed 000, EZ BUST: "The player is paid 1:1 on the EZ Bust Blackjack wager."
    ("ez_bust", "dealer_busts", Odds(1), "The player is paid 1:1"),
]


@pytest.mark.parametrize(("bet", "line", "pay", "rule"), PA_PAYTABLES)
def test_pa_standard_paytables_are_the_cards(pa, bet, line, pay, rule):
    assert getattr(pa.side_bets, bet).pays[line] == pay, rule


TIE_PAYTABLE = [
    ("left_side", 18, "LS (left side bet) 17, 18, or 19 18 to 1"),
    ("right_side", 24, "RS (right side bet) 20,21 and Blackjack 24 to 1"),
    ("tie_17", 50, "17 50 to 1"),
    ("tie_18", 55, "18 55 to 1"),
    ("tie_19", 55, "19 55 to 1"),
    ("tie_20", 25, "20 25 to 1"),
    ("tie_21", 250, "21 (with 3 or more cards) 250 to 1"),
    ("tie_blackjack", 400, "Blackjack (two cards only) 400 to 1"),
]


@pytest.mark.parametrize(("line", "win", "rule"), TIE_PAYTABLE)
def test_blackjack_tie_paytable_is_seed_004(tie, line, win, rule):
    assert tie.side_bets.blackjack_tie.pays[line] == Odds(win), rule


def test_double_up_bonus_16_has_both_paytables_of_seed_003(double_up):
    bonus = double_up.side_bets.bonus_16
    # "Dealer's Card Count  Paytable 1  Paytable 2": 2 4:1, 3 5:1, 4 10:1, 5 50:1, 6+ 100:1,
    # 7+ - / 500:1
    assert dict(bonus.paytables["1"]) == {
        "2": Odds(4),
        "3": Odds(5),
        "4": Odds(10),
        "5": Odds(50),
        "6+": Odds(100),
    }
    assert dict(bonus.paytables["2"]) == {
        "2": Odds(4),
        "3": Odds(5),
        "4": Odds(10),
        "5": Odds(50),
        "6": Odds(100),
        "7+": Odds(500),
    }
    assert dict(bonus.paytables["1"]) == PAYTABLE_1
    assert dict(bonus.paytables["2"]) == PAYTABLE_2
    assert bonus.pays is bonus.paytables["1"]


@pytest.mark.parametrize("name", PROFILES)
def test_profiles_are_frozen(name):
    rules = load_game(name)
    with pytest.raises(AttributeError):
        rules.dealer.soft_17 = "hit"
    for bet in rules.side_bets.offered():
        pays = getattr(rules.side_bets, bet)
        pays = pays.paytables if bet == "bonus_16" else pays.pays
        with pytest.raises(TypeError):
            pays["any"] = Odds(1)  # paytables cannot be changed behind the profile's back


def test_an_empty_profile_takes_the_documented_defaults():
    rules = parse_profile("", "empty.toml", default_name="empty")
    assert rules.name == "empty"
    assert rules.shoe.decks == 6 and rules.shoe.reshuffle_after == Fraction(3, 4)
    assert rules.dealer.soft_17 == "stand" and rules.blackjack.pays == Odds(3, 2)
    assert rules.side_bets.offered() == ()
    assert not rules.mystery.offered


def test_a_side_bet_section_alone_offers_the_bet_with_the_cards_paytable():
    rules = parse_profile("[side_bets.lucky_ladies]\n", "ll.toml")
    assert rules.side_bets.offered() == ("lucky_ladies",)
    assert rules.side_bets.lucky_ladies.pays["any_20"] == Odds(4)


def test_with_decks_changes_only_the_decks(pa):
    eight = pa.with_decks(8)
    assert eight.shoe.decks == 8 and pa.shoe.decks == 6
    assert eight.shoe.reshuffle_after == pa.shoe.reshuffle_after
    assert eight.side_bets == pa.side_bets
    with pytest.raises(ProfileError, match=r"--decks: \[shoe\] key 'decks'"):
        pa.with_decks(9)


# ---- errors: a typo or a bad value names file, section and key ---------------------------

BROKEN = [
    # (profile, old text, new text, section, key, fragment of the problem)
    ("pa-standard", "[dealer]", "[dealr]", "dealr", None, "unknown section"),
    ("pa-standard", 'soft_17 = "stand"', 'soft17 = "stand"', "dealer", "soft17", "unknown key"),
    ("pa-standard", "decks = 6", 'decks = "six"', "shoe", "decks", "not a whole number"),
    ("pa-standard", "decks = 6", "decks = 6.0", "shoe", "decks", "not a whole number"),
    ("pa-standard", "decks = 6", "decks = 9", "shoe", "decks", "above the maximum 8"),
    ("pa-standard", "decks = 6", "decks = 0", "shoe", "decks", "below the minimum 1"),
    (
        "pa-standard",
        'reshuffle_after = "3/4"',
        'reshuffle_after = "1/10"',
        "shoe",
        "reshuffle_after",
        "below the minimum 1/4",
    ),
    (
        "pa-standard",
        'reshuffle_after = "3/4"',
        'reshuffle_after = "1/0"',
        "shoe",
        "reshuffle_after",
        "a fraction like",
    ),
    (
        "pa-standard",
        'reshuffle_after = "3/4"',
        "reshuffle_after = 0.75",
        "shoe",
        "reshuffle_after",
        "not a fraction",
    ),
    (
        "pa-standard",
        'soft_17 = "stand"',
        'soft_17 = "sometimes"',
        "dealer",
        "soft_17",
        "choose one of 'stand', 'hit'",
    ),
    (
        "pa-standard",
        "ends_on_16 = false",
        'ends_on_16 = "no"',
        "dealer",
        "ends_on_16",
        "not true or false",
    ),
    (
        "pa-standard",
        'hole_card = "face_down"',
        'hole_card = "after_players"',
        "dealer",
        "peek",
        "an electronic peek needs a hole card",
    ),
    (
        "pa-standard",
        'pays = "3 to 2"',
        'pays = "2 to 1"',
        "blackjack",
        "pays",
        "choose one of 3 to 2, 6 to 5",
    ),
    (
        "pa-standard",
        'amount = "up_to_half"',
        'amount = "all"',
        "insurance",
        "amount",
        "'up_to_half', 'fixed_half'",
    ),
    ("pa-standard", "max_hands = 3", "max_hands = 0", "split", "max_hands", "below the minimum"),
    (
        "pa-standard",
        "max_hands_aces = 2",
        "max_hands_aces = 9",
        "split",
        "max_hands_aces",
        "above the maximum 8",
    ),
    (
        "pa-standard",
        'eligible_wagers = ["blazing_7s"]',
        'eligible_wagers = "blazing_7s"',
        "mystery",
        "eligible_wagers",
        "not a list of text",
    ),
    (
        "pa-standard",
        'sources = ["000',
        'sources = [1, "000',
        "game",
        "sources",
        "not a list of text",
    ),
    # paytable lines name the paytable as the section and the line as the key
    (
        "pa-standard",
        'any_20 = "4 to 1"',
        'any_20 = "four to one"',
        "side_bets.lucky_ladies.pays",
        "any_20",
        "cannot read paytable entry",
    ),
    (
        "pa-standard",
        'any_20 = "4 to 1"',
        'any_21 = "4 to 1"',
        "side_bets.lucky_ladies.pays",
        "any_21",
        "unknown outcome",
    ),
    (
        "pa-standard",
        'any_20 = "4 to 1"',
        "any_20 = 4",
        "side_bets.lucky_ladies.pays",
        "any_20",
        "not text",
    ),
    (
        "pa-standard",
        'any_20 = "4 to 1"',
        'any_20 = "$4"',
        "side_bets.lucky_ladies.pays",
        "any_20",
        "not allowed",
    ),
    (
        "pa-standard",
        'one_seven = "$10"',
        'one_seven = "10 to 1"',
        "side_bets.blazing_7s.pays",
        "one_seven",
        "a fixed award like '$2,500' or a meter share",
    ),
    (
        "pa-standard",
        'three_sevens_suited = "10% of meter"',
        'three_sevens_suited = "110% of meter"',
        "side_bets.blazing_7s.pays",
        "three_sevens_suited",
        "at most 100%",
    ),
    (
        "pa-standard",
        'wager = "$5"',
        'wager = "five dollars"',
        "side_bets.blazing_7s",
        "wager",
        "cannot read amount",
    ),
    ("pa-standard", 'wager = "$5"', "wager = 5", "side_bets.blazing_7s", "wager", "not text"),
    (
        "pa-standard",
        'no_draw = "lose"',
        'no_draw = "win"',
        "side_bets.ez_bust",
        "no_draw",
        "'lose', 'push'",
    ),
    (
        "pa-standard",
        "queen_king_ace_straight = true",
        "queen_king_ace_straight = 1",
        "side_bets.twenty_one_plus_three_xtreme",
        "queen_king_ace_straight",
        "not true or false",
    ),
    (
        "pa-standard",
        "[side_bets.ez_bust]\n",
        "[side_bets.ez_busts]\n",
        "side_bets",
        None,
        "unknown side bet 'ez_busts'",
    ),
    # mystery: an eligible wager must be a progressive side bet the profile offers
    (
        "pa-standard",
        'eligible_wagers = ["blazing_7s"]',
        'eligible_wagers = ["lucky_ladies"]',
        "mystery",
        "eligible_wagers",
        "'lucky_ladies' is not a progressive side bet",
    ),
    (
        "pa-standard",
        'eligible_wagers = ["blazing_7s"]',
        "eligible_wagers = []",
        "mystery",
        "eligible_wagers",
        "at least one eligible wager",
    ),
    # bonus_16 paytables
    (
        "double-up",
        'paytable = "1"',
        'paytable = "3"',
        "side_bets.bonus_16",
        "paytable",
        "'3' names no paytable; choose one of '1', '2'",
    ),
    (
        "double-up",
        '"5" = "50 to 1"',
        '"5" = "fifty"',
        "side_bets.bonus_16.paytables.1",
        "5",
        "not odds",
    ),
    (
        "double-up",
        '"5" = "50 to 1"',
        '"5" = "$50"',
        "side_bets.bonus_16.paytables.1",
        "5",
        "not odds",
    ),
    (
        "double-up",
        '"5" = "50 to 1"',
        '"7" = "50 to 1"',
        "side_bets.bonus_16.paytables.1",
        "7",
        "expected '5' here",
    ),
    (
        "double-up",
        '"6+" = "100 to 1"',
        '"6" = "100 to 1"',
        "side_bets.bonus_16.paytables.1",
        "6",
        "expected '6+' here",
    ),
    (
        "double-up",
        '"7+" = "500 to 1"',
        '"7+" = 500',
        "side_bets.bonus_16.paytables.2",
        "7+",
        "not odds",
    ),
    (
        "double-up",
        'paytable = "1"',
        'paytable = "1"\nmultiplier = 2',
        "side_bets.bonus_16",
        "multiplier",
        "unknown key",
    ),
    (
        "double-up",
        'amount = "equal"',
        'amount = "double"',
        "double_up",
        "amount",
        "'equal', 'up_to'",
    ),
    (
        "online-6deck",
        'amount = "fixed_half"',
        'amount = "fixed_halve"',
        "insurance",
        "amount",
        "not allowed",
    ),
    (
        "blackjack-tie",
        'tie_21 = "250 to 1"',
        'tie_22 = "250 to 1"',
        "side_bets.blackjack_tie.pays",
        "tie_22",
        "unknown outcome",
    ),
]


@pytest.mark.parametrize(
    ("name", "old", "new", "section", "key", "problem"),
    BROKEN,
    ids=[f"{n}:{new.splitlines()[-1]}" for n, _, new, *_ in BROKEN],
)
def test_a_broken_profile_names_file_section_and_key(
    tmp_path, name, old, new, section, key, problem
):
    text = profile_text(name)
    assert old in text
    path = tmp_path / f"{name}-broken.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ProfileError) as info:
        load_game(str(path))
    error = info.value
    assert (error.source, error.section, error.key) == (str(path), section, key)
    message = str(error)
    assert message.startswith(f"{path}: [{section}]")
    if key is not None:
        assert f"key '{key}'" in message
    assert problem in message
    assert isinstance(error, ValueError)


def test_a_comma_only_paytable_entry_names_the_line():
    text = profile_text("pa-standard").replace('any_20 = "4 to 1"', 'any_20 = ", to 1"')
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "x.toml")
    assert (info.value.section, info.value.key) == ("side_bets.lucky_ladies.pays", "any_20")


def test_a_zero_bonus_16_line_names_the_line():
    text = profile_text("double-up").replace('"5" = "50 to 1"', '"5" = "0 to 1"', 1)
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "x.toml")
    assert (info.value.section, info.value.key) == ("side_bets.bonus_16.paytables.1", "5")


def test_a_mystery_bonus_without_its_progressive_wager_is_refused():
    text = profile_text("pa-standard")
    start = text.index("[side_bets.blazing_7s]")
    end = text.index("[side_bets.ez_bust]")
    with pytest.raises(ProfileError) as info:
        parse_profile(text[:start] + text[end:], "no-blazing.toml")
    assert (info.value.section, info.value.key) == ("mystery", "eligible_wagers")
    assert "progressive side bets offered here: none" in str(info.value)


def test_invalid_toml_names_the_file():
    with pytest.raises(ProfileError, match=r"^bad\.toml: top level: not valid TOML"):
        parse_profile("[shoe\ndecks = 6", "bad.toml")


def test_a_section_that_is_not_a_table_is_refused():
    with pytest.raises(ProfileError, match=r"\[shoe\]: must be a table of keys"):
        parse_profile("shoe = 6", "x.toml")


def test_an_unknown_game_lists_the_known_ones():
    with pytest.raises(ProfileError) as info:
        load_game("pa-standart")
    message = str(info.value)
    assert message.startswith("pa-standart:")
    for name in PROFILES:
        assert name in message


def test_a_profile_directory_in_the_environment_adds_profiles_never_replaces_one(
    tmp_path, monkeypatch
):
    """The package's profiles win (issue 29 item 6): a file elsewhere cannot stand in for an
    approved pay table under its name."""
    house = profile_text("pa-standard").replace("decks = 6", "decks = 8", 1)
    assert house != profile_text("pa-standard")
    (tmp_path / "pa-standard.toml").write_text(house, encoding="utf-8")
    own = house.replace('name = "pa-standard"', 'name = "house-8deck"', 1)
    (tmp_path / "house-8deck.toml").write_text(own, encoding="utf-8")
    monkeypatch.setenv("TABLE_CONTROLLER_GAMES", str(tmp_path))
    assert available_games() == sorted([*PROFILES, "house-8deck"])
    assert find_game("pa-standard") == PACKAGED_GAMES.joinpath("pa-standard.toml")
    assert load_game("pa-standard").shoe.decks == 6  # the shipped one wins over the house's copy
    rules, source = read_game("house-8deck")
    assert rules.name == "house-8deck" and not source.packaged
    assert source.sha256 == hashlib.sha256(own.encode()).hexdigest()
    assert read_game("pa-standard")[1].packaged
    assert load_game("double-up").shoe.decks == 6  # the rest still come from the package
    monkeypatch.delenv("TABLE_CONTROLLER_GAMES")
    assert load_game("pa-standard").shoe.decks == 6


def test_the_shipped_profiles_are_package_data():
    assert PACKAGED_GAMES.joinpath("pa-standard.toml").is_file()
    assert sorted(p.name for p in PACKAGED_GAMES.iterdir() if p.name.endswith(".toml")) == sorted(
        f"{name}.toml" for name in PROFILES
    )


def test_a_missing_profile_file_is_named(tmp_path):
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(ProfileError, match="no such profile file"):
        load_game(str(missing))


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [
        ('pays = "3 to 2"', 'pays = "6 to 5"', Odds(6, 5)),  # seed 003 rule 1: "3:2 or 6:5"
        ('pays = "3 to 2"', 'pays = "6:5"', Odds(6, 5)),
    ],
)
def test_a_6_to_5_table_is_allowed(edited, old, new, value):
    assert edited("double-up", (old, new)).blackjack.pays == value
