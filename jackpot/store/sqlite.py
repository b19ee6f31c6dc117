"""The ledger in an SQLite file: its schema, its migrations, its connection.

WAL and ``synchronous=FULL`` on every connection; a write transaction is ``BEGIN IMMEDIATE``
(SQLite's one writer lock: batches are applied one after the other, whoever writes).

Schema versions (``meta`` key ``schema``): 1, the first; 2 adds ``applied.digest``,
``awards.meter_before`` and the ``contributions`` and ``round_results`` proofs
(:func:`_migrate_1_to_2`, in place, inside the opening transaction); 3 adds central time
(the controller's UTC time and the gaming day on applied messages, movements and awards),
the ledger's terms (``parameters``, ``changes``, ``table_keys``) and the Mystery's
committed, sealed ``draws`` (:func:`_migrate_2_to_3`; rows from before carry no time); 4
adds ``events``, the tables' significant events (:func:`_migrate_3_to_4`; issue 28 item 4,
N.J.A.C. 13:69E-1.39C(b)5); 5 the hash chains of ``applied``, ``movements`` and ``awards``
(:func:`jackpot.chain.migrate`; issue 29 item 5). The alarm log's table lives in the same file
(:data:`ALARMS_SCHEMA`). See docs/jackpot/postgres.md ("Schema").
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import threading
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.link.signing import digest
from jackpot import chain
from jackpot.store import V3_TABLES, V4_TABLES, Store, v3_steps

SCHEMA_VERSION = 5
#: Seconds between two checkpoints of the service's ledger at most (:class:`Checkpointer`):
#: after a commit, the WAL is copied into the file this long after the last copy, on a
#: thread of its own.
CHECKPOINT_EVERY_S = 0.5

log = logging.getLogger("jackpot.ledger")

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tables (table_id TEXT PRIMARY KEY, acked INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS applied (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    table_id TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL,
    boot INTEGER NOT NULL, outcome TEXT NOT NULL, reason TEXT, message TEXT NOT NULL,
    digest TEXT, received_utc INTEGER, gaming_day TEXT, chain TEXT, UNIQUE (table_id, seq));
CREATE INDEX IF NOT EXISTS applied_key ON applied (table_id, key);
CREATE TABLE IF NOT EXISTS meters (
    pool TEXT PRIMARY KEY, value TEXT NOT NULL, seq INTEGER NOT NULL, hits INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS mystery (pool TEXT PRIMARY KEY, cycle INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS movements (
    n INTEGER PRIMARY KEY AUTOINCREMENT, pool TEXT NOT NULL, table_id TEXT, seq INTEGER,
    what TEXT NOT NULL, amount TEXT NOT NULL, t_utc INTEGER, gaming_day TEXT,
    change_n INTEGER, chain TEXT);
CREATE TABLE IF NOT EXISTS awards (
    award_id TEXT PRIMARY KEY, pool TEXT NOT NULL, table_id TEXT NOT NULL,
    claim_seq INTEGER NOT NULL, claim_key TEXT NOT NULL, round INTEGER NOT NULL,
    spot INTEGER NOT NULL, meter TEXT NOT NULL, amount INTEGER NOT NULL, state TEXT NOT NULL,
    hit_order INTEGER, reason TEXT, confirm_seq INTEGER, meter_before INTEGER,
    offered_utc INTEGER, committed_utc INTEGER, gaming_day TEXT, chain TEXT,
    confirm_chain TEXT);
CREATE TABLE IF NOT EXISTS contributions (
    table_id TEXT NOT NULL, round INTEGER NOT NULL, spot INTEGER NOT NULL, pool TEXT NOT NULL,
    seq INTEGER NOT NULL, PRIMARY KEY (table_id, round, spot, pool));
CREATE TABLE IF NOT EXISTS round_results (
    table_id TEXT NOT NULL, round INTEGER NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (table_id, round));
""" + "".join(
    ddl.format(int="INTEGER", serial="INTEGER PRIMARY KEY AUTOINCREMENT")
    for ddl in (V3_TABLES, V4_TABLES)
)

ALARMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS alarms (
    id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, table_id TEXT,
    first_t INTEGER NOT NULL, last_t INTEGER NOT NULL, count INTEGER NOT NULL,
    seq INTEGER, detail TEXT NOT NULL, acked_by TEXT, acked_t INTEGER,
    first_seq INTEGER, first_detail TEXT);
CREATE INDEX IF NOT EXISTS alarms_open ON alarms (acked_t, kind, table_id);
"""


class SQLiteStore(Store):
    """The ledger file at ``path`` (created if absent)."""

    dialect = "sqlite"
    award_order = "rowid"

    def __init__(self, path: Path, error: type[Exception]) -> None:
        super().__init__(str(path), error)
        self.path = path
        try:
            self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            # freed pages are zeroed: a Mystery trigger's ciphertext (or a schema-2 trigger
            # in the clear) erased from a row does not linger in the file
            self._db.execute("PRAGMA secure_delete=ON")
        except sqlite3.Error as exc:
            raise self.failed("cannot open the jackpot ledger", exc) from None

    def execute(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, tuple(params))
        except sqlite3.Error as exc:
            raise self.failed("ledger database error", exc) from exc

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        try:
            self._db.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise self.failed("ledger database error", exc) from exc

    @property
    def cursor(self) -> sqlite3.Cursor:
        return self._db.cursor()

    @property
    def in_transaction(self) -> bool:
        return self._db is not None and self._db.in_transaction

    def begin_write(self) -> None:
        self.execute("BEGIN IMMEDIATE")

    def script(self, sql: str) -> None:
        try:
            self._db.executescript(sql)
        except sqlite3.Error as exc:
            raise self.failed("cannot create the ledger's tables", exc) from None

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        if self._db is not None:
            self._db.close()
            self._db = None

    _checkpointer: Checkpointer | None = None

    def checkpoint_apart(self, every_s: float = CHECKPOINT_EVERY_S) -> Checkpointer:
        """WAL checkpoints on a thread and connection of their own (:class:`Checkpointer`),
        none inside this connection's commits: SQLite's automatic checkpoint (every 1,000 WAL
        pages) ran inside the commit that crossed it, copying the pages into the file and
        fsyncing it before the commit returned, 2-10 ms more on the live contribution that
        happened to cross it. For the service's ledger; durability is unchanged (each commit
        still fsyncs the WAL, ``synchronous=FULL``). Returns the checkpointer (its counts)."""
        if self._checkpointer is None:
            self.execute("PRAGMA wal_autocheckpoint=0").fetchall()
            self._checkpointer = Checkpointer(self.path, every_s)
        return self._checkpointer

    def commit(self) -> None:
        super().commit()
        if self._checkpointer is not None:  # copied into the file in due time, apart
            self._checkpointer.wake()

    # -- the schema ----------------------------------------------------------------------

    def open_ledger(self) -> None:
        """Create or migrate the ledger's tables; returns inside a write transaction."""
        # one transaction: a power cut while a first start creates the tables leaves all of
        # them or none (tests/test_power_loss.py reads the ledger between cuts)
        self.script(f"BEGIN IMMEDIATE;\n{LEDGER_SCHEMA}\nCOMMIT;")
        self.begin_write()
        row = self.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            self.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            return
        if row[0] not in ("1", "2", "3", "4", str(SCHEMA_VERSION)):
            raise self.error(
                f"{self.location}: ledger schema {row[0]}, this controller reads "
                f"{SCHEMA_VERSION} (and migrates 1 to 4): run the controller version "
                "that wrote it"
            )
        if row[0] == "1":
            _migrate_1_to_2(self)
        if row[0] in ("1", "2"):
            _migrate_2_to_3(self)
            self.migrated = True
        if row[0] in ("1", "2", "3"):
            _migrate_3_to_4(self)
        if row[0] in ("1", "2", "3", "4"):
            chain.migrate(self.execute, self.award_order)  # 4 -> 5: the hash chains
            self.execute("UPDATE meta SET value='5' WHERE key='schema'")

    migrated = False  # open_ledger migrated the file (settle() then empties the WAL)

    def settle(self) -> None:
        """After the opening transaction committed: a migration rewrote tables that held
        the Mystery triggers in the clear; truncate the WAL so no old page stays in it."""
        if self.migrated:
            self.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            self.migrated = False

    def open_alarms(self) -> None:
        self.script(ALARMS_SCHEMA)


class Checkpointer:
    """Copies the WAL of the ledger at ``path`` into the file (``PRAGMA
    wal_checkpoint(PASSIVE)``: never waits for the writer, which goes on appending to the
    WAL meanwhile) on a thread with its own connection: after :meth:`wake` (a commit), at
    most every ``every_s`` seconds; idle, never. ``runs`` and ``failures`` count its
    checkpoints; a failure is logged and tried again at the next wake (the WAL only grows
    meanwhile: nothing committed depends on a checkpoint)."""

    def __init__(self, path: Path, every_s: float = CHECKPOINT_EVERY_S) -> None:
        self.every_s = every_s
        self.runs = self.failures = 0
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30,
                                   check_same_thread=False)  # fmt: skip
        self._db.execute("PRAGMA synchronous=FULL")  # the file fsynced after each copy
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ledger-checkpoint", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def counts(self) -> dict[str, int]:
        """``runs`` and ``failures`` so far (the service's ``health()["checkpoints"]``)."""
        return {"runs": self.runs, "failures": self.failures}

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._wake.wait()
                if self._stop.wait(self.every_s):  # what commits meanwhile goes with it
                    break
                self._wake.clear()
                try:
                    self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.runs += 1
                except sqlite3.Error as exc:
                    self.failures += 1
                    log.warning("ledger checkpoint failed (tried again after the next "
                                "commit): %s", exc)  # fmt: skip
        finally:
            self._db.close()

    def close(self) -> None:
        """Stop the thread (a checkpoint under way finishes first) and close its connection."""
        self._stop.set()
        self._wake.set()
        self._thread.join(30)


def _migrate_1_to_2(store: SQLiteStore) -> None:
    """Schema 1 -> 2 in place, inside the opening transaction: each applied message's
    digest from its stored JSON; each award's ``meter_before`` (a Mystery hit: its amount,
    the trigger; a meter line: the whole cents of the pool's movements before it); the
    contributions and round results already applied."""
    db = store
    db.execute("ALTER TABLE applied ADD COLUMN digest TEXT")
    db.execute("ALTER TABLE awards ADD COLUMN meter_before INTEGER")
    for n, text in db.execute("SELECT n, message FROM applied").fetchall():
        db.execute("UPDATE applied SET digest=? WHERE n=?", (digest(json.loads(text)), n))
    taken = db.execute(
        "SELECT w.award_id, w.pool, w.table_id, w.claim_seq, w.amount, a.kind FROM awards w"
        " JOIN applied a ON a.table_id=w.table_id AND a.seq=w.claim_seq"
        " WHERE w.state!='refused'"
    ).fetchall()
    before: dict[tuple[str, str, int], int] = {}
    for pool in {row[1] for row in taken}:
        total = Fraction(0)
        for table, seq, what, amount in db.execute(
            "SELECT table_id, seq, what, amount FROM movements WHERE pool=? ORDER BY n", (pool,)
        ).fetchall():
            if what == "award":
                before.setdefault((pool, table, seq), math.floor(total))
            total += Fraction(amount)
    for award_id, pool, table, seq, amount, kind in taken:
        value = amount if kind == "contribution" else before.get((pool, table, seq), amount)
        db.execute("UPDATE awards SET meter_before=? WHERE award_id=?", (value, award_id))
    db.execute(
        "INSERT OR IGNORE INTO contributions SELECT table_id,"
        " json_extract(message, '$.payload.round'), json_extract(message, '$.payload.spot'),"
        " json_extract(message, '$.payload.pool'), seq FROM applied"
        " WHERE kind='contribution' AND outcome='applied' ORDER BY n"
    )
    db.execute(
        "INSERT OR IGNORE INTO round_results SELECT table_id,"
        " json_extract(message, '$.payload.round'), seq FROM applied"
        " WHERE kind='round_result' AND outcome='applied' ORDER BY n"
    )
    db.execute("UPDATE meta SET value='2' WHERE key='schema'")


def _migrate_2_to_3(store: SQLiteStore) -> None:
    """Schema 2 -> 3 in place, inside the opening transaction (jackpot/store/__init__.py
    :func:`~jackpot.store.v3_steps`): the time columns (NULL: rows from before carry no
    time), the live trigger moved into ``draws`` (the ledger seals it before this
    transaction commits) and dropped from ``mystery``."""
    for statement in v3_steps("INTEGER"):
        store.execute(statement)
    store.execute("UPDATE meta SET value='3' WHERE key='schema'")


def _migrate_3_to_4(store: SQLiteStore) -> None:
    """Schema 3 -> 4 in place, inside the opening transaction: the ``events`` table
    (:data:`~jackpot.store.V4_TABLES`; the schema script made it already, this says so for a
    file that lacks it), empty: a table's events reach the ledger from now on. Nothing else
    changes."""
    ddl = V4_TABLES.format(int="INTEGER", serial="INTEGER PRIMARY KEY AUTOINCREMENT")
    for statement in filter(str.strip, ddl.split(";")):
        store.execute(statement)
    store.execute("UPDATE meta SET value='4' WHERE key='schema'")
