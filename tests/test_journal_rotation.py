"""Gaming-day files (issue 17, item 3), unit by unit on real SQLite files: a rotation keeps the
table, writes a read-only archive of the day that the live file's origin names by SHA-256,
leaves the outbox and the link as they were, and the sequence carries on; retention removes
only old archives whose messages were all acknowledged; the gaming day follows the casino's
zone across midnight and daylight saving time."""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
import stat
from datetime import UTC, date, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import Journal, JournaledTable
from controller.journal.outbox import Outbox
from controller.journal.rotation import (
    GamingDay,
    RotationDeferred,
    archived_info,
    archives,
    due,
    remove_partials,
    rotate,
)
from controller.table import Table
from controller.table.state import IN_PROGRESS, Phase

GAME = "pa-standard"
DAY_MS = 86_400_000


def utc(*when: int) -> int:
    """UTC milliseconds of a UTC date and time (year, month, day, hour, minute)."""
    return int(datetime(*when, tzinfo=UTC).timestamp() * 1000)


def noon(day: str) -> int:
    return utc(*date.fromisoformat(day).timetuple()[:3], 12)


def day_after(day: str, n: int = 1) -> str:
    return (date.fromisoformat(day) + timedelta(days=n)).isoformat()


@pytest.fixture
def rules():
    return load_game(GAME)


@pytest.fixture
def events():
    return session_events(GAME, 17, 12)


def feed_to_round(table: JournaledTable, events, fed: int, number: int) -> int:
    """Feed ``events`` from index ``fed`` until round ``number`` is open for bets (the
    round before ended); return the new index."""
    while table.state.round_number < number:
        table.handle(events[fed])
        fed += 1
    return fed


def file_events(path: Path) -> list[tuple[int, dict, bool]]:
    with Journal(path) as journal:
        return [(e.seq, e.event, e.accepted) for e in journal.entries()]


def link(path: Path) -> tuple[int, int, int, list[tuple[int, str]]]:
    with Outbox(path) as outbox:
        rows = [(row.seq, row.key) for row in outbox.pending()]
        return outbox.boot, outbox.last_written(), outbox.last_acknowledged(), rows


def plain_journal(tmp_path: Path, rules, events, wall_clock=None) -> Path:
    """The same events journaled without any rotation: what the files must hold."""
    path = tmp_path / "plain" / "journal.sqlite"
    path.parent.mkdir()
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=40, wall_clock=wall_clock) as table:
        for event in events:
            table.handle(event)
    return path


def outbox_of(path: Path) -> dict[int, tuple[str, dict]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT seq, key, payload FROM outbox ORDER BY seq").fetchall()
    finally:
        db.close()
    return {seq: (key, payload) for seq, key, payload in rows}


def test_rotation_keeps_the_table_and_the_session_carries_on_as_without_it(tmp_path, rules, events):
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=40) as table:
        fed = feed_to_round(table, events, 0, 4)
        before = table.state
        written = table.journal.events_written
        done = rotate(table, "2026-01-02", utc_ms=noon("2026-01-02"))
        assert table.state == before and table.state.round_number == 4
        assert (done.first_event, done.last_event, done.gaming_day) == (1, written, "2026-01-02")
        # a file never given a gaming day is archived under the day it rotates into
        assert done.archive == path.with_name(f"journal.sqlite.2026-01-02.{1:09d}")
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=40) as table:
        # recovery after the rotation is the state before it, from the origin, nothing replayed
        assert table.state == before
        assert table.recovered == written
        assert (table.recovery.checkpoint, table.recovery.replayed) == (written, 0)
        for event in events[fed:]:
            table.handle(event)
        final = table.state
    reference = Table(rules, SETTINGS)
    with Journal(plain_journal(tmp_path, rules, events)) as plain:
        reference.run(plain.events())
        plain_rows = [(e.seq, e.event, e.accepted) for e in plain.entries()]
    assert final == reference.state
    with JournaledTable(path, rules, SETTINGS) as again:
        assert again.state == reference.state
    # the archive and the live file together hold every event once, in order
    (archive,) = archives(path)
    assert file_events(archive.path) + file_events(path) == plain_rows


def test_the_archive_is_read_only_not_wal_marked_archived_and_holds_its_day(
    tmp_path, rules, events
):
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=40) as table:
        due(table.journal, GamingDay(dt_time(6), "UTC"), noon("2026-01-01"))  # the file's day
        feed_to_round(table, events, 0, 5)
        last = table.journal.events_written
        rounds = table.journal.last_rounds(100)
        done = rotate(table, "2026-01-02", utc_ms=noon("2026-01-02"), reason="on demand")
        origin = table.journal.origin()
        assert archived_info(table.journal) is None
        assert table.journal.last_rounds(100) == []  # the day's rounds went with the archive
        assert table.journal.round_record(1) is None
    target = path.with_name(f"journal.sqlite.2026-01-01.{1:09d}")
    assert done.archive == target and target.is_file()
    assert [(a.path, a.gaming_day, a.first_event) for a in archives(path)] == [
        (target, date(2026, 1, 1), 1)
    ]
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
    header = target.read_bytes()[:100]
    assert header[18:20] == b"\x01\x01", "the archive is in WAL mode"
    assert not target.with_name(target.name + "-wal").exists()
    # the live file names the archive and its SHA-256, which is the file's
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    assert (
        (origin.previous, origin.previous_sha256)
        == (target.name, digest)
        == (
            target.name,
            done.sha256,
        )
    )
    assert (origin.seq, origin.reason) == (last, "on demand")
    with Journal(target) as archive:
        info = archived_info(archive)
        assert info["gaming_day"] == "2026-01-01" and info["reason"] == "on demand"
        assert (info["first_event"], info["last_event"]) == (1, last)
        assert info["archived_utc_ms"] == noon("2026-01-02") and info["software"]
        assert archive.events_written == last
        assert archive.last_rounds(100) == rounds  # recall reads the day's rounds there
        assert [r["round"] for r in rounds] == [4, 3, 2, 1]
        assert archive.db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            archive.db.execute("DELETE FROM events")
    # reading it changed nothing (as root too: the file's mode decides, not access())
    assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
    assert not target.with_name(target.name + "-wal").exists()


def test_the_outbox_and_the_link_carry_on_untouched(tmp_path, rules, events):
    path = tmp_path / "journal.sqlite"
    # the same wall clock for both: each round_result carries the hash chain (issue 29), which
    # covers the UTC times, and must come out the same with a rotation in between
    clock = [itertools.count(1_770_000_000_000, 1000).__next__ for _ in range(2)]
    reference = outbox_of(plain_journal(tmp_path, rules, events, clock[0]))
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=40, wall_clock=clock[1]) as table:
        fed = feed_to_round(table, events, 0, 4)
        with Outbox(path) as outbox:
            outbox.acknowledge(outbox.last_written() - 3)  # three still pending
        before = link(path)
        assert len(before[3]) == 3
        rotate(table, "2026-01-02", utc_ms=noon("2026-01-02"))
        assert link(path) == before  # same boot, written, acked and pending messages
        origin = table.journal.origin()
        assert origin.written == before[1]
        for event in events[fed:]:
            table.handle(event)
    with JournaledTable(path, rules, SETTINGS) as table:
        boot, written, acked, pending = link(path)
        assert boot == before[0] + 1 and acked == before[2]
        # the sequence carries on: no gap, no reuse, every message as the plain journal has it
        assert [seq for seq, _ in pending] == list(range(acked + 1, written + 1))
        assert written == max(reference)
        assert {seq: reference[seq][0] for seq, _ in pending} == dict(pending)
        assert outbox_of(path) == {seq: reference[seq] for seq in range(acked + 1, written + 1)}
        # the archive keeps its own copy of what was pending then, the same messages
        (archive,) = archives(path)
        assert outbox_of(archive.path) == {seq: reference[seq] for seq, _ in before[3]}
        # and acknowledgements go on across the files
        with Outbox(path) as outbox:
            assert outbox.acknowledge(written) == written - acked
            assert outbox.depth() == 0
        assert table.journal.events_written == len(file_events(archive.path)) + len(
            file_events(path)
        )


def test_rotation_is_deferred_while_a_round_is_in_progress(tmp_path, rules, events):
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, rules, SETTINGS) as table:
        table.journal.set_meta("gaming_day", "2026-01-01")
        fed = feed_to_round(table, events, 0, 3)
        while table.state.phase not in IN_PROGRESS:
            table.handle(events[fed])
            fed += 1
        written = table.journal.events_written
        with pytest.raises(RotationDeferred, match="round 3 is in progress") as caught:
            rotate(table, "2026-01-02", utc_ms=noon("2026-01-02"))
        assert isinstance(caught.value, JournalError)
        assert archives(path) == [] and list(tmp_path.glob("*.part")) == []
        assert table.journal.meta()["gaming_day"] == "2026-01-01"
        assert table.journal.origin() is None and table.journal.events_written == written
        while table.state.phase is not Phase.SETTLED:  # settled: the dealer pays and collects
            table.handle(events[fed])
            fed += 1
        done = rotate(table, "2026-01-02", utc_ms=noon("2026-01-02"))
        assert done.last_event == table.journal.events_written
        assert done.archive is not None and table.journal.round_record(3) is None
        feed_to_round(table, events, fed, 4)  # end round, in the new file
    with JournaledTable(path, rules, SETTINGS) as table:
        assert table.state.round_number == 4
        with Journal(done.archive) as archive:
            assert archive.round_record(3)["round"] == 3


def days_of_files(tmp_path, rules, events, days: int) -> tuple[Path, JournaledTable, list, int]:
    """A journal rotated each day from 2026-01-01 to day ``days``, two rounds a day; the
    table stays open; also the outbox's ``written`` of each archive, oldest first, and the
    events fed."""
    path = tmp_path / "journal.sqlite"
    table = JournaledTable(path, rules, SETTINGS, checkpoint_every=40)
    table.journal.set_meta("gaming_day", "2026-01-01")
    fed = 0
    written = []
    for n in range(1, days):
        fed = feed_to_round(table, events, fed, 2 * n + 1)
        written.append(table.journal.outbox_rows()[0])
        rotate(table, day_after("2026-01-01", n), utc_ms=noon(day_after("2026-01-01", n)))
    return path, table, written, fed


def test_retention_removes_only_old_archives_whose_messages_were_acknowledged(
    tmp_path, rules, events
):
    path, table, written, fed = days_of_files(tmp_path, rules, events, 5)  # 01-01..01-04
    try:
        feed_to_round(table, events, fed, 10)  # a round on 01-05
        assert [a.gaming_day.day for a in archives(path)] == [1, 2, 3, 4]
        assert written == sorted(written) and written[0] > 0
        with Outbox(path) as outbox:
            outbox.acknowledge(written[0])  # all that the first day's file holds
        # 01-06 with 2 days kept: 01-01 to 01-03 are old; 01-02 and 01-03 hold messages the
        # jackpot controller has not acknowledged
        done = rotate(table, "2026-01-06", keep_days=2, utc_ms=noon("2026-01-06"))
        assert done.removed == (path.with_name(f"journal.sqlite.2026-01-01.{1:09d}"),)
        assert [a.gaming_day.day for a in archives(path)] == [2, 3, 4, 5]
        with Outbox(path) as outbox:
            outbox.acknowledge(outbox.last_written())  # everything
        assert rotate(table, "2026-01-07", utc_ms=noon("2026-01-07")).removed == ()  # keep all
        done = rotate(table, "2026-01-07", keep_days=2, utc_ms=noon("2026-01-07"))
        assert done.archive is None  # nothing since the last rotation: only retention ran
        assert [a.gaming_day.day for a in archives(path)] == [5]  # 01-05 is within 2 days
        assert {p.name[-20:-10] for p in done.removed} == {"2026-01-02", "2026-01-03", "2026-01-04"}
        # the live file still recovers, its origin names an archive that is kept
        assert table.journal.origin().previous == archives(path)[-1].path.name
    finally:
        table.close()
    with JournaledTable(path, rules, SETTINGS) as again:
        assert again.state.round_number == 10


def test_an_archive_holding_an_unacknowledged_message_is_never_removed(tmp_path, rules, events):
    path, table, written, fed = days_of_files(tmp_path, rules, events, 4)
    feed_to_round(table, events, fed, 8)
    try:
        with Outbox(path) as outbox:
            outbox.acknowledge(written[0] - 1)  # one message of the first day is not
        done = rotate(table, "2026-02-01", keep_days=1, utc_ms=noon("2026-02-01"))
        assert done.removed == ()  # and so are the newer ones
        assert [a.gaming_day.day for a in archives(path)] == [1, 2, 3, 4]
        with Outbox(path) as outbox:
            outbox.acknowledge(written[1])
        done = rotate(table, "2026-02-02", keep_days=1, utc_ms=noon("2026-02-02"))
        assert [a.gaming_day.day for a in archives(path)] == [3, 4]
        assert len(done.removed) == 2
    finally:
        table.close()


def test_remove_partials_removes_only_what_a_killed_rotation_left(tmp_path, rules, events):
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, rules, SETTINGS) as table:
        table.journal.set_meta("gaming_day", "2026-01-01")
        fed = feed_to_round(table, events, 0, 3)
        rotate(table, "2026-01-02", utc_ms=noon("2026-01-02"))
        feed_to_round(table, events, fed, 4)
        (kept,) = archives(path)
        # what a kill leaves: a half-written archive (a hot rollback journal beside it) and a
        # half-written set-aside file with its WAL
        part = path.with_name(f"journal.sqlite.2026-01-02.{kept.path.stat().st_size:09d}.part")
        leftovers = [
            part,
            part.with_name(part.name + "-journal"),
            path.with_name("journal.sqlite.new.part"),
            path.with_name("journal.sqlite.new.part-wal"),
            path.with_name("journal.sqlite.new.part-shm"),
            path.with_name("journal.sqlite.new.part.lock"),
        ]
        for leftover in leftovers:
            leftover.write_bytes(b"half")
        other = tmp_path / "other.sqlite.2026-01-01.000000001.part"
        other.write_bytes(b"another journal's")
        removed = remove_partials(path)
        assert sorted(removed) == sorted([part, path.with_name("journal.sqlite.new.part")])
        assert not any(p.exists() for p in leftovers)
        assert other.exists() and kept.path.exists() and path.exists()
        assert path.with_name("journal.sqlite.lock").exists()
        # a rotation over a stale part of its own name writes the archive whole
        target = path.with_name(f"journal.sqlite.2026-01-02.{kept.path.name[-9:]}")
        stale = path.with_name(f"journal.sqlite.2026-01-02.{table.journal.first_event():09d}")
        for name in (".part", ".part-journal"):
            stale.with_name(stale.name + name).write_bytes(b"x" * 4096)
        done = rotate(table, "2026-01-03", utc_ms=noon("2026-01-03"))
        assert done.archive == stale and target != stale
        assert not stale.with_name(stale.name + ".part-journal").exists()
        with Journal(done.archive) as archive:
            assert archive.events_written == done.last_event
            assert archived_info(archive)["first_event"] == done.first_event


def test_rotating_twice_in_a_row_changes_only_the_day(tmp_path, rules, events):
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=40) as table:
        table.journal.set_meta("gaming_day", "2026-01-01")
        fed = feed_to_round(table, events, 0, 3)
        first = rotate(table, "2026-01-02", utc_ms=noon("2026-01-02"))
        origin = table.journal.origin()
        before = link(path)
        second = rotate(table, "2026-01-03", utc_ms=noon("2026-01-03"))
        assert second.archive is None and second.sha256 is None
        assert (second.first_event, second.last_event) == (first.last_event + 1, first.last_event)
        assert table.journal.meta()["gaming_day"] == "2026-01-03"
        assert table.journal.origin() == origin and link(path) == before
        assert len(archives(path)) == 1
        # and the next events follow on, numbered after the archive's
        feed_to_round(table, events, fed, 4)
        third = rotate(table, "2026-01-04", utc_ms=noon("2026-01-04"))
        assert third.first_event == first.last_event + 1
        assert third.archive.name == f"journal.sqlite.2026-01-03.{third.first_event:09d}"
        seqs = [seq for seq, _, _ in file_events(third.archive)]
        assert seqs == list(range(third.first_event, third.last_event + 1))
    with JournaledTable(path, rules, SETTINGS) as again:
        assert again.state.round_number == 4
        assert again.journal.events_written == third.last_event


# -- the gaming day ----------------------------------------------------------------------


def test_due_starts_a_new_file_on_its_day_and_rotates_at_the_next(tmp_path, rules):
    path = tmp_path / "journal.sqlite"
    vegas = GamingDay(dt_time(6, 0), "America/New_York")
    with JournaledTable(path, rules, SETTINGS) as table:
        journal = table.journal
        # 2026-01-10 at 05:59 in New York (EST, UTC-5) still belongs to the 9th
        assert due(journal, vegas, utc(2026, 1, 10, 10, 59)) is None  # new: given its day
        assert journal.meta()["gaming_day"] == "2026-01-09"
        assert due(journal, vegas, utc(2026, 1, 10, 4, 0)) is None  # 23:00 on the 9th
        assert due(journal, vegas, utc(2026, 1, 10, 10, 59, 59)) is None
        assert due(journal, vegas, utc(2026, 1, 10, 11, 0)) == "2026-01-10"  # 06:00
        assert due(journal, vegas, utc(2026, 1, 13, 15, 0)) == "2026-01-13"  # closed 3 days
        assert due(journal, vegas, utc(2026, 1, 8, 15, 0)) is None  # the clock went back
        assert journal.meta()["gaming_day"] == "2026-01-09"  # due() only says so
        rotate(table, "2026-01-13", utc_ms=utc(2026, 1, 13, 15, 0))
        assert due(journal, vegas, utc(2026, 1, 13, 23, 0)) is None
        assert due(journal, vegas, utc(2026, 1, 14, 10, 59)) is None  # 05:59 on the 14th
        assert due(journal, vegas, utc(2026, 1, 14, 11, 0)) == "2026-01-14"


def test_the_gaming_day_across_daylight_saving_time():
    day = GamingDay(dt_time(6, 0), "America/New_York")
    # spring forward, 2026-03-08: 06:00 is EDT (UTC-4): a day of 23 hours
    assert day.of(utc(2026, 3, 7, 11, 0)) == date(2026, 3, 7)  # 06:00 EST
    assert day.of(utc(2026, 3, 8, 9, 59)) == date(2026, 3, 7)  # 05:59 EDT
    assert day.of(utc(2026, 3, 8, 10, 0)) == date(2026, 3, 8)
    assert day.local(utc(2026, 3, 8, 10, 0)).utcoffset() == timedelta(hours=-4)
    # fall back, 2026-11-01: 06:00 is EST (UTC-5): a day of 25 hours
    assert day.of(utc(2026, 11, 1, 10, 59)) == date(2026, 10, 31)  # 05:59 EST
    assert day.of(utc(2026, 11, 1, 11, 0)) == date(2026, 11, 1)
    # a day that starts in the repeated hour starts at its first 01:30 and never goes back
    early = GamingDay(dt_time(1, 30), "America/New_York")
    assert early.of(utc(2026, 11, 1, 5, 29)) == date(2026, 10, 31)  # 01:29 EDT
    assert early.of(utc(2026, 11, 1, 5, 30)) == date(2026, 11, 1)  # 01:30 EDT
    assert early.of(utc(2026, 11, 1, 6, 15)) == date(2026, 11, 1)  # 01:15 EST, an hour later
    # a day that starts in the skipped hour (02:30 on 2026-03-08) starts an hour later
    skipped = GamingDay(dt_time(2, 30), "America/New_York")
    assert skipped.of(utc(2026, 3, 8, 7, 29)) == date(2026, 3, 7)  # 03:29 EDT
    assert skipped.of(utc(2026, 3, 8, 7, 30)) == date(2026, 3, 8)  # 03:30 EDT
    assert GamingDay(dt_time(6, 0), "UTC").of(utc(2026, 3, 8, 5, 59)) == date(2026, 3, 7)


@pytest.mark.parametrize("starts", [dt_time(0, 0), dt_time(1, 30), dt_time(2, 30), dt_time(6)])
def test_the_gaming_day_never_goes_back_and_skips_no_day_over_a_year(starts):
    day = GamingDay(starts, "America/New_York")
    previous = day.of(utc(2026, 1, 1, 0, 0))
    for quarter in range(1, 366 * 24 * 4):
        now = day.of(utc(2026, 1, 1, 0, 0) + quarter * 900_000)
        assert now in (previous, previous + timedelta(days=1)), (quarter, previous, now)
        previous = now
    assert previous == date(2027, 1, 1)  # 18:45 on 2027-01-01 in New York


def test_an_unknown_zone_is_refused_by_name():
    with pytest.raises(JournalError, match="'Mars/Olympus' is not known"):
        GamingDay(dt_time(6), "Mars/Olympus")


@pytest.mark.parametrize("threshold, shrinks", [(0, True), (None, False)])
def test_a_rotation_that_frees_a_lot_gives_it_back_to_the_disk(
    tmp_path, rules, events, monkeypatch, threshold, shrinks
):
    """The first rotation of a journal written for months before gaming-day files frees
    nearly all of it: the live file is rewritten small (VACUUM). A day's worth is kept as
    free pages for the next day's events (threshold None: the default, far above a test's)."""
    from controller.journal import rotation

    if threshold is not None:
        monkeypatch.setattr(rotation, "SHRINK_ABOVE_BYTES", threshold)
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=40) as table:
        fed = feed_to_round(table, events, 0, 8)
        table.journal.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = path.stat().st_size
        rotate(table, "2026-01-02", utc_ms=noon("2026-01-02"))
        table.journal.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        after = path.stat().st_size
        free = table.journal.db.execute("PRAGMA freelist_count").fetchone()[0]
        feed_to_round(table, events, fed, 9)  # the table carries on in the file
    if shrinks:
        assert after < before / 2 and free == 0
    else:
        assert after == before and free > 0
    with JournaledTable(path, rules, SETTINGS) as again:
        assert again.state.round_number == 9
