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
Here: the service's state, its thread's loop and ``health()``; by concern, the MQTT session
and status (jackpot/service_session.py), the table messages in and the ledger batch
(jackpot/service_messages.py), what goes back to the tables and signs: acks, resends,
awards, births, meters (jackpot/service_tables.py), counts, alarms and the clock
(jackpot/service_alarms.py).
The command line that starts it (``jackpot-controller``) is :mod:`jackpot.cli`; this module
imports neither it nor :mod:`jackpot.ha`. See docs/jackpot/controller.md ("Service").
"""

from __future__ import annotations

import contextlib
import gc
import logging
import random
import secrets
import sqlite3
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from os import PathLike
from typing import TYPE_CHECKING, Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from controller import build
from controller.link.brokers import BrokerList
from controller.link.signing import Signer
from jackpot.alarms import AlarmLog, AlarmLogError, LineLimiter
from jackpot.intake import Intake
from jackpot.ledger import Ledger
from jackpot.pools import JackpotConfig
from jackpot.service_alarms import AlarmsMixin
from jackpot.service_messages import MessagesMixin, _Queued, _topic_of, _topic_table  # noqa: F401
from jackpot.service_session import CLIENT_ID, SUBSCRIPTION, SessionMixin, no_delay  # noqa: F401
from jackpot.service_tables import BIRTH_RESEND_S, TablesMixin  # noqa: F401
from jackpot.store import Fence, ledger_location

if TYPE_CHECKING:
    from jackpot.store.sqlite import Checkpointer

log = logging.getLogger("jackpot.service")

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
#: Table rows (single messages and the rows of batch frames) applied in one ledger
#: transaction at most. Below a table's window (256 rows by default), so a backlog is
#: acknowledged in parts: the table reads and frames the next rows while the controller
#: applies these (on two cores at once). With the batch as deep as the window, each side
#: waited for the other: the whole window applied, then acked, then the next one framed.
BATCH_ROWS_MAX = 64
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


def bump_boot(ledger: Ledger) -> int:
    """Add one to the controller's boot counter in the ledger's ``meta`` table, and record
    there the build that runs it (meta ``build``: version and manifest digest; no schema
    change)."""
    return ledger.bump(BOOT_KEY, {BUILD_KEY: build.software()})


class JackpotService(SessionMixin, MessagesMixin, TablesMixin, AlarmsMixin):
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
        batch_rows: int = BATCH_ROWS_MAX,
        fence: Fence | None = None,
        brokers: BrokerList | None = None,
        tls_ca: str | None = None,
        alarm_lines: tuple[int, float] = ALARM_LINES,
        trigger_key: Any = None,
        heartbeat_s: float | None = None,
        clock_check_s: float = 60.0,
        max_clock_offset_ms: float = 1000.0,
        selfcheck: Any = None,
        freeze_heap: bool = False,
    ) -> None:
        if meter_rate <= 0:
            raise ValueError(f"meter_rate {meter_rate!r}: must be > 0 messages per second")
        if not 1 <= batch_max <= 65_535:
            raise ValueError(f"batch_max {batch_max!r}: must be 1 to 65535 messages")
        if batch_rows < 1:
            raise ValueError(f"batch_rows {batch_rows!r}: must be 1 or more table rows")
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
        # the process's heap after start-up never scanned again (gc.freeze, process-wide: for
        # a process that is the controller, as jackpot-controller runs it): a full collection
        # scanned all of it, 20-24 ms with every thread stopped, a live contribution's too;
        # 0.3 ms after (docs/jackpot/controller.md, issue 32's "Third round")
        self._freeze_heap = freeze_heap
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
        self._checkpointer: Checkpointer | None = None  # SQLite's, once the ledger is open
        self._boots: dict[str, int] = {}  # table -> latest boot seen
        self._resent: dict[str, tuple[int, float]] = {}  # table -> (from, when)
        self._dirty: set[str] = set()
        self._meter_sent: dict[str, float] = {}
        self._inflight: dict[int, str] = {}  # mid -> topic
        self._failures = 0
        self._drop = False
        self._queue: list[_Queued] = []  # received, not yet PUBACKed, in order
        self._queued_rows = 0  # the table messages those hold (a frame holds several)
        # while a batch's COMMIT is on its way: the messages read meanwhile, checked
        self._early: list[tuple[Any, int, Any]] | None = None
        self._taking_early = False  # queueing those: no batch applied before all are queued
        self._in_callback = False  # inside paho's on_message (it holds a lock loop_read takes)
        self._status_sent = float("-inf")  # monotonic time of the last online status
        self._status_wanted = False  # another's status arrived: say online again
        self._birth_checks: dict[str, tuple[float, int]] = {}  # table -> (due, its ack then)
        self.batch_max = batch_max
        self.batch_rows = min(batch_rows, batch_max)
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
        (``counts["batch"]`` counts those transactions); ``checkpoints``: an SQLite ledger's
        WAL checkpoints this run, ``{runs, failures}`` (None on PostgreSQL, which has none,
        and before the ledger is open)."""
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
                "checkpoints": cp.counts() if (cp := self._checkpointer) else None,
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
        # no WAL checkpoint inside a live message's commit; its counts for health()
        self._checkpointer = self._ledger.checkpoint_apart()
        # a hot standby's term tags and bounds this connection as its ledger's (leader.py)
        session = getattr(self._fence, "session", None)
        self._alarm_log = AlarmLog(self.ledger_path, clock=self._ms, session=session)
        with self._lock:
            self._open_alarms = self._alarm_log.open_count()
        self._load_boots()
        if self._freeze_heap:
            gc.collect()
            gc.freeze()
        socket_up, clean = False, False
        try:
            while not self._stop.is_set():
                if not socket_up:
                    socket_up = self._connect()
                    continue
                rc = self._client.loop(timeout=0 if self._queue else 0.05)
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

    # -- handling --------------------------------------------------------------------------
