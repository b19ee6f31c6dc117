"""Which alarm stops the game on the dealer display, in which words, and for how long; what the
display shows of a round that is over (issue 30 item 1). Pure: real rounds of a real
:class:`~controller.table.machine.Table` (tests/test_web_views.py's ``Floor``) give the status
the runtime would publish; :mod:`controller.web.stops` and :func:`dealer_view` read it, and
:class:`~controller.runtime.recall.SettledRound` is driven with the clock in the test's hand.
"""

from __future__ import annotations

import pytest
from test_web_views import Floor

from controller.runtime.recall import NOTICE_MS, SettledRound
from controller.table import events as ev
from controller.web.stops import ORDER, aged_text, duration_words, stop_now
from controller.web.views import dealer_view


def two_spots(*, blazing: bool = False) -> Floor:
    floor = Floor(spots=3)
    floor.bets(1, 2)
    if blazing:
        floor.do(ev.BetSensor(1, "blazing_7s", True))
    floor.do(ev.Lockout())
    return floor


def stop(floor: Floor, **extra) -> dict | None:
    settled = [i for i in floor.feed if i.get("kind") == "settled"]
    return stop_now(floor.status(**extra), settled)


def test_no_alarm_no_stop_the_tables_prompt_is_the_headline():
    floor = two_spots()
    floor.deal("9H 10S 7C 7D 10H 8S")
    assert stop(floor) is None
    view = floor.view()
    assert view["prompt"]["text"] == "Spot 1 to act on 16: hit, stand, double, surrender"
    assert not view["prompt"].get("stop")


def test_the_shoe_offline_stops_the_deal_and_ages_from_detection():
    floor = two_spots()
    floor.deal("9H")
    raised = floor.t + 25
    floor.do(ev.ShoeEvent("offline", "no message from the shoe for 3001 ms"))
    found = stop(floor, t=raised + 72_000)
    assert found["code"] == "shoe_offline"
    assert found["text"] == "Stop: the shoe is offline. Deal no card; call a technician"
    assert found["since"] == "for 1 min 15 s"  # 72 s since the alarm, 3 s before it
    view = floor.view(t=raised + 72_000)
    assert view["prompt"]["stop"] and view["prompt"]["text"] == found["text"]
    assert view["alarm_lines"] == []  # said once, in the headline
    floor.do(ev.ShoeEvent("online"))
    assert stop(floor) is None
    assert floor.view()["prompt"]["text"] == "Deal spot 2 its first card"


def test_a_shoe_fault_names_its_detail():
    floor = two_spots()
    floor.do(ev.ShoeEvent("fault", "card jam"))
    assert stop(floor)["text"] == (
        "Stop: the shoe reports a fault (card jam). Deal no card; call a technician"
    )
    floor.do(ev.ShoeEvent("fault_cleared"))
    assert stop(floor) is None


def test_a_card_waiting_for_a_decision_stops_until_burned():
    floor = Floor(spots=3)
    floor.deal("QH")
    found = stop(floor)
    assert found["code"] == "card_waiting"
    assert found["text"] == (
        "Stop: card QH waits for a decision. Burn it, assign it, or call a misdeal (supervisor key)"
    )
    view = floor.view()
    assert view["prompt"]["text"].startswith("Stop: card Q\u2665 waits")  # suit symbols
    # the band keeps the why of it: the alarm's own words
    assert [a["code"] for a in view["alarm_lines"]] == ["unexpected_card"]
    floor.do(ev.Burn())
    assert stop(floor) is None


def test_chips_lifted_after_no_more_bets_stop_the_game_and_at_settlement_say_what_then():
    floor = two_spots()
    floor.do(ev.BetSensor(2, "main", False))
    floor.do(ev.BetSensor(1, "main", False))
    found = stop(floor)
    assert found["text"] == (
        "Stop: chips were taken from spot 1 main wager and spot 2 main wager after no more "
        "bets; the wagers stand. Call the supervisor"
    )
    assert found["then"] is False
    floor.do(ev.BetSensor(1, "main", True))
    assert "spot 2 main wager after" in stop(floor)["text"]
    floor.deal("9H 10S 7C 7D 10H 8S")
    floor.do(ev.Next())
    floor.do(ev.Next())
    floor.deal("9C")
    view = floor.view()
    assert view["prompt"]["stop"] and view["prompt"]["then"] == (
        "Round 1 settled: pay and collect, then press end round"
    )


def test_the_link_down_while_a_jackpot_waits_for_its_award_stops_the_game():
    floor = two_spots(blazing=True)
    floor.deal("7D 9C 7D 7D 8H 10C")  # spot 1: 7D 7D with the dealer's 7D up: 100% of meter
    assert stop(floor) is None
    floor.do(ev.JackpotLink(False))
    found = stop(floor)
    assert found["code"] == "progressive_link" and found["spot"] == 1
    assert found["text"] == (
        "Stop: the jackpot link is down and spot 1's Blazing 7's jackpot waits for its award. "
        "Leave the cards on the layout; call the supervisor"
    )
    floor.do(ev.JackpotLink(True))
    assert stop(floor) is None


def test_the_link_down_without_a_jackpot_waiting_is_no_stop():
    floor = two_spots(blazing=True)
    floor.do(ev.JackpotLink(False))
    floor.deal("9H 10S 7C")
    assert stop(floor) is None


def test_a_fault_between_rounds_stops_during_a_round_says_finish_and_then_the_prompt():
    floor = Floor(spots=3)
    floor.do(ev.TableFault("camera", "no frames for 30 s"))
    assert stop(floor)["text"] == (
        "Stop: table fault, the camera is lost (no frames). No new round; call a technician"
    )
    floor.do(ev.TableFault("camera", active=False))
    assert stop(floor)["text"] == (
        "Stop: the camera fault is over but still latched. No new round: turn the supervisor "
        "key to clear it"
    )
    floor.do(ev.SupervisorKey(True))
    floor.do(ev.SupervisorKey(False))
    assert stop(floor) is None
    floor.bets(1)
    floor.do(ev.Lockout())
    floor.deal("9H 7C 7D 10C")
    floor.do(ev.TableFault("gpio", "expander spot3 not answering"))
    view = floor.view()
    assert view["prompt"]["text"].startswith("Table fault: the sensors and buttons are lost")
    assert view["prompt"]["then"] == "Spot 1 to act on 16: hit, stand, double, surrender"
    floor.do(ev.TableFault("gpio", active=False))
    assert stop(floor) is None  # over: the round goes on; the band says it is latched
    assert [a["code"] for a in floor.view()["alarm_lines"]] == ["fault_gpio"]


def test_the_journal_that_cannot_be_written_comes_first():
    floor = two_spots()
    floor.do(ev.ShoeEvent("offline"))
    found = stop(floor, journal_fault="disk I/O error")
    assert found["text"] == (
        "Stop: the table cannot record the game (disk I/O error). Deal no card; call a technician"
    )


@pytest.mark.parametrize(
    "first, second",
    [
        ("shoe_offline", "card_waiting"),
        ("card_waiting", "chips_lifted"),
        ("chips_lifted", "table_fault"),
    ],
)
def test_the_more_urgent_stop_wins(first, second):
    assert ORDER.index(first) < ORDER.index(second)
    floor = two_spots()
    floor.deal("9H 10S 7C 7D 10H 8S")
    floor.do(ev.TableFault("gpio", "lost"))
    floor.do(ev.BetSensor(2, "main", False))
    floor.do(ev.ShoeEvent("offline"))
    assert stop(floor)["code"] == "shoe_offline"
    floor.do(ev.ShoeEvent("online"))
    assert stop(floor)["code"] == "chips_lifted"
    floor.do(ev.BetSensor(2, "main", True))
    assert stop(floor)["code"] == "table_fault"


def test_durations_written_at_detection_are_aged():
    assert duration_words(75_000) == "1 min 15 s"
    assert aged_text(
        "Table fault (shoe): no message from the shoe for 3001 ms for 30 s", 0, 45_000
    ) == (
        "Table fault (shoe): no message from the shoe",
        "for 1 min 15 s",
    )
    floor = Floor(spots=3)
    floor.do(ev.ShoeEvent("missed_frames", "frames 88-90"))
    raised = floor.t
    (line,) = floor.view(t=raised + 61_000)["alarm_lines"]
    assert line["since"] == "for 1 min 1 s"


# -- the display's other words -----------------------------------------------------------------


def test_meters_are_offline_while_the_link_is_down():
    floor = Floor(spots=3)
    meters = [{"pool": "blazing_7s", "amount": 2_345_678}]
    assert floor.view(meters=meters)["betting"]["meters"][0]["amount"] == 2_345_678
    floor.do(ev.JackpotLink(False))
    betting = floor.view(meters=meters)["betting"]
    assert betting["meters"] == [
        {"pool": "blazing_7s", "name": "Blazing 7's", "amount": None, "offline": True}
    ]
    assert betting["meters_offline"] is True


def test_refused_progressive_bets_stay_in_the_settlement():
    floor = Floor(spots=3)
    floor.do(ev.JackpotLink(False))
    floor.bets(1, 2)
    for spot in (1, 2):
        floor.do(ev.BetSensor(spot, "blazing_7s", True))
    floor.do(ev.Lockout())
    floor.do(ev.BetSensor(2, "blazing_7s", False))
    floor.deal("9H 10S 7C 7D 10H 8S")
    floor.do(ev.Next())
    floor.do(ev.Next())
    floor.deal("9C")
    rows = {s["spot"]: s["settlement"] for s in floor.view()["layout"] if s["settlement"]}
    assert [(x["what"], x["name"], x["amount"]) for x in rows[1]["lines"]] == [
        ("pay", "Main", 1000),
        ("return", "Blazing 7's", 500),
    ]
    assert [(x["what"], x["name"], x["amount"]) for x in rows[2]["lines"]] == [
        ("pay", "Main", 1000),
        ("returned", "Blazing 7's", None),
    ]
    assert rows[1]["net"] == 1000  # the refused bet is no wager: not in the net


def test_every_message_of_the_last_event_newest_first_and_the_bar_agrees_with_the_headline():
    floor = Floor(spots=3)
    floor.bets(1)
    floor.do(ev.Lockout())
    floor.deal("9H 7D 5S 10C")
    floor.do(ev.Next())
    assert floor.view()["recent"] == [
        "Dealer stands on 17",
        "Dealer turns the hole card: 7\u2666 10\u2663, 17",
        "Spot 1 stands on 14",
    ]
    floor.do(ev.EndRound())
    floor.do(ev.ShoeEvent("cut_card"))
    view = floor.view()
    assert view["prompt"]["text"] == "The cut card is out: shuffle before the next round"
    assert view["phase_words"] == "Shuffle"  # not "Place your bets"


# -- the last settled round, shown again -------------------------------------------------------


def settled(floor: Floor) -> None:
    floor.bets(1)
    floor.do(ev.Lockout())
    floor.deal("9H 7D 5S 10C")
    floor.do(ev.Next())


def test_recall_last_between_rounds_for_its_time_and_a_second_press_closes():
    floor = Floor(spots=3)
    memory = SettledRound(show_ms=30_000)
    status = lambda now: floor.status(t=now, **memory.status(now))  # noqa: E731
    assert "No round was settled" in memory.press(1000, floor.table.snapshot())
    assert floor.view(t=1000, **memory.status(1000))["refused"].startswith("No round was settled")
    assert memory.status(1000 + NOTICE_MS)["recall"] is None
    settled(floor)
    memory.seen(floor.table.snapshot(), [i for i in floor.feed if i["kind"] == "settled"], 10_000)
    assert "between rounds only" in memory.press(11_000, floor.table.snapshot())
    floor.do(ev.EndRound())
    memory.seen(floor.table.snapshot(), [], 12_000)
    assert memory.press(20_000, floor.table.snapshot()) == "recall_last: round 1 shown for 30 s"
    view = dealer_view("BJ-07", status(20_000), list(floor.feed))
    recall = view["recall"]
    assert (recall["round"], recall["ago"], recall["left_s"], recall["why"]) == (
        1,
        "10 s",
        30,
        "button",
    )
    assert recall["dealer"]["total"] == "17"
    (row,) = [s["settlement"] for s in recall["layout"] if s["settlement"]]
    assert [(x["what"], x["name"]) for x in row["lines"]] == [("take", "Main")]
    assert view["prompt"]["text"] == "Place your bets: round 2"  # the headline stays live
    assert dealer_view("BJ-07", status(50_000), list(floor.feed))["recall"] is None
    memory.press(60_000, floor.table.snapshot())
    assert memory.press(61_000, floor.table.snapshot()) == "recall_last: the live table again"
    assert memory.status(61_000)["recall"] is None


def test_the_settlement_held_after_end_round_until_no_more_bets():
    floor = Floor(spots=3)
    memory = SettledRound(show_ms=30_000, hold_ms=20_000)
    settled(floor)
    memory.seen(floor.table.snapshot(), [i for i in floor.feed if i["kind"] == "settled"], 5000)
    floor.do(ev.EndRound())
    memory.ended(6000)
    memory.seen(floor.table.snapshot(), [], 6000)
    view = dealer_view("BJ-07", floor.status(t=7000, **memory.status(7000)), list(floor.feed))
    assert view["recall"]["why"] == "end_round" and view["recall"]["left_s"] == 19
    floor.bets(2)
    floor.do(ev.Lockout())  # no more bets: the live table
    memory.seen(floor.table.snapshot(), [], 8000)
    assert memory.status(8000)["recall"] is None
