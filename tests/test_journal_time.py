"""Time of day in the journal: UTC beside the table's clock, clock steps recorded, never
obeyed; older journals gain the columns and keep their rounds."""

from __future__ import annotations

import sqlite3

import pytest
from _journal_feeder import SETTINGS, session_events
from journal_versions import back_to_version_3

from controller.games import load_game
from controller.journal import CLOCK_STEP_MS, SCHEMA_VERSION, Journal, JournaledTable

START_UTC = 1_770_000_000_000  # 2026-02-02 02:40 UTC


class WallClock:
    """A wall clock that follows the events' table clock, plus an NTP ``step`` (ms) from a
    chosen event on."""

    def __init__(self) -> None:
        self.t = 0
        self.step = 0

    def __call__(self) -> int:
        return START_UTC + self.t + self.step


@pytest.fixture
def pa():
    return load_game("pa-standard")


def feed(path, rules, events, wall: WallClock, step_at: int | None = None, step_ms: int = 0):
    with JournaledTable(path, rules, SETTINGS, wall_clock=wall) as table:
        for number, event in enumerate(events):
            if number == step_at:
                wall.step = step_ms
            wall.t = event.t if event.t is not None else wall.t
            table.handle(event)
        return table.state


def rows(path, sql):
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_every_event_and_round_carries_its_utc_time(tmp_path, pa):
    path = tmp_path / "journal.sqlite"
    events = session_events("pa-standard", 5, 6)
    feed(path, pa, events, WallClock())
    utc = rows(path, "SELECT seq, utc_ms, json_extract(event, '$.t') FROM events ORDER BY seq")
    assert utc and all(u is not None for _, u, _ in utc)
    assert all(u == START_UTC + t for _, u, t in utc)  # no step: wall follows the table clock
    with Journal(path) as journal:
        records = journal.last_rounds(10)
        assert len(records) == 6
        for record in records:
            assert record["settled_utc_ms"] == START_UTC + record["settled_t"]
            assert START_UTC <= record["started_utc_ms"] <= record["settled_utc_ms"]
            assert record["clock_steps"] == []
        first, last = records[-1], records[0]
        found = journal.rounds_between(first["settled_utc_ms"], last["settled_utc_ms"])
        assert [r["round"] for r in found] == sorted(r["round"] for r in records)
        assert journal.rounds_between(0, START_UTC - 1) == []


@pytest.mark.parametrize("step_ms", [3_600_000, -90_000])
def test_a_clock_step_is_recorded_with_its_round_and_never_reorders_events(tmp_path, pa, step_ms):
    path = tmp_path / "journal.sqlite"
    events = session_events("pa-standard", 5, 6)
    plain = tmp_path / "plain.sqlite"
    at = len(events) // 2
    state = feed(path, pa, events, WallClock(), step_at=at, step_ms=step_ms)
    assert state == feed(plain, pa, events, WallClock())  # the wall clock decides nothing
    steps = rows(path, "SELECT seq, step_ms, utc_before, utc_after FROM clock_steps")
    assert len(steps) == 1
    seq, recorded, before, after = steps[0]
    assert recorded == step_ms and after - before == step_ms
    order = rows(path, "SELECT seq FROM events ORDER BY seq")
    assert order == rows(plain, "SELECT seq FROM events ORDER BY seq")  # same order, numbers
    with Journal(path) as journal:
        shown = [r for r in journal.last_rounds(10) if r["clock_steps"]]
        assert len(shown) == 1
        assert shown[0]["clock_steps"][0]["seq"] == seq
        assert shown[0]["clock_steps"][0]["step_ms"] == step_ms


def test_a_small_drift_is_not_a_step(tmp_path, pa):
    path = tmp_path / "journal.sqlite"
    events = session_events("pa-standard", 5, 3)
    feed(path, pa, events, WallClock(), step_at=len(events) // 2, step_ms=CLOCK_STEP_MS - 1)
    assert rows(path, "SELECT count(*) FROM clock_steps") == [(0,)]


def test_a_restart_is_not_a_clock_step(tmp_path, pa):
    """The table's clock restarts with each run (it continues above the journal's last
    time); the offset between the clocks changes at a restart without any step."""
    path = tmp_path / "journal.sqlite"
    events = session_events("pa-standard", 5, 4)
    half = len(events) // 2
    feed(path, pa, events[:half], WallClock())
    later = WallClock()
    later.step = 86_400_000  # the table was off for a day
    feed(path, pa, events[half:], later)
    assert rows(path, "SELECT count(*) FROM clock_steps") == [(0,)]


def test_a_version_3_journal_gains_time_columns_and_keeps_its_rounds(tmp_path, pa):
    path = tmp_path / "journal.sqlite"
    events = session_events("pa-standard", 5, 4)
    half = len(events) // 2
    feed(path, pa, events[:half], WallClock())
    back_to_version_3(path)
    with Journal(path) as old:  # read as it is, before any writer migrated it
        before = old.last_rounds(10)
        assert before and all(r["settled_utc_ms"] is None for r in before)
        assert old.rounds_between(0, 2**62) == []
    state = feed(path, pa, events[half:], WallClock())
    assert rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    with Journal(path) as journal:
        records = {r["round"]: r for r in journal.last_rounds(100)}
        for record in before:
            assert records[record["round"]]["settled_utc_ms"] is None  # unknown, not invented
        new = [r for r in records.values() if r["round"] > max(b["round"] for b in before)]
        assert new and all(r["settled_utc_ms"] is not None for r in new)
    with JournaledTable(path, pa, SETTINGS) as again:
        assert again.state == state
