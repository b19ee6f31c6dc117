"""The last settled round on the dealer display again (issue 30 item 1): the console's
``recall_last`` button, and the settlement held for a while after end round.

Display only. A press is no table event: the table never sees it and nothing is journaled
(the round is in the journal already; game recall on ``/diag`` reads it there). The runtime
(:class:`~controller.runtime.loop.TableRuntime`) takes :class:`RecallLast` off its queue
before the table, keeps a :class:`SettledRound` memory of the round while it is settled, and
puts two keys in its status, which the pure dealer view reads
(:func:`controller.web.felt.recall_view`):

- ``last_settled``: ``round``, ``snapshot`` (the table's public snapshot while the round
  was settled: the hole card is face up by then), ``settlements`` (its settled wagers, feed
  items) and ``t`` (when it was settled, runtime clock ms); None until a round settles in
  this run (after a restart the journal's recall on ``/diag`` has it);
- ``recall``: ``round``, ``until`` (runtime clock ms), ``why`` (``button`` or ``end_round``),
  or a ``notice`` (with its own ``until``) saying why a press shows nothing; None otherwise.

A press between rounds shows the last settled round for ``show_ms``; a second press while it
shows puts the live table back at once. A press during a round (dealt, played or settled)
shows nothing: the felt is the live table's, and says so for a moment. With ``hold_ms`` the
settlement also stays on the screen that long after end round. The next round's no more
bets ends either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from controller.table.events import Event

NOTICE_MS = 5000
"""How long the display says why a press shows nothing."""
SNAPSHOT_KEPT = ("round", "phase", "table", "spots", "dealer", "bet_amounts", "in_progress")
"""What of a settled round's snapshot the dealer display needs to show it again."""


@dataclass(frozen=True, slots=True)
class RecallLast(Event):
    """The console's ``recall_last`` button was pressed (``[gpio.console] recall_last``). For
    the runtime, never the table (not in :data:`controller.table.events.EVENT_TYPES`, not in
    event scripts, not journaled)."""

    TYPE: ClassVar[str] = "recall_last"
    t: int | None = None


class SettledRound:
    """What the dealer display may show again; see the module docstring. Owned by the
    runtime's loop thread (no lock: the status it builds is a copy)."""

    def __init__(self, show_ms: int = 30_000, hold_ms: int = 0):
        self.show_ms = show_ms
        self.hold_ms = hold_ms
        self.last: dict[str, Any] | None = None
        self.recall: dict[str, Any] | None = None
        self.presses = 0

    def seen(self, snapshot: dict[str, Any], settlements: list[dict[str, Any]], now: int) -> None:
        """The table's snapshot after each step: while a round is settled it is the round to
        show again (its time is when it was first seen settled)."""
        phase = snapshot.get("phase")
        if phase == "settled":
            number = snapshot.get("round")
            t = self.last["t"] if self.last and self.last["round"] == number else now
            kept = {k: snapshot.get(k) for k in SNAPSHOT_KEPT}
            kept["alarms"] = [  # the settlement's "Returned Blazing 7's" lines need these
                a
                for a in snapshot.get("alarms") or []
                if a.get("code") == "progressive_refused" and a.get("round") == number
            ]
            self.last = {
                "round": number,
                "snapshot": kept,
                "settlements": [s for s in settlements if s.get("round") == number],
                "t": t,
            }
        if snapshot.get("in_progress") and self.recall is not None and self.recall.get("round"):
            self.recall = None  # no more bets: the live table again

    def press(self, now: int, snapshot: dict[str, Any]) -> str:
        """A press of ``recall_last``; returns what it did (for the log)."""
        self.presses += 1
        shown = self.recall is not None and self.recall.get("round") and now < self.recall["until"]
        if shown:
            self.recall = None
            return "recall_last: the live table again"
        if snapshot.get("in_progress") or snapshot.get("phase") == "settled":
            return self._notice(now, "Recall shows the last round between rounds only")
        if self.last is None:
            return self._notice(
                now,
                "No round was settled since the table started: game recall on the "
                "diagnostics page has every round",
            )
        self.recall = {"round": self.last["round"], "until": now + self.show_ms, "why": "button"}
        return f"recall_last: round {self.last['round']} shown for {self.show_ms // 1000} s"

    def _notice(self, now: int, text: str) -> str:
        self.recall = {"notice": text, "until": now + NOTICE_MS}
        return f"recall_last: {text}"

    def ended(self, now: int) -> None:
        """End round was accepted: hold the settlement ``hold_ms`` if configured."""
        if self.hold_ms > 0 and self.last is not None:
            self.recall = {
                "round": self.last["round"],
                "until": now + self.hold_ms,
                "why": "end_round",
            }

    def status(self, now: int) -> dict[str, Any]:
        recall = self.recall
        if recall is not None and now >= recall["until"]:
            recall = self.recall = None
        return {"last_settled": self.last, "recall": recall}
