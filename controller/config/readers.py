"""``[shoe]`` and ``[camera]``: the card readers (``drivers/shoe.py``, ``drivers/camera.py``)."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass

from controller.config.base import REQUIRED, Section, is_int

SHOE_KEYS = ("url", "heartbeat_timeout_ms", "reconnect_min_ms", "reconnect_max_ms", "fault_after_s")
CAMERA_KEYS = ("enabled", "source", "forget_after_frames", "fault_after_s")

SERIAL_URL = re.compile(r"^([a-z][a-z0-9]*)://")


@dataclass(frozen=True, slots=True)
class ShoeConfig:
    url: str
    heartbeat_timeout_ms: int = 3000
    reconnect_min_ms: int = 200
    reconnect_max_ms: int = 5000
    fault_after_s: int = 30


@dataclass(frozen=True, slots=True)
class CameraConfig:
    enabled: bool = False
    source: str = "/dev/video0"
    forget_after_frames: int = 5
    fault_after_s: int = 30


def read_shoe(sec: Section) -> ShoeConfig | None:
    url = sec.text("url", REQUIRED, example='"/dev/bj-shoe"')
    if url is not None:
        url = url.strip()
        match = SERIAL_URL.match(url)
        if match:
            scheme = match[1]
            if importlib.util.find_spec(f"serial.urlhandler.protocol_{scheme}") is None:
                sec.error(
                    "url",
                    f"pyserial has no {scheme}:// handler; use a device path (/dev/bj-shoe) or "
                    "socket://, rfc2217://, loop://, spy://, alt://, hwgrep://",
                )
                url = None
        elif not url.startswith("/"):
            sec.error(
                "url",
                f"{url!r} is neither a device path (/dev/bj-shoe, /dev/serial/by-id/...) nor a "
                "pyserial URL (socket://HOST:PORT, rfc2217://..., loop://, spy://...)",
            )
            url = None
    heartbeat = sec.integer("heartbeat_timeout_ms", 3000, 100, 60_000, "ms")
    low = sec.integer("reconnect_min_ms", 200, 10, 60_000, "ms")
    high = sec.integer("reconnect_max_ms", 5000, 10, 600_000, "ms")
    if low is not None and high is not None and high < low:
        sec.error(
            "reconnect_max_ms",
            f"{high} is below reconnect_min_ms {low}: the backoff grows from the minimum to "
            "the maximum",
        )
        high = None
    fault = sec.integer("fault_after_s", 30, 0, 3600, "s; 0: at once")
    sec.check_unknown()
    values = (url, heartbeat, low, high, fault)
    return None if None in values else ShoeConfig(*values)


def read_camera(sec: Section, card_source: str | None) -> CameraConfig | None:
    enabled = sec.boolean("enabled", False)
    index = sec.raw.get("source")
    if is_int(index) and index >= 0:  # a device index may be written as a number
        source: str | None = str(index)
    else:
        source = sec.text("source", "/dev/video0", example='"/dev/video0"')
    frames = sec.integer("forget_after_frames", 5, 1, 1000, "frames")
    fault = sec.integer("fault_after_s", 30, 0, 3600, "s; 0: at once")
    if enabled is not None and card_source is not None:
        uses_camera = card_source in ("camera", "both")
        if uses_camera and not enabled:
            sec.error(
                "enabled",
                f"[table] card_source = {card_source!r} reads cards with the camera: set "
                "enabled = true (and source)",
            )
            enabled = None
        elif enabled and not uses_camera:
            sec.error(
                "enabled",
                "true, but [table] card_source = 'shoe' does not use the camera: set "
                "card_source = 'both' (the camera checks the shoe) or enabled = false",
            )
            enabled = None
    sec.check_unknown()
    values = (enabled, source, frames, fault)
    return None if None in values else CameraConfig(*values)
