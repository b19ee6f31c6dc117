"""A real Mosquitto for tests: free loopback port, temporary config, the repo's ACL.

Use it from a test file with::

    from mqtt_broker import BrokerClient, broker, broker_factory  # noqa: F401

- ``broker``: a started :class:`MosquittoBroker` (stopped after the test), with the users
  ``hcm-bj-07`` and ``hcm-bj-08`` (tables), ``jackpot-controller`` and ``sign-lobby``, and two
  test-only users (below);
- ``broker_factory(**overrides)``: the same with some global options replaced
  (``broker_factory(max_queued_messages=10)``), for tests of a limit; ``listener_options=``
  replaces listener options (``{"allow_anonymous": "true"}``).

The config is generated: the ACL is ``config/mosquitto/acl`` itself followed by
:data:`TEST_ACL`, the passwords are random and hashed with ``mosquitto_passwd``, the global
limits (queues, in-flight, sizes, session expiry) and the listeners' client-id binding
(``use_username_as_clientid``) are copied from ``config/mosquitto/mosquitto.conf``, so the tests
run against the production values.

The client id is the username (as in production), so a second connection with a user's name
displaces the first. A test that watches while the real controller or table runs uses
:data:`OBSERVER` (reads everything, publishes nothing; one connection at a time, like any
user); one that must publish as the controller while the real one runs uses
:data:`CONTROLLER_TWIN` (the controller's rights, its own name).

Persistence is on, in the test's directory: :meth:`MosquittoBroker.restart` comes back on
the same port with the sessions and retained messages it saved; :meth:`MosquittoBroker.kill`
is a ``kill -9`` (nothing saved since the last autosave).

:class:`BrokerClient` is a paho-mqtt 2.x MQTT 5 client that waits for CONNACK, SUBACK and PUBACK
and returns their reason codes, so a refusal by the ACL is visible (135 Not authorized).
"""

from __future__ import annotations

import contextlib
import os
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "config" / "mosquitto"
ACL_FILE = CONFIG_DIR / "acl"
PRODUCTION_CONF = CONFIG_DIR / "mosquitto.conf"

TABLES = ("hcm-bj-07", "hcm-bj-08")
CONTROLLER = "jackpot-controller"
SIGN = "sign-lobby"
OBSERVER = "test-observer"
CONTROLLER_TWIN = "test-controller-twin"
USERS = (*TABLES, CONTROLLER, SIGN, OBSERVER, CONTROLLER_TWIN)

TEST_ACL = f"""
# --- Test only (tests/mqtt_broker.py), appended to config/mosquitto/acl. ---
# A spy that watches everything without displacing the client it watches.
user {OBSERVER}
topic read #
topic deny bj/v1/table/{OBSERVER}/#

# The controller's rights under another name: a test publishes as the controller while the
# real one stays connected.
user {CONTROLLER_TWIN}
topic read bj/v1/table/+/#
topic write bj/v1/jackpot/#
topic write bj/v1/meters/#
topic deny bj/v1/table/{CONTROLLER_TWIN}/#
"""

# The demo's broker helpers are the same: one copy of the limits parsing and of the search
# for the executable (controller/demo/files.py), so the tests and the demo run the same broker.
from controller.demo.files import (  # noqa: E402
    LIMIT_OPTIONS,  # noqa: F401 - re-exported for the broker tests
    find_mosquitto,
    free_port,
    listener_settings,
)
from controller.demo.files import production_limits as _production_limits  # noqa: E402


def production_limits(conf: Path = PRODUCTION_CONF) -> dict[str, str]:
    """The global limits (:data:`LIMIT_OPTIONS`) set in ``conf``, before its first listener;
    the production config must exist (a test broker without its limits proves nothing)."""
    if not conf.exists():
        raise FileNotFoundError(conf)
    return _production_limits(conf)


class BrokerError(RuntimeError):
    """The test broker did not start (its log is in the message)."""


class MosquittoBroker:
    """One Mosquitto process on ``127.0.0.1:port`` with files under ``workdir``."""

    host = "127.0.0.1"

    def __init__(
        self,
        workdir: Path,
        *,
        listener_options: dict[str, str] | None = None,
        **overrides: object,
    ) -> None:
        exe = find_mosquitto()
        if exe is None:
            raise BrokerError("mosquitto is not installed (scripts/setup.sh installs it)")
        self.exe = exe
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.passwords = {user: secrets.token_urlsafe(12) for user in USERS}
        self.limits = production_limits()
        self.limits.update({k: str(v).lower() for k, v in overrides.items()})
        self.listener_options = listener_settings(PRODUCTION_CONF)
        self.listener_options.update(listener_options or {})
        self.conf_path = workdir / "mosquitto.conf"
        self.log_path = workdir / "mosquitto.log"
        self.acl_path = workdir / "acl"
        self._process: subprocess.Popen[bytes] | None = None
        self._write_passwords()
        self.acl_path.write_text(ACL_FILE.read_text(encoding="utf-8") + TEST_ACL, encoding="utf-8")
        self._write_config()

    @property
    def users(self) -> tuple[str, ...]:
        return tuple(self.passwords)

    def _write_passwords(self) -> None:
        path = self.workdir / "passwd"
        path.write_text("", encoding="utf-8")
        path.chmod(0o600)
        tool = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
        for user, password in self.passwords.items():
            subprocess.run([tool, "-b", str(path), user, password], check=True, timeout=10)
        self.password_file = path

    def _write_config(self) -> None:
        lines = [
            "per_listener_settings true",
            "persistence true",
            f"persistence_location {self.workdir}/",
            f"log_dest file {self.log_path}",
            "log_type all",
            "connection_messages true",
        ]
        if os.geteuid() == 0:  # root would drop to the "mosquitto" user, who cannot read here
            lines.append("user root")
        lines += [f"{key} {value}" for key, value in self.limits.items()]
        lines += [
            f"listener {self.port} {self.host}",
            f"password_file {self.password_file}",
            f"acl_file {self.acl_path}",
        ]
        options = {"allow_anonymous": "false", **self.listener_options}
        lines += [f"{key} {value}" for key, value in options.items()]
        self.conf_path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 10.0) -> None:
        """Start the broker and return once it accepts TCP connections."""
        if self.running:
            return
        self._process = subprocess.Popen(
            [self.exe, "-c", str(self.conf_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                err = (
                    self._process.stderr.read().decode(errors="replace")
                    if self._process.stderr
                    else ""
                )
                raise BrokerError(f"mosquitto exited at start: {err}\n{self.log()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.02)
        self.kill()
        raise BrokerError(f"mosquitto did not listen on port {self.port}:\n{self.log()}")

    def stop(self, timeout: float = 10.0) -> None:
        """A clean stop (SIGTERM): Mosquitto saves its database first."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._close()

    def kill(self) -> None:
        """``kill -9``: nothing written since the last autosave survives."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._close()

    def _close(self) -> None:
        if self._process is not None and self._process.stderr:
            self._process.stderr.close()
        self._process = None

    def restart(self) -> None:
        """Clean stop, then start again on the same port with the saved database."""
        self.stop()
        self.start()

    def client(
        self, username: str | None, client_id: str | None = None, **kwargs: object
    ) -> BrokerClient:
        """A connected :class:`BrokerClient` logged in as ``username`` (None: no credentials;
        then ``client_id`` is needed)."""
        return BrokerClient(self, username, client_id or username or "", **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Received:
    topic: str
    payload: bytes
    qos: int
    retain: bool


class BrokerClient:
    """A paho-mqtt 2.x MQTT 5 client for tests; every call waits for the broker's answer.

    One thread (paho's loop) owns the socket; answers reach the test through queues.
    """

    def __init__(
        self,
        broker: MosquittoBroker,
        username: str | None,
        client_id: str,
        *,
        password: str | None = None,
        clean_start: bool = True,
        session_expiry: int | None = None,
        timeout: float = 5.0,
    ) -> None:
        self.timeout = timeout
        self.messages: queue.Queue[Received] = queue.Queue()
        self._lock = threading.Lock()
        self._acks: dict[int, queue.Queue[list[ReasonCode]]] = {}
        self._connack: queue.Queue[ReasonCode] = queue.Queue()
        self.disconnects: list[ReasonCode] = []  # every loss of the connection, but close()'s
        self._closing = False
        self._client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5
        )
        if username is not None:  # None: a client with no credentials at all
            self._client.username_pw_set(
                username, broker.passwords.get(username, "") if password is None else password
            )
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_message = self._on_message
        self._client.on_publish = self._on_publish
        self._client.on_subscribe = self._on_subscribe
        props = None
        if session_expiry is not None:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = session_expiry
        self._client.connect(
            broker.host, broker.port, keepalive=30, clean_start=clean_start, properties=props
        )
        self._client.loop_start()
        try:
            self.connack = self._connack.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise TimeoutError("no CONNACK") from None
        if self.connack.is_failure:
            self.close()
            raise ConnectionRefusedError(f"CONNACK {self.connack.value} {self.connack}")

    # paho's thread
    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        self._connack.put(reason_code)

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if not self._closing:
            self.disconnects.append(reason_code)

    def _on_message(self, client, userdata, msg) -> None:
        self.messages.put(Received(msg.topic, msg.payload, msg.qos, bool(msg.retain)))

    def _answer(self, mid: int) -> queue.Queue[list[ReasonCode]]:
        with self._lock:
            return self._acks.setdefault(mid, queue.Queue())

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        self._answer(mid).put([reason_code])

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        self._answer(mid).put(list(reason_codes))

    def _wait(self, mid: int, what: str) -> list[ReasonCode]:
        try:
            codes = self._answer(mid).get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"no {what} for mid {mid}") from None
        with self._lock:
            del self._acks[mid]
        return codes

    # the test's thread
    def publish(
        self, topic: str, payload: bytes | str, qos: int = 1, retain: bool = False
    ) -> ReasonCode:
        """Publish and return the PUBACK's reason code (0 Success, 135 Not authorized...)."""
        info = self._client.publish(topic, payload, qos=qos, retain=retain)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise ConnectionError(f"publish not sent: {mqtt.error_string(info.rc)}")
        return self._wait(info.mid, "PUBACK")[0]

    def subscribe(self, topic: str, qos: int = 1) -> ReasonCode:
        """Subscribe and return the SUBACK's reason code (the granted QoS, or >= 128)."""
        rc, mid = self._client.subscribe(topic, qos=qos)
        if rc != mqtt.MQTT_ERR_SUCCESS:
            raise ConnectionError(f"subscribe not sent: {mqtt.error_string(rc)}")
        return self._wait(mid, "SUBACK")[0]

    def get(self, timeout: float | None = None) -> Received | None:
        """The next message received, or None after ``timeout`` seconds."""
        try:
            return self.messages.get(timeout=self.timeout if timeout is None else timeout)
        except queue.Empty:
            return None

    def drain(self, quiet: float = 0.3) -> list[Received]:
        """Every message until none arrives for ``quiet`` seconds."""
        out = []
        while (msg := self.get(quiet)) is not None:
            out.append(msg)
        return out

    def close(self) -> None:
        """A normal DISCONNECT: a session with an expiry interval is kept by the broker."""
        self._closing = True
        disconnect_and_stop(self._client)


def disconnect_and_stop(client: mqtt.Client) -> None:
    """DISCONNECT, then stop the client's network thread (``loop_start``'s). paho's
    ``loop_stop`` checks its thread, then joins it; a thread that ends by itself in between
    (the DISCONNECT closes its socket) has cleared it, and the join raises AttributeError
    (paho-mqtt issue #872, open). The thread has then ended: nothing is left to stop."""
    client.disconnect()
    with contextlib.suppress(AttributeError):
        client.loop_stop()


@contextlib.contextmanager
def started_broker(tmp: Path) -> Iterator[MosquittoBroker]:
    """A started Mosquitto of its own in ``tmp / "broker"``, killed on exit (for fixtures of
    any scope; the ``broker`` fixture is one test's)."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed (scripts/setup.sh installs it)")
    b = MosquittoBroker(tmp / "broker")
    b.start()
    try:
        yield b
    finally:
        b.kill()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MosquittoBroker]:
    with started_broker(tmp_path) as b:
        yield b


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator:
    """``broker_factory(**overrides)`` -> a started broker with those global options changed."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed (scripts/setup.sh installs it)")
    made: list[MosquittoBroker] = []

    def make(**overrides: object) -> MosquittoBroker:
        b = MosquittoBroker(tmp_path / f"broker{len(made)}", **overrides)
        made.append(b)
        b.start()
        return b

    try:
        yield make
    finally:
        for b in made:
            b.kill()
