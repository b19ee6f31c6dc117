"""A table's significant events at the center (issue 28 item 4; N.J.A.C. 13:69E-1.39C(b)5, and
GLI-11's logic door: the table's enclosure).

A table sends each one (the shoe door, a shoe or table fault, the enclosure, a start after an
unclean stop, the journal set aside or restored, its clock unsynchronised) as an ``event``
message, sequenced, signed and through its outbox like a contribution
(controller/link/schemas/event.json). The ledger applies it like every table message: the
signature checked before (the service), its sequence number taken in ``applied``, a resend
acknowledged again as a duplicate, a replayed key refused. :func:`record` keeps it in
``events`` (schema 4): the table, its seq, the code, the table's UTC time, the controller's
receive time and gaming day (those of its ``applied`` row), the round, whether one was in
progress, who and the table's words, and the payload as sent. No meter moves, no award.

Refused on no term of the game: an event is the table's record of what happened, and a true
one refused would be hidden from the center. Its times are not judged either: a table whose
clock is wrong says so (``clock_unsynchronised``) with a wrong ``utc_ms``, and a table that
lost power may send its events late, so both clocks are kept (``table_utc_ms`` 0: the table
did not know the time) and the report shows both.

The service logs each one and raises an alarm (:func:`alarm_kind`, ``event_<code>``; one open
alarm per code and table, repeats counted) for those that need a person: a power loss, the
journal set aside or restored, the enclosure open (at start too), the clock unsynchronised,
the shoe door opened during a round, a table fault. Its words are fixed (:func:`describe`);
the table's own words (``detail``, ``by``, ``fault``) only escaped and cut
(:func:`controller.link.messages.loggable`). See docs/jackpot/controller.md ("Table events").
"""

from __future__ import annotations

import json
from typing import Any

from controller.link.messages import loggable
from jackpot.gaming_day import utc_text

#: What each code means, in the words a technician reads (the link's enum, event.json).
WORDS = {
    "shoe_door_open": "the shoe door was opened",
    "shoe_door_closed": "the shoe door was closed",
    "shoe_fault": "the shoe reported a fault",
    "shoe_fault_cleared": "the shoe's fault cleared",
    "shoe_offline": "the shoe went offline",
    "shoe_online": "the shoe is online again",
    "table_fault": "a table fault",
    "table_fault_gone": "a table fault is gone",
    "faults_cleared": "the table's faults were cleared",
    "enclosure_open": "the table's enclosure (logic door) is open",
    "enclosure_closed": "the table's enclosure (logic door) is closed",
    "power_loss": "power loss: the table's last stop was not clean",
    "journal_set_aside": "the table's journal was set aside (a new one carries on)",
    "journal_restored": "the table's journal was restored from a backup",
    "clock_unsynchronised": "the table's clock is not synchronised (its times are not to be "
    "trusted until it is)",
}

#: The codes that always need a person (alarm ``event_<code>``); see :func:`alarm_kind`.
ALARMED = ("power_loss", "journal_set_aside", "journal_restored", "enclosure_open",
           "clock_unsynchronised", "table_fault")  # fmt: skip


def record(db: Any, message: dict[str, Any], received_utc: int, gaming_day: str) -> None:
    """Keep the ``event`` ``message`` (checked against its schema) in the ledger's
    ``events``, inside the ledger's transaction (:meth:`jackpot.ledger.Ledger.apply`):
    ``received_utc`` and ``gaming_day`` are its ``applied`` row's."""
    p = message["payload"]
    db.execute(
        "INSERT INTO events (table_id, seq, code, table_utc_ms, received_utc, gaming_day,"
        " round, in_round, detail, by_name, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (message["table"], message["seq"], p["code"], p["utc_ms"], received_utc, gaming_day,
         p["round"], int(p["in_round"]), p.get("detail"), p.get("by"),
         json.dumps(p, sort_keys=True, separators=(",", ":"))),
    )  # fmt: skip


def alarm_kind(payload: dict[str, Any]) -> str | None:
    """The alarm kind an event raises (``event_power_loss``...), None if it needs no person:
    the codes of :data:`ALARMED`, and ``shoe_door_open`` while a round is in progress."""
    code = payload["code"]
    if code in ALARMED or (code == "shoe_door_open" and payload["in_round"]):
        return f"event_{code}"
    return None


def describe(payload: dict[str, Any]) -> str:
    """One line about an event: fixed words, then the table's own escaped and cut.

    >>> print(describe({"code": "power_loss", "utc_ms": 0, "round": 41, "in_round": False,
    ...                 "last_event": 977, "last_utc_ms": 1772456400000}))
    power loss: the table's last stop was not clean (its last event #977 at \
2026-03-02T13:00:00.000Z); round 41, between rounds; the table's time unknown
    >>> print(describe({"code": "table_fault", "utc_ms": 1772456400000, "round": 7,
    ...                 "in_round": True, "fault": "camera", "detail": "no frame"}))
    a table fault (camera); round 7, in progress; the table's time 2026-03-02T13:00:00.000Z; \
detail: no frame
    """
    code = payload["code"]
    words = WORDS.get(code, "an event of an unknown code")
    if "fault" in payload:
        words += f" ({loggable(payload['fault'], 16)})"
    if code == "power_loss" and "last_event" in payload:
        last = utc_text(payload.get("last_utc_ms") or None) or "an unknown time"
        words += f" (its last event #{int(payload['last_event'])} at {last})"
    if payload.get("at_start"):
        words += " (read at start)"
    words += f"; round {int(payload['round'])}, "
    words += "in progress" if payload["in_round"] else "between rounds"
    words += f"; the table's time {utc_text(payload['utc_ms'] or None) or 'unknown'}"
    if "by" in payload:
        words += f"; by {loggable(payload['by'], 80)}"
    if "detail" in payload:
        words += f"; detail: {loggable(payload['detail'], 120)}"
    return words
