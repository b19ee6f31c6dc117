"""Fault latching and the jackpot link at the table (issue 6).

A fault the runtime reports (``TableFault``) latches: the alarm light blinks, no new round
starts, and only the supervisor key (or a technician's ``ClearFaults``) clears it, and only
once the condition is gone. While the jackpot link is down (``JackpotLink(False)``) the
table takes no progressive wager: chips on a Blazing 7's circle are not latched at no more
bets, no contribution is published, and the dealer is told to return them.
"""

from __future__ import annotations

import copy

from controller.games import load_game
from controller.rules.cards import parse_card
from controller.table import events as ev
from controller.table.effects import Alarm, Prompt, Publish, Refused
from controller.table.machine import Table
from controller.table.settings import TableSettings


def table() -> Table:
    return Table(load_game("pa-standard"), TableSettings(spots=3))


def codes(step, kind=Alarm) -> list[str]:
    return [e.code for e in step.effects if isinstance(e, kind)]


def bet(t: Table, spot: int, circle: str, amount: int | None = None) -> None:
    assert t.handle(ev.BetSensor(spot, circle, True)).accepted
    if amount is not None:
        assert t.handle(ev.WagerAmount(spot, circle, amount)).accepted


def test_fault_latches_refuses_a_new_round_and_blinks_the_alarm_light():
    t = table()
    step = t.handle(ev.TableFault("shoe", "offline for 30 s"))
    assert step.accepted and codes(step) == ["table_fault"]
    assert t.state.lights["alarm"] == "blink"
    bet(t, 1, "main")
    before = copy.deepcopy(t.state)
    before.log, before.round_effects = [], []  # a refusal is logged for recall, nothing else
    refused = t.handle(ev.Lockout())
    assert not refused.accepted
    (why,) = [e.reason for e in refused.effects if isinstance(e, Refused)]
    assert "table is faulted (shoe: offline for 30 s)" in why
    assert "call a technician to fix the shoe fault first" in why
    after = copy.deepcopy(t.state)
    after.log, after.round_effects = [], []
    assert after == before
    assert t.snapshot()["faults"] == {"shoe": {"detail": "offline for 30 s", "active": True}}


def test_supervisor_key_does_not_clear_a_fault_still_present():
    t = table()
    t.handle(ev.TableFault("link", "down 300 s"))
    step = t.handle(ev.SupervisorKey(True))
    assert codes(step) == ["fault_still_present"]
    assert t.state.faults == {"link": ("down 300 s", True)}
    refused = t.handle(ev.ClearFaults())
    assert not refused.accepted and "still present" in refused.effects[0].reason


def test_fault_gone_then_supervisor_key_clears_and_the_table_opens():
    t = table()
    t.handle(ev.TableFault("shoe", "offline"))
    gone = t.handle(ev.TableFault("shoe", active=False))
    assert codes(gone, Prompt) == ["fault_gone"]
    assert t.state.faults == {"shoe": ("offline", False)}
    bet(t, 1, "main")
    assert not t.handle(ev.Lockout()).accepted  # the latch holds after the condition is gone
    cleared = t.handle(ev.SupervisorKey(True))
    assert "faults_cleared" in codes(cleared, Prompt)
    assert t.state.faults == {}
    assert t.state.lights.get("alarm", "off") == "off"
    assert t.handle(ev.Lockout()).accepted


def test_technician_clear_and_refusal_when_nothing_latched():
    t = table()
    assert not t.handle(ev.ClearFaults()).accepted
    t.handle(ev.TableFault("journal", "disk full", active=False))
    step = t.handle(ev.ClearFaults("tech 42"))
    assert step.accepted
    (text,) = [e.text for e in step.effects if isinstance(e, Prompt)]
    assert "Faults cleared by tech 42 (journal: disk full)" in text


def test_repeated_fault_report_is_a_no_op_but_a_new_kind_alarms():
    t = table()
    t.handle(ev.TableFault("shoe", "offline"))
    again = t.handle(ev.TableFault("shoe", "offline"))
    assert again.accepted and again.effects == ()
    other = t.handle(ev.TableFault("camera", "no frames"))
    assert codes(other) == ["table_fault"]


def test_a_round_in_progress_finishes_during_a_fault():
    t = table()
    bet(t, 1, "main")
    assert t.handle(ev.Lockout()).accepted
    t.handle(ev.TableFault("link", "down"))
    for card in ("10H", "6C", "9S", "8D"):  # spot, dealer up, spot, hole
        assert t.handle(ev.CardDrawn(parse_card(card))).accepted
    assert t.handle(ev.Next()).accepted  # spot 1 stands on 19; dealer shows 14 and draws
    assert t.handle(ev.CardDrawn(parse_card("10C"))).accepted  # dealer busts
    assert t.state.phase.value == "settled"


def test_link_down_refuses_progressive_wagers_only():
    t = table()
    step = t.handle(ev.JackpotLink(False))
    assert codes(step) == ["jackpot_link_down"]
    assert t.snapshot()["jackpot_link"] is False
    bet(t, 1, "main", 2500)
    bet(t, 1, "blazing_7s")
    bet(t, 1, "lucky_ladies", 500)
    bet(t, 2, "main", 1000)
    lock = t.handle(ev.Lockout())
    assert lock.accepted
    assert not [e for e in lock.effects if isinstance(e, Publish)]  # no contribution
    assert codes(lock) == ["progressive_refused"]
    (alarm,) = [e for e in lock.effects if isinstance(e, Alarm)]
    assert alarm.spot == 1 and "Blazing 7's" in alarm.text and "Return the chips" in alarm.action
    assert t.state.lights["spot1.blazing_7s"] == "blink"
    wagers = t.state.round.spots[1].wagers
    assert wagers == {"main": 2500, "lucky_ladies": 500}


def test_link_up_again_takes_progressive_wagers():
    t = table()
    t.handle(ev.JackpotLink(False))
    back = t.handle(ev.JackpotLink(True))
    assert codes(back, Prompt) == ["jackpot_link_up"]
    assert t.handle(ev.JackpotLink(True)).effects == ()  # no change, no noise
    bet(t, 1, "main", 2500)
    bet(t, 1, "blazing_7s")
    lock = t.handle(ev.Lockout())
    (contribution,) = [e for e in lock.effects if isinstance(e, Publish)]
    assert contribution.payload["wager"] == "blazing_7s"
