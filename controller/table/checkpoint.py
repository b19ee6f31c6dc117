"""Checkpoints: the table machine's whole state as plain JSON data, and back.

A checkpoint is what a journal stores so that recovery loads it and replays only the
events after it (docs/journal.md, "Checkpoint format (version 1)"). It is internal, like the
journal: it holds the hole card face down as it is, so it never leaves the table's disk.

:func:`encode` writes a :class:`~controller.table.state.TableState` as
``{"version": 1, "state": {...}}``; the same state always gives the same JSON text (with
``sort_keys``). :func:`decode` reads it back and refuses another version or a malformed
checkpoint with a :class:`CheckpointError` naming the field; :func:`restore` makes a
:class:`~controller.table.machine.Table` that carries on from it.

>>> from controller.games import load_game
>>> from controller.table import events as ev
>>> table = Table(load_game("pa-standard"), TableSettings(spots=1))
>>> _ = table.run([ev.BetSensor(1, "main", True), ev.Lockout(t=5), ev.CardDrawn(parse_card("QH"))])
>>> data = encode(table.state)
>>> data["version"], data["state"]["phase"], data["state"]["sensors"], data["state"]["now"]
(1, 'dealing', [['1/main', True]], 5)
>>> again = restore(table.rules, table.settings, data)
>>> again.state == table.state and again.state.round.spots[1].hands[0].cards
[Card(rank=<Rank.QUEEN: 12>, suit=<Suit.HEARTS: 'H'>)]
>>> decode({"version": 2, "state": {}})
Traceback (most recent call last):
...
controller.table.checkpoint.CheckpointError: checkpoint field 'version': this software reads \
version 1, got 2; recover by replaying the journal's events instead

How types are written: a card as its text (``"QH"``, ``"10D"``), a phase by its value
(``"insurance"``), a (spot, circle) key as ``"3/main"``, a set as a sorted list, a tuple as a
list, ``None`` as ``null``; a map as a list of ``[key, value]`` pairs in the state's own order
(the order is state: alarms in raising order, claims oldest first, spots in deal order); an
event as its :meth:`~controller.table.events.Event.to_dict` object, an effect as its
:meth:`~controller.table.effects.Effect.to_dict` object; the state's dataclasses as objects
with every field. The codecs come from the dataclasses' annotations, so a field of a type this
module cannot write stops :func:`encode` at once instead of being left out.

A new field needs a version bump (and a reader for the old version) or a default: list it in
:data:`ADDED_FIELDS` so that a checkpoint written before it still decodes, with the default.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from controller.errors import CardError, EventError
from controller.rules.cards import Card, parse_card
from controller.rules.profile import HouseRules
from controller.table.effects import Effect, parse_effect
from controller.table.events import Event, JackpotAward, parse_event
from controller.table.machine import Table
from controller.table.settings import TableSettings
from controller.table.state import (
    Claim,
    HandInPlay,
    OpenAlarm,
    Phase,
    RoundState,
    SpotInPlay,
    TableState,
)

CHECKPOINT_VERSION = 1
"""The format :func:`encode` writes and the only one :func:`decode` reads."""

ADDED_FIELDS: frozenset[str] = frozenset(
    {"OpenAlarm.about", "OpenAlarm.cleared", "OpenAlarm.cleared_t"}  # issue 20
    | {"TableState.pending_held"}  # issue 26
    | {"TableState.event_seq"}  # issue 28
)
"""Fields (``"SpotInPlay.ez_bust"``) added after version 1 with a default: a checkpoint
without them decodes with the default. Every other field is required."""

_CLASSES: dict[str, type] = {
    cls.__name__: cls for cls in (TableState, RoundState, SpotInPlay, HandInPlay, OpenAlarm, Claim)
}


class CheckpointError(EventError):
    """A checkpoint of another version, or one with a field missing, unknown or of the
    wrong type; the message names the field (``state.round.spots[0][1].wager``)."""


def _fail(path: str, problem: str) -> CheckpointError:
    return CheckpointError(f"checkpoint field '{path}': {problem}")


_Encode = Callable[[Any], Any]
_Decode = Callable[[Any, str], Any]


def _scalar(kind: type, words: str) -> tuple[_Encode, _Decode]:
    def dec(value: Any, path: str) -> Any:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _fail(path, f"must be {words}, got {value!r}")
        return value

    return (lambda value: value), dec


def _card_decode(value: Any, path: str) -> Card:
    if not isinstance(value, str):
        raise _fail(path, f'must be card text such as "QH", got {value!r}')
    try:
        card = parse_card(value)
    except CardError as exc:
        raise _fail(path, str(exc)) from None
    if str(card) != value:
        raise _fail(path, f"must be the card's canonical text {str(card)!r}, got {value!r}")
    return card


_SPOT_CIRCLE = re.compile(r"(\d+)/(.+)")


def _spot_circle_decode(value: Any, path: str) -> tuple[int, str]:
    match = _SPOT_CIRCLE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise _fail(path, f'must be a spot and a circle such as "3/main", got {value!r}')
    return int(match[1]), match[2]


def _phase_decode(value: Any, path: str) -> Phase:
    try:
        return Phase(value)
    except ValueError:
        known = ", ".join(phase.value for phase in Phase)
        raise _fail(path, f"must be one of {known}, got {value!r}") from None


def _event_decode(value: Any, path: str) -> Event:
    try:
        return parse_event(value)
    except EventError as exc:
        raise _fail(path, str(exc)) from None


def _award_decode(value: Any, path: str) -> JackpotAward:
    event = _event_decode(value, path)
    if not isinstance(event, JackpotAward):
        raise _fail(path, f"must be a jackpot_award event, got {event.TYPE!r}")
    return event


def _effect_decode(value: Any, path: str) -> Effect:
    try:
        return parse_effect(value)
    except EventError as exc:
        raise _fail(path, str(exc)) from None


_NAMED: dict[str, tuple[_Encode, _Decode]] = {
    "int": _scalar(int, "a whole number"),
    "bool": _scalar(bool, "true or false"),
    "str": _scalar(str, "text"),
    "Card": (str, _card_decode),
    "Phase": (lambda phase: phase.value, _phase_decode),
    "tuple[int, str]": (lambda key: f"{key[0]}/{key[1]}", _spot_circle_decode),
    "Event": (lambda event: event.to_dict(), _event_decode),
    "JackpotAward": (lambda event: event.to_dict(), _award_decode),
    "Effect": (lambda effect: effect.to_dict(), _effect_decode),
}


def _split_args(text: str) -> list[str]:
    """``"K, V"`` -> ``["K", "V"]`` at the top level of brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return parts


def _list_codec(item: tuple[_Encode, _Decode], make: Callable, sort: bool) -> tuple:
    enc_item, dec_item = item

    def enc(values: Any) -> list:
        out = [enc_item(value) for value in values]
        return sorted(out) if sort else out

    def dec(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise _fail(path, f"must be a list, got {value!r}")
        return make(dec_item(entry, f"{path}[{index}]") for index, entry in enumerate(value))

    return enc, dec


def _dict_codec(key: tuple[_Encode, _Decode], item: tuple[_Encode, _Decode]) -> tuple:
    enc_key, dec_key = key
    enc_item, dec_item = item

    def enc(values: dict) -> list:
        return [[enc_key(k), enc_item(v)] for k, v in values.items()]

    def dec(value: Any, path: str) -> dict:
        if not isinstance(value, list):
            raise _fail(path, f"must be a list of [key, value] pairs, got {value!r}")
        out: dict = {}
        for index, pair in enumerate(value):
            where = f"{path}[{index}]"
            if not isinstance(pair, list) or len(pair) != 2:
                raise _fail(where, f"must be a [key, value] pair, got {pair!r}")
            k = dec_key(pair[0], f"{where}[0]")
            if k in out:
                raise _fail(f"{where}[0]", f"repeats the key {pair[0]!r}")
            out[k] = dec_item(pair[1], f"{where}[1]")
        return out

    return enc, dec


def _tuple_codec(items: list[tuple[_Encode, _Decode]]) -> tuple:
    def enc(values: tuple) -> list:
        return [codec[0](value) for codec, value in zip(items, values, strict=True)]

    def dec(value: Any, path: str) -> tuple:
        if not isinstance(value, list) or len(value) != len(items):
            raise _fail(path, f"must be a list of {len(items)} values, got {value!r}")
        pairs = enumerate(zip(items, value, strict=True))
        return tuple(codec[1](v, f"{path}[{i}]") for i, (codec, v) in pairs)

    return enc, dec


def _optional(codec: tuple[_Encode, _Decode]) -> tuple:
    enc, dec = codec
    return (
        lambda value: None if value is None else enc(value),
        lambda value, path: None if value is None else dec(value, path),
    )


def _codec(text: str) -> tuple[_Encode, _Decode]:
    """The encoder and decoder of an annotation (the dataclasses' string annotations)."""
    text = text.strip()
    if text in _NAMED:
        return _NAMED[text]
    if text.endswith(" | None"):
        return _optional(_codec(text.removesuffix(" | None")))
    if text in _CLASSES:
        return _object_codec(_CLASSES[text])
    outer, _, inner = text.partition("[")
    args = _split_args(inner.removesuffix("]")) if inner else []
    if outer == "list" and len(args) == 1:
        return _list_codec(_codec(args[0]), list, sort=False)
    if outer == "set" and len(args) == 1:
        return _list_codec(_codec(args[0]), set, sort=True)
    if outer == "tuple" and len(args) == 2 and args[1] == "...":
        return _list_codec(_codec(args[0]), tuple, sort=False)
    if outer == "tuple" and args:
        return _tuple_codec([_codec(arg) for arg in args])
    if outer == "dict" and len(args) == 2:
        return _dict_codec(_codec(args[0]), _codec(args[1]))
    raise TypeError(
        f"a checkpoint cannot write the type {text!r}: teach controller/table/checkpoint.py "
        "to write it and bump CHECKPOINT_VERSION"
    )


def _object_codec(cls: type) -> tuple[_Encode, _Decode]:
    fields = [
        (field.name, _codec(str(field.type))) for field in dataclasses.fields(cls) if field.init
    ]

    def enc(obj: Any) -> dict:
        return {name: codec[0](getattr(obj, name)) for name, codec in fields}

    def dec(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _fail(path, f"must be a JSON object ({cls.__name__}), got {value!r}")
        names = [name for name, _ in fields]
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise _fail(
                f"{path}.{unknown[0]}",
                f"unknown field of {cls.__name__} (fields are: {', '.join(names)})",
            )
        values = {}
        for name, codec in fields:
            if name in value:
                values[name] = codec[1](value[name], f"{path}.{name}")
            elif f"{cls.__name__}.{name}" not in ADDED_FIELDS:
                raise _fail(f"{path}.{name}", f"is required ({cls.__name__}.{name})")
        return cls(**values)

    return enc, dec


_STATE_ENCODE, _STATE_DECODE = _object_codec(TableState)


def encode(state: TableState) -> dict[str, Any]:
    """The checkpoint of ``state``: ``{"version": 1, "state": {...}}``, plain JSON data
    (the hole card included: a checkpoint is internal, like the journal)."""
    return {"version": CHECKPOINT_VERSION, "state": _STATE_ENCODE(state)}


def decode(data: Any) -> TableState:
    """The state a checkpoint holds; another version or a malformed checkpoint is a
    :class:`CheckpointError` naming the field."""
    if not isinstance(data, dict):
        raise CheckpointError(f"a checkpoint must be a JSON object, got {data!r}")
    unknown = sorted(set(data) - {"version", "state"})
    if unknown:
        raise _fail(unknown[0], "unknown; a checkpoint has only 'version' and 'state'")
    if "version" not in data:
        raise _fail("version", "is required")
    version = data["version"]
    if version != CHECKPOINT_VERSION or isinstance(version, bool):
        raise _fail(
            "version",
            f"this software reads version {CHECKPOINT_VERSION}, got {version!r}; "
            "recover by replaying the journal's events instead",
        )
    if "state" not in data:
        raise _fail("state", "is required")
    return _STATE_DECODE(data["state"], "state")


def restore(rules: HouseRules, settings: TableSettings | None, data: Any) -> Table:
    """A table of ``rules`` and ``settings`` that carries on from the checkpoint ``data``.

    Refused (naming the field) if the checkpoint holds a spot the settings do not have or
    a bet circle the game does not: it was taken at another table or game."""
    table = Table(rules, settings)
    state = decode(data)
    spots = table.settings.spots
    for name in ("sensors", "amounts"):
        for index, (spot, circle) in enumerate(getattr(state, name)):
            where = f"state.{name}[{index}][0]"
            if not 1 <= spot <= spots:
                raise _fail(where, f"spot {spot} is not a spot of this table (1 to {spots})")
            if circle not in table.circles:
                raise _fail(
                    where,
                    f"{circle!r} is not a bet circle of this game "
                    f"({', '.join(table.circles)}): the checkpoint is another game's",
                )
    if state.round is not None:
        for index, spot in enumerate(state.round.spots):
            if not 1 <= spot <= spots:
                raise _fail(
                    f"state.round.spots[{index}][0]",
                    f"spot {spot} is not a spot of this table (1 to {spots})",
                )
    table.state = state
    return table
