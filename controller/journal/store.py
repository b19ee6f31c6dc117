"""The journal file's lowest layer: how it is opened, and the constants of its format.

Every connection to a journal (the table's, the outbox publisher's, a reader's) is made by
:func:`connect`: WAL, ``synchronous = FULL`` and foreign keys on, so that a commit is on
disk when it returns. Nothing here knows the table or the outbox.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from controller.errors import JournalError
from controller.json_text import compact

SCHEMA_VERSION = 6
"""``PRAGMA user_version`` of the journals this code writes and reads. Versions 1 (no
outbox), 2 (no ``award_confirm`` kind), 3 (no UTC times, no origin, outbox rows tied to
events in the same file), 4 (no ``event`` kind) and 5 (no hash chain) are still read, and
migrated when a table controller opens them to write."""

FORMAT = "table-controller journal"

WHAT_TO_DO = (
    "check the journal's disk (full? read-only? failing SD card?) and repeat the event; "
    "if it fails again stop the game and call a technician"
)


def dumps(data: Any) -> str:
    """Compact JSON, as every row of the journal stores it: byte for byte ``json.dumps(data,
    separators=(",", ":"), ensure_ascii=False)``, written by orjson where that is the same
    (:func:`controller.json_text.compact`: a settled round's record in 25 us, not 180)."""
    return compact(data)


def connect(path: Path, *, create: bool, busy_timeout_ms: int) -> sqlite3.Connection:
    """A connection to the journal at ``path`` (made if ``create``): WAL, ``synchronous =
    FULL``, foreign keys on. A read-only file (a retained gaming-day file, which is not in
    WAL mode) is opened read-only, as it is."""
    if not create and path.is_file() and not path.stat().st_mode & 0o222:  # as root too
        return _connect_read_only(path)
    uri = f"file:{quote(str(path.absolute()))}?mode={'rwc' if create else 'rw'}"
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=busy_timeout_ms / 1000)
    except sqlite3.Error as exc:
        raise JournalError(
            f"cannot open journal {path}: {exc}; check the path and its permissions"
        ) from None
    try:
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        db.close()
        raise JournalError(
            f"cannot open journal {path}: {exc}; check the path and its permissions"
        ) from None
    if str(mode).lower() != "wal":
        db.close()
        raise JournalError(
            f"journal {path}: the file system does not support SQLite's WAL mode (got "
            f"{mode!r}); put the journal on a local disk"
        )
    return db


def _connect_read_only(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None)
        db.execute("PRAGMA schema_version").fetchone()
    except sqlite3.Error as exc:
        raise JournalError(
            f"cannot open the read-only journal {path}: {exc}; check the path"
        ) from None
    return db


def fsync_path(path: str | os.PathLike[str]) -> None:
    """fsync a file, or a folder (so that a rename or a new name in it is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rollback(db: sqlite3.Connection) -> None:
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
