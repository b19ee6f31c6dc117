"""Several brokers for one MQTT client: which address to connect to next.

The jackpot link may run two central brokers (docs/jackpot/brokers.md). Every client (the
table's publisher, the jackpot controller, a sign) and every property bridge follows one rule,
the one Mosquitto's bridges follow with ``round_robin false``:

- the first address is the main broker; a process starts there;
- a connection attempt that fails (refused, no CONNACK) moves on to the next address, in
  turn; a connection that was up and is lost is tried once more at the same address first
  (a broker restart or a network blip does not move anyone);
- while connected to another address, the first one is probed (a TCP connect, on a thread of
  its own, never blocking the client's loop) every ``return_after`` seconds; once it accepts a
  connection, :meth:`BrokerList.back_to_first` says so and the client leaves for it.

So everyone who can reach the first broker is on it, and a loss of it moves everyone to the
second one within a few seconds and back once it returns. :class:`BrokerList` holds no MQTT
client: its owner calls :meth:`~BrokerList.failed`, :meth:`~BrokerList.connected` and
:meth:`~BrokerList.back_to_first` from its own loop (one thread).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence

from controller.errors import TableControllerError

log = logging.getLogger(__name__)

#: Seconds between two probes of the first address while on another one; Mosquitto's bridge
#: probes its main address every 5 s, so bridges and clients return together.
RETURN_AFTER_S = 5.0
#: The most addresses one client takes.
MAX_BROKERS = 8


class BrokerAddressError(TableControllerError, ValueError):
    """A broker address that cannot be used (the message says which and how to write it)."""


def parse_address(text: str, default_port: int) -> tuple[str, int]:
    """``"host"``, ``"host:port"``, ``"[::1]:8883"`` or a bare IPv6 address -> (host, port).

    Raises :class:`BrokerAddressError` for an empty host, a scheme, spaces or a bad port.
    """
    if not isinstance(text, str) or not text or text != text.strip() or " " in text:
        raise BrokerAddressError(
            f"broker address {text!r}: must be a host name or IP address, optionally with "
            "':port', with no spaces"
        )
    if "://" in text or "/" in text:
        raise BrokerAddressError(
            f"broker address {text!r}: no scheme or path, only host or host:port"
        )
    host, port_text = text, ""
    if text.startswith("["):  # [v6]:port
        end = text.find("]")
        if end < 0 or (text[end + 1 :] and not text[end + 1 :].startswith(":")):
            raise BrokerAddressError(f"broker address {text!r}: write IPv6 as [addr]:port")
        host, port_text = text[1:end], text[end + 2 :]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    if not host:
        raise BrokerAddressError(f"broker address {text!r}: the host is missing")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise BrokerAddressError(
            f"broker address {text!r}: port {port_text!r} must be a number from 1 to 65535"
        )
    return host, int(port_text)


def format_address(address: tuple[str, int]) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Probe:
    """One TCP connect to ``address`` on its own daemon thread; ``done`` once it knows."""

    def __init__(self, address: tuple[str, int], timeout: float) -> None:
        self.address = address
        self.timeout = timeout
        self.reachable = False
        self.done = threading.Event()
        threading.Thread(target=self._run, name="broker-probe", daemon=True).start()

    def _run(self) -> None:
        try:
            with socket.create_connection(self.address, timeout=self.timeout):
                self.reachable = True
        except OSError:
            self.reachable = False
        finally:
            self.done.set()


class BrokerList:
    """The addresses of one client's brokers, the first preferred (module docstring).

    ``addresses``: (host, port) pairs, at least one, no repeats; ``return_after``: seconds
    between probes of the first address while on another; ``probe_timeout``: seconds a probe
    may take; ``clock``: monotonic seconds.
    """

    def __init__(
        self,
        addresses: Sequence[tuple[str, int]],
        *,
        return_after: float = RETURN_AFTER_S,
        probe_timeout: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        addresses = tuple((str(host), int(port)) for host, port in addresses)
        if not addresses:
            raise BrokerAddressError("no broker address: give at least one host:port")
        if len(addresses) > MAX_BROKERS:
            raise BrokerAddressError(
                f"{len(addresses)} broker addresses: at most {MAX_BROKERS} are taken"
            )
        repeated = sorted({format_address(a) for a in addresses if addresses.count(a) > 1})
        if repeated:
            raise BrokerAddressError(
                f"broker address {repeated[0]} is listed twice: list each broker once"
            )
        if return_after <= 0 or probe_timeout <= 0:
            raise BrokerAddressError("return_after and probe_timeout must be > 0 seconds")
        self.addresses = addresses
        self.return_after = return_after
        self.probe_timeout = probe_timeout
        self._clock = clock
        self._index = 0
        self._up = False  # connected (CONNACK) since the last attempt began
        self._last_up: int | None = None  # the address of the last CONNACK
        self._due = 0.0
        self._probe: _Probe | None = None

    @classmethod
    def single(cls, host: str, port: int) -> BrokerList:
        return cls([(host, port)])

    @property
    def address(self) -> tuple[str, int]:
        """Where to connect now."""
        return self.addresses[self._index]

    @property
    def on_first(self) -> bool:
        return self._index == 0

    def fresh_session(self) -> bool:
        """True when this attempt goes to another broker than the last CONNACK of this
        process: whatever that broker kept for the client's session is from an earlier stay
        there (stale acks and resends), so a client whose state is on its own disk starts
        clean. False at the first connection of a process and on the same broker."""
        return self._last_up is not None and self._last_up != self._index

    def connected(self) -> None:
        """A CONNACK (success) from :attr:`address`."""
        self._up = True
        self._last_up = self._index
        self._probe = None
        self._due = self._clock() + self.return_after
        if self._index:
            log.warning(
                "connected to broker %s, not the first (%s): it is probed every %g s",
                format_address(self.address), format_address(self.addresses[0]),
                self.return_after,
            )  # fmt: skip

    def failed(self) -> tuple[str, int]:
        """The attempt at :attr:`address` failed or its connection was lost; return where to
        try next. A connection that had its CONNACK is tried once more at the same address."""
        if self._up:
            self._up = False
            return self.address
        if len(self.addresses) > 1:
            was = self.address
            self._index = (self._index + 1) % len(self.addresses)
            log.warning(
                "broker %s unreachable: trying %s",
                format_address(was), format_address(self.address),
            )  # fmt: skip
        return self.address

    def back_to_first(self) -> bool:
        """True (once) when the client, connected to another address, should disconnect and
        connect to the first one, which has just accepted a probe; :attr:`address` is then
        the first. Never blocks: the probe runs on its own thread."""
        if self._index == 0 or not self._up:
            return False
        now = self._clock()
        if self._probe is None:
            if now >= self._due:
                self._probe = _Probe(self.addresses[0], self.probe_timeout)
            return False
        if not self._probe.done.is_set():
            return False
        reachable, self._probe = self._probe.reachable, None
        if not reachable:
            self._due = now + self.return_after
            return False
        log.warning(
            "the first broker %s is back: leaving %s for it",
            format_address(self.addresses[0]), format_address(self.address),
        )  # fmt: skip
        self._index, self._up = 0, False
        return True

    def __str__(self) -> str:
        return ", ".join(format_address(a) for a in self.addresses)
