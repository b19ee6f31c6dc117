"""The jackpot service's counts, alarms and clock (a mixin of
:class:`~jackpot.service.JackpotService`, on its thread): counts for ``health()``, an alarm
for every refused message (the log, limited per kind and source, the alarm log in the ledger,
``health()``), the machine clock's check (issue 28 item 6). docs/jackpot/controller.md
("Alarms")."""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger("jackpot.service")  # one logger for the whole service


class AlarmsMixin:
    """The jackpot service's counts, alarms and clock: the methods of
    :class:`~jackpot.service.JackpotService` on this concern."""

    def _count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self._counts[what] += n

    def _message(self, kind: str | None, outcome: str) -> None:
        with self._lock:
            self._messages[(kind or "unknown", outcome)] += 1

    def _alarm(self, kind: str, table: str | None, seq: Any, detail: str) -> None:
        """A refused message a technician must see: logged, kept for health(), counted."""
        detail = detail.replace("\n", "\\n").replace("\r", "\\r")  # one log line, always
        entry = {"kind": kind, "table": table, "seq": seq, "detail": detail, "t": self._ms()}
        if self._may_log(f"ALARM {kind}", table):
            log.warning("ALARM %s from %s seq %s: %s", kind, table or "?", seq, detail)
        open_alarms = self._open_alarms
        if self._alarm_log is not None:
            try:
                opened = self._alarm_log.opened
                self._alarm_log.raise_alarm(kind, table, seq, detail)
                if self._alarm_log.opened != opened:  # a repeat leaves the count as it was
                    open_alarms = self._alarm_log.open_count()
            except Exception:  # the refusal stands whatever the alarm log does; the log says why
                log.exception("could not write the alarm to the alarm log")
        with self._lock:
            self._alarms.append(entry)
            self._alarm_counts[kind] += 1
            self._open_alarms = open_alarms

    def _check_clock(self) -> None:
        from controller.timesync import judge, read_clock

        state = read_clock()
        self._clock_state = state
        self._clock_problem = judge(state, self.max_clock_offset_ms)

    def _watch_clock(self) -> None:
        while not self._stop.wait(self.clock_check_s):
            try:
                self._check_clock()
            except Exception:
                log.exception("clock: the check failed")

    def _clock_alarm(self) -> None:
        """On the service's thread: an unsynchronised clock (or one off past the limit) is
        an alarm once each time it starts (issue 28 item 6)."""
        problem = self._clock_problem
        if problem != self._clock_alarmed:
            if problem:
                self._alarm("clock_unsynchronised", None, None, problem)
            elif self._clock_alarmed:
                log.info("clock synchronised again (%s)", self._clock_state.source)
            self._clock_alarmed = problem

    def _may_log(self, what: str, table: str | None) -> bool:
        """Whether a log line about ``what`` from ``table`` may be written now (issue 26:
        one line per forged message); the lines held back are counted by
        :meth:`_log_held`. A table id not in the config is the sender's choice: all of them
        are one source, so a flood under made-up ids is a few lines too."""
        self._log_held()  # a window that ended says so before the next line
        source = table if table in self.config.tables else None
        return self._log_limit.allow((what, source))

    def _log_held(self, *, stopping: bool = False) -> None:
        """One line for each window that held log lines back (when it ends, or at the stop)."""
        for (what, source), held, seconds in self._log_limit.ended(all_windows=stopping):
            counted = " (each one counted in the alarm log: jackpot-controller alarms)"
            log.warning(
                "%s: ... and %d more like it from %s in the last %.0f s%s", what, held,
                source or "tables not in the config", seconds,
                counted if what.startswith("ALARM") else "",
            )  # fmt: skip

    def _flush_alarms(self) -> None:
        """Write counted repeats of open alarms when due; refresh the open count (a
        technician may acknowledge them from another process)."""
        self._log_held()
        alarm_log = self._alarm_log
        if time.monotonic() - alarm_log._flushed < alarm_log.flush_s:
            return
        try:
            alarm_log.flush()
            open_alarms = alarm_log.open_count()
        except Exception:  # an alarm log that fails must not stop the money
            log.exception("could not write the alarm log")
            return
        with self._lock:
            self._open_alarms = open_alarms
