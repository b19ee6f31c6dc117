"""What the diagnostics page and ``/healthz`` judge the table by (issue 30), without a browser:
the problems list, the log that keeps warnings apart, errors counted per hour, the table's
clock turned into times of day."""

from __future__ import annotations

import json
import logging
import sqlite3

from controller.runtime.health import BLOCKING_ALARMS, table_problems
from controller.runtime.logring import RecentLog
from controller.web.glance import summary, timed_status
from controller.web.times import TableTimes
from drivers.base import DriverHealth


def alarm(n: int, code: str, t: int, active: bool = True, **extra) -> dict:
    return {"id": n, "code": code, "text": f"{code} text", "action": "Do it", "t": t,
            "active": active, **extra}  # fmt: skip


def status(*alarms: dict, shoe_fault: str = "", link: bool = True, faults=None) -> dict:
    return {
        "jackpot_link": link,
        "faults": faults or {},
        "journal_fault": None,
        "snapshot": {"shoe": {"fault": shoe_fault}, "alarms": list(alarms)},
    }


def test_the_shoe_offline_is_a_problem_with_the_time_it_began():
    problems = table_problems(status(alarm(3, "shoe_offline", 700), shoe_fault="offline"))
    assert [(p.kind, p.since_t) for p in problems] == [("shoe", 700)]
    assert problems[0].text == "shoe_offline text: do it"


def test_a_blocking_alarm_is_a_problem_while_active_and_a_procedural_one_never():
    lifted = alarm(4, "bet_removed", 800, spot=3)
    assert [p.kind for p in table_problems(status(lifted))] == ["alarm"]
    assert table_problems(status({**lifted, "active": False})) == []
    for code in ("late_bet", "side_bet_without_main", "progressive_refused", "power_loss"):
        assert code not in BLOCKING_ALARMS
        assert table_problems(status(alarm(5, code, 900))) == [], code
    card = alarm(6, "unexpected_card", 950)
    assert [p.since_t for p in table_problems(status(card))] == [950]


def test_a_latched_fault_that_is_gone_still_stops_the_table_until_cleared():
    faults = {"shoe": {"detail": "no frame for 30 s", "active": False}}
    [problem] = table_problems(status(alarm(7, "table_fault", 60, about="shoe"), faults=faults))
    assert problem.kind == "fault" and problem.since_t == 60
    assert "latched" in problem.text and "supervisor key" in problem.text


def test_the_link_down_says_why_once_not_again_as_an_alarm():
    problems = table_problems(
        status(alarm(8, "jackpot_link_down", 10), link=False), "controller_silent", 5
    )
    assert [(p.kind, p.since_t) for p in problems] == [("link", 5)]
    assert "the jackpot controller is not answering" in problems[0].text


def test_the_page_gets_times_of_day_and_the_healthz_answer():
    given = status(alarm(1, "late_bet", 1000), alarm(2, "shoe_offline", 2000, False))
    shown = timed_status(given, lambda t: None if t is None else 1_800_000_000_000 + t)
    first, second = shown["snapshot"]["alarms"]
    assert (first["utc_ms"], first["blocking"]) == (1_800_000_001_000, False)
    assert (second["utc_ms"], second["blocking"]) == (1_800_000_002_000, True)
    assert "utc_ms" not in given["snapshot"]["alarms"][0]  # the runtime's copy is untouched
    assert summary([], lambda t: t) == {"ok": True, "problems": []}


def test_a_warning_outlasts_hundreds_of_prompts():
    ring = RecentLog(size=200, warnings=500)
    log = logging.getLogger("test-diag-health")
    log.addHandler(ring)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        log.warning("web: wrong password for 'x'")
        for n in range(450):
            log.info("prompt: Spot %d to act", n % 7 + 1)
        log.error("shoe: port error")
    finally:
        log.removeHandler(ring)
    warnings = [r["message"] for r in ring.records("warning")]
    assert warnings == ["web: wrong password for 'x'", "shoe: port error"]
    assert [r["message"] for r in ring.records("error")] == ["shoe: port error"]
    everything = ring.records()
    assert len(everything) == 202 and everything[0]["level"] == "WARNING"  # oldest first
    assert [r["seq"] for r in everything] == sorted(r["seq"] for r in everything)
    assert {r["level"] for r in ring.records("info")} == {"INFO"}
    assert ring.kept() == {"info": 200, "warning": 2}


def test_one_blip_marks_a_driver_for_an_hour_not_for_life():
    now = [10 * 60_000]
    health = DriverHealth("shoe", clock=lambda: now[0])
    health.count("heartbeat_timeout")
    snap = health.snapshot()
    assert snap["errors_last_hour"] == {"heartbeat_timeout": 1}
    assert snap["last_error_age_ms"] == 0
    now[0] += 59 * 60_000
    assert health.snapshot()["errors_last_hour"] == {"heartbeat_timeout": 1}
    now[0] += 2 * 60_000
    snap = health.snapshot()
    assert snap["errors_last_hour"] == {} and snap["errors"] == {"heartbeat_timeout": 1}


def test_the_tables_clock_becomes_a_time_of_day_here_and_from_the_journal(tmp_path):
    journal = tmp_path / "journal.sqlite"
    db = sqlite3.connect(journal)
    db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, round INTEGER, event TEXT, "
               "accepted INTEGER, utc_ms INTEGER, chain TEXT)")  # fmt: skip
    for seq, t in enumerate((100, 250, 400, 900), start=1):
        db.execute(
            "INSERT INTO events VALUES (?, 1, ?, 1, ?, NULL)",
            (seq, json.dumps({"type": "tick", "t": t}), 1_700_000_000_000 + 10 * t),
        )
    db.commit()
    db.close()
    times = TableTimes(journal)
    assert times.utc(5000) is None  # no reading yet
    assert times.now({"t": 5000, "utc_ms": 1_800_000_000_000, "since_t": 1000}) == 1_800_000_000_000
    assert times.utc(6000) == 1_800_000_001_000  # this process: one offset
    times.now({"t": 5001, "utc_ms": 1_800_000_000_002, "since_t": 1000})  # 1 ms of jitter
    assert times.utc(6000) == 1_800_000_001_000  # kept: the times shown do not wobble
    # before this process: the journal's time of the last event at or before it
    assert times.utc(400) == 1_700_000_004_000
    assert times.utc(300) == 1_700_000_002_500
    assert times.utc(50) is None
    assert TableTimes(tmp_path / "none.sqlite").utc(10) is None
