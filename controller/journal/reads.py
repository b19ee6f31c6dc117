"""Reading a journal file: its events in order, the round records recall shows (with their
UTC times, clock steps and chain marks), and the whole file or one round as an event script.

:class:`JournalReads` is that part of :class:`~controller.journal.file.Journal`; any number
of readers may do it while the table writes (WAL).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import EventError, JournalError
from controller.journal import chain
from controller.journal.store import dumps
from controller.table.events import Event, parse_event
from controller.table.script import SCRIPT_VERSION, round_script

RECALL_KEYS = ("started_utc_ms", "settled_utc_ms", "clock_steps", "chain")
"""The keys the journal adds to a stored round record when recall reads it."""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One stored event: ``seq`` from 1, the ``round`` it belongs to, the event as JSON
    (a dict, as in an event script), whether the table accepted it and the UTC time (ms) it
    was journaled at (None: unknown, a journal from before schema version 4)."""

    seq: int
    round: int
    event: dict[str, Any]
    accepted: bool
    utc_ms: int | None = None


class JournalReads:
    """The reading side of :class:`~controller.journal.file.Journal` (``db``, ``path``,
    ``version``, ``meta()``, ``origin()`` and ``_read()`` are the journal's)."""

    path: Path
    version: int
    _verified: chain.Verified | None

    def entries(self, after: int = 0) -> Iterator[JournalEntry]:
        """Every stored event after ``after``, in order."""
        try:
            utc = "utc_ms" if self.version >= 4 else "NULL"
            cursor = self.db.execute(
                f"SELECT seq, round, event, accepted, {utc} FROM events WHERE seq > ? ORDER BY seq",
                (after,),
            )
            for seq, round_number, text, accepted, utc_ms in cursor:
                try:
                    event = json.loads(text)
                except ValueError as exc:
                    raise JournalError(
                        f"journal {self.path}: event {seq} is not JSON ({exc}); the file is "
                        "damaged: keep it for the investigation and call a technician"
                    ) from None
                yield JournalEntry(seq, round_number, event, bool(accepted), utc_ms)
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read journal {self.path}: {exc}") from None

    def events(self) -> Iterator[Event]:
        """Every stored event as an :class:`~controller.table.events.Event`, in order."""
        for entry in self.entries():
            yield self._parse(entry)

    def _parse(self, entry: JournalEntry) -> Event:
        try:
            return parse_event(entry.event)
        except EventError as exc:
            raise JournalError(f"journal {self.path}: event {entry.seq}: {exc}") from None

    def round_count(self) -> tuple[int, int | None, int | None]:
        """How many rounds are recorded, and the first and last round numbers."""
        count, first, last = self._read("SELECT count(*), min(round), max(round) FROM rounds")[0]
        return int(count), first, last

    def _records(self, where: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Round records as recall shows them: the stored record (as it was shown) with the
        journal's ``started_utc_ms`` and ``settled_utc_ms`` (None before schema version 4)
        and ``clock_steps``, the wall-clock steps during the round (``seq``, ``step_ms``,
        ``utc_before``, ``utc_after``)."""
        if self.version < 4:
            rows = self._read(f"SELECT record, NULL, NULL, round, seq FROM rounds {where}", params)
        else:
            rows = self._read(
                f"SELECT record, started_utc_ms, utc_ms, round, seq FROM rounds {where}", params
            )
        records = []
        for text, started, settled, number, seq in rows:
            record = json.loads(text)
            record["started_utc_ms"] = started
            record["settled_utc_ms"] = settled
            record["clock_steps"] = self._clock_steps(number, seq)
            chain.mark(record, seq, self.verified(seq))
            records.append(record)
        return records

    def verified(self, upto: int = 0) -> chain.Verified:
        """How far this file's hash chain verifies (:mod:`.chain`), checked on to event
        ``upto`` at least; a file from before schema version 6 is not chained at all."""
        found = self._verified
        if found is None or (found.broken is None and found.upto < upto):
            try:
                if self.version < 6:
                    found = chain.Verified(0, chain.GENESIS, self._count())
                else:
                    found = chain.verify(self.db, found or chain.start(self.db))
            except sqlite3.Error as exc:
                raise JournalError(f"cannot read journal {self.path}: {exc}") from None
            self._verified = found
        return found

    def _clock_steps(self, number: int, seq: int) -> list[dict[str, int]]:
        if self.version < 4:
            return []
        rows = self._read(
            "SELECT seq, step_ms, utc_before, utc_after FROM clock_steps WHERE seq <= ? AND"
            " seq >= coalesce((SELECT min(seq) FROM events WHERE round = ?), ?) ORDER BY seq",
            (seq, number, seq),
        )
        keys = ("seq", "step_ms", "utc_before", "utc_after")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def last_rounds(self, n: int = 10) -> list[dict[str, Any]]:
        """The recall records of the last ``n`` settled (or voided) rounds, newest first
        (:meth:`_records`). A round in progress has no record, so its hole card is never
        shown."""
        return self._records("ORDER BY round DESC LIMIT ?", (max(n, 0),))

    def round_record(self, number: int) -> dict[str, Any] | None:
        """The recall record of round ``number`` (:meth:`_records`), or None if it is not
        settled or not in this file."""
        found = self._records("WHERE round = ?", (number,))
        return found[0] if found else None

    def rounds_between(self, utc_from: int, utc_to: int, limit: int = 50) -> list[dict[str, Any]]:
        """The records of the rounds settled from ``utc_from`` to ``utc_to`` (ms since the
        epoch, UTC, both included), oldest first, at most ``limit``."""
        if self.version < 4:
            return []
        return self._records(
            "WHERE utc_ms BETWEEN ? AND ? ORDER BY utc_ms, round LIMIT ?",
            (utc_from, utc_to, max(limit, 0)),
        )

    def utc_span(self) -> tuple[int | None, int | None]:
        """The UTC times (ms) of the first and last event in this file that have one."""
        if self.version < 4:
            return None, None
        first, last = self._read("SELECT min(utc_ms), max(utc_ms) FROM events")[0]
        return first, last

    def round_script(self, number: int) -> str:
        """Round ``number`` as an event script that replays it (``table-controller replay``)."""
        record = self.round_record(number)
        if record is None:
            raise JournalError(_no_round(self, number))
        return round_script(record)

    def script_lines(self, *, open_round: bool = True) -> Iterator[str]:
        """The whole journal as an event script, line by line: a header, then every event.

        With ``open_round=False`` it stops at the event that settled the last round, so
        the hole card of a round in progress stays in the controller.
        """
        last = None
        if not open_round:
            last = self._read("SELECT MAX(seq) FROM rounds")[0][0] or 0
        meta = self.meta()
        header = {
            "type": "header",
            "version": SCRIPT_VERSION,
            "game": meta["game"],
            "table": meta["table"],
        }
        yield dumps(header)
        origin = self.origin()
        if origin is not None:
            yield (
                f"# this file carries on after event {origin.seq} ({origin.reason}; the file "
                f"before it: {origin.previous}, SHA-256 {origin.previous_sha256}): a fresh "
                "table replays it only after the events of the files before it"
            )
        for entry in self.entries():
            if last is not None and entry.seq > last:
                break
            yield dumps(entry.event)

    def export_script(self) -> str:
        """The whole journal as one event script; a fresh table replaying it ends in the
        state the journal's recovery gives (for a file that carries on from an older one,
        after the older files' events: a comment line says which)."""
        return "\n".join(self.script_lines()) + "\n"


def _no_round(journal: JournalReads, number: int) -> str:
    count, first, last = journal.round_count()
    have = f"rounds {first} to {last} are recorded" if count else "no round is recorded yet"
    return (
        f"journal {journal.path}: no record of round {number} ({have}; a round in progress "
        "is recorded when it is settled)"
    )
