"""A technician's change to the journal, recorded in the journal itself.

Setting the journal aside and restoring it from a backup happen with the table controller
stopped, so no running table can journal them. The command does: the first event of the new
file (set aside) or the next event of the restored one is a
:class:`~controller.table.events.JournalChange` naming the account and the file, written
through the table like any event, so its ``event`` message for the center is in the outbox
with it (issue 28 item 4; N.J.A.C. 13:69E-1.39C(b)5). The file is not live until the
command renames it into place: the change and its record arrive together or not at all.
"""

from __future__ import annotations

import os

from controller.errors import JournalError, TableControllerError
from controller.journal.recovery import JournaledTable
from controller.rules.profile import HouseRules
from controller.table.events import JournalChange
from controller.table.settings import TableSettings


def record_change(
    path: str | os.PathLike[str],
    rules: HouseRules,
    settings: TableSettings,
    action: str,
    *,
    by: str,
    detail: str,
    utc_ms: int | None = None,
) -> int:
    """Journal ``JournalChange(action, by, detail)`` in the (not yet live) journal at
    ``path``, replaying it first as a starting table would; return the event's number.
    Raises :class:`JournalError` if this software cannot carry the file on (another game or
    settings, a file it cannot recover): the caller changes nothing then."""
    clock = (lambda: utc_ms) if utc_ms is not None else None
    try:
        with JournaledTable(path, rules, settings, wall_clock=clock) as table:
            step = table.handle(JournalChange(action, by=by, detail=detail))
            if not step.accepted:  # never: a journal change is accepted in any phase
                raise JournalError(f"journal {path}: the table refused the {action} record")
            return table.journal.events_written
    except TableControllerError as exc:
        raise JournalError(
            f"this table cannot carry on from {path} ({exc}); nothing was changed"
        ) from None
