"""Log lines reach journald with their priority (controller/logs.py), from real processes.

journald reads a ``<N>`` prefix on each line of a service's stderr stream as its syslog
priority (sd-daemon(3)) and tells the service which stream is its own by ``$JOURNAL_STREAM``
(``DEVICE:INODE``, systemd.exec(5)). Here the stream is a real file whose device and inode
the test puts in ``$JOURNAL_STREAM``, exactly as systemd does for its socket: the table
controller logs a wrong password, the jackpot controller its warnings, each with ``<4>``;
without the variable, or with one naming another stream, the lines carry the time instead.
Where a journald runs (not in every container), ``journalctl -p warning`` finds the line.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from link_keys import CONTROLLER_KID, controller_signer, write_key
from mqtt_broker import broker  # noqa: F401
from table_rig import ROOT, Rig, free_port

from controller import logs
from controller.web.auth import hash_password

TIMESTAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "


def stream_id(path: Path) -> str:
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}"


def run_jackpot(tmp_path: Path, log: Path, env: dict[str, str]) -> str:
    """The real jackpot controller, stderr into ``log``, with the example config (no table
    keys: a warning at start) and no broker (a warning per try); stopped by SIGTERM once it
    has said both. Returns what it wrote."""
    config = tmp_path / "jackpot.toml"
    text = (ROOT / "config" / "jackpot.example.toml").read_text(encoding="utf-8")
    config.write_text(text + "\n[metrics]\nport = 0\n", encoding="utf-8")
    key = tmp_path / "controller.key"
    if not key.exists():
        write_key(controller_signer(), key)
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    pw.chmod(0o600)  # others may not read it (issue 26)
    argv = [sys.executable, "-m", "jackpot.cli", "--config", str(config),
            "--ledger", str(tmp_path / "ledger.sqlite"), "--port", str(free_port()),
            "--password-file", str(pw), "--signing-key", str(key),
            "--key-id", CONTROLLER_KID]  # fmt: skip
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=out, cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 20
        while "cannot reach the broker" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    return log.read_text()


def test_the_jackpot_controller_under_journald_prefixes_each_line_and_drops_the_time(tmp_path):
    log = tmp_path / "stderr"
    log.touch()
    env = {**os.environ, "JOURNAL_STREAM": stream_id(log)}
    text = run_jackpot(tmp_path, log, env)
    lines = text.splitlines()
    assert lines and all(re.match(r"<[2-7]>(jackpot|controller)\.", line) for line in lines), text
    assert any(
        line.startswith("<4>jackpot.cli WARNING: no public key in the config") for line in lines
    ), text
    assert any(line.startswith("<4>") and "cannot reach the broker" in line for line in lines)
    assert any(line.startswith("<6>") and "metrics at http://127.0.0.1:" in line for line in lines)
    assert not re.search(TIMESTAMP, text)


@pytest.mark.parametrize("journal", [None, "another stream"])
def test_on_a_terminal_or_another_stream_each_line_starts_with_the_time(tmp_path, journal):
    log = tmp_path / "stderr"
    log.touch()
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    if journal:  # inherited from a service, but stderr was sent elsewhere
        other = tmp_path / "journal-socket-stand-in"
        other.touch()
        env["JOURNAL_STREAM"] = stream_id(other)
    text = run_jackpot(tmp_path, log, env)
    lines = text.splitlines()
    assert lines
    assert all(re.match(TIMESTAMP + r"[A-Z]+ (jackpot|controller)\.", line) for line in lines)
    assert re.search(TIMESTAMP + r"WARNING jackpot.cli: no public key", text)
    assert "<4>" not in text and "<6>" not in text


def test_a_wrong_password_on_the_table_is_a_warning_in_the_journal(tmp_path, broker, monkeypatch):  # noqa: F811
    """``table-controller run`` as systemd starts it: stderr the journal stream."""
    port = free_port()
    web = f'bind = "127.0.0.1"\nport = {port}\npassword_hash = "{hash_password("x" * 12, n=2**10)}"'
    rig = Rig(tmp_path, broker, web=web)
    table_log = tmp_path / "table.log"
    table_log.touch()  # Rig appends to it: the same inode
    monkeypatch.setenv("JOURNAL_STREAM", stream_id(table_log))
    try:
        rig.start_table()
        body = json.dumps({"name": "Ana 4411", "password": "not the password"})
        deadline = time.monotonic() + 10
        while True:  # the web server starts after the control socket
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                conn.request("POST", "/login", body, {"Content-Type": "application/json"})
                assert conn.getresponse().status == 401
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline, "the web server never answered"
                time.sleep(0.05)
            finally:
                conn.close()
        deadline = time.monotonic() + 10
        while "wrong password" not in rig.log("table") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        rig.stop()
    lines = rig.log("table").splitlines()
    (wrong,) = [line for line in lines if "wrong password" in line]
    assert re.fullmatch(
        r"<4>table-controller\.web WARNING: web: wrong password for 'Ana 4411'.*", wrong
    )
    assert lines and all(re.match(r"<[2-7]>", line) for line in lines), lines[:5]
    assert not re.search(TIMESTAMP, "\n".join(lines))
    assert re.search(TIMESTAMP, rig.log("jackpot"))  # started without the variable


def test_every_line_of_a_traceback_carries_the_priority(tmp_path):
    log = tmp_path / "stderr"
    log.touch()
    code = (
        "import logging; from controller import logs; logs.setup('DEBUG')\n"
        "log = logging.getLogger('controller.test')\n"
        "log.debug('d'); log.info('i'); log.warning('w'); log.critical('c')\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    log.exception('ledger write failed')\n"
    )
    with open(log, "ab") as out:
        subprocess.run(
            [sys.executable, "-c", code], stderr=out, check=True, cwd=ROOT,
            env={**os.environ, "JOURNAL_STREAM": stream_id(log)},
        )  # fmt: skip
    lines = log.read_text().splitlines()
    assert lines[:4] == [
        "<7>controller.test DEBUG: d",
        "<6>controller.test INFO: i",
        "<4>controller.test WARNING: w",
        "<2>controller.test CRITICAL: c",
    ]
    assert lines[4] == "<3>controller.test ERROR: ledger write failed"
    assert len(lines) > 6 and all(line.startswith("<3>") for line in lines[4:])
    assert lines[-1] == "<3>ZeroDivisionError: division by zero"


def test_priorities_and_stream_matching():
    assert [logs.priority(n) for n in (50, 40, 30, 20, 10)] == [2, 3, 4, 6, 7]
    with open(__file__) as f:
        assert logs.journal_stream(f, {"JOURNAL_STREAM": stream_id(Path(__file__))})
        assert not logs.journal_stream(f, {"JOURNAL_STREAM": "1:2"})
        assert not logs.journal_stream(f, {"JOURNAL_STREAM": "garbage"})
        assert not logs.journal_stream(f, {})


def journald_running() -> bool:
    """systemd-cat and journalctl are installed and a journald answers on its stream socket."""
    if not (shutil.which("systemd-cat") and shutil.which("journalctl")):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect("/run/systemd/journal/stdout")
        except OSError:
            return False
    return True


@pytest.mark.skipif(not journald_running(), reason="no journald here (a container without systemd)")
def test_journalctl_shows_the_warning_at_its_priority(tmp_path):
    """The real journal: systemd-cat hands the child a journal stream as systemd does; the
    child names it in $JOURNAL_STREAM as systemd would (systemd-cat does not set it)."""
    ident = f"bj-test-{uuid.uuid4().hex[:8]}"
    code = (
        "import logging, os, sys; st = os.fstat(2); "
        "os.environ['JOURNAL_STREAM'] = f'{st.st_dev}:{st.st_ino}'; "
        "from controller import logs; logs.setup('INFO'); "
        "logging.getLogger('controller.test').warning('ALARM signature from hcm-bj-07')"
    )
    subprocess.run(
        ["systemd-cat", "-t", ident, "--level-prefix=true", sys.executable, "-c", code],
        check=True, cwd=ROOT,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["journalctl", "-t", ident, "-p", "warning", "-o", "json", "--no-pager"],
            capture_output=True, text=True,
        )  # fmt: skip
        entries = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        if entries:
            break
        time.sleep(0.2)
    assert entries, out.stderr
    assert entries[0]["PRIORITY"] == "4"
    assert entries[0]["MESSAGE"] == "controller.test WARNING: ALARM signature from hcm-bj-07"
