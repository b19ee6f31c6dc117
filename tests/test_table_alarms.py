"""The alarm register: the open alarms the diagnostics page lists, and their acknowledgement.

Every alarm the table raises (a card nobody expected, a late bet, a latched fault ...) stays
open in ``TableState.alarms`` with an id until a technician acknowledges it with
``acknowledge_alarm`` (``alarm`` 0: every open alarm), naming who in ``by``. The register is
journaled state: it is rebuilt from the events, so a restart gives back the same open alarms.
"""

from __future__ import annotations

import copy
import json

import pytest

from controller.errors import EventError, ProcedureError
from controller.games import load_game
from controller.journal import Journal, JournaledTable
from controller.rules.cards import parse_card
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Alarm, Record, Step
from controller.table.machine import MAX_OPEN_ALARMS
from controller.table.script import parse_script, replay, round_script
from controller.table.state import Phase

SETTINGS = TableSettings(spots=3)
NOT_OPEN = (
    "acknowledge alarm refused: alarm 7 is not open: it was acknowledged already or never "
    "raised; reload the alarm list"
)


def table() -> Table:
    return Table(load_game("pa-standard"), SETTINGS)


def alarms(step: Step) -> list[Alarm]:
    return [e for e in step.effects if isinstance(e, Alarm)]


def ids(t: Table | JournaledTable) -> list[int]:
    return [a["id"] for a in t.snapshot()["alarms"]]


def card(text: str, t: int | None = None) -> ev.CardDrawn:
    return ev.CardDrawn(parse_card(text), t=t)


def faults(t: Table, *kinds: str) -> None:
    """One ``table_fault`` alarm per kind."""
    for kind in kinds:
        assert [a.code for a in alarms(t.handle(ev.TableFault(kind, "lost")))] == ["table_fault"]


# -- what is registered --------------------------------------------------------------------


def test_alarms_of_the_procedure_appear_in_the_snapshot_with_ids():
    t = table()
    assert t.snapshot()["alarms"] == [] and t.snapshot()["alarms_dropped"] == 0
    raised: list[tuple[Alarm, int, int]] = []  # (alarm, round, t)
    assert t.handle(ev.BetSensor(1, "main", True, t=100)).accepted
    assert t.handle(ev.Lockout(t=200)).accepted
    (late,) = alarms(t.handle(ev.BetSensor(2, "main", True, t=300)))  # after no more bets
    raised.append((late, 1, 300))
    for event in (ev.SupervisorKey(True), ev.VoidRound("test"), ev.EndRound()):
        assert t.handle(event).accepted
    assert t.state.round_number == 2
    t.handle(ev.Tick(t=800))  # a tick that changes nothing still moves the clock
    (unexpected,) = alarms(t.handle(card("QH")))  # a card while bets are placed
    raised.append((unexpected, 2, 800))
    (fault,) = alarms(t.handle(ev.TableFault("shoe", "offline for 30 s", t=900)))
    raised.append((fault, 2, 900))
    assert [a.code for a, _r, _t in raised] == ["late_bet", "unexpected_card", "table_fault"]
    assert late.spot == 2
    snap = t.snapshot()
    assert snap["alarms"] == [
        {
            "id": n,
            "code": a.code,
            "text": a.text,
            "action": a.action,
            "spot": a.spot,
            "round": round_number,
            "t": when,
            "about": a.about,
            "active": n != 1,  # the late bet's round is over: it cleared by itself
            "cleared": "the round is over" if n == 1 else None,
            "cleared_t": 300 if n == 1 else None,  # end round came without a time
        }
        for n, (a, round_number, when) in enumerate(raised, 1)
    ]
    assert (late.about, unexpected.about, fault.about) == ("main", None, "shoe")
    assert snap["alarms_dropped"] == 0
    assert t.state.alarm_seq == 3
    json.dumps(snap)  # JSON-safe for the diagnostics page


def test_a_refused_event_registers_no_alarm():
    t = table()
    faults(t, "shoe")
    assert t.handle(ev.BetSensor(1, "main", True)).accepted
    refused = t.handle(ev.Lockout())  # the table is faulted
    assert not refused.accepted and ids(t) == [1]
    before = copy.deepcopy(t.state)

    def alarm_then_refuse(event: ev.Burn) -> None:  # a handler that changed its mind
        t._alarm("half_way", "An alarm before the refusal", "Nothing")
        raise ProcedureError("burn refused: for this test")

    t._handlers[ev.Burn] = alarm_then_refuse
    step = t.handle(ev.Burn())
    assert not step.accepted and step.reason == "burn refused: for this test"
    assert alarms(step) == []
    assert t.state.alarms == before.alarms and t.state.alarm_seq == 1


# -- acknowledgement ---------------------------------------------------------------------------


def test_acknowledge_one_by_id_leaves_the_others_open():
    t = table()
    faults(t, "shoe", "camera", "gpio")
    step = t.handle(ev.AcknowledgeAlarm(2, by="tech 0042", t=5000))
    assert step.accepted and step.journal and step.effects == ()
    assert ids(t) == [1, 3]
    assert [a["text"] for a in t.snapshot()["alarms"]] == [
        "Table fault (shoe): lost",
        "Table fault (gpio): lost",
    ]
    faults(t, "journal")
    assert ids(t) == [1, 3, 4]  # ids are never reused


def test_acknowledge_zero_clears_every_open_alarm():
    t = table()
    faults(t, "shoe", "camera")
    assert t.handle(ev.AcknowledgeAlarm(0, by="tech 0042")).accepted
    assert t.snapshot()["alarms"] == []
    again = t.handle(ev.AcknowledgeAlarm(0))
    assert not again.accepted
    assert again.reason == "acknowledge alarm refused: no alarm is open; reload the alarm list"
    assert t.state.faults  # acknowledging an alarm does not clear the fault latch


@pytest.mark.parametrize("raised", [0, 7], ids=["never-raised", "acknowledged-already"])
def test_an_alarm_that_is_not_open_is_refused_and_nothing_changes(raised):
    t = table()
    for n in range(raised):
        t.handle(ev.ShoeEvent("missed_frames", f"frame {n}"))
    if raised:
        assert t.handle(ev.AcknowledgeAlarm(7)).accepted
    before = copy.deepcopy(t.state)
    step = t.handle(ev.AcknowledgeAlarm(7, by="tech 0042"))
    assert not step.accepted and step.journal
    assert step.reason == NOT_OPEN
    assert t.state == before


def test_acknowledge_in_every_phase_and_while_a_card_waits():
    t = table()
    phases: set[Phase] = set()

    def raise_and_acknowledge() -> None:
        (alarm,) = alarms(t.handle(ev.ShoeEvent("missed_frames")))
        phases.add(t.state.phase)
        assert t.handle(ev.AcknowledgeAlarm(t.state.alarm_seq)).accepted, t.state.phase
        assert t.snapshot()["alarms"] == [], alarm

    t.handle(card("5C"))  # waits for the dealer's decision: lockout, next ... are refused
    assert t.state.pending and not t.handle(ev.Lockout()).accepted
    assert t.handle(ev.AcknowledgeAlarm(0)).accepted
    assert t.state.pending  # the card still waits
    assert t.handle(ev.Burn()).accepted
    round_events = [
        ev.BetSensor(1, "main", True),
        ev.Lockout(),
        card("10C"),
        card("9S"),  # the dealer's up card: no insurance, no peek
        card("7D"),
        card("8H"),  # the hole card
        ev.Next(),  # spot 1 stands on 17; the dealer has 17 and stands
    ]
    records: list[dict] = []
    raise_and_acknowledge()
    for event in round_events:
        step = t.handle(event)
        assert step.accepted, event
        records.extend(e.data for e in step.effects if isinstance(e, Record))
        raise_and_acknowledge()
    assert t.state.phase is Phase.SETTLED
    (record,) = records
    # an acknowledgement acts on the register, not on the round: the recall record leaves it
    # out, so the recalled round replays alone to the same record
    assert "acknowledge_alarm" not in json.dumps(record["events"])
    result = replay(parse_script(round_script(record)), t.rules)
    again = [e.data for _, s in result.steps for e in s.effects if isinstance(e, Record)]
    assert again == [record]
    assert t.handle(ev.EndRound()).accepted
    raise_and_acknowledge()
    assert phases >= {Phase.BETTING, Phase.DEALING, Phase.PLAYERS, Phase.SETTLED}


def test_the_register_holds_the_last_100_open_alarms():
    t = table()
    extra = 5
    for n in range(MAX_OPEN_ALARMS + extra):
        t.handle(ev.ShoeEvent("missed_frames", f"frame {n}", t=n))
    snap = t.snapshot()
    assert len(snap["alarms"]) == MAX_OPEN_ALARMS == 100
    assert snap["alarms_dropped"] == extra
    assert ids(t) == list(range(extra + 1, MAX_OPEN_ALARMS + extra + 1))  # oldest dropped
    assert snap["alarms"][0]["text"] == f"The shoe skipped messages (frame {extra}): " + (
        "a card may not have been read"
    )
    assert t.handle(ev.AcknowledgeAlarm(0)).accepted
    assert t.snapshot()["alarms"] == [] and t.snapshot()["alarms_dropped"] == extra
    t.handle(ev.ShoeEvent("missed_frames"))
    assert ids(t) == [MAX_OPEN_ALARMS + extra + 1]


# -- replay, the journal and event scripts -------------------------------------------------------


def session() -> list[ev.Event]:
    """Alarms across two rounds, acknowledgements accepted and refused, ticks."""
    return [
        ev.Tick(t=1000),
        card("QH", t=1100),  # unexpected: waits for a decision
        ev.AcknowledgeAlarm(1, by="tech 0042", t=1200),  # allowed while the card waits
        ev.AcknowledgeAlarm(1, by="tech 0042", t=1300),  # refused: acknowledged already
        ev.Burn(t=1400),
        ev.BetSensor(1, "main", True, t=1500),
        ev.Lockout(t=1600),
        ev.BetSensor(2, "main", True, t=1700),  # late bet: alarm 2
        ev.ShoeEvent("door_open", t=1800),  # alarm 3
        ev.ShoeEvent("door_closed", t=1900),
        ev.TableFault("camera", "no frames", t=2000),  # alarm 4
        ev.AcknowledgeAlarm(3, by="tech 0042"),  # no t: the journal stamps the table's clock
        ev.Tick(t=2500),
        ev.SupervisorKey(True, t=2600),  # clears nothing: the camera fault is still present
        ev.VoidRound("test", t=2700),
        ev.EndRound(t=2800),
        ev.ShoeEvent("missed_frames", "frame 9", t=2900),
        ev.AcknowledgeAlarm(0, by="floor tech", t=3000),
        ev.ShoeEvent("fault", "jam", t=3100),
        ev.AcknowledgeAlarm(99, t=3200),  # refused: never raised
    ]


def register(t: Table | JournaledTable) -> tuple:
    state = t.state
    return dict(state.alarms), state.alarm_seq, state.alarms_dropped, t.snapshot()["alarms"]


def test_the_same_events_on_a_fresh_table_give_the_same_alarms():
    first, second = table(), table()
    steps = first.run(session())
    assert [s.accepted for s in steps].count(False) == 2
    second.run(session())
    assert register(second) == register(first)
    assert second.state == first.state
    assert [a["code"] for a in first.snapshot()["alarms"]] == ["shoe_fault"]
    assert first.state.alarm_seq == 7


def test_the_journal_recovers_the_open_alarms_and_the_acknowledgements(tmp_path, pa):
    path = tmp_path / "t.journal"
    events = session()
    with JournaledTable(path, pa, SETTINGS) as live:
        for event in events[:13]:  # up to the second tick, mid-round
            live.handle(event)
        middle = register(live)
        assert [a["id"] for a in middle[3]] == [2, 4]
        assert [a["t"] for a in middle[3]] == [1700, 2000]
    with JournaledTable(path, pa, SETTINGS) as recovered:
        assert register(recovered) == middle
        for event in events[13:]:
            recovered.handle(event)
        end = register(recovered)
        entries = list(recovered.journal.entries())
    with JournaledTable(path, pa, SETTINGS) as again:
        assert register(again) == end
        assert again.state == recovered.state
    acks = [(e.event, e.accepted) for e in entries if e.event["type"] == "acknowledge_alarm"]
    assert acks == [
        ({"type": "acknowledge_alarm", "alarm": 1, "by": "tech 0042", "t": 1200}, True),
        ({"type": "acknowledge_alarm", "alarm": 1, "by": "tech 0042", "t": 1300}, False),
        ({"type": "acknowledge_alarm", "alarm": 3, "by": "tech 0042", "t": 2000}, True),
        ({"type": "acknowledge_alarm", "alarm": 0, "by": "floor tech", "t": 3000}, True),
        ({"type": "acknowledge_alarm", "alarm": 99, "by": "technician", "t": 3200}, False),
    ]
    # the exported journal replays to the same register
    with Journal(path) as journal:
        script = parse_script(journal.export_script())
    assert register(replay(script, pa).table) == end


def test_an_event_script_takes_acknowledge_alarm_lines(pa):
    text = "\n".join(
        [
            json.dumps({"type": "header", "version": 1, "game": "pa-standard"}),
            '{"type": "shoe", "event": "missed_frames", "t": 10}',
            '{"expect": "alarm", "code": "shoe_missed_frames"}',
            '{"type": "acknowledge_alarm", "alarm": 1, "by": "tech 0042", "t": 20}',
            '{"expect": "accepted"}',
            '{"type": "acknowledge_alarm", "alarm": 7}',
            '{"expect": "refused", "reason": "alarm 7 is not open"}',
        ]
    )
    script = parse_script(text)
    assert script.events[1] == ev.AcknowledgeAlarm(1, "tech 0042", t=20)
    assert script.events[2] == ev.AcknowledgeAlarm(7)
    result = replay(script, pa)
    assert result.failures == [] and result.checked == 3
    assert result.table.snapshot()["alarms"] == []


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"type": "acknowledge_alarm", "alarm": -2}', ["field 'alarm'", "must not be negative"]),
        ('{"type": "acknowledge_alarm", "alarm": "all"}', ["field 'alarm'", "whole number"]),
        ('{"type": "acknowledge_alarm", "alarm": 1.5}', ["field 'alarm'", "whole number"]),
        ('{"type": "acknowledge_alarm", "by": "tech"}', ["field 'alarm' is required"]),
    ],
)
def test_a_bad_acknowledge_alarm_line_names_the_field(line, words):
    with pytest.raises(EventError) as info:
        parse_script(line, "ack.jsonl")
    assert str(info.value).startswith("ack.jsonl:1: 'acknowledge_alarm' event: ")
    for word in words:
        assert word in str(info.value)


# -- link alarms ---------------------------------------------------------------------------------


def test_a_link_alarm_enters_the_register_in_casino_words_and_is_acknowledged():
    t = table()
    step = t.handle(ev.LinkAlarm("ack_refused", "ack 9 is beyond the last sent seq 4", t=100))
    assert step.accepted
    (alarm,) = alarms(step)
    assert alarm.code == "link_ack_refused"
    assert alarm.text == (  # fixed words: the detail stays in the log (issue 26)
        "The jackpot controller's acknowledgement was refused: it does not match what this "
        "table sent"
    )
    assert alarm.action.startswith("Call a technician")
    (listed,) = t.snapshot()["alarms"]
    assert (listed["code"], listed["t"], listed["round"]) == ("link_ack_refused", 100, 1)
    assert t.state.log == []  # not part of the round's recall record
    assert t.state.lights.get("alarm", "off") == "off"  # the light follows conditions
    assert t.handle(ev.AcknowledgeAlarm(listed["id"], by="tech 0042")).accepted
    assert t.snapshot()["alarms"] == []


def test_one_open_link_alarm_per_kind():
    t = table()
    assert alarms(t.handle(ev.LinkAlarm("signature", "bad signature on ack")))
    again = t.handle(ev.LinkAlarm("signature", "bad signature on award"))
    assert again.accepted and again.effects == ()  # open already: not doubled
    assert [a.code for a in alarms(t.handle(ev.LinkAlarm("puback", "PUBACK 135")))] == [
        "link_puback"
    ]
    assert [a["code"] for a in t.snapshot()["alarms"]] == ["link_signature", "link_puback"]
    t.handle(ev.AcknowledgeAlarm(1))
    (raised,) = alarms(t.handle(ev.LinkAlarm("signature", "bad signature on meter")))
    assert raised.code == "link_signature"  # acknowledged: the next one is raised
    (other,) = alarms(t.handle(ev.LinkAlarm("retained_junk", "x" * 500)))
    assert other.text == "Jackpot link problem (retained_junk)"  # the detail is not shown


def test_link_alarms_and_refused_awards_recover_from_the_journal(tmp_path, pa):
    path = tmp_path / "t.journal"
    forged = ev.JackpotAward(
        "hcm-bj-07/9", 1, 3, "blazing_7s", 1_000_000, "100% of meter",
        claim_key="round-1/spot-3/blazing_7s/claim", meter_before=1_000_000,
    )  # fmt: skip
    events = [
        ev.LinkAlarm("ack_refused", "ack 9", t=100),
        ev.LinkAlarm("ack_refused", "ack 10", t=200),  # open already
        forged,  # refused: answers no claim; alarm
        ev.LinkAlarm("award_malformed", "award for 'hcm-bj-08'", t=300),
        ev.AcknowledgeAlarm(1, by="tech 0042", t=400),
        ev.LinkAlarm("ack_refused", "ack 11", t=500),
    ]
    with JournaledTable(path, pa, SETTINGS) as live:
        steps = [live.handle(e) for e in events]
        end = register(live)
        entries = list(live.journal.entries())
    assert [s.accepted for s in steps] == [True, True, False, True, True, True]
    assert [(e.event["type"], e.accepted) for e in entries] == [
        (e.TYPE, s.accepted) for e, s in zip(events, steps, strict=True)
    ]
    assert [a["code"] for a in end[3]] == ["award_unproven", "link_award_malformed",
                                           "link_ack_refused"]  # fmt: skip
    with JournaledTable(path, pa, SETTINGS) as recovered:
        assert register(recovered) == end
    fresh = table()
    fresh.run(events)
    assert register(fresh) == end


def test_the_daemon_raises_one_link_alarm_per_kind_a_minute():
    from controller.link.publisher import Alarm as PublisherAlarm
    from controller.runtime.daemon import LinkAlarmGate

    submitted: list[ev.Event] = []
    now = [0.0]
    gate = LinkAlarmGate(submitted.append, every_s=60, clock=lambda: now[0])
    for detail in ("ack 9", "ack 10", "ack 11"):
        gate(PublisherAlarm("ack_refused", detail))
    gate(PublisherAlarm("signature", "bad"))
    gate(PublisherAlarm("connect", "CONNACK 135"))  # the link watch's business
    assert submitted == [ev.LinkAlarm("ack_refused", "ack 9"), ev.LinkAlarm("signature", "bad")]
    assert gate.held["ack_refused"] == 2
    now[0] = 61.0
    gate(PublisherAlarm("ack_refused", "ack 12"))
    assert submitted[-1] == ev.LinkAlarm(
        "ack_refused", "ack 12 (2 more of this kind before it, in the log)"
    )
    gate(PublisherAlarm("Odd Kind!", "x"))
    assert submitted[-1] == ev.LinkAlarm("other", "Odd Kind!: x")
    for event in submitted:  # each one reads back from the journal
        assert ev.parse_event(json.loads(json.dumps(event.to_dict()))) == event
