"""Recall across a journal's files: the live file and the gaming-day files kept beside it.

A table's journal is ``data_dir/journal.sqlite`` plus the read-only archives that rotation
(:mod:`controller.journal.rotation`) leaves beside it, one a gaming day. A
:class:`JournalLibrary` finds a round in any of them, by number or by the time it was
played, and says which file holds it. It only reads: each file is opened with
:class:`~controller.journal.file.Journal` to read, one at a time, and closed again.

Searches use what each file's indexes give at once (its first and last round, its first
and last settlement time), so a search opens only the files that can hold the answer. An
archive that cannot be read is listed with its problem and left out of the search; it does
not stop the others being searched.

Times are UTC milliseconds since the epoch; :func:`local_to_utc_ms` turns a local date and
time, as a supervisor gives it, into one.

>>> local_to_utc_ms("2026-02-01 21:40", "America/New_York")  # 02:40 UTC the next day
1770000000000
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from controller.errors import JournalError
from controller.journal.file import Journal
from controller.journal.rotation import GamingDay, archived_info, archives, file_day

LOCAL_FORMATS = ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S")
"""How a local date and time may be written (24-hour clock)."""


@dataclass(frozen=True)
class JournalFile:
    """One file of the journal: its ``path``, whether it is the ``live`` one, the gaming
    day it holds (None: never set), how many rounds it records, its first and last round
    and the UTC times (ms) of its first and last settlement (None: none recorded, or no
    UTC times: written before schema version 4). ``problem``: why it cannot be read (then
    nothing else is known and it is not searched). The hash chain (``docs/journal.md``):
    ``previous`` and ``chain_from`` the file and head its origin carries on from,
    ``chain_head`` an archive's verified head (None: broken, or not chained), and
    ``chain_problem`` why its rounds are unverified though its own rows verify (it does not
    carry on the chain of the file before it)."""

    path: Path
    live: bool
    gaming_day: str | None = None
    rounds: int = 0
    first_round: int | None = None
    last_round: int | None = None
    first_settled_utc_ms: int | None = None
    last_settled_utc_ms: int | None = None
    problem: str | None = None
    previous: str | None = None
    chain_from: str | None = None
    chain_head: str | None = None
    chain_problem: str | None = None

    @property
    def name(self) -> str:
        return self.path.name

    def holds_round(self, number: int) -> bool:
        return (
            self.problem is None
            and self.first_round is not None
            and self.last_round is not None
            and self.first_round <= number <= self.last_round
        )

    def settled_between(self, utc_from: int, utc_to: int) -> bool:
        """Whether a round of this file may have settled from ``utc_from`` to ``utc_to``."""
        first, last = self.first_settled_utc_ms, self.last_settled_utc_ms
        return (
            self.problem is None
            and first is not None
            and last is not None
            and first <= utc_to
            and last >= utc_from
        )


@dataclass(frozen=True)
class FoundRound:
    """A round's recall record (as :meth:`Journal.round_record` gives it) and the file
    that holds it."""

    record: dict[str, Any]
    file: JournalFile

    def __post_init__(self) -> None:
        if self.file.chain_problem is not None and self.record.get("chain") == "verified":
            self.record["chain"] = f"UNVERIFIED: {self.file.chain_problem}"

    @property
    def number(self) -> int:
        return int(self.record["round"])


def local_to_utc_ms(text: str, zone: str | None = None) -> int:
    """A local date and time (``YYYY-MM-DD HH:MM``, seconds optional) in ``zone`` (an IANA
    name; None: the system's zone) as UTC ms since the epoch. A time that occurs twice
    (the hour the clocks go back) is taken the first time."""
    GamingDay(zone=zone)  # the zone is checked, with a message that says what to give
    text = text.strip()
    for fmt in LOCAL_FORMATS:
        try:
            moment = datetime.strptime(text, fmt)
        except ValueError:
            continue
        # no zone: the naive time is the system's local time
        aware = moment.replace(tzinfo=ZoneInfo(zone)) if zone else moment.astimezone()
        return int(aware.timestamp() * 1000)
    raise JournalError(
        f"{text!r} is not a local date and time: write it as YYYY-MM-DD HH:MM (24-hour "
        "clock), e.g. 2026-02-01 21:40"
    )


class JournalLibrary:
    """The live journal at ``live`` and its retained archives, searched as one record.

    Reading only; safe beside a running table (each search opens its own connections).
    The facts of an archive (it never changes) are kept between searches; the live file's
    are read again each time."""

    def __init__(self, live: str | os.PathLike[str]):
        self.live = Path(live)
        self._known: dict[Path, tuple[tuple[int, int], JournalFile]] = {}

    # -- the files -------------------------------------------------------------------------

    def files(self) -> list[JournalFile]:
        """Every file of the journal, oldest first, the live one last (if it exists)."""
        found = [self._describe(archive.path, live=False) for archive in archives(self.live)]
        if self.live.is_file():
            found.append(self._describe(self.live, live=True))
        elif not found:
            raise JournalError(f"no journal at {self.live}: check the path")
        return _linked(found)

    def problems(self) -> list[JournalFile]:
        """The files that cannot be read (and so are not searched)."""
        return [f for f in self.files() if f.problem is not None]

    def _describe(self, path: Path, *, live: bool) -> JournalFile:
        try:
            stat = path.stat()
        except OSError as exc:
            return JournalFile(path, live, problem=f"cannot read it: {exc.strerror}")
        key = (stat.st_mtime_ns, stat.st_size)
        kept = self._known.get(path)
        if not live and kept is not None and kept[0] == key:
            return kept[1]
        try:
            with Journal(path) as journal:
                info = archived_info(journal)
                day = str(info["gaming_day"]) if info and info.get("gaming_day") else None
                count, first, last = _one(
                    journal, "SELECT count(*), min(round), max(round) FROM rounds"
                )
                if journal.version >= 4:
                    since, until = _one(journal, "SELECT min(utc_ms), max(utc_ms) FROM rounds")
                else:
                    since = until = None
                origin = journal.origin()
                verified = None if live else journal.verified()
                described = JournalFile(
                    path, live, day or file_day(journal), count, first, last, since, until,
                    previous=origin.previous if origin else None,
                    chain_from=origin.chain if origin else None,
                    chain_head=verified.head if verified and verified.broken is None
                    and verified.upto > verified.since else None,
                )  # fmt: skip
        except JournalError as exc:
            described = JournalFile(path, live, problem=str(exc))
        except (sqlite3.Error, ValueError, KeyError) as exc:  # a damaged file
            described = JournalFile(path, live, problem=f"journal {path} is damaged: {exc}")
        if not live:
            self._known[path] = (key, described)
        return described

    # -- finding rounds -----------------------------------------------------------------------

    def file_of(self, number: int) -> JournalFile | None:
        """The file whose round range holds round ``number`` (None: no file records it)."""
        for file in reversed(self.files()):
            if file.holds_round(number):
                return file
        return None

    def find_round(self, number: int) -> FoundRound | None:
        """Round ``number``'s recall record and its file, None if no readable file records
        it (not yet settled, removed by retention, or in a damaged file)."""
        for file in reversed(self.files()):
            if not file.holds_round(number):
                continue
            with Journal(file.path) as journal:
                record = journal.round_record(number)
            if record is not None:
                return FoundRound(record, file)
        return None

    def rounds_between(self, utc_from: int, utc_to: int, limit: int = 50) -> list[FoundRound]:
        """The rounds settled from ``utc_from`` to ``utc_to`` (UTC ms, both included) in
        every file, oldest first, at most ``limit``."""
        out: list[FoundRound] = []
        for file in self.files():
            if len(out) >= limit or not file.settled_between(utc_from, utc_to):
                continue
            with Journal(file.path) as journal:
                records = journal.rounds_between(utc_from, utc_to, limit - len(out))
            out.extend(FoundRound(record, file) for record in records)
        return sorted(out, key=lambda f: (f.record.get("settled_utc_ms") or 0, f.number))

    def nearest(self, utc_ms: int, n: int = 5) -> list[FoundRound]:
        """The ``n`` rounds played nearest ``utc_ms`` (UTC ms), oldest first: a round in
        play at that moment first (started at or before it, settled at or after it), then
        those settled closest to it."""
        candidates: list[FoundRound] = []
        for file in _around(self.files(), utc_ms):
            with Journal(file.path) as journal:
                numbers = [
                    row[0]
                    for sql in (
                        "SELECT round FROM rounds WHERE utc_ms >= ? ORDER BY utc_ms, round LIMIT ?",
                        "SELECT round FROM rounds WHERE utc_ms < ? ORDER BY utc_ms DESC, round"
                        " DESC LIMIT ?",
                    )
                    for row in _rows(journal, sql, (utc_ms, n))
                ]
                for number in numbers:
                    record = journal.round_record(int(number))
                    if record is not None:
                        candidates.append(FoundRound(record, file))
        candidates.sort(key=lambda found: _distance(found.record, utc_ms))
        chosen = candidates[: max(n, 0)]
        return sorted(chosen, key=lambda f: (f.record.get("settled_utc_ms") or 0, f.number))

    def rounds_after(self, number: int, limit: int = 500) -> list[FoundRound]:
        """The settled rounds numbered above ``number``, oldest first, at most ``limit``,
        from whichever files hold them (the history's tallies read each round once)."""
        out: list[FoundRound] = []
        for file in self.files():
            if len(out) >= limit or file.problem is not None or file.last_round is None:
                continue
            if file.last_round <= number:
                continue
            with Journal(file.path) as journal:
                records = journal._records(
                    "WHERE round > ? ORDER BY round LIMIT ?", (number, limit - len(out))
                )
            out.extend(FoundRound(record, file) for record in records)
        return sorted(out, key=lambda f: f.number)[:limit]

    def older_rounds(self, before: int, n: int = 10) -> list[FoundRound]:
        """The ``n`` settled rounds numbered below ``before``, newest first, from every
        file (recall's "older" page)."""
        out: list[FoundRound] = []
        for file in reversed(self.files()):
            if len(out) >= n or file.problem is not None or file.first_round is None:
                continue
            if file.first_round >= before:
                continue
            with Journal(file.path) as journal:
                records = journal._records(
                    "WHERE round < ? ORDER BY round DESC LIMIT ?", (before, n - len(out))
                )
            out.extend(FoundRound(record, file) for record in records)
        return sorted(out, key=lambda f: -f.number)[:n]

    def last_rounds(self, n: int = 10) -> list[FoundRound]:
        """The last ``n`` settled rounds, newest first, from the live file and, if it holds
        fewer (it was just rotated), the newest archives."""
        out: list[FoundRound] = []
        for file in reversed(self.files()):
            if len(out) >= n or file.problem is not None or file.last_round is None:
                continue
            with Journal(file.path) as journal:
                records = journal.last_rounds(n - len(out))
            out.extend(FoundRound(record, file) for record in records)
        return out


def _linked(files: list[JournalFile]) -> list[JournalFile]:
    """The files with ``chain_problem`` set where a file's origin does not carry on the
    verified head of the file it names (gaming-day files and set-aside carry the chain)."""
    heads = {f.name: f.chain_head for f in files}
    out = []
    for file in files:
        head = heads.get(file.previous or "")
        if file.chain_from is not None and head is not None and head != file.chain_from:
            file = dataclasses.replace(
                file,
                chain_problem=f"{file.name} does not carry on the hash chain of {file.previous}",
            )
        out.append(file)
    return out


def _around(files: list[JournalFile], utc_ms: int) -> list[JournalFile]:
    """The files whose settlements span ``utc_ms``, and the nearest one before it and after
    it (the rounds nearest a moment are in those)."""
    timed = [f for f in files if f.problem is None and f.first_settled_utc_ms is not None]
    spanning = [f for f in timed if f.settled_between(utc_ms, utc_ms)]
    before = [f for f in timed if (f.last_settled_utc_ms or 0) < utc_ms]
    after = [f for f in timed if (f.first_settled_utc_ms or 0) > utc_ms]
    near = spanning
    if before:
        near = [*near, max(before, key=lambda f: f.last_settled_utc_ms or 0)]
    if after:
        near = [*near, min(after, key=lambda f: f.first_settled_utc_ms or 0)]
    return near


def _distance(record: dict[str, Any], utc_ms: int) -> int:
    """How far from ``utc_ms`` a round was played (0: in play at that moment)."""
    settled = record.get("settled_utc_ms")
    started = record.get("started_utc_ms")
    if settled is None:
        return 1 << 62
    if started is not None and started <= utc_ms <= settled:
        return 0
    return min(abs(settled - utc_ms), abs((started if started is not None else settled) - utc_ms))


def _rows(journal: Journal, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    try:
        return journal.db.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise JournalError(f"cannot read journal {journal.path}: {exc}") from None


def _one(journal: Journal, sql: str) -> tuple[Any, ...]:
    return tuple(_rows(journal, sql)[0])
