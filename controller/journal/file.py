"""The table's journal: every event on disk before its effects are carried out.

One SQLite file per table (``docs/journal.md``); its tables, their versions and the migration
of older files are :mod:`controller.journal.schema`, reading it (events in order, recall's
round records, event scripts) :mod:`controller.journal.reads`. Here: opening it (one writer,
``<path>.lock``), its meta, origin and checkpoints, and :meth:`Journal.append`, which writes
one event with everything it made in one transaction: the hot path of every dealer prompt.

:class:`~controller.journal.recovery.JournaledTable` puts a table behind the journal: it
commits each event (and any round record it produced) in one transaction before it returns
the effects, and opening an existing journal rebuilds the table from its newest checkpoint
(crash recovery).

One thread owns a :class:`JournaledTable`; other processes may read the same
file (recall, export) while it runs.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import build
from controller.errors import JournalError
from controller.journal import chain, outbox
from controller.journal.reads import JournalReads
from controller.journal.schema import JournalSchema
from controller.journal.store import WHAT_TO_DO, connect, dumps, fsync_path, rollback
from controller.table.effects import Publish
from controller.table.settings import TableSettings

CHECKPOINTS_KEPT = 2
"""Checkpoints kept in a journal: recovery needs the newest one before the last event."""


@dataclass(frozen=True)
class Checkpoint:
    """A stored checkpoint: the state after event ``seq``, when the outbox had ``written``
    messages; ``state`` as :func:`controller.table.checkpoint.encode` made it."""

    seq: int
    written: int
    software: str
    state: dict[str, Any]


WAL_CHECKPOINT_EVENTS = 60
"""Events journaled (about 200 WAL pages, five rounds) before the loop copies the WAL into
the file between rounds (:meth:`Journal.checkpoint_wal`)."""

WAL_AUTOCHECKPOINT_PAGES = 4000
"""The writer's own ``wal_autocheckpoint`` (SQLite's default is 1000 pages, about 300
events): a safety net for a round that never ends; between rounds the loop checkpoints
first, so no event's commit (and no dealer prompt) carries one."""

INSERT_EVENT = (
    "INSERT INTO events (seq, round, event, accepted, utc_ms, chain) VALUES (?, ?, ?, ?, ?, ?)"
)
INSERT_ROUND = (  # the round started with its first event at or after its started_t
    "INSERT INTO rounds (round, seq, record, utc_ms, chain, started_utc_ms)"
    " VALUES (?, ?, ?, ?, ?, (SELECT utc_ms FROM events WHERE round = ?"
    " AND coalesce(json_extract(event, '$.t') >= ?, 1) ORDER BY seq LIMIT 1))"
)
INSERT_CLOCK_STEP = (
    "INSERT INTO clock_steps (seq, step_ms, utc_before, utc_after) VALUES (?, ?, ?, ?)"
)
INSERT_CHECKPOINT = (
    "INSERT INTO checkpoints (seq, version, software, outbox_written, state) VALUES (?, ?, ?, ?, ?)"
)
PRUNE_CHECKPOINTS = (
    "DELETE FROM checkpoints WHERE seq NOT IN "
    f"(SELECT seq FROM checkpoints ORDER BY seq DESC LIMIT {CHECKPOINTS_KEPT})"
)
"""The statements of :meth:`Journal.append`, one text each: the connection's statement
cache is keyed by the text, and :meth:`Journal.warm` compiles these very ones."""

WAL_RESERVE_BYTES = 4 << 20
"""How much of the WAL file :meth:`Journal.reserve_wal` has written before the daemon's first
event: more than one checkpoint cycle writes (:data:`WAL_CHECKPOINT_EVENTS` events and the
round they end in: 1.0 MB in ``bench/table_latency.py``'s 2-spot rounds, 2 pages an event and 9
a settling one)."""

WAL_RESERVE_KEY = "wal-reserve"
"""The ``meta`` key of :meth:`Journal.reserve_wal`'s made-up row (never committed)."""

WARM_TIMES = 3
"""How many times :meth:`Journal.warm` writes (and rolls back) its made-up settling event."""

WARM_ROUND = -1
"""The round number of :meth:`Journal.warm`'s made-up event and record (no real round has it;
nothing of it is committed)."""

CLOCK_STEP_MS = 2000
"""A change of at least this much between the wall clock and the table's monotonic clock
from one event to the next (in one run) is recorded as a clock step."""


@dataclass(frozen=True)
class Origin:
    """Where a journal file starts: the state after event ``seq`` (the last of the previous
    file, or of the table's history before a set-aside), with ``written`` outbox messages
    written by then; ``reason`` (``gaming day``, ``on demand``, ``set aside``); ``previous``
    the file it carries on from (its name in the journal's directory) and its SHA-256."""

    seq: int
    written: int
    software: str
    state: dict[str, Any]
    reason: str
    previous: str | None
    previous_sha256: str | None
    utc_ms: int
    chain: str | None = None  # the previous file's head (schema 6; None: before the chain)


class Journal(JournalSchema, JournalReads):
    """One journal file.

    ``Journal(path, game=..., settings=...)`` opens it for the table that writes it:
    a missing or empty file becomes a new journal, an existing one must have been
    written for the same game and settings, and no other process may write it at the
    same time (``<path>.lock``). ``Journal(path)`` opens an existing journal to read
    (recall, export), also while a table writes it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        game: str | None = None,
        settings: TableSettings | None = None,
        busy_timeout_ms: int = 5000,
    ):
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self.writer = game is not None
        self.version = 0  # of the file's schema, once opened
        # the last append's stages (monotonic ns; trace): rows encoded, BEGIN returned, COMMIT
        self.encoded_ns = self.begun_ns = self.commit_ns = 0
        try:
            if self.writer:
                self._lock()
            elif not self.path.is_file():
                raise JournalError(f"no journal at {self.path}: check the path")
            self._db = connect(self.path, create=self.writer, busy_timeout_ms=busy_timeout_ms)
            self._prepare(game, settings or TableSettings())
            if self.writer:
                self._add_checkpoints()
            self.events_written = self._count()
            self.chain_head = chain.stored_head(self.db) if self.writer else chain.GENESIS
            self._verified: chain.Verified | None = None
            self.boot = self._next_boot() if self.writer else None
            self.wal_events = 0  # events journaled since the last checkpoint_wal()
            self.wal_checkpoints = 0
            if self.writer:
                self.db.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            if self.writer:
                self._record_run()
        except BaseException:
            self.close()
            raise

    # -- opening ---------------------------------------------------------------

    def _lock(self) -> None:
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise JournalError(
                f"cannot create the lock file {lock_path}: {exc.strerror}; check that the "
                "journal's directory exists and is writable"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise JournalError(
                f"journal {self.path} is in use by another table controller (pid {holder}): "
                "stop it first; two controllers must never write one journal"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise JournalError(f"journal {self.path} is closed")
        return self._db

    def latest_checkpoint(self, before: int) -> Checkpoint | None:
        """The newest stored checkpoint of an event before ``before`` (None: none)."""
        try:
            if not self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='checkpoints'"
            ).fetchone():
                return None
            row = self.db.execute(
                "SELECT seq, outbox_written, software, state FROM checkpoints WHERE seq < ?"
                " ORDER BY seq DESC LIMIT 1",
                (before,),
            ).fetchone()
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read journal {self.path}: {exc}") from None
        if row is None:
            return None
        try:
            state = json.loads(row[3])
        except ValueError:
            return None  # a damaged checkpoint: the events are the record; replay them all
        return Checkpoint(int(row[0]), int(row[1]), str(row[2]), state)

    def origin(self) -> Origin | None:
        """Where this file starts, if it carries on from an older one (None: from event 1)."""
        if self.version < 4:
            return None
        link = "chain" if self.version >= 6 else "NULL"
        rows = self._read(
            "SELECT seq, outbox_written, software, state, reason, previous, previous_sha256,"
            f" utc_ms, {link} FROM origin WHERE id = 1"
        )
        if not rows:
            return None
        seq, written, software, state, reason, previous, digest, utc_ms, head = rows[0]
        try:
            data = json.loads(state)
        except ValueError:
            raise JournalError(
                f"journal {self.path}: its origin (the state it starts from) is not JSON; the "
                "file is damaged: keep it for the investigation and call a technician"
            ) from None
        return Origin(
            int(seq),
            int(written),
            str(software),
            data,
            str(reason),
            previous,
            digest,
            int(utc_ms),
            head,
        )

    def checkpoint_wal(self) -> tuple[int, int]:
        """Copy the WAL's committed pages into the file (``PRAGMA wal_checkpoint(PASSIVE)``:
        it waits for no reader and no writer; the commits were on disk already, in the WAL,
        so durability is the same whenever it runs). The loop calls it between rounds once
        :data:`WAL_CHECKPOINT_EVENTS` events are journaled, so that SQLite's own checkpoint
        (at 1000 pages, in whichever commit crosses them) does not land on a dealer's prompt.
        Returns (pages in the WAL, pages copied); raises :class:`JournalError`."""
        try:
            _busy, log, copied = self.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            raise JournalError(f"journal {self.path}: WAL checkpoint failed: {exc}") from None
        self.wal_events = 0
        self.wal_checkpoints += 1
        return int(log), int(copied)

    def set_meta(self, key: str, value: Any) -> None:
        """Store one ``meta`` value (committed)."""
        try:
            self.db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, dumps(value))
            )
        except sqlite3.Error as exc:
            raise JournalError(f"journal {self.path}: cannot write {key}: {exc}") from None

    def _next_boot(self) -> int:
        try:
            return outbox.next_boot(self.db)
        except sqlite3.Error as exc:
            raise JournalError(
                f"journal {self.path}: cannot record the boot counter: {exc}; {WHAT_TO_DO}"
            ) from None

    def outbox_since(self) -> int | None:
        """Events up to this ``seq`` predate the outbox (a migrated journal), else 0;
        None for a version 1 journal opened to read."""
        try:
            row = self.db.execute("SELECT since_event FROM link WHERE id = 1").fetchone()
        except sqlite3.OperationalError:
            return None
        return int(row[0])

    def outbox_rows(self) -> tuple[int, int, list[outbox.OutboxRow]]:
        """``(written, acked, pending rows)`` of the outbox, read in one snapshot."""
        db = self.db
        try:
            db.execute("BEGIN")
            try:
                written, acked = db.execute(
                    "SELECT written, acked FROM link WHERE id = 1"
                ).fetchone()
                rows = db.execute(
                    "SELECT seq, event, kind, key, payload FROM outbox ORDER BY seq"
                ).fetchall()
            finally:
                db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read the outbox of {self.path}: {exc}") from None
        return int(written), int(acked), [outbox.row(r) for r in rows]

    def meta(self) -> dict[str, Any]:
        """The ``meta`` rows: ``format``, ``game``, ``table`` (settings dict), ``software``."""
        rows = self._read("SELECT key, value FROM meta")
        return {key: json.loads(value) for key, value in rows}

    @property
    def game(self) -> str:
        return str(self.meta()["game"])

    @property
    def settings(self) -> TableSettings:
        return TableSettings.from_dict(self.meta()["table"])

    def _count(self) -> int:
        """The last event's ``seq``: the last stored, or the origin's if none is after it."""
        last = int(self._read("SELECT coalesce(max(seq), 0) FROM events")[0][0])
        if last == 0 and self.version >= 4:
            rows = self._read("SELECT seq FROM origin WHERE id = 1")
            return int(rows[0][0]) if rows else 0
        return last

    def first_event(self) -> int:
        """The ``seq`` of the first event this file holds or will hold."""
        origin = self.origin()
        return origin.seq + 1 if origin is not None else 1

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read journal {self.path}: {exc}") from None

    # -- writing -----------------------------------------------------------------

    def append(
        self,
        event: dict[str, Any],
        round_number: int,
        accepted: bool,
        records: Sequence[dict[str, Any]] = (),
        publishes: Sequence[Publish] = (),
        checkpoint: dict[str, Any] | None = None,
        *,
        utc_ms: int | None = None,
        clock_step: tuple[int, int] | None = None,
    ) -> int:
        """Store one event, the round records and the outbox messages (``publishes``)
        it produced, and the ``checkpoint`` of the state after it if given, in one
        transaction, and return its ``seq``; raises :class:`JournalError` with nothing
        stored. ``utc_ms``: the wall-clock time it was journaled (ms since the epoch, UTC);
        ``clock_step``: ``(step_ms, utc_before)`` if the wall clock stepped since the event
        before it (:data:`CLOCK_STEP_MS`). The rows carry the hash chain (:mod:`.chain`)
        and each ``round_result`` the link of its round's record (``chain``)."""
        seq = self.events_written + 1
        db = self.db
        try:
            head = self._write(
                seq, event, round_number, accepted, records, publishes, checkpoint, utc_ms,
                clock_step,
            )  # fmt: skip
            self.commit_ns = time.monotonic_ns()
            db.execute("COMMIT")
        except (sqlite3.Error, OSError, TypeError, ValueError, KeyError) as exc:
            rollback(db)
            raise JournalError(
                f"journal {self.path}: writing event {seq} ({event.get('type')}) failed: {exc}"
            ) from exc
        self.events_written = seq
        self.wal_events += 1
        self.chain_head = head
        return seq

    def _write(
        self,
        seq: int,
        event: dict[str, Any],
        round_number: int,
        accepted: bool,
        records: Sequence[dict[str, Any]],
        publishes: Sequence[Publish],
        checkpoint: dict[str, Any] | None,
        utc_ms: int | None,
        clock_step: tuple[int, int] | None,
    ) -> str:
        """:meth:`append` up to its COMMIT: encode the rows, begin the transaction and
        write them; return the chain's head after them. The caller commits or rolls back."""
        db = self.db
        texts = sorted((record["round"], dumps(record), record) for record in records)
        event_text = dumps(event)
        link, round_links = chain.links(
            self.chain_head, seq, round_number, event_text, accepted, utc_ms,
            [(number, text) for number, text, _ in texts],
        )  # fmt: skip
        rows = [
            (number, seq, text, utc_ms, round_link, number, record.get("started_t"))
            for (number, text, record), round_link in zip(texts, round_links, strict=True)
        ]
        chains = {row[0]: row[4] for row in rows}
        publishes = [chain.stamp(publish, chains) for publish in publishes]
        self.encoded_ns = time.monotonic_ns()
        db.execute("BEGIN IMMEDIATE")
        self.begun_ns = time.monotonic_ns()
        db.execute(INSERT_EVENT, (seq, round_number, event_text, int(accepted), utc_ms, link))
        if rows:  # the round started with its first event at or after its started_t
            db.executemany(INSERT_ROUND, rows)
        if clock_step is not None and utc_ms is not None:
            db.execute(INSERT_CLOCK_STEP, (seq, clock_step[0], clock_step[1], utc_ms))
        # an event with no message and no checkpoint reads nothing of the outbox (most
        # events: one statement less before the prompt's COMMIT)
        if publishes or checkpoint is not None:
            written = outbox.insert_rows(db, seq, publishes)
        if checkpoint is not None:
            db.execute(
                INSERT_CHECKPOINT,
                (seq, checkpoint["version"], build.software(), written, dumps(checkpoint)),
            )
            db.execute(PRUNE_CHECKPOINTS)
        return round_links[-1] if round_links else link

    def warm(self, times: int = WARM_TIMES) -> None:
        """Write a made-up settling event (a round record, a ``round_result`` message, a
        clock step and a checkpoint) ``times`` times, each in a transaction rolled back:
        nothing reaches the file (a rollback in WAL mode writes nothing), but the statements
        of :meth:`append` are compiled into the connection's cache, the pages they touch
        read, SQLite's JSON path and Python's encoder, chain and code paths run, before the
        first real round's settling card, whose prompt waits for its commit (issue 32). The
        daemon's loop calls it on its own thread before it takes its first event; a failure
        is ignored (the first settlement is only slower)."""
        if self.db.in_transaction:
            return
        seq = self.events_written + 1
        stages = self.encoded_ns, self.begun_ns, self.commit_ns
        record = {"round": WARM_ROUND, "started_t": 0, "events": [{"type": "warm", "t": 0}],
                  "effects": [{"effect": "prompt", "code": "warm", "text": "w\u00e9"}],
                  "result": {"round": WARM_ROUND, "settlements": [{"stake": 0}]}}  # fmt: skip
        message = Publish("round_result", f"warm-{seq}/result", record["result"])
        for _ in range(times):
            try:
                self._write(
                    seq, {"type": "warm", "t": 0}, WARM_ROUND, True, [record], [message],
                    {"version": 0, "state": {}}, 0, (0, 0),
                )  # fmt: skip
            except (sqlite3.Error, OSError, TypeError, ValueError, KeyError):
                pass
            finally:
                rollback(self.db)
        self.encoded_ns, self.begun_ns, self.commit_ns = stages

    def reserve_wal(self, size: int = WAL_RESERVE_BYTES) -> int:
        """Have the WAL file hold at least ``size`` bytes of written blocks, on disk, before
        the first event; return its size (0 if unknown). A commit that appends to the WAL
        grows the file, and its fsync then writes the file's new size too (a journal commit of
        the file system): on this machine's ext4, 349 us a small commit that grows the WAL
        against 186 us one that overwrites it (median, one process, 150 events each). Once the
        loop's checkpoint has copied the WAL into the file, SQLite starts it again from its
        beginning and overwrites; only the first cycle after the file is opened grew it, the
        first five rounds of a shift.

        How, through SQLite alone: a made-up row larger than the page cache (8 pages for it)
        is inserted and rolled back. SQLite spills a transaction's pages that do not fit its
        cache into the WAL, as for any large transaction; with no commit frame after them they
        are never read (nor by a recovery), the next commit writes over them, and nothing is
        committed (``PRAGMA data_version`` and every row as they were). Then the WAL file is
        fsynced. A failure is ignored: the first rounds are only slower."""
        wal = Path(f"{self.path}-wal")
        db = self.db
        try:
            if (wal.stat().st_size if wal.exists() else 0) >= size or db.in_transaction:
                return wal.stat().st_size if wal.exists() else 0
            (pages,) = db.execute("PRAGMA cache_size").fetchone()
            try:
                db.execute("BEGIN IMMEDIATE")
                db.execute("PRAGMA cache_size = 8")
                db.execute(
                    "INSERT INTO meta (key, value) VALUES (?, zeroblob(?))",
                    (WAL_RESERVE_KEY, size + 65536),  # the pages the cache keeps, and more
                )
            finally:
                rollback(db)
                db.execute(f"PRAGMA cache_size = {int(pages)}")
            fsync_path(wal)
            return wal.stat().st_size
        except (sqlite3.Error, OSError):
            return 0

    # -- closing -----------------------------------------------------------------

    def close(self) -> None:
        """Close the file and release the writer's lock; safe to call twice."""
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
