"""Which connections and live streams the web front holds, and which it closes for a new one.

Bookkeeping only, no I/O: :class:`~controller.web.front.Front` reads and writes the sockets
and asks :class:`Admission` whether a new connection may be held, and :class:`Budget`
whether a live stream may start (docs/web.md, "Limits"; issue 26 item 3):

- strangers' connections count against ``max_connections`` in all and
  ``connections_per_address`` from one address (an IPv6 /64, :func:`address_group`); past
  either, the one of them that has waited longest without a request is closed for the
  newcomer, so a new connection is never refused while idle ones are held;
- the dealer's screen's addresses have ``dealer_connections`` of their own: a stranger's
  connection never closes one of theirs.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

DEALER_ADDRESSES = ("127.0.0.1", "::1")
"""The dealer's screen is a kiosk browser on the Pi itself: loopback's own address (a
client on the network cannot appear as it). ``[web] dealer_addresses`` may name others."""
DEALER_GROUP = "the dealer's screen"
"""The connection group of the dealer's screen's addresses (no address is written so)."""


def client_address(peer: str) -> str:
    """A peer's address as the server names it: an IPv4 client of a dual-stack socket
    (``::ffff:10.0.0.7``) as IPv4, every address in its shortest form.

    >>> client_address("::ffff:127.0.0.1"), client_address("0:0::1"), client_address("?")
    ('127.0.0.1', '::1', '?')
    """
    try:
        ip = ipaddress.ip_address(peer.split("%", 1)[0])
    except ValueError:
        return peer
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.compressed


def address_group(address: str) -> str:
    """What the per-address connection cap counts by: an IPv4 address itself, an IPv6 one's
    /64 (one machine is given a whole /64, so its addresses are one client).

    >>> address_group("10.0.0.7"), address_group("2001:db8:1:2::7")
    ('10.0.0.7', '2001:db8:1:2::/64')
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return address


@dataclass(slots=True, eq=False)
class Conn:
    """One open connection: its writer (closed by an eviction), whom it is from, and whether
    it waits for a request (``idle``) since ``waiting_since`` (monotonic s)."""

    writer: asyncio.StreamWriter
    address: str
    group: str
    """What it counts against: :data:`DEALER_GROUP` for the dealer's screen, else
    :func:`address_group`."""
    waiting_since: float
    idle: bool = True
    buffer: bytearray = field(default_factory=bytearray)


class Admission:
    """The connections held, counted by group, and the idle ones of each, oldest first.

    ``counters["evicted"]`` (the front's counters) counts the connections closed for a new
    one."""

    def __init__(
        self,
        *,
        max_connections: int,
        connections_per_address: int,
        dealer_connections: int,
        dealer_addresses: Iterable[str] = DEALER_ADDRESSES,
        counters: dict[str, int],
    ) -> None:
        self.max_connections = max_connections
        self.connections_per_address = connections_per_address
        self.dealer_connections = dealer_connections
        self.dealer_addresses = frozenset(client_address(a) for a in dealer_addresses)
        self.counters = counters
        self.conns: set[Conn] = set()
        self._held: dict[str, int] = {}  # group -> connections open
        self._strangers = 0  # connections open not from the dealer's screen
        self._idle: dict[str, dict[Conn, None]] = {}  # group -> idle ones, oldest first
        self._idle_strangers: dict[Conn, None] = {}  # every stranger's idle one, oldest first

    def is_dealer(self, address: str) -> bool:
        """Whether ``address`` (as :func:`client_address` writes it) is the dealer's screen's."""
        return address in self.dealer_addresses

    def group_of(self, address: str) -> str:
        """The group ``address`` counts against."""
        return DEALER_GROUP if self.is_dealer(address) else address_group(address)

    def admit(self, conn: Conn) -> str | None:
        """Make room for ``conn`` and count it; None, or why it is refused (every connection
        it could replace is in a request). A stranger's connection replaces only another
        stranger's: its own address's oldest idle one past ``connections_per_address``, else
        the oldest idle of all strangers' past ``max_connections``; the dealer's screen's only
        its own."""
        group = conn.group
        held = self._held.get(group, 0)
        if group == DEALER_GROUP:
            if held >= self.dealer_connections and not self._evict(self._idle.get(group)):
                return (
                    f"the dealer's screen has {held} connections open, each in a request; "
                    "close a page and try again"
                )
        else:
            if held >= self.connections_per_address and not self._evict(self._idle.get(group)):
                return (
                    f"{held} connections from {conn.address} are open, each in a request; "
                    "close one and try again"
                )
            if self._strangers >= self.max_connections and not self._evict(self._idle_strangers):
                return "too many connections; try again"
            self._strangers += 1
        self._held[group] = self._held.get(group, 0) + 1
        self.conns.add(conn)
        self.mark(conn, idle=True)
        return None

    def mark(self, conn: Conn, *, idle: bool) -> None:
        """``conn`` waits for a request (``idle``, from now) or is in one."""
        if conn not in self.conns:
            return
        conn.idle = idle
        mine = self._idle.setdefault(conn.group, {})
        mine.pop(conn, None)  # re-inserted at the end: the newest idle one
        self._idle_strangers.pop(conn, None)
        if idle:
            conn.waiting_since = time.monotonic()
            mine[conn] = None
            if conn.group != DEALER_GROUP:
                self._idle_strangers[conn] = None
        elif not mine:
            del self._idle[conn.group]

    def drop(self, conn: Conn) -> None:
        """Forget ``conn`` (closed or closing); safe twice."""
        if conn not in self.conns:
            return
        self.conns.discard(conn)
        mine = self._idle.get(conn.group)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self._idle[conn.group]
        self._idle_strangers.pop(conn, None)
        left = self._held.get(conn.group, 0) - 1
        if left > 0:
            self._held[conn.group] = left
        else:
            self._held.pop(conn.group, None)
        if conn.group != DEALER_GROUP:
            self._strangers -= 1

    def _evict(self, idle: dict[Conn, None] | None) -> bool:
        """Close the connection of ``idle`` that has waited longest without a request; False
        if there is none."""
        if not idle:
            return False
        oldest = next(iter(idle))
        self.drop(oldest)
        oldest.writer.transport.abort()
        self.counters["evicted"] += 1
        return True


class Budget:
    """Live-stream slots of one role (and per address, when ``per_address``)."""

    def __init__(self, role: str, size: int, per_address: int = 0):
        self.role, self.size, self.per_address = role, size, per_address
        self.held: dict[str, int] = {}

    @property
    def used(self) -> int:
        return sum(self.held.values())

    def take(self, address: str) -> bool:
        if self.used >= self.size:
            return False
        if self.per_address and self.held.get(address, 0) >= self.per_address:
            return False
        self.held[address] = self.held.get(address, 0) + 1
        return True

    def give(self, address: str) -> None:
        left = self.held.get(address, 0) - 1
        if left > 0:
            self.held[address] = left
        else:
            self.held.pop(address, None)
