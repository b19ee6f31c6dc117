"""``table-controller run --config FILE``: the daemon a table's Pi runs all shift.

:func:`run_table` wires a checked :class:`~controller.config.TableConfig` into a running
table: the journal (recovering whatever a crash left), the jackpot link's publisher, the
shoe, the camera, the GPIO pins and the control socket, all feeding one
:class:`~controller.runtime.loop.TableRuntime` on the main thread. systemd (Type=notify) hears
READY once everything is open, WATCHDOG only while the loop runs and the table is healthy,
and STOPPING on SIGTERM. The journal rotates into gaming-day files (``[journal]``,
:mod:`controller.runtime.rotator`) on the loop's thread, between rounds; a rotation that a
kill interrupted leaves a ``.part`` file, removed at start-up before the journal is opened.
``TABLE_CONTROLLER_TRACE=FILE`` (benchmarks only) appends one JSON
line per journaled event with the monotonic times of its commit and of its effects.
A clean stop: the inputs close first, the events already queued are
journaled, the lights go to their safe state, the link publishes the table's death message
(retained ``status`` offline, ``clean: true``), and the journal closes last.

This module is the daemon's life: the order of its start, its run and its stop. What it opens
is :mod:`controller.runtime.assembly`; what the web pages and the history read of it,
:mod:`controller.runtime.readside`; what the control socket's requests do,
:mod:`controller.runtime.controlops`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from controller.errors import JournalError
from controller.journal import JournaledTable, rotation
from controller.journal.store import fsync_path
from controller.runtime import assembly, controlops
from controller.runtime.assembly import LinkAlarmGate, notify
from controller.runtime.control import ControlServer
from controller.runtime.logring import RecentLog
from controller.runtime.loop import RuntimeClock, TableRuntime
from controller.runtime.readside import TableReads
from controller.table import events as ev

__all__ = ["BY_MAX", "LinkAlarmGate", "TableDaemon", "run_table"]

log = logging.getLogger("table-controller")

BY_MAX = 64
"""Characters in the name of who asked for a journal rotation."""


def _utc_ms() -> int:
    return time.time_ns() // 1_000_000


class TableDaemon(TableReads):
    """Everything a running table holds, opened in order and closed in reverse.

    ``utc()``: the wall clock, UTC ms since the epoch (default the system's), stamped beside
    each journaled event and deciding the gaming day; tests move it on. The loop runs on the
    thread that made the daemon (it owns the journal's connection). What the pages read is
    :class:`~controller.runtime.readside.TableReads`."""

    CLEAN_STOP = assembly.CLEAN_STOP
    """The marker a clean stop leaves in ``data_dir`` (issue 28 item 5)."""

    def __init__(self, config: Any, *, password: str, utc: Callable[[], int] | None = None):
        self.config = config
        self.utc = utc or _utc_ms
        self.parts: list[tuple[str, Callable[[], None]]] = []
        table = JournaledTable(
            config.journal_path,
            config.rules,
            config.settings,
            checkpoint_every=config.checkpoint_every_events,
            wall_clock=self.utc,
        )
        self.table = table
        self.parts.append(("journal", table.close))
        assembly.note_profile(table, config)
        try:  # only now: the journal's lock says no rotation of another process is under way
            for path in rotation.remove_partials(config.journal_path):
                log.warning("removed %s: a journal rotation was interrupted there", path)
        except JournalError as exc:
            log.error("%s", exc)
        # before anything is journaled this run
        self._power_loss = assembly.last_stop(config, table)
        state = table.state
        self.clock = RuntimeClock(state.now)
        self._started_t = self.clock()  # the table's times from here on are this process's
        self.gpio = None
        self.shoe = None
        self.camera = None
        self.publisher = None
        self.control: ControlServer | None = None
        self.started_ms = self.clock()
        self._runtime: TableRuntime | None = None
        self._pending: list[ev.Event] = [self._power_loss] if self._power_loss else []
        self.web = None
        self.audit = assembly.open_audit(config)
        from controller.runtime.clockwatch import ClockWatcher

        self.clock_watch = ClockWatcher(config.clock)  # asked now: this run's record
        self.parts.append(("clock", self.clock_watch.close))
        clock = self.clock_watch.state
        if config.clock.check_every_s:
            table.journal.record_clock(clock.source, clock.synchronised, clock.offset_ms)
        # before any event: the start's result
        self.software = assembly.start_selfcheck(self, table)
        self.history: Any = None
        self.history_problem = "not started"
        self.started_epoch = time.time()
        self.log_ring = RecentLog()
        logging.getLogger().addHandler(self.log_ring)
        self.parts.append(("log ring", lambda: logging.getLogger().removeHandler(self.log_ring)))
        try:
            assembly.open_parts(self, password)
        except BaseException:
            self.close()
            raise

    def _sink(self, event: ev.Event, read_ns: int = 0) -> None:
        runtime = self._runtime
        if runtime is None:
            self._pending.append(event)  # a driver spoke before the runtime existed
        else:
            runtime.submit(event, read_ns=read_ns)

    def _shoe_sink(self, event: ev.Event) -> None:
        """The shoe's sink (on its reader's thread): the event with the read that made it."""
        shoe = self.shoe
        self._sink(event, shoe.read_ns if shoe is not None else 0)

    # -- what the pages and the control socket ask of the table -------------------------

    def submit_wait(self, event: ev.Event) -> Any:
        return self._submit_wait(event)

    def light_test(self, by: str) -> tuple[bool, str]:
        return self.runtime.start_light_test(by)

    def rotate_journal(self, by: str) -> dict[str, Any]:
        """Start a new journal file on demand (the diagnostics page's button, the control
        socket's ``rotate-journal``): at once between rounds, else when the round in
        progress is settled; ``by``: who asked (logged, in the status). Returns ``ok`` and
        either ``rotated`` (bool), ``archive`` (file name or None), ``first_event``,
        ``last_event``, ``events``, ``gaming_day``, ``removed``, ``message``; or ``deferred``
        (a sentence: the round in progress); or ``error``. Any thread but the loop's."""
        by = str(by).strip()
        if not by or len(by) > BY_MAX:
            return {"ok": False, "error": f"say who asks: by must be 1 to {BY_MAX} characters"}
        return self.runtime.rotate_journal(by)

    def handle_request(self, request: dict[str, Any]) -> dict[str, Any]:
        """The control socket's handler (:func:`.controlops.handle_request`)."""
        return controlops.handle_request(self, request)

    def _submit_wait(self, event: ev.Event, timeout: float = 5.0):
        reply: concurrent.futures.Future = concurrent.futures.Future()
        self.runtime.submit(event, reply)
        return reply.result(timeout)

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close every part in reverse order of opening; safe twice."""
        parts, self.parts = self.parts, []
        ordered = dict(reversed(parts))
        # inputs first, then write what they queued, then lights safe, link goodbye, journal
        for name in ("web", "control socket", "shoe", "camera"):
            if name in ordered:
                with contextlib.suppress(Exception):
                    ordered.pop(name)()
        if self._runtime is not None:
            with contextlib.suppress(Exception):
                n = self._runtime.drain()
                if n:
                    log.info("journaled %d queued events before stopping", n)
        clean = "journal" in ordered
        last = getattr(getattr(self.table, "journal", None), "events_written", None)
        for name, close in ordered.items():
            try:
                close()
            except Exception:
                clean = clean and name != "journal"
                log.exception("closing the %s failed", name)
        if clean:  # the next start knows this stop was clean (issue 28 item 5)
            marker = self.config.data_dir / self.CLEAN_STOP
            try:
                with open(marker, "w", encoding="utf-8") as handle:
                    json.dump({"last_event": last, "utc_ms": self.utc()}, handle)
                    handle.flush()
                    os.fsync(handle.fileno())
                fsync_path(marker.parent)
            except OSError:
                log.exception("cannot write %s: the next start will report a power loss", marker)


def run_table(config: Any, *, stop: threading.Event | None = None) -> int:
    """Run the table until SIGTERM/SIGINT (or ``stop``); returns the exit status."""
    from controller.config import check_paths, read_password

    problems = check_paths(config)
    if problems:
        for problem in problems:
            log.error("%s", problem)
        return 2
    password = read_password(config)
    config.data_dir.mkdir(parents=True, exist_ok=True)
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    daemon = TableDaemon(config, password=password)
    try:
        snap = daemon.table.snapshot()
        log.info(
            "table %s running %s: round %s, phase %s; control socket %s",
            config.table_id,
            config.game,
            snap["round"],
            snap["phase"],
            config.control.socket,
        )
        notify("READY=1", f"STATUS=table {config.table_id} round {snap['round']}")
        daemon.runtime.run(stop)
        notify("STOPPING=1")
        log.info("stopping: closing the inputs, the journal and the jackpot link")
    finally:
        daemon.close()
    return 0
