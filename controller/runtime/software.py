"""The table's side of the software self-check (issue 29 item 4; N.J.A.C. 13:69E-1.28B(d)
and 1.28H; controller/selfcheck.py runs the check on its own thread).

:class:`SoftwareWatch` turns each result into what the table does and keeps, on the loop's
thread (it owns the journal's connection): a failure is a ``software``
:class:`~controller.table.events.TableFault` naming the files (latched: no new round until a
later check passes and the supervisor key or a technician clears it), journaled as every
event is; a pass after a failure says the condition is gone. Every result, ok (with the
build id), unverified or failed, is also kept in the journal's meta ``software_check`` with
its UTC time and ``since_utc``, the time of the first of a run of the same results.
"""

from __future__ import annotations

import logging

from controller.errors import JournalError
from controller.selfcheck import META_KEY, Check, SelfCheck, utc_text
from controller.table import events as ev

log = logging.getLogger("table-controller.selfcheck")

KIND = "software"


class SoftwareWatch:
    """A watch of the table's loop (``watch(t) -> events``); ``journal``: the table's
    :class:`~controller.journal.Journal`; ``latched``: the fault as the journal left it."""

    def __init__(self, selfcheck: SelfCheck, journal, *, latched: bool) -> None:
        self.selfcheck = selfcheck
        self.journal = journal
        self.latched = latched
        self._since: tuple[str, tuple[str, ...], str | None, int] | None = None
        try:  # a run of the same results goes on across a restart
            before = journal.meta().get(META_KEY)
            if isinstance(before, dict) and isinstance(before.get("since_ms"), int):
                same = (before.get("result"), tuple(before.get("problems") or ()))
                self._since = (*same, before.get("build"), before["since_ms"])
        except JournalError:
            pass

    def __call__(self, t: int | None) -> list[ev.Event]:
        out: list[ev.Event] = []
        for check in self.selfcheck.take():
            self._keep(check)
            if check.failed:
                self.latched = True
                out.append(ev.TableFault(KIND, check.text(), True, t=t))
            elif self.latched:
                self.latched = False
                out.append(ev.TableFault(KIND, check.text(), False, t=t))
        return out

    def _keep(self, check: Check) -> None:
        same = (check.state, check.problems, check.build)
        if self._since is None or self._since[:3] != same:
            self._since = (*same, check.utc_ms)
        since = self._since[3]
        value = {**check.as_dict(), "since_ms": since, "since_utc": utc_text(since)}
        try:
            self.journal.set_meta(META_KEY, value)
        except JournalError as exc:  # the fault (if any) is still journaled as an event
            log.error("software self-check: %s", exc)
