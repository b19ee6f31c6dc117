"""``[software]``: the table's self-check of its installed files against the signed release
manifest (issue 29 item 4; N.J.A.C. 13:69E-1.28H; controller/selfcheck.py, docs/release.md)."""

from __future__ import annotations

from dataclasses import dataclass

from controller.config.base import Section

SOFTWARE_KEYS = ("verify_every_s",)


@dataclass(frozen=True, slots=True)
class SoftwareConfig:
    """``verify_every_s``: seconds between the checks while running (one runs at start)."""

    verify_every_s: int = 3600


def read_software(sec: Section) -> SoftwareConfig | None:
    every = sec.integer("verify_every_s", 3600, 60, 86_400, "s")
    sec.check_unknown()
    return None if every is None else SoftwareConfig(every)
