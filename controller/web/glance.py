"""What the diagnostics page leads with (issue 30): the summary line's problems and the
alarms with their times of day, added to the bundle the page is sent.

Pure functions of the source's readings; the runtime's status is never changed in place
(it is the copy every page and the control socket share).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.runtime.health import BLOCKING_ALARMS

Utc = Callable[[int | None], int | None]
"""The table's clock (ms) -> UTC ms, or None when not known (:class:`.times.TableTimes`)."""


def timed_status(status: dict[str, Any], utc: Utc) -> dict[str, Any]:
    """``status`` with each open alarm's ``utc_ms`` (raised) and ``cleared_utc_ms``, and
    ``blocking`` (it stops the game while active: :data:`~controller.runtime.health.
    BLOCKING_ALARMS`).

    >>> status = {"snapshot": {"alarms": [{"id": 1, "code": "late_bet", "t": 5000,
    ...     "cleared_t": None, "active": True}]}}
    >>> timed_status(status, lambda t: None if t is None else 1_000_000 + t)["snapshot"]
    {'alarms': [{'id': 1, 'code': 'late_bet', 't': 5000, 'cleared_t': None, 'active': True, \
'utc_ms': 1005000, 'cleared_utc_ms': None, 'blocking': False}]}
    >>> status["snapshot"]["alarms"][0].get("utc_ms") is None  # the original is untouched
    True
    """
    snap = status.get("snapshot")
    if not isinstance(snap, dict) or not snap.get("alarms"):
        return status
    alarms = [
        {
            **alarm,
            "utc_ms": utc(alarm.get("t")),
            "cleared_utc_ms": utc(alarm.get("cleared_t")),
            "blocking": alarm.get("code") in BLOCKING_ALARMS,
        }
        for alarm in snap["alarms"]
    ]
    return {**status, "snapshot": {**snap, "alarms": alarms}}


def summary(problems: list[dict[str, Any]], utc: Utc) -> dict[str, Any]:
    """The summary line's facts: ``ok`` (the same answer as ``/healthz``) and each
    problem's ``text``, ``kind`` and ``since_utc_ms`` (when it began, if known).

    >>> summary([{"text": "The shoe is offline", "kind": "shoe", "since_t": 10}], lambda t: t)
    {'ok': False, 'problems': [{'text': 'The shoe is offline', 'kind': 'shoe', \
'since_utc_ms': 10}]}
    """
    return {
        "ok": not problems,
        "problems": [
            {"text": p["text"], "kind": p.get("kind") or "", "since_utc_ms": utc(p.get("since_t"))}
            for p in problems
        ],
    }
