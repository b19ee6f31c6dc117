"""The alarm register: every alarm of an accepted step, with an id, until a technician
acknowledges it; one whose cause is over is marked cleared on the way. A part of
:class:`controller.table.machine.Table`."""

from __future__ import annotations

from dataclasses import replace

from controller.errors import ProcedureError
from controller.table import events as ev
from controller.table.effects import Alarm, AlarmCleared, Effect
from controller.table.part import TablePart
from controller.table.state import IN_PROGRESS, OpenAlarm
from controller.table.view import link_alarm_words

_CARD_ALARMS = ("unexpected_card", "foreign_card", "held_card")
"""Alarms of a card that waits for a decision, one per card in ``state.pending``'s order: the
oldest clear as the cards are burned, assigned or taken out of play."""
_ROUND_ALARMS = (
    "shuffle_mid_round",
    "shoe_missed_frames",
    "shoe_out_of_order",
    "reader_disagreement",
)
"""Alarms about the round on the layout: over when it ends (the layout is cleared)."""


MAX_OPEN_ALARMS = 100
"""The alarm register holds at most this many open alarms; beyond it the oldest open one is
dropped unacknowledged (and counted in ``state.alarms_dropped``)."""


class AlarmRegister(TablePart):
    """Alarms registered, cleared by themselves, acknowledged."""

    def _register_alarms(self, effects: tuple[Effect, ...], round_number: int) -> None:
        """Give each alarm of an accepted step an id and keep it open until acknowledged."""
        state = self.state
        for effect in effects:
            if not isinstance(effect, Alarm):
                continue
            state.alarm_seq += 1
            state.alarms[state.alarm_seq] = OpenAlarm(
                state.alarm_seq,
                effect.code,
                effect.text,
                effect.action,
                effect.spot,
                round_number,
                state.now,
                effect.about or "",
            )
            if len(state.alarms) > MAX_OPEN_ALARMS:
                del state.alarms[next(iter(state.alarms))]
                state.alarms_dropped += 1

    def _clear_alarms_whose_cause_is_over(self) -> None:
        """Mark each open alarm whose cause is over as cleared (:class:`AlarmCleared`): the
        dealer display stops showing it; the register keeps it until acknowledged, so every
        acknowledgement a journal holds is accepted on replay as it was."""
        state = self.state
        cards = [a for a in state.alarms.values() if a.code in _CARD_ALARMS and not a.cleared]
        surplus = {a.id for a in cards[: max(0, len(cards) - len(state.pending))]}
        for alarm in list(state.alarms.values()):
            if alarm.cleared:
                continue
            reason = (
                "the card was burned, assigned or taken out of play"
                if alarm.id in surplus
                else self._alarm_over(alarm)
            )
            if reason:
                state.alarms[alarm.id] = replace(alarm, cleared=reason, cleared_t=state.now)
                self._out.append(AlarmCleared(alarm.id, alarm.code, alarm.text, reason))

    def _alarm_over(self, alarm: OpenAlarm) -> str | None:
        """Why ``alarm``'s cause is over, or None while it lasts (or if only a technician
        can tell: link, award and reader alarms)."""
        state, code = self.state, alarm.code
        round_over = state.round_number > alarm.round
        if code in ("late_bet", "side_bet_without_main", "progressive_refused"):
            if round_over:
                return "the round is over"
            if alarm.about and not state.sensors.get((alarm.spot or 0, alarm.about)):
                return "the chips were taken off the circle"
        elif code == "bet_removed":
            if round_over:
                return "the round is over"
            if alarm.about and state.sensors.get((alarm.spot or 0, alarm.about)):
                return "the chips are back on the circle"
        elif code in ("shoe_fault", "shoe_offline"):
            if not state.shoe_fault:
                return "the shoe is back" if code == "shoe_offline" else "the shoe's fault cleared"
        elif code == "shoe_door_open":
            if not state.door_open:
                return "the shoe door is closed"
        elif code == "table_fault":
            latched = alarm.about in state.faults if alarm.about else bool(state.faults)
            if not latched:
                return "the fault was cleared"
        elif code == "fault_still_present":
            if not any(active for _detail, active in state.faults.values()):
                return "the fault is gone"
        elif code == "jackpot_link_down":
            if state.jackpot_link:
                return "the jackpot link is back"
        elif code in _ROUND_ALARMS and round_over:
            return "the round is over"
        return None

    def _on_acknowledge_alarm(self, event: ev.AcknowledgeAlarm) -> None:
        alarms = self.state.alarms
        if event.alarm == 0:
            if not alarms:
                raise ProcedureError(
                    "acknowledge alarm refused: no alarm is open; reload the alarm list"
                )
            alarms.clear()
            return
        if event.alarm not in alarms:
            raise ProcedureError(
                f"acknowledge alarm refused: alarm {event.alarm} is not open: it was "
                "acknowledged already or never raised; reload the alarm list"
            )
        del alarms[event.alarm]

    def _on_link_alarm(self, event: ev.LinkAlarm) -> None:
        code = f"link_{event.kind}"
        if any(alarm.code == code for alarm in self.state.alarms.values()):
            return  # one open alarm per kind: the technician acknowledges it, then the next
        text, action = link_alarm_words(event.kind, event.detail)
        self._alarm(code, text, action)

    def _alarm_light(self) -> None:
        state = self.state
        alarm = bool(state.pending or state.shoe_fault or state.faults) or (
            state.door_open and state.phase in IN_PROGRESS
        )
        self._light("alarm", "blink" if alarm else "off")
