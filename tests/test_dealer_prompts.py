"""The dealer's prompt never goes stale (issue 20): every card and every decision of the
players' turn gives a prompt for the hand in action with its total as it is now and only the
choices the rules allow now, and the table's prompt of the moment (the dealer display's
headline, ``Table.snapshot()["prompt"]``) always says the same.

The oracle knows nothing of prompts: the total comes from the cards, the choices from trying
each action (double, split, surrender, Double Up, a card, stand) on a copy of the table.
Rounds are played by the demo's autopilot (basic strategy, side bets at random) on seven
spots of every profile, with the seeded shoe of tests/test_autopilot.py.
"""

from __future__ import annotations

import copy
import dataclasses
import random

import pytest
from test_autopilot import PROFILES, SeededShoe, events_for

from controller.demo.autopilot import Autopilot
from controller.games import load_game
from controller.rules.cards import parse_card
from controller.rules.hand import hand_total
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Prompt
from controller.table.events import ShoeEvent

ORDER = ("hit", "stand", "double", "split", "surrender", "Double Up")
"""The order the prompt lists choices in."""
DECISIONS = (ev.CardDrawn, ev.Next, ev.Double, ev.Split, ev.Surrender, ev.DoubleUp)


def trial(oracle: Table) -> Table:
    """A copy of ``oracle`` to try an event on."""
    table = Table(oracle.rules, oracle.settings)
    # the round's log is only for its recall record: left out, the copy is quick
    state = dataclasses.replace(oracle.state, log=[], round_effects=[], carried=[])
    table.state = copy.deepcopy(state)
    return table


def allowed(oracle: Table) -> list[str]:
    """The choices the rules allow the hand in action now, found by trying each on a copy."""
    out = []
    for name, event in (
        ("double", ev.Double(0)),
        ("split", ev.Split(0)),
        ("surrender", ev.Surrender(0)),
        ("Double Up", ev.DoubleUp(0)),
    ):
        if trial(oracle).handle(event).accepted:
            out.append(name)
    hit = trial(oracle)
    spot, index = hit.state.round.in_action
    before = len(hit.state.round.spots[spot].hands[index].cards)
    hit.handle(ev.CardDrawn(parse_card("2C")))
    if not hit.state.pending and len(hit.state.round.spots[spot].hands[index].cards) > before:
        out.append("hit")
    if trial(oracle).handle(ev.Next()).accepted:
        out.append("stand")
    return [name for name in ORDER if name in out]


def expected_headline(oracle: Table) -> str | None:
    """What a hand waiting for a decision must be prompted with, from the cards and the
    rules alone; None when no hand waits for a decision."""
    state = oracle.state
    rnd = state.round
    if state.pending or rnd is None or rnd.in_action is None or state.phase.value != "players":
        return None
    spot, index = rnd.in_action
    hands = rnd.spots[spot].hands
    hand = hands[index]
    if len(hand.cards) < 2 or hand.double_down:
        return None
    total = hand_total(hand.cards)
    count = f"soft {total.total}" if total.soft else str(total.total)
    where = f"Spot {spot}" + (f" hand {index + 1}" if len(hands) > 1 else "")
    return f"{where} to act on {count}: {', '.join(allowed(oracle))}"


@pytest.mark.parametrize("profile", PROFILES)
def test_every_card_and_decision_prompts_the_total_and_the_choices_of_now(profile):
    rules = load_game(profile)
    settings = TableSettings(spots=7)
    table = Table(rules, settings)
    pilot = Autopilot(rules, settings, random.Random(20))
    shoe = SeededShoe(rules, random.Random(2020))
    t = 1000
    table.handle(ShoeEvent("new_shoe", t=t))
    checked = after_hit = soft = 0
    while table.state.round_number <= 20:
        action = pilot.next_action(table.snapshot(), None)
        assert action is not None, table.snapshot()
        for event in events_for(action, shoe, t):
            t = max(t, event.t or t) + 50
            rnd = table.state.round
            acting = rnd.in_action if rnd is not None else None
            cards = len(rnd.spots[acting[0]].hands[acting[1]].cards) if acting else 0
            step = table.handle(event)
            assert step.accepted, step.reason
            want = expected_headline(table)
            now = table.snapshot()["prompt"]["text"]
            if want is None:
                assert " to act on " not in now, now
                continue
            # the prompt of the moment, whatever the event was
            assert now == want
            if isinstance(event, DECISIONS):
                # and the event itself prompted it: no hand is left on an old prompt
                prompts = [e.text for e in step.effects if isinstance(e, Prompt)]
                assert prompts and prompts[-1] == want, (event, prompts, want)
                checked += 1
                same = acting == table.state.round.in_action
                if isinstance(event, ev.CardDrawn) and cards >= 2 and same:
                    # a hit and the hand plays on: three cards or more now, so no double and
                    # no surrender (every profile: on the first two cards only)
                    after_hit += 1
                    assert ": hit, stand" in want and "double" not in want, want
                    assert "surrender" not in want and "split" not in want, want
                soft += " soft " in want
    assert checked > 100 and after_hit > 10 and soft > 3, (checked, after_hit, soft)


def test_after_a_hit_the_prompt_has_the_new_total_and_no_double_or_surrender():
    table = Table(load_game("pa-standard"), TableSettings(spots=1))
    for event in (ev.BetSensor(1, "main", True), ev.Lockout()):
        assert table.handle(event).accepted
    for card in ("5H", "9C", "8D", "10S"):  # spot 1: 5 8 = 13 against a 9
        table.handle(ev.CardDrawn(parse_card(card)))
    assert table.snapshot()["prompt"]["text"] == (
        "Spot 1 to act on 13: hit, stand, double, surrender"
    )
    step = table.handle(ev.CardDrawn(parse_card("7S")))  # hit: 20
    prompts = [e.text for e in step.effects if isinstance(e, Prompt)]
    assert prompts == ["Spot 1 to act on 20: hit, stand"]
    assert table.snapshot()["prompt"]["text"] == "Spot 1 to act on 20: hit, stand"


def test_the_prompt_of_the_moment_names_no_hole_card_and_each_phase():
    table = Table(load_game("pa-standard"), TableSettings(spots=2))
    prompt = lambda: table.snapshot()["prompt"]["text"]  # noqa: E731
    assert prompt() == "Place your bets: round 1"
    table.handle(ev.BetSensor(2, "main", True))
    table.handle(ev.Lockout())
    assert prompt() == "No more bets: deal spot 2 first"
    seen = []
    for card in ("9H", "AS", "10C", "KH"):  # spot 2, the dealer's ace, spot 2, the hole card
        table.handle(ev.CardDrawn(parse_card(card)))
        seen.append(prompt())
    assert seen == [
        "Deal the dealer's up card",
        "Deal spot 2 its second card",
        "Deal the dealer's hole card, face down",
        "Dealer shows an ace: take insurance, then press next",
    ]
    assert "KH" not in str(table.snapshot())
    table.handle(ev.Next())  # the peek: dealer blackjack, the round is settled
    assert prompt() == "Round 1 settled: pay and collect, then press end round"
    table.handle(ev.EndRound())
    table.handle(ev.CardDrawn(parse_card("QH")))  # a card nobody expected
    assert prompt() == (
        "Card QH waits for a decision: burn it, assign it, or call a misdeal (supervisor key)"
    )


def test_the_windows_say_what_to_take_and_to_press_next():
    table = Table(load_game("pa-standard"), TableSettings(spots=1))
    table.handle(ev.BetSensor(1, "main", True))
    table.handle(ev.Lockout())
    for card in ("AH", "AS", "KC", "9D"):  # spot 1: blackjack; the dealer shows an ace
        table.handle(ev.CardDrawn(parse_card(card)))
    assert table.snapshot()["prompt"]["text"] == (
        "Dealer shows an ace: take insurance and even money, then press next"
    )
    table = Table(load_game("pa-standard"), TableSettings(spots=1))
    table.handle(ev.BetSensor(1, "main", True))
    table.handle(ev.Lockout())
    for card in ("9H", "5D", "7C", "KD"):  # the dealer shows 5: the EZ Bust offer
        table.handle(ev.CardDrawn(parse_card(card)))
    assert table.snapshot()["prompt"]["text"] == (
        "Dealer shows 5D: take EZ Bust bets, then press next"
    )
