"""The dealer's buttons that end or void a round, the supervisor key, the enclosure, a power loss
and journal changes, and the significant events they make. A part of
:class:`controller.table.machine.Table`."""

from __future__ import annotations

from controller.errors import ProcedureError
from controller.rules.pays import format_cents
from controller.table import events as ev
from controller.table import significant
from controller.table.effects import Settled
from controller.table.events import (
    BetSensor,
    EndRound,
    Misdeal,
    Next,
    SupervisorKey,
    VoidRound,
    WagerAmount,
)
from controller.table.part import TablePart
from controller.table.state import IN_PROGRESS, Phase
from controller.table.view import pool_name, settlement_prompt

CARRIED_KEPT = 4096
"""How many carried bet events end round keeps to share (a spot's bet, and each amount a spot
keyed): then all are forgotten at once and made again as they come."""


class Console(TablePart):
    """Next, end round, void and misdeal, the supervisor key and the table's doors."""

    def _on_next(self, event: Next) -> None:
        phase = self.state.phase
        if phase is Phase.INSURANCE:
            self._close_insurance()
        elif phase is Phase.EZ_BUST:
            self._close_ez_bust()
        elif phase is Phase.PLAYERS:
            self._stand()
        else:
            what = {
                Phase.BETTING: "no round is dealt",
                Phase.DEALING: "the initial deal is in progress",
                Phase.DEALER: "it is the dealer's turn",
                Phase.SETTLED: "the round is settled; press end round",
            }[phase]
            raise ProcedureError(f"nothing to stand or close now: {what}")

    def _on_end_round(self, event: EndRound) -> None:
        state = self.state
        if state.phase is not Phase.SETTLED:
            if state.phase is Phase.BETTING:
                raise ProcedureError("end round refused: no round has been dealt")
            raise ProcedureError(
                "end round refused: the round is not settled; play it out, or void it with "
                "the supervisor key"
            )
        self._lights_off()
        rnd = self.state.round
        discarded = len(rnd.dealer)
        for spot in rnd.spots.values():
            for hand in spot.hands:
                discarded += len(hand.cards)
        state.discarded += discarded
        state.round = None
        state.round_number += 1
        state.phase = Phase.BETTING
        state.log = []
        state.round_effects = []
        # The same bets are carried round after round: each event is made once per table
        # and shared (events are immutable values).
        made = self._carried_made
        carried: list[ev.Event] = []
        # Sorted by key alone: the items' order (the keys are unique), without comparing
        # each key inside an item's tuple
        sensors, amounts = state.sensors, state.amounts
        for key in sorted(sensors):
            if sensors[key]:
                event = made.get(key)
                if event is None:
                    if len(made) >= CARRIED_KEPT:
                        made.clear()
                    event = made[key] = BetSensor(key[0], key[1], True)
                carried.append(event)
        for spot, circle in sorted(amounts):
            amount = amounts[(spot, circle)]
            key = (spot, circle, amount)
            event = made.get(key)
            if event is None:
                if len(made) >= CARRIED_KEPT:  # bounded, as every memo
                    made.clear()
                event = made[key] = WagerAmount(spot, circle, amount)
            carried.append(event)
        if state.supervisor_key:
            carried.append(SupervisorKey(True))
        state.carried = carried
        if state.shuffle_pending:
            self._shuffled("shuffle")
        if state.cut_card_out:
            self._prompt("shuffle_now", "The cut card is out: shuffle before the next round")
        self._prompt("place_bets", f"Place your bets: round {state.round_number}")

    def _on_void(self, event: VoidRound | Misdeal) -> None:
        state = self.state
        what = "misdeal" if isinstance(event, Misdeal) else "void round"
        if not state.supervisor_key:
            raise ProcedureError(f"{what} refused: turn the supervisor key first")
        if state.phase not in IN_PROGRESS:
            if state.pending:
                cards = " ".join(map(str, state.pending))
                state.discarded += len(state.pending)
                state.pending.clear()
                state.pending_foreign.clear()
                state.pending_held.clear()
                self._prompt("burn", f"Misdeal: take {cards} out of play")
                return
            raise ProcedureError(f"{what} refused: no round is in progress")
        rnd = self.state.round
        rnd.void = "misdeal" if isinstance(event, Misdeal) else (event.reason or "voided")
        state.discarded += len(state.pending)
        state.pending.clear()
        state.pending_foreign.clear()
        state.pending_held.clear()
        rnd.hole_revealed = True
        self._prompt("void", f"Round {rnd.number} void ({rnd.void}): every open wager is returned")
        for spot in rnd.spots.values():
            for index, hand in enumerate(spot.hands):
                if not hand.settled:
                    hand.settled = True
                    for name, stake in (
                        ("main", hand.wager),
                        ("double_down", hand.double_down),
                        ("double_up", hand.double_up),
                    ):
                        if stake:
                            self._void_line(spot.number, name, stake, index)
            if spot.insurance and not spot.insurance_settled:
                spot.insurance_settled = True
                self._void_line(spot.number, "insurance", spot.insurance)
            for name, stake in spot.wagers.items():
                if name != "main" and name not in spot.side_settled:
                    spot.side_settled.add(name)
                    self._void_line(spot.number, name, stake)
            if spot.ez_bust:
                self._void_line(spot.number, "ez_bust", spot.ez_bust)
        self._finish_round()

    def _void_line(self, spot: int, wager: str, stake: int, hand: int | None = None) -> None:

        line = Settled(
            spot, wager, stake, "void", 0, stake, f"round void: {self.state.round.void}", hand
        )
        self._out.append(line)
        self._prompt("pay", settlement_prompt(line), spot)

    def _on_enclosure(self, event: ev.EnclosureDoor) -> None:
        """GLI-11's logic door: opened while a round is in progress is an alarm; otherwise a
        prompt, and the event itself is the journal's record (issue 28 item 5)."""
        state = self.state
        if event.at_start:
            self._prompt(
                "enclosure_at_start", f"Enclosure {'open' if event.open else 'shut'} at start"
            )
        elif event.open and state.phase in IN_PROGRESS:
            self._alarm(
                "enclosure_open",
                f"The table's enclosure was opened during round {state.round_number}",
                "Call a supervisor: note who opened it and why; the round goes on",
            )
        else:
            self._prompt("enclosure_door", f"Enclosure {'opened' if event.open else 'shut'}")

    def _on_power_loss(self, event: ev.PowerLoss) -> None:
        when = f" at {event.last_utc}" if event.last_utc else ""
        self._alarm(
            "power_loss",
            f"The table did not stop cleanly (power loss?): its last event was "
            f"{event.last_event}{when}",
            "Check the round in progress, if any, against the layout; call a technician if "
            "the power keeps failing",
        )

    def _on_journal_change(self, event: ev.JournalChange) -> None:
        what = "set aside" if event.action == "set_aside" else "restored from a backup"
        by = f" by {event.by}" if event.by else ""
        self._prompt("journal_change", f"The journal was {what}{by}: {event.detail or '-'}")

    def _significant(self, event: ev.Event, before: significant.Before) -> None:
        """Each significant event of an accepted step, as one sequenced ``event`` message for
        the center (controller/table/significant.py; issue 28 item 4)."""
        state = self.state
        for code, fields in significant.events_of(event, before, state, self._out):
            state.event_seq += 1
            self._out.append(
                significant.message(
                    state.event_seq, code, fields, state.round_number, state.phase in IN_PROGRESS
                )
            )

    def _on_key(self, event: SupervisorKey) -> None:
        if self.state.supervisor_key != event.on:
            self.state.supervisor_key = event.on
            self._prompt("supervisor_key", f"Supervisor key {'on' if event.on else 'off'}")
            if event.on and self.state.faults:
                self._clear_faults("the supervisor key")
            if event.on and self.state.awards:  # which award the jackpot_paid button confirms
                award = next(iter(self.state.awards.values()))
                more = len(self.state.awards) - 1
                self._prompt(
                    "jackpot_paid_ready",
                    f"JACKPOT PAID confirms award {award.award_id}: spot {award.spot} "
                    f"{pool_name(award.pool)} {format_cents(award.amount)} hand pay"
                    + (f" ({more} more waiting after it)" if more else ""),
                    award.spot,
                )
