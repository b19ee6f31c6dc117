"""Live streams: ``/api/stream`` (the diagnostics page's bundle) and ``/api/dealer/stream``
(the dealer display's view), as server-sent events (a mixin of
:class:`~controller.web.exchange.Exchange`, and the frame the front sends).

The front (:mod:`.front`) holds the stream within its role's budget; one thread reads the
table for every stream and :func:`frame` turns each view into the bytes sent.
"""

from __future__ import annotations

from typing import Any

from controller.web.auth import Session
from controller.web.front import Stream
from controller.web.replies import headers, json_bytes


def frame(kind: str, view: dict[str, Any]) -> tuple[bytes, bytes]:
    """A stream's ``event: update`` frame, and the key of what must go out at once (ages,
    counters and the clock change every second and go out once a second)."""
    gpio = (view.get("health") or {}).get("gpio") or {}
    key = json_bytes(
        {k: v for k, v in view.items() if k not in ("health", "uptime_s", "now_utc_ms")}
        | {"status": {k: v for k, v in (view.get("status") or {}).items() if k != "t"}}
        | {"lights": gpio.get("lights")}  # the light test is watched live
    )
    return key, b"event: update\ndata: " + json_bytes(view) + b"\n\n"


class StreamRoutes:
    """The live views."""

    def _stream(self, kind: str, session: Session | None) -> None:
        """Server-sent events: ``event: update`` with the whole view whenever it changes
        (the front runs it within the role's budget); ``event: logout`` when the session
        ends."""
        web = self.web
        valid = None
        if session is not None:
            token = session.token
            valid = lambda: web.sessions.get(token, web.clock()) is not None  # noqa: E731
        self.reply = Stream(
            kind,
            [("Server", "table-controller"), *headers("text/event-stream; charset=utf-8")[1:]],
            session,
            valid,
        )
