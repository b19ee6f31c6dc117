"""Who runs the jackpot: a lease in the PostgreSQL ledger's database and a fencing epoch.

Two rows, created on first use (docs/jackpot/failover.md, "Election"):

- ``jackpot_lease`` (id 1): ``holder``, ``epoch``, ``expires``. The active controller renews
  it every third of the lease; a standby takes it only once ``expires`` is past by the
  *database's* clock (``now()``), never a host's;
- ``jackpot_epoch`` (id 1): the fencing ``epoch``, changed only by a takeover, which adds one.

:meth:`Elector.fence_for` gives the ledger's ``fence(cursor)``: the *first* statement of every
ledger transaction, before any lock, is ``SELECT epoch FROM jackpot_epoch ... FOR SHARE``; it
must still give this controller's epoch, else :class:`~jackpot.ledger.LedgerFenced` aborts the
transaction. A takeover's ``UPDATE jackpot_epoch`` needs the row exclusively: it waits for the
old leader's transactions in flight, and every later one of them reads the new epoch and
fails. So a paused or partitioned old leader never commits once a standby has taken over,
whatever its clock or its lease believed. (Renewals touch only ``jackpot_lease``, so they
never conflict with the share lock: a serializable ledger transaction is not disturbed.)

Liveness: the new leader commits within the takeover goal whatever the old one does, paused
(SIGSTOP, a VM pause) at any point of a transaction included (issue 26: one paused after
taking the meter rows and before its fence held them, with no timeout, for as long as it
slept). Every session of a term is tagged and bounded from its first byte
(:attr:`Fence.session`): ``application_name`` ``jackpot-epoch <epoch> <name>``,
``idle_in_transaction_session_timeout`` and ``lock_timeout`` of half the lease and a
``statement_timeout`` (:func:`session_settings`). A takeover ends every session tagged with
an older epoch (``pg_terminate_backend``) before it changes the epoch, so it does not even
wait for the idle timeout; the elector's own connection has the same bounds, so a renewal
paused mid-transaction cannot hold the lease row either.

Holding a lease is a liveness matter (who should work); the epoch is the safety (who can
commit). Connections: one of its own (``autocommit``, short ``connect_timeout`` and
``tcp_user_timeout``), reopened after an error; every error is an :class:`ElectionError`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from controller.errors import TableControllerError
from jackpot.store import LedgerFenced, Session

log = logging.getLogger("jackpot.leader")

#: ``pg_advisory_xact_lock`` key while the two rows are created (two controllers at once).
SCHEMA_LOCK = 0x6A61636B  # "jack"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jackpot_lease (
    id integer PRIMARY KEY CHECK (id = 1),
    holder text NOT NULL,
    epoch bigint NOT NULL,
    expires timestamptz NOT NULL,
    taken timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS jackpot_epoch (
    id integer PRIMARY KEY CHECK (id = 1),
    epoch bigint NOT NULL,
    holder text NOT NULL);
INSERT INTO jackpot_lease VALUES (1, '', 0, '-infinity', '-infinity') ON CONFLICT DO NOTHING;
INSERT INTO jackpot_epoch VALUES (1, 0, '') ON CONFLICT DO NOTHING;
"""


def session_name(epoch: int, name: str) -> str:
    """The ``application_name`` of every ledger session of ``name``'s term at ``epoch``: the
    epoch first, so PostgreSQL's cut at 63 bytes only shortens a long name."""
    return f"jackpot-epoch {epoch} {name}"[:63]


def session_settings(lease_ms: int) -> tuple[tuple[str, str], ...]:
    """The bounds of a term's ledger sessions: a transaction idle (its process paused) or a
    lock wait longer than half the lease ends (the session, the statement), and no statement
    runs longer than five leases (at least 5 s: a read of a large ledger at the start)."""
    half = f"{max(500, lease_ms // 2)}ms"
    return (
        ("idle_in_transaction_session_timeout", half),
        ("lock_timeout", half),
        ("statement_timeout", f"{max(5000, 5 * lease_ms)}ms"),
    )


class ElectionError(TableControllerError, OSError):
    """The lease could not be read or written (the database is unreachable or refused)."""


@dataclass(frozen=True)
class Lease:
    """The lease as the database holds it: ``holder`` (a controller's name, ``""`` before the
    first election), ``epoch``, ``remaining_ms`` (negative: expired) by the database's clock."""

    holder: str
    epoch: int
    remaining_ms: int


class Elector:
    """Elections for the controller ``name`` on the database ``dsn`` (a libpq connection
    string or URL; a list of hosts with ``target_session_attrs=read-write`` follows a promoted
    standby). ``lease_ms``: how long a lease lasts without renewal (1,000 to 60,000).

    Not thread-safe: one supervisor thread calls :meth:`try_lead`, :meth:`renew` and
    :meth:`resign`; the fence it hands out runs on the ledger's connection and thread."""

    def __init__(
        self,
        dsn: str,
        name: str,
        lease_ms: int = 3000,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not name or not name.strip():
            raise ValueError("the controller's name must not be empty ([ha] name)")
        if not 1000 <= lease_ms <= 60_000:
            raise ValueError(f"lease_ms {lease_ms}: must be 1,000 to 60,000 ms")
        self.dsn = dsn
        self.name = name
        self.lease_ms = lease_ms
        self.clock = clock
        self.epoch: int | None = None  # ours while we lead
        self.deadline = float("-inf")  # clock() until which our lease surely lasts
        self._db: psycopg.Connection | None = None

    def __repr__(self) -> str:
        return f"Elector({self.name!r}, epoch={self.epoch}, lease_ms={self.lease_ms})"

    # -- the connection -------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection:
        if self._db is not None and not self._db.closed:
            return self._db
        timeout_s = max(1, self.lease_ms // 2000)
        # a lock wait of a third of the lease (a takeover in flight: try again at the next
        # poll); a renewal or takeover paused mid-transaction ends after half the lease, so it
        # never holds the lease row from the controller that should take over
        bounds = Session("", (
            ("lock_timeout", f"{self.lease_ms // 3}ms"),
            ("idle_in_transaction_session_timeout", f"{max(500, self.lease_ms // 2)}ms"),
            ("statement_timeout", f"{self.lease_ms}ms"),
        ))  # fmt: skip
        try:
            options = conninfo_to_dict(self.dsn).get("options", "")
            db = psycopg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=timeout_s,
                tcp_user_timeout=self.lease_ms // 2,
                keepalives=1,
                keepalives_idle=max(1, self.lease_ms // 3000),
                keepalives_interval=1,
                keepalives_count=2,
                application_name=f"jackpot-leader {self.name}"[:63],
                options=f"{options} {bounds.options()}".strip(),
            )
            with db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                db.execute(_SCHEMA)
        except psycopg.Error as exc:
            raise ElectionError(f"cannot reach the lease's database: {_one_line(exc)}") from None
        self._db = db
        return db

    def close(self) -> None:
        """Close the connection (the lease stays as it is: see :meth:`resign`). Safe twice."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def _run(self, work: Callable[[psycopg.Connection], Any]) -> Any:
        """``work(db)`` in one transaction (the connection's lock timeout: a third of the
        lease); an error closes the connection (reopened next time) and raises
        ElectionError."""
        db = self._connect()
        try:
            with db.transaction():
                return work(db)
        except psycopg.errors.LockNotAvailable:
            raise ElectionError(
                "the lease is locked by a transaction in flight (a takeover, or an old leader's "
                "last write): trying again"
            ) from None
        except psycopg.Error as exc:
            self.close()
            raise ElectionError(f"lease database: {_one_line(exc)}") from None

    # -- the lease ------------------------------------------------------------------------

    def lease(self) -> Lease:
        """The lease as the database holds it now."""

        def read(db: psycopg.Connection) -> Lease:
            holder, epoch, remaining = db.execute(
                "SELECT holder, epoch, (extract(epoch FROM expires - now()) * 1000)::bigint"
                " FROM jackpot_lease WHERE id = 1"
            ).fetchone()
            return Lease(holder, epoch, remaining if remaining is not None else -(1 << 62))

        return self._run(read)

    def try_lead(self) -> int | None:
        """Take the lease if it has expired (by the database's clock); return our new epoch,
        or None while another controller's lease runs. The takeover waits for the old
        leader's ledger transactions in flight (the epoch row's share locks) and makes every
        later one fail; first it ends every session of an older term (:meth:`end_sessions`),
        so a paused old leader's transaction does not hold it up."""
        start = self.clock()

        def take(db: psycopg.Connection) -> int | None:
            holder, live = db.execute(
                "SELECT holder, expires > now() FROM jackpot_lease WHERE id = 1 FOR UPDATE"
            ).fetchone()
            if live:
                return None
            (current,) = db.execute("SELECT epoch FROM jackpot_epoch WHERE id = 1").fetchone()
            self.end_sessions(db, current + 1)
            (epoch,) = db.execute(
                "UPDATE jackpot_epoch SET epoch = epoch + 1, holder = %s WHERE id = 1"
                " RETURNING epoch",
                (self.name,),
            ).fetchone()
            db.execute(
                "UPDATE jackpot_lease SET holder = %s, epoch = %s, taken = now(),"
                " expires = now() + make_interval(secs => %s) WHERE id = 1",
                (self.name, epoch, self.lease_ms / 1000),
            )
            if holder and holder != self.name:
                log.warning("took the lease from %s (its lease expired): epoch %d", holder, epoch)
            return epoch

        epoch = self._run(take)
        if epoch is not None:
            self.epoch = epoch
            self.deadline = start + self.lease_ms / 1000
        return epoch

    def end_sessions(self, db: psycopg.Connection, below: int) -> int:
        """End (``pg_terminate_backend``) every session of this database whose
        ``application_name`` tags it with a term older than ``below``: an old leader's ledger
        and alarm sessions, paused or not, and whatever locks they hold. Returns how many.

        PostgreSQL lets a role end its own sessions without superuser; the sessions of
        another role only with ``pg_signal_backend`` (docs/jackpot/failover.md). One it may
        not end is logged and left to its idle timeout; the takeover goes on."""
        rows = db.execute(
            "SELECT pid, usename, application_name FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND substring(application_name FROM '^jackpot-epoch ([0-9]{1,18}) ')::bigint < %s",
            (below,),
        ).fetchall()
        ended = 0
        for pid, user, application in rows:
            try:
                with db.transaction():  # a savepoint: a refusal leaves the takeover whole
                    (done,) = db.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
            except psycopg.errors.InsufficientPrivilege:
                log.warning(
                    "cannot end session %d (%s) of role %s: grant this controller's database "
                    "role pg_signal_backend, or run both controllers as one role; it ends by "
                    "its idle timeout instead", pid, application, user,
                )  # fmt: skip
                continue
            if done:
                ended += 1
                log.warning("ended session %d (%s) of an older term", pid, application)
        return ended

    def renew(self) -> bool:
        """Extend our lease by ``lease_ms`` from now; False if it is no longer ours (expired,
        or taken: the epoch moved on). Our local deadline counts from before the request, so
        it never outlasts the database's."""
        if self.epoch is None:
            return False
        start, epoch = self.clock(), self.epoch

        def extend(db: psycopg.Connection) -> bool:
            row = db.execute(
                "UPDATE jackpot_lease SET expires = now() + make_interval(secs => %s)"
                " WHERE id = 1 AND epoch = %s AND holder = %s AND expires > now() RETURNING 1",
                (self.lease_ms / 1000, epoch, self.name),
            ).fetchone()
            return row is not None

        if self._run(extend):
            self.deadline = start + self.lease_ms / 1000
            return True
        self.epoch = None
        return False

    def holds(self) -> bool:
        """True while we lead and our lease surely lasts (by this host's monotonic clock,
        counted from before the last renewal was sent)."""
        return self.epoch is not None and self.clock() < self.deadline

    def resign(self) -> None:
        """Give the lease up at once (a clean stop): a standby takes over at its next try.
        The epoch stays: only a takeover changes it. Errors are logged, not raised."""
        epoch, self.epoch = self.epoch, None
        if epoch is None:
            return
        try:
            self._run(
                lambda db: db.execute(
                    "UPDATE jackpot_lease SET expires = now() WHERE id = 1 AND epoch = %s",
                    (epoch,),
                )
            )
        except ElectionError as exc:
            log.warning("could not give up the lease (it expires by itself): %s", exc)

    # -- fencing --------------------------------------------------------------------------

    def fence_for(self, epoch: int, lost: threading.Event | None = None) -> Fence:
        """The ledger's ``fence(cursor)`` for a term that began with ``epoch``; ``lost`` is
        set (and the transaction refused without asking) once the supervisor gives up."""
        return Fence(self.name, epoch, self.lease_ms, lost or threading.Event())


@dataclass(frozen=True)
class Fence:
    """``fence(cursor)``: refuse the ledger transaction unless ``epoch`` is still current.

    The first statement of the ledger's transaction, before any lock: it takes the epoch row
    ``FOR SHARE`` (held to the commit). ``lost``: the supervisor's verdict (renewal failed);
    once set, every transaction is refused without a round trip. A mismatch sets ``lost``
    too. :attr:`session`: the name and bounds of the term's ledger sessions."""

    name: str
    epoch: int
    lease_ms: int
    lost: threading.Event

    @property
    def session(self) -> Session:
        """``jackpot-epoch <epoch> <name>`` with :func:`session_settings`: the ledger opens its
        connection with it (and the alarm log its own)."""
        return Session(session_name(self.epoch, self.name), session_settings(self.lease_ms))

    def __call__(self, cursor: Any) -> None:
        if self.lost.is_set():
            raise LedgerFenced(
                f"controller {self.name} lost its lease (epoch {self.epoch}): it writes nothing "
                "until it is elected again"
            )
        cursor.execute("SELECT epoch, holder FROM jackpot_epoch WHERE id = 1 FOR SHARE")
        row = cursor.fetchone()
        if row is None or row[0] != self.epoch:
            self.lost.set()
            now = f"epoch {row[0]} held by {row[1] or '?'}" if row else "no epoch row"
            raise LedgerFenced(
                f"controller {self.name} is fenced: it led at epoch {self.epoch}, the database "
                f"has {now}; nothing of this transaction is committed"
            )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
