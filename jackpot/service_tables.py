"""What the jackpot service sends the tables and the signs (a mixin of
:class:`~jackpot.service.JackpotService`, on its thread): acks, resend requests, awards, a
table's birth and status, its significant events, and the retained meters, coalesced to
``meter_rate`` a pool. docs/jackpot/controller.md ("Service")."""

from __future__ import annotations

import logging
import time
from typing import Any

from controller.link.messages import VERSION, meter_topic, topic_for, validate
from jackpot import events
from jackpot.ledger import Award

log = logging.getLogger("jackpot.service")  # one logger for the whole service

#: After a table's live birth, how long its stream may stand still before the controller
#: asks for a resend (seconds). A table starts again from its last ack on each connect, so
#: one that streams needs none; asked at once, it made the table send its whole window
#: twice (half of a backlog's messages were duplicates).
BIRTH_RESEND_S = 2.0


class TablesMixin:
    """What the jackpot service sends the tables and the signs: the methods of
    :class:`~jackpot.service.JackpotService` on this concern."""

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
