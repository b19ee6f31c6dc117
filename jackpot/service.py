"""The jackpot controller's MQTT side: table streams in, ledger, acks/awards/meters out.

:class:`JackpotService` runs one thread that owns the paho-mqtt client and the
:class:`~jackpot.ledger.Ledger` (paho's callbacks run inside ``client.loop()`` on
that thread; other threads only read :meth:`JackpotService.health`). It:

- connects with MQTT 5, client id ``jackpot-controller``, ``clean_start=False`` and a session
  expiry, so the broker keeps the subscription and queues table messages while it is down;
  reconnects with jittered exponential backoff;
- sets its retained ``bj/v1/jackpot/status`` offline as the will and publishes online after
  each CONNACK (``boot``: a counter kept in the ledger file's ``meta`` table), then again
  every ``[status] heartbeat_ms`` (2 s) as a signed heartbeat: a table that hears none for
  its ``controller_timeout_s`` (6 s) takes no progressive wager (issue 28 item 3);
- subscribes in ``on_connect`` to ``bj/v1/table/+/#`` (QoS 1);
- for each table message, single or a batch frame of several (controller/link/frames.py):
  :class:`~jackpot.intake.Intake` checks it (refused: counted and alarmed, nothing applied;
  a frame is refused whole), then ``Ledger.apply_batch`` applies what arrived together, a
  frame's rows in order (one transaction), and only after the commit publishes the
  application ack, a resend request on a gap, or the award; then acknowledges the MQTT
  message (``manual_ack``: the PUBACK goes to the broker only once the ledger has the message,
  so a crash before the commit makes the broker redeliver it from the persistent session);
- on a table's birth republishes its latest ack and its offered awards (and, for a birth
  delivered retained, asks for a resend from the ack + 1: the table was up before this
  subscription, so its stream may have gone to no one); a will (or any
  status) from a boot older than the table's latest is logged and ignored;
- publishes each pool's meter retained on ``bj/v1/meters/{pool}``, coalesced to at most
  ``meter_rate`` messages per second per pool (the latest value always goes out);
- checks every table message's Ed25519 signature against that table's keys in the config
  before the ledger sees it, and signs everything it publishes (controller/link/signing.py);
- raises an alarm (log line ``ALARM``, the alarm log in the ledger file that
  ``jackpot-controller alarms`` lists and ``ack-alarm`` acknowledges, ``health()``, the
  systemd status line) for every message it refuses: a bad signature, a malformed or
  unknown-table message, a contribution off the game's terms, an unproven claim, a sequence
  reused with other content. The log gets the first 5 alarms of a kind from a table each
  minute, then one line counting the rest (``alarm_lines``; tables not in the config count
  as one source): a flood of forgeries is a few lines, not one a message;
- logs each table ``event`` the ledger stored (a door, a fault, a power loss...) and raises an
  alarm for those that need a person (jackpot/events.py; issue 28 item 4).

The Must-Hit-By Mystery trigger never leaves the ledger: nothing here reads it.
The command line that starts it (``jackpot-controller``) is :mod:`jackpot.cli`; this module
imports neither it nor :mod:`jackpot.ha`. See docs/jackpot/controller.md ("Service").
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import secrets
import select
import socket
import sqlite3
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from os import PathLike
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from controller import build
from controller.backoff import jittered_backoff
from controller.link.brokers import BrokerList
from controller.link.messages import (
    JACKPOT_STATUS_TOPIC,
    TABLE_ID,
    VERSION,
    meter_topic,
    topic_for,
    validate,
)
from controller.link.signing import Signer
from jackpot import events
from jackpot.alarms import AlarmLog, AlarmLogError, LineLimiter
from jackpot.intake import Intake, Refusal
from jackpot.ledger import Award, Ledger, Result, Status
from jackpot.pools import JackpotConfig
from jackpot.store import Fence, ledger_location

log = logging.getLogger("jackpot.service")

CLIENT_ID = "jackpot-controller"
SUBSCRIPTION = "bj/v1/table/+/#"
SESSION_EXPIRY_S = 86_400
BOOT_KEY = "controller_boot"
BUILD_KEY = "build"  # meta: the build id of the latest start (controller/build.py)
#: Alarms kept for health() (the oldest are dropped; the counts by kind keep everything).
ALARMS_KEPT = 100
DEFAULT_SIGNING_KEY = "/etc/jackpot-controller/link-signing.key"
#: MQTT 5 "Disconnect with Will Message": a thread that fails leaves so the broker publishes
#: its will (offline), which a plain disconnect would not.
WILL_DISCONNECT = ReasonCode(PacketTypes.DISCONNECT, identifier=4)
#: Table messages applied in one ledger transaction at most (group commit), and the MQTT 5
#: Receive Maximum the controller asks of the broker: how many it may send before a PUBACK.
BATCH_MAX = 256
#: Seconds between republishing the retained ``online`` status while connected, when the
#: config does not say (``[status] heartbeat_ms``): the tables' heartbeat (a table that hears
#: none for its ``controller_timeout_s`` calls the controller lost; issue 28 item 3), and a will
#: of another controller (a killed leader's, published late by a broker) never stays for long.
STATUS_EVERY_S = 2.0
#: The fastest the status is published again in answer to someone else's on its topic.
STATUS_AGAIN_S = 1.0
#: Log lines per alarm kind and source in each window, and the window (s): the rest are
#: counted in one line when the window ends (the alarm log and health() count every one).
ALARM_LINES = (5, 60.0)
#: After a table's live birth, how long its stream may stand still before the controller
#: asks for a resend (seconds). A table starts again from its last ack on each connect, so
#: one that streams needs none; asked at once, it made the table send its whole window
#: twice (half of a backlog's messages were duplicates).
BIRTH_RESEND_S = 2.0


def _topic_table(topic: str) -> str | None:
    """The table id level of a bj/v1/table/{id}/... topic, for an alarm (not trusted)."""
    levels = topic.split("/")
    if len(levels) > 3 and levels[2] == "table" and TABLE_ID.match(levels[3]):
        return levels[3]
    return None


def no_delay(client: mqtt.Client) -> None:
    """TCP_NODELAY on the client's socket: a PUBACK or an ack goes out at once instead of
    waiting (Nagle) for the TCP acknowledgement of the packet before it, up to 40 ms."""
    with contextlib.suppress(OSError, AttributeError):
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _topic_of(body: dict[str, Any]) -> str:
    return topic_for(body["table"], body["kind"])


class _Queued:
    """A received message waiting for its PUBACK: ``rows`` are its checked table messages
    for the next ledger transaction (one for a single message, several for a batch frame;
    none for one refused, or a status, that only needs its PUBACK in turn), each with the
    text the ledger keeps as its signed record, and ``digests`` their content digests where
    the intake has them; ``t`` the controller's UTC ms it arrived (the ledger's central
    time)."""

    __slots__ = ("digests", "mid", "qos", "rows", "t")

    def __init__(self, mid: int, qos: int, t: int = 0) -> None:
        self.mid, self.qos, self.t = mid, qos, t
        self.rows: list[tuple[dict[str, Any], str]] = []
        self.digests: list[str | None] = []


def bump_boot(ledger: Ledger) -> int:
    """Add one to the controller's boot counter in the ledger's ``meta`` table, and record
    there the build that runs it (meta ``build``: version and manifest digest; no schema
    change)."""
    return ledger.bump(BOOT_KEY, {BUILD_KEY: build.software()})


class JackpotService:
    """The jackpot controller on ``host:port`` for ``config``, its ledger at ``ledger_path``.

    ``signer`` signs what the controller publishes; each table's messages are checked against
    that table's public keys in ``config.table_keys``.
    ``clock()`` gives wall time in seconds (``sent_t``); ``randbelow`` draws mystery triggers
    (tests inject one); ``rng`` draws the reconnect jitter. ``alarm_lines``: (lines, seconds),
    how many ``ALARM`` log lines a kind from a source gets in each window before the rest are
    counted in one line (:class:`~jackpot.alarms.LineLimiter`). The thread starts at once;
    :meth:`close` publishes offline, disconnects and stops it (safe twice).
    """

    def __init__(
        self,
        config: JackpotConfig,
        ledger_path: str | PathLike[str],
        host: str,
        port: int,
        username: str,
        password: str,
        *,
        signer: Signer,
        clock: Callable[[], float] = time.time,
        client_id: str = CLIENT_ID,
        meter_rate: float = 4.0,
        backoff: tuple[float, float] = (0.5, 30.0),
        session_expiry: int = SESSION_EXPIRY_S,
        keepalive: int = 30,
        resend_interval: float = 1.0,
        randbelow: Callable[[int], int] = secrets.randbelow,
        rng: random.Random | None = None,
        batch_max: int = BATCH_MAX,
        fence: Fence | None = None,
        brokers: BrokerList | None = None,
        tls_ca: str | None = None,
        alarm_lines: tuple[int, float] = ALARM_LINES,
        trigger_key: Any = None,
        heartbeat_s: float | None = None,
        clock_check_s: float = 60.0,
        max_clock_offset_ms: float = 1000.0,
        selfcheck: Any = None,
    ) -> None:
        if meter_rate <= 0:
            raise ValueError(f"meter_rate {meter_rate!r}: must be > 0 messages per second")
        if not 1 <= batch_max <= 65_535:
            raise ValueError(f"batch_max {batch_max!r}: must be 1 to 65535 messages")
        self.config = config
        self.signer = signer
        self._intake = Intake(config.tables, config.table_keys)  # parse, route, verify
        self.ledger_path = ledger_location(ledger_path)  # a file, or a postgresql:// URL
        self._fence = fence  # the ledger's fence (jackpot/store: LedgerFenced aborts a write)
        # ``brokers``: several brokers, the first preferred (controller/link/brokers.py)
        self.brokers = brokers or BrokerList([(host, port)])
        self.host, self.port = self.brokers.address
        self.clock = clock
        self.meter_interval = 1.0 / meter_rate
        self.backoff = backoff
        self.session_expiry = session_expiry
        self.keepalive = keepalive
        self.resend_interval = resend_interval
        # the signed status again every this many seconds: the tables' heartbeat
        self.heartbeat_s = (
            heartbeat_s if heartbeat_s is not None else config.status_heartbeat_ms / 1000
        )
        self.rng = rng or random.SystemRandom()
        self._randbelow = randbelow
        # the machine's clock: asked now and every clock_check_s (issue 28 item 6)
        self.clock_check_s, self.max_clock_offset_ms = clock_check_s, max_clock_offset_ms
        self._clock_state, self._clock_problem, self._clock_alarmed = None, None, None
        self._check_clock()
        self._trigger_key = trigger_key  # the Mystery trigger key file (jackpot/draws.py)
        self._selfcheck = selfcheck  # jackpot/selfcheck.py: its results, on this thread
        # Opened here to fail fast (and to draw the first triggers); the thread reopens it.
        with Ledger(self.ledger_path, config, randbelow=randbelow, fence=fence, clock=clock,
                    trigger_key=trigger_key) as ledger:  # fmt: skip
            self.boot = bump_boot(ledger)
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._alarms: deque[dict[str, Any]] = deque(maxlen=ALARMS_KEPT)
        self._alarm_counts: Counter[str] = Counter()
        self._alarm_log: AlarmLog | None = None
        self._log_limit = LineLimiter(*alarm_lines)  # the thread's: log lines per kind, source
        self._open_alarms = 0
        self._messages: Counter[tuple[str, str]] = Counter()  # (kind, outcome) -> messages
        self._last_seq: dict[str, int] = {}  # table -> the ledger's last sequence
        self._builds: dict[str, str | None] = {}  # table -> the build its last birth named
        self._heard: dict[str, float] = {}  # table -> monotonic time of its last message
        self._meter_cents: dict[str, int] = {}  # pool -> the meter's whole cents
        self._connected = False
        self._online = threading.Event()
        self._stop = threading.Event()
        self._closed = False
        self._goodbye = True  # close(goodbye=False): leave without the offline status
        self._client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=client_id,
            protocol=mqtt.MQTTv5,
            manual_ack=True,
        )
        self._client.username_pw_set(username, password)
        if tls_ca:  # a central broker on another host: TLS, verified against this CA
            self._client.tls_set(ca_certs=tls_ca)
        self._client.suppress_exceptions = True  # a callback's bug is logged, not fatal
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_publish = self._on_publish
        self._client.on_message = self._on_message
        # the thread's state
        self._ledger: Ledger | None = None
        self._boots: dict[str, int] = {}  # table -> latest boot seen
        self._resent: dict[str, tuple[int, float]] = {}  # table -> (from, when)
        self._dirty: set[str] = set()
        self._meter_sent: dict[str, float] = {}
        self._inflight: dict[int, str] = {}  # mid -> topic
        self._failures = 0
        self._drop = False
        self._queue: list[_Queued] = []  # received, not yet PUBACKed, in order
        self._queued_rows = 0  # the table messages those hold (a frame holds several)
        self._status_sent = float("-inf")  # monotonic time of the last online status
        self._status_wanted = False  # another's status arrived: say online again
        self._birth_checks: dict[str, tuple[float, int]] = {}  # table -> (due, its ack then)
        self.batch_max = batch_max
        self._largest_batch = 0
        self._thread = threading.Thread(target=self._run, name="jackpot-controller", daemon=True)
        self._thread.start()
        self._clock_thread = threading.Thread(
            target=self._watch_clock, name="jackpot-clock", daemon=True
        )
        self._clock_thread.start()

    # -- any thread ------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """``connected``, ``boot``, ``counts`` (applied, refused, duplicate, gap, resend, ack,
        award, meter, malformed, unknown_table, signature, conflict, stale_status, puback,
        ledger_error...), ``alarm_counts`` by kind since this start, ``alarms``: the last
        :data:`ALARMS_KEPT`, oldest first, each ``{kind, table, seq, detail, t}``, and
        ``open_alarms``: the alarm log's rows no technician has acknowledged yet;
        ``messages``: table messages since this start by ``(kind, outcome)`` (outcome: a
        ledger status, ``signature``, ``unknown_table``, ``malformed``; status messages
        ``received`` or ``stale``; kind ``unknown`` when the message could not be read);
        ``tables``: each table's ``last_seq`` in the ledger and ``age_s``, seconds since its
        last signed message (None before one this run), ``build``: the build id its last
        birth message named (None before one); ``meters``: each pool's whole cents;
        ``largest_batch``: the most table messages one ledger transaction applied this run
        (``counts["batch"]`` counts those transactions)."""
        now = time.monotonic()
        with self._lock:
            return {
                "connected": self._connected,
                "boot": self.boot,
                "counts": dict(self._counts),
                "alarm_counts": dict(self._alarm_counts),
                "alarms": list(self._alarms),
                "open_alarms": self._open_alarms,
                "messages": dict(self._messages),
                "tables": {
                    table: {
                        "last_seq": self._last_seq.get(table, 0),
                        "age_s": now - heard if (heard := self._heard.get(table)) else None,
                        "build": self._builds.get(table),
                    }
                    for table in sorted(self.config.tables)
                },
                "meters": dict(self._meter_cents),
                "clock": {
                    **(self._clock_state.as_dict() if self._clock_state else {}),
                    "problem": self._clock_problem,
                },
                "largest_batch": self._largest_batch,
                "software": self._selfcheck.health() if self._selfcheck else None,
            }

    def wait_online(self, timeout: float = 10.0) -> bool:
        """True once connected and subscribed."""
        return self._online.wait(timeout)

    def close(self, timeout: float = 5.0, *, goodbye: bool = True) -> None:
        """Publish the offline status, disconnect, stop the thread. Safe twice.
        ``goodbye=False``: no offline status, a plain disconnect (no will): a controller that
        lost its lease leaves the status topic to the new leader (jackpot/ha.py)."""
        if self._closed:
            return
        self._closed = True
        self._goodbye = goodbye
        self._stop.set()
        self._thread.join(timeout + 2.0)

    def __enter__(self) -> JackpotService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the thread ------------------------------------------------------------------------

    def _count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self._counts[what] += n

    def _message(self, kind: str | None, outcome: str) -> None:
        with self._lock:
            self._messages[(kind or "unknown", outcome)] += 1

    def _alarm(self, kind: str, table: str | None, seq: Any, detail: str) -> None:
        """A refused message a technician must see: logged, kept for health(), counted."""
        detail = detail.replace("\n", "\\n").replace("\r", "\\r")  # one log line, always
        entry = {"kind": kind, "table": table, "seq": seq, "detail": detail, "t": self._ms()}
        if self._may_log(f"ALARM {kind}", table):
            log.warning("ALARM %s from %s seq %s: %s", kind, table or "?", seq, detail)
        open_alarms = self._open_alarms
        if self._alarm_log is not None:
            try:
                opened = self._alarm_log.opened
                self._alarm_log.raise_alarm(kind, table, seq, detail)
                if self._alarm_log.opened != opened:  # a repeat leaves the count as it was
                    open_alarms = self._alarm_log.open_count()
            except Exception:  # the refusal stands whatever the alarm log does; the log says why
                log.exception("could not write the alarm to the alarm log")
        with self._lock:
            self._alarms.append(entry)
            self._alarm_counts[kind] += 1
            self._open_alarms = open_alarms

    def _check_clock(self) -> None:
        from controller.timesync import judge, read_clock

        state = read_clock()
        self._clock_state = state
        self._clock_problem = judge(state, self.max_clock_offset_ms)

    def _watch_clock(self) -> None:
        while not self._stop.wait(self.clock_check_s):
            try:
                self._check_clock()
            except Exception:
                log.exception("clock: the check failed")

    def _clock_alarm(self) -> None:
        """On the service's thread: an unsynchronised clock (or one off past the limit) is
        an alarm once each time it starts (issue 28 item 6)."""
        problem = self._clock_problem
        if problem != self._clock_alarmed:
            if problem:
                self._alarm("clock_unsynchronised", None, None, problem)
            elif self._clock_alarmed:
                log.info("clock synchronised again (%s)", self._clock_state.source)
            self._clock_alarmed = problem

    def _may_log(self, what: str, table: str | None) -> bool:
        """Whether a log line about ``what`` from ``table`` may be written now (issue 26:
        one line per forged message); the lines held back are counted by
        :meth:`_log_held`. A table id not in the config is the sender's choice: all of them
        are one source, so a flood under made-up ids is a few lines too."""
        self._log_held()  # a window that ended says so before the next line
        source = table if table in self.config.tables else None
        return self._log_limit.allow((what, source))

    def _log_held(self, *, stopping: bool = False) -> None:
        """One line for each window that held log lines back (when it ends, or at the stop)."""
        for (what, source), held, seconds in self._log_limit.ended(all_windows=stopping):
            counted = " (each one counted in the alarm log: jackpot-controller alarms)"
            log.warning(
                "%s: ... and %d more like it from %s in the last %.0f s%s", what, held,
                source or "tables not in the config", seconds,
                counted if what.startswith("ALARM") else "",
            )  # fmt: skip

    def _status(self, state: str) -> bytes:
        message = {"v": VERSION, "state": state, "boot": self.boot, "sent_t": self._ms()}
        message = self.signer.sign(JACKPOT_STATUS_TOPIC, message)
        validate("jackpot_status", message)
        return json.dumps(message).encode()

    def _ms(self) -> int:
        return int(self.clock() * 1000)

    def _delay(self) -> float:
        base, cap = self.backoff
        delay = jittered_backoff(self._failures, base, cap, self.rng.random())
        self._failures += 1
        return delay

    def _connect(self) -> bool:
        self._client.will_set(JACKPOT_STATUS_TOPIC, self._status("offline"), qos=1, retain=True)
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self.session_expiry
        props.ReceiveMaximum = self.batch_max  # else Mosquitto sends 20, one batch's worth
        self.host, self.port = self.brokers.address
        try:
            self._client.connect(
                self.host, self.port, self.keepalive, clean_start=False, properties=props
            )
        except OSError as exc:
            self._count("connect")
            log.warning("cannot reach the broker at %s:%s: %s", self.host, self.port, exc)
            self.brokers.failed()
            self._stop.wait(self._delay())
            return False
        return True

    def _load_boots(self) -> None:
        self._boots = self._ledger.boots()
        last = self._ledger.acks()
        meters = {pool: reading.amount for pool, reading in self._ledger.meters().items()}
        with self._lock:
            self._last_seq.update(last)
            self._meter_cents.update(meters)

    def _run(self) -> None:
        self._ledger = Ledger(
            self.ledger_path, self.config, randbelow=self._randbelow, fence=self._fence,
            clock=self.clock, trigger_key=self._trigger_key,
        )  # fmt: skip
        # a hot standby's term tags and bounds this connection as its ledger's (leader.py)
        session = getattr(self._fence, "session", None)
        self._alarm_log = AlarmLog(self.ledger_path, clock=self._ms, session=session)
        with self._lock:
            self._open_alarms = self._alarm_log.open_count()
        self._load_boots()
        socket_up, clean = False, False
        try:
            while not self._stop.is_set():
                if not socket_up:
                    socket_up = self._connect()
                    continue
                rc = self._client.loop(timeout=0.05)
                if rc == mqtt.MQTT_ERR_SUCCESS:
                    rc = self._read_more()
                if rc == mqtt.MQTT_ERR_SUCCESS:
                    self._flush()  # this pass's messages: one transaction, then the PUBACKs
                else:  # unacknowledged: the broker sends them again in the resumed session
                    self._queue.clear()
                    self._queued_rows = 0
                if self._drop:  # the ledger failed: unacked messages come back on reconnect
                    self._drop = False
                    self._client.disconnect()
                    rc = mqtt.MQTT_ERR_NO_CONN
                if rc != mqtt.MQTT_ERR_SUCCESS:
                    socket_up = False
                    self.brokers.failed()
                    self._set_connected(False)
                    self._stop.wait(self._delay())
                    continue
                if self._connected:
                    self._flush_meters()
                    self._check_births()
                    since = time.monotonic() - self._status_sent
                    if since >= self.heartbeat_s or (
                        self._status_wanted and since >= STATUS_AGAIN_S
                    ):
                        self._status_wanted = False
                        self._publish_online()
                    if self.brokers.back_to_first():  # the first broker is back: go there
                        self._client.disconnect()
                        socket_up = False
                        self._set_connected(False)
                        continue
                self._flush_alarms()
                self._clock_alarm()
                if self._selfcheck is not None:  # the hourly check: ledger meta, alarm
                    self._selfcheck.pump(self._ledger, self._alarm)
            if socket_up and self._connected and self._goodbye:
                self._say_goodbye()
            clean = True
        except Exception:
            log.exception("jackpot controller thread failed")
            raise
        finally:
            with contextlib.suppress(Exception):
                # a failure leaves with the will, so the signs and tables see it offline
                self._client.disconnect(None if clean else WILL_DISCONNECT)
            self._set_connected(False)
            self._ledger.close()
            with contextlib.suppress(AlarmLogError, sqlite3.Error):
                self._alarm_log.close()
            self._log_held(stopping=True)

    def _flush_alarms(self) -> None:
        """Write counted repeats of open alarms when due; refresh the open count (a
        technician may acknowledge them from another process)."""
        self._log_held()
        alarm_log = self._alarm_log
        if time.monotonic() - alarm_log._flushed < alarm_log.flush_s:
            return
        try:
            alarm_log.flush()
            open_alarms = alarm_log.open_count()
        except Exception:  # an alarm log that fails must not stop the money
            log.exception("could not write the alarm log")
            return
        with self._lock:
            self._open_alarms = open_alarms

    def _set_connected(self, value: bool) -> None:
        with self._lock:
            self._connected = value
        if not value:
            self._online.clear()

    def _say_goodbye(self, timeout: float = 3.0) -> None:
        self._flush_meters(force=True)
        info = self._client.publish(JACKPOT_STATUS_TOPIC, self._status("offline"), 1, True)
        self._inflight[info.mid] = JACKPOT_STATUS_TOPIC
        deadline = time.monotonic() + timeout
        while self._inflight and time.monotonic() < deadline:
            if self._client.loop(timeout=0.05) != mqtt.MQTT_ERR_SUCCESS:
                break
        self._client.disconnect()
        self._client.loop(timeout=0.05)
        log.info("jackpot controller offline (boot %d)", self.boot)

    def _publish(self, topic: str, message: dict[str, Any], retain: bool = False) -> None:
        message = self.signer.sign(topic, message)
        info = self._client.publish(topic, json.dumps(message, separators=(",", ":")), 1, retain)
        if info.rc == mqtt.MQTT_ERR_SUCCESS:
            self._inflight[info.mid] = topic
        else:  # the connection is gone: what the table needs is sent again on its birth
            self._count("not_sent")

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._count("connect")
            log.error("broker refused the connection: CONNACK %s", reason_code)
            return
        self._failures = 0
        self.brokers.connected()
        self._inflight.clear()
        self._queue.clear()  # mids of the last connection: the broker resends those messages
        self._queued_rows = 0
        no_delay(client)
        # the status topic without this client's own publishes (no local) and without the
        # retained one (this client publishes its own now): what arrives is another's
        client.subscribe([
            (SUBSCRIPTION, SubscribeOptions(qos=1)),
            (JACKPOT_STATUS_TOPIC, SubscribeOptions(
                qos=1, noLocal=True, retainHandling=SubscribeOptions.RETAIN_DO_NOT_SEND
            )),
        ])  # fmt: skip
        self._publish_online()
        self._dirty.update(self.config.pools)  # the meters as they are, for any sign
        self._meter_sent.clear()
        self._set_connected(True)
        log.info(
            "jackpot controller online (boot %d, session %s)",
            self.boot,
            "resumed" if flags.session_present else "new",
        )

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self._set_connected(False)
        if reason_code.is_failure:
            log.warning("disconnected: %s", reason_code)

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        streams, status = [*reason_codes, None][:2]
        if status is not None and status.is_failure:  # the link works; a late will lasts
            log.warning(
                "cannot watch %s (SUBACK %s): give this controller's broker user 'topic read "
                "%s' (config/mosquitto/acl); until then a late will of another controller "
                "shows it offline to the signs for up to %.0f s",
                JACKPOT_STATUS_TOPIC, status, JACKPOT_STATUS_TOPIC, self.heartbeat_s,
            )  # fmt: skip
        if streams.is_failure:
            self._count("suback")
            log.error("subscription to %s refused: SUBACK %s", SUBSCRIPTION, streams)
            return
        self._online.set()

    def _publish_online(self) -> None:
        """The retained ``online`` status (again)."""
        info = self._client.publish(JACKPOT_STATUS_TOPIC, self._status("online"), 1, True)
        self._inflight[info.mid] = JACKPOT_STATUS_TOPIC
        self._status_sent = time.monotonic()

    def _on_other_status(self, payload: bytes) -> None:
        """Someone else published on the controller's status topic: a controller that
        stepped down or died (its will, which a broker may publish after this one came
        online), or a forgery. The signs must see this controller online: it says so again
        from the loop (at most every :data:`STATUS_AGAIN_S`)."""
        try:
            state = json.loads(payload).get("state")
        except (ValueError, AttributeError):
            state = "unreadable"
        self._count("status_again")
        if self._may_log("controller status", None):
            log.warning("the controller status said %r (another controller's will?): "
                        "publishing online again", str(state)[:40])  # fmt: skip
        self._status_wanted = True

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        topic = self._inflight.pop(mid, "?")
        if reason_code.is_failure:  # 16 "no matching subscribers" is a success
            self._count("puback")
            log.error("publish to %s refused: PUBACK %s %s", topic, reason_code.value, reason_code)

    def _on_message(self, client, userdata, message) -> None:
        """Check one message and queue it with its mid (paho calls this inside
        ``client.loop()``); :meth:`_flush` applies the queue and sends the PUBACKs in order."""
        if self._drop:  # the ledger failed in this pass: everything comes back on reconnect
            return
        queued = _Queued(message.mid, message.qos, self._ms())
        if message.topic == JACKPOT_STATUS_TOPIC:
            self._on_other_status(message.payload)
        else:
            self._take_safely(message, queued)
        if not queued.rows and not self._queue:  # nothing before it waits: PUBACK now
            client.ack(queued.mid, queued.qos)
            return
        self._queue.append(queued)
        self._queued_rows += len(queued.rows)
        if len(self._queue) >= self.batch_max or self._queued_rows >= self.batch_max:
            self._flush()

    def _take_safely(self, message: Any, queued: _Queued) -> None:
        try:
            self._take(message.topic, message.payload, bool(message.retain), queued)
        except (sqlite3.Error, OSError):  # a status' ledger work (or the flush before it)
            self._ledger_failed(message.topic)
            return
        except Exception as exc:
            # Not the disk: something in this message that no check foresaw. Redelivering it
            # would loop forever, so it is consumed and alarmed; nothing was committed for it
            # (a true table message stays in the table's outbox and comes again).
            self._internal_error(message.topic, exc)
            queued.rows = []

    def _ledger_failed(self, topic: str) -> None:
        """The ledger could not take a message (disk, lock, database...): no PUBACK for it or
        the queue; drop the connection so the broker redelivers them all after a backoff."""
        self._count("ledger_error")
        log.exception("could not apply the messages up to one on %s; reconnecting", topic[:120])
        self._queue.clear()
        self._queued_rows = 0
        self._drop = True

    def _internal_error(self, topic: str, exc: Exception) -> None:
        self._count("internal_error")
        if self._may_log("traceback", _topic_table(topic)):
            log.exception("could not handle a message on %r", topic[:120])
        self._alarm(
            "internal_error", _topic_table(topic), None,
            f"a message on {topic[:120]!r} raised {type(exc).__name__}: call the supplier with "
            "this log",
        )  # fmt: skip

    def _read_more(self) -> int:
        """After ``client.loop()`` (which reads one packet or a few), read whatever else the
        socket already holds, up to a full batch: a burst becomes one ledger transaction."""
        sock = self._client.socket()
        for _ in range(self.batch_max):
            if self._drop or sock is None or self._queued_rows >= self.batch_max:
                break
            pending = sock.pending() if hasattr(sock, "pending") else 0  # TLS: decrypted bytes
            if not pending and not select.select([sock], [], [], 0)[0]:
                break
            rc = self._client.loop_read()
            if rc != mqtt.MQTT_ERR_SUCCESS:
                return rc
        return mqtt.MQTT_ERR_SUCCESS

    # -- handling --------------------------------------------------------------------------

    def _take(self, topic: str, payload: bytes, retained: bool, queued: _Queued) -> None:
        """Check one message (:class:`~jackpot.intake.Intake`: a single message or a batch
        frame); its table messages go into ``queued.rows`` for the ledger transaction, a
        status is handled now (after the messages before it), a refusal is alarmed (a frame
        is refused whole, with the alarm a single message would raise)."""
        try:
            got = self._intake.read(topic, payload)
        except Refusal as no:
            table = no.table if no.outcome != "malformed" else _topic_table(topic)
            self._alarm(no.outcome, table, no.seq, no.detail)
            self._count(no.outcome)  # after the alarm: whoever sees the count sees the alarm
            self._message(no.kind, no.outcome)
            return
        kind, table, body = got.kind, got.table, got.body
        with self._lock:
            self._heard[table] = time.monotonic()
        if kind == "status":
            self._flush()  # the table's messages before its status are in the ledger first
            if not self._drop:
                self._on_status(table, body, retained)
        elif got.rows:
            boot = got.rows[0][0]["boot"]  # a frame's rows are all of its boot
            if boot > self._boots.get(table, 0):
                self._boots[table] = boot
            queued.rows, queued.digests = got.rows, got.digests
            if len(got.rows) > 1:
                self._count("frame")
        else:  # controller kinds never arrive on bj/v1/table/...; parse_message routes them
            self._count("malformed")
            self._message(kind, "malformed")
            if self._may_log("ignored", table):
                log.warning("ignored a %s message on %s", kind, topic[:120])

    def _flush(self) -> None:
        """Apply the queued table messages in one ledger transaction (group commit), then
        publish the acks, resends and awards they call for, then PUBACK each message in the
        order received. A ledger error: no PUBACK at all, reconnect (:meth:`_ledger_failed`)."""
        queue, self._queue = self._queue, []
        self._queued_rows = 0
        if not queue:
            return
        bodies = [body for q in queue for body, _text in q.rows]
        texts = [text for q in queue for _body, text in q.rows]
        times = [q.t for q in queue for _row in q.rows]
        digests = [d for q in queue for d in q.digests]
        try:
            results = (
                self._ledger.apply_batch(
                    bodies, checked=True, texts=texts, received=times, digests=digests
                )
                if bodies
                else []
            )
        except (sqlite3.Error, OSError):  # nothing committed (LedgerFenced is one)
            self._ledger_failed(_topic_of(bodies[-1]))
            return
        except Exception:  # a message no check foresaw: find it, one transaction each
            log.exception("a batch of %d messages failed: applying them one by one", len(bodies))
            self._flush_one_by_one(queue)
            return
        self._count("batch")
        with self._lock:
            self._largest_batch = max(self._largest_batch, len(bodies))
        self._after_commit(bodies, results)
        for q in queue:
            self._client.ack(q.mid, q.qos)

    def _flush_one_by_one(self, queue: list[_Queued]) -> None:
        """The old way, for a batch that raised something else than a ledger error: each
        message in its own transaction, published and PUBACKed before the next."""
        for q in queue:
            for body, text in q.rows:
                try:
                    result = self._ledger.apply_batch(
                        [body], checked=True, texts=[text], received=[q.t]
                    )[0]
                except (sqlite3.Error, OSError):
                    self._ledger_failed(_topic_of(body))
                    return
                except Exception as exc:
                    self._internal_error(_topic_of(body), exc)
                else:
                    self._count("batch")
                    self._after_commit([body], [result])
            self._client.ack(q.mid, q.qos)

    def _after_commit(self, bodies: list[dict[str, Any]], results: list[Result]) -> None:
        """Alarms and counts per message, in order; then one ack per table (its highest
        sequence: acks are cumulative), a resend where a gap is still open, the awards."""
        acks: dict[str, int] = {}  # table -> the ack it is owed
        last: dict[str, int] = {}  # table -> the ledger's last sequence after the batch
        gaps: dict[str, int] = {}  # table -> the highest sequence refused as beyond a gap
        awards: list[Award] = []
        for body, result in zip(bodies, results, strict=True):
            status, kind, seq, table = result.status, body["kind"], body["seq"], body["table"]
            # each alarm is raised before its count: whoever sees the count sees the alarm
            if status in (Status.MALFORMED, Status.UNKNOWN_TABLE):
                self._alarm(status.name.lower(), table, seq, f"{kind}: {result.reason}")
            elif status is Status.CONFLICT:  # applied with other content: no ack owed
                self._alarm(result.alarm or "seq_conflict", table, seq, f"{kind}: {result.reason}")
            elif status is Status.REFUSED:
                alarm = result.alarm or f"{kind}_refused"
                self._alarm(alarm, table, seq, f"{kind} refused: {result.reason}")
            elif status is Status.APPLIED and kind == "event":
                self._table_event(table, seq, body["payload"])
            self._count(status.name.lower())
            with self._lock:
                self._messages[(kind, status.name.lower())] += 1
                if result.ack is not None:
                    self._last_seq[table] = result.ack
            if result.ack is not None:
                last[table] = max(last.get(table, 0), result.ack)
            if status in (Status.MALFORMED, Status.UNKNOWN_TABLE, Status.CONFLICT):
                continue
            if status is Status.GAP:
                gaps[table] = max(gaps.get(table, 0), seq)
                continue
            acks[table] = max(acks.get(table, 0), result.ack)
            awards.extend(result.awards)
            self._dirty.update(result.meters)
        for table, seq in acks.items():
            self._send_ack(table, seq)
        for table, seq in gaps.items():
            if seq > last[table]:  # not filled later in the batch: ask from the ledger's next
                self._ask_resend(table, last[table] + 1)
        for award in awards:
            self._send_award(award)

    def _table_event(self, table: str, seq: int, payload: dict[str, Any]) -> None:
        """A table's significant event, now in the ledger: logged, and an alarm if it needs a
        person (jackpot/events.py; issue 28 item 4, N.J.A.C. 13:69E-1.39C(b)5)."""
        words = events.describe(payload)
        if (alarm := events.alarm_kind(payload)) is not None:
            self._alarm(alarm, table, seq, f"table {table}: {words}")
        elif self._may_log("event", table):
            log.info("event from %s seq %d: %s", table, seq, words)

    def _ask_resend(self, table: str, start: int) -> None:
        last = self._resent.get(table)
        now = time.monotonic()
        if last is not None and last[0] == start and now - last[1] < self.resend_interval:
            return  # already asked: the rest of the window after a gap needs no more asking
        self._resent[table] = (start, now)
        self._count("resend")
        log.info("gap in %s's stream: resend from %d", table, start)
        message = {"v": VERSION, "table": table, "from": start, "sent_t": self._ms()}
        self._publish(topic_for(table, "resend"), message)

    def _send_ack(self, table: str, seq: int) -> None:
        self._count("ack")
        message = {"v": VERSION, "table": table, "seq": seq, "sent_t": self._ms()}
        self._publish(topic_for(table, "ack"), message)

    def _send_award(self, award: Award) -> None:
        message = award.message(self._ms())
        validate("award", message)
        self._count("award")
        log.info(
            "award %s %s: %s %s %d cents",
            award.award_id,
            award.state,
            award.pool,
            award.meter,
            award.amount,
        )
        self._publish(topic_for(award.table, "award"), message)

    def _on_status(self, table: str, body: dict[str, Any], retained: bool) -> None:
        boot, state, latest = body["boot"], body["state"], self._boots.get(table, 0)
        if boot < latest:
            self._count("stale_status")
            self._message("status", "stale")
            log.info("ignored %s's %s from boot %d (table at boot %d)", table, state, boot, latest)
            return
        self._boots[table] = boot
        self._message("status", "received")
        if state == "offline":
            self._count("table_offline")
            how = "clean shutdown" if body.get("clean") else "connection lost (will)"
            log.warning("table %s offline (boot %d): %s", table, boot, how)
            return
        self._count("table_online")
        with self._lock:
            self._builds[table] = body.get("build")  # None: a table older than issue 29
        log.info("table %s online (boot %d, build %s)", table, boot, body.get("build") or "?")
        acked = self._ledger.ack(table)
        if acked > 0:
            self._send_ack(table, acked)
        # Every birth asks for the rest of the stream. Retained: the table was online before
        # this subscription, so what it sent while no session of ours existed (a first start,
        # an expired session, another broker) is lost: at once. Live: a table behind a
        # property broker is born again each time the bridge connects (it sends the retained
        # statuses), and what crossed before may have died in a lost central broker; the
        # table, still connected to its own broker, would wait for acks forever
        # (docs/jackpot/brokers.md): asked if its stream stands still for BIRTH_RESEND_S.
        if retained:
            self._resent.pop(table, None)
            self._ask_resend(table, acked + 1)
        else:
            self._birth_checks[table] = (time.monotonic() + BIRTH_RESEND_S, acked)
        for award in self._ledger.awards(table):
            if award.state == "offered":
                self._send_award(award)

    def _check_births(self) -> None:
        """Ask a resend of each table born :data:`BIRTH_RESEND_S` ago whose stream has not
        moved since (nothing of it applied)."""
        if not self._birth_checks:
            return
        now = time.monotonic()
        for table, (due, acked_then) in list(self._birth_checks.items()):
            if now < due:
                continue
            del self._birth_checks[table]
            acked = self._ledger.ack(table)
            if acked == acked_then:
                self._resent.pop(table, None)
                self._ask_resend(table, acked + 1)

    def _flush_meters(self, force: bool = False) -> None:
        if not self._dirty:
            return
        now = time.monotonic()
        due = [
            pool
            for pool in self._dirty
            if force or now - self._meter_sent.get(pool, float("-inf")) >= self.meter_interval
        ]
        if not due:
            return
        readings = self._ledger.meters()
        with self._lock:
            self._meter_cents.update((pool, r.amount) for pool, r in readings.items())
        for pool in due:
            self._dirty.discard(pool)
            if pool not in readings:
                continue
            self._meter_sent[pool] = now
            self._count("meter")
            self._publish(meter_topic(pool), readings[pool].message(self._ms()), retain=True)
