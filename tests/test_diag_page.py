"""The technicians' diagnostics page in a real headless Chromium, on a running demo.

One ``table-controller demo`` (module fixture: the real broker, jackpot controller, shoe
simulator and table daemon, the autopilot dealing seven spots) plays while the tests look at
``/diag`` the way a technician would, at a laptop's size (1280x800) and a table display's
(800x480): the history charts drawn from the history the daemon wrote during the run (the
page's own ``/api/history`` answer is the reference, never numbers written here), the GPIO
picture with every pin of the status on it, recall by page and by number with the cards'
suits, the light test and Clear faults. Screenshots of each view go to
``tests/screenshots/diag-<view>-<width>x<height>.png`` for a person to review. When the demo
stops it must exit 0 with no refusal: nothing the page did was refused by the table.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import browser
import pytest

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
expect.set_options(timeout=15_000)

chromium = browser.chromium  # the session's browser (tests/browser.py)

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "tests" / "screenshots"
SIZES = [(1280, 800), (800, 480)]
SIZE_IDS = ["laptop-1280x800", "table-800x480"]
DEVELOPER_WORDS = re.compile(
    r"twenty one plus three|twenty_one|blazing_7s|lucky_ladies|ez_bust|\bTrue\b|\bFalse\b"
    r"|\btrue\b|\bfalse\b|\bNone\b|\bnull\b|undefined|NaN|t=\d+ ms|_"
)
"""What a technician must not read on the page (the log panel, which quotes the log, aside)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Demo:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.out = (work / "stage.out").open("w+")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller",
                "demo",
                "--dir",
                str(work / "run"),
                "--seed",
                "5",
                "--side-bets",
                "0.8",
                "--web-port",
                str(self.port),
            ],
            stdout=self.out,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            start_new_session=True,
        )
        self.password = ""
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def output(self) -> str:
        if not self.out.closed:
            self.out.flush()
        return (self.work / "stage.out").read_text()

    def get(self, path: str) -> dict:
        with self.opener.open(self.url + path, timeout=10) as answer:
            return json.loads(answer.read())

    def login(self) -> None:
        body = json.dumps({"name": "tech 9", "password": self.password}).encode()
        request = urllib.request.Request(
            self.url + "/login",
            body,
            {"Content-Type": "application/json", "Origin": self.url},
        )
        self.opener.open(request, timeout=30).close()

    def wait_for_history(self, points: int, rounds: int, timeout: float = 240.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the demo stopped:\n{self.output()[-3000:]}")
            if not self.password and (self.work / "run" / "secrets" / "web").exists():
                self.password = (self.work / "run" / "secrets" / "web").read_text().strip()
            try:
                if self.password:
                    self.login()
                    history = self.get("/api/history?hours=1")
                    settled = len(re.findall(r"^round +\d+ \|", self.output(), re.M))
                    if len(history["t"]) >= points and settled >= rounds:
                        return history
            except (urllib.error.URLError, OSError, KeyError):
                pass
            time.sleep(1.0)
        raise AssertionError(f"no history after {timeout} s:\n{self.output()[-3000:]}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.out.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = Demo(tmp_path_factory.mktemp("diag-demo"))
    try:
        d.wait_for_history(points=4, rounds=12)
        yield d
    finally:
        code = d.stop()
    output = d.output()
    assert "REFUSED" not in output, output[-3000:]  # nothing the page asked was refused
    assert code == 0, output[-3000:]


@pytest.fixture(params=SIZES, ids=SIZE_IDS)
def page(request, chromium, demo):
    width, height = request.param
    context = chromium.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    problems: list[str] = []
    context.on(
        "page",
        lambda p: p.on("pageerror", lambda exc: problems.append(f"script error: {exc}")),
    )
    answer = context.request.post(
        demo.url + "/login", data={"name": "tech 9", "password": demo.password}
    )
    assert answer.ok, answer.text()
    tab = context.new_page()
    tab.size = f"{width}x{height}"  # for the screenshots' names
    try:
        yield tab
    finally:
        context.close()
    assert not problems, problems


def shot(page, view: str, section: str | None = None) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"diag-{view}-{page.size}.png"
    if section:
        page.locator(section).screenshot(path=str(path))
    else:
        page.screenshot(path=str(path), full_page=True)
    return path


def open_diag(page, demo, *, hold_history: bool = False):
    """Open /diag and return the first history the daemon answered. ``hold_history``: every
    later /api/history request the page makes (after each round, every minute) is answered
    with that same first answer, so the charts can be compared with it while the demo plays
    on and the daemon keeps writing samples."""
    if hold_history:
        first: list = []

        def answer(route):
            if not first:
                first.append(route.fetch())  # the daemon's own answer, once
            route.fulfill(response=first[0])

        page.route("**/api/history*", answer)
    with page.expect_response(lambda r: "/api/history" in r.url) as info:
        page.goto(demo.url + "/diag")
    expect(page.get_by_test_id("live")).to_have_text("live")
    return info.value.json()


@functools.cache
def _edge(demo) -> float:
    """The basic-strategy edge of the demo's profile, computed here (not the daemon's): once
    for the module, not at each of the page's sizes (seconds of CPU each)."""
    from controller.config import load_table_config
    from controller.rules.ev import basic_strategy_edge

    return basic_strategy_edge(load_table_config(demo.work / "run" / "table.toml").rules)


def shown(values: list) -> int:
    return sum(v is not None for v in values)


def test_every_chart_draws_from_the_history_the_daemon_kept(page, demo):
    history = open_diag(page, demo, hold_history=True)
    assert len(history["t"]) >= 4 and history["samples_written"] >= 4
    assert history["problem"] is None
    # the API's lines are real and non-empty: the link was up, rounds were dealt, side bets
    # were played and compared with a par sheet
    assert shown(history["link_up"]) and set(history["link_up"]) <= {0, 1, None}
    assert shown(history["rounds_per_hour"]) and max(v or 0 for v in history["rounds_per_hour"]) > 0
    assert shown(history["cards_per_hour"])
    assert history["pools"] and all(shown(p["cents"]) for p in history["pools"].values())
    played = {bet: line for bet, line in history["bets"].items() if line["wagers"]}
    assert {"lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s"} <= set(played)
    for line in played.values():
        assert shown(line["hit"]) and shown(line["hit_lo"]) and line["par_hit"] is not None

    expected = {
        "link": history["link_up"],
        "shoe": history["shoe_errors"],
        "pace": history["cards_per_hour"],
        "pools": next(iter(history["pools"].values()))["cents"],
    }
    for bet, line in played.items():
        expected[f"hit-{bet}"] = line["hit"]
        expected[f"hold-{bet}"] = line["hold"]
    for chart, values in expected.items():
        figure = page.get_by_test_id(f"chart-{chart}")
        expect(figure.locator("canvas")).to_have_count(1)  # uPlot drew it
        expect(figure).to_have_attribute("data-points", str(shown(values)))
        assert shown(values) > 0 or chart == "shoe", chart
        box = figure.bounding_box()
        assert box and box["width"] > 200 and box["height"] > 150, (chart, box)
    # the figure's captions and the table use the rule cards' names
    expect(page.get_by_test_id("chart-hit-twenty_one_plus_three_xtreme")).to_contain_text(
        "21+3 Xtreme: hit frequency seen, par 9.68%"
    )
    rows = page.get_by_test_id("bets-table").locator("tbody tr")
    expect(rows.filter(has_text="Blazing 7's")).to_have_count(1)
    expect(rows.filter(has_text="Lucky Ladies")).to_contain_text("within the band")
    # the page fits the width: no sideways scrolling at either size
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.get_by_test_id("history-hours").select_option("24")
    expect(page.get_by_test_id("history-what")).to_contain_text("points")
    shot(page, "history", "#history-panel")


def test_the_main_games_hold_is_drawn_beside_the_basic_strategy_edge_as_a_reference(page, demo):
    """Issue 31 item 4: the main game's hold seen (house net over initial wagers, from the
    journal) beside the basic-strategy edge of the demo's own profile, with its band,
    labelled as a reference and never coloured as a problem; until the daemon has computed
    the edge (off the request path) the page says it is being computed."""
    edge = _edge(demo)
    words = (
        f"Main game hold seen, basic-strategy edge {edge * 100:.2f}% "
        "(a reference, not an alarm: players do not all play basic strategy)"
    )

    # while the daemon computes it: the page says so, with what was seen drawn meanwhile
    def computing(route):
        answer = route.fetch()
        data = answer.json()
        empty = [None] * len(data["t"])
        data["main"].update(edge=None, edge_state="computing", hold_lo=empty, hold_hi=empty)
        data["main"]["band"] = None
        route.fulfill(response=answer, json=data)

    page.route("**/api/history*", computing)
    page.goto(demo.url + "/diag")
    figure = page.get_by_test_id("chart-hold-main")
    expect(figure.locator("figcaption")).to_contain_text(
        "basic-strategy edge: reference being computed"
    )
    expect(page.get_by_test_id("bet-row-main")).to_contain_text("reference being computed")
    page.unroute("**/api/history*")

    deadline = time.monotonic() + 180
    while demo.get("/api/history?hours=1")["main"]["edge_state"] == "computing":
        assert time.monotonic() < deadline, "the basic-strategy edge was never computed"
        time.sleep(1.0)
    history = open_diag(page, demo, hold_history=True)
    main = history["main"]
    assert main["edge_state"] == "ready" and main["edge"] == pytest.approx(edge, rel=1e-12)
    assert main["wagers"] > 0 and main["stakes"] > 0 and shown(main["hold"]) > 0
    assert shown(main["hold_lo"]) and shown(main["hold_hi"])  # the band
    expect(figure.locator("canvas")).to_have_count(1)  # uPlot drew it
    expect(figure).to_have_attribute("data-points", str(shown(main["hold"])))
    assert float(figure.get_attribute("data-reference")) == pytest.approx(edge, rel=1e-12)
    expect(figure.locator("figcaption")).to_contain_text(words)
    expect(figure.locator(".u-legend")).to_contain_text("basic-strategy edge")
    row = page.get_by_test_id("bet-row-main")
    expect(row).to_contain_text(f"basic-strategy edge {edge * 100:.2f}%")
    expect(row).to_contain_text("a reference, not an alarm: players do not all play basic strategy")
    assert float(row.get_attribute("data-reference")) == pytest.approx(edge, rel=1e-12)
    expect(row.locator(".bad, .ok, .warn")).to_have_count(0)  # never coloured as a problem
    shot(page, "main-hold", "#chart-hold-main")


def test_the_gpio_picture_has_every_pin_live_on_the_table_and_console(page, demo):
    open_diag(page, demo)
    gpio = demo.get("/api/status")["health"]["gpio"]
    spots = {int(name.split(".")[1]) for name in gpio["inputs"] if name.startswith("sensors.")}
    assert spots == set(range(1, 8))  # the demo's seven spots, from the status, not assumed
    picture = page.get_by_test_id("gpio-svg")
    expect(picture).to_be_visible()
    for spot in spots:
        expect(page.get_by_test_id(f"gpio-spot-{spot}")).to_have_count(1)
    for name in list(gpio["inputs"]) + list(gpio["lights"]):
        expect(page.locator(f'[data-testid="gpio-{name}"]')).to_have_count(1)
    circles = page.locator('[data-testid="gpio-spot-1"] .g-circle')
    assert circles.count() == sum(1 for n in gpio["inputs"] if n.startswith("sensors.1."))
    # live: chips come and go on the circles as the autopilot plays
    expect(picture.locator('[data-testid^="gpio-sensors."][data-state="on"]').first).to_be_attached(
        timeout=30_000
    )
    # the console in words, not config keys
    expect(page.get_by_test_id("gpio-console.end_round")).to_contain_text("End round")
    expect(page.get_by_test_id("gpio-console.lockout")).to_contain_text("No more bets")
    title = page.locator('[data-testid="gpio-sensors.1.main"] title').text_content()
    assert re.fullmatch(
        r"Spot 1 main wager: chips (seen|not seen|.*) \(pin .+, \d+ changes.*", title
    )
    shot(page, "gpio", "#gpio-panel")


def test_recall_pages_back_with_local_times_and_card_faces(page, demo):
    open_diag(page, demo)
    rounds = page.get_by_test_id("recall-round")
    expect(rounds).to_have_count(10)
    page.get_by_test_id("recall-older").click()
    what = page.get_by_test_id("recall-what")
    expect(what).to_have_text(re.compile(r"\(the 10 rounds before round \d+\)"))
    oldest = int(re.search(r"before round (\d+)", what.inner_text()).group(1))
    expect(rounds.first).to_have_attribute("data-round", str(oldest - 1))
    shown_now = page.eval_on_selector_all(
        '[data-testid="recall-round"]', "els => els.map(e => Number(e.dataset.round))"
    )
    assert shown_now == list(range(oldest - 1, max(0, oldest - 11), -1)), shown_now
    first = rounds.first
    when = first.get_by_test_id("round-when").inner_text()
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", when), when
    assert "t=" not in when
    first.locator("summary").first.click()
    hands = first.get_by_test_id("recall-hand")
    expect(hands.first).to_contain_text("Dealer")
    faces = first.locator(".recall-hands .card").all_inner_texts()
    assert faces and all(
        re.fullmatch(r"(10|[2-9AJQK])[\u2660\u2665\u2666\u2663]", f) for f in faces
    )
    expect(first.get_by_test_id("download-script")).to_have_attribute(
        "href", f"/api/rounds/{oldest - 1}/script"
    )
    shot(page, "recall", "#recall-panel")
    page.get_by_test_id("search-round").fill("2")
    page.get_by_test_id("search-go").click()
    expect(page.get_by_test_id("recall-what")).to_have_text("(round 2)")
    expect(rounds).to_have_count(1)


def test_the_page_speaks_plain_words_and_offers_only_what_can_be_done(page, demo):
    open_diag(page, demo)
    clear = page.get_by_test_id("clear-faults")
    expect(clear).to_be_disabled()  # no fault latched: nothing to clear
    expect(page.get_by_test_id("tile-shoe")).to_contain_text("shuffling")
    page.get_by_test_id("light-test").click()
    message = page.get_by_test_id("light-test-msg")
    expect(message).to_have_text(re.compile(r"light test (queued|started)"))
    expect(page.get_by_test_id("light-test-state")).to_have_attribute(
        "data-state", re.compile("pending|running|done")
    )
    shot(page, "light-test", "#gpio-panel")
    for section in (
        "#glance-panel",
        "#faults-panel",
        "#alarms-panel",
        "#live-table-panel",
        "#history-panel",
        "#recall-panel",
        "#gpio-panel",
    ):
        text = page.locator(section).inner_text()
        found = DEVELOPER_WORDS.findall(text.replace("Must-Hit-By", ""))
        assert not found, (section, found, text[:2000])
    shot(page, "whole")
