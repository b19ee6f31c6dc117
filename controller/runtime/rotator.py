"""When the running table rotates its journal: at the gaming day's start, on demand, after an
upgrade; always between rounds, on the loop's thread (``docs/journal.md``).

:class:`JournalRotator` is driven by the runtime's loop (:class:`~controller.runtime.loop.
TableRuntime`), which owns the table: :meth:`JournalRotator.tick` at most once a second
(``CHECK_EVERY_MS``) looks whether a rotation is due and, if no round is in progress, carries
it out with :func:`controller.journal.rotation.rotate`. A rotation that fails leaves the live
journal as it was: the table plays on, the error is logged and shown in the status, and the
rotation is tried again ``RETRY_AFTER_MS`` later.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller import build
from controller.errors import JournalError
from controller.journal import JournaledTable, rotation
from controller.journal.file import Journal
from controller.journal.rotation import GamingDay, Rotated

log = logging.getLogger("table-controller")

CHECK_EVERY_MS = 1000
"""How often (table clock, ms) the loop looks whether the journal is due to rotate."""
RETRY_AFTER_MS = 60_000
"""A rotation that failed is tried again this long (ms) after."""
KEEPALIVE_EVERY_S = 5.0
"""While a rotation runs, ``keepalive()`` (the systemd watchdog) is called this often."""
KEEPALIVE_FOR_S = 600.0
"""... but for no longer than this: a rotation that hangs must still trip the watchdog."""


def upgraded_from(journal: Journal) -> str | None:
    """The build id of an earlier run that wrote events to this live file when it
    is not this software's (the newest such; for events journaled before runs were
    recorded, the version that created the file), else None. A rotation removes the earlier
    runs from the live file, so the answer is None again once it has rotated."""
    runs = journal.runs()
    first = journal.first_event()
    found = None
    ours = build.software()  # the build id: another build is an upgrade (or a downgrade)
    created_by = str(journal.meta().get("software") or ours)
    if runs and int(runs[0]["first_event"]) > first and created_by != ours:
        found = created_by  # events from before runs were recorded: the file's creator's
    for run, after in zip(runs, [*runs[1:], None], strict=True):
        if run["boot"] == journal.boot or run["software"] == ours:
            continue
        last = after["first_event"] - 1 if after else journal.events_written
        if last >= max(int(run["first_event"]), first):  # it wrote events this file holds
            found = str(run["software"])
    return found


@dataclass(frozen=True)
class Demand:
    """A rotation asked for (control socket, diagnostics page) while a round was in play."""

    by: str
    round: int


class JournalRotator:
    """Rotates the live journal of ``table`` (see the module docstring). ``gaming_day``:
    when the casino's day starts; ``keep_days``: retention of old files (days);
    ``rotate_on_upgrade``: rotate once after the software version changed; ``utc()``: the
    wall clock, UTC ms since the epoch; ``keepalive()``: called every few seconds while a
    rotation runs (the daemon's systemd watchdog: a first rotation of a large journal
    copies the whole file). Every method but :meth:`status` runs on the loop's thread."""

    def __init__(
        self,
        table: JournaledTable,
        gaming_day: GamingDay,
        *,
        keep_days: int | None,
        rotate_on_upgrade: bool,
        utc: Callable[[], int],
        keepalive: Callable[[], None] | None = None,
    ):
        self.table = table
        self.gaming_day = gaming_day
        self.keep_days = keep_days
        self.utc = utc
        self._keepalive = keepalive
        self.upgrade_from = upgraded_from(table.journal) if rotate_on_upgrade else None
        self.demand: Demand | None = None
        self.error: str | None = None
        self._next_check = 0
        self._retry_at: int | None = None
        self.last: dict[str, Any] | None = None
        origin = table.journal.origin()
        if origin is not None:  # the rotation that started this file, across restarts
            self.last = {
                "utc_ms": origin.utc_ms,
                "local": self._local(origin.utc_ms),
                "archive": origin.previous,
                "reason": origin.reason,
                "by": None,
                "first_event": None,
                "last_event": origin.seq,
                "removed": [],
            }
        self._status: dict[str, Any] = {}
        self._refresh()

    # -- the loop's thread --------------------------------------------------------------

    def tick(self, now: int) -> None:
        """Rotate if due and between rounds; ``now``: the table's clock (ms). At most one
        look per ``CHECK_EVERY_MS``."""
        if now < self._next_check:
            return
        self._next_check = now + CHECK_EVERY_MS
        if self.table.round_in_progress:
            return
        if self._retry_at is not None and now < self._retry_at:
            return
        utc = int(self.utc())
        try:
            day = rotation.due(self.table.journal, self.gaming_day, utc)
        except JournalError as exc:
            self._failed(now, str(exc))
            return
        if day is not None:
            reason = "gaming day"
        elif self.demand is not None:
            reason = "on demand"
        elif self.upgrade_from is not None:
            reason = f"upgrade from {self.upgrade_from} to {build.software()}"
        else:
            if self._status["gaming_day"] is None:  # due() gave a new file its day
                self._status["gaming_day"] = rotation.file_day(self.table.journal)
            return
        by = self.demand.by if self.demand is not None else None
        self._rotate(now, day or self.gaming_day.of(utc).isoformat(), reason, by, utc)

    def ask(self, by: str, now: int) -> dict[str, Any]:
        """A rotation on demand: at once between rounds, else when the round in progress
        is settled. Returns what happened (``rotated``, ``archive``, ``message``, ...)."""
        if self.table.round_in_progress:
            number = self.table.state.round_number
            earlier = self.demand
            self.demand = Demand(by, number)
            self._refresh()
            message = f"deferred: round {number} in progress, rotates when it is settled"
            if earlier is not None:
                message += f" (asked by {earlier.by} too)"
            log.info("journal rotation asked by %s: %s", by, message)
            return {"ok": True, "rotated": False, "deferred": message, "message": message}
        utc = int(self.utc())
        self.demand = Demand(by, self.table.state.round_number)
        done = self._rotate(now, self.gaming_day.of(utc).isoformat(), "on demand", by, utc)
        if done is None:
            self.demand = None  # the answer says so; whoever asked may ask again
            self._refresh()
            return {"ok": False, "error": self.error}
        return {"ok": True, **self._answer(done)}

    def _rotate(self, now: int, day: str, reason: str, by: str | None, utc: int) -> Rotated | None:
        stop = threading.Event()
        if self._keepalive is not None:
            self._keepalive()
            threading.Thread(target=self._keep_alive, args=(stop,), daemon=True).start()
        try:
            done = rotation.rotate(
                self.table, day, reason=reason, keep_days=self.keep_days, utc_ms=utc
            )
        except rotation.RotationDeferred:
            return None  # a round started: looked at again at the next check
        except OSError as exc:  # JournalError is one: the live journal is as it was
            self._failed(now, str(exc))
            return None
        except Exception as exc:  # a bug must not stop the table either
            log.exception("journal rotation failed")
            self._failed(now, f"{type(exc).__name__}: {exc}")
            return None
        finally:
            stop.set()
        self.error = None
        self._retry_at = None
        self.demand = None
        self.upgrade_from = None
        self.last = {
            "utc_ms": utc,
            "local": self._local(utc),
            "archive": done.archive.name if done.archive else None,
            "reason": reason,
            "by": by,
            "first_event": done.first_event,
            "last_event": done.last_event,
            "removed": [p.name for p in done.removed],
        }
        self._refresh()
        log.info("journal rotated (%s%s): %s", reason, f", asked by {by}" if by else "",
                 self._answer(done)["message"])  # fmt: skip
        for path in done.removed:
            log.info("journal retention: removed %s (older than %s days)", path.name,
                     self.keep_days)  # fmt: skip
        return done

    def _keep_alive(self, stop: threading.Event) -> None:
        assert self._keepalive is not None
        waited = 0.0
        while waited < KEEPALIVE_FOR_S and not stop.wait(KEEPALIVE_EVERY_S):
            waited += KEEPALIVE_EVERY_S
            self._keepalive()

    def _failed(self, now: int, detail: str) -> None:
        self.error = detail
        self._retry_at = now + RETRY_AFTER_MS
        log.error(
            "journal rotation failed, the table plays on in the same file and it is tried "
            "again in %d s: %s",
            RETRY_AFTER_MS // 1000,
            detail,
        )
        self._refresh()

    def _answer(self, done: Rotated) -> dict[str, Any]:
        events = max(0, done.last_event - done.first_event + 1)
        if done.archive is None:
            message = (
                f"nothing to archive: the live file holds no event since event "
                f"{done.first_event - 1}; its gaming day is {done.gaming_day}"
            )
        else:
            message = (
                f"events {done.first_event}..{done.last_event} archived as "
                f"{done.archive.name}; the live file carries on from event {done.last_event + 1}"
                f" for gaming day {done.gaming_day}"
            )
        if done.removed:
            message += f"; {len(done.removed)} old file(s) removed by retention"
        return {
            "rotated": done.archive is not None,
            "archive": done.archive.name if done.archive else None,
            "sha256": done.sha256,
            "first_event": done.first_event,
            "last_event": done.last_event,
            "events": events,
            "gaming_day": done.gaming_day,
            "removed": [p.name for p in done.removed],
            "message": message,
        }

    def _local(self, utc_ms: int) -> str:
        return self.gaming_day.local(utc_ms).isoformat(sep=" ", timespec="seconds")

    def _refresh(self) -> None:
        """The status, as of now: read from the file at start-up and after each rotation or
        error (its origin may be large: not at every check)."""
        journal = self.table.journal
        pending = None
        if self.demand is not None:
            pending = f"on demand by {self.demand.by}, when round {self.demand.round} is settled"
        elif self.upgrade_from is not None:
            pending = f"upgrade from {self.upgrade_from}, at the next moment between rounds"
        self._status = {
            "path": str(journal.path),
            "gaming_day": rotation.file_day(journal),
            "first_event": journal.first_event(),
            "archives": len(rotation.archives(journal.path)),
            "keep_days": self.keep_days,
            "last_rotation": self.last,
            "rotation_error": self.error,
            "pending": pending,
        }

    # -- any thread ----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The live file's gaming day, its events (``first_event``..``last_event``; none
        while last < first), the archives kept, the last rotation and any error."""
        out = dict(self._status)
        out["last_event"] = self.table.journal.events_written
        return out
