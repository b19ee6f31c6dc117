"""``jackpot-sign``: a reference jackpot sign in the terminal.

It logs in as a sign user (read-only in config/mosquitto/acl), subscribes over MQTT 5 to the
retained meters ``bj/v1/meters/#`` and the controller's status ``bj/v1/jackpot/status``, checks
every message against the link's schemas (``controller.link.messages.parse_message``) and the
jackpot controller's signature (``--controller-key``: a meter or status not signed by one of
those keys is refused and counted, so nobody but the controller can put an amount on it), and
redraws a plain text screen: each pool's meter in dollars and cents with its sequence number.

A meter is shown as live only while the sign is connected to the broker *and* the controller's
retained status says ``online``. Otherwise (the controller's will said ``offline``, no status has
arrived, or the connection to the broker is lost) the screen says OFFLINE and shows no amount:
a stale meter is never shown as live.

The pure part is :class:`Board` (what the sign knows) and :func:`render` (the screen); ``main``
only wires paho-mqtt to them. paho's network thread never touches the board: its callbacks put
events on a queue that the main thread applies.

    jackpot-sign --host broker.example --port 1883 --username sign-lobby --password-file pw \
        --controller-key jackpot-1=BASE64   # printed by jackpot-controller link-key
    jackpot-sign ... --once        # print one screen after the retained messages, then exit
"""

from __future__ import annotations

import argparse
import datetime
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.link.brokers import BrokerAddressError, BrokerList, parse_address
from controller.link.messages import JACKPOT_STATUS_TOPIC, PREFIX, LinkMessageError, parse_message
from controller.link.signing import SigningKeyError, Verifier, check_key_id, parse_public_key
from controller.rules.pays import format_cents
from controller.rules.sidebets import pool_name

log = logging.getLogger("jackpot.sign")

METERS_TOPIC = f"{PREFIX}/meters/#"
SUBSCRIPTIONS = (METERS_TOPIC, JACKPOT_STATUS_TOPIC)
WIDTH = 60
CLEAR = "\x1b[H\x1b[2J"


# -- the pure part -----------------------------------------------------------------------------


@dataclass
class Board:
    """What the sign knows: the latest valid meter of each pool, the controller's latest
    status, whether the broker connection is up, and how many messages were refused.
    ``verifier`` holds the jackpot controller's public keys: only what they signed is shown."""

    verifier: Verifier
    meters: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: dict[str, Any] | None = None
    connected: bool = False
    refused: int = 0

    def receive(self, topic: str, payload: bytes) -> str | None:
        """Apply one message; return why it was ignored, or None when it was taken."""
        try:
            kind, _, message = parse_message(topic, payload)
            self.verifier.verify(topic, message, kind)
        except LinkMessageError as exc:
            self.refused += 1
            return str(exc)
        except Exception as exc:  # nothing a message holds may stop the sign
            self.refused += 1
            return f"unreadable message on {topic[:80]!r}: {type(exc).__name__}"
        if kind == "jackpot_status":
            if self.status is not None and message["boot"] < self.status["boot"]:
                # a status from an earlier boot is a replay: it must not clear the meters
                return f"status of boot {message['boot']} is older than boot {self.status['boot']}"
            if self.status is not None and message["boot"] != self.status["boot"]:
                self.meters.clear()  # a new controller boot: its meters replace the old ones
            self.status = message
            return None
        if kind != "meter":
            self.refused += 1
            return f"{kind}: not for a sign"
        held = self.meters.get(message["pool"])
        if held is not None and message["seq"] <= held["seq"]:
            return f"meter {message['pool']}: seq {message['seq']} is not after {held['seq']}"
        self.meters[message["pool"]] = message
        return None

    def screen(self, now: int) -> str:
        return render(self.meters, self.status, now, connected=self.connected)


def offline_reason(status: dict[str, Any] | None, connected: bool = True) -> str | None:
    """Why the meters are not live, or None when they are."""
    if not connected:
        return "connection to the broker lost"
    if status is None:
        return "no status from the jackpot controller yet"
    if status["state"] != "online":
        return "the jackpot controller is offline"
    return None


def _clock(ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def render(
    meters: dict[str, dict[str, Any]],
    status: dict[str, Any] | None,
    now: int,
    *,
    connected: bool = True,
) -> str:
    """The sign's screen as text. ``meters``: pool -> its latest meter message
    (link schema meter.json); ``status``: the latest jackpot_status message or None;
    ``now``: ms since the epoch; ``connected``: whether the broker connection is up.

    Live: each pool with its meter in dollars and cents (whole cents; the fraction of a cent
    stays in the ledger) and its sequence number. Not live: OFFLINE and the reason, and no
    amount at all.
    """
    why = offline_reason(status, connected)
    title = "JACKPOT METERS" if why is None else "JACKPOT METERS - OFFLINE"
    lines = [f"{title}{_clock(now):>{WIDTH - len(title)}}", "=" * WIDTH]
    for pool in sorted(meters):
        meter = meters[pool]
        name = pool_name(pool)
        if why is None:
            amount = format_cents(meter["amount"])
            lines.append(f"{name:<28}{amount:>20}   seq {meter['seq']}")
            if "must_hit_by" in meter:
                lines.append(f"{'':<4}must hit by {format_cents(meter['must_hit_by'])}")
        else:
            lines.append(f"{name:<28}{'OFFLINE':>20}")
    if not meters:
        lines.append("(no meters received)" if why is None else "OFFLINE")
    lines.append("=" * WIDTH)
    lines.append("live" if why is None else f"OFFLINE: {why}")
    return "\n".join(lines) + "\n"


# -- the MQTT side --------------------------------------------------------------------------


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SignClient:
    """paho-mqtt 2.x, MQTT 5, as a sign user, on a thread of its own. Callbacks only enqueue
    ``("connected" | "subscribed" | "message" | "disconnected" | "refused", data)``.
    ``brokers``: several brokers, the first preferred (controller/link/brokers.py); the sign
    follows the same rule as the tables and the controller, so it shows the live meters."""

    def __init__(
        self,
        host: str,
        port: int,
        username: str,
        password: str,
        brokers: BrokerList | None = None,
    ):
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"{username}-{_now_ms() % 1_000_000}",
            protocol=mqtt.MQTTv5,
        )
        client.username_pw_set(username, password)
        client.on_connect = self._on_connect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        client.on_disconnect = self._on_disconnect
        self._client = client
        self.brokers = brokers or BrokerList([(host, port)])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sign-mqtt", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def _run(self) -> None:
        import paho.mqtt.client as mqtt

        up, failures = False, 0
        while not self._stop.is_set():
            if not up:
                try:
                    self._client.connect(*self.brokers.address, keepalive=15)
                    up = True
                except OSError:
                    self.brokers.failed()
                    failures += 1
                    self._stop.wait(min(30.0, 2.0 ** min(failures, 5) / 2))
                continue
            if self._client.loop(timeout=0.2) != mqtt.MQTT_ERR_SUCCESS:
                up = False
                self.brokers.failed()
                self.events.put(("disconnected", "connection lost"))
                failures += 1
                self._stop.wait(min(30.0, 2.0 ** min(failures, 5) / 2))
            elif self._client.is_connected():
                failures = 0
                if self.brokers.back_to_first():  # the first broker is back: go there
                    self._client.disconnect()
                    up = False
        if up:
            self._client.disconnect()

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self.events.put(("refused", str(reason_code)))
            return
        self.brokers.connected()
        self.events.put(("connected", None))
        # subscribe in on_connect: a reconnect subscribes again and gets the retained state
        client.subscribe([(topic, 1) for topic in SUBSCRIPTIONS])

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        failed = [str(code) for code in reason_codes if code.is_failure]
        self.events.put(("refused" if failed else "subscribed", ", ".join(failed) or None))

    def _on_message(self, client, userdata, msg) -> None:
        self.events.put(("message", (msg.topic, bytes(msg.payload))))

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self.events.put(("disconnected", str(reason_code)))


def run(
    client: SignClient,
    show: Callable[[str], None],
    verifier: Verifier,
    *,
    once: bool = False,
    every_second: bool = False,
    quiet: float = 0.5,
    timeout: float = 10.0,
    clock: Callable[[], int] = _now_ms,
) -> int:
    """Apply the client's events to a :class:`Board` and show the screen on each event (and
        each second with ``every_second``, for the clock on a terminal). With ``once``: after the
    subscription, wait until the retained messages stop arriving for ``quiet`` seconds (or
    ``timeout``), show one screen, return 0 (1: refused, or no subscription in time)."""
    board = Board(verifier)
    client.start()
    started = time.monotonic()
    subscribed_at: float | None = None
    last_message = started
    try:
        while True:
            try:
                kind, data = client.events.get(timeout=0.1 if once else 1.0)
            except queue.Empty:
                kind, data = "tick", None
            if kind == "connected":
                board.connected = True
            elif kind == "disconnected":
                board.connected = False
            elif kind == "subscribed":
                subscribed_at = last_message = time.monotonic()
            elif kind == "refused":
                log.error("the broker refused the sign: %s", data)
                if once:
                    show(board.screen(clock()))
                    return 1
            elif kind == "message":
                last_message = time.monotonic()
                problem = board.receive(*data)
                if problem:
                    log.warning("ignored: %s", problem)
            if once:
                waited = time.monotonic() - started
                settled = subscribed_at is not None and time.monotonic() - last_message >= quiet
                if settled or waited >= timeout:
                    show(board.screen(clock()))
                    return 0 if settled else 1
            elif kind != "tick" or every_second:
                show(board.screen(clock()))
    finally:
        client.stop()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jackpot-sign",
        description="A reference jackpot sign: the meters and OFFLINE, in the terminal.",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the broker (default 127.0.0.1), or several as host:port,host:port: the first "
        "is preferred, the others are used while it is down (docs/jackpot/brokers.md)",
    )
    p.add_argument("--port", type=int, default=1883, help="the broker's port (default 1883)")
    p.add_argument("--username", default="signs", help="a sign user of the ACL (default signs)")
    p.add_argument("--password-file", required=True, help="a file holding the broker password")
    p.add_argument(
        "--controller-key",
        action="append",
        required=True,
        metavar="KID=BASE64",
        help="a public key of the jackpot controller (from jackpot-controller link-key); "
        "repeat it during a key change",
    )
    p.add_argument(
        "--once", action="store_true", help="print one screen after the retained messages, exit"
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, help="with --once: give up after this many seconds"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="jackpot-sign: %(message)s")
    try:
        password = Path(args.password_file).read_text(encoding="utf-8").strip()
    except OSError as exc:
        parser.exit(2, f"jackpot-sign: cannot read --password-file: {exc}\n")
    if not password:
        parser.exit(2, f"jackpot-sign: --password-file {args.password_file} is empty\n")
    keys = {}
    for item in args.controller_key:
        kid, _, text = item.partition("=")
        try:
            keys[check_key_id(kid)] = parse_public_key(text)
        except SigningKeyError as exc:
            parser.exit(2, f"jackpot-sign: --controller-key {item[:40]!r}: {exc}\n")
    try:
        brokers = BrokerList([parse_address(a, args.port) for a in args.host.split(",")])
    except BrokerAddressError as exc:
        parser.exit(2, f"jackpot-sign: --host: {exc}\n")
    client = SignClient(*brokers.address, args.username, password, brokers=brokers)
    clear = CLEAR if sys.stdout.isatty() and not args.once else ""

    def show(screen: str) -> None:
        sys.stdout.write(clear + screen + ("" if clear else "\n"))
        sys.stdout.flush()

    try:
        return run(
            client,
            show,
            Verifier(keys),
            once=args.once,
            every_second=bool(clear),
            timeout=args.timeout,
        )
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
