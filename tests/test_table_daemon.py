"""The real ``table-controller run`` process, end to end (issue 6).

Real parts only: a Mosquitto on a free loopback port (tests/mqtt_broker.py), the real
``jackpot-controller`` process with its SQLite ledger, ``shoe-sim`` on a pseudo-terminal
dealing a known card order, and the daemon with gpiozero's mock pins, driven the way the
hardware would: chips placed and buttons pressed through the control socket's simulated
inputs, cards drawn from the simulated shoe.

The crash test deals two rounds, starts a third, kills the daemon with SIGKILL after three
cards, restarts it and checks that the round resumes exactly (the same snapshot, the next
card goes where it should, the same settlement) and that every contribution reached the
ledger exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mqtt_broker import CONTROLLER, BrokerClient, broker  # noqa: F401

from controller.games import load_game
from controller.journal import Journal
from controller.runtime.control import ControlClient
from controller.table.effects import Publish
from controller.table.machine import Table

ROOT = Path(__file__).resolve().parent.parent
TABLE = "hcm-bj-07"
# one round: spot 1 $25 + Blazing 7's $5, spot 2 $10. Deal order: spot 1, spot 2, dealer up,
# spot 1, spot 2, hole. Spot 1 10H 7S = 17, spot 2 9C 8H = 17, dealer 6D 10C = 16 draws 9S.
ROUND_CARDS = ["10H", "9C", "6D", "7S", "8H", "10C", "9S"]


def table_config(tmp: Path, port: int, password_file: Path) -> Path:
    path = tmp / "table.toml"
    path.write_text(
        f"""
[table]
id = "{TABLE}"
property = "hcm"
game = "pa-standard"
spots = 2
main_minimum = "$10"
main_maximum = "$500"
data_dir = "{tmp / "data"}"
tick_ms = 20

[shoe]
url = "{tmp / "shoe"}"
heartbeat_timeout_ms = 3000
fault_after_s = 30

[gpio]
pin_factory = "mock"
button_debounce_ms = 10
sensor_debounce_ms = 20

[gpio.sensors]
"1.main" = 4
"1.blazing_7s" = 5
"2.main" = 6

[gpio.console]
lockout = 7
next = 8
end_round = 12
supervisor_key = 24

[gpio.lights]
lockout = 22
alarm = 23
"1.action" = 19
"2.action" = 20

[mqtt]
host = "127.0.0.1"
port = {port}
password_file = "{password_file}"
ack_timeout_s = 30

[control]
socket = "{tmp / "control.sock"}"
""",
        encoding="utf-8",
    )
    return path


class Rig:
    """The processes of one test and the ways to drive them."""

    def __init__(self, tmp: Path, broker) -> None:  # noqa: F811
        self.tmp = tmp
        self.broker = broker
        table_pw = tmp / "table.pw"
        table_pw.write_text(broker.passwords[TABLE] + "\n")
        ctl_pw = tmp / "controller.pw"
        ctl_pw.write_text(broker.passwords[CONTROLLER] + "\n")
        self.config = table_config(tmp, broker.port, table_pw)
        self.ledger = tmp / "ledger.sqlite"
        self.procs: list[subprocess.Popen] = []
        self.jackpot = self._start(
            "jackpot",
            [
                sys.executable,
                "-m",
                "controller.jackpot.service",
                "--config",
                str(ROOT / "config" / "jackpot.example.toml"),
                "--ledger",
                str(self.ledger),
                "--host",
                "127.0.0.1",
                "--port",
                str(broker.port),
                "--username",
                CONTROLLER,
                "--password-file",
                str(ctl_pw),
            ],
        )
        cards = ",".join(ROUND_CARDS * 4)
        self.shoe = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "drivers.shoe_sim",
                "--cards",
                cards,
                "--link",
                str(tmp / "shoe"),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.procs.append(self.shoe)
        self.shoe.stdout.readline()  # the pty path: the link exists now
        self.table: subprocess.Popen | None = None
        self.control: ControlClient | None = None

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.procs.append(proc)
        return proc

    def start_table(self) -> None:
        self.table = self._start(
            "table", [sys.executable, "-m", "controller.cli", "run", "--config", str(self.config)]
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.table.poll() is not None:
                raise AssertionError(f"table-controller run exited:\n{self.log('table')}")
            try:
                self.control = ControlClient(self.tmp / "control.sock")
                self.control.request("status")
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"the control socket never answered:\n{self.log('table')}")

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def status(self) -> dict:
        answer = self.control.request("status")
        assert answer["ok"], answer
        return answer

    def wait(self, predicate, what: str, timeout: float = 15.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = self.status()
            if predicate(answer):
                return answer
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}: {json.dumps(answer)[:3000]}")

    def events(self) -> int:
        return self.status()["status"]["journal_events"]

    def act(self, op: str, **fields) -> None:
        before = self.events()
        answer = self.control.request(op, **fields)
        assert answer["ok"], answer
        if op == "wager":
            assert answer["accepted"], answer
        self.wait(lambda a: a["status"]["journal_events"] > before, f"{op} {fields} journaled")

    def deal(self) -> None:
        before = self.events()
        self.shoe.stdin.write("deal\n")
        line = self.shoe.stdout.readline()
        while line and not line.startswith("sent card"):  # "sent version ..." at each open
            line = self.shoe.stdout.readline()
        assert line.startswith("sent card"), line
        self.wait(lambda a: a["status"]["journal_events"] > before, f"card ({line.strip()})")

    def bets(self) -> None:
        self.act("input", name="sensors.1.main", active=True)
        self.act("wager", spot=1, circle="main", amount=2500)
        self.act("input", name="sensors.1.blazing_7s", active=True)
        self.act("input", name="sensors.2.main", active=True)

    def stand_both(self) -> None:
        self.act("press", name="console.next")  # the dealer shows 6: EZ Bust offered, closed
        self.act("press", name="console.next")  # spot 1 stands on 17
        self.act("press", name="console.next")  # spot 2 stands on 17

    def play_round(self) -> None:
        self.act("press", name="console.lockout")
        for _ in range(6):
            self.deal()
        self.stand_both()
        self.deal()  # the dealer's 16 draws 9S and busts
        self.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "settlement")
        self.act("press", name="console.end_round")

    def stop(self) -> None:
        if self.control is not None:
            self.control.close()
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    r = Rig(tmp_path, broker)
    try:
        yield r
    finally:
        r.stop()


def journal_link(path: Path) -> tuple[int, int, int]:
    """(written, acknowledged, pending) of the journal's outbox (acknowledged rows go)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        written, acked = db.execute("SELECT written, acked FROM link").fetchone()
        (pending,) = db.execute("SELECT count(*) FROM outbox").fetchone()
        return written, acked, pending
    finally:
        db.close()


def ledger_applied(path: Path) -> list[tuple[int, str, str]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT seq, kind, key FROM applied WHERE table_id = ? ORDER BY seq", (TABLE,)
        ).fetchall()
    finally:
        db.close()


def test_kill_9_mid_round_resumes_exactly_and_loses_nothing(rig):
    rig.start_table()
    first = rig.status()
    assert first["table"] == TABLE and first["status"]["snapshot"]["round"] == 1
    rig.bets()
    for _ in range(2):
        rig.play_round()
    # round 3: the chips stay on the layout (carried); lock and deal three cards, then crash
    rig.act("press", name="console.lockout")
    for _ in range(3):
        rig.deal()
    before = rig.status()["status"]
    assert before["snapshot"]["round"] == 3 and before["snapshot"]["phase"] == "dealing"
    journaled = before["journal_events"]
    rig.table.send_signal(signal.SIGKILL)
    rig.table.wait(10)
    rig.control.close()
    os.unlink(rig.tmp / "control.sock")  # as systemd's RuntimeDirectory would be cleaned

    rig.start_table()
    after = rig.status()["status"]
    assert after["journal_events"] == journaled  # nothing lost, nothing replayed twice
    assert after["snapshot"] == before["snapshot"]  # the round resumes exactly
    for _ in range(3):  # spot 1's second card, spot 2's, the hole card
        rig.deal()
    snap = rig.status()["status"]["snapshot"]
    assert [h["cards"] for s in snap["spots"] for h in s["hands"]] == [["10H", "7S"], ["9C", "8H"]]
    assert snap["dealer"]["cards"] == ["6D", "back"]  # the hole card is still not shown
    rig.stand_both()
    rig.deal()
    settled = rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "settled")
    nets = [i for i in settled["feed"] if i["kind"] == "settled" and i["wager"] == "main"]
    assert {(i["spot"], i["outcome"], i["paid"]) for i in nets[-2:]} == {
        (1, "win", 2500),
        (2, "win", 1000),
    }
    rig.act("press", name="console.end_round")

    # every outbox message acknowledged, then the ledger holds each exactly once
    rig.wait(lambda a: a["health"]["link"]["depth"] == 0, "the outbox to drain", timeout=30)
    journal_path = rig.tmp / "data" / "journal.sqlite"
    written, acked, pending = journal_link(journal_path)
    assert (acked, pending) == (written, 0)
    applied = ledger_applied(rig.ledger)
    assert [seq for seq, _k, _key in applied] == list(range(1, written + 1))  # no gap, once
    assert len({key for _s, _k, key in applied}) == written  # no message made twice
    contributions = [key for _s, kind, key in applied if kind == "contribution"]
    assert contributions == [f"round-{n}/spot-1/blazing_7s/contribution" for n in (1, 2, 3)]
    with Journal(journal_path) as journal:  # the journal's events, replayed on a pure table
        replayed = Table(load_game("pa-standard"), journal.settings).run(journal.events())
    made = [e.key for step in replayed for e in step.effects if isinstance(e, Publish)]
    assert [key for _s, _k, key in applied] == made
    with Journal(journal_path) as journal:
        assert journal.round_count()[0] == 3

    # a clean stop: SIGTERM, exit 0, the retained status says offline and clean
    rig.table.send_signal(signal.SIGTERM)
    assert rig.table.wait(15) == 0, rig.log("table")
    watcher = BrokerClient(rig.broker, CONTROLLER, client_id="test-watcher")
    try:
        watcher.subscribe(f"bj/v1/table/{TABLE}/status")
        got = watcher.get(timeout=5)
        status = json.loads(got.payload)
        assert status["state"] == "offline" and status["clean"] is True
    finally:
        watcher.close()


def test_link_down_refuses_progressive_wagers_and_the_table_carries_on(rig):
    rig.start_table()
    rig.wait(lambda a: a["health"]["link"]["connected"], "the link to connect")
    rig.broker.kill()
    rig.wait(lambda a: not a["status"]["jackpot_link"], "the table to hear the link is down")
    rig.bets()
    rig.act("press", name="console.lockout")
    status = rig.status()
    spots = status["status"]["snapshot"]["spots"]
    assert spots[0]["wagers"] == {"main": 2500}  # Blazing 7's not taken
    codes = [i.get("code") for i in status["feed"] if i["kind"] == "alarm"]
    assert "jackpot_link_down" in codes and "progressive_refused" in codes
    rig.broker.start()
    rig.wait(lambda a: a["status"]["jackpot_link"], "the link back up", timeout=40)
