"""The table's side of the jackpot link: the outbox, published over MQTT 5 (docs/outbox.md).

:class:`TablePublisher` runs one thread that owns the paho-mqtt client (paho's callbacks run
inside ``client.loop()`` on that thread, so nothing is shared but :meth:`health`'s snapshot
and the alarms). It:

- connects with MQTT 5, ``clean_start=False``, a session expiry, client id = table id, and
  reconnects with jittered exponential backoff;
- sets the death message (retained ``status`` offline, ``clean: false``, this boot) as the
  will before each connect, and publishes the birth (retained ``status`` online, this boot)
  after each CONNACK, so a late will from an earlier boot is recognised by its ``boot``;
- subscribes in ``on_connect`` to ``bj/v1/jackpot/{table}/ack``, ``/resend`` and ``/award``,
  and to the controller's signed ``bj/v1/jackpot/status`` (its heartbeat: ``online`` again
  every 2 s; at QoS 0, so heartbeats a broker queued while the table was away never pass for
  fresh ones): :meth:`health` says how long ago the last one came (``controller``), and the
  runtime's link watch calls the controller lost when it is too old or said ``offline``
  (issue 28 item 3);
- signs everything it publishes (envelopes, birth, will, clean death) with the table's key
  (``signer``) and accepts an ack, resend or award only with a valid signature by one of the
  jackpot controller's keys (``verifier``); anything else raises a ``signature`` alarm and
  changes nothing (controller/link/signing.py);
- publishes the outbox's pending rows in ``seq`` order at QoS 1 as the v1 envelope (one row
  waiting: a single message; more: batch frames of up to ``batch_rows`` rows (64) and
  32768 bytes under one signature, controller/link/frames.py; nothing waits to fill one), at most
  ``window`` rows (default 256) beyond the last application ack, looking at the outbox when
  the table's loop says it wrote rows (:meth:`TablePublisher.wake`, after the dealer's
  prompt) and at least every ``poll_s`` (50 ms: a write nobody announced, say another
  process's, is seen by the journal's ``PRAGMA data_version``); after each (re)connect it
  starts again from the last ack + 1 (at-least-once: the controller keys on ``(table,
  seq)``), and after a resend request from its ``from``; paho's own in-flight limit stays at
  its 20, Mosquitto's Receive Maximum (the broker PUBACKs at once: the window is the
  application ack's);
- on an ack: ``Outbox.acknowledge(seq)`` (one below the last ack is old news, a copy the
  broker kept: counted and logged, not an alarm); on a resend: rewinds to ``from`` (one from
  beyond what the table wrote is refused with an alarm, and the stream carries on); on an award:
  hands ``on_award`` the :class:`~controller.table.events.JackpotAward` event
  (``controller.link.awards.award_event``, ``t`` = the clock in ms); the runtime gives it to
  the table, which ignores a repeated ``award_id`` (the controller re-offers on each birth);
- raises alarms (``alarms`` list, ``on_alarm`` callback, counted in ``health()``) for a
  PUBACK or SUBACK failure reason code (the row stays pending; the stream pauses and retries
  from the last ack after a backoff), a refused or malformed ack/resend/award, or one for
  another table (nothing changes, ``on_award`` is not called; the detail, which may quote the
  message, is escaped and cut by :func:`~controller.link.messages.loggable`),
  and a row that fails the schema or exceeds the size limit (never sent, and the stream stops
  there rather than skip a sequence number).

paho keeps nothing on disk: the outbox is emptied only by the controller's application ack.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import select
import socket
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from controller import build
from controller.backoff import jittered_backoff
from controller.errors import JournalError, TableControllerError
from controller.journal.outbox import Outbox, OutboxError
from controller.link.awards import award_event
from controller.link.brokers import BrokerList
from controller.link.frames import BATCH, BATCH_BYTES, BATCH_ROWS, plan, wire_frame
from controller.link.messages import (
    JACKPOT_STATUS_TOPIC,
    PREFIX,
    VERSION,
    LinkMessageError,
    envelope,
    loggable,
    parse_message,
    topic_for,
    validate,
)
from controller.link.signing import SignatureError, Signer, Verifier, canonical
from controller.table.effects import Publish
from controller.table.events import JackpotAward

log = logging.getLogger("table-controller.link")

SESSION_EXPIRY_S = 86_400
#: The progressive meters the jackpot controller publishes (retained, signed) for the signs;
#: the table reads them too, for the dealer display and its history.
METERS = f"{PREFIX}/meters/+"
#: MQTT 5 "Disconnect with Will Message", for a thread that fails.
WILL_DISCONNECT = ReasonCode(PacketTypes.DISCONNECT, identifier=4)
#: Mosquitto's ``message_size_limit`` is 65536; above it a QoS 1 publish is never
#: acknowledged (tests/test_broker.py), so a larger message is refused before sending.
MAX_PAYLOAD = 60_000
#: Rows sent beyond the last application ack. The controller applies what arrives together
#: in one transaction (group commit), so a deeper window means fewer, larger commits.
WINDOW = 256
#: Seconds the link's thread waits for the network or a :meth:`TablePublisher.wake` before it
#: looks at the outbox anyway: the safety net for a write nobody announced (``PRAGMA
#: data_version`` says whether the journal changed, so an idle table costs one cheap query
#: per look). The table's loop wakes the thread after each event that wrote rows, so a
#: journaled message does not wait for this; waking every 5 ms instead, as before, took the
#: GIL from the loop while it made the dealer's prompt (docs/runtime.md, Benchmarks).
POLL_S = 0.05
#: The outbox is read at least this often whatever happened (a resumed pause, say).
PUMP_EVERY_S = 0.05
#: At most one log line about stale acknowledgements in this many seconds.
STALE_LOG_EVERY_S = 60.0


def _no_delay(client: mqtt.Client) -> None:
    """TCP_NODELAY on the client's socket: a message goes out at once instead of waiting
    (Nagle) for the TCP acknowledgement of the packet before it, up to 40 ms."""
    with contextlib.suppress(OSError, AttributeError):
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@dataclass(frozen=True, slots=True)
class Alarm:
    """Something a technician must look at. ``kind``: ``puback``, ``suback``, ``invalid``,
    ``too_large``, ``ack_refused``, ``ack_malformed``, ``resend_refused`` (from beyond what
    the table wrote), ``resend_malformed``, ``award_malformed``, ``award_refused`` (the
    ``on_award`` callback raised), ``meter_malformed``, ``connect``, ``signature`` (an ack,
    resend, award or meter not signed by a key of the jackpot controller). ``detail`` is for
    the technician (the log): printable ASCII, at most ``DETAIL_MAX`` characters."""

    kind: str
    detail: str
    seq: int | None = None
    reason_code: int | None = None
    t: float = 0.0


@dataclass
class _Controller:
    """What the table last heard of the jackpot controller's status (its heartbeat)."""

    state: str | None = None  # "online", "offline"; None: nothing heard since the start
    boot: int = 0
    sent_t: int = 0
    heard: float | None = None  # monotonic s of the last live heartbeat
    heartbeats: int = 0
    stale: int = 0  # statuses older than one already heard (a copy kept, a late will)


@dataclass
class _Health:
    connected: bool = False
    depth: int = 0
    last_ack: int = 0
    last_ack_t: float | None = None
    next_seq: int = 1
    stopped_at: int | None = None
    frames: int = 0  # batch frames sent
    framed_rows: int = 0  # the rows they carried
    errors: Counter[str] = field(default_factory=Counter)
    controller: _Controller = field(default_factory=_Controller)


class TablePublisher:
    """Publishes the outbox of the journal at ``outbox_path`` for table ``table_id``.

    ``clock()`` gives wall time in seconds (``sent_t``); ``rng`` draws the reconnect jitter;
    ``tls_ca``: a CA certificate file, to connect over TLS and verify the broker.
    ``signer`` signs what the table sends; ``verifier`` holds the jackpot controller's public
    keys (controller/link/signing.py). ``batch_rows``: the most rows one batch frame carries
    (1: single messages only, for a jackpot controller older than frames).
    ``on_award(event)`` gets each valid award for this table as a ``JackpotAward`` event, on
    the publisher's thread (queue it for the table's thread; do not block).
    The thread starts at once; :meth:`close` stops it (safe twice).
    """

    def __init__(
        self,
        outbox_path: str | PathLike[str],
        table_id: str,
        host: str,
        port: int,
        username: str,
        password: str,
        *,
        signer: Signer,
        verifier: Verifier,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        window: int = WINDOW,
        poll_s: float = POLL_S,
        backoff: tuple[float, float] = (0.5, 30.0),
        session_expiry: int = SESSION_EXPIRY_S,
        max_payload: int = MAX_PAYLOAD,
        batch_rows: int = BATCH_ROWS,
        keepalive: int = 30,
        connack_timeout: float = 5.0,
        on_alarm: Callable[[Alarm], None] | None = None,
        on_award: Callable[[JackpotAward], None] | None = None,
        tls_ca: str | None = None,
        brokers: BrokerList | None = None,
    ) -> None:
        topic_for(table_id, "status")  # refuses a bad table id now
        if window < 1:
            raise ValueError(f"window {window!r}: must be 1 or more messages")
        if not 1 <= batch_rows <= BATCH_ROWS:
            raise ValueError(f"batch_rows {batch_rows!r}: must be 1 (no frames) to {BATCH_ROWS}")
        self.table_id = table_id
        self.signer = signer
        self.verifier = verifier
        # ``brokers``: several brokers, the first preferred (controller/link/brokers.py)
        self.brokers = brokers or BrokerList([(host, port)])
        self.host, self.port = self.brokers.address
        self.clock = clock
        self.rng = rng or random.SystemRandom()
        self.window = window
        self.poll_s = poll_s
        self.backoff = backoff
        self.session_expiry = session_expiry
        self.max_payload = max_payload
        self.batch_rows = batch_rows
        self.keepalive = keepalive
        self.connack_timeout = connack_timeout
        self._connack_deadline = 0.0
        self.on_alarm = on_alarm
        self.on_award = on_award
        self.alarms: list[Alarm] = []
        self._lock = threading.Lock()
        self._health = _Health()
        self._stop = threading.Event()
        self._closed = False
        # Opened here to fail fast on a bad path; used only by the thread afterwards
        # (sqlite3 checks the thread: the thread reopens it).
        probe = Outbox(outbox_path)
        try:
            self.boot = probe.boot
            self._health.depth = probe.depth()
            self._health.last_ack = probe.last_acknowledged()
        finally:
            probe.close()
        if self.boot < 1:
            raise TableControllerError(
                f"outbox {outbox_path}: boot counter is 0; start the table controller first"
            )
        self._outbox_path = outbox_path
        self._client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=table_id, protocol=mqtt.MQTTv5
        )
        self._client.username_pw_set(username, password)
        if tls_ca:  # verify the broker's certificate against this CA (port 8883)
            self._client.tls_set(ca_certs=tls_ca)
        # a callback that raises is logged by paho, never fatal to the link's thread
        self._client.suppress_exceptions = True
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_publish = self._on_publish
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message
        self._client.message_callback_add(topic_for(table_id, "ack"), self._on_ack)
        self._client.message_callback_add(topic_for(table_id, "resend"), self._on_resend)
        self._client.message_callback_add(topic_for(table_id, "award"), self._on_award)
        self._client.message_callback_add(METERS, self._on_meter)
        self._client.message_callback_add(JACKPOT_STATUS_TOPIC, self._on_controller_status)
        self._meters: dict[str, dict[str, Any]] = {}  # pool -> the latest checked meter
        # the thread's state
        self._outbox: Outbox | None = None
        self._inflight: dict[int, int] = {}  # mid -> seq (0 for status)
        self._next_seq = 1
        self._pause_until = 0.0
        self._failures = 0
        self._stopped_at: int | None = None
        self._kick = True  # something happened that the outbox's next look must see
        self._data_version: int | None = None  # the journal's PRAGMA data_version last seen
        self._pumped = 0.0
        self._stale_logged: float | None = None  # monotonic s of the last stale-ack log line
        self._stale_held = 0  # stale acks since that line
        # wake(): a byte on this pair ends the thread's select at once (paho's own pair is
        # made only by its loop(), which this thread does not use)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._thread = threading.Thread(target=self._run, name=f"link-{table_id}", daemon=True)
        self._thread.start()

    # -- any thread ------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """``connected``, ``depth``, ``last_ack``, ``last_ack_age_s`` (None before the first
        ack of this run), ``next_seq``, ``stopped_at`` (a row that cannot be sent), ``frames``
        (batch frames sent this run) and ``framed_rows`` (the rows they carried), ``errors``
        by kind, and ``controller``: the jackpot controller's last signed status, ``state``
        (``online``, ``offline``, None before any), ``boot``, ``heard_age_s`` (seconds since
        its last live heartbeat; None before the first), ``heartbeats`` and ``stale``
        (counts)."""
        with self._lock:
            h = self._health
            now = time.monotonic()
            age = None if h.last_ack_t is None else max(0.0, now - h.last_ack_t)
            c = h.controller
            heard = None if c.heard is None else max(0.0, now - c.heard)
            return {
                "connected": h.connected,
                "depth": h.depth,
                "last_ack": h.last_ack,
                "last_ack_age_s": age,
                "next_seq": h.next_seq,
                "stopped_at": h.stopped_at,
                "frames": h.frames,
                "framed_rows": h.framed_rows,
                "errors": dict(h.errors),
                "controller": {
                    "state": c.state,
                    "boot": c.boot,
                    "heard_age_s": heard,
                    "heartbeats": c.heartbeats,
                    "stale": c.stale,
                },
            }

    def wake(self) -> None:
        """The table wrote outbox rows: the thread looks at the outbox now, not at its next
        :data:`POLL_S`. Any thread; never blocks (a wake already pending is enough)."""
        self._kick = True
        with contextlib.suppress(OSError):  # full: one is pending; closed: nothing to wake
            self._wake_w.send(b"\0")

    def alive(self) -> bool:
        """Whether its thread runs (the daemon's watchdog and /healthz ask)."""
        return self._thread.is_alive()

    def close(self, timeout: float = 5.0) -> None:
        """Publish the offline status (clean), disconnect, stop the thread. Safe twice."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self.wake()
        self._thread.join(timeout + 2.0)
        if not self._thread.is_alive():
            self._wake_r.close()
            self._wake_w.close()

    def __enter__(self) -> TablePublisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the thread ------------------------------------------------------------------------

    def _alarm(self, kind: str, detail: str, seq: int | None = None, rc: int | None = None):
        # a refused message's own words are escaped and cut: they reach the log, no screen
        alarm = Alarm(kind, loggable(detail), seq, rc, self.clock())
        with self._lock:
            self.alarms.append(alarm)
            self._health.errors[kind] += 1
        if self.on_alarm is not None:
            with contextlib.suppress(Exception):  # an alarm sink must not stop the link
                self.on_alarm(alarm)

    def _set(self, **values: Any) -> None:
        with self._lock:
            for name, value in values.items():
                setattr(self._health, name, value)

    def _status(self, state: str, clean: bool | None = None) -> tuple[str, bytes]:
        message: dict[str, Any] = {
            "v": VERSION,
            "table": self.table_id,
            "boot": self.boot,
            "state": state,
            "sent_t": int(self.clock() * 1000),
        }
        if clean is not None:
            message["clean"] = clean
        if state == "online":  # the birth names the build (controller/build.py)
            message["build"] = build.software()
        topic = topic_for(self.table_id, "status")
        message = self.signer.sign(topic, message)
        validate("status", message)
        return topic, json.dumps(message).encode()

    def _delay(self) -> float:
        base, cap = self.backoff
        delay = jittered_backoff(self._failures, base, cap, self.rng.random())
        self._failures += 1
        return delay

    def _connect(self) -> bool:
        topic, will = self._status("offline", clean=False)
        self._client.will_set(topic, will, qos=1, retain=True)
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self.session_expiry
        self.host, self.port = self.brokers.address
        # another broker than the last: its session holds stale acks; the outbox is the state
        clean = self.brokers.fresh_session()
        try:
            self._client.connect(
                self.host, self.port, self.keepalive, clean_start=clean, properties=props
            )
        except OSError:
            self.brokers.failed()
            self._set(connected=False)
            with self._lock:
                self._health.errors["connect"] += 1
            self._stop.wait(self._delay())
            return False
        self._connack_deadline = time.monotonic() + self.connack_timeout
        return True

    def _run(self) -> None:
        self._outbox = Outbox(self._outbox_path)
        socket_up, clean = False, False
        try:
            while not self._stop.is_set():
                if not socket_up:
                    socket_up = self._connect()
                    continue
                rc = self._network(self.poll_s)
                if not self._health.connected and time.monotonic() > self._connack_deadline:
                    with self._lock:  # a socket without a CONNACK: drop it and try again
                        self._health.errors["connack_timeout"] += 1
                    self._client.disconnect()
                    rc = mqtt.MQTT_ERR_NO_CONN
                if rc != mqtt.MQTT_ERR_SUCCESS:
                    socket_up = False
                    self.brokers.failed()
                    self._set(connected=False)
                    self._stop.wait(self._delay())
                    continue
                if self._health.connected and self._due():
                    self._pump()
                    if self.brokers.back_to_first():  # the first broker is back: go there
                        self._client.disconnect()
                        socket_up = False
                        self._set(connected=False)
            if socket_up and self._health.connected:
                self._say_goodbye()
            clean = True
        finally:
            with contextlib.suppress(Exception):
                # a failure leaves with the will (offline), which a plain disconnect would not
                self._client.disconnect(None if clean else WILL_DISCONNECT)
            self._set(connected=False)
            self._outbox.close()

    def _network(self, timeout: float) -> mqtt.MQTTErrorCode:
        """paho's ``loop(timeout)`` with :meth:`wake`'s socket in the select: wait up to
        ``timeout`` s for the broker or a wake, then read, write and keep alive through
        paho's external-loop calls (``loop_read``, ``loop_write``, ``loop_misc``)."""
        client = self._client
        sock = client.socket()
        if sock is None:
            return mqtt.MQTT_ERR_NO_CONN
        pending = sock.pending() if hasattr(sock, "pending") else 0  # TLS: bytes decrypted
        try:
            readable, _, _ = select.select(
                [sock, self._wake_r], [sock] if client.want_write() else [], [],
                0.0 if pending else timeout,
            )  # fmt: skip
        except (TypeError, ValueError, OSError):  # the socket was closed under us
            return mqtt.MQTT_ERR_CONN_LOST
        if self._wake_r in readable:
            with contextlib.suppress(OSError):
                self._wake_r.recv(4096)
        if sock in readable or pending:
            rc = client.loop_read()
            if rc or client.socket() is None:
                return rc
        if client.want_write():  # a publish made in a callback waits here (paho's own loop
            rc = client.loop_write()  # is woken by its pair for that)
            if rc or client.socket() is None:
                return rc
        return client.loop_misc()

    def _say_goodbye(self, timeout: float = 3.0) -> None:
        topic, payload = self._status("offline", clean=True)
        info = self._client.publish(topic, payload, qos=1, retain=True)
        self._inflight[info.mid] = 0
        deadline = time.monotonic() + timeout
        while info.mid in self._inflight and time.monotonic() < deadline:
            if self._network(0.05) != mqtt.MQTT_ERR_SUCCESS:
                break
        self._client.disconnect()
        self._network(0.05)

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._alarm(
                "connect", f"CONNACK {reason_code.value} {reason_code}", None, reason_code.value
            )
            return
        self._failures = 0
        self.brokers.connected()
        self._inflight.clear()
        self._next_seq = self._outbox.last_acknowledged() + 1
        self._pause_until = 0.0
        self._kick = True
        _no_delay(client)
        client.subscribe(
            [(topic_for(self.table_id, kind), 1) for kind in ("ack", "resend", "award")]
            + [(METERS, 1), (JACKPOT_STATUS_TOPIC, 0)]
        )
        topic, payload = self._status("online")
        info = client.publish(topic, payload, qos=1, retain=True)
        self._inflight[info.mid] = 0
        self._set(connected=True, next_seq=self._next_seq)

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self._set(connected=False)

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        codes = list(reason_codes)  # ack, resend, award, the meters, the controller's status
        streams, meters = codes[:3], (codes[3] if len(codes) > 3 else None)
        for code in streams:
            if code.is_failure:
                self._alarm("suback", f"SUBACK {code.value} {code}", None, code.value)
        status = codes[4] if len(codes) > 4 else None
        if status is not None and status.is_failure:  # no heartbeat: the link stays down
            self._alarm(
                "suback",
                f"SUBACK {status.value} {status} for {JACKPOT_STATUS_TOPIC}: the table cannot "
                "hear the jackpot controller's heartbeat and takes no progressive wager; give "
                f"the tables 'pattern read {JACKPOT_STATUS_TOPIC}' (config/mosquitto/acl)",
                None,
                status.value,
            )
        if meters is not None and meters.is_failure:  # the money flows; only the display lacks
            with self._lock:
                self._health.errors["meters_refused"] += 1
            log.warning(
                "the broker refused the meters (SUBACK %s): give the tables 'pattern read "
                "%s/meters/#' (config/mosquitto/acl) for the meters on the dealer display",
                meters, PREFIX,
            )  # fmt: skip

    def meters(self) -> list[dict[str, Any]]:
        """The progressive meters as the jackpot controller last published them, each
        checked against its schema and the controller's signature: ``pool``, ``amount``
        (whole cents), ``seq``, ``must_hit_by`` (the Mystery's ceiling, or None); by pool."""
        with self._lock:
            return [dict(self._meters[pool]) for pool in sorted(self._meters)]

    def _read_signed(
        self, message, kind: str, refused: str, short: str | None = None
    ) -> dict | None:
        """The body of a controller's ``kind`` message that parses, is of that kind and is
        signed by the controller; else None, with the alarm raised (``signature``, or
        ``<short>_malformed``; ``short`` defaults to ``kind``). Nothing a message holds may
        stop the link."""
        malformed = f"{short or kind}_malformed"
        try:
            got, _, body = parse_message(message.topic, message.payload)
            if got != kind:
                raise LinkMessageError(got, "kind", f"a {got} on {message.topic}, not a {kind}")
            self.verifier.verify(message.topic, body, kind)
        except SignatureError as exc:
            self._alarm("signature", f"{exc}; {refused}")
        except LinkMessageError as exc:
            self._alarm(malformed, str(exc))
        except Exception as exc:
            self._alarm(malformed, f"{short or kind} unreadable: {type(exc).__name__}")
        else:
            return body
        return None

    def _on_meter(self, client, userdata, message) -> None:
        body = self._read_signed(message, "meter", "a meter refused, nothing shown")
        if body is None:
            return
        with self._lock:
            known = self._meters.get(body["pool"])
            if known is None or body["seq"] > known["seq"]:  # a lower one is an older copy
                self._meters[body["pool"]] = {
                    "pool": body["pool"],
                    "amount": body["amount"],
                    "seq": body["seq"],
                    "must_hit_by": body.get("must_hit_by"),
                }

    def _on_controller_status(self, client, userdata, message) -> None:
        """The jackpot controller's signed status: ``online`` again every heartbeat, or
        ``offline`` (its will, its clean stop). A live one (not the retained copy the broker
        hands over at subscribe) is a heartbeat; one from an older boot, or not newer than one
        heard (a copy kept, a late will of a controller that has since restarted), is stale."""
        body = self._read_signed(
            message, "jackpot_status", "a controller status refused, nothing changed", "status"
        )
        if body is None:
            return
        with self._lock:
            c = self._health.controller
            if c.state is not None and (body["boot"], body["sent_t"]) <= (c.boot, c.sent_t):
                c.stale += 1
                return
            c.state, c.boot, c.sent_t = body["state"], body["boot"], body["sent_t"]
            if not message.retain and body["state"] == "online":
                c.heard = time.monotonic()
                c.heartbeats += 1

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        seq = self._inflight.pop(mid, None)
        if reason_code.is_failure:  # 16 "no matching subscribers" is a success
            self._alarm(
                "puback",
                f"PUBACK {reason_code.value} {reason_code} for "
                + (f"seq {seq}" if seq else "the status"),
                seq or None,
                reason_code.value,
            )
            if seq:  # the row stays pending; retry from the last ack after a backoff
                self._inflight.clear()
                self._next_seq = self._outbox.last_acknowledged() + 1
                self._pause_until = time.monotonic() + self._delay()

    def _on_message(self, client, userdata, message) -> None:
        with self._lock:
            self._health.errors["unexpected_message"] += 1

    def _parse(self, message, kind: str) -> dict[str, Any] | None:
        try:
            got, table_id, body = parse_message(message.topic, message.payload)
        except LinkMessageError as exc:
            self._alarm(f"{kind}_malformed", str(exc))
            return None
        except Exception as exc:  # nothing a message holds may stop the link
            self._alarm(f"{kind}_malformed", f"{kind} unreadable: {type(exc).__name__}")
            return None
        if got != kind or table_id != self.table_id:
            self._alarm(f"{kind}_malformed", f"{kind} for {table_id!r} on {message.topic}")
            return None
        try:
            self.verifier.verify(message.topic, body, kind)
        except SignatureError as exc:
            self._alarm("signature", f"{exc}; refused, nothing changed")
            return None
        return body

    def _on_ack(self, client, userdata, message) -> None:
        body = self._parse(message, "ack")
        if body is None:
            return
        try:
            acked = self._outbox.last_acknowledged()
            if body["seq"] < acked:  # signed and old: the broker kept it, not a forgery
                self._stale_ack(body["seq"], acked)
                return
            self._outbox.acknowledge(body["seq"])
        except (OutboxError, JournalError) as exc:
            self._alarm("ack_refused", str(exc), body["seq"])
            return
        self._failures = 0
        self._kick = True  # room in the window
        if body["seq"] >= self._next_seq:
            self._next_seq = body["seq"] + 1
        self._set(last_ack=body["seq"], last_ack_t=time.monotonic())

    def _on_resend(self, client, userdata, message) -> None:
        body = self._parse(message, "resend")
        if body is None:
            return
        written = self._outbox.last_written()
        if body["from"] > written + 1:  # the stream would wait for rows never written
            self._alarm(
                "resend_refused",
                f"resend from {body['from']} refused: the table has written only up to "
                f"{written}; a jackpot controller ahead of the table means a wrong table id, "
                "a replaced journal or a forged message; the stream carries on",
                body["from"],
            )
            return
        self._next_seq = max(body["from"], self._outbox.last_acknowledged() + 1)
        self._pause_until = 0.0
        self._kick = True

    def _stale_ack(self, seq: int, acked: int) -> None:
        """A validly signed ack below the last one: a copy the broker kept (redelivered
        after its restart) or a replay of an old one. Old news: counted (``ack_stale``) and
        logged at most once per :data:`STALE_LOG_EVERY_S`, never an alarm."""
        with self._lock:
            self._health.errors["ack_stale"] += 1
        self._stale_held += 1
        now = time.monotonic()
        if self._stale_logged is None or now - self._stale_logged >= STALE_LOG_EVERY_S:
            log.info(
                "jackpot link: %d stale acknowledgement(s) ignored (the last of seq %d, "
                "below the acknowledged %d): a copy the broker kept or an old one replayed",
                self._stale_held, seq, acked,
            )  # fmt: skip
            self._stale_logged, self._stale_held = now, 0

    def _on_award(self, client, userdata, message) -> None:
        body = self._parse(message, "award")
        if body is None or self.on_award is None:
            return
        event = award_event(body, int(self.clock() * 1000))
        try:
            self.on_award(event)
        except Exception as exc:  # the sink's fault must not stop the link
            self._alarm("award_refused", f"award {event.award_id}: on_award raised {exc!r}")

    def _due(self) -> bool:
        """Whether to read the outbox now: an ack, a resend or a connect happened, the table
        wrote to its journal since the last look, or :data:`PUMP_EVERY_S` went by."""
        try:
            version = self._outbox.db.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            version = None  # the outbox's own reads say what is wrong
        now = time.monotonic()
        if self._kick or version != self._data_version or now - self._pumped >= PUMP_EVERY_S:
            self._kick, self._data_version, self._pumped = False, version, now
            return True
        return False

    def _pump(self) -> None:
        outbox = self._outbox
        acked = outbox.last_acknowledged()
        self._set(depth=outbox.depth(), last_ack=acked, next_seq=self._next_seq)
        if self._stopped_at is not None or time.monotonic() < self._pause_until:
            return
        room = acked + self.window - self._next_seq + 1
        if room <= 0:
            return
        expected = max(self._next_seq, acked + 1)
        sent_t = int(self.clock() * 1000)
        messages: list[dict[str, Any]] = []
        invalid = None
        for row in outbox.resend_from(expected, room):
            if row.seq != expected:
                break  # a hole cannot be: the outbox's recovery check refuses one
            expected += 1
            try:
                messages.append(envelope(
                    self.table_id,
                    self.boot,
                    row.seq,
                    Publish(topic=row.kind, key=row.key, payload=row.payload),
                    sent_t,
                    copy=False,  # the row's payload was just read from the outbox
                ))  # fmt: skip
            except LinkMessageError as exc:
                invalid = (row.seq, f"seq {row.seq} fails the schema: {exc}")
                break
        # one row waiting goes alone; more go in frames (at most batch_rows and BATCH_BYTES);
        # the live case (one row) is not encoded here only to be measured
        framing = self.batch_rows > 1 and len(messages) > 1
        sizes = [len(canonical(m)) if framing else 0 for m in messages]
        start = 0
        for count in plan(sizes, self.batch_rows, min(BATCH_BYTES, self.max_payload)):
            if not self._send(messages[start : start + count]):
                return
            start += count
        if invalid is not None:
            self._stop_stream(invalid[0], "invalid", invalid[1])

    def _send(self, group: list[dict[str, Any]]) -> bool:
        """Publish ``group`` (consecutive envelopes): one row as a single message, more as
        one batch frame (controller/link/frames.py). False if the stream must stop here (a
        row too large: alarmed) or the connection is lost (the loop reconnects and starts
        again from the last ack)."""
        if not group:
            return True
        last = group[-1]["seq"]
        if len(group) == 1:
            topic = topic_for(self.table_id, group[0]["kind"])
            data = self.signer.wire(topic, group[0])
            if len(data) > self.max_payload:
                self._stop_stream(
                    last, "too_large", f"seq {last} is {len(data)} bytes > {self.max_payload}"
                )
                return False
        else:
            topic = topic_for(self.table_id, BATCH)
            data = wire_frame(self.signer, self.table_id, self.boot, group[0]["sent_t"], group)
        info = self._client.publish(topic, data, qos=1)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            return False
        self._inflight[info.mid] = group[0]["seq"]  # a PUBACK failure names the first row
        self._next_seq = last + 1
        if len(group) > 1:
            with self._lock:
                self._health.frames += 1
                self._health.framed_rows += len(group)
        return True

    def _stop_stream(self, seq: int, kind: str, detail: str) -> None:
        self._stopped_at = seq
        self._set(stopped_at=seq)
        self._alarm(kind, detail + "; not sent, the stream stops here (call a technician)", seq)
