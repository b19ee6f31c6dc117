"""The dealer display read from a metre away (issue 30 item 1), in real headless Chromium at
the table's 800x480 and a laptop's 1280x800, on the real table loop and web server
(tests/dealer_floor.py's ``Floor``).

- Every visible text, in every phase of a full seven-spot round with side bets, splits, an
  EZ Bust window, a stop in the headline, alarms, the settlement, the recalled round and a
  stale screen: at least 14 px, at least 4.5:1 against what is actually behind it (7:1 for
  the headline), never cut short (no "Lucky L…"). Measured from computed styles
  (tests/dealer_checks.py); the judgement is the test's, in WCAG 2's formulas.
- A 7-card hand with a 10 beside a 5 on a full table, and four split hands of 10s: every
  card on the screen, inside its spot, and no card covering another's rank and suit (the
  "10" is never read "105"). Screenshots of each to test-artifacts/screenshots/.

Nothing waits a fixed time: each check waits for the page to show the state it checks.
"""

from __future__ import annotations

from typing import Any

import browser
import pytest
from dealer_checks import card_problems, legibility_problems
from test_dealer_display import (
    FIRST,
    HOLE,
    PLAY,
    SECOND,
    SIZES,
    TABLE,
    UP,
    Floor,
    bets,
    check_fits,
)

from controller.games import load_game
from controller.runtime.recall import RecallLast
from controller.table import TableSettings
from controller.table import events as ev

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

chromium = browser.chromium
screenshot = browser.screenshot


def open_pages(chromium: Any, floor: Floor) -> tuple[dict[str, Any], list[Any]]:
    pages, contexts = {}, []
    for name, (width, height) in SIZES.items():
        context = chromium.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(browser.TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        page.goto(floor.url + "/dealer")
        expect(page.get_by_test_id("table-id")).to_have_text(TABLE)
        pages[name] = page
    return pages, contexts


@pytest.fixture
def table(tmp_path, chromium):
    """A seven-spot PA table and the dealer display open at both sizes."""
    floor = Floor(tmp_path)
    pages, contexts = open_pages(chromium, floor)
    try:
        yield floor, pages
    finally:
        for context in contexts:
            context.close()
        floor.close()


def settle(floor: Floor, pages: dict[str, Any], headline: str) -> None:
    """Wait until both pages show ``headline`` (the state the next check is about)."""
    for page in pages.values():
        expect(page.get_by_test_id("next-newest")).to_have_text(headline)


def legible(pages: dict[str, Any], shot: Any, phase: str) -> None:
    """Every visible text at both sizes: 14 px, 4.5:1 (headline 7:1), not cut; the page
    fits the screen; a screenshot of each."""
    for name, page in pages.items():
        problems, checks = legibility_problems(page)
        size = page.viewport_size
        shot(page, f"{phase}-{size['width']}x{size['height']}")
        assert checks, f"{name} at {phase}: no text measured"
        assert not problems, f"{name} ({size['width']}x{size['height']}) at {phase}:\n" + "\n".join(
            problems
        )
        check_fits(page, phase)


def test_every_text_is_14px_and_readable_in_every_phase(table, screenshot):
    floor, pages = table
    floor.meters = [
        {"pool": "blazing_7s", "amount": 2_345_678},
        {"pool": "mystery", "amount": 48_512},
    ]
    bets(floor)
    settle(floor, pages, "Place your bets: round 1")
    for page in pages.values():
        expect(page.get_by_test_id("chips-seen")).to_have_text(
            "Chips on the layout: 7 spots, $240.00"
        )
    legible(pages, screenshot, "1-betting")

    floor.do(ev.Lockout())
    floor.cards(FIRST)
    floor.card(UP)
    floor.cards(SECOND)
    floor.card(HOLE)
    settle(floor, pages, "Dealer shows 6\u2663: take EZ Bust bets, then press next")
    legible(pages, screenshot, "2-ez-bust-offer")

    floor.do(ev.EzBust(2, 500))
    floor.do(ev.Next())
    for what, item in PLAY[:6]:  # spot 1 splits twice: three hands
        floor.card(item) if what == "card" else floor.do(item)
    settle(floor, pages, "Deal spot 1 hand 2 its second card")
    legible(pages, screenshot, "3-split")

    floor.do(ev.ShoeEvent("offline", "no message from the shoe for 3001 ms"))
    floor.do(ev.TableFault("camera", "no frames for 30 s"))
    floor.do(ev.ShoeEvent("missed_frames", "frames 88-90"))
    settle(floor, pages, "Stop: the shoe is offline. Deal no card; call a technician")
    for page in pages.values():
        expect(page.get_by_test_id("alarm")).to_have_count(2)
    legible(pages, screenshot, "4-stop-and-alarms")
    floor.do(ev.ShoeEvent("online"))
    floor.do(ev.TableFault("camera", active=False))
    floor.do(ev.SupervisorKey(True))
    floor.do(ev.SupervisorKey(False))

    for what, item in PLAY[6:]:
        floor.card(item) if what == "card" else floor.do(item)
    settle(floor, pages, "Round 1 settled: pay and collect, then press end round")
    for page in pages.values():
        expect(page.get_by_test_id("settlement")).to_have_count(7)
    legible(pages, screenshot, "5-settlement")

    floor.do(ev.EndRound())
    floor.runtime.submit(RecallLast())
    for page in pages.values():
        expect(page.get_by_test_id("recall")).to_be_visible()
        expect(page.get_by_test_id("settlement")).to_have_count(7)
    legible(pages, screenshot, "6-recalled")


def hand_cards(page: Any, spot: int, hand: int = 0) -> list[str]:
    cards = page.get_by_test_id(f"spot-{spot}").get_by_test_id("hand").nth(hand).locator(".card")
    return [cards.nth(i).get_attribute("data-card") for i in range(cards.count())]


def readable_cards(pages: dict[str, Any], shot: Any, step: str) -> list[dict[str, Any]]:
    """Every card at both sizes inside its spot and on the screen, its index uncovered."""
    hands = []
    for name, page in pages.items():
        size = page.viewport_size
        shot(page, f"{step}-{size['width']}x{size['height']}")
        problems, measured = card_problems(page)
        assert not problems, f"{name} at {step}:\n" + "\n".join(problems)
        check_fits(page, step)
        hands += measured
    return hands


def test_a_seven_card_hand_on_a_full_table_keeps_every_card_readable(table, screenshot):
    floor, pages = table
    for spot in range(1, 8):
        floor.do(ev.BetSensor(spot, "main", True))
    for spot in (1, 3, 5, 7):
        for circle in ("lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s"):
            floor.do(ev.BetSensor(spot, circle, True))
    floor.do(ev.Lockout())
    floor.cards("9H 8C 10S AS 9C 5S 6H 7C 7H 9D 10H AH 8S 10D 10D 10C")
    for _ in range(3):  # spots 1 to 3 stand
        floor.do(ev.Next())
    seven = ["AS", "AH", "AD", "2C", "10S", "5C", "AC"]
    floor.cards(" ".join(seven[2:]))  # spot 4 hits five times: 21 in seven cards
    settle(floor, pages, "Spot 5 to act on 17: hit, stand, double, surrender")
    for page in pages.values():
        assert "10C" not in page.content()  # the hole card: face down, no value, in no face
        assert hand_cards(page, 4) == seven
        expect(page.get_by_test_id("spot-4").get_by_test_id("hand")).to_have_attribute(
            "data-total", "21"
        )
    hands = readable_cards(pages, screenshot, "seven-cards")
    four = [h for h in hands if h["spot"] == "spot-4"]
    assert len(four) == 2 and all(len(h["cards"]) == 7 for h in four)
    for hand in four:  # the 10 and the 5 beside it: the 5's card starts right of the "10"
        ten, five = hand["cards"][4], hand["cards"][5]
        assert (ten["rank"], five["rank"]) == ("10", "5")
        assert five["box"][0] >= ten["glyphs"][0][2], (ten, five)
    while floor.oracle.state.phase.value == "players":
        floor.do(ev.Next())
    settle(floor, pages, "Round 1 settled: pay and collect, then press end round")
    readable_cards(pages, screenshot, "seven-cards-settled")


DOUBLE_UP = load_game("double-up")
SPLIT_TENS = [
    ("split", ev.Split(0)),
    ("card", "10D"),
    ("split", ev.Split(0)),
    ("card", "10C"),
    ("split", ev.Split(0)),  # four hands: double-up splits to four (rule 12)
    ("card", "5C"),
    ("stand", ev.Next()),
    ("card", "7D"),
    ("stand", ev.Next()),
    ("card", "AS"),
    ("stand", ev.Next()),
    ("card", "9S"),
]


@pytest.fixture
def double_up(tmp_path, chromium):
    """A seven-spot Double Up table (four split hands a spot) at both sizes."""
    floor = Floor(tmp_path, DOUBLE_UP, TableSettings(spots=7, main_minimum=1000))
    pages, contexts = open_pages(chromium, floor)
    try:
        yield floor, pages
    finally:
        for context in contexts:
            context.close()
        floor.close()


def test_four_split_hands_of_tens_stay_on_screen_and_readable(double_up, screenshot):
    floor, pages = double_up
    for spot in range(1, 8):
        floor.do(ev.BetSensor(spot, "main", True))
        floor.do(ev.BetSensor(spot, "bonus_16", True))
    floor.do(ev.Lockout())
    floor.cards("9H 8C 10S 7D 9C 5S 6H 6C 7H 9D 10H 10C 8S 9S 4D 10C")
    floor.do(ev.Next())  # spot 1 stands on 16
    floor.do(ev.Next())  # spot 2 stands on 17
    for what, item in SPLIT_TENS:
        floor.card(item) if what == "card" else floor.do(item)
    settle(floor, pages, "Spot 3 hand 4 to act on 19: hit, stand, double, Double Up")
    for page in pages.values():
        expect(page.get_by_test_id("spot-3").get_by_test_id("hand")).to_have_count(4)
        assert [hand_cards(page, 3, i) for i in range(4)] == [
            ["10S", "5C"],
            ["10C", "7D"],
            ["10D", "AS"],
            ["10H", "9S"],
        ]
    hands = readable_cards(pages, screenshot, "four-split-hands")
    three = [h for h in hands if h["spot"] == "spot-3"]
    assert len(three) == 8, "four hands at both sizes, hand 1 included"
    assert "10\u2660" in pages["table"].get_by_test_id("spot-3").inner_text().replace("\n", "")
    while floor.oracle.state.phase.value == "players":
        floor.do(ev.Next())
    settle(floor, pages, "Round 1 settled: pay and collect, then press end round")
    readable_cards(pages, screenshot, "four-split-hands-settled")
    for page in pages.values():
        lines = page.get_by_test_id("spot-3").get_by_test_id("pay-line")
        expect(lines).to_have_count(5)  # four hands and the 16 Bonus
