"""The main game's expected value (controller/rules/ev): published figures, a brute force, rules.

Published figures are the Wizard of Odds blackjack house edge calculator
(https://wizardofodds.com/games/blackjack/calculator/), which gives the house edge to five
decimals of a percent for "optimal" (composition-dependent) play and for basic strategy
"with continuous shuffler" (a full shoe every round, as computed here). The calculator's
output for these rule sets was captured in public projects that test against it (quoted in
each test). Our split hands are an approximation (each split hand sees the pair cards
removed, not the other hands' cards): agreement within 0.001% of a wager is asked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json

import pytest

from controller.cli import main
from controller.errors import ProfileError
from controller.games import load_game
from controller.rules.ev import analyse, basic_strategy_edge, game_of
from controller.rules.ev.chart import ChartPolicy, build_chart
from controller.rules.ev.engine import expected_value
from controller.rules.ev.game import Game
from controller.rules.profile import SECTIONS, DealerRules


@functools.cache
def _ev(game: Game) -> float:
    """The best-play EV of ``game`` (a frozen dataclass), computed once for this module: the
    tests below that compare rule sets share their base games (six decks without surrender is
    asked for by three of them), and the figure of a game never changes."""
    return expected_value(game)[0]


# --- published figures -------------------------------------------------------------------------


def _basic(game: Game) -> float:
    """The basic-strategy house edge (the chart's play)."""
    return -expected_value(game, ChartPolicy(build_chart(game)))[0]


def _edges(game: Game) -> tuple[float, float]:
    return _basic(game), -_ev(game)


def test_six_decks_s17_das_resplit_to_four_against_the_wizard_of_odds_calculator():
    """6 decks, S17, double any two and after split, resplit to 4 hands, no resplit or hit
    of split aces, original bet only against a dealer blackjack, no surrender, 3:2.
    https://wizardofodds.com/games/blackjack/calculator/ : optimal 0.40312%, basic strategy
    with continuous shuffler 0.40622% (as captured in a public project's economy review)."""
    game = Game(decks=6, max_hands=4, surrender=False, peek=False, original_bets_only=True)
    basic, optimal = _edges(game)
    assert optimal == pytest.approx(0.0040312, abs=1e-5)
    assert basic == pytest.approx(0.0040622, abs=1e-5)
    assert basic > optimal


def test_eight_decks_s17_das_no_resplit_against_the_wizard_of_odds_calculator():
    """8 decks, S17, double any two and after split, split to 2 hands (no resplit), one card
    to split aces, original bet only against a dealer blackjack, no surrender, 3:2.
    https://wizardofodds.com/games/blackjack/calculator/ : basic strategy with continuous
    shuffler 0.48768% (captured 2026-08-23 in a public project's published anchor test)."""
    game = Game(decks=8, max_hands=2, surrender=False, peek=False, original_bets_only=True)
    basic, optimal = _edges(game)
    assert basic == pytest.approx(0.0048768, abs=1e-5)
    assert optimal < basic


def test_single_deck_s17_and_h17_against_the_published_rule_table():
    """Single deck, double any two, one card to split aces, S17, no surrender, no double after
    split: "the approximate edge on this game is -0.02%", and "Dealer hits soft 17: -0.20%"
    (for the player), http://www.thecolorofblackjack.com/solution_one.html. Its figures are
    approximate, to about 0.05%."""
    s17 = Game(decks=1, max_hands=4, surrender=False, double_after_split=False)
    h17 = dataclasses.replace(s17, hit_soft_17=True)
    basic_s17, optimal_s17 = _edges(s17)
    basic_h17 = _basic(h17)  # its optimal figure is not asked
    assert basic_s17 == pytest.approx(-0.0002, abs=5e-4)
    assert basic_h17 == pytest.approx(-0.0002 + 0.0020, abs=5e-4)
    assert basic_h17 - basic_s17 == pytest.approx(0.0020, abs=3e-4)
    assert optimal_s17 < basic_s17  # composition-dependent play gains most at one deck


def test_six_decks_h17_das_resplit_to_four_is_near_the_calculator():
    """6 decks, H17, DAS, aces split once, up to 4 hands, 3:2, no surrender: the calculator's
    0.639% quoted in https://wizardofvegas.com/forum/questions-and-answers/math/39582-how-were-house-edges-for-bj-games-determined
    (with a cut card, which adds about 0.02% to the full-shoe figure)."""
    basic = _basic(Game(decks=6, hit_soft_17=True, max_hands=4, surrender=False))
    assert 0.0060 < basic < 0.00639


# --- rules move the figure ------------------------------------------------------------------


def test_a_fourth_split_hand_is_worth_about_five_in_a_hundred_thousand():
    three = Game(decks=6, max_hands=3, surrender=False)
    four = dataclasses.replace(three, max_hands=4)
    gain = _ev(four) - _ev(three)
    assert 3e-5 < gain < 1.2e-4


def test_original_bets_only_without_peek_equals_a_peek_without_surrender():
    peek = Game(decks=2, surrender=False)
    obo = dataclasses.replace(peek, peek=False, original_bets_only=True)
    assert _ev(obo) == pytest.approx(_ev(peek), abs=1e-12)


def test_no_hole_card_losing_every_wager_costs_the_player():
    peek = Game(decks=6, surrender=False)
    enhc = dataclasses.replace(peek, peek=False)
    assert 0.0005 < _ev(peek) - _ev(enhc) < 0.0025


def test_rules_move_the_figure_the_known_way():
    base = Game(decks=6, surrender=False)
    ev = _ev(base)
    assert _ev(dataclasses.replace(base, hit_soft_17=True)) < ev
    assert _ev(dataclasses.replace(base, surrender=True)) > ev
    assert _ev(dataclasses.replace(base, double_after_split=False)) < ev
    six_five = _ev(dataclasses.replace(base, blackjack_pays=6 / 5))
    assert ev - six_five == pytest.approx(0.0136, abs=0.001)  # 6:5 costs about 1.4%
    assert _ev(dataclasses.replace(base, two_card_21_wins=True)) > ev


# --- brute force --------------------------------------------------------------------------------

TINY = (2, 1, 1, 1, 2, 1, 1, 1, 1, 5)  # 16 cards, 99 points: no round can empty it


@functools.cache
def _finals(up: int, hole: int, rem: tuple[int, ...], hit_soft_17: bool) -> dict[int, float]:
    return _dealer_finals(up, hole, list(rem), hit_soft_17)


def _dealer_finals(up: int, hole: int, rem: list[int], hit_soft_17: bool) -> dict[int, float]:
    """Dealer's final total (22 = bust) from up and hole, drawing from ``rem``."""
    finals: dict[int, float] = {}

    def draw(cards: list[int], p: float) -> None:
        hard = sum(cards)
        soft = 1 in cards and hard <= 11
        total = hard + 10 if soft else hard
        if total > 21:
            finals[22] = finals.get(22, 0.0) + p
            return
        if total > 17 or (total == 17 and not (soft and hit_soft_17)):
            finals[total] = finals.get(total, 0.0) + p
            return
        left = sum(rem)
        for value in range(1, 11):
            if rem[value - 1]:
                q = rem[value - 1] / left
                rem[value - 1] -= 1
                draw([*cards, value], p * q)
                rem[value - 1] += 1

    draw([up, hole], 1.0)
    return finals


def _brute_force(
    counts: tuple[int, ...], *, hit_soft_17: bool = False, double: bool = True
) -> float:
    """The best expected value of a no-split, no-surrender game with a peek, by explicit
    enumeration of the hole card (kept as a distribution the player never sees)."""
    n = sum(counts)
    shoe = list(counts)
    may_double = double
    total_ev = 0.0

    def stand_value(player: list[int], rem: list[int], w: dict[int, float], up: int) -> float:
        hard = sum(player)
        mine = hard + 10 if 1 in player and hard <= 11 else hard
        value = 0.0
        for hole, weight in w.items():
            rem[hole - 1] -= 1
            for dealer, p in _finals(up, hole, tuple(rem), hit_soft_17).items():
                value += weight * p * (1 if dealer == 22 or mine > dealer else -(mine < dealer))
            rem[hole - 1] += 1
        return value

    def children(rem: list[int], w: dict[int, float]):
        left = sum(rem)
        for value in range(1, 11):
            new_w = {
                hole: weight * (rem[value - 1] - (hole == value)) / (left - 1)
                for hole, weight in w.items()
                if rem[value - 1] - (hole == value) > 0
            }
            if new_w:
                yield value, new_w

    def best(player: list[int], rem: list[int], w: dict[int, float], up: int, two: bool) -> float:
        options = [stand_value(player, rem, w, up)]
        if sum(player) + 10 * (1 in player and sum(player) <= 11) < 21:
            hit = double = 0.0
            for value, new_w in children(rem, w):
                rem[value - 1] -= 1
                hand = [*player, value]
                if sum(hand) > 21:
                    hit -= sum(new_w.values())
                    double -= 2 * sum(new_w.values())
                else:
                    hit += best(hand, rem, new_w, up, False)
                    double += 2 * stand_value(hand, rem, new_w, up)
                rem[value - 1] += 1
            options.append(hit)
            if two and may_double:
                options.append(double)
        return max(options)

    for p1 in range(1, 11):
        for up in range(1, 11):
            for p2 in range(1, 11):
                weight = shoe[p1 - 1] / n
                shoe[p1 - 1] -= 1
                weight *= shoe[up - 1] / (n - 1)
                shoe[up - 1] -= 1
                weight *= shoe[p2 - 1] / (n - 2)
                shoe[p2 - 1] -= 1
                if weight > 0:
                    left = n - 3
                    bj_card = {1: 10, 10: 1}.get(up)
                    p_bj = shoe[bj_card - 1] / left if bj_card else 0.0
                    w = {
                        h: shoe[h - 1] / left for h in range(1, 11) if shoe[h - 1] and h != bj_card
                    }
                    if {p1, p2} == {1, 10}:
                        total_ev += weight * 1.5 * (1 - p_bj)
                    else:
                        total_ev += weight * (-p_bj + best([p1, p2], shoe, w, up, True))
                shoe[p2 - 1] += 1
                shoe[up - 1] += 1
                shoe[p1 - 1] += 1
    return total_ev


@pytest.mark.parametrize("hit_soft_17", [False, True], ids=["S17", "H17"])
def test_no_split_game_over_a_tiny_shoe_equals_a_brute_force(hit_soft_17):
    game = Game(shoe=TINY, max_hands=1, surrender=False, hit_soft_17=hit_soft_17)
    assert expected_value(game)[0] == pytest.approx(
        _brute_force(TINY, hit_soft_17=hit_soft_17), abs=1e-12
    )


# --- profiles and refusals ----------------------------------------------------------------------


def test_every_rule_key_of_every_section_is_read_or_known_inert():
    from controller.rules.ev.game import NO_EFFECT, READ

    for section, cls in SECTIONS.items():
        for field in dataclasses.fields(cls):
            if "kind" in field.metadata:
                known = READ.get(section, set()) | set(NO_EFFECT.get(section, {}))
                assert field.name in known, f"[{section}] {field.name}"
    for name in ("pa-standard", "double-up", "blackjack-tie", "online-6deck"):
        game_of(load_game(name))  # no refusal


def test_a_rule_the_analysis_does_not_know_is_refused_by_name(monkeypatch):
    from controller.rules.ev import game as game_module

    reading = {k: set(v) for k, v in game_module.READ.items()}
    reading["dealer"].discard("ends_on_16")
    monkeypatch.setattr(game_module, "READ", reading)
    with pytest.raises(ProfileError, match=r"\[dealer\] key 'ends_on_16'"):
        game_of(load_game("double-up"))
    assert "ends_on_16" in {f.name for f in dataclasses.fields(DealerRules)}


@pytest.fixture(scope="module")
def online_two_decks() -> dict:
    """``par-sheet --game online-6deck --decks 2 --json``'s sheet, run once for the module
    (two tests read it: its main-game figures, and the peek game the no-peek one is set
    against)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["par-sheet", "--game", "online-6deck", "--decks", "2", "--json"]) == 0
    return json.loads(printed.getvalue())


def test_par_sheet_json_has_the_main_game(online_two_decks):
    figures = online_two_decks["main"]
    for name in ("basic", "optimal"):
        assert figures[name]["house_edge"] == pytest.approx(-figures[name]["ev"])
        assert 0 < figures[name]["house_edge"] < 0.01
    assert figures["basic"]["house_edge"] >= figures["optimal"]["house_edge"]
    dealer = figures["dealer"]["6"]
    assert sum(dealer.values()) == pytest.approx(1)
    assert figures["strategy_chart"]["pairs"]["8"] == ["P"] * 10
    shares = figures["basic"]["outcomes"]
    assert shares["win"] + shares["push"] + shares["loss"] == pytest.approx(1)
    assert 0.41 < shares["win"] < 0.44 and 0.08 < shares["push"] < 0.09  # the known shares
    assert 1.0 < shares["hands_per_round"] < 1.05
    assert shares["blackjack"] == pytest.approx(2 * 8 * 32 / (104 * 103))


def test_par_sheet_strategy_prints_the_chart(capsys):
    assert main(["par-sheet", "--game", "pa-standard", "--strategy"]) == 0
    text = capsys.readouterr().out
    assert "Hard" in text and "Soft" in text and "Pairs" in text
    assert "Rh" in text  # late surrender of 16 against a ten


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["par-sheet", "--game", "no-such-game"], "no game profile of that name"),
        (["par-sheet", "--decks", "0"], "[shoe] key 'decks': 0 is below the minimum 1"),
        (["par-sheet", "--decks", "9", "--strategy"], "is above the maximum 8"),
    ],
)
def test_par_sheet_bad_input_names_the_key_and_exits_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_double_up_profile_reads_double_up_on_split_aces_literally():
    rules = load_game("double-up")
    assert rules.double_up.after_split_aces is True
    result = analyse(rules.with_decks(1))
    (note,) = result["notes"]
    assert note["key"] == "[double_up] after_split_aces"
    assert note["house_edge_optimal"] < note["house_edge_optimal_if_flipped"]


def test_basic_strategy_edge_is_the_par_sheets_basic_figure():
    rules = load_game("pa-standard").with_decks(2)
    assert basic_strategy_edge(rules) == pytest.approx(analyse(rules)["basic"]["house_edge"])


def _profile_file(tmp_path, *replacements):
    from conftest import profile_text

    text = profile_text("online-6deck")
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / "house.toml"
    path.write_text(text)
    return str(path)


def test_no_peek_original_wager_only_is_refused_by_name(tmp_path, capsys):
    path = _profile_file(
        tmp_path,
        ('peek = "electronic"', 'peek = "none"\nblackjack_takes = "original_wager"'),
    )
    assert main(["par-sheet", "--game", path, "--strategy"]) == 2
    assert "[dealer] key 'blackjack_takes'" in capsys.readouterr().err


def test_no_peek_every_wager_lost_is_analysed_and_costs_the_player(
    tmp_path, capsys, online_two_decks
):
    path = _profile_file(tmp_path, ('peek = "electronic"', 'peek = "none"'))
    assert main(["par-sheet", "--game", path, "--decks", "2", "--json"]) == 0
    enhc = json.loads(capsys.readouterr().out)["main"]
    peek = online_two_decks["main"]
    for name in ("basic", "optimal"):
        assert enhc[name]["house_edge"] > peek[name]["house_edge"] + 0.0005
    assert any("no peek" in text for text in enhc["assumptions"])
