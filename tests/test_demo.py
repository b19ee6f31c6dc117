"""The demo end to end: ``python -m controller.demo.stage`` as a subprocess, real Mosquitto,
jackpot controller, sign, shoe simulator and table daemon.

- ``--rounds 5``: exit 0, five rounds in the table's journal, the ledger applied exactly what
  the journal's outbox wrote (every message, in order, the contributions to the cent), nothing
  left running; a second run in the same ``--dir`` resumes at round 6 with the same link
  signing keys;
- without ``--rounds``: SIGINT after two rounds stops everything cleanly.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

from controller.demo.files import (
    CONTROLLER_KEY_ID,
    TABLE_ID,
    TABLE_KEY_ID,
    find_mosquitto,
    jackpot_config,
    link_keys,
    pin_map,
)
from controller.demo.files import table_config as demo_table_config
from controller.demo.play import DemoError, new_items, sign_meters

ROOT = Path(__file__).resolve().parent.parent

needs_broker = pytest.mark.skipif(
    find_mosquitto() is None, reason="mosquitto is not installed (scripts/setup.sh installs it)"
)


def demo(workdir: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "controller.demo.stage",
        "--seed",
        "1",
        "--dir",
        str(workdir),
        *args,
    ]


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes_in(workdir: Path) -> list[str]:
    """Command lines of running processes that name ``workdir`` (none may be left)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(workdir) in cmdline and alive(int(entry.name)):
            found.append(f"{entry.name}: {cmdline}")
    return found


def assert_nothing_left(workdir: Path) -> None:
    pids = json.loads((workdir / "pids.json").read_text())["pids"]
    assert set(pids) == {"mosquitto", "jackpot-controller", "sign", "shoe-sim", "table"}
    still = {name: pid for name, pid in pids.items() if alive(pid)}
    assert not still, f"left running: {still}"
    assert processes_in(workdir) == []


def journal_publishes(journal_path: Path) -> tuple[list, tuple[int, int]]:
    """Every publish the journaled events make (replayed through a fresh table), and the
    outbox's (written, acked)."""
    from controller.games import load_game
    from controller.journal import Journal
    from controller.table import Table
    from controller.table.effects import Publish

    with Journal(journal_path) as journal:
        table = Table(load_game(journal.game), journal.settings)
        pubs = [
            effect
            for event in journal.events()
            for effect in table.handle(event).effects
            if isinstance(effect, Publish)
        ]
        written, acked, _rows = journal.outbox_rows()
    return pubs, (written, acked)


def check_ledger(workdir: Path) -> None:
    """The ledger applied exactly the table's outbox: every seq once, in order, as the kind
    the journal made it, and the contributions add up to the cent."""
    from jackpot.ledger import Ledger
    from jackpot.pools import contribution, load_config

    pubs, (written, acked) = journal_publishes(workdir / "table" / "journal.sqlite")
    assert written == len(pubs) and acked == written
    assert any(p.topic == "contribution" for p in pubs)  # 5+ rounds with Blazing 7's bets
    config = load_config(workdir / "jackpot.toml")
    expected: dict[str, Fraction] = {}
    for p in pubs:
        if p.topic != "contribution":
            continue
        pools = [config.progressive_for(p.payload["wager"])]
        if p.payload["mystery"]:
            pools.append(config.mystery_for(p.payload["wager"]))
        for pool in pools:
            expected[pool.name] = expected.get(pool.name, Fraction(0)) + contribution(
                pool, p.payload["stake"]
            )
    with Ledger(workdir / "ledger.sqlite", config) as ledger:
        applied = [(seq, kind) for table, seq, kind, *_ in ledger.applied() if table == TABLE_ID]
        assert applied == [(n, p.topic) for n, p in enumerate(pubs, 1)]
        assert ledger.ack(TABLE_ID) == written
        for pool in config.pools:
            assert ledger.totals(pool).get("contribution", Fraction(0)) == expected.get(
                pool, Fraction(0)
            ), pool


def rounds_in_journal(workdir: Path) -> tuple[int, int | None, int | None]:
    from controller.journal import Journal

    with Journal(workdir / "table" / "journal.sqlite") as journal:
        return journal.round_count()


# -- pure parts ----------------------------------------------------------------------------


def test_the_demo_table_is_a_full_seven_spot_table(tmp_path: Path) -> None:
    """Seven spots, every circle of the profile with its sensor and lamp (on the shipped pin
    map's spot boards: simulated MCP23017s), every console input, nothing left unwired."""
    from controller.config import check_config, load_table_config
    from controller.table import table_circles
    from drivers.gpio_pins import wiring_gaps

    gpio = pin_map()
    assert gpio["game"] == "pa-standard" and len(gpio["expanders"]) == 7
    path = tmp_path / "table.toml"
    keys = link_keys(tmp_path)
    path.write_text(demo_table_config(tmp_path, 1883, keys))
    config = load_table_config(path)
    assert config.table_id == TABLE_ID and config.gpio.pin_factory == "mock"
    assert config.settings.spots == 7
    circles = table_circles(config.rules)
    assert len(circles) == 4
    assert wiring_gaps(config.gpio.pin_map, circles, 7) == []
    # every spot board line, and the console's JACKPOT PAID on spot 1's board (issue 28)
    # JACKPOT PAID on spot 1's board (issue 28), RECALL LAST on spot 2's (issue 30)
    assert len(config.gpio.pin_map.expander_lines()) == 7 * (4 + 4 + 1 + 3) + 2
    check = check_config(path, files=False)
    assert check.errors == [] and "7 spots" in check.summary
    assert not config.web.enabled  # no web pages unless asked for
    from controller.web.auth import hash_password, verify_password

    stored = hash_password("demo password", n=2**10)
    path.write_text(demo_table_config(tmp_path, 1883, keys, web_port=8099, web_hash=stored))
    web = load_table_config(path).web
    assert (web.enabled, web.bind, web.port) == (True, "127.0.0.1", 8099)
    assert verify_password("demo password", web.password_hash)


def test_the_demo_makes_its_link_keys_once_and_both_configs_trust_them(tmp_path: Path) -> None:
    """The table signs with its own key, which the jackpot config lists; the table trusts the
    controller's key; a second start reuses the same files (0600)."""
    from controller.config import link_keys as table_link_keys
    from controller.config import load_table_config
    from controller.link.signing import Signer, Verifier, load_signing_key
    from jackpot.pools import parse_config

    keys = link_keys(tmp_path)
    assert keys.table_file.parent == keys.controller_file.parent == tmp_path / "keys"
    for path in (keys.table_file, keys.controller_file):
        assert path.stat().st_mode & 0o777 == 0o600
    made = {path: path.read_bytes() for path in (keys.table_file, keys.controller_file)}
    assert link_keys(tmp_path) == keys  # resumed: read again, not made again
    assert {path: path.read_bytes() for path in made} == made
    assert keys.controller_arg == f"{CONTROLLER_KEY_ID}={keys.controller_public}"

    path = tmp_path / "table.toml"
    path.write_text(demo_table_config(tmp_path, 1883, keys))
    signer, verifier = table_link_keys(load_table_config(path))
    assert (signer.key_id, signer.public_key) == (TABLE_KEY_ID, keys.table_public)
    controller = Signer(CONTROLLER_KEY_ID, load_signing_key(keys.controller_file))
    topic = f"bj/v1/jackpot/{TABLE_ID}/ack"
    assert verifier.verify(topic, controller.sign(topic, {"v": 1, "seq": 1})) == CONTROLLER_KEY_ID

    jackpot = parse_config(jackpot_config(keys), "jackpot.toml")
    table_topic = f"bj/v1/table/{TABLE_ID}/status"
    signed = signer.sign(table_topic, {"v": 1, "state": "online"})
    assert Verifier(jackpot.table_keys[TABLE_ID]).verify(table_topic, signed) == TABLE_KEY_ID


def test_a_demo_key_others_may_read_is_refused_with_what_to_do(tmp_path: Path) -> None:
    keys = link_keys(tmp_path)
    keys.table_file.chmod(0o644)
    with pytest.raises(DemoError, match=r"chmod 600 .*hcm-bj-07\.key.*remove .* to make a new"):
        link_keys(tmp_path)


def test_sign_screen_and_feed_helpers() -> None:
    screen = (
        "JACKPOT METERS                       2026-11-21 21:43:22 UTC\n" + "=" * 60 + "\n"
        "Blazing 7's                           $10,001.50   seq 3\n"
        "Must-Hit-By Mystery                      $250.15   seq 3\n"
        "    must hit by $1,000.00\n" + "=" * 60 + "\nlive\n"
    )
    assert sign_meters("half a screen\nJACKPOT METERS\n===\n" + screen + "JACKPOT METERS\n") == (
        "live",
        [("Blazing 7's", "$10,001.50"), ("Must-Hit-By Mystery", "$250.15")],
    )
    assert sign_meters("nothing") is None
    a, b, c = {"t": 1}, {"t": 2}, {"t": 3}
    assert new_items([], [a, b]) == [a, b]
    assert new_items([a, b], [a, b]) == []
    assert new_items([a, b], [b, c]) == [c]


# -- the real thing ------------------------------------------------------------------------


@needs_broker
def test_demo_plays_five_rounds_then_resumes_at_round_six(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    first = subprocess.run(
        demo(workdir, "--rounds", "5"), capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert "(pa-standard, 7 spots) at round 1" in first.stdout
    played = [line for line in first.stdout.splitlines() if line.startswith("round ")]
    assert [line.split()[1] for line in played] == ["1", "2", "3", "4", "5"]
    assert "link up" in played[-1] and "Blazing 7's $" in played[-1]
    spots = {int(n) for line in played for n in re.findall(r"spot (\d) [+-]\$", line)}
    assert spots == set(range(1, 8)), "the autopilot plays every spot"
    assert rounds_in_journal(workdir) == (5, 1, 5)
    check_ledger(workdir)
    assert_nothing_left(workdir)
    keys = {path: path.read_bytes() for path in (workdir / "keys").iterdir()}
    assert len(keys) == 2

    second = subprocess.run(
        demo(workdir, "--rounds", "1"), capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert "at round 5, phase settled" in second.stdout
    played = [line for line in second.stdout.splitlines() if line.startswith("round ")]
    assert [line.split()[1] for line in played] == ["6"]
    assert rounds_in_journal(workdir) == (6, 1, 6)
    check_ledger(workdir)
    assert_nothing_left(workdir)
    assert {path: path.read_bytes() for path in (workdir / "keys").iterdir()} == keys
    assert "ALARM" not in (workdir / "jackpot-controller.log").read_text()
    assert "REFUSED" not in first.stdout + second.stdout


@needs_broker
def test_sigint_stops_every_process(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    proc = subprocess.Popen(demo(workdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        out, rounds = b"", 0
        deadline = time.monotonic() + 40
        while rounds < 2:
            assert time.monotonic() < deadline, out.decode()
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                data = os.read(proc.stdout.fileno(), 4096)
                assert data, out.decode() + proc.stderr.read().decode()
                out += data
                rounds = sum(line.startswith(b"round ") for line in out.splitlines())
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (out + rest + err).decode()
    assert b"stopping (signal)" in rest
    assert_nothing_left(workdir)
    played, _first, last = rounds_in_journal(workdir)
    assert played >= 2 and last == played


def test_control_socket_client_gone_before_its_answer_is_no_error(tmp_path: Path, capsys) -> None:
    """The demo's stage may close its connection mid-request when it is stopped: the server
    drops the answer quietly (it used to print a BrokenPipeError traceback in the table's log)."""
    import socket
    import threading

    from controller.runtime.control import ControlClient, ControlServer

    answered = threading.Event()

    def slow(request: dict) -> dict:
        time.sleep(0.2)
        answered.set()
        return {"ok": True}

    server = ControlServer(tmp_path / "c.sock", slow)
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(tmp_path / "c.sock"))
            s.sendall(b'{"op":"status"}\n')
        assert answered.wait(15)
        time.sleep(0.1)
        with ControlClient(tmp_path / "c.sock") as client:  # still serving
            assert client.request("status") == {"ok": True}
    finally:
        server.close()
    assert "Traceback" not in capsys.readouterr().err


def test_a_child_that_does_not_stop_is_killed_with_its_threads_stacks_in_the_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that ignores SIGTERM (as a hung table would) is asked for its stacks with
    SIGABRT (the table enables faulthandler), then killed; the problem quotes its log's end,
    so a CI run shows where it hung."""
    from controller.demo import stage

    monkeypatch.setattr(stage, "STOP_TIMEOUT_S", 0.5)
    log = tmp_path / "hung.log"
    code = (
        "import faulthandler, signal, sys, time\n"
        "faulthandler.enable(all_threads=True)\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "def stuck_in_a_commit():\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(120)\n"
        "stuck_in_a_commit()\n"
    )
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=out,
            start_new_session=True,
        )  # fmt: skip
    assert popen.stdout is not None and popen.stdout.readline() == b"ready\n"
    child = stage.Child("table", popen, log)
    problem = stage.Stage._stop(None, child)  # type: ignore[arg-type]  # self is not used
    assert popen.returncode is not None
    assert problem is not None and problem.startswith("table did not stop within 0.5 s")
    assert "Fatal Python error: Aborted" in problem and "stuck_in_a_commit" in problem


def test_the_table_daemon_enables_faulthandler() -> None:
    """``table-controller run`` turns faulthandler on before the table starts (a fault or the
    demo's SIGABRT then leaves every thread's stack in the table's log)."""
    import ast

    tree = ast.parse((ROOT / "controller" / "cli.py").read_text(encoding="utf-8"))
    run = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_cmd_run")
    calls = [ast.unparse(n.func) for n in ast.walk(run) if isinstance(n, ast.Call)]
    assert "faulthandler.enable" in calls
    assert calls.index("faulthandler.enable") < calls.index("run_table")
