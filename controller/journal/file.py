"""The table's journal: every event on disk before its effects are carried out.

One SQLite file per table (``docs/journal.md``): WAL, ``synchronous = FULL``
and foreign keys on every connection, the schema version in ``PRAGMA
user_version`` (4: ``docs/journal.md`` lists what each version added). Tables:

- ``meta``: the game (profile name) and table settings the journal was written
  for; a journal refuses to be reopened with others;
- ``events``: every event the table journaled (``Step.journal``), refused ones
  included, numbered ``seq`` 1, 2, 3 ... with the round it belongs to and the wall-clock
  UTC time it was journaled (``utc_ms``, beside the table's monotonic ``t`` in the event);
- ``rounds``: each settled or voided round's recall record (``Record("round")``) as it was
  shown, pointing at the event that settled it, with the UTC times it started and settled;
- ``clock_steps``: each time the wall clock stepped (an NTP correction) against the table's
  monotonic clock between two events of one run; the order of events never changes;
- ``origin`` (a file that starts where an older one ended: a gaming-day rotation or a
  technician's set-aside, :mod:`controller.journal.rotation`): the table's state after the
  last event of the previous file, which file that was and its SHA-256;
- ``outbox`` and ``link`` (schema version 2, :mod:`controller.journal.outbox`): the
  messages for the jackpot controller that each event made, written in the same
  transaction as the event, until the jackpot controller acknowledges them; and
  the boot counter, incremented each time a writer opens the journal;
- ``checkpoints`` (added by a writer that keeps them; older software ignores it): the
  table's whole state after an event (:mod:`controller.table.checkpoint`), written in that
  event's transaction with the first event after each round's end and every
  ``checkpoint_every`` events; the last
  :data:`CHECKPOINTS_KEPT` are kept. Recovery starts from the newest one before the last
  event and replays only the events after it, so its time does not grow with history.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import build
from controller.errors import EventError, JournalError
from controller.journal import chain, outbox
from controller.journal.store import FORMAT, SCHEMA_VERSION, WHAT_TO_DO, connect, dumps, rollback
from controller.table.effects import Publish
from controller.table.events import Event, parse_event
from controller.table.script import SCRIPT_VERSION, round_script
from controller.table.settings import TableSettings

CHECKPOINTS_KEPT = 2
"""Checkpoints kept in a journal: recovery needs the newest one before the last event."""

_RUNS = (
    "CREATE TABLE IF NOT EXISTS runs ("
    " boot INTEGER PRIMARY KEY,"
    " software TEXT NOT NULL,"
    " started_ms INTEGER NOT NULL,"
    " first_event INTEGER NOT NULL)"
)
"""Each run of a writer: its boot, the software version, when it started (UTC ms since the
epoch) and the first event it could write. Added like ``checkpoints``: no version change."""

_RUN_CLOCK = (
    ("clock_source", "TEXT"),
    ("clock_synchronised", "INTEGER"),
    ("clock_offset_ms", "REAL"),
)
"""The columns a run's clock check adds to ``runs`` (issue 28 item 6)."""

_CHECKPOINTS = (
    "CREATE TABLE IF NOT EXISTS checkpoints ("
    " seq INTEGER PRIMARY KEY REFERENCES events (seq),"
    " version INTEGER NOT NULL,"
    " software TEXT NOT NULL,"
    " outbox_written INTEGER NOT NULL,"
    " state TEXT NOT NULL)"
)


@dataclass(frozen=True)
class Checkpoint:
    """A stored checkpoint: the state after event ``seq``, when the outbox had ``written``
    messages; ``state`` as :func:`controller.table.checkpoint.encode` made it."""

    seq: int
    written: int
    software: str
    state: dict[str, Any]


_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE events ("
    " seq INTEGER PRIMARY KEY,"
    " round INTEGER NOT NULL,"
    " event TEXT NOT NULL,"
    " accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),"
    " utc_ms INTEGER)",
    "CREATE TABLE rounds ("
    " round INTEGER PRIMARY KEY,"
    " seq INTEGER NOT NULL REFERENCES events (seq),"
    " record TEXT NOT NULL,"
    " started_utc_ms INTEGER,"
    " utc_ms INTEGER)",
)

_V4 = (
    "CREATE INDEX IF NOT EXISTS events_by_round ON events (round)",
    "CREATE INDEX IF NOT EXISTS rounds_by_time ON rounds (utc_ms)",
    "CREATE TABLE IF NOT EXISTS clock_steps ("
    " seq INTEGER PRIMARY KEY,"
    " step_ms INTEGER NOT NULL,"
    " utc_before INTEGER NOT NULL,"
    " utc_after INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS origin ("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " seq INTEGER NOT NULL CHECK (seq >= 0),"
    " outbox_written INTEGER NOT NULL,"
    " software TEXT NOT NULL,"
    " state TEXT NOT NULL,"
    " reason TEXT NOT NULL,"
    " previous TEXT,"
    " previous_sha256 TEXT,"
    " utc_ms INTEGER NOT NULL)",
)
"""What schema version 4 adds beside the columns: the indexes recall uses, the clock steps
and the origin of a file that carries on from an older one."""

RECALL_KEYS = ("started_utc_ms", "settled_utc_ms", "clock_steps", "chain")
"""The keys the journal adds to a stored round record when recall reads it."""

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


class Journal:
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
        self.encoded_ns = self.commit_ns = 0  # the last append's stages (monotonic ns; trace)
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

    def _prepare(self, game: str | None, settings: TableSettings) -> None:
        db = self.db
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        except sqlite3.Error as exc:
            raise JournalError(
                f"{self.path} is not a readable journal ({exc}): check the path"
            ) from None
        if version == 0 and not tables:
            if game is None:
                raise JournalError(f"{self.path} is an empty file, not a journal")
            self._create(game, settings)
            return
        if version > SCHEMA_VERSION:
            raise JournalError(
                f"journal {self.path} has schema version {version}, written by a newer table "
                f"controller; this one ({build.version()}) reads version {SCHEMA_VERSION}: "
                "update the software"
            )
        needed = {"meta", "events", "rounds"} | (outbox.TABLES if version >= 2 else set())
        meta = self.meta() if needed <= tables else {}
        if version not in (1, 2, 3, 4, 5, SCHEMA_VERSION) or meta.get("format") != FORMAT:
            raise JournalError(f"{self.path} is not a table-controller journal: check the path")
        self.version = version
        if game is None:
            return
        theirs = meta.get("table", {})
        ours = settings.to_dict()
        if meta.get("game") != game or theirs != ours:
            diff = ", ".join(
                f"{key} {theirs.get(key)!r} (journal) vs {ours.get(key)!r} (table)"
                for key in sorted(set(theirs) | set(ours))
                if theirs.get(key) != ours.get(key)
            )
            raise JournalError(
                f"journal {self.path} was written for game '{meta.get('game')}' with table "
                f"settings {dumps(theirs)}; this table runs game '{game}' with "
                f"{dumps(ours)}{f' ({diff})' if diff else ''}: start a new journal file "
                "for this game and settings (keep the old one for recall), or configure the "
                "table as the journal says"
            )
        if version < SCHEMA_VERSION:
            self._migrate(version)

    def _create(self, game: str, settings: TableSettings) -> None:
        db = self.db
        meta = {
            "format": FORMAT,
            "game": game,
            "table": settings.to_dict(),
            "software": build.software(),  # the build id (controller/build.py)
        }
        try:
            db.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA + _V4 + chain.V6:
                db.execute(statement)
            outbox.create(db)
            db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [(key, dumps(value)) for key, value in meta.items()],
            )
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            rollback(db)
            raise JournalError(f"cannot create journal {self.path}: {exc}; {WHAT_TO_DO}") from None
        self.version = SCHEMA_VERSION

    def _migrate(self, version: int) -> None:
        """Bring a version 1, 2, 3 or 4 journal to :data:`SCHEMA_VERSION` in one transaction
        (nothing changes if it fails):

        - 1 to 2: add the outbox, empty; the events already journaled predate the jackpot
          link, their publish requests are not put in it (``since_event``);
        - 2 to 3: the outbox takes ``award_confirm`` messages;
        - 3 to 4: an outbox row no longer needs its event in the same file (a file that
          carries on from an older one holds its unacknowledged messages); events and rounds
          gain their UTC times (none for those already journaled), and the clock steps, the
          origin and recall's indexes are added;
        - 4 to 5: the outbox takes ``event`` messages (significant events, issue 28);
        - 5 to 6: events, rounds and the origin gain their hash chain (:mod:`.chain`); it
          starts after the last event already journaled (``meta.chain_since``).

        SQLite cannot change a constraint in place: the outbox is rebuilt with its rows."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            if version == 1:
                (events,) = db.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()
                outbox.create(db, since_event=events)
            else:
                db.execute("ALTER TABLE outbox RENAME TO outbox_old")
                db.execute(outbox.SCHEMA[0])
                db.execute(
                    "INSERT INTO outbox (seq, event, kind, key, payload) "
                    "SELECT seq, event, kind, key, payload FROM outbox_old"
                )
                db.execute("DROP TABLE outbox_old")
            if version < 4:
                db.execute("ALTER TABLE events ADD COLUMN utc_ms INTEGER")
                db.execute("ALTER TABLE rounds ADD COLUMN started_utc_ms INTEGER")
                db.execute("ALTER TABLE rounds ADD COLUMN utc_ms INTEGER")
                for statement in _V4:
                    db.execute(statement)
            if version < 6:
                for statement in chain.V6:
                    db.execute(statement)
                (since,) = db.execute(
                    "SELECT max(coalesce((SELECT max(seq) FROM events), 0),"
                    " coalesce((SELECT seq FROM origin WHERE id = 1), 0))"
                ).fetchone()
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('chain_since', ?)",
                    (dumps(int(since)),),
                )
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            rollback(db)
            raise JournalError(
                f"cannot migrate journal {self.path} from schema version {version} to "
                f"{SCHEMA_VERSION}: {exc}; nothing changed; {WHAT_TO_DO}"
            ) from None
        self.version = SCHEMA_VERSION

    def _add_checkpoints(self) -> None:
        """The ``checkpoints`` table, if the journal has none yet (no version change:
        software that does not know it replays the whole journal, as before)."""
        try:
            self.db.execute(_CHECKPOINTS)
        except sqlite3.Error as exc:
            raise JournalError(
                f"cannot add checkpoints to journal {self.path}: {exc}; {WHAT_TO_DO}"
            ) from None

    def _record_run(self) -> None:
        try:
            self.db.execute(_RUNS)
            self.db.execute(
                "INSERT OR REPLACE INTO runs (boot, software, started_ms, first_event)"
                " VALUES (?, ?, ?, ?)",
                (self.boot, build.software(), int(time.time() * 1000), self.events_written + 1),
            )
        except sqlite3.Error as exc:
            raise JournalError(
                f"journal {self.path}: cannot record this run: {exc}; {WHAT_TO_DO}"
            ) from None

    def record_clock(self, source: str, synchronised: bool | None, offset_ms: float | None) -> None:
        """This run's clock at its start (issue 28 item 6): the time daemon and its server,
        whether it was synchronised (None: nothing could tell) and the offset, in the
        ``runs`` row (columns added when missing: no version change)."""
        if self.boot is None:
            return
        try:
            have = {row[1] for row in self.db.execute("PRAGMA table_info(runs)")}
            for column, kind in _RUN_CLOCK:
                if column not in have:
                    self.db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
            self.db.execute(
                "UPDATE runs SET clock_source = ?, clock_synchronised = ?, clock_offset_ms = ?"
                " WHERE boot = ?",
                (source, None if synchronised is None else int(synchronised),
                 None if offset_ms is None else round(offset_ms, 3), self.boot),
            )  # fmt: skip
        except sqlite3.Error as exc:
            raise JournalError(
                f"journal {self.path}: cannot record this run's clock: {exc}; {WHAT_TO_DO}"
            ) from None

    def runs(self) -> list[dict[str, Any]]:
        """Every run of a table controller on this journal, oldest first: ``boot``,
        ``software`` (its version), ``started_ms`` (UTC) and ``first_event``."""
        try:
            if not self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'"
            ).fetchone():
                return []
            rows = self.db.execute(
                "SELECT boot, software, started_ms, first_event FROM runs ORDER BY boot"
            ).fetchall()
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read journal {self.path}: {exc}") from None
        keys = ("boot", "software", "started_ms", "first_event")
        return [dict(zip(keys, row, strict=True)) for row in rows]

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
            db.execute(
                "INSERT INTO events (seq, round, event, accepted, utc_ms, chain)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (seq, round_number, event_text, int(accepted), utc_ms, link),
            )
            # the round started with its first event at or after its started_t
            db.executemany(
                "INSERT INTO rounds (round, seq, record, utc_ms, chain, started_utc_ms) VALUES"
                " (?, ?, ?, ?, ?, (SELECT utc_ms FROM events WHERE round = ?"
                " AND coalesce(json_extract(event, '$.t') >= ?, 1) ORDER BY seq LIMIT 1))",
                rows,
            )
            if clock_step is not None and utc_ms is not None:
                db.execute(
                    "INSERT INTO clock_steps (seq, step_ms, utc_before, utc_after)"
                    " VALUES (?, ?, ?, ?)",
                    (seq, clock_step[0], clock_step[1], utc_ms),
                )
            written = outbox.insert_rows(db, seq, publishes)
            if checkpoint is not None:
                db.execute(
                    "INSERT INTO checkpoints (seq, version, software, outbox_written, state)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (seq, checkpoint["version"], build.software(), written, dumps(checkpoint)),
                )
                db.execute(
                    "DELETE FROM checkpoints WHERE seq NOT IN "
                    f"(SELECT seq FROM checkpoints ORDER BY seq DESC LIMIT {CHECKPOINTS_KEPT})"
                )
            self.commit_ns = time.monotonic_ns()
            db.execute("COMMIT")
        except (sqlite3.Error, OSError, TypeError, ValueError, KeyError) as exc:
            rollback(db)
            raise JournalError(
                f"journal {self.path}: writing event {seq} ({event.get('type')}) failed: {exc}"
            ) from exc
        self.events_written = seq
        self.chain_head = round_links[-1] if round_links else link
        return seq

    # -- reading -----------------------------------------------------------------

    def entries(self, after: int = 0) -> Iterator[JournalEntry]:
        """Every stored event after ``after``, in order."""
        try:
            utc = "utc_ms" if self.version >= 4 else "NULL"
            cursor = self.db.execute(
                f"SELECT seq, round, event, accepted, {utc} FROM events WHERE seq > ?"
                " ORDER BY seq",
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


def _no_round(journal: Journal, number: int) -> str:
    count, first, last = journal.round_count()
    have = f"rounds {first} to {last} are recorded" if count else "no round is recorded yet"
    return (
        f"journal {journal.path}: no record of round {number} ({have}; a round in progress "
        "is recorded when it is settled)"
    )
