"""Gaming-day files in the running table: the daemon rotates its journal between rounds when
the wall clock passes the gaming day's start, on demand through the control socket, and once
after a software upgrade; a rotation that fails leaves the table playing (issue 17, item 3).

Real parts (tests/table_rig.py): a Mosquitto, the real jackpot controller with its ledger,
``shoe-sim`` on a pseudo-terminal, the control socket, real SQLite journals. The daemon runs
in this process, on a thread of its own (the thread that owns the journal), so that the
test can move its wall clock on: ``TableDaemon(..., utc=clock)``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import threading
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from mqtt_broker import broker  # noqa: F401
from table_rig import Rig
from test_table_daemon import journal_link, ledger_applied

from controller import build
from controller.config import load_table_config, read_password
from controller.games import load_game, read_game
from controller.journal import Journal, JournaledTable, rotation
from controller.runtime import rotator
from controller.runtime.control import ControlClient
from controller.runtime.daemon import TableDaemon
from controller.table import events as ev
from controller.table.settings import TableSettings

ZONE = "America/New_York"
JOURNAL = """
[journal]
gaming_day_starts = "06:00"
timezone = "America/New_York"
keep_days = 30
keep_days_reason = "a test table: its archives age in days, not years"
"""


def local_ms(text: str) -> int:
    """UTC ms of a local time in New York, e.g. ``"2026-11-24 05:59:30"``."""
    return int(datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(ZONE)).timestamp() * 1000)


class WallClock:
    """UTC ms that run with real time from ``start``; :meth:`jump` steps them (NTP would)."""

    def __init__(self, start: int) -> None:
        self.base = start
        self.t0 = time.monotonic()

    def __call__(self) -> int:
        return self.base + int((time.monotonic() - self.t0) * 1000)

    def jump(self, to: int) -> None:
        self.base, self.t0 = to, time.monotonic()


class Daemon:
    """``TableDaemon`` on its own thread (it owns the journal there), running its loop."""

    def __init__(self, rig: Rig, utc: WallClock) -> None:
        self.stop = threading.Event()
        ready = threading.Event()
        self.failed: BaseException | None = None
        config = load_table_config(rig.config)
        config.data_dir.mkdir(parents=True, exist_ok=True)

        def run() -> None:
            try:
                self.daemon = TableDaemon(config, password=read_password(config), utc=utc)
            except BaseException as exc:
                self.failed = exc
                ready.set()
                return
            ready.set()
            try:
                self.daemon.runtime.run(self.stop)
            finally:
                self.daemon.close()

        self.thread = threading.Thread(target=run, name="table-loop", daemon=True)
        self.thread.start()
        assert ready.wait(30), "the daemon did not start"
        if self.failed is not None:
            raise self.failed
        rig.control = ControlClient(rig.tmp / "control.sock", timeout=30)

    def close(self, rig: Rig) -> None:
        if rig.control is not None:
            rig.control.close()
            rig.control = None
        self.stop.set()
        self.thread.join(20)
        assert not self.thread.is_alive()


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    r = Rig(tmp_path, broker)
    with open(r.config, "a", encoding="utf-8") as f:
        f.write(JOURNAL)
    try:
        yield r
    finally:
        r.stop()


def journal_of(answer: dict) -> dict:
    return answer["status"]["journal"]


def start_round_two(rig: Rig) -> None:
    """Round 2 locked and three cards out: a round in progress."""
    rig.act("press", name="console.lockout")
    for _ in range(3):
        rig.deal()
    assert rig.status()["status"]["round_in_progress"]


def settle_round_two(rig: Rig) -> None:
    for _ in range(3):
        rig.deal()
    rig.stand_both()
    rig.deal()
    rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "round 2 settled")


def live_and_archives(data: Path) -> tuple[Path, list[Path]]:
    live = data / "journal.sqlite"
    return live, sorted(p for p in data.iterdir() if p.name.startswith("journal.sqlite.2"))


def test_the_journal_rotates_at_the_gaming_days_start_between_rounds_only(rig):
    clock = WallClock(local_ms("2026-11-24 05:58:00"))
    table = Daemon(rig, clock)
    try:
        first = rig.wait(lambda a: journal_of(a)["gaming_day"], "the file's gaming day")
        journal = journal_of(first)
        assert journal["gaming_day"] == "2026-11-23"  # 05:58 belongs to the day before
        assert (journal["archives"], journal["last_rotation"], journal["rotation_error"]) == (
            0,
            None,
            None,
        )
        assert journal["first_event"] == 1 and journal["keep_days"] == 30
        rig.bets()
        rig.play_round()
        start_round_two(rig)
        clock.jump(local_ms("2026-11-24 06:00:05"))  # the new gaming day, mid-round
        time.sleep(2.5)  # two checks at least: neither may rotate while the round plays
        held = journal_of(rig.status())
        assert (held["gaming_day"], held["archives"], held["last_rotation"]) == (
            "2026-11-23",
            0,
            None,
        )
        settle_round_two(rig)  # settled: between rounds, the rotation comes within a second
        after = rig.wait(lambda a: journal_of(a)["last_rotation"], "the rotation", timeout=30)
        journal = journal_of(after)
        last = journal["last_rotation"]
        archive = "journal.sqlite.2026-11-23.000000001"
        assert (last["reason"], last["archive"], last["by"]) == ("gaming day", archive, None)
        assert last["local"].startswith("2026-11-24 06:00:")
        assert journal["gaming_day"] == "2026-11-24" and journal["archives"] == 1
        assert journal["first_event"] == last["last_event"] + 1
        assert journal["last_event"] >= last["last_event"]
        assert after["status"]["snapshot"]["phase"] == "settled"  # nothing of the round lost

        # the new file carries on: round 3 is dealt into it, the link delivers every message
        rig.act("press", name="console.end_round")
        rig.play_round()
        rig.wait(lambda a: a["health"]["link"]["depth"] == 0, "the outbox to drain", timeout=30)
    finally:
        table.close(rig)
    live, archives = live_and_archives(rig.tmp / "data")
    assert [p.name for p in archives] == [archive]
    assert stat.S_IMODE(archives[0].stat().st_mode) == 0o444
    with Journal(archives[0]) as old:
        assert [r["round"] for r in old.last_rounds(10)] == [2, 1]
        assert old.events_written == last["last_event"]
        assert old.round_record(2)["settled_utc_ms"] >= local_ms("2026-11-24 06:00:05")
    with Journal(live) as new:
        assert [r["round"] for r in new.last_rounds(10)] == [3]
        assert new.first_event() == last["last_event"] + 1
        assert new.origin().previous == archive and new.origin().reason == "gaming day"
        assert new.meta()["gaming_day"] == "2026-11-24"
    written, acked, pending = journal_link(live)  # one sequence across the two files
    assert (acked, pending) == (written, 0)
    applied = ledger_applied(rig.ledger)
    assert [seq for seq, _k, _key in applied] == list(range(1, written + 1))
    contributions = [key for _s, kind, key in applied if kind == "contribution"]
    assert contributions == [f"round-{n}/spot-1/blazing_7s/contribution" for n in (1, 2, 3)]


def test_rotation_on_demand_through_the_control_socket(rig):
    clock = WallClock(local_ms("2026-11-24 14:00:00"))
    table = Daemon(rig, clock)
    try:
        rig.bets()
        rig.play_round()
        events = rig.events()
        done = rig.control.request("rotate-journal", by="j.smith")
        archive = "journal.sqlite.2026-11-24.000000001"
        assert done["ok"] and done["rotated"], done
        assert (done["archive"], done["first_event"], done["gaming_day"]) == (
            archive,
            1,
            "2026-11-24",
        )
        assert done["last_event"] >= events and done["events"] == done["last_event"]
        assert f"archived as {archive}" in done["message"]
        journal = journal_of(rig.status())
        assert journal["last_rotation"]["reason"] == "on demand"
        assert journal["last_rotation"]["by"] == "j.smith" and journal["archives"] == 1

        start_round_two(rig)
        asked = rig.control.request("rotate-journal", by="m.jones")
        assert asked == {
            "ok": True,
            "rotated": False,
            "deferred": "deferred: round 2 in progress, rotates when it is settled",
            "message": "deferred: round 2 in progress, rotates when it is settled",
        }
        pending = journal_of(rig.status())["pending"]
        assert pending == "on demand by m.jones, when round 2 is settled"
        assert journal_of(rig.status())["archives"] == 1  # not while the round plays
        settle_round_two(rig)
        after = rig.wait(
            lambda a: journal_of(a)["archives"] == 2, "the deferred rotation", timeout=30
        )
        last = journal_of(after)["last_rotation"]
        assert (last["reason"], last["by"]) == ("on demand", "m.jones")
        assert last["archive"] == f"journal.sqlite.2026-11-24.{done['last_event'] + 1:09d}"
        assert journal_of(after)["pending"] is None

        for bad in ({}, {"by": ""}, {"by": 7}, {"by": "x" * 65}):
            refused = rig.control.request("rotate-journal", **bad)
            assert not refused["ok"] and "by must be" in refused["error"], refused
    finally:
        table.close(rig)
    _live, archives = live_and_archives(rig.tmp / "data")
    assert [p.name for p in archives] == [archive, last["archive"]]
    with Journal(archives[1]) as second:
        assert [r["round"] for r in second.last_rounds(10)] == [2]

    # after a restart the status still names the rotation that started the live file
    table = Daemon(rig, clock)
    try:
        journal = journal_of(rig.status())
        assert journal["last_rotation"]["archive"] == last["archive"]
        assert journal["last_rotation"]["reason"] == "on demand"
        assert journal["archives"] == 2 and journal["gaming_day"] == "2026-11-24"
    finally:
        table.close(rig)


def test_an_upgrade_rotates_once_at_the_first_moment_between_rounds(rig):
    clock = WallClock(local_ms("2026-11-24 14:00:00"))
    table = Daemon(rig, clock)
    try:
        rig.bets()
        rig.play_round()
        start_round_two(rig)  # the old software stops mid-round
    finally:
        table.close(rig)
    live = rig.tmp / "data" / "journal.sqlite"
    db = sqlite3.connect(live)
    db.execute("UPDATE runs SET software = '0.0.9'")  # as the software before this one
    db.commit()
    db.close()

    table = Daemon(rig, clock)
    try:
        journal = journal_of(rig.status())
        assert journal["pending"] == "upgrade from 0.0.9, at the next moment between rounds"
        time.sleep(1.5)
        assert journal_of(rig.status())["archives"] == 0  # round 2 is still in play
        settle_round_two(rig)
        after = rig.wait(lambda a: journal_of(a)["archives"] == 1, "the rotation", timeout=30)
        last = journal_of(after)["last_rotation"]
        assert last["reason"] == f"upgrade from 0.0.9 to {build.software()}"
        assert journal_of(after)["pending"] is None
    finally:
        table.close(rig)
    with Journal(live) as new:
        assert {run["software"] for run in new.runs()} == {build.software()}
        # the profile played, by its SHA-256 (issue 29 item 6), kept across the rotation
        assert new.meta()["game_sha256"] == read_game(new.game)[1].sha256
    table = Daemon(rig, clock)  # the same software again: no second rotation
    try:
        time.sleep(1.5)
        journal = journal_of(rig.status())
        assert journal["archives"] == 1 and journal["pending"] is None
    finally:
        table.close(rig)


def test_a_failed_rotation_leaves_the_table_playing_and_is_tried_again(rig, monkeypatch):
    monkeypatch.setattr(rotator, "RETRY_AFTER_MS", 1500)
    clock = WallClock(local_ms("2026-11-24 05:59:00"))
    table = Daemon(rig, clock)
    data = rig.tmp / "data"
    archive = "journal.sqlite.2026-11-23.000000001"
    try:
        rig.bets()
        rig.play_round()
        # a folder where the archive is to go (a technician's copy left in the wrong place)
        (data / archive / "copy").mkdir(parents=True)
        clock.jump(local_ms("2026-11-24 06:00:05"))
        failed = rig.wait(lambda a: journal_of(a)["rotation_error"], "the rotation to fail")
        journal = journal_of(failed)
        assert archive in journal["rotation_error"]
        assert journal["last_rotation"] is None and journal["gaming_day"] == "2026-11-23"
        warning = [i for i in failed["feed"] if i.get("code") == "journal_rotation"]
        assert len(warning) == 1 and "call a technician" in warning[0]["action"]
        start_round_two(rig)  # the table plays on in the same file
        assert rig.status()["status"]["journal_fault"] is None
        shutil.rmtree(data / archive)
        time.sleep(2)  # a retry is due, but round 2 is in play
        assert journal_of(rig.status())["last_rotation"] is None
        settle_round_two(rig)
        done = rig.wait(lambda a: journal_of(a)["last_rotation"], "the retry", timeout=30)
        journal = journal_of(done)
        assert journal["rotation_error"] is None and journal["gaming_day"] == "2026-11-24"
        assert journal["last_rotation"]["archive"] == archive
        feed = rig.status()["feed"]
        assert len([i for i in feed if i.get("code") == "journal_rotation"]) == 1  # warned once
    finally:
        table.close(rig)
    _live, archives = live_and_archives(data)
    assert [p.name for p in archives] == [archive] and archives[0].is_file()
    assert not [p for p in os.listdir(data) if p.endswith(".part")]
    with Journal(archives[0]) as old:
        assert [r["round"] for r in old.last_rounds(10)] == [2, 1]


def test_an_upgrade_is_told_by_the_runs_or_by_the_files_creator(tmp_path):
    rules, settings = load_game("pa-standard"), TableSettings(spots=2)
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, rules, settings) as table:
        assert table.handle(ev.BetSensor(1, "main", True, t=1000)).journal
        assert rotator.upgraded_from(table.journal) is None  # this software's own run
    db = sqlite3.connect(path)
    db.execute("DELETE FROM runs")  # a journal from before runs were recorded
    db.execute("UPDATE meta SET value = '\"0.0.5\"' WHERE key = 'software'")
    db.commit()
    db.close()
    with JournaledTable(path, rules, settings) as table:
        assert rotator.upgraded_from(table.journal) == "0.0.5"
        assert rotation.rotate(table, "2026-11-24", reason="upgrade").archive is not None
        assert rotator.upgraded_from(table.journal) is None
    with JournaledTable(path, rules, settings) as table:  # restarted: rotated already
        assert rotator.upgraded_from(table.journal) is None
