"""The dealer display in real headless Chromium, at a table's 800x480 and a laptop's 1280x800.

A seven-spot table (PA standard) runs as the daemon runs it, minus the devices: the real
journal (SQLite, WAL, synchronous=FULL) under the real table loop
(:class:`~controller.runtime.loop.TableRuntime`, in a thread), served by the real web server
(:class:`~controller.web.server.WebServer`) on a free loopback port (tests/dealer_floor.py).
The events the drivers would send (chips on a sensor, a card out of the shoe, a console
button, the link watch's up and down) are submitted to the loop as the daemon's drivers
submit them. A pure
:class:`~controller.table.machine.Table` fed the same events is the oracle: what the rules
allow the hand in action is found by trying each action on a copy of it, never by reading a
prompt.

The last test runs the whole table instead (tests/table_rig.py: the daemon, a real Mosquitto,
the jackpot controller, the simulated shoe) and stops the broker for a real link outage.

Both screen sizes watch every step of the scripted rounds: the headline names the hand in
action, its total as it is now and exactly the choices the rules allow now; the page never
scrolls and no spot's box cuts its content. Screenshots of each view go to
``tests/screenshots/`` (git-ignored by a ``.gitignore`` the tests write there).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import browser
import pytest
from dealer_floor import (  # noqa: F401 (the other dealer tests import them from here too)
    RULES,
    SCREENSHOTS,
    SETTINGS,
    SIZES,
    SUIT,
    TABLE,
    TIMEOUT_MS,
    Floor,
    shown,
)
from mqtt_broker import broker  # noqa: F401
from table_rig import Rig, free_port
from test_dealer_prompts import expected_headline

from controller.table import events as ev
from controller.table.effects import AlarmCleared

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

chromium = browser.chromium  # the session's headless Chromium (tests/browser.py)


@pytest.fixture
def floor(tmp_path):
    f = Floor(tmp_path)
    try:
        yield f
    finally:
        f.close()


@pytest.fixture
def pages(chromium, floor, request):
    """The dealer display open at both sizes: {"table": page, "laptop": page}."""
    SCREENSHOTS.mkdir(exist_ok=True)
    (SCREENSHOTS / ".gitignore").write_text("*\n")
    problems: list[str] = []
    contexts, out = [], {}
    for name, (width, height) in SIZES.items():
        context = chromium.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc, name=name: problems.append(f"{name}: {exc}"))
        page.goto(floor.url + "/dealer")
        expect(page.get_by_test_id("table-id")).to_have_text(TABLE)
        out[name] = page
    yield out
    for context in contexts:
        context.close()
    assert not problems, problems


def snap(page: Any, test: str, view: str) -> Path:
    name = page.viewport_size
    path = SCREENSHOTS / f"{test}-{view}-{name['width']}x{name['height']}.png"
    page.bring_to_front()
    page.screenshot(path=str(path))
    return path


# -- what every step must show -----------------------------------------------------------------


NO_SCROLL = """() => {
  const root = document.scrollingElement;
  const out = {scroll: root.scrollHeight - innerHeight, hscroll: root.scrollWidth - innerWidth,
               cut: [], outside: []};
  for (const el of document.querySelectorAll('[data-testid^="spot-"], .felt, .headline, .alarms')) {
    if (el.hidden) continue;
    const box = el.getBoundingClientRect();
    if (el.scrollHeight > el.clientHeight + 1) out.cut.push(el.dataset.testid || el.className);
    if (box.bottom > innerHeight + 0.5 || box.right > innerWidth + 0.5 || box.top < -0.5)
      out.outside.push(el.dataset.testid || el.className);
  }
  return out;
}"""


def check_fits(page: Any, where: str) -> None:
    """No vertical (or sideways) scrolling; no spot, felt, headline or alarm band cut off or
    beyond the screen."""
    fit = page.evaluate(NO_SCROLL)
    size = page.viewport_size
    assert fit == {"scroll": 0, "hscroll": 0, "cut": [], "outside": []}, (
        f"{size['width']}x{size['height']} at {where}: {fit}"
    )


DEVELOPER_WORDS = re.compile(
    r"[a-z]_[a-z0-9]|\bcents\b|\b(True|False|None|null|undefined|NaN)\b"
    r"|\b(10|[2-9AJQK])[HDCS]\b|Spot (\d+): Spot \3"
)
"""Words of the code, not of the casino: names with underscores, cents, booleans, cards
without suit symbols, "Spot 3: Spot 3's"."""


def check_step(floor: Floor, pages: dict[str, Any], where: str) -> None:
    """After each event: both pages show the headline of the moment, fit the screen and
    speak casino words."""
    want = expected_headline(floor.oracle)
    if want is None:
        prompt = floor.oracle.snapshot()["prompt"]["text"]
        want = re.sub(r"\b(10|[2-9AJQK])([HDCS])\b", lambda m: m[1] + SUIT[m[2]], prompt)
    for page in pages.values():
        expect(page.get_by_test_id("round")).to_have_text(str(floor.oracle.state.round_number))
        expect(page.get_by_test_id("next-newest")).to_have_text(want)
        check_fits(page, where)
        words = page.inner_text("body")
        assert not DEVELOPER_WORDS.search(words), (where, DEVELOPER_WORDS.search(words))


# -- the scripted round: seven spots, splits, a double after a split, a surrender ----------

SIDE_BETS = {
    1: ["lucky_ladies"],
    3: ["twenty_one_plus_three_xtreme"],
    5: ["blazing_7s"],
    7: ["lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s"],
}
FIRST = "8H 5C AH 10H 9C AS 4D"
UP = "6C"
SECOND = "8S 6D 7C 6S 7H KD 4C"
HOLE = "10S"
PLAY: list[tuple[str, Any]] = [
    # spot 1: 8 8 split, 8+3 doubles to 20, 8 8 again split (three hands), 8+2 hits to 20, 8+10
    ("split", ev.Split(0)),
    ("card", "3C"),
    ("double", ev.Double(0)),
    ("card", "9D"),
    ("card", "8D"),
    ("split", ev.Split(0)),
    ("card", "2C"),
    ("card", "KH"),
    ("stand", ev.Next()),
    ("card", "10C"),
    ("stand", ev.Next()),
    # spot 2: 11 doubles to 21
    ("double", ev.Double(0)),
    ("card", "10S"),
    # spot 3: soft 18 hits to soft 20
    ("card", "2D"),
    ("stand", ev.Next()),
    # spot 4: 16 surrenders
    ("surrender", ev.Surrender(0)),
    # spot 5: 16 hits and breaks
    ("card", "10D"),
    # spot 6: blackjack, paid at once; spot 7: 4 4 split, 4+7 hits to 20, 4+10 stands
    ("split", ev.Split(0)),
    ("card", "7S"),
    ("card", "9H"),
    ("stand", ev.Next()),
    ("card", "10H"),
    ("stand", ev.Next()),
    # the dealer's 16 draws 8H and breaks
    ("card", "8H"),
]


def bets(floor: Floor, pages: dict[str, Any] | None = None) -> None:
    for spot in range(1, 8):
        floor.do(ev.BetSensor(spot, "main", True))
        floor.do(ev.WagerAmount(spot, "main", 1000 + 500 * spot))
        for circle in SIDE_BETS.get(spot, []):
            floor.do(ev.BetSensor(spot, circle, True))
            floor.do(ev.WagerAmount(spot, circle, 500))
        if pages is not None:
            check_step(floor, pages, f"bets at spot {spot}")


def test_a_seven_spot_round_prompts_every_step_and_never_scrolls(floor, pages):
    test = "round"
    floor.meters = [
        {"pool": "blazing_7s", "amount": 2_345_678},
        {"pool": "mystery", "amount": 48_512},
    ]
    check_step(floor, pages, "betting, empty table")
    bets(floor, pages)
    for page in pages.values():
        spot7 = page.get_by_test_id("spot-7")
        expect(spot7.get_by_test_id("chip")).to_have_count(4)
        expect(spot7.locator('[data-circle="blazing_7s"]')).to_have_text("Blazing 7's $5.00")
        expect(spot7.locator('[data-circle="main"]')).to_have_text("Main $45.00")
        expect(page.get_by_test_id("chips-seen")).to_have_text(
            "Chips on the layout: 7 spots, $240.00"
        )
        expect(page.get_by_test_id("limit").first).to_have_text("Main $10.00 to $1,000.00")
        meter = page.locator('[data-testid="meter"][data-pool="blazing_7s"]')
        expect(meter.locator(".name")).to_have_text("Blazing 7's")
        expect(meter.locator("strong")).to_have_text("$23,456.78")
        snap(page, test, "1-betting")

    floor.do(ev.Lockout())
    check_step(floor, pages, "no more bets")
    for i, card in enumerate(FIRST.split()):
        floor.card(card)
        check_step(floor, pages, f"first card {i + 1}")
        if i == 2:
            for page in pages.values():
                snap(page, test, "2-dealing")
    floor.card(UP)
    for i, card in enumerate(SECOND.split()):
        floor.card(card)
        check_step(floor, pages, f"second card {i + 1}")
    floor.card(HOLE)
    check_step(floor, pages, "hole card")
    for page in pages.values():  # dealer shows 6: the EZ Bust offer; the hole card face down
        expect(page.get_by_test_id("phase")).to_have_text("EZ Bust offer")
        expect(page.get_by_test_id("dealer-cards").locator('[data-card="back"]')).to_have_count(1)
        expect(page.get_by_test_id("dealer-total")).to_have_text(f"Showing {shown(UP)}")
        assert HOLE not in page.content() and shown(HOLE) not in page.content()
        expect(page.get_by_test_id("spot-6").get_by_test_id("hand")).to_have_attribute(
            "data-total", "Blackjack"
        )
        snap(page, test, "3-ez-bust-offer")
    floor.do(ev.EzBust(2, 500))
    check_step(floor, pages, "EZ Bust at spot 2")
    floor.do(ev.Next())
    check_step(floor, pages, "EZ Bust closed")
    headlines = []
    for what, item in PLAY:
        floor.card(item) if what == "card" else floor.do(item)
        check_step(floor, pages, f"{what} {item}")
        headlines.append(pages["table"].get_by_test_id("next-newest").inner_text())
        rnd = floor.oracle.state.round
        if what == "split" and rnd.in_action[0] == 1 and len(rnd.spots[1].hands) == 3:
            for page in pages.values():
                snap(page, test, "4-player-action-split")
    # the prompts the dealer saw for spot 1's hands and spot 3, in order: totals as they were
    assert "Spot 1 hand 1 to act on 11: hit, stand, double" in headlines
    assert "Spot 1 hand 2 to act on 16: hit, stand, double, split" in headlines
    assert "Spot 1 hand 2 to act on 10: hit, stand, double" in headlines  # split: 3 hands max
    assert "Spot 1 hand 2 to act on 20: hit, stand" in headlines  # after a hit: no double
    assert "Spot 3 to act on soft 20: hit, stand" in headlines
    assert floor.oracle.state.phase.value == "settled"
    for page in pages.values():
        expect(page.get_by_test_id("dealer-total")).to_have_text("BUST 24")
        expect(page.get_by_test_id("spot-1").get_by_test_id("hand")).to_have_count(3)
        # one settlement row per spot: its lines and its net; never the pay list twice
        expect(page.get_by_test_id("settlement")).to_have_count(7)
        expect(page.get_by_test_id("spot-4").get_by_test_id("net")).to_have_text("-$15.00")
        expect(page.get_by_test_id("spot-6").get_by_test_id("net")).to_have_text("+$60.00")
        expect(page.get_by_test_id("spot-2").get_by_test_id("pay-line")).to_have_count(3)
        # what the last event said: not the pay prompts again (the rows say them)
        expect(page.get_by_test_id("next-older")).to_have_text("Dealer breaks with 24")
        snap(page, test, "5-settlement")
    floor.do(ev.EndRound())
    check_step(floor, pages, "end round")


def test_insurance_offer_and_the_hole_card_stay_right_at_both_sizes(floor, pages):
    for spot in (2, 4, 6):
        floor.do(ev.BetSensor(spot, "main", True))
    floor.do(ev.Lockout())
    deal = "10H 9C 8D AS 10C 9D 7H KH"  # the dealer shows an ace; KH is the hole card
    for card in deal.split():
        floor.card(card)
        check_step(floor, pages, f"card {card}")
    for page in pages.values():
        expect(page.get_by_test_id("phase")).to_have_text("Insurance")
        expect(page.get_by_test_id("next-newest")).to_have_text(
            "Dealer shows an ace: take insurance, then press next"
        )
        assert "KH" not in page.content() and shown("KH") not in page.content()
        snap(page, "insurance", "offer")
    floor.do(ev.Insurance(4, 500))
    check_step(floor, pages, "insurance at spot 4")
    for page in pages.values():
        expect(page.get_by_test_id("next-older")).to_have_text("Spot 4 insures $5.00")
        expect(page.get_by_test_id("spot-4").locator('[data-circle="insurance"]')).to_have_text(
            "Insurance $5.00"
        )
    floor.do(ev.Next())  # the peek: the dealer has blackjack; insurance pays, mains lose
    check_step(floor, pages, "dealer blackjack")
    for page in pages.values():
        expect(page.get_by_test_id("dealer-total")).to_have_text("Blackjack")
        expect(page.get_by_test_id("spot-4").get_by_test_id("net")).to_have_text("even")
        snap(page, "insurance", "settled")


# -- alarms beside the game --------------------------------------------------------------------


def alarm_lines(page: Any) -> list[tuple[str, str]]:
    lines = page.get_by_test_id("alarm")
    return [
        (lines.nth(i).get_attribute("data-code"), lines.nth(i).get_attribute("data-count"))
        for i in range(lines.count())
    ]


def test_an_outages_alarms_merge_and_clear_when_the_link_returns(floor, pages):
    floor.do(ev.JackpotLink(False))
    for spot in range(1, 8):
        floor.do(ev.BetSensor(spot, "main", True))
        if spot % 2:
            floor.do(ev.BetSensor(spot, "blazing_7s", True))
    floor.do(ev.Lockout())  # four Blazing 7's bets refused: one line, not four
    floor.cards("9H 9C 9D 9S 8H 8C 8D 6H")
    floor.cards("10H 10C 10D 10S 7H 7C 7D 10S")
    floor.do(ev.BetSensor(3, "lucky_ladies", True))  # a late bet: its own line
    for page in pages.values():
        expect(page.get_by_test_id("jackpot-down")).to_be_visible()
        expect(page.get_by_test_id("alarm")).to_have_count(3)
        assert alarm_lines(page) == [
            ("late_bet", "1"),
            ("progressive_refused", "4"),
            ("jackpot_link_down", "1"),
        ]
        merged = page.locator('[data-code="progressive_refused"]')
        expect(merged).to_contain_text("\u00d74")
        expect(merged).to_contain_text(
            "Blazing 7's bets at spots 1, 3, 5 and 7 not accepted: the jackpot link is down"
        )
        # the refused chips are on the picture, marked: return them
        refused = page.get_by_test_id("spot-5").locator('[data-circle="blazing_7s"]')
        expect(refused).to_have_attribute("data-state", "not-wager")
        # the game stays on screen beside the alarms: the prompt, every spot's cards
        expect(page.get_by_test_id("next-newest")).to_be_in_viewport()
        for spot in range(1, 8):
            expect(page.get_by_test_id(f"spot-{spot}").locator(".card").first).to_be_in_viewport()
        check_fits(page, "the outage")
        snap(page, "alarms", "1-outage")

    step = floor.do(ev.JackpotLink(True))  # the link is back: its alarm clears by itself
    cleared = [e for e in step.effects if isinstance(e, AlarmCleared)]
    assert [(e.code, e.reason) for e in cleared] == [
        ("jackpot_link_down", "the jackpot link is back")
    ]
    for page in pages.values():
        expect(page.get_by_test_id("jackpot-down")).to_be_hidden()
        expect(page.get_by_test_id("alarm")).to_have_count(2)
    for spot in (1, 3, 5, 7):  # the dealer returns the refused chips: those alarms clear
        floor.do(ev.BetSensor(spot, "blazing_7s", False))
        if spot == 3:
            for page in pages.values():
                expect(page.locator('[data-code="progressive_refused"]')).to_contain_text("\u00d72")
    floor.do(ev.BetSensor(3, "lucky_ladies", False))
    for page in pages.values():
        expect(page.get_by_test_id("alarms")).to_be_hidden()
        check_fits(page, "alarms cleared")
        snap(page, "alarms", "2-cleared")
    # the register keeps them, cleared, for the technician; none is shown as open
    register = floor.runtime.status()["snapshot"]["alarms"]
    assert len(register) == 6 and not any(a["active"] for a in register)


def test_many_kinds_of_alarm_never_push_the_game_off_screen(floor, pages):
    for spot in (1, 2, 3):
        floor.do(ev.BetSensor(spot, "main", True))
    floor.do(ev.Lockout())
    floor.cards("9H 9C 9D 6S 10H 10C 10D 10S")
    floor.do(ev.Next())  # EZ Bust closed: spot 1 to act on 19
    floor.do(ev.TableFault("camera", "no frames for 30 s"))
    floor.do(ev.ShoeEvent("door_open"))
    floor.do(ev.ShoeEvent("missed_frames", "frames 88-90"))
    for spot in (4, 5, 6, 7):
        floor.do(ev.BetSensor(spot, "main", True))  # late bets
    floor.do(ev.BetSensor(2, "main", False))  # chips taken from a wager
    for page in pages.values():
        # the chips taken stop the game (issue 30): the headline says so, not the band
        expect(page.get_by_test_id("next-newest")).to_have_text(
            "Stop: chips were taken from spot 2 main wager after no more bets; the wager "
            "stands. Call the supervisor"
        )
        expect(page.get_by_test_id("alarm")).to_have_count(3)
        expect(page.get_by_test_id("alarms-more")).to_have_text(
            "and 1 more kind of alarm: see the diagnostics page"
        )
        expect(page.get_by_test_id("spot-1").locator(".card").first).to_be_in_viewport()
        check_fits(page, "five kinds of alarm")
        snap(page, "alarms", "3-many-kinds")
    floor.do(ev.ShoeEvent("door_closed"))
    floor.do(ev.BetSensor(2, "main", True))
    for page in pages.values():
        # the camera's fault: finish or void the round, and the table's prompt under it
        expect(page.get_by_test_id("next-newest")).to_contain_text("Table fault: the camera")
        expect(page.get_by_test_id("stop-then")).to_have_text(
            "Spot 1 to act on 19: hit, stand, double, surrender"
        )
        expect(page.get_by_test_id("alarms-more")).to_have_count(0)
        expect(page.locator('[data-code="late_bet"]')).to_contain_text("\u00d74")
        expect(page.locator('[data-code="late_bet"]')).to_contain_text(
            "Late bets at spots 4, 5, 6 and 7 after no more bets: they are not wagers"
        )


# -- a real outage: the whole table, a real broker stopped and started -----------------------
#
# The rig (tests/table_rig.py) runs the real daemon with its web pages, a real Mosquitto, the
# jackpot controller and the simulated shoe (two spots). The broker is stopped: the table's
# publisher loses its connection, the link watch tells the table, and the dealer display shows
# one line for the outage and one for what it causes (the Blazing 7's bet refused at no more
# bets), with the game beside them. The broker comes back: the outage's alarm clears by itself,
# on the screen and in the alarm register (cleared, with the reason), without a technician.


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


def link(rig: Rig) -> bool:
    return rig.status()["status"]["jackpot_link"]


def codes(page) -> list[tuple[str | None, str | None]]:
    lines = page.get_by_test_id("alarm")
    return [
        (lines.nth(i).get_attribute("data-code"), lines.nth(i).get_attribute("data-count"))
        for i in range(lines.count())
    ]


def test_a_broker_outage_alarms_once_and_clears_itself_when_the_link_returns(
    rig,
    broker,  # noqa: F811
    chromium,
):
    SCREENSHOTS.mkdir(exist_ok=True)
    (SCREENSHOTS / ".gitignore").write_text("*\n")
    contexts, pages = [], {}
    try:
        for name, (width, height) in SIZES.items():
            context = chromium.new_context(viewport={"width": width, "height": height})
            context.set_default_timeout(20_000)
            contexts.append(context)
            page = context.new_page()
            page.goto(rig.url + "/dealer")
            expect(page.get_by_test_id("table-id")).to_have_text(TABLE)
            pages[name] = page
        rig.wait(lambda a: a["health"]["link"]["connected"], "the link connected")

        broker.stop()  # the outage
        rig.wait(lambda a: not a["status"]["jackpot_link"], "the link seen down", timeout=30)
        rig.bets()  # spot 1 with a Blazing 7's bet: refused at no more bets
        rig.act("press", name="console.lockout")
        for _ in range(6):
            rig.deal()
        for name, page in pages.items():
            expect(page.get_by_test_id("jackpot-down")).to_be_visible()
            expect(page.get_by_test_id("alarm")).to_have_count(2)
            assert codes(page) == [("progressive_refused", "1"), ("jackpot_link_down", "1")]
            expect(page.get_by_test_id("next-newest")).to_be_in_viewport()
            expect(page.get_by_test_id("spot-1").locator(".card").first).to_be_in_viewport()
            expect(page.get_by_test_id("spot-2").locator(".card").first).to_be_in_viewport()
            w, h = SIZES[name]
            page.screenshot(path=str(SCREENSHOTS / f"outage-1-link-down-{w}x{h}.png"))
        rig.stand_both()
        rig.deal()
        rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "settlement")
        rig.act("press", name="console.end_round")
        for page in pages.values():  # the round is over: its refused bet is no alarm now
            expect(page.get_by_test_id("alarm")).to_have_count(1)
            assert codes(page) == [("jackpot_link_down", "1")]

        broker.start()  # the link comes back by itself: so does the display
        answer = rig.wait(lambda a: a["status"]["jackpot_link"], "the link back", timeout=60)
        for name, page in pages.items():
            expect(page.get_by_test_id("alarms")).to_be_hidden()
            expect(page.get_by_test_id("jackpot-down")).to_be_hidden()
            w, h = SIZES[name]
            page.screenshot(path=str(SCREENSHOTS / f"outage-2-link-back-{w}x{h}.png"))
        register = answer["status"]["snapshot"]["alarms"]
        assert [(a["code"], a["active"], a["cleared"]) for a in register] == [
            ("jackpot_link_down", False, "the jackpot link is back"),
            ("progressive_refused", False, "the round is over"),
        ]
    finally:
        for context in contexts:
            context.close()
