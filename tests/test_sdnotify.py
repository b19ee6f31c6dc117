"""controller.sdnotify on real AF_UNIX datagram sockets (a path and an abstract name), bad
environment values, no socket at all; and jackpot-controller speaking the protocol as the
Type=notify unit (systemd/jackpot-controller.service) expects: READY=1, WATCHDOG=1 and
STOPPING=1, each from the main process (NotifyAccess=main)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from link_keys import CONTROLLER_KID, controller_signer, write_key

from controller import sdnotify
from controller.sdnotify import Notifier, notify, watchdog_interval_ms

ROOT = Path(__file__).resolve().parent.parent


def receiver(address: str) -> socket.socket:
    """A datagram socket bound at ``address`` (a path, or ``\\0name``), as systemd's is."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


@pytest.fixture
def path_socket(tmp_path):
    path = str(tmp_path / "notify")
    sock = receiver(path)
    yield path, sock
    sock.close()


@pytest.fixture
def abstract_socket():
    name = f"table-controller-test-{uuid.uuid4().hex}"
    sock = receiver("\0" + name)
    yield name, sock
    sock.close()


def test_a_message_is_one_datagram_of_lines_at_a_path(path_socket):
    path, sock = path_socket
    with Notifier(env={"NOTIFY_SOCKET": path}) as notifier:
        assert notifier.enabled
        assert notifier.notify("READY=1", "STATUS=table open, 3 spots")
        assert sock.recv(4096) == b"READY=1\nSTATUS=table open, 3 spots"
        assert notifier.notify("WATCHDOG=1")
        assert sock.recv(4096) == b"WATCHDOG=1"


def test_an_at_sign_names_the_abstract_namespace(abstract_socket):
    name, sock = abstract_socket
    assert notify("STOPPING=1", env={"NOTIFY_SOCKET": "@" + name})
    assert sock.recv(4096) == b"STOPPING=1"
    assert sdnotify.socket_address({"NOTIFY_SOCKET": "@" + name}) == "\0" + name


def test_module_notify_reads_the_environment_on_each_call(monkeypatch, path_socket, tmp_path):
    path, sock = path_socket
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    assert notify("READY=1")
    assert sock.recv(4096) == b"READY=1"
    other = str(tmp_path / "other")
    with receiver(other) as second:
        monkeypatch.setenv("NOTIFY_SOCKET", other)
        assert notify("STATUS=moved")
        assert second.recv(4096) == b"STATUS=moved"
    monkeypatch.delenv("NOTIFY_SOCKET")
    assert notify("READY=1") is False


def test_without_systemd_every_call_is_a_quiet_no(monkeypatch, caplog):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    caplog.set_level(logging.DEBUG, "controller.sdnotify")
    notifier = Notifier()
    assert not notifier.enabled
    assert notifier.notify("READY=1") is False
    assert notify("READY=1") is False
    assert notify("WATCHDOG=1", env={"NOTIFY_SOCKET": ""}) is False
    notifier.close()
    notifier.close()  # safe twice
    assert caplog.records == []


def test_a_missing_socket_is_logged_once_and_never_raises(tmp_path, caplog):
    path = str(tmp_path / "gone")
    caplog.set_level(logging.INFO, "controller.sdnotify")
    notifier = Notifier(env={"NOTIFY_SOCKET": path})
    for _ in range(3):
        assert notifier.notify("WATCHDOG=1") is False
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert path in warnings[0].getMessage()
    with receiver(path) as sock:  # systemd is back: sent again, and said so
        assert notifier.notify("WATCHDOG=1")
        assert sock.recv(4096) == b"WATCHDOG=1"
    assert "works again" in caplog.records[-1].getMessage()
    notifier.close()


def test_a_full_socket_does_not_block_the_caller(path_socket):
    path, _sock = path_socket  # nobody reads: the kernel queue fills (max_dgram_qlen)
    notifier = Notifier(path)
    start = time.monotonic()
    results = [notifier.notify("WATCHDOG=1") for _ in range(2000)]
    assert time.monotonic() - start < 2
    assert results[0] is True
    assert results[-1] is False
    notifier.close()


def test_a_line_cannot_smuggle_in_another_line(path_socket):
    path, sock = path_socket
    assert notify("STATUS=shoe error: bad\nREADY=1\r", env={"NOTIFY_SOCKET": path})
    assert sock.recv(4096) == b"STATUS=shoe error: bad READY=1 "


@pytest.mark.parametrize("lines", [(), ("READY",), ("READY=1", "")])
def test_a_line_that_is_not_key_value_is_a_programming_error(lines):
    with pytest.raises(ValueError):
        notify(*lines, env={})  # even outside systemd, so it shows in tests


def test_unsupported_socket_forms_are_ignored_with_a_warning(caplog):
    caplog.set_level(logging.WARNING, "controller.sdnotify")
    assert sdnotify.socket_address({"NOTIFY_SOCKET": "vsock:2:1234"}) is None
    assert notify("READY=1", env={"NOTIFY_SOCKET": "relative/path"}) is False
    assert len(caplog.records) == 2


# -- the watchdog ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "interval"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 30_000),  # WatchdogSec=30
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"}, 30_000),
        ({"WATCHDOG_USEC": " 1500 "}, 1),
        ({"WATCHDOG_USEC": "1"}, 1),  # never 0 (a busy loop)
        ({}, None),
        ({"WATCHDOG_PID": "4242"}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4243"}, None),  # another process's
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "me"}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": ""}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "0"}, None),
        ({"WATCHDOG_USEC": ""}, None),
        ({"WATCHDOG_USEC": "thirty"}, None),
        ({"WATCHDOG_USEC": "30s"}, None),
        ({"WATCHDOG_USEC": "1.5"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "-30000000"}, None),
    ],
)
def test_watchdog_from_the_environment(env, interval):
    assert watchdog_interval_ms(env, pid=4242) == interval


def test_watchdog_pid_defaults_to_this_process(monkeypatch):
    monkeypatch.setenv("WATCHDOG_USEC", "20000000")
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert watchdog_interval_ms() == 20_000
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))
    assert watchdog_interval_ms() is None
    monkeypatch.delenv("WATCHDOG_PID")
    assert watchdog_interval_ms() == 20_000


# -- jackpot-controller under a notify socket --------------------------------------------

UCRED = struct.Struct("iII")  # struct ucred: pid, uid, gid


def receive_with_sender(sock: socket.socket) -> tuple[str, int]:
    """One datagram and the pid the kernel says sent it (SO_PASSCRED, as systemd reads it)."""
    data, ancillary, _flags, _addr = sock.recvmsg(4096, socket.CMSG_SPACE(UCRED.size))
    pid = next(
        UCRED.unpack(cdata[: UCRED.size])[0]
        for level, kind, cdata in ancillary
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS
    )
    return data.decode(), pid


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_jackpot_controller_is_ready_pings_the_watchdog_and_says_stopping(tmp_path):
    path = str(tmp_path / "notify")
    sock = receiver(path)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    pw.chmod(0o600)  # others may not read it (issue 26)
    args = ["--config", str(ROOT / "config" / "jackpot.example.toml")]
    args += ["--ledger", str(tmp_path / "ledger.sqlite"), "--host", "127.0.0.1"]
    args += ["--port", str(free_port()), "--password-file", str(pw), "--log-level", "ERROR"]
    key = write_key(controller_signer(), tmp_path / "link.key")
    args += ["--signing-key", str(key), "--key-id", CONTROLLER_KID]
    code = "import sys; from jackpot.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NOTIFY_SOCKET": path}
    env.update(WATCHDOG_USEC="1000000")  # WatchdogSec=1: a ping every 0.5 s
    env.pop("WATCHDOG_PID", None)
    child = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, env=env)
    try:
        seen: list[str] = []
        while not any(m == "WATCHDOG=1" for m in seen):
            message, pid = receive_with_sender(sock)  # times out after 5 s: a failure
            assert pid == child.pid, "NotifyAccess=main: the main process must send"
            seen.append(message)
        assert seen[0].startswith("READY=1\nSTATUS=started (boot 1), broker 127.0.0.1:")
        # no broker listens on that port: the service is up and says it waits
        assert any(m.startswith("STATUS=waiting for the broker at 127.0.0.1:") for m in seen)
        child.send_signal(signal.SIGTERM)
        while True:
            message, pid = receive_with_sender(sock)
            if message.startswith("STOPPING=1"):
                break
        assert pid == child.pid
        assert child.wait(10) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        sock.close()
