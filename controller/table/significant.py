"""Significant events for the center: what of a step the jackpot controller must hear of.

The shoe door, the shoe's faults, the table's faults, the enclosure (GLI-11's logic door), a
start after an unclean stop, the journal set aside or restored and the clock found
unsynchronised each become one ``event`` message (link schema ``event.json``), sequenced,
signed and sent exactly once through the outbox with the journal record of the event that
made it (issue 28 item 4; N.J.A.C. 13:69E-1.39C(b)5: security events reach the central
system, not only the table's own journal).

Pure: :func:`watch` notes the little of the table's state an event may change before the
machine applies it, :func:`events_of` compares after it and names what happened, as
``(code, fields)``. A change is reported, a repeat is not: a shoe that says "door open"
twice opened its door once. The machine numbers the messages (``event/1``, ``event/2`` ...,
:attr:`~controller.table.state.TableState.event_seq`); the journal stamps each with the UTC
time it journaled the event (:func:`stamp`), so a replay makes the very same message.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from controller.table import events as ev
from controller.table.effects import Alarm, Effect, Publish

KIND = "event"
"""The outbox kind (and topic level) of a significant event."""

WATCHED = (
    ev.ShoeEvent,
    ev.TableFault,
    ev.ClearFaults,
    ev.SupervisorKey,
    ev.EnclosureDoor,
    ev.PowerLoss,
    ev.JackpotLink,
    ev.LinkAlarm,
    ev.JournalChange,
)
"""The table events that may make a significant event."""

DETAIL_MAX = 240
"""Characters of an event's detail the message carries (printable ASCII)."""


@dataclass(frozen=True, slots=True)
class Before:
    """What :func:`events_of` compares with: the state before the event."""

    door_open: bool
    shoe_fault: str
    faults: frozenset[tuple[str, bool]]
    jackpot_link: bool


def watch(state: Any) -> Before:
    """The parts of ``state`` (a TableState) a watched event may change."""
    return Before(
        state.door_open,
        state.shoe_fault,
        frozenset((kind, active) for kind, (_detail, active) in state.faults.items()),
        state.jackpot_link,
    )


def printable(value: Any, limit: int = DETAIL_MAX) -> str:
    """``value`` as printable ASCII (any other character as ``?``), cut at ``limit``
    characters with ``...``: the words an event message may carry (event.json)."""
    out = "".join(c if " " <= c <= "~" else "?" for c in str(value))
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _shoe(event: ev.ShoeEvent, before: Before, state: Any) -> list[tuple[str, dict[str, Any]]]:
    detail = {"detail": printable(event.detail)} if event.detail else {}
    kind = event.event
    if kind == "door_open" and state.door_open and not before.door_open:
        return [("shoe_door_open", detail)]
    if kind == "door_closed" and before.door_open and not state.door_open:
        return [("shoe_door_closed", detail)]
    if state.shoe_fault == before.shoe_fault:
        return []
    if state.shoe_fault == "offline":
        return [("shoe_offline", detail)]
    if before.shoe_fault == "offline" and not state.shoe_fault:
        return [("shoe_online", detail)]
    if state.shoe_fault:
        return [("shoe_fault", {"detail": printable(state.shoe_fault)})]
    return [("shoe_fault_cleared", {"detail": printable(before.shoe_fault)})]


def events_of(
    event: ev.Event, before: Before, state: Any, effects: list[Effect]
) -> list[tuple[str, dict[str, Any]]]:
    """The significant events an accepted ``event`` made: ``(code, fields)`` each, ``code``
    one of event.json's, ``fields`` its optional payload fields."""
    out: list[tuple[str, dict[str, Any]]] = []
    if isinstance(event, ev.ShoeEvent):
        out += _shoe(event, before, state)
    elif isinstance(event, ev.TableFault):
        was = dict(before.faults)
        detail = {"fault": event.kind, "detail": printable(event.detail or "lost")}
        if event.kind not in was and not event.active:  # over when reported
            out += [("table_fault", detail), ("table_fault_gone", {"fault": event.kind})]
        elif event.active and not was.get(event.kind, False):
            out.append(("table_fault", detail))
        elif was.get(event.kind) and not event.active:
            out.append(("table_fault_gone", {"fault": event.kind}))
    elif isinstance(event, ev.EnclosureDoor):
        code = "enclosure_open" if event.open else "enclosure_closed"
        out.append((code, {"at_start": True} if event.at_start else {}))
    elif isinstance(event, ev.PowerLoss):
        out.append(("power_loss", {"last_event": event.last_event,
                                   "last_utc_ms": event.last_utc_ms}))  # fmt: skip
    elif isinstance(event, ev.JackpotLink):
        if before.jackpot_link and not event.up and event.why == "clock_unsynchronised":
            out.append(("clock_unsynchronised", {}))
    elif isinstance(event, ev.LinkAlarm):
        raised = any(
            isinstance(e, Alarm) and e.code == "link_clock_unsynchronised" for e in effects
        )
        if event.kind == "clock_unsynchronised" and raised:
            out.append(("clock_unsynchronised", {"detail": printable(event.detail)}))
    elif isinstance(event, ev.JournalChange):
        code = "journal_set_aside" if event.action == "set_aside" else "journal_restored"
        fields: dict[str, Any] = {"by": printable(event.by)} if event.by else {}
        if event.detail:
            fields["detail"] = printable(event.detail)
        out.append((code, fields))
    if before.faults and not state.faults:  # a technician's clear, or the supervisor key
        by = event.by if isinstance(event, ev.ClearFaults) else "supervisor key"
        out.append(("faults_cleared", {"by": printable(by) or "technician"}))
    return out


def message(number: int, code: str, fields: dict[str, Any], round_number: int,
            in_round: bool) -> Publish:  # fmt: skip
    """The outbox request of significant event ``number`` (1, 2, 3 ... per table, never
    reused): ``utc_ms`` is 0 until the journal stamps it (:func:`stamp`)."""
    payload = {"code": code, "utc_ms": 0, "round": round_number, "in_round": in_round, **fields}
    return Publish(KIND, f"event/{number}", payload)


def stamp(publish: Publish, utc_ms: int | None) -> Publish:
    """``publish`` with the UTC time (ms) the journal recorded its event at, if it is a
    significant event (others are returned as they are); 0 if the time is unknown."""
    if publish.topic != KIND:
        return publish
    return replace(publish, payload={**publish.payload, "utc_ms": int(utc_ms or 0)})
