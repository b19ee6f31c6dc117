"""Checkpoints of the table's state (controller/table/checkpoint.py, docs/journal.md
"Checkpoint format (version 1)"): every state of real sessions round-trips, a table restored
from any checkpoint carries on exactly as the original, and a bad checkpoint is refused
naming its field."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import time
from functools import cache

import pytest
from _journal_feeder import SETTINGS, session_events

from controller.errors import EventError
from controller.games import load_game
from controller.table import Table, checkpoint
from controller.table import events as ev
from controller.table.checkpoint import (
    CHECKPOINT_VERSION,
    CheckpointError,
    decode,
    encode,
    restore,
)
from controller.table.effects import EFFECT_KINDS, Light, Prompt, Publish, Settled, parse_effect
from controller.table.state import Phase, TableState
from controller.table.view import snapshot

GAMES = ("pa-standard", "double-up", "blackjack-tie", "online-6deck")
ROUNDS = 24


def _text(state: TableState) -> str:
    return json.dumps(encode(state), sort_keys=True)


def _link_events(table: Table) -> list[ev.Event]:
    """The jackpot link and the technician between two rounds: a Mystery award answering
    the table's oldest open contribution, hand paid and committed, a forged award (refused
    with an alarm), the link down and up, a link alarm, a fault latched and cleared, and
    one alarm acknowledged; with nothing to answer, only the rest."""
    t = table.state.now or 0
    out: list[ev.Event] = [
        ev.JackpotLink(False, t=t + 1),
        ev.TableFault("camera", "camera lost", t=t + 2),
        ev.LinkAlarm("signature", "a message with a bad signature", t=t + 3),
        ev.TableFault("camera", "camera back", active=False, t=t + 3),
        ev.JackpotAward(
            "forged/1",
            1,
            1,
            "mystery",
            100,
            "100% of meter",
            claim_key="x",
            meter_before=100,
            t=t + 4,
        ),
        ev.JackpotLink(True, t=t + 5),
    ]
    if table.state.mystery_claims:
        claim = next(iter(table.state.mystery_claims.values()))
        award = ev.JackpotAward(
            "t/9",
            claim.round,
            claim.spot,
            "mystery",
            61_234,
            claim.line,
            claim_key=claim.key,
            meter_before=61_234,
            t=t + 6,
        )
        out += [award]
    out += [ev.AcknowledgeAlarm(1, by="tech 42", t=t + 7), ev.ClearFaults("tech 42", t=t + 7)]
    out += [ev.SupervisorKey(True, t=t + 8)]
    if table.state.mystery_claims:
        out += [ev.ConfirmAward("t/9", t=t + 9)]
    out += [ev.SupervisorKey(False, t=t + 10)]
    if table.state.mystery_claims:
        out += [dataclasses.replace(award, state="committed", t=t + 11)]
    return out


@cache
def _session(game: str) -> tuple[list[ev.Event], list, list[str]]:
    """A session of ``game`` (the link's events after the 4th round), every step and the
    checkpoint text after every event."""
    events = session_events(game, 1, ROUNDS)
    table = Table(load_game(game), SETTINGS)
    played: list[ev.Event] = []
    steps, texts, ends = [], [], 0
    for event in events:
        played.append(event)
        steps.append(table.handle(event))
        texts.append(_text(table.state))
        ends += isinstance(event, ev.EndRound)
        if ends == 4 and isinstance(event, ev.EndRound):
            for extra in _link_events(table):
                played.append(extra)
                steps.append(table.handle(extra))
                texts.append(_text(table.state))
    return played, steps, texts


@pytest.mark.parametrize("game", GAMES)
def test_every_state_of_a_session_round_trips(game):
    events = _session(game)[0]
    table = Table(load_game(game), SETTINGS)
    for number, event in enumerate(events):
        table.handle(event)
        text = _text(table.state)
        back = decode(json.loads(text))
        assert back == table.state, f"event {number} ({event.TYPE}) of {game}"
        assert back.now == table.state.now  # not compared by TableState's ==
        assert _text(back) == text == _text(table.state)  # the same state, the same text


def _sample(game: str) -> list[int]:
    """Where checkpoints are restored: a seeded spread plus the first index of every
    situation (each phase, each kind of event, each field of the state holding something)
    the session has."""
    events, _, texts = _session(game)
    rng = random.Random(game)
    points = set(rng.sample(range(len(events) - 1), 10))
    firsts: dict[str, int] = {}
    for index, (event, text) in enumerate(zip(events, texts, strict=True)):
        state = json.loads(text)["state"]
        held = [f"field:{name}" for name, value in state.items() if value not in (None, [], 0)]
        for situation in (f"phase:{state['phase']}", f"event:{event.TYPE}", *held):
            firsts.setdefault(situation, index)
    points |= {index for index in firsts.values() if index < len(events) - 1}
    return sorted(points)


@pytest.mark.parametrize("game", GAMES)
def test_a_table_restored_from_a_checkpoint_carries_on_as_the_original(game):
    events, steps, texts = _session(game)
    rules = load_game(game)
    points = _sample(game)
    assert len(points) >= 15
    for k in points:
        table = restore(rules, SETTINGS, json.loads(texts[k]))
        again = [table.handle(event) for event in events[k + 1 :]]
        assert again == steps[k + 1 :], f"restored after event {k} ({events[k].TYPE}) of {game}"
        assert _text(table.state) == texts[-1]


def test_the_sessions_cover_what_a_checkpoint_holds():
    """The restored points include mid-round, insurance, EZ Bust, splits, Double Up, a
    shuffle, awards, alarms and faults (so the test above exercises them)."""
    seen_phases, seen_events, fields = set(), set(), set()
    for game in GAMES:
        events, _, texts = _session(game)
        for k in _sample(game):
            state = json.loads(texts[k])["state"]
            seen_phases.add(state["phase"])
            seen_events.add(events[k].TYPE)
            fields |= {name for name, value in state.items() if value not in (None, [], 0, "")}
    assert {p.value for p in Phase} <= seen_phases
    assert {
        "split",
        "double",
        "double_up",
        "ez_bust",
        "insurance",
        "even_money",
        "surrender",
        "shoe",
        "jackpot_award",
        "confirm_award",
        "table_fault",
        "link_alarm",
        "acknowledge_alarm",
        "void_round",
        "burn",
    } <= seen_events
    assert {
        "round",
        "alarms",
        "awards",
        "awards_closed",
        "mystery_claims",
        "faults",
        "pending",
        "carried",
        "log",
        "round_effects",
        "seen",
    } <= fields
    points = sum(len(_sample(game)) for game in GAMES)
    assert points >= 50


def test_a_hole_card_face_down_is_in_the_checkpoint():
    """A checkpoint is internal, like the journal: it holds the hole card the dealer's
    display does not show."""
    events = _session("online-6deck")[0]
    table = Table(load_game("online-6deck"), SETTINGS)
    for event in events:
        table.handle(event)
        rnd = table.state.round
        if rnd is not None and len(rnd.dealer) == 2 and not rnd.hole_revealed:
            break
    else:
        pytest.fail("the session never has a hole card face down")
    assert snapshot(table.state, "online-6deck")["dealer"]["cards"][1] == "back"
    hole = str(rnd.dealer[1])
    assert encode(table.state)["state"]["round"]["dealer"] == [str(rnd.dealer[0]), hole]
    assert decode(encode(table.state)).round.dealer[1] == rnd.dealer[1]


def _checkpoint() -> dict:
    _, _, texts = _session("pa-standard")
    index = next(i for i, text in enumerate(texts) if '"phase": "players"' in text)
    return json.loads(texts[index])


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda d: d.update(version=2), "version", "reads version 1, got 2"),
        (lambda d: d.pop("version"), "version", "is required"),
        (lambda d: d.update(version=True), "version", "got True"),
        (lambda d: d["state"].pop("seen"), "state.seen", "is required (TableState.seen)"),
        (lambda d: d["state"].update(dealt="12"), "state.dealt", "must be a whole number"),
        (lambda d: d["state"].update(phase="lunch"), "state.phase", "must be one of betting"),
        (lambda d: d["state"].update(extra=1), "state.extra", "unknown field of TableState"),
        (
            lambda d: d["state"]["round"]["spots"][0][1]["hands"][0].pop("wager"),
            "state.round.spots[0][1].hands[0].wager",
            "is required",
        ),
        (
            lambda d: d["state"]["round"]["spots"][0][1]["hands"][0].update(stood=1),
            "state.round.spots[0][1].hands[0].stood",
            "must be true or false",
        ),
        (
            lambda d: d["state"]["round"]["dealer"].__setitem__(0, "qh"),
            "state.round.dealer[0]",
            "canonical text 'QH'",
        ),
        (lambda d: d["state"]["round"]["dealer"].__setitem__(0, "1X"), "state.round.dealer[0]", ""),
        (
            lambda d: d["state"]["sensors"][0].__setitem__(0, "main"),
            "state.sensors[0][0]",
            'such as "3/main"',
        ),
        (
            lambda d: d["state"].update(seen=[["QH", 1], ["QH", 2]]),
            "state.seen[1][0]",
            "repeats the key",
        ),
        (
            lambda d: d["state"]["log"].append({"type": "card", "card": "QH", "source": "eye"}),
            "state.log[",
            "source must be one of",
        ),
        (
            lambda d: d["state"]["round_effects"].append({"effect": "light", "name": "x"}),
            "state.round_effects[",
            "field 'state' is required",
        ),
        (lambda d: d["state"].update(round=[]), "state.round", "must be a JSON object"),
    ],
)
def test_a_bad_checkpoint_is_refused_naming_the_field(change, field, words):
    data = copy.deepcopy(_checkpoint())
    decode(data)  # the unchanged checkpoint is good
    change(data)
    with pytest.raises(CheckpointError, match=r"checkpoint field '") as caught:
        decode(data)
    assert f"checkpoint field '{field}" in str(caught.value) and words in str(caught.value)
    assert isinstance(caught.value, EventError) and isinstance(caught.value, ValueError)


def test_restore_refuses_a_checkpoint_of_another_game_or_table():
    data = _checkpoint()  # pa-standard, 7 spots, side bets on the layout
    with pytest.raises(CheckpointError, match="not a bet circle of this game"):
        restore(load_game("online-6deck"), SETTINGS, data)
    with pytest.raises(CheckpointError, match="is not a spot of this table"):
        restore(load_game("pa-standard"), dataclasses.replace(SETTINGS, spots=2), data)
    assert restore(load_game("pa-standard"), SETTINGS, data).state == decode(data)


def test_every_effect_reads_back_from_its_dict():
    effects = [
        Light("spot3.main", "blink"),
        Prompt("deal", "Deal spot 1"),
        Settled(3, "main", 1000, "win", 1000, 1000, "21 beats 20", hand=0, pays="1 to 1"),
        Publish("tables/t/contribution", "k", {"amounts": [1, 2], "pool": "p"}),
    ]
    assert set(EFFECT_KINDS) == {
        "light",
        "prompt",
        "alarm",
        "alarm_cleared",
        "refused",
        "settled",
        "publish",
        "record",
    }
    for effect in effects:
        assert parse_effect(json.loads(json.dumps(effect.to_dict()))) == effect
    with pytest.raises(EventError, match="unknown effect 'lamp'"):
        parse_effect({"effect": "lamp"})
    with pytest.raises(EventError, match=r"'light' effect: unknown field\(s\) colour"):
        parse_effect({"effect": "light", "name": "x", "state": "on", "colour": "red"})
    with pytest.raises(EventError, match="'settled' effect: field 'stake' must be a whole"):
        parse_effect({**effects[2].to_dict(), "stake": True})


def test_checkpoint_size_and_speed(capsys):
    """Measured, not asserted: a 7-spot table's checkpoint at round end and mid-round."""
    events, _, texts = _session("pa-standard")
    ends = [len(t) for e, t in zip(events, texts, strict=True) if isinstance(e, ev.EndRound)]
    mid = [len(t) for t in texts if '"round": {' in t]
    table = Table(load_game("pa-standard"), SETTINGS)
    biggest = max(texts, key=len)
    state = decode(json.loads(biggest))
    runs = 200
    start = time.perf_counter()
    for _ in range(runs):
        text = json.dumps(encode(state), sort_keys=True)
    encode_ms = (time.perf_counter() - start) * 1000 / runs
    start = time.perf_counter()
    for _ in range(runs):
        decode(json.loads(text))
    decode_ms = (time.perf_counter() - start) * 1000 / runs
    assert CHECKPOINT_VERSION == 1 and table.state == TableState()
    with capsys.disabled():
        print(
            f"\ncheckpoint bytes (7 spots, pa-standard): round end mean {sum(ends) // len(ends)} "
            f"max {max(ends)}; mid-round mean {sum(mid) // len(mid)} max {max(mid)}; "
            f"largest: encode+dumps {encode_ms:.2f} ms, loads+decode {decode_ms:.2f} ms"
        )


def test_a_field_added_with_a_default_reads_an_older_checkpoint(monkeypatch):
    """The rule for new fields: listed in ADDED_FIELDS, a checkpoint without it decodes with
    the default; not listed, it is refused."""
    data = copy.deepcopy(_checkpoint())
    data["state"]["round"]["spots"][0][1].pop("ez_bust")
    with pytest.raises(CheckpointError, match=r"spots\[0\]\[1\]\.ez_bust': is required"):
        decode(data)
    monkeypatch.setattr(checkpoint, "ADDED_FIELDS", frozenset({"SpotInPlay.ez_bust"}))
    first = data["state"]["round"]["spots"][0][0]
    assert decode(data).round.spots[first].ez_bust == 0


def test_a_field_of_a_type_the_checkpoint_cannot_write_stops_it():
    with pytest.raises(TypeError, match="bump CHECKPOINT_VERSION"):
        checkpoint._codec("Fraction")
    assert checkpoint._codec("dict[tuple[int, str], bool]")[0]({(3, "main"): True}) == [
        ["3/main", True]
    ]


def test_a_checkpoint_from_before_alarms_cleared_themselves_restores():
    """Issue 20 added OpenAlarm.about, cleared and cleared_t: a checkpoint written before
    (a rotated journal's origin among them) decodes with the defaults."""
    table = Table(load_game("pa-standard"), SETTINGS)
    table.handle(ev.JackpotLink(False))
    data = json.loads(json.dumps(encode(table.state)))
    for _id, alarm in data["state"]["alarms"]:
        for key in ("about", "cleared", "cleared_t"):
            del alarm[key]
    restored = restore(table.rules, SETTINGS, data)
    assert restored.state.alarms[1].cleared == "" and restored.state.alarms[1].about == ""
    step = restored.handle(ev.JackpotLink(True))  # and it clears as a new one would
    assert [e.KIND for e in step.effects].count("alarm_cleared") == 1
