"""The table's outbox: messages for the jackpot controller, on disk until it acknowledges them.

The outbox lives in the table's journal file (``docs/outbox.md``), so that each
:class:`~controller.table.effects.Publish` request is written **in the same SQLite
transaction** as the journal record of the event that made it
(:meth:`controller.journal.file.Journal.append` calls :func:`insert_rows`). Two tables:

- ``outbox``: one row per message not yet acknowledged: ``seq`` (the table's message
  sequence, 1, 2, 3 ... with no gap, never reused), ``event`` (the journal event that
  made it), ``kind`` (``contribution``, ``round_result``, ``hit_claim``, ``award_confirm``
  or ``event``), ``key``
  (unique) and ``payload`` (JSON);
- ``link``: one row: ``boot`` (incremented durably each time a table controller opens
  the journal to write it, i.e. once per process start), ``written`` (the highest
  ``seq`` ever written), ``acked`` (the highest ``seq`` the jackpot controller
  acknowledged) and ``since_event`` (events up to it were journaled before the outbox
  existed: a journal migrated from schema version 1).

Recovery (replaying the journal) never writes the outbox: the rows were committed
with their events. :class:`Outbox` is the publisher's side: its own connection to the
file (the publisher's thread may differ from the table's), reading what is pending
and deleting what the jackpot controller acknowledged (highest ``seq`` applied with
no gap).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller import json_rows
from controller.errors import JournalError, TableControllerError
from controller.journal.store import SCHEMA_VERSION, connect, dumps, rollback
from controller.table.effects import Publish

KINDS = ("contribution", "round_result", "hit_claim", "award_confirm", "event")
"""The message kinds a table sends; the topic is ``bj/v1/table/{table_id}/{kind}``."""

SCHEMA = (
    "CREATE TABLE outbox ("
    " seq INTEGER PRIMARY KEY CHECK (seq >= 1),"
    " event INTEGER NOT NULL CHECK (event >= 1),"
    f" kind TEXT NOT NULL CHECK (kind IN ({', '.join(repr(k) for k in KINDS)})),"
    " key TEXT NOT NULL UNIQUE,"
    " payload TEXT NOT NULL)",
    "CREATE TABLE link ("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " boot INTEGER NOT NULL CHECK (boot >= 0),"
    " written INTEGER NOT NULL CHECK (written >= 0),"
    " acked INTEGER NOT NULL CHECK (acked >= 0 AND acked <= written),"
    " since_event INTEGER NOT NULL CHECK (since_event >= 0))",
)
"""The outbox's part of the journal schema (version 5: the ``event`` kind). ``event`` names
the journal event that made the message; since version 4 it may be in an older file (a file
that carries on from another keeps its unacknowledged messages), so it is not a foreign key."""

TABLES = frozenset({"outbox", "link"})


class OutboxError(TableControllerError, ValueError):
    """An acknowledgement or request the outbox refuses (beyond what was written, or
    going backwards); nothing was changed."""


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """One message waiting for the jackpot controller's acknowledgement."""

    seq: int
    event: int
    kind: str
    key: str
    payload: dict[str, Any]
    #: whether the stored payload holds a JSON float (no message of the link may: the
    #: publisher's schema check needs no walk of the payload to know)
    floats: bool = field(default=False, compare=False)


def create(db: sqlite3.Connection, since_event: int = 0) -> None:
    """Create the outbox tables inside the caller's open transaction."""
    for statement in SCHEMA:
        db.execute(statement)
    db.execute(
        "INSERT INTO link (id, boot, written, acked, since_event) VALUES (1, 0, 0, 0, ?)",
        (since_event,),
    )


def insert_rows(db: sqlite3.Connection, event_seq: int, publishes: Sequence[Publish]) -> int:
    """Write ``publishes`` (of journal event ``event_seq``) to the outbox inside the
    caller's open transaction, numbered after the last written; return the new highest
    ``seq``. The caller commits or rolls back: rows and event go together."""
    (written,) = db.execute("SELECT written FROM link WHERE id = 1").fetchone()
    if not publishes:
        return int(written)
    rows = []
    for number, publish in enumerate(publishes, written + 1):
        if publish.topic not in KINDS:
            raise ValueError(f"publish {publish.key!r} has an unknown kind {publish.topic!r}")
        rows.append((number, event_seq, publish.topic, publish.key, dumps(publish.payload)))
    db.executemany(
        "INSERT INTO outbox (seq, event, kind, key, payload) VALUES (?, ?, ?, ?, ?)", rows
    )
    last = written + len(rows)
    db.execute("UPDATE link SET written = ? WHERE id = 1", (last,))
    return last


def next_boot(db: sqlite3.Connection) -> int:
    """Increment the boot counter in its own committed (fsynced) transaction; return it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("UPDATE link SET boot = boot + 1 WHERE id = 1")
        (boot,) = db.execute("SELECT boot FROM link WHERE id = 1").fetchone()
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return int(boot)


def row(row: tuple[Any, ...]) -> OutboxRow:
    seq, event, kind, key, payload = row
    data, floats = json_rows.loads(payload)  # json.loads's data; orjson reads it if it can
    return OutboxRow(int(seq), int(event), kind, key, data, floats)


class Outbox:
    """The outbox of the journal at ``path``, for the publisher.

    Opens its own connection (WAL, ``synchronous = FULL``), so it may run in another
    thread or process than the table; SQLite serialises its writes (acknowledgements)
    with the table's. The journal must exist and have the outbox (schema version 2:
    open it once with the table controller to migrate an older one).
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 5000):
        self.path = Path(path)
        if not self.path.is_file():
            raise JournalError(f"no journal at {self.path}: check the path")
        self._db: sqlite3.Connection | None = connect(
            self.path, create=False, busy_timeout_ms=busy_timeout_ms
        )
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master")}
        except sqlite3.Error as exc:
            self.close()
            raise JournalError(f"{self.path} is not a readable journal ({exc})") from None
        if version != SCHEMA_VERSION or not tables >= TABLES:
            self.close()
            raise JournalError(
                f"journal {self.path} has schema version {version} without an outbox; this "
                f"software reads version {SCHEMA_VERSION}: start the table controller once "
                "(it migrates the journal) or update the software"
            )

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise JournalError(f"outbox of {self.path} is closed")
        return self._db

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read the outbox of {self.path}: {exc}") from None

    def _link(self) -> tuple[int, int, int]:
        boot, written, acked = self._read("SELECT boot, written, acked FROM link WHERE id = 1")[0]
        return int(boot), int(written), int(acked)

    # -- reading -------------------------------------------------------------------------

    @property
    def boot(self) -> int:
        """The table controller's boot counter (0 until a writer opened the journal)."""
        return self._link()[0]

    def last_written(self) -> int:
        """The highest ``seq`` ever written (0 if none)."""
        return self._link()[1]

    def last_acknowledged(self) -> int:
        """The highest ``seq`` the jackpot controller acknowledged (0 if none)."""
        return self._link()[2]

    def counts(self) -> tuple[int, int]:
        """``(written, acknowledged)`` in one read: the highest ``seq`` ever written and
        the highest the jackpot controller acknowledged."""
        _, written, acked = self._link()
        return written, acked

    def depth(self) -> int:
        """How many messages wait for an acknowledgement."""
        _, written, acked = self._link()
        return written - acked

    def pending(self, limit: int | None = None) -> list[OutboxRow]:
        """The messages not yet acknowledged, oldest first (at most ``limit``)."""
        return self.resend_from(1, limit)

    def resend_from(self, seq: int, limit: int | None = None) -> list[OutboxRow]:
        """The pending messages with ``seq`` and after, in order (the jackpot controller
        saw a gap and asked for them again); empty if none is pending from there."""
        return [row(r) for r in self.texts_from(seq, limit)]

    def texts_from(
        self, seq: int, limit: int | None = None
    ) -> list[tuple[int, int, str, str, str]]:
        """:meth:`resend_from`'s rows as stored: ``(seq, event, kind, key, payload)``, the
        payload as its JSON text (:func:`row` reads one). The publisher reads each payload
        only when it comes to it, so a row's data dies with it, young (no data of a frame's
        64 rows waiting together for the garbage collector to look at)."""
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
            raise OutboxError(f"resend from {seq!r}: a sequence number is an integer from 1")
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise OutboxError(f"limit {limit!r}: give a count of 0 or more, or None")
        return self._read(
            "SELECT seq, event, kind, key, payload FROM outbox WHERE seq >= ? ORDER BY seq LIMIT ?",
            (seq, -1 if limit is None else limit),
        )

    # -- the jackpot controller's acknowledgement -------------------------------------

    def acknowledge(self, up_to_seq: int) -> int:
        """The jackpot controller applied every message up to ``up_to_seq`` with no gap:
        delete them durably (one committed transaction) and return how many went.

        Repeating the last acknowledgement is harmless (returns 0). An acknowledgement
        above the highest ``seq`` written, or below the last one, is refused with
        :class:`OutboxError` and changes nothing.
        """
        if isinstance(up_to_seq, bool) or not isinstance(up_to_seq, int) or up_to_seq < 0:
            raise OutboxError(f"acknowledgement {up_to_seq!r}: not a sequence number")
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            written, acked = db.execute("SELECT written, acked FROM link WHERE id = 1").fetchone()
            if up_to_seq > written:
                raise OutboxError(
                    f"outbox of {self.path}: acknowledgement of {up_to_seq} refused: the table "
                    f"has written only up to {written}; a jackpot controller ahead of the table "
                    "means a wrong table id, a replaced journal or a forged message: alarm"
                )
            if up_to_seq < acked:
                raise OutboxError(
                    f"outbox of {self.path}: acknowledgement of {up_to_seq} refused: {acked} was "
                    "already acknowledged (a late or replayed acknowledgement); nothing changed"
                )
            deleted = db.execute("DELETE FROM outbox WHERE seq <= ?", (up_to_seq,)).rowcount
            db.execute("UPDATE link SET acked = ? WHERE id = 1", (up_to_seq,))
            db.execute("COMMIT")
        except OutboxError:
            rollback(db)
            raise
        except sqlite3.Error as exc:
            rollback(db)
            raise JournalError(
                f"outbox of {self.path}: recording acknowledgement {up_to_seq} failed: {exc}; "
                "nothing changed (the jackpot controller will acknowledge again)"
            ) from exc
        return int(deleted)

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; safe to call twice."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> Outbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
