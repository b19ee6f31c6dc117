"""The jackpot service's table messages in (a mixin of
:class:`~jackpot.service.JackpotService`, on its thread): each received message checked by
:class:`~jackpot.intake.Intake` and queued with its MQTT id; what arrived together applied in
one ledger transaction (``Ledger.apply_batch``); then the alarms and counts, the acks,
resends and awards it calls for, and only then each PUBACK, in the order received.
docs/jackpot/controller.md ("Service")."""

from __future__ import annotations

import logging
import select
import sqlite3
import time
from typing import Any

import paho.mqtt.client as mqtt

from controller.link.messages import JACKPOT_STATUS_TOPIC, TABLE_ID, topic_for
from jackpot.intake import Intake, Received, Refusal
from jackpot.ledger import Award, Result, Status

log = logging.getLogger("jackpot.service")  # one logger for the whole service


def _topic_table(topic: str) -> str | None:
    """The table id level of a bj/v1/table/{id}/... topic, for an alarm (not trusted)."""
    levels = topic.split("/")
    if len(levels) > 3 and levels[2] == "table" and TABLE_ID.match(levels[3]):
        return levels[3]
    return None


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


#: Batches :meth:`MessagesMixin._flush` applies in a row, each read while the one before it
#: committed, before the loop's other work (meters, heartbeat, alarms) has its turn.
EARLY_BATCHES = 4


def _early(message: Any, t: int, intake: Intake) -> tuple[Any, int, Any]:
    """A message read while a COMMIT was on its way: ``(message, t, checked)``, ``checked``
    what the intake said (a :class:`Received`, or what it raised; None: a controller's
    status, handled later)."""
    if message.topic == JACKPOT_STATUS_TOPIC:
        return message, t, None
    try:
        return message, t, intake.read(message.topic, message.payload)
    except Exception as exc:  # a Refusal, or one no check foresaw: raised again in turn
        return message, t, exc


class MessagesMixin:
    """The jackpot service's table messages in: the methods of
    :class:`~jackpot.service.JackpotService` on this concern."""

    def _on_message(self, client, userdata, message) -> None:
        """Check one message and queue it with its mid (paho calls this inside
        ``client.loop()``); :meth:`_flush` applies the queue and sends the PUBACKs in order.
        While a batch's COMMIT is on its way (:meth:`_read_early`) only its checks run."""
        if self._drop:  # the ledger failed in this pass: everything comes back on reconnect
            return
        if self._early is not None:
            self._early.append(_early(message, self._ms(), self._intake))
            return
        self._in_callback = True  # paho's lock is held: no read ahead (:meth:`_read_early`)
        try:
            self._handle(message, self._ms(), None)
        finally:
            self._in_callback = False

    def _handle(self, message: Any, t: int, checked: Any) -> None:
        """Queue one message that arrived at ``t`` (UTC ms); ``checked``: what the intake
        said of it already (:func:`_early`), or None."""
        queued = _Queued(message.mid, message.qos, t)
        if message.topic == JACKPOT_STATUS_TOPIC:
            self._on_other_status(message.payload)
        else:
            self._take_safely(message, queued, checked)
        if not queued.rows and not self._queue:  # nothing before it waits: PUBACK now
            self._client.ack(queued.mid, queued.qos)
            return
        if not self._taking_early and self._full():  # one more than a batch: apply it first
            self._flush()
        self._queue.append(queued)
        self._queued_rows += len(queued.rows)
        # a full batch is applied when the pass's reading stops (:meth:`_read_more`), out
        # of paho's callback, so its COMMIT can overlap reading the next (:meth:`_flush`)

    def _full(self) -> bool:
        return len(self._queue) >= self.batch_max or self._queued_rows >= self.batch_rows

    def _take_safely(self, message: Any, queued: _Queued, checked: Any = None) -> None:
        try:
            self._take(message.topic, message.payload, bool(message.retain), queued, checked)
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

    def _read_early(self) -> None:
        """While a batch's COMMIT is on its way (PostgreSQL's fsync): read what the socket
        holds already, up to a batch, and check each message (:class:`Intake`: no ledger,
        no alarm, no count); :meth:`_flush` handles them in order once the commit answered.
        A read that fails drops them (not PUBACKed: the broker sends them again)."""
        self._early = early = []
        sock, rows = self._client.socket(), 0
        while sock is not None and len(early) < self.batch_max and rows < self.batch_rows:
            pending = sock.pending() if hasattr(sock, "pending") else 0
            if not pending and not select.select([sock], [], [], 0)[0]:
                return
            if self._client.loop_read() != mqtt.MQTT_ERR_SUCCESS:
                early.clear()
                return
            rows = sum(len(e[2].rows) for e in early if isinstance(e[2], Received))

    def _read_more(self) -> int:
        """After ``client.loop()`` (which reads one packet or a few), read whatever else the
        socket already holds, up to a full batch: a burst becomes one ledger transaction."""
        sock = self._client.socket()
        for _ in range(self.batch_max):
            if self._drop or sock is None or self._full():
                break
            pending = sock.pending() if hasattr(sock, "pending") else 0  # TLS: decrypted bytes
            if not pending and not select.select([sock], [], [], 0)[0]:
                break
            rc = self._client.loop_read()
            if rc == mqtt.MQTT_ERR_SUCCESS and self._client.want_write():
                # a batch filled up inside that read (:meth:`_on_message` applied it): its
                # acks and PUBACKs, queued by paho inside the callback, go out now, not after
                # the next batch is read; the table frames its next rows meanwhile
                rc = self._client.loop_write()
            if rc != mqtt.MQTT_ERR_SUCCESS:
                return rc
        return mqtt.MQTT_ERR_SUCCESS

    def _take(
        self, topic: str, payload: bytes, retained: bool, queued: _Queued, checked: Any = None
    ) -> None:
        """Check one message (:class:`~jackpot.intake.Intake`: a single message or a batch
        frame); its table messages go into ``queued.rows`` for the ledger transaction, a
        status is handled now (after the messages before it), a refusal is alarmed (a frame
        is refused whole, with the alarm a single message would raise)."""
        try:
            if checked is None:
                got = self._intake.read(topic, payload)
            elif isinstance(checked, BaseException):
                raise checked
            else:
                got = checked
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
        order received. A ledger error: no PUBACK at all, reconnect (:meth:`_ledger_failed`).
        The messages read while the COMMIT was on its way are queued next, in order, and
        applied as the next batch the same way (a few batches at most: then the loop's
        other work)."""
        for _ in range(EARLY_BATCHES):
            early = self._apply_queue()
            if not early or self._drop:
                return
            self._taking_early = True
            try:
                for message, t, checked in early:
                    if not self._drop:
                        self._handle(message, t, checked)
            finally:
                self._taking_early = False
            if not self._queue:
                return

    def _apply_queue(self) -> list[tuple[Any, int, Any]]:
        """:meth:`_flush`'s one batch; returns the messages read meanwhile, checked."""
        queue, self._queue = self._queue, []
        self._queued_rows = 0
        if not queue:
            return []
        bodies = [body for q in queue for body, _text in q.rows]
        texts = [text for q in queue for _body, text in q.rows]
        times = [q.t for q in queue for _row in q.rows]
        digests = [d for q in queue for d in q.digests]
        # one batch read ahead while the COMMIT is on its way; not inside paho's callback
        ahead = None if self._taking_early or self._in_callback else self._read_early
        try:
            results = (
                self._ledger.apply_batch(
                    bodies,
                    checked=True,
                    texts=texts,
                    received=times,
                    digests=digests,
                    meanwhile=ahead,
                )
                if bodies
                else []
            )
        except (sqlite3.Error, OSError):  # nothing committed (LedgerFenced is one)
            self._early = None  # not PUBACKed: they come again after the reconnect
            self._ledger_failed(_topic_of(bodies[-1]))
            return []
        except Exception:  # a message no check foresaw: find it, one transaction each
            early, self._early = self._early or [], None
            log.exception("a batch of %d messages failed: applying them one by one", len(bodies))
            self._flush_one_by_one(queue)
            return early
        early, self._early = self._early or [], None
        self._count("batch")
        with self._lock:
            self._largest_batch = max(self._largest_batch, len(bodies))
        self._after_commit(bodies, results)
        for q in queue:
            self._client.ack(q.mid, q.qos)
        return early

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
