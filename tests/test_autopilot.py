"""The demo's autopilot plays the real table: no mocks, the pure ``Table`` of every profile.

A loop feeds the autopilot ``Table.snapshot()`` and the last prompt and turns each action into
the events the hardware would deliver: bet sensors and the amounts the dealer keys, the console
button's event (``drivers.gpio.BUTTON_EVENTS``), a card from a seeded shoe of the profile's
decks, the shoe's cut card and shuffle. A refusal is an autopilot bug.
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from controller.demo.autopilot import (
    Autopilot,
    Deal,
    PlaceBet,
    Press,
    RemoveBet,
    Shuffle,
)
from controller.demo.strategy import basic_strategy, double_up_advised
from controller.games import load_game
from controller.rules.cards import ALL_CARDS, Card
from controller.rules.profile import HouseRules
from controller.table.effects import Alarm, Prompt, Publish, Refused, Settled
from controller.table.events import (
    BetSensor,
    CardDrawn,
    Event,
    JackpotAward,
    Lockout,
    ShoeEvent,
    WagerAmount,
)
from controller.table.machine import Table, table_circles
from controller.table.settings import TableSettings
from drivers.gpio import BUTTON_EVENTS

PROFILES = ("pa-standard", "double-up", "blackjack-tie", "online-6deck")
STUCK = 3
"""Most consecutive Nones tolerated while the table waits (the loop is synchronous: the
table has taken every action before the autopilot is asked again, so none should come)."""


class SeededShoe:
    """The profile's decks shuffled by a seeded RNG; the cut card at ``reshuffle_after``."""

    def __init__(self, rules: HouseRules, rng: random.Random):
        self.rng = rng
        self.decks = rules.shoe.decks
        self.cut_at = int(52 * self.decks * rules.shoe.reshuffle_after)
        self.refill()

    def refill(self) -> None:
        self.cards = [card for card in ALL_CARDS for _ in range(self.decks)]
        self.rng.shuffle(self.cards)
        self.drawn = 0
        self.cut_out = False

    def draw(self) -> Card:
        self.drawn += 1
        return self.cards.pop()

    def cut_card_now(self) -> bool:
        if not self.cut_out and self.drawn >= self.cut_at:
            self.cut_out = True
            return True
        return False


@dataclass
class Run:
    """What happened in one autopilot session."""

    actions: Counter = field(default_factory=Counter)
    pressed: Counter = field(default_factory=Counter)
    refused: list[tuple[object, str]] = field(default_factory=list)
    alarms: list[Alarm] = field(default_factory=list)
    publishes: list[Publish] = field(default_factory=list)
    settled: list[Settled] = field(default_factory=list)
    placed: list[PlaceBet] = field(default_factory=list)
    max_nones: int = 0
    repeated: int = 0
    rounds: int = 0


def events_for(action, shoe: SeededShoe, t: int) -> list[Event]:
    """The events the hardware delivers for one action."""
    if isinstance(action, PlaceBet):
        out: list[Event] = [BetSensor(action.spot, action.circle, True, t)]
        if action.circle != "blazing_7s":  # a fixed $5 wager: nothing to key
            out.append(WagerAmount(action.spot, action.circle, action.amount, t + 1))
        return out
    if isinstance(action, RemoveBet):
        return [BetSensor(action.spot, action.circle, False, t)]
    if isinstance(action, Press):
        return [BUTTON_EVENTS[action.button](action.spot, t)]
    if isinstance(action, Deal):
        out = [CardDrawn(shoe.draw(), "shoe", t)]
        if shoe.cut_card_now():
            out.append(ShoeEvent("cut_card", t=t + 1))
        return out
    assert isinstance(action, Shuffle)
    shoe.refill()  # the shoe's "shuffle start", refill, "shuffle end": one table event
    return [ShoeEvent("shuffle", t=t)]


def play(
    profile: str,
    seed: int,
    rounds: int,
    *,
    spots: int = 7,
    circles: tuple[str, ...] | None = None,
    buttons: tuple[str, ...] | None = None,
    shuffle_when_settled: bool = False,
) -> Run:
    rules = load_game(profile)
    settings = TableSettings(spots=spots)
    table = Table(rules, settings)
    pilot = Autopilot(rules, settings, random.Random(seed), circles=circles, buttons=buttons)
    shoe = SeededShoe(rules, random.Random(seed + 1000))
    run = Run()
    t = 1000
    prompt: dict | None = None
    # a new shoe, as the shoe reports at power-up: the table expects a burn card
    for effect in table.handle(ShoeEvent("new_shoe", "6 decks", t=t)).effects:
        if isinstance(effect, Prompt):
            prompt = asdict(effect)
    start = table.snapshot()["round"]
    nones = 0
    for _ in range(rounds * 200):
        snapshot = table.snapshot()
        if snapshot["round"] >= start + rounds:
            break
        if shuffle_when_settled and snapshot["phase"] == "settled" and shoe.cut_out:
            # the shoe is shuffled while the dealer still pays: the table counts afresh at
            # end round and wants a burn card then
            shoe.refill()
            for effect in table.handle(ShoeEvent("shuffle", t=t)).effects:
                assert not isinstance(effect, Refused | Alarm), effect
                if isinstance(effect, Prompt):
                    prompt = asdict(effect)
            run.actions["early shuffle"] += 1
            continue
        action = pilot.next_action(snapshot, prompt)
        if action is None:
            nones += 1
            run.max_nones = max(run.max_nones, nones)
            if nones > STUCK:
                raise AssertionError(f"autopilot stuck: {snapshot}, prompt {prompt}")
            continue
        nones = 0
        # asked again before the table took it: it must not repeat itself
        if pilot.next_action(snapshot, prompt) is not None:
            run.repeated += 1
        run.actions[type(action).__name__] += 1
        if isinstance(action, Press):
            run.pressed[action.button] += 1
        if isinstance(action, PlaceBet):
            run.placed.append(action)
        for event in events_for(action, shoe, t):
            t = max(t, event.t or t) + 50
            step = table.handle(event)
            for effect in step.effects:
                if isinstance(effect, Refused):
                    run.refused.append((action, effect.reason))
                elif isinstance(effect, Alarm):
                    run.alarms.append(effect)
                elif isinstance(effect, Publish):
                    run.publishes.append(effect)
                    if effect.topic == "round_result":
                        run.rounds += 1
                        assert effect.payload["void"] is None
                elif isinstance(effect, Settled):
                    run.settled.append(effect)
                elif isinstance(effect, Prompt):
                    prompt = asdict(effect)
    else:
        raise AssertionError(f"{rounds} rounds not played: {table.snapshot()}")
    assert table.snapshot()["round"] == start + rounds
    return run


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("profile", PROFILES)
def test_autopilot_plays_200_rounds_without_a_refusal(profile: str, seed: int) -> None:
    rules = load_game(profile)
    run = play(profile, seed, 200, spots=7 if seed == 1 else 4)
    assert run.refused == []
    assert run.alarms == []
    assert run.rounds == 200
    assert run.max_nones == 0
    assert run.repeated == 0
    assert run.pressed["lockout"] == run.pressed["end_round"] == 200
    assert run.actions["Shuffle"] >= 1  # the cut card came out and the shoe was shuffled
    assert run.pressed["double"] > 0 and run.pressed["split"] > 0
    offered = rules.side_bets.offered()
    sides = [bet for bet in run.placed if bet.circle != "main"]
    assert bool(sides) == bool(set(offered) - {"ez_bust"})
    assert {bet.circle for bet in sides} <= set(table_circles(rules))
    if rules.surrender.allowed != "none":
        assert run.pressed["surrender"] > 0
    assert (run.pressed["double_up"] > 0) == rules.double_up.offered
    if rules.side_bets.blackjack_tie is not None:
        assert any(s.wager.startswith("blackjack_tie.") for s in run.settled)
    # insurance, even money and EZ Bust are always declined
    assert not {"insurance", "even_money", "ez_bust"} & set(run.pressed)
    assert not any(s.wager in ("insurance", "ez_bust") for s in run.settled)
    # main wagers: multiples of $5 from the minimum to 4x the minimum
    mains = {bet.amount for bet in run.placed if bet.circle == "main"}
    assert min(mains) >= 1000 and max(mains) <= 4000 and all(a % 500 == 0 for a in mains)


def test_blazing_7s_contributions_are_published_for_each_bet_placed() -> None:
    run = play("pa-standard", 3, 60)
    blazing = [bet for bet in run.placed if bet.circle == "blazing_7s"]
    contributions = [p for p in run.publishes if p.topic == "contribution"]
    assert blazing and len(contributions) == len(blazing)
    assert {p.payload["stake"] for p in contributions} == {500}
    assert all(p.payload["mystery"] for p in contributions)
    assert run.refused == []


def test_reduced_wiring_still_plays() -> None:
    buttons = ("lockout", "next", "double", "double_up", "end_round", "burn", "even_money")
    run = play("pa-standard", 7, 100, spots=5, circles=("main", "blazing_7s"), buttons=buttons)
    assert run.refused == [] and run.alarms == []
    assert run.rounds == 100
    assert {bet.circle for bet in run.placed} == {"main", "blazing_7s"}
    assert set(run.pressed) <= set(buttons)
    assert run.pressed["double"] > 0


def test_a_shuffle_reported_after_settlement_is_burned_after_end_round() -> None:
    run = play("double-up", 8, 120, spots=6, shuffle_when_settled=True)
    assert run.refused == [] and run.alarms == [] and run.rounds == 120
    assert run.actions["early shuffle"] >= 1 and run.actions["Shuffle"] == 0


def test_a_card_asked_for_is_not_asked_for_again_when_something_else_changes() -> None:
    rules = load_game("pa-standard")
    settings = TableSettings(spots=1)
    table = Table(rules, settings)
    pilot = Autopilot(rules, settings, random.Random(4), spots_played=1.0, side_bet_chance=0)
    table.handle(BetSensor(1, "main", True))
    table.handle(Lockout())
    assert pilot.next_action(table.snapshot(), None) == Deal()
    award = JackpotAward("a-1", 1, 1, "mystery", 12_345, "100% of meter", t=5)
    table.handle(award)  # the snapshot changes (awards), the card is not out yet
    assert pilot.next_action(table.snapshot(), None) is None
    table.handle(CardDrawn(ALL_CARDS[0]))
    assert pilot.next_action(table.snapshot(), None) == Deal()


def test_blackjack_tie_bonuses_never_exceed_the_main_wager() -> None:
    rules = load_game("blackjack-tie")
    settings = TableSettings(spots=7)
    pilot = Autopilot(rules, settings, random.Random(5), side_bet_chance=0.9)
    for number in range(1, 200):
        plan = pilot._bets_for(number)
        for spot in {bet.spot for bet in plan}:
            main = next(b.amount for b in plan if b.spot == spot and b.circle == "main")
            bonus = sum(b.amount for b in plan if b.spot == spot and b.circle != "main")
            assert bonus <= main


def test_asked_twice_it_waits_and_forget_lets_it_repeat() -> None:
    rules = load_game("online-6deck")
    table = Table(rules, TableSettings(spots=1))
    pilot = Autopilot(rules, TableSettings(spots=1), random.Random(4), spots_played=1.0)
    first = pilot.next_action(table.snapshot(), None)
    assert isinstance(first, PlaceBet)
    assert pilot.next_action(table.snapshot(), None) is None
    pilot.forget()
    assert pilot.next_action(table.snapshot(), None) == first


def test_it_burns_a_card_after_a_shuffle_only_where_the_profile_burns() -> None:
    for profile, burns in (("pa-standard", True), ("online-6deck", False)):
        rules = load_game(profile)
        assert rules.shoe.burn_after_shuffle is burns
        settings = TableSettings(spots=1)
        table = Table(rules, settings)
        pilot = Autopilot(rules, settings, random.Random(4), spots_played=1.0, side_bet_chance=0)
        step = table.handle(ShoeEvent("new_shoe", "6 decks"))
        prompt = next(asdict(e) for e in step.effects if isinstance(e, Prompt))
        action = pilot.next_action(table.snapshot(), prompt)
        assert (action == Deal()) == burns, profile
        if not burns:
            assert isinstance(action, PlaceBet)


def test_it_leaves_a_waiting_card_to_the_dealer() -> None:
    rules = load_game("online-6deck")
    table = Table(rules, TableSettings(spots=1))
    table.handle(BetSensor(1, "main", True))
    table.handle(ShoeEvent("cut_card"))
    pilot = Autopilot(rules, TableSettings(spots=1), random.Random(4))
    table.handle(CardDrawn(ALL_CARDS[0]))  # a card during betting, not a burn card
    snapshot = table.snapshot()
    assert snapshot["pending_cards"] == 1
    assert pilot.next_action(snapshot, None) is None


def test_the_autopilot_is_pure() -> None:
    forbidden = {"os", "io", "sys", "time", "datetime", "random", "socket", "threading"}
    forbidden |= {"asyncio", "subprocess", "pathlib", "logging", "serial", "gpiozero", "paho"}
    forbidden |= {"cv2", "drivers"}
    demo = Path(__file__).parent.parent / "controller" / "demo"
    # the decision part only: stage.py and play.py run the processes (I/O by design)
    for path in (demo / "__init__.py", demo / "autopilot.py", demo / "strategy.py"):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        assert not names & forbidden, (path.name, names & forbidden)


def test_wiring_is_checked() -> None:
    rules = load_game("pa-standard")
    settings = TableSettings()
    with pytest.raises(ValueError, match="end_round"):
        Autopilot(rules, settings, random.Random(), buttons=("lockout", "next"))
    with pytest.raises(ValueError, match="no console button"):
        Autopilot(rules, settings, random.Random(), buttons=("lockout", "next", "hit"))
    with pytest.raises(ValueError, match="bonus_16"):
        Autopilot(rules, settings, random.Random(), circles=("main", "bonus_16"))
    with pytest.raises(ValueError, match="main"):
        Autopilot(rules, settings, random.Random(), circles=("blazing_7s",))
    pilot = Autopilot(
        rules, settings, random.Random(), buttons=[*("lockout", "next", "end_round"), "insurance.3"]
    )
    assert pilot.wired("insurance", 3) and not pilot.wired("insurance", 2)


# -- the strategy charts: textbook cells ------------------------------------------------------

S17 = load_game("pa-standard")  # six decks, dealer stands on soft 17, DAS, late surrender
H17 = load_game("double-up")  # six decks, dealer hits soft 17, DAS, no surrender
NO_DAS = load_game("online-6deck")  # six decks, S17, no double after split


def decide(cards: str, up: str, rules: HouseRules, **allowed: bool) -> str:
    allowed = {"can_double": True, "can_split": True, "can_surrender": True, **allowed}
    return basic_strategy(cards.split(), up, rules=rules, **allowed)


@pytest.mark.parametrize(
    ("cards", "up", "expected"),
    [
        ("10H 2C", "2S", "hit"),  # 12 v 2
        ("10H 2C", "4S", "stand"),  # 12 v 4
        ("10H 3C", "2S", "stand"),
        ("9H 7C", "7S", "hit"),  # 16 v 7
        ("9H 7C", "9S", "surrender"),
        ("9H 6C", "10S", "surrender"),
        ("9H 6C", "AS", "hit"),  # S17: 15 v A hits
        ("6H 5C", "10S", "double"),
        ("6H 5C", "AS", "hit"),  # S17: 11 v A hits
        ("5H 4C", "2S", "hit"),
        ("5H 4C", "3S", "double"),
        ("6H 4C", "9S", "double"),
        ("6H 4C", "10S", "hit"),
        ("10H 7C", "AS", "stand"),
        ("3H 2C", "6S", "hit"),  # hard 5
    ],
)
def test_hard_totals_s17(cards: str, up: str, expected: str) -> None:
    assert decide(cards, up, S17) == expected


@pytest.mark.parametrize(
    ("cards", "up", "expected"),
    [
        ("AH 2C", "4S", "hit"),
        ("AH 2C", "5S", "double"),
        ("AH 4C", "4S", "double"),
        ("AH 6C", "3S", "double"),
        ("AH 6C", "7S", "hit"),
        ("AH 7C", "2S", "stand"),
        ("AH 7C", "6S", "double"),
        ("AH 7C", "8S", "stand"),
        ("AH 7C", "9S", "hit"),
        ("AH 8C", "6S", "stand"),
        ("AH 9C", "6S", "stand"),
    ],
)
def test_soft_totals_s17(cards: str, up: str, expected: str) -> None:
    assert decide(cards, up, S17) == expected


@pytest.mark.parametrize(
    ("cards", "up", "expected"),
    [
        ("AH AC", "AS", "split"),
        ("8H 8C", "10S", "split"),
        ("8H 8C", "AS", "split"),
        ("10H KC", "6S", "stand"),  # tens never split
        ("5H 5C", "9S", "double"),  # fives play as 10
        ("9H 9C", "7S", "stand"),
        ("9H 9C", "8S", "split"),
        ("9H 9C", "AS", "stand"),
        ("2H 2C", "2S", "split"),  # with double after split
        ("2H 2C", "8S", "hit"),
        ("4H 4C", "5S", "split"),
        ("6H 6C", "2S", "split"),
        ("6H 6C", "7S", "hit"),
        ("7H 7C", "7S", "split"),
        ("7H 7C", "8S", "hit"),
    ],
)
def test_pairs_s17_das(cards: str, up: str, expected: str) -> None:
    assert decide(cards, up, S17) == expected


@pytest.mark.parametrize(
    ("cards", "up", "expected"),
    [
        ("2H 2C", "2S", "hit"),
        ("2H 2C", "4S", "split"),
        ("4H 4C", "5S", "hit"),
        ("6H 6C", "2S", "hit"),
        ("6H 6C", "3S", "split"),
    ],
)
def test_pairs_without_double_after_split(cards: str, up: str, expected: str) -> None:
    assert decide(cards, up, NO_DAS) == expected


@pytest.mark.parametrize(
    ("cards", "up", "allowed", "expected"),
    [
        ("6H 5C", "AS", {}, "double"),  # H17: 11 v A doubles
        ("AH 7C", "2S", {}, "double"),  # H17: soft 18 v 2 doubles
        ("AH 8C", "6S", {}, "double"),  # H17: soft 19 v 6 doubles
        ("AH 8C", "6S", {"can_double": False}, "stand"),
        ("9H 6C", "AS", {}, "surrender"),  # H17: 15 v A surrenders
        ("10H 7C", "AS", {}, "surrender"),  # H17: 17 v A surrenders
        ("10H 7C", "AS", {"can_surrender": False}, "stand"),
        ("8H 8C", "AS", {}, "surrender"),
        ("8H 8C", "AS", {"can_surrender": False}, "split"),
        ("9H 7C", "10S", {"can_surrender": False}, "hit"),
    ],
)
def test_h17_cells(cards: str, up: str, allowed: dict, expected: str) -> None:
    assert decide(cards, up, H17, **allowed) == expected


def test_what_is_not_allowed_falls_back() -> None:
    assert decide("6H 5C", "6S", S17, can_double=False) == "hit"
    assert decide("AH 7C", "4S", S17, can_double=False) == "stand"
    assert decide("8H 8C", "10S", S17, can_split=False) == "surrender"
    assert decide("8H 8C", "10S", S17, can_split=False, can_surrender=False) == "hit"
    assert decide("AH AC", "6S", S17, can_split=False) == "hit"  # soft 12
    assert decide("AH 2C 4D", "5S", S17, can_double=False) == "hit"  # soft 17, three cards
    assert decide("5H 5C 2D", "10S", S17) == "hit"  # a pair no more: hard 12
    assert decide("KH 5C 6D", "10S", S17) == "stand"  # 21


def test_double_up_rule_of_thumb() -> None:
    assert double_up_advised(["KH", "9S"], "6C")
    assert not double_up_advised(["KH", "9S"], "AC")
    assert not double_up_advised(["KH", "7S"], "6C")
