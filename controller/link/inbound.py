"""What the jackpot controller sends a table: acks, resend requests, awards, meters, status.

The methods of :class:`~controller.link.publisher.TablePublisher` that paho calls (on the
link's thread, inside ``client.loop``) for the controller's messages, each accepted only
when it parses, is of its kind, names this table and carries a valid signature by one of
the controller's keys (``verifier``); anything else raises an alarm and changes nothing:

- an ack: ``Outbox.acknowledge(seq)``, room in the window (one below the last ack is old
  news, a copy the broker kept: counted and logged, not an alarm);
- a resend request: the stream rewinds to its ``from`` (one from beyond what the table
  wrote is refused with an alarm, and the stream carries on);
- an award: handed to ``on_award`` as a :class:`~controller.table.events.JackpotAward`;
- a meter (retained, for the dealer display) and the controller's status (its heartbeat).

State it reads and changes, shared with the stream (controller/link/sending.py): ``_outbox``,
``_next_seq``, ``_pause_until``, ``_kick``, ``_failures``; with any thread, under ``_lock``:
``_health`` and ``_meters``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from controller.errors import JournalError
from controller.journal.outbox import OutboxError
from controller.link.awards import award_event
from controller.link.messages import LinkMessageError, parse_message
from controller.link.signing import SignatureError

log = logging.getLogger("table-controller.link")

#: At most one log line about stale acknowledgements in this many seconds.
STALE_LOG_EVERY_S = 60.0


class ControllerMessages:
    """The controller's messages, for :class:`~controller.link.publisher.TablePublisher`
    (a part of it: the attributes are the publisher's)."""

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
