"""Shoe and camera as two card readers (table setting ``card_source``).

With ``both`` the shoe deals and the camera must read the same cards, in order;
a disagreement is an alarm that names neither card (it could be the hole card).
"""

from __future__ import annotations

import json

from controller.rules.cards import parse_cards as cards
from controller.table import Table, TableSettings
from controller.table import events as ev


def _table(pa, source: str) -> Table:
    table = Table(pa, TableSettings(spots=1, card_source=source))
    table.handle(ev.BetSensor(1, "main", True))
    assert table.handle(ev.Lockout()).accepted
    return table


def _alarms(step) -> list[dict]:
    return [e.to_dict() for e in step.effects if e.KIND == "alarm"]


def test_both_readers_agreeing_deal_each_card_once(pa):
    table = _table(pa, "both")
    for card in cards("9S 6H 8C 7D"):
        assert not _alarms(table.handle(ev.CardDrawn(card, "shoe")))
        assert not _alarms(table.handle(ev.CardDrawn(card, "camera")))
    spot = table.snapshot()["spots"][0]
    assert spot["hands"][0]["cards"] == ["9S", "8C"]
    assert table.state.dealt == 4  # camera reads confirm, they deal nothing


def test_camera_ahead_of_the_shoe_is_matched_in_order(pa):
    table = _table(pa, "both")
    for card in cards("9S 6H"):
        table.handle(ev.CardDrawn(card, "camera"))
    steps = [table.handle(ev.CardDrawn(card, "shoe")) for card in cards("9S 6H")]
    assert not any(_alarms(step) for step in steps)


def test_a_disagreement_is_an_alarm_that_names_no_card(pa):
    table = _table(pa, "both")
    for card in cards("9S 6H 8C"):
        table.handle(ev.CardDrawn(card, "shoe"))
        table.handle(ev.CardDrawn(card, "camera"))
    table.handle(ev.CardDrawn(cards("7D")[0], "shoe"))  # the hole card
    step = table.handle(ev.CardDrawn(cards("KD")[0], "camera"))
    [alarm] = _alarms(step)
    assert alarm["code"] == "reader_disagreement"
    assert "card 4 of the shoe" in alarm["text"]
    text = json.dumps([e.to_dict() for e in step.effects])
    assert "7D" not in text and "KD" not in text
    # the shoe's card stands: the deal goes on with the hole card as the shoe read it
    assert table.snapshot()["dealer"]["cards"] == ["6H", "back"]


def test_a_reader_the_table_does_not_deal_from_is_refused(pa):
    table = _table(pa, "shoe")
    step = table.handle(ev.CardDrawn(cards("9S")[0], "camera"))
    assert not step.accepted
    assert "card_source = shoe" in step.reason
    assert table.state.dealt == 0

    table = _table(pa, "camera")
    assert table.handle(ev.CardDrawn(cards("9S")[0], "camera")).accepted
    assert not table.handle(ev.CardDrawn(cards("6H")[0], "shoe")).accepted
