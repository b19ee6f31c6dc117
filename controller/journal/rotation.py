"""Gaming-day files: the journal rotates, old files are kept read-only, then removed.

The live journal keeps its path (``data_dir/journal.sqlite``), so the outbox, the link's
sequence numbers and the publisher's connection carry on untouched. Rotating it, between
rounds only:

1. copies it, with SQLite's online backup, to ``<name>.<gaming day>.<first event>.part``,
   marks the copy archived (``meta.archived``), makes it self-contained (rollback journal,
   not WAL), fsyncs it, makes it read-only and renames it into place (atomic);
2. in one transaction of the live file: deletes the events, rounds, checkpoints, clock steps
   and earlier runs that the archive now holds and stores the table's state as the file's
   ``origin``, naming the archive and its SHA-256; the outbox and the link are not touched,
   so every unacknowledged message stays where the publisher reads it.

A kill at any point leaves either the old live file whole (a leftover ``.part`` is removed,
an archive already renamed is written again, whole, by the next rotation), or the rotated
one. An archive is removed after ``keep_days`` gaming days, never while it holds a message
the jackpot controller has not acknowledged.

:func:`set_aside` is the technician's way out when new software cannot recover the journal
(docs/journal.md): with the table controller stopped, the whole file becomes an archive and
a new live file carries on with a fresh table (the next round number after every one used),
the same link and every unacknowledged message.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as time_of_day
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controller import __version__
from controller.errors import JournalError
from controller.journal.file import Journal
from controller.journal.maintenance import record_change
from controller.journal.recovery import JournaledTable
from controller.journal.store import WHAT_TO_DO, dumps, fsync_path, rollback
from controller.rules.profile import HouseRules
from controller.table import checkpoint as checkpoints
from controller.table.settings import TableSettings
from controller.table.significant import printable
from controller.table.state import TableState

ARCHIVE = re.compile(r"\.(\d{4}-\d{2}-\d{2})\.(\d{9,})$")
"""An archive's name: the live file's name, its gaming day and its first event."""


class RotationDeferred(JournalError):
    """A round is in progress: the journal rotates when it is settled."""


@dataclass(frozen=True)
class GamingDay:
    """When a casino's gaming day starts: ``starts`` (local time of day) in ``zone`` (an
    IANA name; None: the system's local zone)."""

    starts: time_of_day = time_of_day(6, 0)
    zone: str | None = None

    def __post_init__(self) -> None:
        if self.zone is not None:
            try:
                ZoneInfo(self.zone)
            except (ZoneInfoNotFoundError, ValueError):
                raise JournalError(
                    f"time zone {self.zone!r} is not known: give an IANA name such as "
                    "'America/New_York', or leave it out for the system's zone"
                ) from None

    def local(self, utc_ms: int) -> datetime:
        """The local date and time of ``utc_ms`` (ms since the epoch)."""
        moment = datetime.fromtimestamp(utc_ms / 1000, UTC)
        return moment.astimezone(ZoneInfo(self.zone) if self.zone else None)

    def of(self, utc_ms: int) -> date:
        """The gaming day ``utc_ms`` belongs to: the local date, less one before ``starts``.

        The instants are compared, not the wall times, so the day never goes back: when the
        clocks fall back, a day starting in the repeated hour starts at its first occurrence;
        when they spring forward over ``starts``, the day starts as much later as they moved.
        """
        moment = self.local(utc_ms)
        start = datetime.combine(moment.date(), self.starts, moment.tzinfo)  # fold 0: first
        if moment.astimezone(UTC) < start.astimezone(UTC):
            return moment.date() - timedelta(days=1)
        return moment.date()


@dataclass(frozen=True)
class Archive:
    """One retained journal file: its ``path``, gaming day and first event (from its name)."""

    path: Path
    gaming_day: date
    first_event: int


@dataclass(frozen=True)
class Rotated:
    """What a rotation did: the ``archive`` written (None: the file held no event since its
    origin, only its gaming day changed), its SHA-256, the events it holds and the archives
    removed by retention."""

    archive: Path | None
    sha256: str | None
    first_event: int
    last_event: int
    gaming_day: str
    removed: tuple[Path, ...] = ()


def archives(live: str | os.PathLike[str]) -> list[Archive]:
    """The retained files of the journal at ``live``, oldest first."""
    live = Path(live)
    found = []
    for path in live.parent.glob(f"{glob_escape(live.name)}.*"):
        match = ARCHIVE.search(path.name[len(live.name) :])
        if match and path.name[: len(live.name)] == live.name:
            day = date.fromisoformat(match.group(1))
            found.append(Archive(path, day, int(match.group(2))))
    return sorted(found, key=lambda a: (a.first_event, a.gaming_day))


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def archive_path(live: Path, gaming_day: str, first_event: int) -> Path:
    return live.with_name(f"{live.name}.{gaming_day}.{first_event:09d}")


PART_SIDECARS = ("-journal", "-wal", "-shm", ".lock")
"""What SQLite and the journal's lock leave beside a half-written ``.part`` file."""


def remove_partials(live: str | os.PathLike[str]) -> list[Path]:
    """Remove what a killed rotation or set-aside left half-written (``*.part`` and what
    SQLite keeps beside it: a stale ``-wal`` would be replayed into the next file of that
    name). Only while holding the journal (no rotation of another process is under way)."""
    live = Path(live)
    removed = []
    for path in live.parent.glob(f"{glob_escape(live.name)}.*.part"):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:  # a folder or a read-only place: the rotation reports it
            raise JournalError(
                f"cannot remove the half-written {path}: {exc.strerror}; remove it by hand "
                "(nothing in it is needed: the journal is whole without it)"
            ) from None
        removed.append(path)
    for sidecar in PART_SIDECARS:
        for path in live.parent.glob(f"{glob_escape(live.name)}.*.part{sidecar}"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return removed


def _unlink_part(part: Path) -> None:
    """Remove one half-written file and its SQLite sidecars."""
    for path in (part, *(part.with_name(part.name + s) for s in PART_SIDECARS)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def file_day(journal: Journal) -> str | None:
    """The gaming day the live file is for (``meta.gaming_day``), None if never set."""
    day = journal.meta().get("gaming_day")
    return str(day) if day else None


def due(journal: Journal, day: GamingDay, utc_ms: int) -> str | None:
    """The gaming day to rotate into, if the file's is over (None: not due). A file with no
    gaming day yet (new, or from older software) is given today's without rotating."""
    today = day.of(utc_ms).isoformat()
    current = file_day(journal)
    if current is None:
        journal.set_meta("gaming_day", today)
        return None
    return today if today > current else None


def rotate(
    table: JournaledTable,
    new_day: str,
    *,
    reason: str = "gaming day",
    keep_days: int | None = None,
    utc_ms: int | None = None,
    hook: Callable[[str], None] | None = None,
) -> Rotated:
    """Rotate the live journal of ``table`` into an archive and start its gaming day
    ``new_day`` (ISO date) from the table's state (see the module docstring). Raises
    :class:`RotationDeferred` while a round is in progress, :class:`JournalError` if a file
    cannot be written (the live journal is then as it was). ``hook(step)`` is called
    between the steps (tests kill the process there)."""
    step = hook or (lambda _: None)
    journal = table.journal
    live = journal.path
    if table.round_in_progress:
        raise RotationDeferred(
            f"journal {live}: round {table.state.round_number} is in progress; the journal "
            "rotates when it is settled"
        )
    now = int(time.time() * 1000) if utc_ms is None else utc_ms
    last = journal.events_written
    first = journal.first_event()
    old_day = file_day(journal) or new_day
    if last < first:  # nothing since the origin: only the day changes
        journal.set_meta("gaming_day", new_day)
        return Rotated(None, None, first, last, new_day, _retain(live, journal, keep_days, now))
    target = archive_path(live, old_day, first)
    part = target.with_name(target.name + ".part")
    _unlink_part(part)
    step("backup")
    _copy(
        journal,
        part,
        {
            "gaming_day": old_day,
            "first_event": first,
            "last_event": last,
            "archived_utc_ms": now,
            "reason": reason,
            "software": __version__,
        },
    )
    step("archive")
    digest = _publish(journal, part, target)
    step("prune")
    state = checkpoints.encode(table.state)
    db = journal.db
    try:
        db.execute("BEGIN IMMEDIATE")
        (written,) = db.execute("SELECT written FROM link WHERE id = 1").fetchone()
        for sql in (
            "DELETE FROM checkpoints",
            "DELETE FROM clock_steps",
            "DELETE FROM rounds",
            "DELETE FROM events",
            "DELETE FROM runs WHERE boot < (SELECT max(boot) FROM runs)",
        ):
            db.execute(sql)
        _start_from(
            db, last, written, state, reason, target.name, digest, now, new_day,
            journal.chain_head,
        )  # fmt: skip
        step("commit")
        db.execute("COMMIT")
    except sqlite3.Error as exc:
        rollback(db)
        raise JournalError(
            f"journal {live}: rotating it failed: {exc}; the live journal is as it was and "
            f"{target.name} is a copy of it (written again at the next rotation); {WHAT_TO_DO}"
        ) from None
    except BaseException:
        rollback(db)  # never leave the table's connection inside the rotation's transaction
        raise
    table.rotated()
    _shrink(db)
    step("retain")
    removed = _retain(live, journal, keep_days, now)
    return Rotated(target, digest, first, last, new_day, removed)


SHRINK_ABOVE_BYTES = 256 * 1024 * 1024
"""After a rotation, free pages above this are given back to the disk (``VACUUM``). Below
it they are kept: the next gaming day's events reuse them, and the file stays at about one
day's size without rewriting it. Above it (the first rotation of a journal written for
months before gaming-day files) the live file would otherwise keep its old size for good."""


def _shrink(db: sqlite3.Connection) -> None:
    """``VACUUM`` the live file if the rotation freed more than :data:`SHRINK_ABOVE_BYTES`
    (it rewrites only what is left: one origin and the outbox). A reader in the way (the
    publisher mid-transaction) or a full disk only leaves the file as big as it was."""
    try:
        (free,) = db.execute("PRAGMA freelist_count").fetchone()
        (page,) = db.execute("PRAGMA page_size").fetchone()
        if free * page > SHRINK_ABOVE_BYTES:
            db.execute("VACUUM")
    except sqlite3.Error:
        rollback(db)


def _start_from(
    db: sqlite3.Connection,
    seq: int,
    written: int,
    state: dict[str, Any],
    reason: str,
    previous: str,
    digest: str,
    utc_ms: int,
    gaming_day: str,
    head: str,
) -> None:
    """Inside the caller's transaction: the file starts after event ``seq`` (``written``
    outbox messages by then) from ``state``, carrying on from ``previous`` (its SHA-256)
    and its hash chain's ``head``, for ``gaming_day``."""
    db.execute(
        "INSERT OR REPLACE INTO origin (id, seq, outbox_written, software, state, reason,"
        " previous, previous_sha256, utc_ms, chain) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (seq, written, __version__, dumps(state), reason, previous, digest, utc_ms, head),
    )
    db.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('gaming_day', ?)", (dumps(gaming_day),)
    )


def _copy(journal: Journal, part: Path, archived: dict[str, Any]) -> None:
    """A consistent copy of the journal at ``part``, marked ``archived``, fsynced."""
    try:
        dst = sqlite3.connect(part, isolation_level=None)
        try:
            journal.db.backup(dst)
            dst.execute("PRAGMA journal_mode = DELETE")
            dst.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('archived', ?)",
                (dumps(archived),),
            )
        finally:
            dst.close()
        fd = os.open(part, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except (sqlite3.Error, OSError) as exc:
        _unlink_part(part)
        raise JournalError(
            f"journal {journal.path}: cannot write the archive {part.name}: {exc}; the live "
            f"journal is unchanged and rotates later; {WHAT_TO_DO}"
        ) from None


def _publish(journal: Journal, part: Path, target: Path) -> str:
    """Make the written ``part`` read-only and rename it to ``target`` (atomic, the
    directory fsynced); return its SHA-256."""
    try:
        os.chmod(part, 0o444)
        os.replace(part, target)
        fsync_path(target.parent)
        return sha256(target)
    except OSError as exc:
        _unlink_part(part)
        raise JournalError(
            f"journal {journal.path}: cannot put the archive {target.name} in place: {exc}; "
            f"the live journal is unchanged; {WHAT_TO_DO}"
        ) from None


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _retain(live: Path, journal: Journal, keep_days: int | None, utc_ms: int) -> tuple[Path, ...]:
    """Remove the archives older than ``keep_days`` days before ``utc_ms`` that hold no
    message the jackpot controller has not acknowledged (None: keep them all)."""
    if keep_days is None:
        return ()
    _, acked, _ = journal.outbox_rows()
    oldest = datetime.fromtimestamp(utc_ms / 1000, UTC).date() - timedelta(days=keep_days)
    removed = []
    for archive in archives(live):
        if archive.gaming_day >= oldest:
            continue
        try:
            with Journal(archive.path) as old:
                written = old.outbox_rows()[0]
        except JournalError:
            continue  # unreadable: keep it for a technician
        if written > acked:
            continue  # holds a message not yet acknowledged: kept
        with contextlib.suppress(FileNotFoundError):
            archive.path.unlink()
            removed.append(archive.path)
    return tuple(removed)


def set_aside(
    path: str | os.PathLike[str],
    rules: HouseRules,
    settings: TableSettings,
    *,
    gaming_day: GamingDay | None = None,
    utc_ms: int | None = None,
    hook: Callable[[str], None] | None = None,
    by: str = "",
) -> Rotated:
    """The way out when a journal cannot be recovered (the software changed how a round in
    progress settles, or cannot read a checkpoint): with the table controller stopped, keep
    the whole journal as a read-only archive and start a new live file from a fresh table
    whose next round number follows every one used, with the same link (boot, sequence
    numbers) and every message the jackpot controller has not acknowledged. A round in
    progress is not carried on: the supervisor settles its wagers by hand (recall shows its
    events in the archive). The new file's first event records the change (``by``: the
    account that ran it; :mod:`controller.journal.maintenance`), with its message for the
    center in the outbox."""
    step = hook or (lambda _: None)
    live = Path(path)
    now = int(time.time() * 1000) if utc_ms is None else utc_ms
    with Journal(live, game=rules.name, settings=settings) as journal:  # holds the lock
        remove_partials(live)  # only now: a running controller's rotation is not touched
        last = journal.events_written
        first = journal.first_event()
        meta = journal.meta()
        day = str(meta.get("gaming_day") or (gaming_day or GamingDay()).of(now).isoformat())
        db = journal.db
        # a set-aside or restore record is no round's event: it uses no round number
        (used,) = db.execute(
            "SELECT max(round) FROM events WHERE json_extract(event, '$.type') != 'journal_change'"
        ).fetchone()
        origin = journal.origin()
        state_round = checkpoints.decode(origin.state).round_number if origin else 1
        next_round = max(int(used) + 1 if used is not None else 1, state_round)
        (t_last,) = db.execute(
            "SELECT json_extract(event, '$.t') FROM events ORDER BY seq DESC LIMIT 1"
        ).fetchone() or (None,)
        boot, written, acked = db.execute(
            "SELECT boot, written, acked FROM link WHERE id = 1"
        ).fetchone()
        pending = db.execute(
            "SELECT seq, event, kind, key, payload FROM outbox ORDER BY seq"
        ).fetchall()
        target = archive_path(live, day, first)
        part_archive = target.with_name(target.name + ".part")
        step("backup")
        _copy(
            journal,
            part_archive,
            {
                "gaming_day": day,
                "first_event": first,
                "last_event": last,
                "archived_utc_ms": now,
                "reason": "set aside",
                "software": __version__,
            },
        )
        digest = _publish(journal, part_archive, target)
        step("new file")
        # event_seq: no significant event's key may be used again, and fewer than `written`
        # messages of any kind were sent (the old state may be unreadable: that is why)
        fresh = TableState(round_number=next_round, now=t_last, event_seq=written)
        new_part = live.with_name(live.name + ".new.part")
        with Journal(new_part, game=rules.name, settings=settings) as new:
            new_db = new.db
            try:
                new_db.execute("BEGIN IMMEDIATE")
                new_db.execute(
                    "UPDATE link SET boot = ?, written = ?, acked = ?, since_event = 0"
                    " WHERE id = 1",
                    (boot, written, acked),
                )
                new_db.executemany(
                    "INSERT INTO outbox (seq, event, kind, key, payload) VALUES (?, ?, ?, ?, ?)",
                    pending,
                )
                new_db.execute("DELETE FROM runs")
                _start_from(
                    new_db, last, written, checkpoints.encode(fresh), "set aside",
                    target.name, digest, now, day, journal.chain_head,
                )  # fmt: skip
                new_db.execute("COMMIT")
            except sqlite3.Error as exc:
                rollback(new_db)
                raise JournalError(
                    f"cannot write the new journal {new_part}: {exc}; the journal {live} is "
                    f"as it was: {WHAT_TO_DO}, then set it aside again"
                ) from None
            except BaseException:
                rollback(new_db)
                raise
        step("record")
        record_change(
            new_part, rules, settings, "set_aside", by=by, utc_ms=now,
            detail=printable(f"archive {target.name} sha256 {digest[:16]}, events {first}-{last}"),
        )  # fmt: skip
        step("swap")
        fsync_path(new_part)
        # the old file gives up WAL mode, so that nothing of it is left beside the new one
        mode = db.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
        if str(mode).lower() != "delete":
            raise JournalError(
                f"journal {live} is still open elsewhere (recall, the diagnostics page, a "
                "backup): stop them and set it aside again; nothing was changed"
            )
        os.replace(new_part, live)  # the old live file is the archive now
        fsync_path(live.parent)
    with contextlib.suppress(FileNotFoundError):
        new_part.with_name(new_part.name + ".lock").unlink()
    return Rotated(target, digest, first, last, day)


def archived_info(journal: Journal) -> dict[str, Any] | None:
    """An archive's ``meta.archived`` (gaming day, events, when, why), None for a live file."""
    value = journal.meta().get("archived")
    return value if isinstance(value, dict) else None
