"""What is wrong with the table now, in words: ``/healthz`` and the diagnostics page's
summary line read the same list (issue 30).

A problem is anything that stops the game or means the table cannot be trusted to run as it
should: the loop not ticking, the journal not writable, a driver thread stopped, the clock,
the shoe offline or faulted, the jackpot link down, a fault present or latched, and every
*blocking* alarm still active (:data:`BLOCKING_ALARMS`: the ones whose action is to stop the
game until someone acts). An alarm whose cause has ended (``active`` false) is no problem,
whatever its code; an open alarm that only asks the dealer to do something and play on
(return a late bet, check a card) is not one either, and the page lists it apart.

:func:`table_problems` is pure (the runtime status in, problems out); the daemon adds what
only it can see (:meth:`~controller.runtime.readside.TableReads.problems`, the daemon's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.table.events import LINK_WHY

BLOCKING_ALARMS = frozenset(
    {
        "shoe_offline",  # deal no card until it is back online
        "shoe_fault",  # stop dealing from the shoe
        "table_fault",  # no new round until the fault is fixed and cleared
        "fault_still_present",
        "jackpot_link_down",  # no progressive wager can be taken
        "bet_removed",  # chips lifted after no more bets: stop the game
        "unexpected_card",  # a card waits for the dealer's decision
        "held_card",
        "foreign_card",
        "shoe_door_open",  # during a round
    }
)
"""Alarm codes that stop the game while active (the dealer display's headline says stop for
the same situations: shoe offline or fault, chips lifted after no more bets, a card waiting
for a decision, the link down, a fault latched)."""

_SAID_ELSEWHERE = frozenset({"shoe_offline", "shoe_fault", "table_fault", "jackpot_link_down"})
"""Blocking alarms whose problem is stated from the table's state (the shoe, the faults, the
link) rather than repeated as an alarm."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong now: ``text`` in words (what it is and what to do), ``kind`` (``loop``,
    ``journal``, ``threads``, ``clock``, ``shoe``, ``link``, ``fault``, ``alarm``) and
    ``since_t``: the table's clock (ms) when it began, when known."""

    text: str
    kind: str
    since_t: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "since_t": self.since_t}


def _active(alarms: list[dict[str, Any]], *codes: str) -> list[dict[str, Any]]:
    return [a for a in alarms if a.get("active", True) and a.get("code") in codes]


def table_problems(
    status: dict[str, Any], link_why: str | None = None, link_down_since: int | None = None
) -> list[Problem]:
    """The problems the runtime status shows (the snapshot's shoe, alarms and faults, the
    link, the journal), oldest first where known.

    >>> status = {"jackpot_link": True, "faults": {}, "journal_fault": None, "snapshot": {
    ...     "shoe": {"fault": "offline"}, "alarms": [
    ...     {"id": 4, "code": "shoe_offline", "t": 900, "active": True,
    ...      "text": "The shoe is offline (no message for 3001 ms)",
    ...      "action": "Deal no card until it is back online"},
    ...     {"id": 5, "code": "late_bet", "text": "Late bet", "action": "Return it", "t": 950,
    ...      "active": True},
    ...     {"id": 6, "code": "bet_removed", "text": "Chips taken from spot 3 main wager",
    ...      "action": "Stop the game", "t": 990, "active": True}]}}
    >>> for p in table_problems(status):
    ...     print(p.kind, p.since_t, p.text)
    shoe 900 The shoe is offline (no message for 3001 ms): deal no card until it is back online
    alarm 990 Chips taken from spot 3 main wager: stop the game
    """
    snap = status.get("snapshot") or {}
    alarms = snap.get("alarms") or []
    out: list[Problem] = []
    if status.get("journal_fault"):
        out.append(Problem(f"journal not writable: {status['journal_fault']}", "journal"))
    shoe_fault = (snap.get("shoe") or {}).get("fault")
    if shoe_fault:
        code = "shoe_offline" if shoe_fault == "offline" else "shoe_fault"
        said = _active(alarms, code)
        if said:
            alarm = said[-1]
            text = f"{alarm['text']}: {_lower(alarm.get('action') or '')}".rstrip(": ")
            out.append(Problem(text, "shoe", alarm.get("t")))
        elif code == "shoe_offline":
            out.append(Problem("The shoe is offline: deal no card until it is back", "shoe"))
        else:
            out.append(Problem(f"The shoe reports a fault ({shoe_fault})", "shoe"))
    if status.get("jackpot_link") is False:  # issue 28: a frozen controller answered 200
        words = LINK_WHY.get(link_why or "", "the jackpot link is down")
        out.append(
            Problem(
                f"jackpot link down: {words}; progressive wagers refused", "link", link_down_since
            )
        )
    for kind, fault in (status.get("faults") or {}).items():
        raised = [a for a in _active(alarms, "table_fault") if a.get("about") in (kind, None)]
        since = raised[0].get("t") if raised else None
        detail = fault.get("detail") or ("present" if fault.get("active") else "lost")
        if fault.get("active"):
            out.append(Problem(f"{kind} fault: {detail}", "fault", since))
        else:
            out.append(
                Problem(
                    f"{kind} fault latched: {detail} (gone now; turn the supervisor key to "
                    "clear it)",
                    "fault",
                    since,
                )
            )
    for alarm in alarms:
        code = alarm.get("code")
        if code in BLOCKING_ALARMS and code not in _SAID_ELSEWHERE and alarm.get("active", True):
            if code == "fault_still_present" and status.get("faults"):
                continue  # the fault itself is said above
            action = _lower(alarm.get("action") or "")
            out.append(Problem(f"{alarm['text']}: {action}".rstrip(": "), "alarm", alarm.get("t")))
    return out


def _lower(text: str) -> str:
    """An action sentence after a colon: its first letter in lower case."""
    return text[:1].lower() + text[1:]


def problem_texts(problems: list[Problem]) -> list[str]:
    """``/healthz``'s ``problems``: the texts."""
    return [p.text for p in problems]
