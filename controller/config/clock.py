"""``[clock]``: the check that the table's clock is synchronised (issue 28 item 6;
``controller/timesync.py``, docs/runtime.md)."""

from __future__ import annotations

from dataclasses import dataclass

from controller.config.base import Section

CLOCK_KEYS = ("check_every_s", "max_offset_ms", "refuse_progressive")


@dataclass(frozen=True, slots=True)
class ClockConfig:
    """``check_every_s``: how often the time daemon is asked (0: never); ``max_offset_ms``:
    an offset past this is a problem as an unsynchronised clock is; ``refuse_progressive``:
    no progressive wager while the clock is unsynchronised (the jackpot link counts as
    down)."""

    check_every_s: int = 60
    max_offset_ms: int = 1000
    refuse_progressive: bool = True


def read_clock(sec: Section) -> ClockConfig | None:
    every = sec.integer("check_every_s", 60, 0, 3600, "s; 0: never")
    offset = sec.integer("max_offset_ms", 1000, 1, 60_000, "ms")
    refuse = sec.boolean("refuse_progressive", True)
    sec.check_unknown()
    values = (every, offset, refuse)
    return None if None in values else ClockConfig(*values)
