"""A real jackpot link outage seen on the dealer display (issue 20), whole table, both sizes.

The rig (tests/table_rig.py) runs the real daemon with its web pages, a real Mosquitto, the
jackpot controller and the simulated shoe. The broker is stopped: the table's publisher loses
its connection, the link watch tells the table, and the dealer display shows one line for the
outage and one per kind of what it causes (the Blazing 7's bet refused at no more bets), with
the game beside them. The broker comes back: the outage's alarm clears by itself, on the
screen and in the table's alarm register (cleared, with the reason), without a technician.
Screenshots go to ``tests/screenshots/``.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path

import browser
import pytest
from mqtt_broker import broker  # noqa: F401
from table_rig import TABLE, Rig, free_port

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

chromium = browser.chromium
SIZES = {"table": (800, 480), "laptop": (1280, 800)}
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    port = free_port()
    r = Rig(tmp_path, broker, web=f'bind = "127.0.0.1"\nport = {port}')
    r.url = f"http://127.0.0.1:{port}"
    try:
        r.start_table()
        deadline = time.monotonic() + 30  # a loaded machine starts the web pages late
        while True:
            try:
                urllib.request.urlopen(r.url + "/healthz", timeout=1).close()
                break
            except urllib.error.HTTPError:
                break  # it answers
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
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
