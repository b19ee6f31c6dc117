"""Is the clock synchronised? (issue 28 item 6): the parsers on the time daemons' own output,
the programs run for real from ``PATH`` (stand-ins with scripted answers, as shoe-sim stands
in for a shoe), and both services on the running table: the table refuses progressive
wagers while its clock is unsynchronised, records the clock in the journal's ``runs`` row and
its status, says so on ``/healthz``; the jackpot controller raises an alarm."""

from __future__ import annotations

import os
import sqlite3
import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mqtt_broker import broker  # noqa: F401
from table_rig import Rig, free_port
from test_web_server import wait_http

from controller.timesync import ClockState, judge, parse_chrony, parse_timesyncd, read_clock

CHRONY_SYNCED = (
    "C0A80001,ntp1.hcm.example,3,1764169200.123456789,-0.000012345,0.000001,0.000020,"
    "-12.345,0.001,0.010,0.001234,0.000567,64.2,Normal\n"
)
CHRONY_UNSYNCED = (
    "00000000,,0,0.000000000,0.000000000,0.000000000,0.000000000,0.000,0.000,0.000,"
    "1.000000000,1.000000000,0.0,Not synchronised\n"
)
TIMESYNC_STATUS = """       Server: 10.7.0.1 (ntp.hcm.example)
Poll interval: 34min 8s (min: 32s; max 34min 8s)
         Leap: normal
      Version: 4
      Stratum: 2
       Offset: +2.512ms
       Jitter: 1.027ms
"""


def test_chrony_and_timesyncd_say_synchronised_the_source_and_the_offset():
    assert parse_chrony(CHRONY_SYNCED) == ClockState(True, "chrony ntp1.hcm.example", 0.012345)
    assert parse_chrony(CHRONY_UNSYNCED).synchronised is False
    assert parse_chrony("506 Cannot talk to daemon\n") is None
    assert parse_timesyncd("yes\n", TIMESYNC_STATUS) == ClockState(
        True, "systemd-timesyncd 10.7.0.1 (ntp.hcm.example)", 2.512
    )
    assert parse_timesyncd("no\n", "").synchronised is False
    assert parse_timesyncd("", "") is None
    assert parse_timesyncd("yes", "       Offset: -1.5s\n").offset_ms == 1500.0


def test_judge_names_an_unsynchronised_clock_and_an_offset_past_the_limit():
    assert judge(ClockState(True, "chrony a", 2.0), 1000) is None
    assert judge(ClockState(None, "unknown"), 1000) is None  # cannot tell: shown, not judged
    assert judge(ClockState(False, "chrony a"), 1000) == "the clock is not synchronised (chrony a)"
    assert judge(ClockState(True, "chrony a", 2500.0), 1000) == (
        "the clock is 2,500 ms off its time server (chrony a), past the limit of 1,000 ms"
    )


def fake_time_daemon(folder: Path, state_file: Path) -> Path:
    """``timedatectl`` answering from ``state_file`` (``yes``/``no``), and a ``chronyc``
    that fails (no chrony), first on PATH."""
    folder.mkdir()
    (folder / "timedatectl").write_text(
        "#!/bin/sh\n"
        f'state=$(cat "{state_file}")\n'
        'case "$1" in\n'
        '  show) echo "$state" ;;\n'
        "  timesync-status) printf '       Server: 10.7.0.1 (ntp.hcm.example)\\n"
        "       Offset: +2.512ms\\n' ;;\n"
        "  *) exit 1 ;;\n"
        "esac\n"
    )
    (folder / "chronyc").write_text("#!/bin/sh\necho '506 Cannot talk to daemon'\nexit 1\n")
    for name in ("timedatectl", "chronyc"):
        (folder / name).chmod(stat.S_IRWXU)
    return folder


@pytest.fixture
def time_daemon(tmp_path, monkeypatch):
    state = tmp_path / "ntp-state"
    state.write_text("no\n")
    folder = fake_time_daemon(tmp_path / "bin", state)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return state


def test_read_clock_runs_the_programs_on_path(time_daemon):
    assert read_clock() == ClockState(False, "systemd-timesyncd 10.7.0.1 (ntp.hcm.example)", 2.512)
    time_daemon.write_text("yes\n")
    assert read_clock().synchronised is True


def test_an_unsynchronised_clock_refuses_progressive_wagers_and_both_services_say_so(
    tmp_path,
    broker,  # noqa: F811
    time_daemon,
):
    port = free_port()
    rig = Rig(
        tmp_path,
        broker,
        web=f'bind = "127.0.0.1"\nport = {port}',
        extra="[clock]\ncheck_every_s = 1\nmax_offset_ms = 1000\nrefuse_progressive = true",
    )
    try:
        rig.start_table()
        wait_http(port)
        down = rig.wait(lambda a: not a["status"]["jackpot_link"], "the link down", timeout=40)
        assert down["status"]["jackpot_link_why"] == "clock_unsynchronised"
        clock = down["status"]["clock"]
        assert (clock["synchronised"], clock["source"], clock["offset_ms"]) == (
            False, "systemd-timesyncd 10.7.0.1 (ntp.hcm.example)", 2.512
        )  # fmt: skip
        alarms = [i for i in down["feed"] if i.get("code") == "jackpot_link_down"]
        assert alarms[-1]["text"].startswith("The table's clock is not synchronised")
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10)
        assert answer.value.code == 503
        assert b"clock: the clock is not synchronised" in answer.value.read()
        rig.bets()
        rig.act("press", name="console.lockout")
        assert rig.status()["status"]["snapshot"]["spots"][0]["wagers"] == {"main": 2500}

        # the run's clock is in the journal's runs row
        db = sqlite3.connect(f"file:{tmp_path / 'data' / 'journal.sqlite'}?mode=ro", uri=True)
        try:
            row = db.execute(
                "SELECT clock_source, clock_synchronised, clock_offset_ms FROM runs"
            ).fetchone()
        finally:
            db.close()
        assert row == ("systemd-timesyncd 10.7.0.1 (ntp.hcm.example)", 0, 2.512)

        # the jackpot controller's alarm log has it too
        def controller_alarm() -> bool:
            db = sqlite3.connect(f"file:{rig.ledger}?mode=ro", uri=True)
            try:
                return bool(
                    db.execute(
                        "SELECT 1 FROM alarms WHERE kind = 'clock_unsynchronised'"
                    ).fetchone()
                )
            except sqlite3.OperationalError:
                return False
            finally:
                db.close()

        rig.wait(lambda a: controller_alarm(), "the controller's clock alarm", timeout=30)

        # synchronised again: the link comes back, progressive wagers are taken
        time_daemon.write_text("yes\n")
        rig.wait(lambda a: a["status"]["jackpot_link"], "the link back", timeout=40)
        assert rig.status()["status"]["clock"]["problem"] is None
    finally:
        rig.stop()
