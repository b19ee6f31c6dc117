"""The replay's shortcuts of issue 32 item 3, fifth round, against the forms they replace.

A table whose methods are the forms before this round (:class:`Before`, below) and the table
as it is now replay the same seeded rounds side by side, on every profile: every step (its
acceptance and effects) and the state after it are equal.

- :meth:`Table.handle` looks up one plan per event class (its handler and traits, made at the
  class's first event), returns a refused step and an empty one without the accepted path's
  checks, and asks whether an event enters the round's recall log from its traits alone
  (accepted or refused): ``Before.handle`` is the form it replaces, copied.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from controller.errors import EventError, ProcedureError
from controller.games import available_games, load_game
from controller.table import Table, TableSettings, significant
from controller.table import events as ev
from controller.table.effects import Alarm, Effect, Publish, Refused, Step
from controller.table.events import EndRound
from controller.table.machine import (
    _BLOCKED_BY_PENDING,
    _NOT_IN_ROUND_LOG,
    _NOT_RECALLED,
    _NOTHING,
    _NOTHING_TICK,
    _PLAIN_EFFECTS,
    REFUSALS,
)
from controller.table.part import RefusedWithAlarm
from controller.table.state import IN_PROGRESS

GAMES = sorted(available_games())
BENCH = Path(__file__).resolve().parent.parent / "bench" / "replay_rounds.py"


def _bench():
    spec = importlib.util.spec_from_file_location("replay_rounds_structure", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _old_traits(kind: type) -> tuple[bool, bool, bool, bool]:
    return (
        issubclass(kind, _BLOCKED_BY_PENDING),
        issubclass(kind, significant.WATCHED),
        not issubclass(kind, _NOT_IN_ROUND_LOG),
        issubclass(kind, ev.Tick),
    )


class Before(Table):
    """The table with the forms this round replaced (copied from ``main`` before it)."""

    def handle(self, event: ev.Event) -> Step:
        """Apply one event; return whether it was accepted and its effects."""
        kind = type(event)
        handler = self._handlers.get(kind)
        if handler is None:
            raise EventError(f"not a table event: {event!r}")
        blocked, watched, for_recall, is_tick = _old_traits(kind)
        state = self.state
        round_number = state.round_number
        t = event.t
        if t is not None and (state.now is None or t > state.now):
            state.now = t
        out: list[Effect] = []
        self._out = out
        self._event = event
        try:
            if blocked and state.pending:
                raise ProcedureError(
                    f"{event.TYPE.replace('_', ' ')} refused: {self._pending_text()} waits for a "
                    "decision: burn it, assign it, or call a misdeal (supervisor key)"
                )
            before = significant.watch(state) if watched else None
            handler(event)
            if before is not None:
                self._significant(event, before)
        except REFUSALS as exc:
            refused = Refused(event.TYPE, str(exc))
            if isinstance(exc, RefusedWithAlarm):
                step = Step(False, (refused, exc.alarm))
                self._register_alarms(step.effects, round_number)
            else:
                step = Step(False, (refused,))
            accepted = plain = False
        else:
            if state.alarms:
                self._clear_alarms_whose_cause_is_over()
            # The alarm light blinks while a card waits, the shoe or the table is faulted or
            # the door is open in a round; the table's lights hold no "off".
            if (
                state.pending
                or state.shoe_fault
                or state.faults
                or (state.door_open and state.phase in IN_PROGRESS)
            ):
                if state.lights.get("alarm") != "blink":
                    self._light("alarm", "blink")
            elif "alarm" in state.lights:
                self._light("alarm", "off")
            accepted = True
            if out:
                step = Step(True, tuple(out))
                plain = True
                for effect in step.effects:
                    if type(effect) in _PLAIN_EFFECTS:  # most of them: nothing to remember
                        continue
                    plain = False
                    if isinstance(effect, Alarm):
                        self._register_alarms((effect,), round_number)
                    elif isinstance(effect, Publish):
                        self._remember_claims((effect,))
            else:  # nothing to carry out (a card of the initial deal, most bets): shared
                step = _NOTHING_TICK if is_tick else _NOTHING
                plain = True
        self._event = None
        self._out = []
        if for_recall and step.journal and not (accepted and kind is EndRound):
            state.log.append(event)
            effects = step.effects
            if plain:  # accepted, and no effect a round's recall leaves out
                if effects:
                    state.round_effects.extend(effects)
            else:
                state.round_effects.extend(
                    [
                        e
                        for e in effects
                        if type(e) in _PLAIN_EFFECTS  # most of them, asked first
                        or not (
                            isinstance(e, _NOT_RECALLED)
                            or (isinstance(e, Publish) and e.topic == significant.KIND)
                        )
                    ]
                )
        return step


def _same(now: Table, before: Table, events) -> None:
    for event in events:
        mine, theirs = now.handle(event), before.handle(event)
        assert mine == theirs, event
        assert now.state == before.state, event
        assert now.state.now == before.state.now, event  # not compared by ==
    assert now.snapshot() == before.snapshot()


@pytest.mark.parametrize("game", GAMES)
def test_the_table_steps_as_the_forms_it_replaces(game):
    rules = load_game(game)
    events = _bench().generate(rules, 150, 11).events
    _same(Table(rules, TableSettings(spots=7)), Before(rules, TableSettings(spots=7)), events)


def test_refusals_ticks_alarms_and_significant_events_step_as_before():
    """What the bench's rounds never do: refused presses (with and without an alarm), a card
    waiting for a decision, ticks, late bets, faults, the shoe's door and acknowledgements."""
    rules = load_game("pa-standard")
    events = [
        ev.Tick(t=1),
        ev.Next(t=2),  # refused: no round
        ev.BetSensor(1, "main", True, t=3),
        ev.BetSensor(2, "lucky_ladies", True, t=4),  # a side bet without a main wager
        ev.ShoeEvent("new_shoe", t=5),
        ev.CardDrawn(ev.parse_event({"type": "card", "card": "2C"}).card, t=6),  # burn card
        ev.Lockout(t=7),
        ev.BetSensor(3, "main", True, t=8),  # late bet: an alarm
        ev.ShoeEvent("door_open", t=9),
        ev.Tick(t=10),
        ev.ShoeEvent("door_closed", t=11),
        ev.TableFault("camera", "no frames", t=12),
        ev.Lockout(t=13),  # refused
        ev.ClearFaults(by="tech", t=14),
        ev.AcknowledgeAlarm(1, by="tech", t=15),
        ev.AcknowledgeAlarm(99, by="tech", t=16),  # refused
        ev.EndRound(t=17),  # refused: the round is not settled
    ]
    for card in ("10H", "5D", "9S", "6C", "KH", "KH", "KH", "KH", "KH", "KH", "KH"):
        events.append(ev.parse_event({"type": "card", "card": card, "t": 20}))
    events += [ev.Next(t=30), ev.Burn(t=31), ev.Next(t=32), ev.SupervisorKey(True, t=33)]
    events += [ev.Misdeal(t=34), ev.EndRound(t=35), ev.EndRound(t=36), ev.Tick(t=37)]
    _same(Table(rules, TableSettings(spots=3)), Before(rules, TableSettings(spots=3)), events)


def test_an_unknown_event_is_refused_as_before():
    table = Table(load_game("pa-standard"))
    with pytest.raises(EventError, match="not a table event: 'lockout'"):
        table.handle("lockout")  # type: ignore[arg-type]
