"""Choosing and framing what the table sends: the outbox's rows, in order, within the window.

The methods of :class:`~controller.link.publisher.TablePublisher` that run the stream on the
link's thread. Each look (``_due``: the table's loop woke the thread, an ack, a resend or a
connect happened, the journal changed, or :data:`PUMP_EVERY_S` went by) reads the rows from
``_next_seq`` on, at most ``window`` beyond the last application ack, checks each against
its kind's schema and publishes them at QoS 1: one row waiting as a single message, more in
batch frames of up to ``batch_rows`` rows and :data:`~controller.link.frames.BATCH_BYTES`
under one signature (controller/link/frames.py; nothing waits to fill one). Each row is
encoded once: the bytes that size a frame are the bytes it carries.

A row that fails the schema or exceeds ``max_payload`` is never sent, and the stream stops
there (an alarm) rather than skip a sequence number. A PUBACK failure leaves the row pending:
the stream pauses and starts again from the last ack after a backoff.

State it reads and changes: ``_outbox``, ``_client``, ``_next_seq``, ``_inflight``
(mid -> first seq of the message), ``_pause_until``, ``_stopped_at``, ``_kick``,
``_data_version``, ``_pumped``.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import paho.mqtt.client as mqtt

from controller import json_rows
from controller.link.frames import BATCH, BATCH_BYTES, BATCH_ROWS, Planner, wire_frame
from controller.link.messages import LinkMessageError, row_envelope, topic_for
from controller.link.signing import Signer, canonical

#: Mosquitto's ``message_size_limit`` is 65536; above it a QoS 1 publish is never
#: acknowledged (tests/test_broker.py), so a larger message is refused before sending.
MAX_PAYLOAD = 60_000
#: Rows sent beyond the last application ack. The controller applies what arrives together
#: in one transaction (group commit), so a deeper window means fewer, larger commits.
WINDOW = 256
#: The outbox is read at least this often whatever happened (a resumed pause, say).
PUMP_EVERY_S = 0.05
#: Rows read from the outbox at a time while sending: a frame's worth, so the first frame
#: goes out before the rest of the window is read and encoded.
READ_ROWS = BATCH_ROWS


def wire_row(signer: Signer, topic: str, message: dict[str, Any], floats: bool | None) -> bytes:
    """The bytes of one row sent alone: ``signer.wire(topic, message)``, told whether the
    row holds a float (:meth:`Signer.wire_known`: a float-free row's canonical text is
    orjson's, without the second pass over every text holding ``null``, each round
    result)."""
    return signer.wire_known(topic, message, floats)


#: A row planned and not yet sent: ``(seq, kind, canonical bytes, message, floats)``; the
#: bytes are empty when the row goes alone, the message is None when the row goes in a frame
#: and holds no float (its bytes are all the frame needs).
Planned = tuple[int, str, bytes, dict[str, Any] | None, bool]


class OutboxStream:
    """The outbox's stream, for :class:`~controller.link.publisher.TablePublisher` (a part
    of it: the attributes are the publisher's)."""

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
        written, acked = outbox.counts()
        self._set(depth=written - acked, last_ack=acked, next_seq=self._next_seq)
        if self._stopped_at is not None or time.monotonic() < self._pause_until:
            return
        room = acked + self.window - self._next_seq + 1
        if room <= 0:
            return
        expected = max(self._next_seq, acked + 1)
        last = expected + room - 1  # the window's last row
        sent_t = int(self.clock() * 1000)
        planner = Planner(self.batch_rows, min(BATCH_BYTES, self.max_payload))
        framing: bool | None = None  # decided by the first read: more than one row waiting
        waiting: list[Planned] = []  # planned, not yet sent
        invalid = None
        # read and send a frame's worth at a time: the first frame leaves while the rest is
        # still to read and encode, so the controller applies it meanwhile (the two sides
        # on two cores; reading the whole window first kept the controller waiting)
        while invalid is None and expected <= last:
            rows = outbox.texts_from(expected, min(READ_ROWS, last - expected + 1))
            if framing is None:
                framing = self.batch_rows > 1 and len(rows) > 1
            for seq, _event, kind, key, text in rows:
                if seq != expected:
                    rows = []  # a hole cannot be: the outbox's recovery check refuses one
                    break
                # each payload read when its turn comes, as Outbox.resend_from reads it
                try:
                    payload, floats = json_rows.loads(text)
                except (ValueError, RecursionError) as exc:
                    invalid = (seq, f"seq {seq} is not readable JSON: {exc}")
                    break
                try:  # envelope(copy=False): the row's payload was just read from the outbox
                    message = row_envelope(
                        self.table_id, self.boot, seq, kind, key, payload, sent_t,
                        floats,  # known from reading it: the schema check walks none
                    )  # fmt: skip
                except LinkMessageError as exc:
                    invalid = (seq, f"seq {seq} fails the schema: {exc}")
                    break
                expected += 1
                # each row encoded once when it goes in a frame: the bytes that size a frame
                # are the bytes it carries (the live case, one row, is not encoded here only
                # to be measured); a framed row keeps only those bytes: its data dies here
                if framing:  # a row without a float: orjson's sorted text is the canonical one
                    data = (canonical if floats else json_rows.canonical)(message)
                    waiting.append((seq, kind, data, message if floats else None, floats))
                else:
                    data = b""
                    waiting.append((seq, kind, data, message, floats))
                del message, payload
                if not self._send_planned(waiting, planner.add(len(data)), sent_t):
                    return
            if len(rows) < READ_ROWS:
                break  # nothing more written (or a hole, or a row that fails)
        if not self._send_planned(waiting, planner.finish(), sent_t):
            return
        if invalid is not None:
            self._stop_stream(invalid[0], "invalid", invalid[1])

    def _send_planned(self, waiting: list[Planned], groups: list[int], sent_t: int) -> bool:
        """Send the first rows of ``waiting`` as ``groups`` (row counts, in order; from
        :class:`~controller.link.frames.Planner`) and drop them from it; False as
        :meth:`_send`."""
        for count in groups:
            group, waiting[:count] = waiting[:count], []
            if not self._send(group, sent_t):
                return False
        return True

    def _send(self, group: list[Planned], sent_t: int) -> bool:
        """Publish ``group`` (consecutive rows, :data:`Planned`, all of ``sent_t``): one row
        as a single message, more as one batch frame (controller/link/frames.py). False if
        the stream must stop here (a row too large: alarmed) or the connection is lost (the
        loop reconnects and starts again from the last ack)."""
        if not group:
            return True
        first, last = group[0][0], group[-1][0]
        if len(group) == 1:
            _, kind, encoded, message, floats = group[0]
            if message is None:  # a framed row alone: its message again, from its bytes
                message, floats = json_rows.loads(encoded.decode("ascii"))
            topic = topic_for(self.table_id, kind)
            data = wire_row(self.signer, topic, message, floats)
            if len(data) > self.max_payload:
                self._stop_stream(
                    last, "too_large", f"seq {last} is {len(data)} bytes > {self.max_payload}"
                )
                return False
        else:
            topic = topic_for(self.table_id, BATCH)
            data = wire_frame(
                self.signer, self.table_id, self.boot, sent_t, None, [e for _, _, e, _, _ in group]
            )
        info = self._client.publish(topic, data, qos=1)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            return False
        self._inflight[info.mid] = first  # a PUBACK failure names the first row
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
