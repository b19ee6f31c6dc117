"""What paused the jackpot controller's thread while a live contribution waited (issue 32):

- its SQLite ledger checkpoints its WAL on a thread of its own: no commit copies the WAL into
  the file (SQLite's automatic checkpoint did, inside the commit that crossed 1,000 pages: the
  live contribution that happened to cross it waited 2-10 ms more); the checkpointer does,
  after commits, and what was committed reads the same;
- with ``freeze_heap`` (as ``jackpot-controller`` runs it) the heap after start-up is frozen,
  so a full garbage collection no longer scans it (20-24 ms with every thread stopped).
"""

from __future__ import annotations

import gc
import os
import sqlite3
import time

from mqtt_broker import broker  # noqa: F401
from test_jackpot_service import service

from jackpot.store.sqlite import SQLiteStore

PAGE = 4096


def write(store: SQLiteStore, rows: int, start: int = 0) -> None:
    for i in range(start, start + rows):  # a transaction a row: a commit each, as the service
        store.begin_write()
        store.execute("INSERT INTO t VALUES (?, ?)", (i, os.urandom(PAGE)))
        store.commit()


def wal_frames(path) -> int:
    return os.path.getsize(f"{path}-wal") // (PAGE + 24)


def test_no_commit_checkpoints_and_the_checkpointer_copies_the_wal(tmp_path):
    path = tmp_path / "ledger.db"
    store = SQLiteStore(path, RuntimeError)
    try:
        store.script("CREATE TABLE t (n INTEGER PRIMARY KEY, blob BLOB NOT NULL);")
        store.checkpoint_apart(every_s=3600)  # it never gets round to it in this part
        size = os.path.getsize(path)
        write(store, 1500)  # more than SQLite's automatic checkpoint's 1,000 pages
        assert os.path.getsize(path) == size  # no commit copied anything into the file
        assert wal_frames(path) > 1500
        assert store.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    finally:
        store.close()  # stops the thread (it was waiting)
    store = SQLiteStore(path, RuntimeError)
    try:
        store.checkpoint_apart(every_s=0.05)
        checkpointer = store._checkpointer
        write(store, 10, start=1500)
        deadline = time.monotonic() + 10
        while checkpointer.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert checkpointer.runs >= 1 and checkpointer.failures == 0
        assert os.path.getsize(path) > 1500 * PAGE  # the rows are in the file now
        thread = checkpointer._thread
    finally:
        store.close()
    assert not thread.is_alive()
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT COUNT(*), MAX(n) FROM t").fetchone() == (1510, 1509)
    finally:
        db.close()


def test_a_ledger_without_the_checkpointer_keeps_sqlites_automatic_checkpoint(tmp_path):
    """Only the service asks for it (``Ledger.checkpoint_apart``): the command line's and the
    reports' connections are as before."""
    store = SQLiteStore(tmp_path / "ledger.db", RuntimeError)
    try:
        assert store.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert store._checkpointer is None
    finally:
        store.close()


def test_the_service_checkpoints_apart_and_freezes_its_start_up_heap(tmp_path, broker):  # noqa: F811
    gc.unfreeze()
    svc = service(broker, tmp_path / "plain.db")
    try:
        assert gc.get_freeze_count() == 0  # the default: the process's heap is not its own
        assert svc._ledger._db._checkpointer is not None  # the service's ledger, always
    finally:
        svc.close()
    svc = service(broker, tmp_path / "frozen.db", freeze_heap=True)
    try:
        assert gc.get_freeze_count() > 0  # online: start-up done, its heap frozen
    finally:
        svc.close()
        gc.unfreeze()
