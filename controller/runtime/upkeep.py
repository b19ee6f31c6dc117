"""The journal's upkeep in the table loop: rotation into gaming-day files, the WAL's
checkpoint between rounds, and a journal that cannot be written (latched in memory until a
``TableFault`` records it). :class:`JournalUpkeep` is the part of
:class:`~controller.runtime.loop.TableRuntime` that does it (its attributes are the
runtime's: ``table``, ``clock``, ``journal_fault``, ``dropped``, ``_rotator``, ``_feed``,
``_feed_lock``; its methods ``call``, ``_carry_out``, ``_update_safe_state`` and
``_publish_status``)."""

from __future__ import annotations

import logging
from typing import Any

from controller.errors import JournalError
from controller.table import events as ev

log = logging.getLogger("table-controller")


class JournalUpkeep:
    """Journal rotation, the WAL's checkpoint and journal faults, for the table loop."""

    ROTATE_TIMEOUT_S = 600.0
    """How long :meth:`rotate_journal` waits for the loop (a first rotation of a large
    journal copies the whole file)."""

    def rotate_journal(self, by: str) -> dict[str, Any]:
        """Rotate the journal on demand (``by``: who asked): at once between rounds, else
        when the round in progress is settled. Returns what happened: ``ok``, ``rotated``,
        ``archive``, ``events``, ``message``, or ``deferred``, or ``error``. Any thread but
        the loop's."""
        if self._rotator is None:
            return {"ok": False, "error": "this table runs without journal rotation"}
        try:
            return self.call(lambda: self._ask_rotation(by), self.ROTATE_TIMEOUT_S)
        except TimeoutError:
            return {
                "ok": False,
                "error": f"the table loop did not answer within {self.ROTATE_TIMEOUT_S:g} s; "
                "a rotation may still be running: see the status' journal entry",
            }

    def _checkpoint_wal(self) -> None:
        """The journal's WAL into its file, between rounds (:meth:`Journal.checkpoint_wal`).
        A failure is logged, not latched: every event is on disk in the WAL already, and
        SQLite checkpoints by itself once the WAL is long."""
        try:
            log_pages, copied = self.table.journal.checkpoint_wal()
        except JournalError as exc:
            self.table.journal.wal_events = 0  # tried again after as many events
            log.warning("%s (the events are on disk in the WAL; the table plays on)", exc)
            return
        log.debug("journal WAL checkpoint: %d of %d pages copied", copied, log_pages)

    def _ask_rotation(self, by: str) -> dict[str, Any]:
        assert self._rotator is not None
        if self.journal_fault is not None:
            return {
                "ok": False,
                "error": f"journal rotation refused: the journal cannot be written "
                f"({self.journal_fault}); fix that first",
            }
        before = self._rotator.error
        answer = self._rotator.ask(by, self.clock())
        self._rotation_warning(before)
        self._publish_status()
        return answer

    def _rotation_warning(self, before: str | None) -> None:
        """A new rotation error goes to the feed once, for the technician (the table plays
        on: the live journal is as it was)."""
        assert self._rotator is not None
        error = self._rotator.error
        if error is None or error == before:
            return
        with self._feed_lock:
            self._feed.append(
                {
                    "kind": "alarm",
                    "t": self.clock(),
                    "code": "journal_rotation",
                    "text": f"The journal could not start a new file: {error}",
                    "action": "Play on; call a technician to check the journal's disk "
                    "(it is tried again every minute)",
                    "spot": None,
                }
            )

    def _journal_failed(self, detail: str) -> None:
        first = self.journal_fault is None
        self.journal_fault = detail
        if first:
            log.critical("journal write failed, table latched: %s", detail)
            with self._feed_lock:
                self._feed.append(
                    {
                        "kind": "alarm",
                        "t": self.clock(),
                        "code": "journal_fault",
                        "text": f"The journal cannot be written: {detail}",
                        "action": "Stop the game and call a technician",
                        "spot": None,
                    }
                )
        self._update_safe_state()
        self._publish_status()

    def _retry_journal(self, now: int) -> None:
        detail = self.journal_fault or ""
        try:
            step = self.table.handle(ev.TableFault("journal", detail[:200], active=False, t=now))
        except JournalError as exc:
            self.journal_fault = str(exc)
            return
        log.warning("journal writable again; %d events were dropped meanwhile", self.dropped)
        self.journal_fault = None
        self._carry_out(ev.TableFault("journal", detail, active=False, t=now), step)
        self._update_safe_state()
