"""The last log records, kept in memory for the diagnostics page's "recent log"."""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

RECENT_LOG = 200
"""Records kept (the journal and the system log keep everything)."""


class RecentLog(logging.Handler):
    """A logging handler that keeps the last ``size`` records at ``level`` or above.

    >>> ring = RecentLog(size=2)
    >>> demo = logging.getLogger("recent-log-doctest")
    >>> demo.addHandler(ring); demo.setLevel(logging.INFO)
    >>> for n in range(3):
    ...     demo.info("round %d settled", n)
    >>> [r["message"] for r in ring.records()]
    ['round 1 settled', 'round 2 settled']
    >>> demo.removeHandler(ring)
    """

    def __init__(self, size: int = RECENT_LOG, level: int = logging.INFO):
        super().__init__(level)
        self._records: deque[dict[str, Any]] = deque(maxlen=size)
        self._ring_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the record
            message = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            message += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        item = {
            "t": round(record.created, 3),
            "level": record.levelname,
            "logger": record.name,
            "message": message[:2000],
        }
        with self._ring_lock:
            self._records.append(item)

    def records(self) -> list[dict[str, Any]]:
        """Oldest first."""
        with self._ring_lock:
            return list(self._records)
