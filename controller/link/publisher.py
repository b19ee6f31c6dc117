"""The table's side of the jackpot link: the outbox, published over MQTT 5 (docs/outbox.md).

:class:`TablePublisher` runs one thread that owns the paho-mqtt client (paho's callbacks run
on that thread, so nothing is shared but :meth:`~TablePublisher.health`'s snapshot, the
meters and the alarms). This module is its lifecycle: the thread, the connection and the
table's status; its other parts are in their own modules:

- controller/link/sending.py (:class:`~controller.link.sending.OutboxStream`): choosing and
  framing what to send, the window, the PUBACKs;
- controller/link/inbound.py (:class:`~controller.link.inbound.ControllerMessages`): the
  jackpot controller's acks, resend requests, awards, meters and heartbeat;
- controller/link/link_health.py: :class:`Alarm` and the health it reports.

The thread:

- connects with MQTT 5, ``clean_start=False``, a session expiry, client id = table id, and
  reconnects with jittered exponential backoff;
- sets the death message (retained ``status`` offline, ``clean: false``, this boot) as the
  will before each connect, and publishes the birth (retained ``status`` online, this boot)
  after each CONNACK, so a late will from an earlier boot is recognised by its ``boot``;
- subscribes in ``on_connect`` to ``bj/v1/jackpot/{table}/ack``, ``/resend`` and ``/award``,
  and to the controller's signed ``bj/v1/jackpot/status`` (its heartbeat: ``online`` again
  every 2 s; at QoS 0, so heartbeats a broker queued while the table was away never pass for
  fresh ones): :meth:`~TablePublisher.health` says how long ago the last one came
  (``controller``), and the runtime's link watch calls the controller lost when it is too
  old or said ``offline`` (issue 28 item 3);
- signs everything it publishes (envelopes, frames, birth, will, clean death) with the
  table's key (``signer``) and accepts an ack, resend or award only with a valid signature by
  one of the jackpot controller's keys (``verifier``); anything else raises a ``signature``
  alarm and changes nothing (controller/link/signing.py);
- waits in ``select`` for the broker or a :meth:`~TablePublisher.wake` (the table's loop
  calls it after each event that wrote outbox rows, once the dealer's prompt is out), at
  most ``poll_s`` (:data:`POLL_S`, 50 ms: a write nobody announced, say another process's,
  is seen by the journal's ``PRAGMA data_version``), then looks at the outbox; after each
  (re)connect the stream starts again from the last ack + 1 (at-least-once: the controller
  keys on ``(table, seq)``), and after a resend request from its ``from``; paho's own
  in-flight limit stays at its 20, Mosquitto's Receive Maximum (the broker PUBACKs at once:
  the window is the application ack's);
- raises alarms (``alarms`` list, ``on_alarm`` callback, counted in ``health()``) for a
  CONNACK, PUBACK or SUBACK failure reason code, a refused or malformed message from the
  controller, a row that fails the schema or exceeds the size limit (the detail, which may
  quote a message, is escaped and cut by :func:`~controller.link.messages.loggable`).

paho keeps nothing on disk: the outbox is emptied only by the controller's application ack.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import select
import socket
import threading
import time
from collections.abc import Callable
from os import PathLike
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from controller import build
from controller.backoff import jittered_backoff
from controller.errors import TableControllerError
from controller.journal.outbox import Outbox
from controller.link.brokers import BrokerList
from controller.link.frames import BATCH_ROWS
from controller.link.inbound import STALE_LOG_EVERY_S, ControllerMessages
from controller.link.link_health import Alarm, LinkHealth
from controller.link.messages import (
    JACKPOT_STATUS_TOPIC,
    PREFIX,
    VERSION,
    loggable,
    topic_for,
    validate,
)
from controller.link.sending import MAX_PAYLOAD, PUMP_EVERY_S, WINDOW, OutboxStream
from controller.link.signing import Signer, Verifier
from controller.table.events import JackpotAward

log = logging.getLogger("table-controller.link")

SESSION_EXPIRY_S = 86_400
#: The progressive meters the jackpot controller publishes (retained, signed) for the signs;
#: the table reads them too, for the dealer display and its history.
METERS = f"{PREFIX}/meters/+"
#: MQTT 5 "Disconnect with Will Message", for a thread that fails.
WILL_DISCONNECT = ReasonCode(PacketTypes.DISCONNECT, identifier=4)
#: Seconds the link's thread waits for the network or a :meth:`TablePublisher.wake` before it
#: looks at the outbox anyway: the safety net for a write nobody announced (``PRAGMA
#: data_version`` says whether the journal changed, so an idle table costs one cheap query
#: per look). The table's loop wakes the thread after each event that wrote rows, so a
#: journaled message does not wait for this; waking every 5 ms instead, as before, took the
#: GIL from the loop while it made the dealer's prompt (docs/runtime.md, Benchmarks).
POLL_S = 0.05


def _no_delay(client: mqtt.Client) -> None:
    """TCP_NODELAY on the client's socket: a message goes out at once instead of waiting
    (Nagle) for the TCP acknowledgement of the packet before it, up to 40 ms."""
    with contextlib.suppress(OSError, AttributeError):
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class TablePublisher(OutboxStream, ControllerMessages):
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
        self._health = LinkHealth()
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
        # the death message made and checked once here, in the caller's thread: the link's
        # schemas are read and compiled now (about 0.1-0.2 s of CPU on the 2-core machine,
        # done by the link's thread at its first connect before), so an incomplete install
        # fails here and the first message does not wait for them
        self._status("offline", clean=False)
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


__all__ = [
    "MAX_PAYLOAD",
    "METERS",
    "POLL_S",
    "PUMP_EVERY_S",
    "SESSION_EXPIRY_S",
    "STALE_LOG_EVERY_S",
    "WINDOW",
    "Alarm",
    "TablePublisher",
]
