"""The jackpot award flow at the table: award -> dealer prompt -> confirm (supervisor key)
-> ``award_confirm`` publish, checked against the link's contract (docs/jackpot/README.md)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from controller.errors import EventError
from controller.games import load_game
from controller.link.messages import envelope, parse_message, topic_for, validate
from controller.table import events as ev
from controller.table.effects import Alarm, Prompt, Publish
from controller.table.machine import Table
from controller.table.settings import TableSettings

TABLE = "hcm-bj-07"
AWARD = ev.JackpotAward("hcm-bj-07/12", 4, 3, "blazing_7s", 1_234_567, "100% of meter")


def table(spots: int = 3) -> Table:
    return Table(load_game("pa-standard"), TableSettings(spots=spots))


def prompts(step, code: str | None = None) -> list[str]:
    return [e.text for e in step.effects if isinstance(e, Prompt) and code in (None, e.code)]


def publishes(step) -> list[Publish]:
    return [e for e in step.effects if isinstance(e, Publish)]


def start_round(t: Table) -> None:
    for spot in (1, 2):
        assert t.handle(ev.BetSensor(spot, "main", True)).accepted
    assert t.handle(ev.Lockout()).accepted


def test_award_prompts_the_dealer_without_an_alarm():
    t = table()
    step = t.handle(AWARD)
    assert step.accepted
    assert prompts(step, "jackpot_award") == [
        "Jackpot: spot 3 wins Blazing 7's 100% of meter: $12,345.67 hand pay; call the supervisor"
    ]
    assert not [e for e in step.effects if isinstance(e, Alarm)]
    assert t.state.lights.get("alarm", "off") == "off"
    assert t.snapshot()["awards"] == [
        {
            "award_id": "hcm-bj-07/12",
            "round": 4,
            "spot": 3,
            "pool": "blazing_7s",
            "line": "100% of meter",
            "amount": 1_234_567,
        }
    ]


@pytest.mark.parametrize("cards", [0, 1, 4], ids=["dealing", "dealing-more", "players"])
def test_award_arrives_in_any_phase_and_leaves_the_round_alone(cards):
    t = table()
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
    t = table()
    t.handle(AWARD)
    again = t.handle(AWARD)
    assert again.accepted and again.effects == ()
    assert len(t.snapshot()["awards"]) == 1


def test_an_award_for_an_unknown_spot_or_pool_is_still_shown():
    t = table(spots=1)
    step = t.handle(ev.JackpotAward("hcm-bj-07/5", 2, 7, "harbour_lights", 500, "10% of meter"))
    assert prompts(step) == [
        "Jackpot: spot 7 wins harbour_lights 10% of meter: $5.00 hand pay; call the supervisor"
    ]
    assert t.snapshot()["awards"][0]["spot"] == 7


def test_confirm_needs_the_supervisor_key_and_a_pending_award():
    t = table()
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
    t = table()
    t.handle(ev.SupervisorKey(True))
    t.handle(AWARD)
    step = t.handle(ev.ConfirmAward("hcm-bj-07/12"))
    assert not step.accepted and "no time" in step.reason
    assert list(t.state.awards) == ["hcm-bj-07/12"]


def test_confirm_publishes_award_confirm_matching_the_contract():
    t = table()
    t.handle(ev.SupervisorKey(True))
    t.handle(AWARD)
    step = t.handle(ev.ConfirmAward("hcm-bj-07/12", t=1_700_000_123_456))
    assert step.accepted
    (publish,) = publishes(step)
    assert publish.topic == "award_confirm"
    assert publish.key == "award/hcm-bj-07/12/confirm"
    assert publish.payload == {
        "award_id": "hcm-bj-07/12",
        "round": 4,
        "spot": 3,
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
    t = table()
    t.handle(ev.SupervisorKey(True))
    t.handle(AWARD)
    t.handle(ev.ConfirmAward(AWARD.award_id, t=9))
    committed = dataclasses.replace(AWARD, state="committed")
    step = t.handle(committed)
    assert prompts(step, "jackpot_committed")
    assert t.handle(committed).effects == ()  # once
    refused = ev.JackpotAward("hcm-bj-07/13", 4, 2, "blazing_7s", 0, "100% of meter", "refused")
    step = t.handle(refused)
    assert prompts(step, "jackpot_refused") == [
        "Jackpot claim refused by the jackpot controller: spot 2 Blazing 7's 100% of meter: "
        "no hand pay; call the supervisor"
    ]
    assert t.snapshot()["awards"] == []
    assert not t.handle(ev.ConfirmAward("hcm-bj-07/13", t=10)).accepted


def test_award_events_survive_the_journal_round_trip():
    for event in (AWARD, ev.ConfirmAward("hcm-bj-07/12", t=3)):
        assert ev.parse_event(json.loads(json.dumps(event.to_dict()))) == event
    with pytest.raises(EventError, match="state must be one of offered, committed, refused"):
        ev.parse_event({**AWARD.to_dict(), "state": "paid"})


def test_a_replay_rebuilds_the_pending_awards_across_rounds():
    t = table()
    other = ev.JackpotAward("hcm-bj-07/14", 4, 1, "mystery", 61_234, "100% of meter")
    t.handle(AWARD)
    start_round(t)
    t.handle(other)
    t.handle(ev.SupervisorKey(True))
    t.handle(ev.ConfirmAward(AWARD.award_id, t=7))
    again = table()
    again.run(
        [
            ev.parse_event(json.loads(json.dumps(e.to_dict())))
            for e in [*t.state.carried, *t.state.log]
        ]
    )
    assert again.snapshot()["awards"] == t.snapshot()["awards"] != []
    assert again.state.awards_closed == {AWARD.award_id: "confirmed"}
