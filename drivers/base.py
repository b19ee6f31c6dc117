"""What every driver shares: the event sink, the clock, and health for the diagnostics page.

Drivers turn hardware into :mod:`controller.table.events` and hand them to a
sink (the runtime's queue); they hold no game logic and never touch the table's
state. Time is the runtime's monotonic clock in integer milliseconds, injected
so tests can drive it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.table.events import Event

EventSink = Callable[[Event], None]
"""Where a driver hands its events: must only enqueue (it runs on the driver's thread)."""

Clock = Callable[[], int]
"""A monotonic clock in integer milliseconds."""


def monotonic_ms() -> int:
    """The default clock: :func:`time.monotonic` in whole milliseconds."""
    return time.monotonic_ns() // 1_000_000


@dataclass
class DriverHealth:
    """A driver's health as the diagnostics page shows it.

    ``errors`` counts problems by kind (``bad_checksum``, ``garbage``, ...);
    ``last_message_ms`` is the clock reading of the last good message. Updated
    from the driver's thread, read from others: use :meth:`count` and
    :meth:`snapshot`, which hold the lock.
    """

    name: str
    clock: Clock = monotonic_ms
    connected: bool = False
    errors: dict[str, int] = field(default_factory=dict)
    last_message_ms: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + n

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
            age = None if self.last_message_ms is None else self.clock() - self.last_message_ms
            return {
                "name": self.name,
                "connected": self.connected,
                "errors": dict(self.errors),
                "last_message_age_ms": age,
                **self.details,
            }
