"""Recall across the journal's files (issue 17, items 4 and 5), on real SQLite files.

A table plays three gaming days in New York, its wall clock injected; the journal rotates
twice (:func:`controller.journal.rotation.rotate`), leaving two read-only archives beside
the live file. Every round of every day is then found by number and by local time, through
:class:`~controller.journal.library.JournalLibrary` and through ``table-controller recall``
in its own process, which names the file each round came from and shows local times. A
wall-clock step during a round is shown; a damaged archive is reported and the others are
still searched; ``journal-set-aside`` refuses a journal in use and reports what it did.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from _journal_feeder import SETTINGS, session_events
from conftest import run_cli

from controller.cli import main as table_cli
from controller.errors import JournalError
from controller.games import load_game
from controller.journal import Journal, JournaledTable
from controller.journal.library import JournalLibrary, local_to_utc_ms
from controller.journal.rotation import GamingDay, archives, rotate
from controller.recall import format_round
from controller.table.effects import Record

ROOT = Path(__file__).resolve().parent.parent
ZONE = "America/New_York"
NY = ZoneInfo(ZONE)
GAMING_DAY = GamingDay(dt.time(6, 0), ZONE)
DAYS = ("2026-02-01", "2026-02-02", "2026-02-03")
EVENING = dt.time(20, 0)  # each day's play starts at 8 pm, New York time
ROUNDS_A_DAY = 4


def local_ms(day: str, at: dt.time) -> int:
    return int(dt.datetime.combine(dt.date.fromisoformat(day), at, NY).timestamp() * 1000)


class WallClock:
    """The table's wall clock, injected: it follows the events' own clock from a base."""

    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def play_three_days(path: Path) -> dict[int, str]:
    """Play 3 x 4 rounds, one gaming day each evening, rotating between days; the day each
    round was played."""
    rules = load_game("pa-standard")
    events = iter(session_events("pa-standard", 31, 3 * ROUNDS_A_DAY + 2))
    played: dict[int, str] = {}
    for index, day in enumerate(DAYS):
        wall = WallClock()
        start = local_ms(day, EVENING)
        t0 = None
        # each evening is a new run of the table controller: its wall clock starts afresh
        with JournaledTable(path, rules, SETTINGS, wall_clock=wall) as table:
            if index:
                rotate(table, day, utc_ms=start)
            else:
                table.journal.set_meta("gaming_day", day)
            while len(played) < ROUNDS_A_DAY * (index + 1) or table.round_in_progress:
                event = next(events)
                if event.t is not None:
                    t0 = event.t if t0 is None else t0
                    wall.ms = start + (event.t - t0)
                elif wall.ms == 0:
                    wall.ms = start
                step = table.handle(event)
                for effect in step.effects:
                    if isinstance(effect, Record) and effect.record == "round":
                        played[effect.data["round"]] = day
    return played


@pytest.fixture(scope="module")
def three_days(tmp_path_factory) -> tuple[Path, dict[int, str]]:
    path = tmp_path_factory.mktemp("recall") / "journal.sqlite"
    return path, play_three_days(path)


def test_three_gaming_days_leave_two_archives_and_the_live_file(three_days):
    path, played = three_days
    kept = archives(path)
    assert [a.gaming_day.isoformat() for a in kept] == list(DAYS[:2])
    for archive in kept:
        assert archive.path.stat().st_mode & 0o777 == 0o444  # read-only
    files = JournalLibrary(path).files()
    assert [f.live for f in files] == [False, False, True]
    assert [f.gaming_day for f in files] == list(DAYS)
    assert all(f.problem is None for f in files)
    by_day = {day: sorted(n for n, d in played.items() if d == day) for day in DAYS}
    for file, day in zip(files, DAYS, strict=True):
        # every round a file records was played on its gaming day
        assert (file.first_round, file.last_round) == (by_day[day][0], by_day[day][-1]), day
        assert file.rounds == len(by_day[day])
        assert GAMING_DAY.of(file.first_settled_utc_ms).isoformat() == day


def test_every_round_of_every_day_is_found_by_number_in_its_own_file(three_days):
    path, played = three_days
    library = JournalLibrary(path)
    files = {f.gaming_day: f.path for f in library.files()}
    assert len(played) >= 3 * ROUNDS_A_DAY
    for number, day in played.items():
        found = library.find_round(number)
        assert found is not None, number
        assert found.number == number
        assert found.file.path == files[day]
        assert library.file_of(number).path == files[day]
        settled = found.record["settled_utc_ms"]
        started = found.record["started_utc_ms"]
        assert started <= settled
        assert GAMING_DAY.local(settled).date().isoformat() == day  # played that evening
        with Journal(files[day]) as journal:
            assert journal.round_record(number) == found.record
    assert library.find_round(max(played) + 1) is None
    assert library.find_round(0) is None


def test_every_round_is_found_by_its_local_time(three_days):
    path, played = three_days
    library = JournalLibrary(path)
    for number in played:
        record = library.find_round(number).record
        moment = GAMING_DAY.local(record["settled_utc_ms"])
        # as a supervisor would type it: the minute, New York time
        typed = moment.strftime("%Y-%m-%d %H:%M")
        utc_ms = local_to_utc_ms(typed, ZONE)
        near = library.nearest(utc_ms, 5)
        assert number in [f.number for f in near], (number, typed)
        # the round in play at a moment between its start and settlement comes first
        middle = (record["started_utc_ms"] + record["settled_utc_ms"]) // 2
        assert library.nearest(middle, 1)[0].number == number
    # between two evenings: the last round of the night before, or the first of the next
    morning = local_to_utc_ms(f"{DAYS[1]} 06:00", ZONE)  # ~10 h after day 1's play
    afternoon = local_to_utc_ms(f"{DAYS[1]} 14:00", ZONE)  # ~6 h before day 2's
    assert library.nearest(morning, 1)[0].number == max(
        n for n, d in played.items() if d == DAYS[0]
    )
    assert library.nearest(afternoon, 1)[0].number == min(
        n for n, d in played.items() if d == DAYS[1]
    )
    # a whole evening, as a range: exactly that day's rounds, from its archive
    for day in DAYS:
        since = local_to_utc_ms(f"{day} 19:00", ZONE)
        until = local_to_utc_ms(f"{day} 23:59", ZONE)
        found = library.rounds_between(since, until)
        assert [f.number for f in found] == sorted(n for n, d in played.items() if d == day)
        assert {f.file.gaming_day for f in found} == {day}


def test_local_time_is_read_in_the_zone_given_and_a_bad_one_is_named():
    assert local_to_utc_ms("2026-02-01 21:40", ZONE) == 1_770_000_000_000
    assert local_to_utc_ms("2026-02-02 02:40:00", "UTC") == 1_770_000_000_000
    assert local_to_utc_ms("2026-07-01T12:00", ZONE) == int(
        dt.datetime(2026, 7, 1, 16, 0, tzinfo=dt.UTC).timestamp() * 1000
    )  # summer time: UTC-4
    with pytest.raises(JournalError, match="write it as YYYY-MM-DD HH:MM"):
        local_to_utc_ms("1/2/2026 9pm", ZONE)
    with pytest.raises(JournalError, match="time zone 'Mars/Olympus' is not known"):
        local_to_utc_ms("2026-02-01 21:40", "Mars/Olympus")


def test_recall_on_the_command_line_finds_rounds_of_each_day_and_names_their_files(three_days):
    path, played = three_days
    names = {f.gaming_day: f.name for f in JournalLibrary(path).files()}
    for day in DAYS:
        number = min(n for n, d in played.items() if d == day)
        with Journal(path.with_name(names[day])) as journal:
            record = journal.round_record(number)
        start = GAMING_DAY.local(record["started_utc_ms"])
        end = GAMING_DAY.local(record["settled_utc_ms"])

        by_number = run_cli("recall", str(path), "--round", str(number), "--zone", ZONE)
        assert by_number.returncode == 0, by_number.stderr
        out = by_number.stdout
        assert f"Round {number}  {start:%Y-%m-%d %H:%M:%S} to {end:%H:%M:%S} EST" in out
        assert f"  journal file: {names[day]}\n" in out
        assert f"dealer: {' '.join(record['dealer'])}" in out
        assert "wall clock stepped" not in out

        as_json = run_cli("recall", str(path), "--round", str(number), "--json")
        assert json.loads(as_json.stdout) == record

        typed = f"{end:%Y-%m-%d %H:%M}"
        by_time = run_cli("recall", str(path), "--at", typed, "--zone", ZONE, "--count", "3")
        assert by_time.returncode == 0, by_time.stderr
        heads = [line for line in by_time.stdout.splitlines() if line.startswith("Round ")]
        assert len(heads) == 3
        assert f"Round {number}  " in by_time.stdout
        assert f"the 3 rounds nearest {typed}" in by_time.stdout

    evening = run_cli(
        "recall", str(path), "--at", f"{DAYS[1]} 19:00", "--to", f"{DAYS[1]} 23:59",
        "--zone", ZONE, "--json",
    )  # fmt: skip
    assert evening.returncode == 0, evening.stderr
    assert [r["round"] for r in json.loads(evening.stdout)] == sorted(
        n for n, d in played.items() if d == DAYS[1]
    )
    # the last ten, newest first, reach back into the archives; the header lists the files
    last = run_cli("recall", str(path), "--zone", ZONE)
    assert last.returncode == 0, last.stderr
    heads = [int(line.split()[1]) for line in last.stdout.splitlines() if line.startswith("Round ")]
    assert heads == sorted(played, reverse=True)[:10]
    assert f"{len(played)} rounds recorded ({min(played)} to {max(played)})" in last.stdout
    for day in DAYS:
        assert f"{names[day]} (" in last.stdout and f"gaming day {day}" in last.stdout

    missing = run_cli("recall", str(path), "--round", str(max(played) + 5))
    assert missing.returncode == 2
    assert f"no record of round {max(played) + 5} (rounds {min(played)} to {max(played)}" in (
        missing.stderr
    )
    nothing = run_cli("recall", str(path), "--at", "2025-06-01 12:00", "--to", "2025-06-02 12:00")
    assert nothing.returncode == 2 and "no round settled then in any file" in nothing.stderr
    bad = run_cli("recall", str(path), "--at", "tomorrow", "--zone", ZONE)
    assert bad.returncode == 2 and "write it as YYYY-MM-DD HH:MM" in bad.stderr


def test_recall_with_the_table_config_shows_the_gaming_days_zone(tmp_path, three_days):
    path, played = three_days
    config = tmp_path / "table.toml"
    text = (ROOT / "config" / "table.example.toml").read_text()
    text = text.replace('"/var/lib/table-controller"', f'"{path.parent}"')
    config.write_text(text.replace('timezone = ""', 'timezone = "Asia/Tokyo"'))
    number = min(played)
    out = run_cli("recall", "--config", str(config), "--round", str(number))
    assert out.returncode == 0, out.stderr
    record = JournalLibrary(path).find_round(number).record
    tokyo = dt.datetime.fromtimestamp(record["settled_utc_ms"] / 1000, ZoneInfo("Asia/Tokyo"))
    assert f" to {tokyo:%H:%M:%S} JST\n" in out.stdout
    # --zone wins over the config's
    out = run_cli("recall", "--config", str(config), "--round", str(number), "--zone", ZONE)
    assert " EST\n" in out.stdout and "JST" not in out.stdout
    both = run_cli("recall", str(path), "--config", str(config))
    assert both.returncode == 2 and "give JOURNAL or --config, not both" in both.stderr
    neither = run_cli("recall")
    assert neither.returncode == 2 and "give the journal file (JOURNAL)" in neither.stderr


def test_a_damaged_archive_is_reported_and_the_other_files_still_searched(tmp_path, three_days):
    source, played = three_days
    path = tmp_path / "journal.sqlite"
    for file in [source, *(a.path for a in archives(source))]:
        copy = path.parent / file.name.replace(source.name, path.name, 1)
        copy.write_bytes(file.read_bytes())
    first = archives(path)[0].path
    first.write_bytes(b"not a journal at all" * 100)  # an SD card's bad block, say
    for archive in archives(path):
        archive.path.chmod(0o444)
    library = JournalLibrary(path)
    [bad] = library.problems()
    assert bad.path == first and "not a database" in bad.problem
    day_two = min(n for n, d in played.items() if d == DAYS[1])
    assert library.find_round(day_two).file.gaming_day == DAYS[1]
    assert library.find_round(min(played)) is None  # its file is damaged
    out = run_cli("recall", str(path), "--round", str(day_two))
    assert out.returncode == 0, out.stderr
    assert f"warning: journal file {first} cannot be read" in out.stderr


def test_a_wall_clock_step_during_a_round_is_shown(tmp_path):
    path = tmp_path / "journal.sqlite"
    rules = load_game("pa-standard")
    wall = WallClock()
    base = local_ms("2026-03-01", dt.time(21, 0))
    step_at = None
    with JournaledTable(path, rules, SETTINGS, wall_clock=wall) as table:
        t0 = None
        jumped = 0
        for event in session_events("pa-standard", 5, 3):
            if event.t is not None:
                t0 = event.t if t0 is None else t0
                wall.ms = base + (event.t - t0) + jumped
            if step_at is None and table.state.round_number == 2 and table.round_in_progress:
                jumped = 3_600_000  # NTP puts the clock an hour forward, mid-round
                wall.ms += jumped
                step_at = table.journal.events_written + 1
            table.handle(event)
    with sqlite3.connect(path) as db:
        steps = db.execute("SELECT seq, step_ms FROM clock_steps").fetchall()
    assert steps == [(step_at, 3_600_000)]
    with Journal(path) as journal:
        record = journal.round_record(2)
        other = journal.round_record(1)
    text = format_round(record, zone=ZONE)
    assert (
        f"  wall clock stepped +3600 s at event {step_at} (NTP correction?); event order is "
        "the journal's" in text
    )
    assert "wall clock stepped" not in format_round(other, zone=ZONE)
    out = run_cli("recall", str(path), "--round", "2", "--zone", ZONE)
    assert out.returncode == 0, out.stderr
    assert f"wall clock stepped +3600 s at event {step_at}" in out.stdout
    # the events stay in the journal's order: the round still replays as recorded
    assert "hands not shown" not in out.stdout


def test_an_old_record_without_utc_times_shows_the_tables_clock():
    record = {
        "round": 3,
        "settled_t": 1_770_000_000_000,
        "dealer": [],
        "events": [],
        "result": {"settlements": [], "stake": 0, "paid": 0, "returned": 0},
    }
    assert format_round(record).startswith("Round 3  2026-02-02 02:40:00 UTC\n")
    record |= {"started_utc_ms": None, "settled_utc_ms": None, "clock_steps": []}
    assert format_round(record, zone=ZONE).startswith("Round 3  2026-02-02 02:40:00 UTC\n")
    record |= {"started_utc_ms": 1_769_999_880_000, "settled_utc_ms": 1_770_000_000_000}
    shown = format_round(record, zone=ZONE)
    assert shown.startswith("Round 3  2026-02-01 21:38:00 to 21:40:00 EST\n")


# -- journal-set-aside ---------------------------------------------------------------------------


def table_config(tmp_path: Path) -> Path:
    text = (ROOT / "config" / "table.example.toml").read_text()
    text = text.replace('"/var/lib/table-controller"', f'"{tmp_path / "data"}"')
    text = text.replace("spots = 3 ", "spots = 7 ")  # the feeder's table
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path


def test_journal_set_aside_refuses_a_journal_in_use_and_reports_what_it_did(tmp_path, capsys):
    config = table_config(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    live = data / "journal.sqlite"
    rules = load_game("pa-standard")
    assert table_cli(["journal-set-aside", "--config", str(config)]) == 2
    assert "nothing to set aside" in capsys.readouterr().err
    with JournaledTable(live, rules, SETTINGS) as table:
        for event in session_events("pa-standard", 8, 3):
            table.handle(event)
        last_round = table.last_rounds(1)[0]["round"]
        events = table.journal.events_written
        assert table_cli(["journal-set-aside", "--config", str(config)]) == 2
        err = capsys.readouterr().err
        assert "in use by another table controller" in err and "stop it first" in err
        assert archives(live) == []  # nothing changed
        written, acked, pending = table.journal.outbox_rows()
    assert pending  # no jackpot controller acknowledged them
    assert table_cli(["journal-set-aside", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    [archive] = archives(live)
    assert f"archive: {archive.path} (gaming day " in out
    digest = out.split("sha256: ", 1)[1].split()[0]
    import hashlib

    assert hashlib.sha256(archive.path.read_bytes()).hexdigest() == digest
    assert f"events 1 to {events}" in out
    assert f"the next round is round {last_round + 1}" in out
    assert (
        f"{len(pending)} unacknowledged message(s) kept and the set-aside's record (sequence "
        f"{acked + 1} to {written + 1})" in out
    )
    with Journal(live) as journal:
        kept = journal.outbox_rows()[2]
        assert kept[:-1] == pending and kept[-1].payload["code"] == "journal_set_aside"
        assert kept[-1].payload["by"].endswith("(command line)")
    # the new file carries on: recall still finds the old rounds, in the archive
    found = JournalLibrary(live).find_round(last_round)
    assert found is not None and found.file.path == archive.path
