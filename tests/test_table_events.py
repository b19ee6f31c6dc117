"""Event parsing and serialising, and table settings validation.

An event script, a journal export and a driver message all reach the table through
:func:`parse_event`; a line that is wrong must be refused with the field named, never
turned into a different event. :meth:`Event.to_dict` is its inverse, so a recalled round
replays as it was dealt.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import EventError
from controller.rules.cards import ALL_CARDS, parse_card
from controller.table import events as ev
from controller.table.events import CARD_SOURCES, EVENT_TYPES, SHOE_EVENTS, parse_event
from controller.table.settings import SettingsError, TableSettings

# One example of every event type, with and without the optional fields.
EXAMPLES: list[ev.Event] = [
    ev.BetSensor(3, "lucky_ladies", True),
    ev.BetSensor(1, "blackjack_tie.tie_17", False, t=17),
    ev.WagerAmount(2, "main", 2500),
    ev.WagerAmount(7, "blazing_7s", 500, t=0),
    ev.Lockout(),
    ev.Lockout(t=123456),
    ev.CardDrawn(parse_card("QH")),
    ev.CardDrawn(parse_card("10D"), "camera", t=5),
    ev.OutOfOrderCard(parse_card("10D"), 0x0C, 0x28, True, t=6),
    ev.Next(),
    ev.Double(2),
    ev.Double(2, 500),
    ev.Split(4, t=9),
    ev.Surrender(1),
    ev.Insurance(3, 250),
    ev.EvenMoney(5),
    ev.EzBust(6, 100),
    ev.DoubleUp(7),
    ev.DoubleUp(7, 1000, t=1),
    ev.EndRound(),
    ev.VoidRound(),
    ev.VoidRound("camera fault", t=4),
    ev.Misdeal(),
    ev.SupervisorKey(True),
    ev.SupervisorKey(False, t=2),
    ev.Burn(),
    ev.Assign(0),
    ev.Assign(3, 1),
    *(ev.ShoeEvent(kind) for kind in SHOE_EVENTS),
    ev.ShoeEvent("fault", "jam at the gate"),
    ev.Tick(t=1000),
    ev.Tick(),
    ev.JackpotAward("hcm-bj-07/12", 4, 3, "blazing_7s", 1234567, "100% of meter"),
    ev.JackpotAward("hcm-bj-07/13", 5, 1, "mystery", 0, "100% of meter", "refused", t=3),
    ev.JackpotAward(
        "hcm-bj-07/14", 6, 2, "blazing_7s", 9, "10% of meter", claim_key="k", meter_before=99
    ),
    ev.ConfirmAward("hcm-bj-07/12", t=8),
    ev.ConfirmAward("hcm-bj-07/12", t=8, by="supervisor mlopez", amount=1_234_567),
    ev.JackpotPaid(t=8),
    ev.EnclosureDoor(True, at_start=True, t=9),
    ev.PowerLoss(41, 1_764_169_200_000, "2026-11-26 15:00:00 UTC", t=10),
    ev.JournalChange("restore", "ana (command line)", "backup journal-1.sqlite", t=10),
    ev.TableFault("shoe", "offline 30 s"),
    ev.TableFault("journal", "disk full", False, t=4),
    ev.ClearFaults(),
    ev.ClearFaults("tech 0042", t=5),
    ev.JackpotLink(False),
    ev.JackpotLink(True, t=6),
    ev.AcknowledgeAlarm(0),
    ev.AcknowledgeAlarm(12, "tech 0042", t=7),
    ev.LinkAlarm("ack_refused", "ack 9 is beyond seq 4", t=9),
    ev.LinkAlarm("signature"),
]


def test_every_event_type_has_an_example():
    assert {type(e) for e in EXAMPLES} == set(EVENT_TYPES.values())


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: f"{e.TYPE}")
def test_round_trip_through_json(event):
    # what the journal writes is what the replay reads back, through real JSON text
    line = json.dumps(event.to_dict())
    again = parse_event(json.loads(line))
    assert again == event
    assert type(again) is type(event)
    assert again.to_dict() == event.to_dict()


def test_to_dict_leaves_out_absent_time_and_amount():
    assert ev.Double(2).to_dict() == {"type": "double", "spot": 2}
    assert ev.CardDrawn(parse_card("TD")).to_dict() == {
        "type": "card",
        "card": "10D",
        "source": "shoe",
    }
    assert ev.Lockout(t=5).to_dict() == {"type": "lockout", "t": 5}


def test_null_optional_fields_are_absent():
    assert parse_event({"type": "double", "spot": 2, "amount": None, "t": None}) == ev.Double(2)


def test_card_text_in_any_case_and_ten_as_t():
    assert parse_event({"type": "card", "card": "td"}).card == parse_card("10D")
    assert parse_event({"type": "card", "card": "as", "source": "camera"}).source == "camera"


_ints = st.integers(min_value=0, max_value=10**9)
_opt_t = st.none() | _ints
_circles = st.sampled_from(["main", "lucky_ladies", "blazing_7s", "blackjack_tie.tie_21"])
_spot_actions = [ev.Double, ev.Split, ev.Surrender, ev.Insurance, ev.EvenMoney, ev.EzBust]
event_strategy = st.one_of(
    st.builds(ev.BetSensor, _ints, _circles, st.booleans(), _opt_t),
    st.builds(ev.WagerAmount, _ints, _circles, _ints, _opt_t),
    st.builds(ev.Lockout, _opt_t),
    st.builds(ev.CardDrawn, st.sampled_from(ALL_CARDS), st.sampled_from(CARD_SOURCES), _opt_t),
    st.builds(ev.Next, _opt_t),
    *(st.builds(cls, _ints, st.none() | _ints, _opt_t) for cls in [*_spot_actions, ev.DoubleUp]),
    st.builds(ev.EndRound, _opt_t),
    st.builds(ev.VoidRound, st.text(max_size=20), _opt_t),
    st.builds(ev.Misdeal, _opt_t),
    st.builds(ev.SupervisorKey, st.booleans(), _opt_t),
    st.builds(ev.Burn, _opt_t),
    st.builds(ev.Assign, st.integers(0, 7), st.integers(0, 3), _opt_t),
    st.builds(ev.ShoeEvent, st.sampled_from(SHOE_EVENTS), st.text(max_size=20), _opt_t),
    st.builds(ev.Tick, _opt_t),
    st.builds(ev.AcknowledgeAlarm, _ints, st.text(max_size=20), _opt_t),
)


@settings(max_examples=300, deadline=None)
@given(event_strategy)
def test_any_event_round_trips(event):
    assert parse_event(json.loads(json.dumps(event.to_dict()))) == event


# -- malformed events: an EventError that names the field --------------------------------


@pytest.mark.parametrize(
    ("obj", "words"),
    [
        ({"type": "hit"}, ["unknown event type 'hit'", "lockout"]),
        ({"spot": 1}, ["unknown event type None"]),
        ({"type": 3}, ["unknown event type 3"]),
        ({"type": "lockout", "spots": 3}, ["unknown field", "spots"]),
        ({"type": "double", "spot": 1, "amont": 500}, ["unknown field", "amont"]),
        ({"type": "bet", "circle": "main", "on": True}, ["field 'spot' is required"]),
        ({"type": "card"}, ["field 'card' is required"]),
        ({"type": "bet", "spot": "1", "circle": "main", "on": True}, ["field 'spot'", "whole"]),
        ({"type": "bet", "spot": 1.0, "circle": "main", "on": True}, ["field 'spot'", "whole"]),
        ({"type": "bet", "spot": True, "circle": "main", "on": True}, ["field 'spot'", "whole"]),
        ({"type": "bet", "spot": 1, "circle": "main", "on": 1}, ["field 'on'", "true or false"]),
        ({"type": "bet", "spot": 1, "circle": "main", "on": "yes"}, ["field 'on'"]),
        ({"type": "bet", "spot": 1, "circle": 7, "on": True}, ["field 'circle'", "text"]),
        ({"type": "bet", "spot": -1, "circle": "main", "on": True}, ["field 'spot'", "negative"]),
        ({"type": "wager", "spot": 1, "circle": "main", "amount": -500}, ["'amount'", "negative"]),
        ({"type": "wager", "spot": 1, "circle": "main", "amount": 5.5}, ["'amount'", "cents"]),
        ({"type": "wager", "spot": 1, "circle": "main", "amount": "$5"}, ["'amount'", "cents"]),
        ({"type": "double", "spot": 1, "amount": -1}, ["field 'amount'", "negative"]),
        ({"type": "insurance", "spot": 1, "amount": 2.5}, ["field 'amount'", "cents"]),
        ({"type": "lockout", "t": -3}, ["field 't'", "negative"]),
        ({"type": "tick", "t": 1.5}, ["field 't'", "(ms)"]),
        ({"type": "card", "card": "ZZ"}, ["field 'card'", "unknown card 'ZZ'"]),
        ({"type": "card", "card": "11H"}, ["field 'card'", "11H"]),
        ({"type": "card", "card": ""}, ["field 'card'"]),
        ({"type": "card", "card": 12}, ["field 'card'", "card text"]),
        ({"type": "card", "card": ["QH"]}, ["field 'card'", "card text"]),
        ({"type": "card", "card": "QH", "source": "hand"}, ["source", "shoe, camera"]),
        ({"type": "card", "card": "QH", "source": None}, ["field 'source'", "text"]),
        ({"type": "shoe", "event": "explode"}, ["event must be one of", "cut_card"]),
        ({"type": "supervisor_key", "on": None}, ["field 'on'", "true or false"]),
        ({"type": "assign", "spot": None}, ["field 'spot'", "whole"]),
        ({"type": "void_round", "reason": 5}, ["field 'reason'", "text"]),
        ({"type": "acknowledge_alarm"}, ["field 'alarm' is required"]),
        ({"type": "acknowledge_alarm", "alarm": -1}, ["field 'alarm'", "negative", "0 for every"]),
        ({"type": "acknowledge_alarm", "alarm": "3"}, ["field 'alarm'", "whole", "alarm's id"]),
        ({"type": "acknowledge_alarm", "alarm": 2.0}, ["field 'alarm'", "whole"]),
        ({"type": "acknowledge_alarm", "alarm": True}, ["field 'alarm'", "whole"]),
        ({"type": "acknowledge_alarm", "alarm": 1, "by": 42}, ["field 'by'", "text"]),
        ({"type": "link_alarm"}, ["field 'kind' is required"]),
        ({"type": "link_alarm", "kind": "Ack Refused"}, ["kind must be", "ack_refused"]),
        ({"type": "link_alarm", "kind": ""}, ["kind must be"]),
        (
            {
                "type": "jackpot_award",
                "award_id": "a",
                "round": 1,
                "spot": 1,
                "pool": "p",
                "amount": 5,
                "line": "100% of meter",
                "meter_before": "5",
            },
            ["'meter_before'", "whole"],
        ),
    ],
)
def test_malformed_event_names_the_field(obj, words):
    with pytest.raises(EventError) as info:
        parse_event(obj)
    for word in words:
        assert word in str(info.value), (obj, str(info.value))


@pytest.mark.parametrize("obj", [None, [], "lockout", 3, [{"type": "lockout"}]])
def test_an_event_is_a_json_object(obj):
    with pytest.raises(EventError, match="JSON object"):
        parse_event(obj)


def test_event_error_is_a_value_error():
    # callers that only know the builtins still catch a bad script line
    with pytest.raises(ValueError):
        parse_event({"type": "nope"})


def test_events_are_immutable():
    event = ev.BetSensor(1, "main", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.on = False  # type: ignore[misc]


# -- table settings ------------------------------------------------------------------------


def test_default_settings_are_a_seven_spot_table():
    table = TableSettings()
    assert table.spots == 7
    assert table.main_minimum <= table.main_maximum
    assert TableSettings.from_dict(table.to_dict()) == table


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"spots": 0}, ["'spots'", "at least 1"]),
        ({"spots": 8}, ["'spots'", "at most 7"]),
        ({"spots": "3"}, ["'spots'", "whole number"]),
        ({"spots": True}, ["'spots'"]),
        ({"spots": 2.0}, ["'spots'"]),
        ({"main_minimum": 0}, ["'main_minimum'"]),
        ({"main_minimum": -500}, ["'main_minimum'"]),
        ({"main_maximum": 10.5}, ["'main_maximum'"]),
        ({"side_minimum": None}, ["'side_minimum'"]),
        ({"side_maximum": "100"}, ["'side_maximum'"]),
        ({"main_minimum": 5000, "main_maximum": 2500}, ["'main_minimum'", "$50.00", "$25.00"]),
        ({"side_minimum": 200, "side_maximum": 100}, ["'side_minimum'", "'side_maximum'"]),
        ({"card_source": "dealer"}, ["'card_source'", "shoe, camera, both"]),
        ({"card_source": None}, ["'card_source'"]),
    ],
)
def test_settings_errors_name_the_key(values, words):
    with pytest.raises(SettingsError) as info:
        TableSettings(**values)
    for word in words:
        assert word in str(info.value), str(info.value)
    # the same through the config/header path
    with pytest.raises(SettingsError):
        TableSettings.from_dict(values)


def test_unknown_setting_is_named():
    with pytest.raises(SettingsError, match=r"unknown table setting.*minimum_bet"):
        TableSettings.from_dict({"spots": 3, "minimum_bet": 500})


@pytest.mark.parametrize("data", [None, [], "spots=3", 3])
def test_settings_must_be_a_table(data):
    with pytest.raises(SettingsError, match="must be a JSON/TOML table"):
        TableSettings.from_dict(data)


def test_settings_error_is_a_value_error():
    with pytest.raises(ValueError):
        TableSettings(spots=9)


@pytest.mark.parametrize("source", ["shoe", "camera", "both"])
def test_card_sources(source):
    assert TableSettings(card_source=source).card_source == source
