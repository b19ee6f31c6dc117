"""The dealer display puts the eye where it matters (issue 30 item 1), in real headless
Chromium at 800x480 and 1280x800, on the real table loop and web server
(tests/dealer_floor.py's ``Floor``) and, last, on the whole running daemon
(tests/table_rig.py).

- Each blocking alarm, played into: the shoe offline, a shoe fault, chips lifted after no
  more bets, a card waiting for a decision, the jackpot link down while a progressive
  jackpot waits for its award, a fault latched (between rounds, during a round, over but
  still latched). The headline says stop and what to do, in red; the table's own prompt is
  the headline again once the cause is over.
- A stale screen is covered whole (no headline to follow); the meters say OFFLINE while the
  link is down; a refused progressive bet stays in the settlement (``Return $5.00 Blazing
  7's``); every message of the last event is kept, newest first; alarms age; the side bets'
  full names; the last settled round shown again from the console.

Nothing waits a fixed time: every check waits for the page to show what it checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import browser
import pytest
from dealer_checks import legibility_problems
from dealer_floor import SIZES, TABLE, Floor, shown
from mqtt_broker import broker  # noqa: F401
from table_rig import Rig, free_port

from controller.runtime.recall import RecallLast
from controller.table import events as ev
from controller.web.server import WebServer
from controller.web.views import card_words

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

chromium = browser.chromium
screenshot = browser.screenshot


def open_pages(chromium: Any, url: str, timeout_ms: int = browser.TIMEOUT_MS):
    pages, contexts = {}, []
    for name, (width, height) in SIZES.items():
        context = chromium.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(timeout_ms)
        contexts.append(context)
        page = context.new_page()
        page.goto(url + "/dealer")
        expect(page.get_by_test_id("table-id")).to_have_text(TABLE)
        pages[name] = page
    return pages, contexts


def floor_pages(chromium: Any, tmp_path: Any, **kwargs: Any):
    floor = Floor(tmp_path, **kwargs)
    pages, contexts = open_pages(chromium, floor.url)
    return floor, pages, contexts


@pytest.fixture
def table(tmp_path, chromium):
    floor, pages, contexts = floor_pages(chromium, tmp_path)
    try:
        yield floor, pages
    finally:
        for context in contexts:
            context.close()
        floor.close()


def prompt_now(floor: Floor) -> str:
    """The table's prompt of the moment, as the display writes it (the oracle's)."""
    return card_words(floor.oracle.snapshot()["prompt"]["text"])


def headline_is(pages: dict[str, Any], text: str, *, stop: bool) -> None:
    for page in pages.values():
        newest = page.get_by_test_id("next-newest")
        expect(newest).to_have_text(text)
        expect(newest).to_have_attribute("data-stop", "yes" if stop else "no")
        expect(page.get_by_test_id("next")).to_have_class("next stop" if stop else "next")


# -- each blocking alarm takes the headline, and gives it back ---------------------------------


def deal_two_spots(floor: Floor) -> None:
    floor.do(ev.BetSensor(1, "main", True))
    floor.do(ev.BetSensor(2, "main", True))
    floor.do(ev.Lockout())
    floor.cards("9H 10S")  # spot 1, spot 2: the dealer's up card is next


def players_turn(floor: Floor) -> None:
    deal_two_spots(floor)
    floor.cards("7C 7D 10H 8S")  # the dealer shows 7; spot 1 to act on 16


def shoe_offline(floor: Floor) -> tuple[str, Callable[[], None]]:
    deal_two_spots(floor)
    floor.do(ev.ShoeEvent("offline", "no message from the shoe for 3001 ms"))
    return "Stop: the shoe is offline. Deal no card; call a technician", lambda: floor.do(
        ev.ShoeEvent("online")
    )


def shoe_fault(floor: Floor) -> tuple[str, Callable[[], None]]:
    deal_two_spots(floor)
    floor.do(ev.ShoeEvent("fault", "card jam"))
    return "Stop: the shoe reports a fault (card jam). Deal no card; call a technician", (
        lambda: floor.do(ev.ShoeEvent("fault_cleared"))
    )


def chips_lifted(floor: Floor) -> tuple[str, Callable[[], None]]:
    players_turn(floor)
    floor.do(ev.BetSensor(2, "main", False))
    return (
        "Stop: chips were taken from spot 2 main wager after no more bets; the wager stands. "
        "Call the supervisor",
        lambda: floor.do(ev.BetSensor(2, "main", True)),
    )


def card_waiting(floor: Floor) -> tuple[str, Callable[[], None]]:
    floor.card("QH")  # between rounds: no card is expected
    return (
        "Stop: card Q\u2665 waits for a decision. Burn it, assign it, or call a misdeal "
        "(supervisor key)",
        lambda: floor.do(ev.Burn()),
    )


def progressive_link(floor: Floor) -> tuple[str, Callable[[], None]]:
    floor.do(ev.BetSensor(1, "main", True))
    floor.do(ev.BetSensor(1, "blazing_7s", True))
    floor.do(ev.Lockout())
    floor.cards("7D 7D 7D 10C")  # three suited 7s: 100% of the Blazing 7's meter
    floor.do(ev.JackpotLink(False))
    return (
        "Stop: the jackpot link is down and spot 1's Blazing 7's jackpot waits for its award. "
        "Leave the cards on the layout; call the supervisor",
        lambda: floor.do(ev.JackpotLink(True)),
    )


def fault_between_rounds(floor: Floor) -> tuple[str, Callable[[], None]]:
    floor.do(ev.TableFault("camera", "no frames for 30 s"))

    def clear() -> None:
        floor.do(ev.TableFault("camera", active=False))
        floor.do(ev.SupervisorKey(True))
        floor.do(ev.SupervisorKey(False))

    return "Stop: table fault, the camera is lost (no frames). No new round; call a technician", (
        clear
    )


STOPS = {
    "shoe offline": shoe_offline,
    "shoe fault": shoe_fault,
    "chips lifted": chips_lifted,
    "card waiting": card_waiting,
    "link down, jackpot waiting": progressive_link,
    "fault latched": fault_between_rounds,
}


@pytest.mark.parametrize("alarm", list(STOPS))
def test_a_blocking_alarm_takes_the_headline_until_its_cause_is_over(table, screenshot, alarm):
    floor, pages = table
    text, clear = STOPS[alarm](floor)
    headline_is(pages, text, stop=True)
    for page in pages.values():
        expect(page.get_by_test_id("stop-since")).to_have_text(
            re.compile(r"This alarm has lasted (\d+ min )?\d+ s")
        )
        size = page.viewport_size
        screenshot(page, f"stop-{size['width']}x{size['height']}")
    clear()
    headline_is(pages, prompt_now(floor), stop=False)
    for page in pages.values():
        expect(page.get_by_test_id("stop-since")).to_have_count(0)


def test_a_fault_during_a_round_says_finish_or_void_then_the_next_step(table, screenshot):
    floor, pages = table
    players_turn(floor)
    floor.do(ev.TableFault("gpio", "expander spot3 not answering"))
    headline_is(
        pages,
        "Table fault: the sensors and buttons are lost (expander spot3 not answering). Finish "
        "or void this round, then deal no other; call a technician",
        stop=True,
    )
    for page in pages.values():
        expect(page.get_by_test_id("stop-then")).to_have_text(
            "Spot 1 to act on 16: hit, stand, double, surrender"
        )
        screenshot(page, f"fault-in-round-{page.viewport_size['width']}")
    floor.do(ev.TableFault("gpio", active=False))
    floor.do(ev.Next())  # spot 1 stands; the fault is over but latched: the round goes on
    headline_is(pages, prompt_now(floor), stop=False)
    for page in pages.values():  # and it is still said, in the band
        expect(page.locator('[data-testid="alarm"][data-code="fault_gpio"]')).to_be_visible()
    floor.do(ev.Next())
    floor.card("9C")  # the dealer's 17 ... stands: settled
    floor.do(ev.EndRound())
    headline_is(
        pages,
        "Stop: the gpio fault is over but still latched. No new round: turn the supervisor key "
        "to clear it",
        stop=True,
    )
    floor.do(ev.SupervisorKey(True))
    floor.do(ev.SupervisorKey(False))
    headline_is(pages, "Place your bets: round 2", stop=False)


# -- what the issue found contradicting itself ------------------------------------------------


def test_a_stale_screen_is_covered_and_uncovered_when_updates_return(table, screenshot):
    floor, pages = table
    players_turn(floor)
    headline_is(pages, "Spot 1 to act on 16: hit, stand, double, surrender", stop=False)
    port = floor.web.address[1]
    floor.web.close()  # the stream is lost: no update comes
    for page in pages.values():
        cover = page.get_by_test_id("stale")
        expect(cover).to_be_visible(timeout=20_000)
        expect(cover).to_contain_text("SCREEN NOT UPDATING")
        expect(page.get_by_test_id("stale-text")).to_have_text(
            re.compile(r"No news from the table for \d+ s\.")
        )
        expect(page.get_by_test_id("next-newest")).to_be_hidden()  # no instruction to follow
        screenshot(page, f"stale-{page.viewport_size['width']}")
    floor.web = WebServer(floor, bind="127.0.0.1", port=port).start()
    for page in pages.values():
        expect(page.get_by_test_id("stale")).to_be_hidden(timeout=20_000)
        expect(page.get_by_test_id("next-newest")).to_be_visible()


def test_the_meters_say_offline_while_the_jackpot_link_is_down(table):
    floor, pages = table
    floor.meters = [
        {"pool": "blazing_7s", "amount": 2_345_678},
        {"pool": "mystery", "amount": 48_512},
    ]
    floor.do(ev.BetSensor(1, "main", True))
    for page in pages.values():
        expect(page.locator('[data-testid="meter"][data-pool="blazing_7s"] strong')).to_have_text(
            "$23,456.78"
        )
    status = floor.status  # the daemon adds why the link is down: the bar's longest words
    floor.status = lambda: {**status(), "jackpot_link_why": "controller_silent"}
    floor.do(ev.JackpotLink(False, why="controller_silent"))
    for page in pages.values():
        meters = page.get_by_test_id("meter")
        expect(meters).to_have_count(2)
        expect(meters.locator("strong")).to_have_text(["OFFLINE", "OFFLINE"])
        assert "$23,456.78" not in page.inner_text("body")
        expect(page.get_by_test_id("jackpot-down")).to_have_text(
            "Jackpot link down: the jackpot controller is not answering. No progressive wagers"
        )
        problems, _ = legibility_problems(page)  # the bar's long words whole too
        assert not problems, problems
    floor.do(ev.JackpotLink(True))
    for page in pages.values():
        expect(page.locator('[data-testid="meter"][data-pool="mystery"] strong')).to_have_text(
            "$485.12"
        )


def test_a_refused_progressive_bet_stays_in_the_settlement(table, screenshot):
    floor, pages = table
    floor.do(ev.JackpotLink(False))
    for spot in (1, 2):
        floor.do(ev.BetSensor(spot, "main", True))
        floor.do(ev.BetSensor(spot, "blazing_7s", True))
    floor.do(ev.Lockout())  # both Blazing 7's bets refused: the link is down
    floor.do(ev.BetSensor(2, "blazing_7s", False))  # spot 2's chips already handed back
    floor.cards("9H 10S 7C 7D 10H 8S")
    floor.do(ev.Next())  # spot 1 stands on 16
    floor.do(ev.Next())  # spot 2 stands on 17
    floor.card("9C")  # the dealer's 15 draws 9: breaks
    headline_is(pages, "Round 1 settled: pay and collect, then press end round", stop=False)
    for page in pages.values():
        one = page.get_by_test_id("spot-1").get_by_test_id("pay-line")
        expect(one).to_have_text(["Pay $10.00 Main", "Return $5.00 Blazing 7's"])
        two = page.get_by_test_id("spot-2").get_by_test_id("pay-line")
        expect(two).to_have_text(["Pay $10.00 Main", "Returned Blazing 7's"])
        screenshot(page, f"returned-{page.viewport_size['width']}")


def test_every_message_of_the_last_event_is_kept_newest_first(table):
    floor, pages = table
    floor.do(ev.BetSensor(1, "main", True))
    floor.do(ev.Lockout())
    floor.cards("9H 7D 5S 10C")  # spot 1: 14 against a 7
    floor.do(ev.Next())  # stands: the dealer turns 17 and stands; settled
    headline_is(pages, "Round 1 settled: pay and collect, then press end round", stop=False)
    for page in pages.values():
        expect(page.get_by_test_id("next-older")).to_have_text(
            [
                "Dealer stands on 17",
                f"Dealer turns the hole card: {shown('7D')} {shown('10C')}, 17",
                "Spot 1 stands on 14",
            ]
        )


def test_alarm_texts_age_instead_of_freezing_at_detection(table):
    floor, pages = table
    floor.do(ev.TableFault("camera", "no frames for 30 s"))
    floor.do(ev.ShoeEvent("missed_frames", "frames 88-90"))
    for page in pages.values():  # the fault's 30 s at detection, then more
        expect(page.get_by_test_id("stop-since")).to_have_text(
            re.compile(r"This alarm has lasted (3[1-9]|[4-9]\d) s")
        )
        line = page.locator('[data-testid="alarm"][data-code="shoe_missed_frames"]')
        expect(line.get_by_test_id("alarm-since")).to_have_text(re.compile(r"\(for [1-9]\d* s\)"))
        assert "for 30 s" not in page.get_by_test_id("next-newest").inner_text()


def test_side_bets_keep_their_full_names_at_both_sizes(table):
    floor, pages = table
    names = {
        "lucky_ladies": "Lucky Ladies",
        "twenty_one_plus_three_xtreme": "21+3 Xtreme",
        "blazing_7s": "Blazing 7's",
    }
    for spot in range(1, 8):
        floor.do(ev.BetSensor(spot, "main", True))
        for circle in names:
            floor.do(ev.BetSensor(spot, circle, True))
    for page in pages.values():
        for circle, name in names.items():
            chip = page.get_by_test_id("spot-4").locator(f'[data-circle="{circle}"] .name')
            expect(chip).to_have_text(name)
            cut = chip.evaluate(  # an ellipsis, or the spot cutting its chips off
                "e => e.scrollWidth > e.clientWidth + 1"
                " || e.closest('.spot').scrollHeight > e.closest('.spot').clientHeight + 1"
            )
            assert not cut, (page.viewport_size, name)


# -- the last settled round, shown again -------------------------------------------------------


def settled_round(floor: Floor) -> None:
    floor.do(ev.BetSensor(1, "main", True))
    floor.do(ev.WagerAmount(1, "main", 2500))
    floor.do(ev.BetSensor(3, "main", True))
    floor.do(ev.Lockout())
    floor.cards("10H 9C 6D 7S 8H 10C")  # 17 and 17 against 16
    for _ in range(3):  # the EZ Bust window closed, both stand
        floor.do(ev.Next())
    floor.card("9S")  # the dealer's 16 draws 9: 25


def test_recall_last_shows_the_last_round_again_for_a_while(tmp_path, chromium, screenshot):
    floor, pages, contexts = floor_pages(chromium, tmp_path, recall_ms=4000)
    try:
        floor.do(ev.BetSensor(2, "main", True))
        floor.do(ev.Lockout())
        floor.runtime.submit(RecallLast())  # during a round: nothing to show, and it says so
        for page in pages.values():
            expect(page.get_by_test_id("refused")).to_have_text(
                "Recall shows the last round between rounds only"
            )
            expect(page.get_by_test_id("recall")).to_be_hidden()
        floor.do(ev.VoidRound(), accepted=False)  # refused without the key
        floor.do(ev.SupervisorKey(True))
        floor.do(ev.VoidRound())
        floor.do(ev.SupervisorKey(False))
        floor.do(ev.EndRound())
        floor.do(ev.BetSensor(2, "main", False))  # the void round's chips handed back
        settled_round(floor)
        headline_is(pages, "Round 2 settled: pay and collect, then press end round", stop=False)
        floor.do(ev.EndRound())
        floor.do(ev.BetSensor(5, "main", True))  # the next round's bets: the live table
        headline_is(pages, "Place your bets: round 3", stop=False)
        floor.runtime.submit(RecallLast())
        for page in pages.values():
            band = page.get_by_test_id("recall")
            expect(band).to_contain_text("Round 2 again, recalled from the console")
            expect(band).to_contain_text("not this round")
            expect(page.get_by_test_id("spot-1").get_by_test_id("pay-line")).to_have_text(
                "Pay $25.00 Main"
            )
            expect(page.get_by_test_id("dealer-total")).to_have_text("BUST 25")
            expect(page.get_by_test_id("next-newest")).to_have_text("Place your bets: round 3")
            screenshot(page, f"recalled-{page.viewport_size['width']}")
        for page in pages.values():  # its time is up: the live table again
            expect(page.get_by_test_id("recall")).to_be_hidden(timeout=15_000)
            expect(page.get_by_test_id("spot-5").get_by_test_id("chip")).to_have_text("Main $10.00")
        journaled = floor.runtime.status()["journal_events"]
        floor.runtime.submit(RecallLast())
        for page in pages.values():
            expect(page.get_by_test_id("recall")).to_be_visible()
        floor.runtime.submit(RecallLast())  # a second press: the live table at once
        for page in pages.values():
            expect(page.get_by_test_id("recall")).to_be_hidden()
        assert floor.runtime.status()["journal_events"] == journaled, "a recall journals nothing"
    finally:
        for context in contexts:
            context.close()
        floor.close()


# -- the running daemon: the shoe goes silent, and RECALL LAST on its pin -----------------------


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    port = free_port()
    r = Rig(tmp_path, broker, web=f'bind = "127.0.0.1"\nport = {port}')
    r.url = f"http://127.0.0.1:{port}"
    try:
        r.start_table()
        r.wait_web(r.url)
        yield r
    finally:
        r.stop()


def test_the_running_daemon_stops_for_a_silent_shoe_and_recalls_on_its_button(
    rig,
    chromium,
    screenshot,
):
    pages, contexts = open_pages(chromium, rig.url, timeout_ms=30_000)
    try:
        rig.wait(lambda a: a["health"]["shoe"]["connected"], "the shoe connected", timeout=30)
        rig.bets()
        rig.act("press", name="console.lockout")
        rig.deal()  # spot 1's first card: spot 2's is next
        # the shoe says nothing past its 3 s heartbeat, until the screens have been seen
        rig.shoe.stdin.write("silence 600000\n")
        rig.wait(lambda a: a["status"]["snapshot"]["shoe"]["fault"] == "offline", "offline", 30)
        headline_is(pages, "Stop: the shoe is offline. Deal no card; call a technician", stop=True)
        for page in pages.values():
            screenshot(page, f"daemon-shoe-offline-{page.viewport_size['width']}")
        rig.shoe.stdin.write("silence 1\n")  # it talks again (its silence ends in 1 ms)
        rig.wait(lambda a: not a["status"]["snapshot"]["shoe"]["fault"], "back online", 30)
        headline_is(pages, "Deal spot 2 its first card", stop=False)
        for _ in range(5):
            rig.deal()
        rig.stand_both()
        rig.deal()
        rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "settlement")
        rig.act("press", name="console.end_round")
        headline_is(pages, "Place your bets: round 2", stop=False)
        answer = rig.control.request("press", name="console.recall_last")  # its mock pin
        assert answer["ok"], answer
        for page in pages.values():
            expect(page.get_by_test_id("recall")).to_contain_text("Round 1 again")
            expect(page.get_by_test_id("spot-1").get_by_test_id("net")).to_be_visible()
            screenshot(page, f"daemon-recalled-{page.viewport_size['width']}")
        assert "recall_last" in rig.log("table")  # logged, not journaled
    finally:
        for context in contexts:
            context.close()
