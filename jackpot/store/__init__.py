"""Where the jackpot ledger lives: an SQLite file or a PostgreSQL database, behind one seam.

:func:`open_store` takes the ledger's location: a path is an SQLite file (the embedded
default: the demo, a single property), a ``postgresql://`` URL a PostgreSQL database (a
casino group's central ledger). Both give a :class:`Store` with the same few calls; the
ledger and the alarm log write their SQL once, in the subset both engines read (``?``
placeholders, ``INSERT ... ON CONFLICT``, ``RETURNING``), and ask the store for the few
words that differ (:attr:`Store.award_order`, :meth:`Store.is_`). Each backend keeps its
schema and its migrations in one module: :mod:`jackpot.store.sqlite`,
:mod:`jackpot.store.postgres` (docs/jackpot/postgres.md).

A driver's error becomes the caller's error class (``LedgerError``, ``AlarmLogError``: both
``OSError`` s), naming the location (never a password).

A :class:`Session` names a PostgreSQL connection and sets its timeouts from its first byte
(the hot standby's: every session of a term is tagged with its epoch, so the next term can
end it, and none can hold a lock for long: docs/jackpot/failover.md, "Fencing"). SQLite has
no sessions (one file, one host, no standby): it takes none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from controller.errors import TableControllerError

_NOTHING = contextlib.nullcontext()

#: URL schemes of a PostgreSQL ledger (libpq's).
DSN_SCHEMES = ("postgresql", "postgres")

Location = str | PathLike[str]


class LedgerError(TableControllerError, OSError):
    """The ledger could not be opened, read or written, or does not fit this config."""


class LedgerFenced(LedgerError):
    """The ledger's fence refused a write: this controller may no longer change the ledger
    (another one took over). Nothing of the transaction was committed."""


#: ``fence(cursor)``: called inside every write transaction before anything changes, with
#: the backend's own DB-API cursor (placeholders ``?`` for SQLite, ``%s`` for PostgreSQL);
#: raises :class:`LedgerFenced` to abort it.
Fence = Callable[[Any], None]


@dataclass(frozen=True)
class Session:
    """What a PostgreSQL connection says about itself at connect time: ``application_name``
    (at most 63 bytes; PostgreSQL cuts the rest) and ``settings``, run-time parameters as
    (name, value) pairs (``lock_timeout``, ``statement_timeout``...), set by libpq's
    ``options`` before the first statement, so they hold for every transaction, a reconnect's
    included.

    >>> Session("jackpot-epoch 7 a", (("lock_timeout", "750ms"),)).options()
    '-c lock_timeout=750ms'
    """

    application_name: str
    settings: tuple[tuple[str, str], ...] = ()

    def options(self) -> str:
        """The settings as libpq's ``options`` (``-c name=value ...``)."""
        return " ".join(f"-c {name}={value}" for name, value in self.settings)


def meters_for_update(columns: str) -> str:
    """The statement that holds every meter row until its transaction ends, reading
    ``columns`` of them: the one definition of the meters' lock (PostgreSQL), for every
    writer (:meth:`Store.lock_money`, a batch's start in jackpot/ledger.py). Its order (by
    ``pool``) is what keeps writers from deadlocking: each takes the rows in the same order,
    so none holds a row another holds out for while waiting on one of the other's."""
    return f"SELECT {columns} FROM meters ORDER BY pool FOR UPDATE"


#: The tables schema 3 adds, both backends (``{int}``: the integer type; ``{serial}``: an
#: auto-numbered primary key). ``draws``: the Mystery's draws (jackpot/draws.py);
#: ``parameters``: the effective terms, ``changes``: every audited change (the first start's
#: terms, ``parameters apply``, corrections, transfers, retirements), ``table_keys``: every
#: table key the ledger ever trusted and when (jackpot/parameters.py).
V3_TABLES = """
CREATE TABLE IF NOT EXISTS draws (
    pool TEXT NOT NULL, cycle {int} NOT NULL, drawn_utc {int}, gaming_day TEXT, low {int},
    high {int}, commitment TEXT, sealed TEXT, trigger_cents {int}, salt TEXT, ended TEXT,
    ended_utc {int}, award_id TEXT, PRIMARY KEY (pool, cycle));
CREATE UNIQUE INDEX IF NOT EXISTS draws_live ON draws (pool) WHERE ended IS NULL;
CREATE TABLE IF NOT EXISTS parameters (
    subject TEXT NOT NULL, term TEXT NOT NULL, value TEXT NOT NULL, change_n {int} NOT NULL,
    PRIMARY KEY (subject, term));
CREATE TABLE IF NOT EXISTS changes (
    n {serial}, t_utc {int} NOT NULL, gaming_day TEXT NOT NULL, kind TEXT NOT NULL,
    by_name TEXT NOT NULL, approved_by TEXT, reason TEXT NOT NULL, config_sha256 TEXT,
    detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS table_keys (
    table_id TEXT NOT NULL, kid TEXT NOT NULL, public_key TEXT NOT NULL, from_n {int} NOT NULL,
    from_utc {int}, until_n {int}, until_utc {int}, PRIMARY KEY (table_id, kid, from_n));
"""


#: The table schema 4 adds, both backends: ``events``, each table's significant events (the
#: shoe door, faults, the enclosure or logic door, a power loss, the journal set aside or
#: restored, an unsynchronised clock) as the ledger applied them, one row per ``event``
#: message (its ``table_id``, ``seq``), with the table's UTC time (``table_utc_ms``) and the
#: controller's (``received_utc``, ``gaming_day``, as ``applied``): issue 28 item 4,
#: N.J.A.C. 13:69E-1.39C(b)5 (jackpot/events.py). ``n``: the order of receipt.
V4_TABLES = """
CREATE TABLE IF NOT EXISTS events (
    n {serial}, table_id TEXT NOT NULL, seq {int} NOT NULL, code TEXT NOT NULL,
    table_utc_ms {int} NOT NULL, received_utc {int} NOT NULL, gaming_day TEXT NOT NULL,
    round {int} NOT NULL, in_round {int} NOT NULL, detail TEXT, by_name TEXT,
    payload TEXT NOT NULL, UNIQUE (table_id, seq));
CREATE INDEX IF NOT EXISTS events_day ON events (gaming_day, n);
"""


def v3_steps(integer: str) -> list[str]:
    """Schema 2 -> 3 on the tables schema 2 had (the new ones exist by then): the time
    columns, NULL on every row from before (they carry no time, and the reports say so);
    each pool's live trigger moved into ``draws`` in the clear for the ledger to commit and
    seal in the same transaction; ``mystery.trigger_cents`` dropped."""
    columns = {
        "applied": ("received_utc", "gaming_day"),
        "movements": ("t_utc", "gaming_day", "change_n"),
        "awards": ("offered_utc", "committed_utc", "gaming_day"),
    }
    steps = [
        f"ALTER TABLE {table} ADD COLUMN {column} {'TEXT' if column == 'gaming_day' else integer}"
        for table, names in columns.items()
        for column in names
    ]
    return [
        *steps,
        "INSERT INTO draws (pool, cycle, trigger_cents) SELECT pool, cycle, trigger_cents"
        " FROM mystery",
        "ALTER TABLE mystery DROP COLUMN trigger_cents",
    ]


def is_dsn(location: Location) -> bool:
    """True for a PostgreSQL URL (``postgresql://...``), False for a file path."""
    return isinstance(location, str) and location.split("://", 1)[0].lower() in DSN_SCHEMES


def safe_location(location: Location) -> str:
    """The location for messages and logs: a URL without its password."""
    if not is_dsn(location):
        return str(location)
    parts = urlsplit(str(location))
    if parts.password is None:
        return str(location)
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def ledger_location(location: Location) -> str | Path:
    """A path as a :class:`~pathlib.Path`, a URL as it is (a Path would fold its ``//``)."""
    return str(location) if is_dsn(location) else Path(location)


class Store:
    """One connection to the ledger's database, autocommit between explicit transactions.

    ``execute(sql, params)`` takes ``?`` placeholders and returns a cursor (``fetchone``,
    ``fetchall``, iteration). :meth:`begin_write` starts the one kind of write transaction
    the ledger uses; :meth:`lock_money` takes the rows money moves through."""

    dialect = ""
    award_order = ""  # the awards' insertion order column
    driver_errors: tuple[type[Exception], ...] = ()  # what the driver raises (see fence)
    round_trips = False  # a read waits for a server (PostgreSQL), not in-process (SQLite)

    def __init__(self, location: Location, error: type[Exception]) -> None:
        self.location = safe_location(location)
        self.error = error

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.execute(sql, row)

    def insert_rows(
        self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Insert ``rows`` into ``table`` in their order (``columns``: each column's name
        and type, ``text`` or ``int``). SQLite: one prepared statement stepped once a row
        (in-process: each step costs no round trip)."""
        names = ", ".join(name for name, _ in columns)
        marks = ", ".join("?" for _ in columns)
        self.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)

    def pipeline(self) -> contextlib.AbstractContextManager[Any]:
        """Around a batch's whole transaction: its statements sent without waiting for each
        answer where the backend can (PostgreSQL's pipeline mode); SQLite runs in-process
        (nothing to do: a reused null context). Roll back after the block, not inside it."""
        return _NOTHING

    @property
    def cursor(self) -> Any:
        """The driver's cursor inside the current transaction (for a fence)."""
        raise NotImplementedError

    @property
    def in_transaction(self) -> bool:
        raise NotImplementedError

    def begin_write(self) -> None:
        raise NotImplementedError

    def fence(self, fence: Fence) -> None:
        """Inside a write transaction: ``fence(cursor)``. Its :class:`LedgerFenced` goes
        through; a driver error (:attr:`driver_errors`: a lost connection, a lock or
        statement timeout) becomes :attr:`error` like every other statement's, so the caller
        sees a ledger error, never the driver's (the service took a raw one for a message no
        check foresaw, and consumed the message)."""
        try:
            fence(self.cursor)
        except self.driver_errors as exc:
            raise self.failed("the ledger's fence", exc) from exc

    def lock_money(self) -> None:
        """Inside a write transaction: hold every meter row until it ends."""

    def commit(self) -> None:
        self.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            self.execute("ROLLBACK")

    def close(self) -> None:
        raise NotImplementedError

    def settle(self) -> None:
        """After the opening transaction committed (SQLite: empties the WAL after a
        migration)."""

    def is_(self, column: str) -> str:
        """``column`` equal to a parameter, NULL included."""
        return f"{column} IS ?"

    def failed(self, what: str, exc: BaseException) -> Exception:
        return self.error(f"{self.location}: {what}: {exc}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"


def open_store(
    location: Location, *, error: type[Exception] = LedgerError, session: Session | None = None
) -> Store:
    """The store at ``location``: SQLite for a path, PostgreSQL for a ``postgresql://`` URL.
    ``error``: the class driver errors become (raised here if it cannot connect).
    ``session``: the PostgreSQL connection's name and settings (SQLite has none: ignored)."""
    if is_dsn(location):
        from jackpot.store.postgres import PostgresStore

        return PostgresStore(str(location), error, session)
    from jackpot.store.sqlite import SQLiteStore

    return SQLiteStore(Path(location), error)
