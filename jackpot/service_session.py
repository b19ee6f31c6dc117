"""The jackpot service's MQTT session (a mixin of :class:`~jackpot.service.JackpotService`,
on its thread): connecting with MQTT 5 and a persistent session, jittered backoff, the
subscriptions, the signed retained status (online, offline as the will, the heartbeat), what
the controller publishes and its PUBACKs. docs/jackpot/controller.md ("Service")."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import time
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from controller.backoff import jittered_backoff
from controller.link.messages import JACKPOT_STATUS_TOPIC, VERSION, validate

log = logging.getLogger("jackpot.service")  # one logger for the whole service

CLIENT_ID = "jackpot-controller"
SUBSCRIPTION = "bj/v1/table/+/#"


def no_delay(client: mqtt.Client) -> None:
    """TCP_NODELAY on the client's socket: a PUBACK or an ack goes out at once instead of
    waiting (Nagle) for the TCP acknowledgement of the packet before it, up to 40 ms."""
    with contextlib.suppress(OSError, AttributeError):
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class SessionMixin:
    """The jackpot service's MQTT session: the methods of
    :class:`~jackpot.service.JackpotService` on this concern."""

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
