"""What every route group shares: the reply's headers, JSON bytes, the session cookie.

Pure helpers of :mod:`controller.web.server` and its route groups (:mod:`.exchange` and the
``routes_*`` modules); no state.
"""

from __future__ import annotations

import http.cookies
import json
from http import HTTPStatus
from typing import Any

from controller.web.front import Reply

COOKIE = "tc_session"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def json_bytes(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def headers(content_type: str, extra: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [
        ("Server", "table-controller"),
        ("Content-Type", content_type),
        ("Cache-Control", "no-store"),
        *{**SECURITY_HEADERS, **(extra or {})}.items(),
    ]


def error_reply(status: int, message: str) -> Reply:
    """What the front answers itself (a bad request, a timeout, a full budget)."""
    return Reply(
        status,
        HTTPStatus(status).phrase,
        headers("application/json"),
        json_bytes({"ok": False, "error": message}),
    )


def session_cookie(raw: str | None) -> str | None:
    """The session token of a ``Cookie`` header, if any."""
    if not raw:
        return None
    jar = http.cookies.SimpleCookie()
    try:
        jar.load(raw)
    except http.cookies.CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel else None
