"""The card-reading shoe's reader: a serial port in, table events out.

One thread reads the port, feeds the pure parser (:mod:`drivers.shoe_protocol`)
and hands each event to the sink; it never touches table state. The port is
opened by pyserial URL, so the transport is configuration:

- ``/dev/serial/by-id/usb-...`` (a real shoe; the by-id name survives replugging),
- ``socket://host:port`` (a shoe behind a serial-to-network bridge),
- ``spy:///dev/ttyUSB0?file=/tmp/shoe.txt`` (the same, with a hex dump of the link
  for a field technician),
- a plain path such as the pseudo-terminal ``shoe-sim`` prints.

What the reader guarantees (``hardware/shoe-protocol.md`` has the wire side):

- garbage and bad checksums are counted in :meth:`ShoeReader.health` and discarded,
  never turned into a card;
- a gap in sequence numbers is a ``ShoeEvent("missed_frames")`` naming the missing
  numbers (an alarm, not a guess); a frame sent twice is ignored and counted;
- a frame whose number is behind the count (an old frame sent again, or out of order) is
  never acted on: its card becomes an ``OutOfOrderCard`` (the table holds it for the
  dealer, never deals it), another message a ``ShoeEvent("out_of_order")``;
- no good frame for ``heartbeat_timeout_ms`` is ``ShoeEvent("offline")``; a port
  error is ``offline`` too, then the port is reopened with jittered exponential
  backoff; the first good frame after either is ``ShoeEvent("online")``.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import threading
import time
from collections.abc import Callable
from typing import Any

import serial

try:
    from serial.serialposix import Serial as _PosixSerial
except ImportError:  # pragma: no cover - not a POSIX system: pyserial's read everywhere
    _PosixSerial = None

from controller.backoff import jittered_backoff
from controller.errors import TableControllerError
from controller.table.events import Event, ShoeEvent
from drivers.base import Clock, DriverHealth, EventSink, monotonic_ms
from drivers.shoe_protocol import Discard, Frame, FrameParser, ShoeDecoder

BAUDRATE = 115200
READ_TIMEOUT_S = 0.05
READ_CHUNK = 4096
"""Most bytes taken from the port in one read (a frame is about 16)."""
"""How long one read waits: the longest the reader goes without checking the heartbeat."""

Problem = dict[str, Any]
"""An error the reader counted: ``{"error": kind, "detail": text, "t": ms}``."""
ProblemSink = Callable[[Problem], None]


class ShoeError(TableControllerError, ValueError):
    """A shoe configuration the reader cannot use (a malformed URL, a bad setting)."""


def backoff_ms(attempt: int, low_ms: int, high_ms: int, r: float) -> int:
    """Delay before reopen attempt ``attempt`` (0 first): doubling from ``low_ms`` up to
    ``high_ms``, then jittered into its upper half by ``r`` in [0, 1) so the shoes of a
    room that lost power together do not all retry at the same moment.

    >>> [backoff_ms(n, 200, 5000, 0.0) for n in range(7)]
    [100, 200, 400, 800, 1600, 2500, 2500]
    >>> backoff_ms(2, 200, 5000, 0.999)
    799
    """
    return int(jittered_backoff(attempt, low_ms, high_ms, r))


class ShoeReader:
    """Reads a card-reading shoe; events go to ``sink`` from the reader's thread.

    ``url`` is a pyserial URL or device path. ``clock`` stamps events and times the
    heartbeat. ``rng`` jitters the reconnect backoff (``random.random`` unless a test
    injects one). ``on_problem`` (optional) hears every error counted, as a dict;
    like the sink it runs on the reader's thread and must only enqueue or print.

    A URL pyserial cannot parse is a :class:`ShoeError` here; a port that will not
    open (the shoe unplugged at start-up) is ``offline`` and retried.
    """

    def __init__(
        self,
        url: str,
        sink: EventSink,
        *,
        clock: Clock = monotonic_ms,
        heartbeat_timeout_ms: int = 3000,
        baudrate: int = BAUDRATE,
        reconnect_min_ms: int = 200,
        reconnect_max_ms: int = 5000,
        rng: Callable[[], float] = random.random,
        on_problem: ProblemSink | None = None,
        name: str = "shoe",
    ):
        for option, value in (
            ("heartbeat_timeout_ms", heartbeat_timeout_ms),
            ("reconnect_min_ms", reconnect_min_ms),
            ("reconnect_max_ms", reconnect_max_ms),
            ("baudrate", baudrate),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ShoeError(f"shoe {url}: {option} must be a whole number > 0, got {value!r}")
        if reconnect_max_ms < reconnect_min_ms:
            raise ShoeError(
                f"shoe {url}: reconnect_max_ms ({reconnect_max_ms}) is below "
                f"reconnect_min_ms ({reconnect_min_ms})"
            )
        self.url = url
        self._sink = sink
        self._clock = clock
        self._timeout_ms = heartbeat_timeout_ms
        self._baudrate = baudrate
        self._backoff = (reconnect_min_ms, reconnect_max_ms)
        self._rng = rng
        self._on_problem = on_problem
        self._health = DriverHealth(name, clock)
        self._parser = FrameParser()
        self._decoder = ShoeDecoder()
        self._stop = threading.Event()
        self._port: Any = None
        self._online: bool | None = None  # None until the first frame or the first loss
        self._attempt = 0
        self._reconnects = 0
        self._last_alive = clock()
        self._closed = False
        self._booked: tuple[int, int | None, str | None, bool] | None = None
        """The last good frame for :meth:`health`: (clock ms, sequence number, firmware,
        shuffling), stored in one assignment (the health's lock and dict wait for a reader)."""
        self.read_ns = 0
        """``time.monotonic_ns()`` when the last read returned bytes (benchmarks' trace: the
        sink runs on this thread, so it reads the read that made its event)."""
        self._health.set(url=url, state="starting", firmware=None, shuffling=False)
        self._open(first=True)
        self._thread = threading.Thread(target=self._run, name=f"{name}-reader", daemon=True)
        self._thread.start()

    # -- the public side ---------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """For the diagnostics page: connected, errors by kind, last message age, details
        (the last frame's, as the reader booked it after handing its events over)."""
        snapshot = self._health.snapshot()
        booked = self._booked
        if booked is not None:
            at, last, firmware, shuffling = booked
            snapshot["last_message_age_ms"] = self._clock() - at
            snapshot["last_seq"] = None if last is None else f"{last:02X}"
            snapshot["firmware"] = firmware
            snapshot["shuffling"] = shuffling
        return snapshot

    def alive(self) -> bool:
        """Whether its thread runs (the daemon's watchdog and /healthz ask)."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop the reader thread and close the port; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        port = self._port
        cancel = getattr(port, "cancel_read", None)
        if cancel is not None:
            with contextlib.suppress(Exception):  # the port may be dead; closing is what matters
                cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)
        self._close_port()
        self._health.set(connected=False, state="closed")

    def __enter__(self) -> ShoeReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the reader thread -------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._port is None:
                low, high = self._backoff
                delay = backoff_ms(self._attempt, low, high, self._rng())
                self._health.set(next_retry_ms=delay)
                if self._stop.wait(delay / 1000):
                    break
                self._attempt += 1
                self._open(first=False)
                continue
            try:
                data = self._read(self._port)
            except (serial.SerialException, OSError) as exc:
                if self._stop.is_set():
                    break
                self._lost(f"port error: {exc}")
                continue
            if data:
                self._feed(data)
            self._check_heartbeat()

    def _read(self, port: Any) -> bytes:
        """What arrived, waiting up to READ_TIMEOUT_S for a first byte. A local serial port
        (or pty) is read in one ``os.read`` of everything there, once ``select`` says it is
        readable: two system calls where pyserial's read (one byte, then how many wait, then
        those) makes five, each a GIL hand-off on the prompt's path. Other transports
        (``socket://``, ``spy://``, ``loop://``) go through pyserial's read."""
        if type(port) is not _PosixSerial:  # spy:// is a subclass: its read writes the dump
            data = port.read(1)
            if data:
                self.read_ns = time.monotonic_ns()
                waiting = port.in_waiting
                if waiting:  # then the rest of what arrived, parsed at once
                    data += port.read(waiting)
            return data
        fd, abort = port.fd, port.pipe_abort_read_r
        ready, _, _ = select.select([fd, abort], [], [], READ_TIMEOUT_S)
        if abort in ready:  # close() cancelled the read
            os.read(abort, 1000)
            return b""
        if not ready:
            return b""
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return b""
        if not data:  # readable and empty: the device is gone
            raise serial.SerialException(
                "device reports readiness to read but returned no data "
                "(device disconnected or multiple access on port?)"
            )
        self.read_ns = time.monotonic_ns()
        return data

    def _open(self, *, first: bool) -> None:
        try:
            port = serial.serial_for_url(
                self.url, baudrate=self._baudrate, timeout=READ_TIMEOUT_S, exclusive=True
            )
        except ValueError as exc:
            if first:
                raise ShoeError(
                    f"shoe URL {self.url!r}: {exc}; use a device path (/dev/serial/by-id/...), "
                    "socket://HOST:PORT or spy://PATH?file=DUMP"
                ) from None
            self._problem("open_failed", str(exc))
            return
        except (serial.SerialException, OSError) as exc:
            why = str(exc)
            if "exclusively lock" in why:
                why += "; another program is reading the shoe: stop it (only one reader at a time)"
            self._problem("open_failed", why)
            if self._online is not False:
                self._go_offline(f"cannot open {self.url}: {why}")
            self._health.set(state="reconnecting")
            return
        if self._stop.is_set():
            port.close()
            return
        self._port = port
        self._attempt = 0
        if not first:
            self._reconnects += 1
        self._last_alive = self._clock()
        self._health.set(connected=True, reconnects=self._reconnects, next_retry_ms=None)
        self._health.set(
            state="open, waiting for the shoe" if self._online is not True else "online"
        )

    def _close_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            with contextlib.suppress(Exception):  # a port whose device is gone may not close
                port.close()

    def _lost(self, why: str) -> None:
        self._close_port()
        self._health.set(connected=False, state="reconnecting")
        self._problem("disconnect", why)
        partial = self._parser.flush()
        if partial is not None:
            self._discard(partial)
        if self._online is not False:
            self._go_offline(why)

    def _check_heartbeat(self) -> None:
        if self._online is False:
            return
        silent = self._clock() - self._last_alive
        if silent >= self._timeout_ms:
            self._problem("heartbeat_timeout", f"no message from the shoe for {silent} ms")
            self._go_offline(f"no message from the shoe for {silent} ms")

    def _go_offline(self, detail: str) -> None:
        self._online = False
        self._decoder.lost_contact()
        self._health.set(state="offline")
        self._emit(ShoeEvent("offline", detail, t=self._clock()))

    def _feed(self, data: bytes) -> None:
        for item in self._parser.feed(data):
            if isinstance(item, Frame):
                self._frame(item)
            else:
                self._discard(item)

    def _discard(self, item: Discard) -> None:
        if item.reason == "garbage":
            self._health.count("garbage_bytes", len(item.data))
            self._problem("garbage", f"{len(item.data)} bytes discarded: {item.data[:32].hex()}")
        else:
            self._health.count(item.reason)
            self._problem(item.reason, f"frame discarded: {item.data!r}")

    def _frame(self, frame: Frame) -> None:
        """One good frame. A clean one's events go to the sink first and the health's
        bookkeeping (the diagnostics page's) after, in one assignment: until this thread
        blocks in its next read it holds the GIL, and the loop waits for it to take the card
        up. A frame with a problem is counted before its events, so whoever hears an alarm
        sees it counted."""
        now = self._clock()
        self._last_alive = now
        if self._online is not True:
            back = self._online is False
            self._online = True
            self._health.set(state="online")
            self._emit(ShoeEvent("online", "back" if back else "", t=now))
        decoder = self._decoder
        decoded = decoder.decode(frame, now)
        if not decoded.counts and not decoded.problems:
            for event in decoded.events:
                self._emit(event)
            self._booked = (now, decoder.seq.last, decoder.firmware, decoder.shuffling)
            return
        self._booked = (now, decoder.seq.last, decoder.firmware, decoder.shuffling)
        for kind, n in decoded.counts:
            self._health.count(kind, n)
        for kind, detail in decoded.problems:
            self._problem(kind, detail)
        for event in decoded.events:
            self._emit(event)

    def _emit(self, event: Event) -> None:
        try:
            self._sink(event)
        except Exception as exc:  # a broken sink must not stop the shoe being read
            self._health.count("sink_error")
            self._problem("sink_error", f"{type(exc).__name__}: {exc}")

    def _problem(self, kind: str, detail: str) -> None:
        if kind in ("open_failed", "disconnect", "heartbeat_timeout"):
            self._health.count(kind)
        if self._on_problem is not None:
            with contextlib.suppress(Exception):
                self._on_problem({"error": kind, "detail": detail, "t": self._clock()})
