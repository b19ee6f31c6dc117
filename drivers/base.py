"""What every driver shares: the event sink, the clock, and health for the diagnostics page.

Drivers turn hardware into :mod:`controller.table.events` and hand them to a
sink (the runtime's queue); they hold no game logic and never touch the table's
state. Time is the runtime's monotonic clock in integer milliseconds, injected
so tests can drive it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.table.events import Event

EventSink = Callable[[Event], None]
"""Where a driver hands its events: must only enqueue (it runs on the driver's thread)."""

Clock = Callable[[], int]
"""A monotonic clock in integer milliseconds."""


MINUTE_MS = 60_000
HOUR_MINUTES = 60
"""``errors_last_hour`` counts the errors of the last 60 minutes, a minute at a time."""


def monotonic_ms() -> int:
    """The default clock: :func:`time.monotonic` in whole milliseconds."""
    return time.monotonic_ns() // 1_000_000


@dataclass
class DriverHealth:
    """A driver's health as the diagnostics page shows it.

    ``errors`` counts problems by kind (``bad_checksum``, ``garbage``, ...) since the
    driver started; the snapshot also has ``errors_last_hour`` (the same, over the last
    hour, counted in minutes: what the diagnostics page judges a part by, so one blip does
    not mark it for the life of the process) and ``last_error_age_ms``.
    ``last_message_ms`` is the clock reading of the last good message. Updated
    from the driver's thread, read from others: use :meth:`count` and
    :meth:`snapshot`, which hold the lock.

    >>> now = [0]
    >>> health = DriverHealth("shoe", clock=lambda: now[0])
    >>> health.count("garbage"); now[0] = 30 * 60_000; health.count("disconnect")
    >>> health.snapshot()["errors_last_hour"]
    {'garbage': 1, 'disconnect': 1}
    >>> now[0] = 61 * 60_000; health.snapshot()["errors_last_hour"]
    {'disconnect': 1}
    >>> now[0] = 91 * 60_000; snap = health.snapshot()
    >>> snap["errors_last_hour"], snap["errors"], snap["last_error_age_ms"]
    ({}, {'garbage': 1, 'disconnect': 1}, 3660000)
    """

    name: str
    clock: Clock = monotonic_ms
    connected: bool = False
    errors: dict[str, int] = field(default_factory=dict)
    last_message_ms: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    last_error_ms: int | None = None
    _minutes: dict[int, Counter[str]] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + n
            now = self.clock()
            self.last_error_ms = now
            minute = now // MINUTE_MS
            self._minutes.setdefault(minute, Counter())[kind] += n
            for old in [m for m in self._minutes if m <= minute - HOUR_MINUTES]:
                del self._minutes[old]

    def _last_hour(self, now: int) -> dict[str, int]:
        """Errors by kind in the minutes of the last hour (held lock)."""
        since = now // MINUTE_MS - HOUR_MINUTES
        total: Counter[str] = Counter()
        for minute, kinds in self._minutes.items():
            if minute > since:
                total.update(kinds)
        return dict(total)

    def message(self) -> None:
        """A good message arrived now."""
        with self._lock:
            self.last_message_ms = self.clock()

    def set(self, **values: Any) -> None:
        with self._lock:
            for key, value in values.items():
                if key == "connected":
                    self.connected = bool(value)
                else:
                    self.details[key] = value

    def snapshot(self) -> dict[str, Any]:
        """JSON-safe: name, connected, errors by kind, last message age (ms), details."""
        with self._lock:
            now = self.clock()
            age = None if self.last_message_ms is None else now - self.last_message_ms
            error_age = None if self.last_error_ms is None else now - self.last_error_ms
            return {
                "name": self.name,
                "connected": self.connected,
                "errors": dict(self.errors),
                "errors_last_hour": self._last_hour(now),
                "last_error_age_ms": error_age,
                "last_message_age_ms": age,
                **self.details,
            }
