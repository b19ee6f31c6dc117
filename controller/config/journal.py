"""``[journal]``: the journal's gaming-day files (``docs/journal.md``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import time as time_of_day
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controller.config.base import Section
from controller.journal.rotation import GamingDay

JOURNAL_KEYS = (
    "gaming_day_starts", "timezone", "keep_days", "keep_days_reason", "rotate_on_upgrade"
)  # fmt: skip
#: Records are kept at least a year (N.J.A.C. 13:69E-1.31(b)); below it only with a reason.
KEEP_DAYS_FLOOR = 365


@dataclass(frozen=True, slots=True)
class JournalConfig:
    """The journal's gaming-day files (``docs/journal.md``): ``gaming_day`` says when a
    casino's day starts and in which zone; archives older than ``keep_days`` days are
    removed (never one holding an unacknowledged message), at least :data:`KEEP_DAYS_FLOOR`
    unless ``keep_days_reason`` says why not (a demo or test table); ``rotate_on_upgrade``:
    a new file at the first moment between rounds after the build changed."""

    gaming_day: GamingDay = field(default_factory=GamingDay)
    keep_days: int = 400
    rotate_on_upgrade: bool = True
    keep_days_reason: str = ""

    def describe_floor(self) -> str:
        """For the config's summary: "" at or above the floor, else what and why."""
        if self.keep_days >= KEEP_DAYS_FLOOR:
            return ""
        return (
            f"; journal files kept {self.keep_days} days, below the {KEEP_DAYS_FLOOR}-day floor "
            f"(N.J.A.C. 13:69E-1.31(b)) because: {self.keep_days_reason}"
        )


GAMING_DAY_START = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def read_journal(sec: Section) -> JournalConfig | None:
    starts: time_of_day | None = None
    _, raw = sec._get("gaming_day_starts", "06:00", '"06:00"')
    match = GAMING_DAY_START.match(raw.strip()) if isinstance(raw, str) else None
    if isinstance(raw, time_of_day) and raw.tzinfo is None:  # TOML's own local time, 06:00:00
        starts = raw.replace(second=0, microsecond=0)
    elif match:
        starts = time_of_day(int(match[1]), int(match[2]))
    else:
        sec.error(
            "gaming_day_starts",
            f'must be a local time of day "HH:MM" from "00:00" to "23:59", e.g. '
            f'gaming_day_starts = "06:00"; got {raw!r}',
        )
    zone = sec.text("timezone", "", example='"America/New_York"', empty=True)
    if zone:
        zone = zone.strip()
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            sec.error(
                "timezone",
                f"{zone!r} is not a time zone this system knows: give an IANA name such as "
                '"America/New_York" (`timedatectl list-timezones` lists them), or "" for the '
                "system's zone",
            )
            zone = None
    keep_days = sec.integer("keep_days", 400, 1, 3650, "days")
    reason = (sec.text("keep_days_reason", "", example='"a demo table"', empty=True) or "").strip()
    if keep_days is not None and keep_days < KEEP_DAYS_FLOOR and not reason:
        sec.error(
            "keep_days",
            f"{keep_days} days is below the {KEEP_DAYS_FLOOR} days a table's records are kept "
            f"(N.J.A.C. 13:69E-1.31(b)): set keep_days = {KEEP_DAYS_FLOOR} or more (default "
            f'400); a demo or test table that keeps less says why in keep_days_reason = "..."',
        )
        keep_days = None
    elif keep_days is not None and keep_days >= KEEP_DAYS_FLOOR and reason:
        sec.error(
            "keep_days_reason",
            f"is only for keep_days below {KEEP_DAYS_FLOOR} (it is {keep_days}): remove it",
        )
        reason = ""
    on_upgrade = sec.boolean("rotate_on_upgrade", True)
    sec.check_unknown()
    if starts is None or zone is None or keep_days is None or on_upgrade is None:
        return None
    return JournalConfig(GamingDay(starts, zone or None), keep_days, on_upgrade, reason)
