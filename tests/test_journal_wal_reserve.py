"""The WAL file grown before the first event (issue 32 item 4): written through SQLite (a
rolled-back transaction's spilled pages), nothing committed, and no later commit grows it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from _journal_feeder import SETTINGS, session_events
from test_journal_prompt_path import rows_digest

from controller.games import load_game
from controller.journal import JournaledTable
from controller.journal.file import Journal

SIZE = 1 << 20


def wal_size(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_reserve_grows_the_wal_and_commits_nothing(tmp_path: Path):
    path = tmp_path / "journal.db"
    events = session_events("pa-standard", 7, 3)
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:
        for event in events[: len(events) // 2]:
            table.handle(event)
    before = rows_digest(path)
    with Journal(path, game="pa-standard", settings=SETTINGS) as journal:
        reader = sqlite3.connect(path)
        version = reader.execute("PRAGMA data_version").fetchone()[0]
        cache = journal.db.execute("PRAGMA cache_size").fetchone()[0]
        size = journal.reserve_wal(SIZE)
        assert size == wal_size(path) >= SIZE
        assert not journal.db.in_transaction
        assert journal.db.execute("PRAGMA cache_size").fetchone()[0] == cache
        assert reader.execute("PRAGMA data_version").fetchone()[0] == version
        assert journal.reserve_wal(SIZE) == size  # already as big: nothing written
        reader.close()
    assert rows_digest(path) == before


def play(path: Path, events: list, *, reserve: bool) -> int:
    """Journal ``events``, the WAL checkpointed every 20 (as the loop does between rounds);
    with ``reserve``, the WAL reserved first and its size checked after every commit."""
    clock = iter(range(1_770_000_000_000, 1_780_000_000_000, 37))
    rules = load_game("pa-standard")
    with JournaledTable(path, rules, SETTINGS, wall_clock=lambda: next(clock)) as table:
        size = table.journal.reserve_wal(SIZE) if reserve else 0
        for n, event in enumerate(events, 1):
            table.handle(event)
            if reserve:
                assert wal_size(path) == size  # written inside it: no commit grew the file
            if n % 20 == 0:
                table.journal.checkpoint_wal()
        return table.journal.events_written


def test_commits_after_a_reserve_write_inside_it_and_recover(tmp_path: Path):
    path, plain = tmp_path / "journal.db", tmp_path / "plain.db"
    events = session_events("pa-standard", 7, 3)
    written = play(path, events, reserve=True)
    assert play(plain, events, reserve=False) == written
    assert rows_digest(path) == rows_digest(plain)  # the same rows, the same chain
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:  # recovery
        assert table.journal.events_written == written


def test_reserve_inside_a_transaction_leaves_it_alone(tmp_path: Path):
    path = tmp_path / "journal.db"
    with Journal(path, game="pa-standard", settings=SETTINGS) as journal:
        before = wal_size(path)
        journal.db.execute("BEGIN")
        assert journal.reserve_wal(SIZE) == before
        assert journal.db.in_transaction
        journal.db.execute("ROLLBACK")
