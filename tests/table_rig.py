"""A running table for end-to-end tests: the real ``table-controller run`` process.

Real parts only: a Mosquitto on a free loopback port (tests/mqtt_broker.py), the real
``jackpot-controller`` process with its SQLite ledger, ``shoe-sim`` on a pseudo-terminal
dealing a known card order, and the daemon with gpiozero's mock pins, driven the way the
hardware would: chips placed and buttons pressed through the control socket's simulated
inputs, cards drawn from the simulated shoe. ``Rig(tmp, broker, web=...)`` adds a ``[web]``
section (the diagnostics page and the dealer display) on a free port.

The link is signed end to end as in production, with the session's test keys
(tests/link_keys.py): the table's key file and the controller's are written into ``tmp``, the
jackpot config (``tmp/jackpot.toml``) lists the table's public key, the table config the
controller's.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from link_keys import (
    CONTROLLER_KID,
    controller_signer,
    jackpot_config_text,
    table_mqtt_lines,
    table_signer,
    write_key,
)
from mqtt_broker import CONTROLLER

from controller.runtime.control import ControlClient

ROOT = Path(__file__).resolve().parent.parent
TABLE = "hcm-bj-07"
# one round: spot 1 $25 + Blazing 7's $5, spot 2 $10. Deal order: spot 1, spot 2, dealer up,
# spot 1, spot 2, hole. Spot 1 10H 7S = 17, spot 2 9C 8H = 17, dealer 6D 10C = 16 draws 9S.
ROUND_CARDS = ["10H", "9C", "6D", "7S", "8H", "10C", "9S"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def table_config(
    tmp: Path,
    port: int,
    password_file: Path,
    web: str = "",
    signing_key: Path | None = None,
    extra: str = "",
    enclosure_door: bool = False,
) -> Path:
    """The test table's config; ``web`` is the body of a ``[web]`` section (none if empty);
    ``signing_key``: the table's key file (default ``tmp/table.key``, written if missing)."""
    signing_key = signing_key or tmp / "table.key"
    if not signing_key.exists():
        write_key(table_signer(TABLE), signing_key)
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
jackpot_paid = 25
recall_last = 27
{"enclosure_door = 26" if enclosure_door else ""}

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
{table_mqtt_lines(TABLE, signing_key)}
[control]
socket = "{tmp / "control.sock"}"
"""
        + (f"\n[web]\n{web}\n" if web else "")
        + (f"\n{extra}\n" if extra else ""),  # more sections (``[clock]`` ...)
        encoding="utf-8",
    )
    return path


class Rig:
    """The processes of one test and the ways to drive them."""

    def __init__(
        self,
        tmp: Path,
        broker,
        web: str = "",
        cards: list[str] | None = None,
        extra: str = "",
        enclosure_door: bool = False,
    ) -> None:
        self.tmp = tmp
        self.broker = broker
        table_pw = tmp / "table.pw"
        table_pw.write_text(broker.passwords[TABLE] + "\n")
        ctl_pw = tmp / "controller.pw"
        ctl_pw.write_text(broker.passwords[CONTROLLER] + "\n")
        for secret in (table_pw, ctl_pw):
            secret.chmod(0o600)  # others may not read it (issue 26)
        self.config = table_config(
            tmp, broker.port, table_pw, web, extra=extra, enclosure_door=enclosure_door
        )
        self.jackpot_config = tmp / "jackpot.toml"
        self.jackpot_config.write_text(  # /metrics on a free port (named in jackpot.log)
            jackpot_config_text() + "\n[metrics]\nport = 0\n", encoding="utf-8"
        )
        controller_key = write_key(controller_signer(), tmp / "controller.key")
        self.ledger = tmp / "ledger.sqlite"
        self.procs: list[subprocess.Popen] = []
        self.jackpot = self._start(
            "jackpot",
            [
                sys.executable,
                "-m",
                "jackpot.cli",
                "--config",
                str(self.jackpot_config),
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
                "--signing-key",
                str(controller_key),
                "--key-id",
                CONTROLLER_KID,
            ],
        )
        cards = ",".join(cards or ROUND_CARDS * 4)  # ``cards``: the shoe's order, scripted
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
        deadline = time.monotonic() + 60  # a loaded machine starts it late
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

    def wait_web(self, url: str, timeout: float = 60.0) -> None:
        """Until the table's web server at ``url`` answers ``/healthz`` (any status: a 503
        while the shoe connects is an answer); a loaded machine starts the pages late."""
        import urllib.error
        import urllib.request

        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(url + "/healthz", timeout=1).close()
                return
            except urllib.error.HTTPError:
                return  # it answers
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

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
        sensor = re.fullmatch(r"sensors\.(\d+)\.(\w+)", str(fields.get("name", "")))
        if op == "input" and sensor:  # its event comes through the pin's debounce (and an
            # expander's interrupt): another event may be journaled first; wait for the table
            # to see the chips, so what the test does next comes after it, as a dealer's would
            bet = {"spot": int(sensor[1]), "circle": sensor[2]}
            self.wait(
                lambda a: (bet in a["status"]["snapshot"]["bets"]) == bool(fields.get("active")),
                f"the table to see {fields['name']}",
            )

    def deal(self) -> None:
        dealt = self.status()["status"]["snapshot"]["shoe"]["dealt"]
        self.shoe.stdin.write("deal\n")
        line = self.shoe.stdout.readline()
        while line and not line.startswith("sent card"):  # "sent version ..." at each open
            line = self.shoe.stdout.readline()
        assert line.startswith("sent card"), line
        # the card itself, not any journaled event: a restart's or the link's own events may
        # come first on a loaded machine
        self.wait(
            lambda a: a["status"]["snapshot"]["shoe"]["dealt"] > dealt, f"card ({line.strip()})"
        )

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


SETTLEMENT_KEY = ("spot", "wager", "hand", "outcome", "stake", "paid", "returned")


def replayed_settlements(script: Path) -> list[tuple]:
    """``table-controller replay SCRIPT --json``'s settlements, as (spot, wager, hand,
    outcome, stake, paid, returned) tuples in settlement order (compare with a recall
    record's ``result.settlements`` through :func:`settlement_keys`)."""
    replay = subprocess.run(
        [sys.executable, "-m", "controller.cli", "replay", str(script), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    return settlement_keys(json.loads(replay.stdout)["settlements"])


def settlement_keys(settlements: list[dict]) -> list[tuple]:
    return [tuple(s.get(k) for k in SETTLEMENT_KEY) for s in settlements]
