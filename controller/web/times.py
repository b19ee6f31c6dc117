"""Times of day for the pages: the zone they are shown in, and the table's clock turned into
wall-clock times (issue 30: one date and time format, in the property's zone, named).

The table's events carry its monotonic clock (``t``, ms; :class:`~controller.runtime.loop.
RuntimeClock`), not the time of day. For what happened in this process the wall clock is
the table's clock plus one offset; for what happened before the last restart (an alarm
still open after it) the journal has the wall-clock time of the event that raised it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

log = logging.getLogger("table-controller.web")

RESYNC_MS = 1000
"""The offset between the table's clock and the wall clock is kept while the two agree to
this (ms): the times shown do not wobble by a millisecond from one update to the next."""


def _known(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def system_zone() -> str:
    """The system's time zone as an IANA name (``TZ``, ``/etc/localtime``,
    ``/etc/timezone``), the zone a config without ``[journal] timezone`` shows; ``UTC``
    (logged) when none can be named."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and _known(tz):
        return tz
    with contextlib.suppress(OSError):
        link = os.readlink("/etc/localtime")
        if "zoneinfo/" in link:
            name = link.split("zoneinfo/", 1)[1]
            if _known(name):
                return name
    with contextlib.suppress(OSError):
        name = Path("/etc/timezone").read_text(encoding="utf-8").strip()
        if name and _known(name):
            return name
    log.warning("web: the system's time zone has no IANA name; the pages show UTC")
    return "UTC"


class TableTimes:
    """The table's clock (ms) -> UTC ms since the epoch, from a source's ``times()``
    (``t``, ``utc_ms`` now and ``since_t``: the table's clock when the process started) and,
    for earlier times, the live journal file ``journal_path`` (read-only)."""

    def __init__(self, journal_path: Path | None):
        self.journal_path = journal_path
        self._offset: int | None = None
        self._since_t: int | None = None
        self._earlier: dict[int, int | None] = {}

    def now(self, times: dict[str, int]) -> int:
        """Take the source's reading; returns the wall clock now (UTC ms)."""
        offset = int(times["utc_ms"]) - int(times["t"])
        if self._offset is None or abs(offset - self._offset) > RESYNC_MS:
            self._offset = offset
        self._since_t = int(times["since_t"])
        return int(times["utc_ms"])

    def utc(self, t: int | None) -> int | None:
        """The wall-clock time of the table's ``t``; None when not known (no reading yet,
        or before this process and not in the live journal)."""
        if t is None or self._offset is None or self._since_t is None:
            return None
        if t >= self._since_t:
            return t + self._offset
        if t not in self._earlier:
            if len(self._earlier) > 1000:
                self._earlier.clear()
            self._earlier[t] = self._journal_utc(t)
        return self._earlier[t]

    def _journal_utc(self, t: int) -> int | None:
        """The ``utc_ms`` of the last journaled event at or before ``t`` (events' ``t``
        only grow with their ``seq``): a binary search, a few reads."""
        path = self.journal_path
        if path is None or not Path(path).is_file():
            return None
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
        except sqlite3.Error:
            return None
        try:
            low, high = db.execute("SELECT MIN(seq), MAX(seq) FROM events").fetchone()
            found: int | None = None
            while low is not None and high is not None and low <= high:
                mid = (low + high) // 2
                row = db.execute(
                    "SELECT seq, event, utc_ms FROM events WHERE seq >= ? ORDER BY seq LIMIT 1",
                    (mid,),
                ).fetchone()
                if row is None:
                    break
                seq, event, utc_ms = row
                event_t = _event_t(event)
                if event_t is not None and event_t <= t:
                    found = utc_ms if utc_ms is not None else found
                    low = seq + 1
                else:
                    high = mid - 1
            return found
        except sqlite3.Error as exc:
            log.warning("web: cannot read the journal for a time of day: %s", exc)
            return None
        finally:
            db.close()


def _event_t(text: str) -> int | None:
    try:
        value: Any = json.loads(text).get("t")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None
