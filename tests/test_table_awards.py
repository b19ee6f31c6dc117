"""The jackpot award flow at the table: claim -> award -> dealer prompt -> confirm (supervisor
key) -> ``award_confirm`` publish, checked against the link's contract (docs/jackpot/README.md),
and the award proof: an award that answers no claim of this table, or names another round,
spot, pool, line or amount, is refused with an alarm for a technician (docs/table.md)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from controller.errors import EventError
from controller.games import load_game
from controller.journal import JournaledTable
from controller.link.messages import envelope, parse_message, topic_for, validate
from controller.table import events as ev
from controller.table import machine
from controller.table.effects import Alarm, Prompt, Publish, Refused
from controller.table.machine import Table
from controller.table.settings import TableSettings

TABLE = "hcm-bj-07"
CLAIM = "round-1/spot-1/blazing_7s/claim"
CONTRIBUTION = "round-1/spot-1/blazing_7s/contribution"
AWARD = ev.JackpotAward(
    "hcm-bj-07/12",
    1,
    1,
    "blazing_7s",
    1_234_567,
    "100% of meter",
    claim_key=CLAIM,
    meter_before=1_234_567,
)
MYSTERY = ev.JackpotAward(
    "hcm-bj-07/11",
    1,
    1,
    "mystery",
    61_234,
    "100% of meter",
    claim_key=CONTRIBUTION,
    meter_before=61_234,
)
DO_NOT_PAY = "call a technician; do not pay"


def table(spots: int = 3) -> Table:
    return Table(load_game("pa-standard"), TableSettings(spots=spots))


def prompts(step, code: str | None = None) -> list[str]:
    return [e.text for e in step.effects if isinstance(e, Prompt) and code in (None, e.code)]


def publishes(step) -> list[Publish]:
    return [e for e in step.effects if isinstance(e, Publish)]


def start_round(t: Table, *, blazing: bool = False) -> None:
    for spot in (1, 2):
        assert t.handle(ev.BetSensor(spot, "main", True)).accepted
    if blazing:
        assert t.handle(ev.BetSensor(1, "blazing_7s", True)).accepted
    assert t.handle(ev.Lockout()).accepted


def hit_round(t: Table, spot1: tuple[str, str] = ("7D", "7D"), up: str = "7D") -> None:
    """A round where spot 1's Blazing 7's hits a meter line (``7D 7D`` with ``7D`` up:
    100% of meter; ``7H 7H`` with ``7H`` up: 10%), played to settlement and ended: the
    table has published the contribution and the hit claim."""
    start_round(t, blazing=True)
    for card in [spot1[0], "10S", up, spot1[1], "8H", "9C", "10H"]:
        if card == "10H":  # spot 1 stands on 14, spot 2 on 18; the dealer draws to 26
            assert t.handle(ev.Next()).accepted and t.handle(ev.Next()).accepted
        assert t.handle(ev.CardDrawn(ev.parse_card(card))).accepted
    assert t.handle(ev.EndRound()).accepted


def claimed(spots: int = 3) -> Table:
    t = table(spots)
    hit_round(t)
    assert CLAIM in t.state.claims and CONTRIBUTION in t.state.mystery_claims
    return t


def test_award_prompts_the_dealer_without_an_alarm():
    t = claimed()
    step = t.handle(AWARD)
    assert step.accepted
    assert prompts(step, "jackpot_award") == [
        "Jackpot: spot 1 wins Blazing 7's 100% of meter: $12,345.67 hand pay; call the supervisor"
    ]
    assert not [e for e in step.effects if isinstance(e, Alarm)]
    assert t.state.lights.get("alarm", "off") == "off"
    assert t.snapshot()["awards"] == [
        {
            "award_id": "hcm-bj-07/12",
            "round": 1,
            "spot": 1,
            "pool": "blazing_7s",
            "line": "100% of meter",
            "amount": 1_234_567,
        }
    ]


@pytest.mark.parametrize("cards", [0, 1, 4], ids=["dealing", "dealing-more", "players"])
def test_award_arrives_in_any_phase_and_leaves_the_round_alone(cards):
    t = claimed()
    start_round(t)
    for card in ["10C", "9S", "5D", "8H"][:cards]:
        assert t.handle(ev.CardDrawn(ev.parse_card(card))).accepted
    before = t.snapshot()
    step = t.handle(AWARD)
    assert step.accepted and prompts(step, "jackpot_award")
    after = t.snapshot()
    assert after.pop("awards") and not before.pop("awards")
    assert after == before  # the round, its phase and the lights are untouched


def test_a_repeated_award_is_the_same_award():
    t = claimed()
    t.handle(AWARD)
    again = t.handle(AWARD)
    assert again.accepted and again.effects == ()
    assert len(t.snapshot()["awards"]) == 1


def test_confirm_needs_the_supervisor_key_and_a_pending_award():
    t = claimed()
    t.handle(AWARD)
    state = copy.deepcopy(t.state)
    step = t.handle(ev.ConfirmAward("hcm-bj-07/12", t=5))
    assert not step.accepted
    assert step.reason == "confirm award refused: turn the supervisor key first"
    t.handle(ev.SupervisorKey(True))
    step = t.handle(ev.ConfirmAward("hcm-bj-07/99", t=6))
    assert step.reason == (
        "confirm award refused: no award hcm-bj-07/99 waits for a hand pay (pending: hcm-bj-07/12)"
    )
    assert t.state.awards == state.awards and t.state.awards_closed == state.awards_closed


def test_confirm_without_a_time_is_refused():
    t = claimed()
    t.handle(ev.SupervisorKey(True))
    t.handle(AWARD)
    step = t.handle(ev.ConfirmAward("hcm-bj-07/12"))
    assert not step.accepted and "no time" in step.reason
    assert list(t.state.awards) == ["hcm-bj-07/12"]


def test_confirm_publishes_award_confirm_matching_the_contract():
    t = claimed()
    t.handle(ev.SupervisorKey(True))
    t.handle(AWARD)
    step = t.handle(ev.ConfirmAward("hcm-bj-07/12", t=1_700_000_123_456))
    assert step.accepted
    (publish,) = publishes(step)
    assert publish.topic == "award_confirm"
    assert publish.key == "award/hcm-bj-07/12/confirm"
    assert publish.payload == {
        "award_id": "hcm-bj-07/12",
        "round": 1,
        "spot": 1,
        "pool": "blazing_7s",
        "amount": 1_234_567,
        "confirmed_t": 1_700_000_123_456,
    }
    message = envelope(TABLE, 2, 41, publish, 1_700_000_123_500)  # validates, or raises
    validate("award_confirm", message)
    kind, table_id, parsed = parse_message(
        topic_for(TABLE, "award_confirm"), json.dumps(message).encode()
    )
    assert (kind, table_id, parsed["payload"]) == ("award_confirm", TABLE, publish.payload)
    assert prompts(step, "jackpot_confirmed")
    assert t.snapshot()["awards"] == []
    # the award left the pending list: a second confirm is refused, a repeat is ignored
    assert not t.handle(ev.ConfirmAward("hcm-bj-07/12", t=1_700_000_124_000)).accepted
    assert t.handle(AWARD).effects == ()
    assert t.snapshot()["awards"] == []


def test_committed_and_refused_awards():
    t = claimed()
    t.handle(ev.SupervisorKey(True))
    t.handle(AWARD)
    t.handle(ev.ConfirmAward(AWARD.award_id, t=9))
    committed = dataclasses.replace(AWARD, state="committed")
    step = t.handle(committed)
    assert prompts(step, "jackpot_committed")
    assert t.handle(committed).effects == ()  # once
    hit_round(t)  # round 2: a second hit claim
    claim = "round-2/spot-1/blazing_7s/claim"
    refused = ev.JackpotAward(
        "hcm-bj-07/13", 2, 1, "blazing_7s", 0, "100% of meter", "refused", claim_key=claim
    )
    step = t.handle(refused)
    assert prompts(step, "jackpot_refused") == [
        "Jackpot claim refused by the jackpot controller: spot 1 Blazing 7's 100% of meter: "
        "no hand pay; call the supervisor"
    ]
    assert t.snapshot()["awards"] == [] and claim not in t.state.claims
    assert t.handle(refused).effects == ()  # once
    assert not t.handle(ev.ConfirmAward("hcm-bj-07/13", t=10)).accepted
    assert t.state.alarms == {}


def test_award_events_survive_the_journal_round_trip():
    for event in (AWARD, MYSTERY, ev.ConfirmAward("hcm-bj-07/12", t=3)):
        assert ev.parse_event(json.loads(json.dumps(event.to_dict()))) == event
    with pytest.raises(EventError, match="state must be one of offered, committed, refused"):
        ev.parse_event({**AWARD.to_dict(), "state": "paid"})


def session() -> list[ev.Event]:
    """A hit round, a forged award, the real one, a Mystery award in the next round, the
    confirmation."""
    return [
        *_hit_round_events(),
        dataclasses.replace(AWARD, award_id="hcm-bj-07/99", amount=5_000_000),  # refused
        AWARD,
        *[ev.BetSensor(s, "main", True) for s in (1, 2)],
        ev.Lockout(),
        MYSTERY,
        ev.SupervisorKey(True),
        ev.ConfirmAward(AWARD.award_id, t=7),
    ]


def _hit_round_events() -> list[ev.Event]:
    recorder = table()
    seen: list[ev.Event] = []
    original = recorder.handle

    def record(event: ev.Event):
        seen.append(event)
        return original(event)

    recorder.handle = record  # type: ignore[method-assign]
    hit_round(recorder)
    return seen


def test_a_replay_rebuilds_the_pending_awards_and_claims():
    events = session()
    t, again = table(), table()
    steps = t.run(events)
    assert [s.accepted for s in steps].count(False) == 1
    again.run([ev.parse_event(json.loads(json.dumps(e.to_dict()))) for e in events])
    assert again.snapshot()["awards"] == t.snapshot()["awards"] != []
    assert again.state.awards_closed == {AWARD.award_id: "confirmed"}
    assert again.state == t.state
    assert CLAIM not in t.state.claims  # answered and closed
    assert [a.code for a in t.state.alarms.values()] == ["award_unproven"]


# -- the award proof -----------------------------------------------------------------------


def unproven(t: Table, award: ev.JackpotAward, *words: str) -> Alarm:
    """``award`` is refused with an alarm in the register naming it, no dealer prompt, and
    nothing else changes; returns the alarm."""
    before = copy.deepcopy(t.state)
    step = t.handle(award)
    assert not step.accepted
    assert not prompts(step) and not publishes(step)
    (refused,) = [e for e in step.effects if isinstance(e, Refused)]
    (alarm,) = [e for e in step.effects if isinstance(e, Alarm)]
    assert refused.reason.startswith(f"jackpot award refused: {award.award_id} ")
    assert refused.reason.endswith(DO_NOT_PAY)
    assert alarm.code == "award_unproven" and award.award_id in alarm.text
    assert "do not pay" in alarm.action
    for word in words:
        assert word in refused.reason and word in alarm.text, (word, refused.reason)
    (opened,) = [a for a in t.state.alarms.values() if a.id not in before.alarms]
    assert (opened.code, opened.text) == (alarm.code, alarm.text)
    assert t.state.awards == before.awards and t.state.awards_closed == before.awards_closed
    assert t.state.claims == before.claims
    assert t.state.mystery_claims == before.mystery_claims
    assert t.state.lights == before.lights
    return alarm


FORGED = {
    "no claim": (
        dataclasses.replace(AWARD, claim_key="round-1/spot-3/blazing_7s/claim", spot=3),
        ["answers no claim this table has open", "round-1/spot-3/blazing_7s/claim"],
    ),
    "no claim at all (the issue's $10,000)": (
        ev.JackpotAward(
            "hcm-bj-07/9",
            1,
            3,
            "blazing_7s",
            1_000_000,
            "100% of meter",
            claim_key="round-1/spot-3/blazing_7s/claim",
            meter_before=1_000_000,
        ),
        ["answers no claim"],
    ),
    "other round": (dataclasses.replace(AWARD, round=2), ["round 2, not 1"]),
    "other spot": (dataclasses.replace(AWARD, spot=2), ["spot 2, not 1"]),
    "other pool": (
        dataclasses.replace(AWARD, pool="harbour_lights"),
        ["pool harbour_lights, not blazing_7s"],
    ),
    "other line": (
        dataclasses.replace(AWARD, line="10% of meter", amount=123_456),
        ["line '10% of meter', not '100% of meter'"],
    ),
    "amount above the meter": (
        dataclasses.replace(AWARD, amount=1_234_568),
        ["its amount $12,345.68 is not the meter's $12,345.67"],
    ),
    "amount below the meter": (
        dataclasses.replace(AWARD, amount=1_234_566),
        ["is not the meter's $12,345.67"],
    ),
    "no meter_before": (dataclasses.replace(AWARD, meter_before=None), ["meter_before"]),
    "mystery without a contribution": (
        dataclasses.replace(MYSTERY, spot=2, claim_key="round-1/spot-2/blazing_7s/contribution"),
        ["answers no claim"],
    ),
    "mystery amount above its trigger": (
        dataclasses.replace(MYSTERY, amount=61_235),
        ["its amount $612.35 is not the meter's $612.34"],
    ),
    "mystery on the progressive pool": (
        dataclasses.replace(MYSTERY, pool="blazing_7s"),
        ["pool blazing_7s is the progressive meter"],
    ),
    "a hit claim answered as a mystery": (
        dataclasses.replace(MYSTERY, claim_key=CLAIM),
        ["pool mystery, not blazing_7s"],
    ),
    "a round's mystery for another round": (
        dataclasses.replace(MYSTERY, round=2),
        ["round 2, not 1"],
    ),
}


@pytest.mark.parametrize("name", FORGED)
def test_an_award_that_answers_no_claim_of_this_table_is_refused_with_an_alarm(name):
    award, words = FORGED[name]
    t = claimed()
    unproven(t, award, *words)
    # journaled as refused: the step is journaled, in the round's recall record too
    assert t.state.log[-1] == award
    # the real awards still prompt
    for good in (AWARD, MYSTERY):
        step = t.handle(good)
        assert step.accepted and prompts(step, "jackpot_award")
    assert list(t.state.awards) == [AWARD.award_id, MYSTERY.award_id]


def test_the_issues_forged_award_makes_no_hand_pay_prompt():
    t = table(spots=1)  # a table that never made a claim
    award, _ = FORGED["no claim at all (the issue's $10,000)"]
    alarm = unproven(t, award)
    assert "$10,000.00" in alarm.text and "hand pay" not in alarm.text
    assert t.snapshot()["awards"] == []
    assert [a["code"] for a in t.snapshot()["alarms"]] == ["award_unproven"]


def test_a_share_of_the_meter_is_checked_against_meter_before():
    t = table()
    hit_round(t, ("7H", "7H"), "7H")  # three 7's suited: 10% of meter
    ten = dataclasses.replace(AWARD, line="10% of meter", amount=123_457, meter_before=1_234_567)
    unproven(t, ten, "its amount $1,234.57 is not 10% of the meter's $12,345.67 ($1,234.56)")
    # the meter's fraction of a cent is not sent: 10% of 1,234,569.x is 123,456 or 123,457
    unproven(t, dataclasses.replace(ten, meter_before=1_234_569, amount=123_458),
             "($1,234.56 to $1,234.57)")  # fmt: skip
    step = t.handle(dataclasses.replace(ten, meter_before=1_234_569))
    assert step.accepted and prompts(step, "jackpot_award") == [
        "Jackpot: spot 1 wins Blazing 7's 10% of meter: $1,234.57 hand pay; call the supervisor"
    ]


def test_one_award_per_claim():
    t = claimed()
    assert t.handle(AWARD).accepted
    unproven(
        t,
        dataclasses.replace(AWARD, award_id="hcm-bj-07/77"),
        f"claim {CLAIM} is already answered by award {AWARD.award_id}",
    )
    t.handle(ev.SupervisorKey(True))
    assert t.handle(ev.ConfirmAward(AWARD.award_id, t=5)).accepted
    # confirmed: the claim is closed, a later award for it answers nothing
    unproven(t, dataclasses.replace(AWARD, award_id="hcm-bj-07/78"), "answers no claim")
    assert t.handle(AWARD).effects == ()  # the controller's repeat of the closed award


def test_committed_and_refused_states_for_unknown_awards_are_alarms():
    t = claimed()
    unproven(
        t,
        dataclasses.replace(AWARD, state="committed"),
        "this table was never offered that award",
    )
    t.handle(AWARD)
    unproven(
        t,
        dataclasses.replace(AWARD, state="committed"),
        "the dealer has not confirmed its hand pay yet",
    )
    unproven(
        t,
        dataclasses.replace(AWARD, state="refused", amount=0, meter_before=None),
        "never refuses an award it offered",
    )
    assert list(t.state.awards) == [AWARD.award_id]
    unproven(
        t,
        ev.JackpotAward(
            "hcm-bj-07/40", 1, 2, "blazing_7s", 0, "100% of meter", "refused",
            claim_key="round-1/spot-2/blazing_7s/claim",
        ),
        "answers no claim",
    )  # fmt: skip
    unproven(
        t,
        dataclasses.replace(MYSTERY, state="refused", amount=0, meter_before=None),
        "never answered by a refusal",
    )
    assert [a.code for a in t.state.alarms.values()] == ["award_unproven"] * 5


def test_claims_are_bounded_oldest_first(monkeypatch):
    monkeypatch.setattr(machine, "MAX_CLAIMS", 2)
    t = table()
    for suit in "DHS":  # 100%, 10%, 10% of meter (a suit per round: the shoe holds 6 of each)
        hit_round(t, (f"7{suit}", f"7{suit}"), f"7{suit}")
    assert list(t.state.claims) == [f"round-{n}/spot-1/blazing_7s/claim" for n in (2, 3)]
    assert list(t.state.mystery_claims) == [
        f"round-{n}/spot-1/blazing_7s/contribution" for n in (2, 3)
    ]
    unproven(t, AWARD, "answers no claim")  # round 1's claim is forgotten
    step = t.handle(
        dataclasses.replace(
            AWARD,
            round=3,
            claim_key=CLAIM.replace("-1/", "-3/", 1),
            line="10% of meter",
            amount=123_456,
        )
    )
    assert step.accepted and prompts(step, "jackpot_award")


def test_only_accepted_steps_make_claims():
    t = table()
    start_round(t, blazing=True)
    assert list(t.state.mystery_claims) == [CONTRIBUTION]
    again = table()
    assert not again.handle(ev.Lockout()).accepted  # nothing on the layout
    assert again.state.mystery_claims == {} and again.state.claims == {}


def test_an_award_journaled_by_0_1_0_without_claim_key_replays_as_it_was(tmp_path, pa):
    """0.1.0 journaled awards without ``claim_key`` (the link's schema now requires it): they
    replay as accepted, so such a journal recovers to the state it had."""
    old = ev.JackpotAward("hcm-bj-07/5", 4, 3, "blazing_7s", 1_000_000, "100% of meter")
    t = table()
    step = t.handle(old)
    assert step.accepted and prompts(step, "jackpot_award")
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, TableSettings(spots=3)) as live:
        assert live.handle(old).accepted
    with JournaledTable(path, pa, TableSettings(spots=3)) as recovered:
        assert [a["award_id"] for a in recovered.snapshot()["awards"]] == ["hcm-bj-07/5"]


def test_a_forged_award_is_journaled_as_refused_and_its_alarm_recovered(tmp_path, pa):
    path = tmp_path / "t.journal"
    forged, _ = FORGED["other spot"]
    with JournaledTable(path, pa, TableSettings(spots=3)) as live:
        for event in _hit_round_events():
            live.handle(event)
        step = live.handle(forged)
        assert not step.accepted
        assert live.handle(AWARD).accepted
        state = copy.deepcopy(live.state)
        entries = list(live.journal.entries())
    assert [(e.event["type"], e.accepted) for e in entries[-2:]] == [
        ("jackpot_award", False),
        ("jackpot_award", True),
    ]
    assert entries[-2].event["claim_key"] == CLAIM and entries[-2].event["spot"] == 2
    with JournaledTable(path, pa, TableSettings(spots=3)) as recovered:
        assert recovered.state == state
        (alarm,) = recovered.snapshot()["alarms"]
        assert alarm["code"] == "award_unproven" and forged.award_id in alarm["text"]
        assert recovered.handle(ev.AcknowledgeAlarm(alarm["id"], by="tech 7")).accepted
        assert recovered.snapshot()["alarms"] == []
