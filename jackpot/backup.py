"""Checked copies of the jackpot controller's ledger (``jackpot-controller backup``).

The copy itself is the table's: :func:`controller.backup.copy_database` (SQLite's online
backup API, integrity check, fsync, dated name, the newest ``keep`` kept); this module adds
what a ledger must hold. See docs/jackpot/controller.md ("Backups").
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from controller.backup import DEFAULT_KEEP, Backup, BackupError, check_integrity, copy_database
from jackpot.ledger import SCHEMA_VERSION
from jackpot.store import is_dsn, safe_location

__all__ = ["Backup", "BackupError", "backup_ledger", "verify_ledger"]


def verify_ledger(path: str | os.PathLike[str]) -> str:
    """Check that ``path`` is a whole jackpot ledger of a schema this software reads; return
    what it holds (schema, tables, applied messages, pools). Raises :class:`BackupError`."""
    path = Path(path)
    check_integrity(path)
    try:
        db = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            tables = db.execute("SELECT count(*) FROM tables").fetchone()[0]
            applied = db.execute("SELECT count(*) FROM applied").fetchone()[0]
            pools = db.execute("SELECT count(*) FROM meters").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise BackupError(f"{path} is not a jackpot ledger ({exc})") from None
    if row is None or not str(row[0]).isdigit() or not 1 <= int(row[0]) <= SCHEMA_VERSION:
        raise BackupError(
            f"{path} is not a jackpot ledger this software reads (schema {row and row[0]!r}, "
            f"reads 1 to {SCHEMA_VERSION})"
        )
    return f"schema {row[0]}, {tables} tables, {applied} messages applied, {pools} pools"


def backup_ledger(
    ledger: str | os.PathLike[str],
    folder: str | os.PathLike[str],
    keep: int = DEFAULT_KEEP,
    now: dt.datetime | None = None,
) -> Backup:
    """A checked copy of the jackpot controller's ledger (also while it runs) as
    ``folder/ledger-<UTC time>.sqlite``, keeping the newest ``keep`` copies. A PostgreSQL
    ledger is PostgreSQL's to back up (docs/jackpot/postgres.md, "Backups")."""
    if is_dsn(ledger):
        raise BackupError(
            f"{safe_location(ledger)} is a PostgreSQL ledger: back it up with PostgreSQL's "
            "tools (a streaming standby, pg_basebackup, pg_dump: docs/jackpot/postgres.md)"
        )
    return copy_database(Path(ledger), Path(folder), "ledger", keep, verify_ledger, now)
