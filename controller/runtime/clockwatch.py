"""The table's clock, asked at start and every ``[clock] check_every_s`` (issue 28 item 6).

A thread of its own runs the time daemon's programs (``controller/timesync.py``) so the table's
loop never waits for them; the loop reads :attr:`ClockWatcher.problem` on each tick (the link
watch: a table whose clock is unsynchronised takes no progressive wager) and the pages read
:meth:`ClockWatcher.health`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from controller.config.clock import ClockConfig
from controller.timesync import ClockState, judge, read_clock

log = logging.getLogger("table-controller.clock")


class ClockWatcher:
    """Asks once now (the run's record), then every ``config.check_every_s`` (0: never)."""

    def __init__(self, config: ClockConfig, read: Callable[[], ClockState] = read_clock):
        self.config = config
        self._read = read
        self._stop = threading.Event()
        self.state = ClockState(None, "not checked")
        self.problem: str | None = None
        self.checked_utc: float | None = None
        if config.check_every_s:
            self.check()
        self._thread = threading.Thread(target=self._run, name="clock", daemon=True)
        if config.check_every_s:
            self._thread.start()

    def check(self) -> None:
        state = self._read()
        problem = judge(state, self.config.max_offset_ms)
        if problem != self.problem:
            if problem:
                log.warning("clock: %s", problem)
            elif self.problem:
                log.info("clock synchronised again (%s)", state.source)
            elif state.synchronised is None:
                log.warning("clock: cannot tell whether it is synchronised: %s", state.source)
        self.state, self.problem, self.checked_utc = state, problem, time.time()

    def _run(self) -> None:
        while not self._stop.wait(self.config.check_every_s):
            try:
                self.check()
            except Exception:  # the table plays on; the log says why the check stopped
                log.exception("clock: the check failed")

    def health(self) -> dict[str, object]:
        return {
            **self.state.as_dict(),
            "problem": self.problem,
            "checked_utc": self.checked_utc,
            "refuse_progressive": self.config.refuse_progressive,
        }

    def alive(self) -> bool:
        return not self.config.check_every_s or self._thread.is_alive()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2 * 5.0 + 1)
