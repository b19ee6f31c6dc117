"""The journal file's schema: its tables, a new file, the migration of an older one, the runs.

One SQLite file per table (``docs/journal.md``): WAL, ``synchronous = FULL``
and foreign keys on every connection, the schema version in ``PRAGMA
user_version`` (:data:`~controller.journal.store.SCHEMA_VERSION`; ``docs/journal.md``
lists what each version added). Tables:

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
  ``checkpoint_every`` events; the last :data:`~controller.journal.file.CHECKPOINTS_KEPT`
  are kept. Recovery starts from the newest one before the last event and replays only the
  events after it, so its time does not grow with history.

:class:`JournalSchema` is the part of :class:`~controller.journal.file.Journal` that opens a
file to this schema (creating or migrating it) and records each writer's run.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from controller import build
from controller.errors import JournalError
from controller.journal import chain, outbox
from controller.journal.store import FORMAT, SCHEMA_VERSION, WHAT_TO_DO, dumps, rollback
from controller.table.settings import TableSettings

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


class JournalSchema:
    """Opening a journal file to the current schema: check it is a journal of this game and
    settings, create it, or migrate it from an older version; the ``runs`` of its writers.
    Part of :class:`~controller.journal.file.Journal` (``db``, ``path``, ``boot``, ``meta()``
    and ``events_written`` are the journal's)."""

    path: Path
    version: int
    boot: int | None
    events_written: int

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
