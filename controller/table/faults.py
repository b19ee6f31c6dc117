"""Latched table faults (a driver lost, the journal, the software) and the jackpot link's state.
A part of :class:`controller.table.machine.Table`."""

from __future__ import annotations

from controller.errors import ProcedureError
from controller.table import events as ev
from controller.table.part import TablePart


class Faults(TablePart):
    """Faults latched until cleared, and the jackpot link up or down."""

    def _fault_text(self) -> str:
        return "; ".join(
            f"{kind}: {detail}" if detail else kind
            for kind, (detail, _active) in sorted(self.state.faults.items())
        )

    def _fault_advice(self) -> str:
        present = [k for k, (_d, active) in sorted(self.state.faults.items()) if active]
        if present:
            return f"call a technician to fix the {', '.join(present)} fault first"
        return "the fault is gone: turn the supervisor key to clear it"

    def _on_fault(self, event: ev.TableFault) -> None:
        faults = self.state.faults
        known = faults.get(event.kind)
        if event.active:
            if known == (event.detail, True):
                return
            faults[event.kind] = (event.detail, True)
            if known is None:
                self._alarm(
                    "table_fault",
                    f"Table fault ({event.kind}): {event.detail or 'lost'}",
                    "Finish or void the round in progress; no new round until a technician "
                    "fixes it and the supervisor key clears it",
                    about=event.kind,
                )
        elif known is None:  # a fault already over when reported (a journal write that failed)
            faults[event.kind] = (event.detail, False)
            self._alarm(
                "table_fault",
                f"Table fault ({event.kind}): {event.detail or 'lost'} (now gone)",
                "Check the table; turn the supervisor key to clear the fault",
                about=event.kind,
            )
        elif known[1]:
            faults[event.kind] = (known[0], False)
            self._prompt(
                "fault_gone",
                f"The {event.kind} fault is gone ({known[0] or 'lost'}): " + self._fault_advice(),
            )

    def _on_clear_faults(self, event: ev.ClearFaults) -> None:
        if not self.state.faults:
            raise ProcedureError("clear faults refused: no fault is latched")
        self._clear_faults(event.by or "a technician")

    def _clear_faults(self, by: str) -> None:
        present = [k for k, (_d, active) in sorted(self.state.faults.items()) if active]
        if present:
            if isinstance(self._event, ev.ClearFaults):
                raise ProcedureError(
                    f"clear faults refused: the {', '.join(present)} fault is still present; "
                    "fix it first"
                )
            self._alarm(
                "fault_still_present",
                f"The {', '.join(present)} fault is still present: it cannot be cleared",
                "Call a technician to fix it, then turn the supervisor key again",
            )
            return
        text = self._fault_text()
        self.state.faults.clear()
        self._prompt("faults_cleared", f"Faults cleared by {by} ({text}): the table is open")

    def _on_link(self, event: ev.JackpotLink) -> None:
        if self.state.jackpot_link == event.up:
            return
        self.state.jackpot_link = event.up
        if event.up:
            self._prompt("jackpot_link_up", "Jackpot link back: progressive wagers are open")
        elif event.why == "clock_unsynchronised":
            self._alarm(
                "jackpot_link_down",
                "The table's clock is not synchronised: no progressive wager can be taken",
                "Take no Blazing 7's bets (chips on those circles are returned at no more "
                "bets); call a technician to check the time server (NTP) and the clock",
            )
        elif event.why in ("controller_silent", "controller_offline"):
            self._alarm(
                "jackpot_link_down",
                "The jackpot controller is not answering: no progressive wager can be taken",
                "Take no Blazing 7's bets (chips on those circles are returned at no more "
                "bets); call a technician if it stays down",
            )
        else:
            self._alarm(
                "jackpot_link_down",
                "The jackpot link is down: no progressive wager can be taken",
                "Take no Blazing 7's bets (chips on those circles are returned at no more "
                "bets); call a technician if it stays down",
            )
