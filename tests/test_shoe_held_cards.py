"""Cards the shoe sent that the table must not deal: held for the dealer (issue 26, item 2).

An attacker's audit replayed an old intact frame on the shoe line: the reader took it for
"254 frames lost", dealt its 10♦ as a hit, and spot 1 broke and lost its $10. A card frame
while the shoe reported a fault was dealt too. Now a card whose frame is behind the shoe's
count (``OutOfOrderCard``) or that comes while the shoe reports a fault waits, like a
foreign card, for the dealer to burn it or call a misdeal, with an alarm in plain words.
"""

from __future__ import annotations

import binascii
import json
import os
import queue
import time
import tty

import pytest

from controller.games import load_game
from controller.rules.cards import parse_card
from controller.table import Table, TableSettings, checkpoint
from controller.table import events as ev
from controller.table.effects import Alarm, AlarmCleared, Settled, Step
from controller.table.state import Phase
from drivers.shoe import ShoeReader

WAIT_S = 10.0


def card(text: str) -> ev.CardDrawn:
    return ev.CardDrawn(parse_card(text))


def again(text: str, frame: int = 0x01, last: int = 0x04) -> ev.OutOfOrderCard:
    return ev.OutOfOrderCard(parse_card(text), frame, last, True)


def alarms(step: Step) -> list[Alarm]:
    return [e for e in step.effects if isinstance(e, Alarm)]


def settled(steps: list[Step]) -> list[tuple[int, str, str, int]]:
    return [
        (e.spot, e.wager, e.outcome, e.paid)
        for step in steps
        for e in step.effects
        if isinstance(e, Settled)
    ]


def ok(table: Table, event: ev.Event) -> Step:
    step = table.handle(event)
    assert step.accepted, f"{event} refused: {step.reason}"
    return step


def spot_1_on_12(source: str = "shoe") -> Table:
    """One spot, $10 on main; spot 1 10♦ 2♣ (12), the dealer 7♠ up, 9♥ in the hole (16):
    spot 1 to act."""
    table = Table(load_game("pa-standard"), TableSettings(spots=1, card_source=source))
    ok(table, ev.BetSensor(1, "main", True))
    ok(table, ev.Lockout())
    for text in ("10D", "7S", "2C", "9H"):
        ok(table, ev.CardDrawn(parse_card(text), source))
    assert table.state.phase is Phase.PLAYERS
    return table


def spot_1_cards(table: Table) -> list[str]:
    assert table.state.round is not None
    return [str(c) for c in table.state.round.spots[1].hands[0].cards]


def stand_and_let_the_dealer_bust(table: Table) -> list[Step]:
    steps = [ok(table, ev.Next())]
    steps.append(ok(table, card("10C")))  # the dealer's 16 draws: 26, bust
    assert table.state.phase is Phase.SETTLED
    return steps


# -- the table ---------------------------------------------------------------------------------


def test_a_card_sent_again_out_of_order_is_held_and_spot_1_keeps_its_hand_and_its_bet():
    table = spot_1_on_12()
    step = ok(table, again("10D"))
    (alarm,) = alarms(step)
    assert alarm.code == "held_card"
    # the hole card is face down: a frame sent again could be the hole card's, so no name
    assert (
        alarm.text
        == "The shoe sent a card again out of order (frame 01 after 04): it was not dealt"
    )
    assert "press burn to drop it" in alarm.action
    assert spot_1_cards(table) == ["10D", "2C"]  # not a hit: no bust
    assert table.state.pending == [parse_card("10D")] and table.state.pending_foreign == [True]
    assert table.snapshot()["prompt"]["text"] == (
        "A card waits for a decision: burn it, assign it, or call a misdeal (supervisor key)"
    )
    refused = table.handle(ev.Assign(1))
    assert refused.reason == (
        "assign refused: a card was sent again out of order and cannot be played; "
        "burn it or call a misdeal"
    )
    assert "waits for a decision" in table.handle(ev.Next()).reason
    burned = ok(table, ev.Burn())
    assert [e.code for e in burned.effects if isinstance(e, AlarmCleared)] == ["held_card"]
    assert table.state.pending == []
    assert settled(stand_and_let_the_dealer_bust(table)) == [(1, "main", "win", 1000)]
    assert (table.state.dealt, table.state.discarded) == (6, 1)  # 5 on the layout, 1 burned


def test_a_card_while_the_shoe_reports_a_fault_is_held_not_a_hit():
    table = spot_1_on_12()
    ok(table, ev.ShoeEvent("fault", "JAM feed roller"))
    step = ok(table, card("10H"))
    (alarm,) = alarms(step)
    assert alarm.code == "held_card"
    assert alarm.text == "The shoe sent a card during its fault (JAM feed roller): it was not dealt"
    assert spot_1_cards(table) == ["10D", "2C"]
    assert "was sent during a shoe fault" in table.handle(ev.Assign(1)).reason
    ok(table, ev.ShoeEvent("fault_cleared"))
    ok(table, ev.Burn())
    assert settled(stand_and_let_the_dealer_bust(table)) == [(1, "main", "win", 1000)]
    assert table.state.seen[parse_card("10H")] == 1  # the shoe says it came out: counted


def test_a_held_card_is_named_once_no_hole_card_is_face_down():
    table = Table(load_game("pa-standard"), TableSettings(spots=1))
    (alarm,) = alarms(ok(table, ev.OutOfOrderCard(parse_card("QS"), 0x30, 0x31)))
    assert alarm.text == "The shoe sent card QS out of order (frame 30 after 31): it was not dealt"
    assert table.snapshot()["prompt"]["text"].startswith("Card QS waits for a decision")
    ok(table, ev.Burn())
    ok(table, ev.ShoeEvent("offline", "no message for 3001 ms"))
    (alarm,) = alarms(ok(table, card("4C")))
    assert alarm.text == "The shoe sent card 4C while it was offline: it was not dealt"


def test_a_camera_table_refuses_an_out_of_order_shoe_card_like_any_shoe_card():
    table = spot_1_on_12("camera")
    step = table.handle(again("10D"))
    assert not step.accepted and "this table deals from the camera" in step.reason


def test_another_message_out_of_order_is_an_alarm_and_changes_nothing_else():
    table = spot_1_on_12()
    before = table.snapshot()
    (alarm,) = alarms(ok(table, ev.ShoeEvent("out_of_order", "CLEAR again, frame 0A after 0E")))
    assert alarm.code == "shoe_out_of_order"
    assert alarm.text == (
        "The shoe sent a message out of order (CLEAR again, frame 0A after 0E): it was ignored"
    )
    after = table.snapshot()
    assert {k: v for k, v in after.items() if k != "alarms"} == {
        k: v for k, v in before.items() if k != "alarms"
    }
    ok(table, ev.Next())
    ok(table, card("10C"))
    cleared = ok(table, ev.EndRound())  # a round alarm: over with the round
    assert "shoe_out_of_order" in [e.code for e in cleared.effects if isinstance(e, AlarmCleared)]


def test_a_held_card_survives_a_checkpoint_and_an_older_checkpoint_still_decodes():
    table = spot_1_on_12()
    ok(table, again("10D"))
    data = checkpoint.encode(table.state)
    assert data["state"]["pending_held"] == ["sent again out of order"]
    restored = checkpoint.restore(table.rules, table.settings, json.loads(json.dumps(data)))
    assert restored.state == table.state
    old = {**data, "state": {k: v for k, v in data["state"].items() if k != "pending_held"}}
    before_26 = checkpoint.restore(table.rules, table.settings, old)
    assert before_26.state.pending_held == []
    assert "is a foreign card" in before_26.handle(ev.Assign(1)).reason  # its old words
    ok(before_26, ev.Burn())
    assert before_26.state.pending == before_26.state.pending_held == []
    ok(before_26, again("7D", 0x02))
    assert "sent again out of order" in before_26.handle(ev.Assign(1)).reason


# -- the shoe line into the table: a replayed frame ---------------------------------------------


def raw_frame(seq: int, word: str, payload: str = "") -> bytes:
    body = f"{seq:02X},{word},{payload}".encode("ascii")
    return b"$" + body + b"*%04X\r\n" % binascii.crc_hqx(body, 0xFFFF)


@pytest.fixture
def line():
    """A pseudo-terminal: ``(write, reader events queue)``, the shoe reader on its far end."""
    master, slave = os.openpty()
    tty.setraw(slave)
    events: queue.Queue[ev.Event] = queue.Queue()
    reader = ShoeReader(os.ttyname(slave), events.put, heartbeat_timeout_ms=60_000)
    yield (lambda data: os.write(master, data)), events
    reader.close()
    os.close(master)
    os.close(slave)


def feed_until(table: Table, events: queue.Queue, done) -> list[Step]:
    """Hand the reader's events to the table until ``done(event)``; return the steps."""
    steps, end = [], time.monotonic() + WAIT_S
    while True:
        try:
            event = events.get(timeout=max(0.0, end - time.monotonic()))
        except queue.Empty:
            raise AssertionError(
                f"the reader never sent the event awaited; steps {steps}"
            ) from None
        steps.append(table.handle(event))
        if done(event):
            return steps


def test_a_replayed_10_of_diamonds_on_the_shoe_line_neither_hits_spot_1_nor_takes_its_bet(line):
    """The audit's replay, through a real pty and the real reader: frame 01 (10♦) sent again
    after frame 04. It was dealt as a hit (22: spot 1 lost $10); now it is held."""
    write, events = line
    table = Table(load_game("pa-standard"), TableSettings(spots=1))
    ok(table, ev.BetSensor(1, "main", True))
    ok(table, ev.Lockout())
    write(raw_frame(0, "VER", "ACME 2.3"))
    for seq, text in enumerate(("10D", "7S", "2C", "9H"), start=1):
        write(raw_frame(seq, "CARD", text))
    feed_until(table, events, lambda e: isinstance(e, ev.CardDrawn) and str(e.card) == "9H")
    assert spot_1_cards(table) == ["10D", "2C"] and table.state.phase is Phase.PLAYERS
    write(raw_frame(1, "CARD", "10D"))  # the replay
    write(raw_frame(4, "HB"))
    steps = feed_until(table, events, lambda e: not isinstance(e, ev.ShoeEvent))
    assert spot_1_cards(table) == ["10D", "2C"], "the replayed 10D was dealt as a hit"
    assert [a.code for s in steps for a in alarms(s)] == ["held_card"]
    ok(table, ev.Burn())
    ok(table, ev.Next())
    write(raw_frame(5, "CARD", "10C"))
    steps = feed_until(table, events, lambda e: isinstance(e, ev.CardDrawn))
    assert settled(steps) == [(1, "main", "win", 1000)]
