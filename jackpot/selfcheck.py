"""The jackpot controller's software self-check (issue 29 item 4; N.J.A.C. 13:69E-1.28H and
9 NYCRR 5321.18(b)(3)(iv): the progressive controller authenticates its software before it
operates; controller/selfcheck.py runs the check, docs/release.md says what it covers).

At start (:func:`refusal`): a failure is kept in the ledger (meta ``software_check`` and an
open ``software`` alarm) and the controller does not operate: ``jackpot-controller run``
exits 2 with one line naming the files, before any broker or message. Running
(:class:`SoftwareAlarm`, on the service's thread, which owns the ledger): every result goes
into the meta with its UTC time; a failure raises the ``software`` alarm (a repeat while it is
open counts); the controller goes on (the tables' money must still be recorded), the alarm
says a technician is needed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from controller.selfcheck import META_KEY, Check, SelfCheck

log = logging.getLogger("jackpot-controller")

KIND = "software"


def record(ledger: Any, check: Check) -> None:
    """The result in the ledger's meta ``software_check`` (JSON, with its UTC time)."""
    ledger.set_meta(META_KEY, json.dumps(check.as_dict(), sort_keys=True))


def refusal(selfcheck: SelfCheck, ledger_path: Any, open_ledger: Callable[[], Any]) -> str | None:
    """The start's result kept; the one-line reason not to operate, or None to go on."""
    check = selfcheck.first
    with open_ledger() as ledger:
        record(ledger, check)
    if not check.failed:
        return None
    from jackpot.alarms import AlarmLog

    alarms = AlarmLog(ledger_path)
    try:
        alarms.raise_alarm(KIND, None, None, check.text())
    finally:
        alarms.close()
    return (
        f"{check.text()}; not operating (N.J.A.C. 13:69E-1.28H: the controller authenticates "
        "its software before it operates): install the release bundle again; "
        "'jackpot-controller verify' lists every file"
    )


class SoftwareAlarm:
    """Each new result of ``selfcheck`` into the ledger, and an alarm for a failure: call
    :meth:`pump` on the service's thread with its ledger and its ``_alarm``."""

    def __init__(self, selfcheck: SelfCheck) -> None:
        self.selfcheck = selfcheck
        self.selfcheck.take()  # the start's result: kept by refusal()

    def pump(self, ledger: Any, alarm: Callable[[str, Any, Any, str], None]) -> None:
        for check in self.selfcheck.take():
            try:
                record(ledger, check)
            except Exception:  # the alarm below still says it; the money goes on
                log.exception("software self-check: cannot keep the result in the ledger")
            if check.failed:
                alarm(KIND, None, None, check.text())

    def health(self) -> dict[str, Any]:
        return self.selfcheck.health()
