"""Event scripts: JSON Lines that replay a table, with optional expectations.

One JSON object per line; blank lines and lines starting with ``#`` are
comments. The optional first object is a header::

    {"type": "header", "version": 1, "game": "pa-standard", "table": {"spots": 3}}

(``round``, optional, numbers the first round: a recalled round replays under
its own number, so its publish keys match the record.)

Every other object is an event (see :mod:`controller.table.events`) or an
expectation, checked against the step of the event just before it::

    {"expect": "prompt", "text": "Insurance open"}
    {"expect": "settled", "spot": 1, "wager": "main", "outcome": "win", "paid": 1500}
    {"expect": "refused", "reason": "insurance window is not open"}
    {"expect": "phase", "phase": "players"}
    {"expect": "net", "spot": 1, "cents": 1500}

Effect expectations (``prompt``, ``alarm``, ``settled``, ``publish``,
``light``, ``refused``) pass when one effect of that kind matches every field
given: ``text``, ``reason`` and ``action`` as substrings, ``payload`` as a
subset, anything else exactly. ``accepted`` checks the event was accepted,
``phase`` the table's phase, ``net`` a spot's total net (paid + returned -
stake, cents) over the script so far, ``absent`` that no effect of the event
contains ``text``. The journal exports a round in the same format
(:func:`round_script`), so a disputed round replays from its record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from controller.errors import EventError
from controller.rules.profile import HouseRules
from controller.table.effects import Settled, Step
from controller.table.events import Event, parse_event
from controller.table.machine import Table
from controller.table.settings import TableSettings

SCRIPT_VERSION = 1
EFFECT_EXPECTATIONS = ("prompt", "alarm", "settled", "publish", "light", "refused", "record")
STATE_EXPECTATIONS = ("accepted", "phase", "net", "absent")
SUBSTRING_FIELDS = ("text", "reason", "action")


@dataclass(frozen=True, slots=True)
class Expectation:
    line: int
    spec: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ScriptEvent:
    line: int
    event: Event


@dataclass
class Script:
    """A parsed script: its header (may be empty) and its events and expectations in order."""

    header: dict[str, Any]
    items: list[ScriptEvent | Expectation]

    @property
    def events(self) -> list[Event]:
        return [item.event for item in self.items if isinstance(item, ScriptEvent)]

    def settings(self) -> TableSettings:
        return TableSettings.from_dict(self.header.get("table", {}))


@dataclass
class ReplayResult:
    """Every step of a replay, the expectations checked and those that failed."""

    table: Table
    steps: list[tuple[ScriptEvent, Step]] = field(default_factory=list)
    checked: int = 0
    failures: list[str] = field(default_factory=list)

    def settlements(self) -> list[Settled]:
        return [e for _, step in self.steps for e in step.effects if isinstance(e, Settled)]


def _objects(text: str, source: str) -> Iterator[tuple[int, Any]]:
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise EventError(f"{source}:{number}: not JSON ({exc.msg}): {line[:60]}") from None


def parse_script(text: str, source: str = "<script>") -> Script:
    """Parse a script; errors name the file and line."""
    header: dict[str, Any] = {}
    items: list[ScriptEvent | Expectation] = []
    for number, obj in _objects(text, source):
        if isinstance(obj, dict) and obj.get("type") == "header":
            if items or header:
                raise EventError(f"{source}:{number}: the header must be the first line")
            if obj.get("version", SCRIPT_VERSION) != SCRIPT_VERSION:
                raise EventError(
                    f"{source}:{number}: script version {obj.get('version')!r} is not "
                    f"supported; this table reads version {SCRIPT_VERSION}"
                )
            unknown = sorted(set(obj) - {"type", "version", "game", "table", "round"})
            if unknown:
                raise EventError(f"{source}:{number}: unknown header field(s) {', '.join(unknown)}")
            header = obj
            continue
        if isinstance(obj, dict) and "expect" in obj:
            kind = obj["expect"]
            if kind not in EFFECT_EXPECTATIONS + STATE_EXPECTATIONS:
                known = ", ".join(EFFECT_EXPECTATIONS + STATE_EXPECTATIONS)
                raise EventError(f"{source}:{number}: unknown expectation {kind!r}; use {known}")
            if not any(isinstance(item, ScriptEvent) for item in items):
                raise EventError(f"{source}:{number}: an expectation must follow an event")
            items.append(Expectation(number, obj))
            continue
        try:
            items.append(ScriptEvent(number, parse_event(obj)))
        except EventError as exc:
            raise EventError(f"{source}:{number}: {exc}") from None
    return Script(header, items)


def _matches(effect: dict[str, Any], spec: dict[str, Any]) -> bool:
    for key, want in spec.items():
        if key == "expect":
            continue
        have = effect.get(key)
        if key in SUBSTRING_FIELDS:
            if not isinstance(have, str) or str(want) not in have:
                return False
        elif key == "payload":
            if not isinstance(have, dict) or any(have.get(k) != v for k, v in want.items()):
                return False
        elif key == "net":
            if have is None or effect["paid"] + effect["returned"] - effect["stake"] != want:
                return False
        elif have != want:
            return False
    return True


def _check(spec: dict[str, Any], step: Step, result: ReplayResult) -> str | None:
    kind = spec["expect"]
    effects = [e.to_dict() for e in step.effects]
    if kind == "accepted":
        return None if step.accepted else f"refused: {step.reason}"
    if kind == "phase":
        phase = result.table.state.phase.value
        return None if phase == spec.get("phase") else f"phase is {phase}"
    if kind == "net":
        spot = spec.get("spot")
        net = sum(s.net for s in result.settlements() if s.spot == spot)
        return None if net == spec.get("cents") else f"spot {spot} net is {net} cents"
    if kind == "absent":
        text = str(spec.get("text"))
        found = [e for e in effects if text in json.dumps(e)]
        return None if not found else f"{text!r} appears in {found[0]}"
    candidates = [e for e in effects if e["effect"] == kind]
    if any(_matches(e, spec) for e in candidates):
        return None
    if not candidates:
        return f"no {kind} effect; effects were {[e['effect'] for e in effects]}"
    return f"no {kind} effect matches; {kind} effects were {candidates}"


def replay(
    script: Script, rules: HouseRules, settings: TableSettings | None = None
) -> ReplayResult:
    """Run a script's events through a fresh table and check its expectations."""
    table = Table(rules, settings if settings is not None else script.settings())
    first_round = script.header.get("round", 1)
    if isinstance(first_round, bool) or not isinstance(first_round, int) or first_round < 1:
        raise EventError(f"header field 'round' must be a round number >= 1, got {first_round!r}")
    table.state.round_number = first_round  # a recalled round replays under its own number
    result = ReplayResult(table)
    last: Step | None = None
    last_event: ScriptEvent | None = None
    for item in script.items:
        if isinstance(item, ScriptEvent):
            last = table.handle(item.event)
            last_event = item
            result.steps.append((item, last))
            continue
        assert last is not None and last_event is not None
        result.checked += 1
        problem = _check(item.spec, last, result)
        if problem is not None:
            result.failures.append(
                f"line {item.line}: expected {json.dumps(item.spec)} after "
                f"{json.dumps(last_event.event.to_dict())} (line {last_event.line}): {problem}"
            )
    return result


def round_script(record: dict[str, Any]) -> str:
    """A round's recall record (the journal's ``round`` record) as an event script."""
    header = {
        "type": "header",
        "version": SCRIPT_VERSION,
        "game": record["game"],
        "table": record["table"],
        "round": record["round"],
    }
    lines = [json.dumps(header)]
    lines.extend(json.dumps(event) for event in record["events"])
    return "\n".join(lines) + "\n"
