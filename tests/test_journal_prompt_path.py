"""The settling card's journal path (issue 32 item 4, fourth round): what the journal writes is
byte for byte what it wrote before the path was cut, and warming it up writes nothing.

The digests are of every row a journal holds for a seeded session (events, round records,
outbox, link, checkpoints, clock steps: their text, times and chain links), computed with the
code of main at 14b0e42, before :meth:`Journal.warm` and the cuts of this round. The feeder's
sessions come from the table's own machine: a change of the pure core's output (another
issue's) changes them too, and is then checked by ``tests/test_table_replay_golden.py``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events

from controller.games import load_game
from controller.journal import JournaledTable
from controller.journal.file import Journal
from controller.journal.store import dumps

GOLDEN = {
    # game: digest of the rows (seed 7, 25 rounds, checkpoints every 50 events)
    "pa-standard": "53d3c71eafef4f5b262b56b99443442faca3d5baeb1bcc06e585278bf14f6abd",
    "double-up": "bfcce417bd0b1d10cbbba74b3cdbdd9786465e45f85368f456f7bbf46dc48b53",
    "blackjack-tie": "ac44ddf69597909ca88222e0b55ae678e0768c1c2f7abd8ec55e9ec69eab5ced",
}

ROWS = (
    "SELECT seq, round, event, accepted, utc_ms, chain FROM events ORDER BY seq",
    "SELECT round, seq, record, started_utc_ms, utc_ms, chain FROM rounds ORDER BY round",
    "SELECT seq, event, kind, key, payload FROM outbox ORDER BY seq",
    "SELECT written, acked FROM link",
    "SELECT seq, version, outbox_written, state FROM checkpoints ORDER BY seq",
    "SELECT seq, step_ms, utc_before, utc_after FROM clock_steps ORDER BY seq",
)


def rows_digest(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        digest = hashlib.sha256()
        for sql in ROWS:
            for row in db.execute(sql):
                digest.update(repr(row).encode())
        return digest.hexdigest()
    finally:
        db.close()


def play(path: Path, game: str, *, warm: bool, rounds: int = 25) -> None:
    events = session_events(game, 7, rounds)
    clock = iter(range(1_770_000_000_000, 1_780_000_000_000, 37))
    with JournaledTable(
        path, load_game(game), SETTINGS, checkpoint_every=50, wall_clock=lambda: next(clock)
    ) as table:
        if warm:
            table.journal.warm()
        for event in events:
            table.handle(event)
            if warm and table.journal.events_written == 40:
                table.journal.warm()  # between events too: still nothing written


@pytest.mark.parametrize("game", sorted(GOLDEN))
@pytest.mark.parametrize("warm", [False, True])
def test_rows_and_chain_are_byte_for_byte_as_before(tmp_path: Path, game: str, warm: bool):
    path = tmp_path / "journal.db"
    play(path, game, warm=warm)
    assert rows_digest(path) == GOLDEN[game]
    with JournaledTable(path, load_game(game), SETTINGS) as table:  # recovery and the chain
        assert table.recovered > 0


def test_warm_writes_nothing(tmp_path: Path):
    path = tmp_path / "journal.db"
    play(path, "pa-standard", warm=False, rounds=2)
    before = rows_digest(path)
    wal = Path(f"{path}-wal")
    size = wal.stat().st_size if wal.exists() else 0
    with Journal(path, game="pa-standard", settings=SETTINGS) as journal:
        written, head = journal.events_written, journal.chain_head
        reader = sqlite3.connect(path)
        version = reader.execute("PRAGMA data_version").fetchone()[0]
        size = wal.stat().st_size
        journal.warm()
        assert not journal.db.in_transaction
        assert (journal.events_written, journal.chain_head) == (written, head)
        assert (journal.encoded_ns, journal.commit_ns) == (0, 0)
        assert reader.execute("PRAGMA data_version").fetchone()[0] == version
        assert wal.stat().st_size == size
        reader.close()
    assert rows_digest(path) == before


def test_warm_inside_a_transaction_leaves_it_alone(tmp_path: Path):
    path = tmp_path / "journal.db"
    with Journal(path, game="pa-standard", settings=SETTINGS) as journal:
        journal.db.execute("BEGIN")
        journal.warm()
        assert journal.db.in_transaction
        journal.db.execute("ROLLBACK")


def test_warm_runs_every_statement_of_a_settling_event_and_commits_none(tmp_path: Path):
    """What ``warm`` runs (SQLite's trace of the statements): the inserts of a settling event
    and of the checkpoint after it, each transaction rolled back."""
    path = tmp_path / "journal.db"
    with Journal(path, game="pa-standard", settings=SETTINGS) as journal:
        journal.warm()
        seen: list[str] = []
        journal.db.set_trace_callback(seen.append)
        journal.warm(times=1)
        journal.db.set_trace_callback(None)
    text = "\n".join(seen)
    for table in ("events", "rounds", "outbox", "checkpoints", "clock_steps"):
        assert f"INSERT INTO {table}" in text
    assert "ROLLBACK" in text and "COMMIT" not in text


def test_the_round_results_payload_row_is_its_records_result_with_the_chain(tmp_path: Path):
    path = tmp_path / "journal.db"
    play(path, "pa-standard", warm=False, rounds=3)
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT r.record, r.chain, o.payload FROM rounds r JOIN outbox o"
        " ON o.key = 'round-' || r.round || '/result'"
    ).fetchall()
    db.close()
    assert len(rows) == 3
    for record, link, payload in rows:
        result = json.loads(record)["result"]
        assert payload == dumps({**result, "chain": link})


def test_an_append_stamps_its_stages_in_order_and_warm_keeps_them(tmp_path: Path):
    """The trace's stages of an append (issue 32, goal 4): rows encoded, ``BEGIN IMMEDIATE``
    returned (the write lock held), COMMIT begun; ``warm`` leaves the last append's stamps."""
    path = tmp_path / "journal.db"
    events = session_events("pa-standard", 7, 1)
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:
        table.handle(events[0])
        journal = table.journal
        stages = (journal.encoded_ns, journal.begun_ns, journal.commit_ns)
        assert 0 < stages[0] <= stages[1] <= stages[2]
        assert table.stamps["begun_ns"] == stages[1]
        journal.warm()
        assert (journal.encoded_ns, journal.begun_ns, journal.commit_ns) == stages
