"""Who did what on the table: the audit list (issue 28 item 1).

58 Pa. Code 605a.4(d)(4) and GLI-24 2.3 ask that the actions of named personnel be logged. Every
login, failed login and logout on the diagnostics page, every privileged action there
(allowed or refused), and every privileged command on the Pi (``user ...``, ``restore``,
``journal-set-aside``, ``link-key --config``) and each start of the service with a config whose
digest changed is one row of ``DATA_DIR/audit.sqlite``: the UTC time, the account, its role,
the action, what it was done to, the outcome (``ok``, ``refused``) and a detail in fixed words.

The audit list is a file of its own, beside the journal: a ``restore`` or a set-aside replaces
the journal, never the record of who did it. Each row is committed with ``synchronous=FULL``
before the action's answer. The file uses a rollback journal (no ``-wal`` file), so a command
run as root leaves nothing the service cannot open; a file root creates is given to the data
folder's owner.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

AUDIT_NAME = "audit.sqlite"
DETAIL_MAX = 240

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY,
    utc_ms INTEGER NOT NULL,
    account TEXT NOT NULL,
    role TEXT NOT NULL,
    action TEXT NOT NULL,
    object TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'refused')),
    detail TEXT NOT NULL,
    source TEXT NOT NULL
)
"""


def _printable(text: object, limit: int = DETAIL_MAX) -> str:
    """Printable ASCII, cut to ``limit``: a typed name or a detail never carries control
    characters into the page or the log."""
    out = "".join(c if 32 <= ord(c) < 127 else "?" for c in str(text))
    return out if len(out) <= limit else out[: limit - 3] + "..."


def command_line_account() -> str:
    """Who runs a command on the Pi: the account that ran ``sudo`` (``SUDO_USER``), else
    the effective user; the shell login on the Pi is the named person."""
    user = os.environ.get("SUDO_USER")
    if user:
        return _printable(user, 64)
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"


class AuditLog:
    """The audit list at ``path`` (``DATA_DIR/audit.sqlite``). Any thread, any process: each
    call opens its own connection. ``clock()``: UTC seconds."""

    def __init__(self, path: str | os.PathLike[str], clock: Callable[[], float] = time.time):
        self.path = Path(path)
        self.clock = clock
        fresh = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(_SCHEMA)
        if fresh and os.geteuid() == 0:  # made by a root command: the service must write it
            folder = os.stat(self.path.parent)
            with contextlib.suppress(OSError):
                os.chown(self.path, folder.st_uid, folder.st_gid)
                os.chmod(self.path, 0o640)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("PRAGMA synchronous=FULL")
        return db

    def record(
        self,
        account: str,
        action: str,
        outcome: str = "ok",
        *,
        role: str = "",
        object: str = "",
        detail: str = "",
        source: str = "",
    ) -> int:
        """One row, committed before this returns; its id."""
        row = (
            int(self.clock() * 1000),
            _printable(account, 64) or "-",
            role,
            action,
            _printable(object, 120),
            outcome,
            _printable(detail),
            _printable(source, 80),
        )
        db = self._connect()
        try:
            cur = db.execute(
                "INSERT INTO audit (utc_ms, account, role, action, object, outcome, detail, "
                "source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            return int(cur.lastrowid or 0)
        finally:
            db.close()

    def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` rows, newest first."""
        db = self._connect()
        try:
            db.row_factory = sqlite3.Row
            rows = db.execute("SELECT * FROM audit ORDER BY id DESC LIMIT ?", (limit,))
            return [dict(r) for r in rows]
        finally:
            db.close()

    def last(self, action: str) -> dict[str, Any] | None:
        db = self._connect()
        try:
            db.row_factory = sqlite3.Row
            row = db.execute(
                "SELECT * FROM audit WHERE action = ? ORDER BY id DESC LIMIT 1", (action,)
            ).fetchone()
            return None if row is None else dict(row)
        finally:
            db.close()


def record_start(audit: AuditLog, config_source: str, checksum: str) -> bool:
    """The service's start with its config's digest; a ``config_changed`` row too when the
    digest differs from the last start's. Returns whether it changed."""
    before = audit.last("service_start")
    changed = before is not None and before["object"] != checksum
    if changed:
        audit.record(
            "(config file)",
            "config_changed",
            object=checksum,
            detail=f"{config_source}: sha256 {before['object'][:12]} at the last start, "
            f"{checksum[:12]} now",
            source="table-controller run",
        )
    audit.record(
        "table-controller",
        "service_start",
        object=checksum,
        detail=f"config {config_source}",
        source="table-controller run",
    )
    return changed
