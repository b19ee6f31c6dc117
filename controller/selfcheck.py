"""The daemons' self-check: the installed files against the signed release manifest
(:func:`controller.verify.verify`) at start and every ``every_s`` while running (issue 29
item 4; N.J.A.C. 13:69E-1.28B(d) and 1.28H: self-authentication at power-up and
periodically, a failure tilts the game; 9 NYCRR 5321.18(b)(3)(iv): the progressive
controller authenticates its software before it operates; docs/release.md, "Self-check").

:class:`SelfCheck` runs the check on a thread of its own (hashing a venv takes seconds on a
Pi), never on the table's loop or the jackpot service's thread; those take each new
:class:`Check` with :meth:`SelfCheck.take` and act on it (a ``software`` fault, an alarm, the
journal's or the ledger's meta ``software_check``). ``tick(now)`` holds the schedule, so a
test drives it with its own clock and verify function, without sleeping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.verify import UNVERIFIED, Result

#: Each service logs under its own name (a jackpot controller's lines are ``jackpot.*``).
LOGGERS = {"table": "table-controller.selfcheck", "jackpot": "jackpot.selfcheck"}

#: The meta key (journal and ledger) holding the latest result.
META_KEY = "software_check"
#: Default seconds between checks while running; the range a config may give.
EVERY_S = 3600
EVERY_RANGE = (60, 86_400)
#: Files named in a fault's or an alarm's text; the rest are counted (``verify`` lists all).
NAMED = 3


def utc_text(utc_ms: int) -> str:
    """``2024-05-01T12:00:00Z``.

    >>> utc_text(0)
    '1970-01-01T00:00:00Z'
    """
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(utc_ms // 1000))


@dataclass(frozen=True)
class Check:
    """One result: ``state`` ``ok``, ``failed`` or ``unverified`` (no manifest: a
    development checkout), the build id, each file that does not check, and when."""

    state: str
    build: str | None
    problems: tuple[str, ...]
    files: int
    utc_ms: int

    @classmethod
    def of(cls, result: Result, utc_ms: int) -> Check:
        state = "ok" if result.build is not None else "unverified"
        if result.problems:
            state = "failed"
        return cls(state, result.build, tuple(result.problems), result.files, utc_ms)

    @property
    def failed(self) -> bool:
        return self.state == "failed"

    def text(self) -> str:
        """One line for a fault, an alarm or a log: the files, the first few named."""
        if self.state == "ok":
            return f"ok: build {self.build}: {self.files} files check"
        if self.state == "unverified":
            return f"{UNVERIFIED}: no signed release manifest (a development checkout)"
        named = list(self.problems[:NAMED])
        more = len(self.problems) - len(named)
        if more:
            named.append(f"{more} more (the verify command lists every one)")
        return "the installed software is not the signed build: " + "; ".join(named)

    def as_dict(self) -> dict[str, Any]:
        """The meta value and what the pages read."""
        return {
            "result": self.state,
            "build": self.build,
            "problems": list(self.problems),
            "files": self.files,
            "utc_ms": self.utc_ms,
            "utc": utc_text(self.utc_ms),
            "text": self.text(),
        }


class SelfCheck:
    """Checks ``role``'s installed files now (:attr:`first`, the start's result), then every
    ``every_s`` on its thread once :meth:`start` is called. ``verify``: a function returning
    a :class:`~controller.verify.Result`; ``monotonic`` schedules, ``utc_ms`` stamps."""

    def __init__(
        self,
        role: str,
        every_s: float = EVERY_S,
        *,
        verify: Callable[[], Result] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        utc_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        if verify is None:
            from controller import verify as verifying

            def verify() -> Result:
                return verifying.verify(role)

        self.role, self.every_s = role, every_s
        self.log = logging.getLogger(LOGGERS.get(role, "table-controller.selfcheck"))
        self._verify, self._monotonic, self._utc_ms = verify, monotonic, utc_ms
        self._lock = threading.Lock()
        self._new: list[Check] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.latest: Check
        self._due = 0.0
        self.first = self.check()

    def check(self) -> Check:
        """Run the check now (the caller's thread) and queue its result for :meth:`take`."""
        try:
            result = self._verify()
        except Exception as exc:  # a check that cannot run is a failure, named
            self.log.exception("software self-check: the check failed")
            result = Result(None, [f"the check could not run: {exc}"])
        found = Check.of(result, self._utc_ms())
        before = getattr(self, "latest", None)
        if found.failed:
            self.log.error("software self-check FAILED: %s", "; ".join(found.problems))
        elif before is None or before.state != found.state:
            self.log.info("software self-check: %s", found.text())
        with self._lock:
            self.latest = found
            self._new.append(found)
        self._due = self._monotonic() + self.every_s
        return found

    def tick(self, now: float) -> Check | None:
        """The check if it is due at ``now`` (monotonic seconds), else None."""
        return self.check() if now >= self._due else None

    def take(self) -> list[Check]:
        """The results not taken yet, oldest first (the owner's thread journals them)."""
        with self._lock:
            new, self._new = self._new, []
        return new

    def start(self) -> SelfCheck:
        self._thread = threading.Thread(target=self._run, name="selfcheck", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(max(1.0, min(60.0, self._due - self._monotonic()))):
            try:
                self.tick(self._monotonic())
            except Exception:  # pragma: no cover - check() catches the verify's errors
                self.log.exception("software self-check: the thread's pass failed")

    def health(self) -> dict[str, Any]:
        return {**self.latest.as_dict(), "every_s": self.every_s}

    def alive(self) -> bool:
        return self._thread is None or self._thread.is_alive()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(5.0)
