"""What every part of the table state machine shares: the state it works on, where effects
go, and the small helpers that emit them. :class:`controller.table.machine.Table` is made of
parts (betting, cards, the procedure ...), each a :class:`TablePart`."""

from __future__ import annotations

from typing import Any

from controller.errors import ProcedureError
from controller.rules.actions import HandState
from controller.rules.profile import HouseRules
from controller.table import events as ev
from controller.table.effects import Alarm, Effect, Light, Prompt
from controller.table.settings import TableSettings
from controller.table.state import HandInPlay, TableState

_LIGHTS: dict[tuple[str, str], Light] = {}
"""Every :class:`Light` effect made so far, by name and state: a few per bet circle and spot
(bounded by the layouts' names)."""


_OFF: dict[str, Light] = {}
"""``shared_light(name, "off")`` by name alone (no key to build for each light of an end
round; bounded as :data:`_LIGHTS`)."""


def shared_light(name: str, state: str) -> Light:
    """The :class:`Light` effect setting light ``name`` to ``state``, made once and shared."""
    light = _LIGHTS.get((name, state))
    if light is None:
        light = _LIGHTS[(name, state)] = Light(name, state)
    return light


def _off_light(name: str) -> Light:
    light = _OFF[name] = shared_light(name, "off")
    return light


class RefusedWithAlarm(ProcedureError):
    """A refusal a technician must see: the event is refused (journaled as refused, nothing
    else changes) and ``alarm`` enters the alarm register."""

    def __init__(self, reason: str, alarm: Alarm):
        super().__init__(reason)
        self.alarm = alarm


class TablePart:
    """A part of the table: it reads ``self.rules`` and ``self.state`` and appends effects to
    ``self._out`` (the step being handled); ``_event`` is the event being handled."""

    rules: HouseRules
    settings: TableSettings
    state: TableState
    circles: tuple[str, ...]
    _out: list[Effect]
    _event: ev.Event | None
    _handlers: dict[type, Any]
    _choices_memo: dict[tuple[object, ...], str]
    _hand_prompts: dict[tuple[object, ...], Prompt]
    _side_lost: dict[tuple[object, ...], tuple[Effect, ...]]
    _carried_made: dict[tuple[Any, ...], ev.Event]
    _fixed_amounts: dict[str, int | None]
    _settled_made: dict[tuple[Any, ...], tuple[Effect, Effect]]
    _deals_from: str | None
    _decks: int

    def _prompt(self, code: str, text: str, spot: int | None = None) -> None:
        self._out.append(Prompt(code, text, spot))

    def _alarm(
        self, code: str, text: str, action: str, spot: int | None = None, about: str | None = None
    ) -> None:
        self._out.append(Alarm(code, text, action, spot, about))

    def _light(self, name: str, state: str) -> None:
        lights = self.state.lights
        if lights.get(name, "off") != state:
            if state == "off":
                lights.pop(name, None)
            else:
                lights[name] = state
            # A table sets the same few lights again and again: each Light is made once,
            # then shared (effects are immutable values).
            self._out.append(shared_light(name, state))

    def _lights_off(self) -> None:
        """Every light that is on or blinking, off (as :meth:`_light` each, in order)."""
        lights = self.state.lights
        out = self._out
        for name in list(lights):  # a light set off is dropped (_light): all here are lit
            del lights[name]
            out.append(_OFF.get(name) or _off_light(name))

    def _hand(self, spot: int, hand: int) -> HandInPlay:
        return self.state.round.spots[spot].hands[hand]  # type: ignore[union-attr]

    def _hand_state(self, hand: HandInPlay) -> HandState:
        return HandState(
            tuple(hand.cards),
            hand.wager,
            hand.from_split,
            hand.split_aces,
            hand.double_down,
            hand.double_up,
        )
