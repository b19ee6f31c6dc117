"""The last log records, kept in memory for the diagnostics page's "recent log".

Warnings and errors are kept apart from the rest (mostly the dealer's prompts, a few a
second in play), so a warning is still there when the technician arrives after hundreds of
prompts (issue 30).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from typing import Any

RECENT_LOG = 200
"""Records below WARNING kept (the journal and the system log keep everything)."""
RECENT_WARNINGS = 500
"""Warnings, errors and criticals kept, apart from the others."""
LEVELS = {
    "all": (0, None),
    "info": (0, logging.WARNING),
    "warning": (logging.WARNING, None),
    "error": (logging.ERROR, None),
}
"""What :meth:`RecentLog.records` may pick: ``level`` -> (lowest level, below this level)."""


class RecentLog(logging.Handler):
    """A logging handler that keeps the last ``size`` records at ``level`` or above, and
    apart from them the last ``warnings`` records at WARNING or above.

    >>> ring = RecentLog(size=2, warnings=2)
    >>> demo = logging.getLogger("recent-log-doctest")
    >>> demo.addHandler(ring); demo.setLevel(logging.INFO); demo.propagate = False
    >>> demo.warning("shoe offline")
    >>> for n in range(3):
    ...     demo.info("round %d settled", n)
    >>> [r["message"] for r in ring.records()]
    ['shoe offline', 'round 1 settled', 'round 2 settled']
    >>> [r["message"] for r in ring.records("warning")], ring.kept()
    (['shoe offline'], {'info': 2, 'warning': 1})
    >>> demo.removeHandler(ring)
    """

    def __init__(
        self, size: int = RECENT_LOG, level: int = logging.INFO, warnings: int = RECENT_WARNINGS
    ):
        super().__init__(level)
        self._records: deque[dict[str, Any]] = deque(maxlen=size)
        self._warnings: deque[dict[str, Any]] = deque(maxlen=warnings)
        self._seq = itertools.count(1)
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
            item["seq"] = next(self._seq)
            if record.levelno >= logging.WARNING:
                self._warnings.append(item)
            else:
                self._records.append(item)

    def records(self, level: str = "all") -> list[dict[str, Any]]:
        """Oldest first: every record kept (``all``), those below WARNING (``info``), or
        those at WARNING or ERROR and above (``warning``, ``error``)."""
        low, below = LEVELS[level]
        with self._ring_lock:
            items = [*self._warnings, *self._records] if below is None else list(self._records)
        items.sort(key=lambda r: r["seq"])
        return [r for r in items if logging.getLevelName(r["level"]) >= low]

    def kept(self) -> dict[str, int]:
        """How many records of each kind are kept now."""
        with self._ring_lock:
            return {"info": len(self._records), "warning": len(self._warnings)}
