"""What the shoe reports besides cards: shuffles, the cut card, its door, faults and going
offline. A part of :class:`controller.table.machine.Table`."""

from __future__ import annotations

from controller.table.events import ShoeEvent
from controller.table.part import TablePart
from controller.table.state import IN_PROGRESS, Phase


class ShoeReports(TablePart):
    """The shoe's own events."""

    def _on_shoe(self, event: ShoeEvent) -> None:
        state = self.state
        kind = event.event
        detail = f" ({event.detail})" if event.detail else ""
        if kind in ("shuffle", "new_shoe"):
            if state.phase is Phase.SETTLED:
                # the round's cards are still on the layout: count afresh once they are cleared
                state.shuffle_pending = True
                self._prompt("shuffle_noted", "Shuffle noted: the count restarts at end round")
                return
            if state.phase in IN_PROGRESS:
                state.shuffle_pending = True
                self._alarm(
                    "shuffle_mid_round",
                    f"The shoe reports a {kind.replace('_', ' ')} during round "
                    f"{state.round_number}{detail}",
                    "Finish the round; the card count restarts after it",
                )
                return
            self._shuffled(kind)
        elif kind == "cut_card":
            if not state.cut_card_out:
                state.cut_card_out = True
                if state.phase in IN_PROGRESS:
                    self._prompt("cut_card", "Cut card out: finish this round, then shuffle")
                else:
                    self._prompt(
                        "shuffle_now", "The cut card is out: shuffle before the next round"
                    )
        elif kind == "door_open":
            state.door_open = True
            if state.phase in IN_PROGRESS:
                self._alarm(
                    "shoe_door_open",
                    f"The shoe door opened during round {state.round_number}",
                    "Close the shoe door; call the supervisor if cards were touched",
                )
        elif kind == "door_closed":
            state.door_open = False
        elif kind == "fault":
            state.shoe_fault = event.detail or "fault"
            self._alarm(
                "shoe_fault",
                f"The shoe reports a fault{detail}",
                "Stop dealing from the shoe and call a technician",
            )
        elif kind == "fault_cleared" and state.shoe_fault:
            state.shoe_fault = ""
            self._prompt("shoe_ok", "Shoe fault cleared")
        elif kind == "offline" and not state.shoe_fault:
            state.shoe_fault = "offline"
            self._alarm(
                "shoe_offline",
                f"The shoe is offline{detail}",
                "Check the shoe's cable and power; deal no card until it is back online",
            )
        elif kind == "online" and state.shoe_fault == "offline":
            state.shoe_fault = ""
            self._prompt("shoe_ok", "Shoe back online")
        elif kind == "out_of_order":
            self._alarm(
                "shoe_out_of_order",
                f"The shoe sent a message out of order{detail}: it was ignored",
                "Check the shoe (door, fault, shuffle) and the layout against the display; "
                "call a technician if it repeats",
            )
        elif kind == "missed_frames":
            self._alarm(
                "shoe_missed_frames",
                f"The shoe skipped messages{detail}: a card may not have been read",
                "Check every card on the layout against the display; burn, assign or call a "
                "misdeal if one is missing",
            )

    def _shuffled(self, kind: str) -> None:
        state = self.state
        # a card still waiting for a decision stays counted as dealt (it is out of the shoe),
        # but not against the new shoe's copies: the dealer shuffles it back in or burns it
        state.seen = {}
        state.dealt = len(state.pending)
        state.discarded = 0
        state.unconfirmed = []
        state.camera_ahead = []
        state.cut_card_out = False
        state.shuffle_pending = False
        what = "New shoe" if kind == "new_shoe" else "Shoe shuffled"
        if self.rules.shoe.burn_after_shuffle:
            state.burn_expected = 1
            self._prompt("shuffled", f"{what}: burn one card")
        else:
            state.burn_expected = 0
            self._prompt("shuffled", what)
