"""Central time: the controller's UTC clock and each property's gaming day.

Every row the ledger writes carries the controller's own UTC time (ms since the epoch, read
from the controller's clock when the message was received or the command was run: never a
table's ``sent_t``) and the gaming day it falls in. A gaming day is the property's: its time
zone and the local time its gaming day starts (``[gaming_day]`` in the jackpot config, for
the controller's own rows and every property, and ``time_zone`` / ``gaming_day_start`` in a
``[properties.ID]`` section to differ). A moment before the start belongs to the day before:
with a 06:00 start, 05:59 local on 2 March is gaming day 1 March.

Pure: time is passed in, never read here.

>>> rule = GamingDay("America/New_York", "06:00")
>>> rule.day_of(1_772_438_340_000)  # 2026-03-02 07:59 UTC = 02:59 in New York
'2026-03-01'
>>> rule.day_of(1_772_456_400_000)  # 2026-03-02 13:00 UTC = 08:00 in New York
'2026-03-02'
>>> utc_text(1_772_456_400_000)
'2026-03-02T13:00:00.000Z'
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_START = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: What the reports say for a row written before schema 3 (which kept no time).
UNTIMED = "untimed"


class GamingDayError(ValueError):
    """A time zone, start or day that is not one."""


@dataclass(frozen=True)
class GamingDay:
    """A property's gaming day: ``time_zone`` (IANA, ``America/New_York``) and ``start``
    (``HH:MM`` local time the gaming day begins)."""

    time_zone: str = "UTC"
    start: str = "00:00"

    def __post_init__(self) -> None:
        if not isinstance(self.time_zone, str) or not self.time_zone:
            raise GamingDayError(f"{self.time_zone!r} is not a time zone like America/New_York")
        try:
            ZoneInfo(self.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise GamingDayError(
                f"{self.time_zone!r} is not a time zone of the IANA database (like "
                "America/New_York)"
            ) from None
        if not isinstance(self.start, str) or not _START.match(self.start):
            raise GamingDayError(f"{self.start!r} is not a start time like '06:00' (24 h)")

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)

    def local(self, utc_ms: int) -> dt.datetime:
        """The moment in the property's local time."""
        return dt.datetime.fromtimestamp(utc_ms / 1000, dt.UTC).astimezone(self.zone)

    def day_of(self, utc_ms: int) -> str:
        """The gaming day (``YYYY-MM-DD``) the moment belongs to."""
        hours, minutes = (int(x) for x in self.start.split(":"))
        local = self.local(utc_ms)
        day = local.date()
        if (local.hour, local.minute) < (hours, minutes):
            day -= dt.timedelta(days=1)
        return day.isoformat()

    def close_ms(self, day: str) -> int:
        """The UTC ms at which gaming day ``day`` ends (the next day's start)."""
        hours, minutes = (int(x) for x in self.start.split(":"))
        date = parse_day(day) + dt.timedelta(days=1)
        local = dt.datetime(date.year, date.month, date.day, hours, minutes, tzinfo=self.zone)
        return int(local.timestamp() * 1000)

    def text(self) -> str:
        """As the ledger's terms hold it: ``America/New_York 06:00``."""
        return f"{self.time_zone} {self.start}"


def parse_day(text: Any) -> dt.date:
    """``YYYY-MM-DD`` -> a date; :class:`GamingDayError` naming the text otherwise."""
    if not isinstance(text, str) or not _DAY.match(text):
        raise GamingDayError(f"{text!r} is not a day like 2026-03-01 (YYYY-MM-DD)")
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise GamingDayError(f"{text!r} is not a day of the calendar") from None


def days_between(first: str, last: str) -> list[str]:
    """Every day from ``first`` to ``last``, both included."""
    start, end = parse_day(first), parse_day(last)
    return [(start + dt.timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]


def utc_text(utc_ms: int | None) -> str:
    """ISO 8601 UTC with milliseconds (``2026-03-02T13:00:00.000Z``); '' for no time."""
    if utc_ms is None:
        return ""
    moment = dt.datetime.fromtimestamp(utc_ms / 1000, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc_ms % 1000:03d}Z"


def read_gaming_day(raw: Any, zone_key: str, start_key: str, where: Any, default: GamingDay):
    """The rule in a config section ``raw`` (keys ``zone_key``, ``start_key``), each falling
    back to ``default``'s; ``where.error(key, problem)`` makes the config error."""
    zone = raw.get(zone_key, default.time_zone)
    start = raw.get(start_key, default.start)
    try:
        GamingDay(zone, default.start)
    except GamingDayError as exc:
        raise where.error(zone_key, str(exc)) from None
    try:
        return GamingDay(zone, start)
    except GamingDayError as exc:
        raise where.error(start_key, str(exc)) from None
