"""The diagnostics page leads with what is wrong (issue 30), in a real Chromium, against the
real daemon (tests/table_rig.py: broker, jackpot controller, ``shoe-sim`` on a real
pseudo-terminal, ``table-controller run``).

The table's zone is America/New_York and the browser's Asia/Tokyo: every time the page
shows must be the table's, in one format (``2026-11-26 13:09:36 EST``). What a test
compares with is what the server gave (``/api/status``, ``/api/log``, ``/healthz``), never a
later state; a test waits for conditions, never for a number of seconds. Screenshots go to
``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from datetime import datetime
from zoneinfo import ZoneInfo

import browser
import pytest
from mqtt_broker import broker  # noqa: F401
from table_rig import TABLE, Rig, free_port

from controller.web.auth import hash_password

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
expect.set_options(timeout=15_000)

chromium = browser.chromium  # the session's browser (tests/browser.py)
screenshot = browser.screenshot

USER = "tech 30"
PASSWORD = "felt-green-30"
PASSWORD_HASH = hash_password(PASSWORD, n=2**10)
ZONE = "America/New_York"
SIZES = [(1280, 800), (1920, 1080)]
ONE_FORMAT = re.compile(r"(?<!\d)\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (EST|EDT)\b")
"""The page's one date and time format, in the table's zone (New York)."""
OTHER_SHAPES = {
    "a time of day": re.compile(r"\d{1,2}:\d\d"),
    "a date": re.compile(r"\d{4}-\d\d-\d\d|\d{1,2}/\d{1,2}/\d{2,4}|\d{1,2}\.\d{1,2}\.\d{4}"),
    "a 12-hour clock": re.compile(r"\b[AP]M\b"),
    "a month's name": re.compile(
        r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.? \d"
    ),
    "another zone": re.compile(r"\b(UTC|GMT|JST)\b"),
}


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    port = free_port()
    r = Rig(
        tmp_path,
        broker,
        web=f'bind = "127.0.0.1"\nport = {port}\npassword_hash = "{PASSWORD_HASH}"',
        extra=f'[journal]\ntimezone = "{ZONE}"',
    )
    r.url = f"http://127.0.0.1:{port}"
    try:
        r.start_table()
        r.wait_web(r.url)
        yield r
    finally:
        r.stop()


@pytest.fixture
def contexts(chromium):
    """Browser contexts in Tokyo (not the table's zone), closed after the test; a script
    error on any of their pages fails the test."""
    made, problems = [], []

    def make(width: int = 1280, height: int = 800):
        context = chromium.new_context(
            viewport={"width": width, "height": height}, timezone_id="Asia/Tokyo"
        )
        context.set_default_timeout(15_000)
        context.on("page", lambda p: p.on("pageerror", lambda e: problems.append(str(e))))
        made.append(context)
        return context

    yield make
    for context in made:
        context.close()
    assert not problems, problems


def diag(context, rig):
    answer = context.request.post(rig.url + "/login", data={"name": USER, "password": PASSWORD})
    assert answer.ok, answer.text()
    page = context.new_page()
    page.goto(rig.url + "/diag")
    expect(page.get_by_test_id("table-id")).to_have_text(TABLE)
    expect(page.get_by_test_id("live")).to_have_text("live")
    return page


def healthz(rig) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(rig.url + "/healthz", timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_healthz(rig, code: int, timeout: float = 40.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status, body = healthz(rig)
        if status == code:
            return body
        assert time.monotonic() < deadline, f"/healthz stayed {status}: {body}"
        time.sleep(0.1)


def local(utc_ms: int) -> str:
    """``utc_ms`` as the page must write it: the table's zone, named."""
    return datetime.fromtimestamp(utc_ms / 1000, ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S %Z")


def alarms_of(answer: dict) -> list[dict]:
    return answer["status"]["snapshot"]["alarms"]


def silence_the_shoe(rig, ms: int) -> None:
    """The shoe sends nothing, heartbeats included, for ``ms``: past its heartbeat timeout
    (3 s) the table calls it offline; then it talks again by itself (or at once after
    :func:`end_the_silence`)."""
    rig.shoe.stdin.write(f"silence {ms}\n")
    rig.wait(lambda a: a["status"]["snapshot"]["shoe"]["fault"] == "offline", "the shoe offline")


def end_the_silence(rig) -> None:
    """The silent shoe talks again now: its silence ends 1 ms from now (shoe-sim's ``silence
    1``), once the test has seen what it came for, not after a guess at how long that takes."""
    rig.shoe.stdin.write("silence 1\n")


def test_the_open_alarm_is_on_the_first_screen_and_the_cleared_ones_folded_below(
    rig, contexts, screenshot
):
    """One table brought to the state, then looked at from each size's browser (the same
    state: the two sizes need not each set it up)."""
    rig.act("input", name="sensors.1.main", active=True)
    rig.act("wager", spot=1, circle="main", amount=2500)
    rig.act("press", name="console.lockout")
    for _ in range(4):  # chips on spot 2 after no more bets, then off again: a late bet each,
        rig.act("input", name="sensors.2.main", active=True)  # cleared once they are off
        rig.act("input", name="sensors.2.main", active=False)
    rig.wait(lambda a: sum(not x["active"] for x in alarms_of(a)) >= 4, "four cleared alarms")
    silence_the_shoe(rig, 600_000)  # now an alarm that stops play: open, the newest

    for width, height in SIZES:
        context = contexts(width, height)
        page = diag(context, rig)
        given = context.request.get(rig.url + "/api/status").json()
        open_now = [a for a in alarms_of(given) if a["active"]]
        cleared = [a for a in alarms_of(given) if not a["active"]]
        [offline] = [a for a in open_now if a["code"] == "shoe_offline"]
        assert len(cleared) >= 4

        first = page.get_by_test_id("alarms").get_by_test_id("alarm").first
        expect(first).to_have_attribute("data-alarm-id", str(offline["id"]))  # newest first
        expect(first).to_contain_text("The shoe is offline")
        expect(first).to_contain_text("STOPS PLAY")
        # its time of day, as the server gave it, in the table's zone, and its age
        expect(first.get_by_test_id("alarm-when")).to_have_text(
            f"raised {local(offline['utc_ms'])}"
        )
        expect(first).to_contain_text(re.compile(r"\(\d+ (s|min \d+ s) ago\)"))
        # inside the first screen, without scrolling, while the cleared ones exist
        assert page.evaluate("window.scrollY") == 0
        box = first.bounding_box()
        assert box and box["y"] >= 0 and box["y"] + box["height"] <= height, box
        expect(page.get_by_test_id("cleared-what")).to_contain_text(
            f"{len(cleared)} cleared alarms"
        )
        expect(page.get_by_test_id("cleared-alarms")).to_be_hidden()  # folded
        expect(page.get_by_test_id("alarm-count")).to_have_text(str(len(open_now)))
        assert offline["blocking"] and offline["utc_ms"]  # as the server gave it
        browser.SCREENSHOTS.mkdir(parents=True, exist_ok=True)  # what the technician sees first
        page.screenshot(path=str(browser.SCREENSHOTS / f"diag-first-screen-{width}x{height}.png"))
        screenshot(page, f"1-first-screen-{width}x{height}")

        page.get_by_test_id("cleared-what").click()  # unfolded: each with when it ended
        cleared_items = page.get_by_test_id("cleared-alarms").get_by_test_id("alarm")
        expect(cleared_items).to_have_count(len(cleared))
        expect(cleared_items.first).to_contain_text("Cleared by itself: the chips were taken off")
        newest = max(cleared, key=lambda a: (a["utc_ms"], a["id"]))
        expect(cleared_items.first).to_have_attribute("data-alarm-id", str(newest["id"]))
        expect(cleared_items.first).to_contain_text(f"at {local(newest['cleared_utc_ms'])}")
        # the sections are one click away from anywhere
        page.get_by_test_id("nav").get_by_role("link", name="Recall").click()
        expect(page.locator("#recall-panel")).to_be_in_viewport()
        screenshot(page, f"2-cleared-unfolded-{width}x{height}")


def test_healthz_fails_while_the_shoe_is_offline_and_the_summary_says_what_is_wrong(
    rig, contexts, screenshot
):
    context = contexts()
    page = diag(context, rig)
    assert wait_healthz(rig, 200) == {"ok": True, "problems": []}
    screenshot(page, "1-healthy")

    silence_the_shoe(rig, 600_000)  # until the checks below are done (end_the_silence)
    answer = wait_healthz(rig, 503)  # it answered 200 with the shoe offline (issue 30)
    assert not answer["ok"]
    assert any(p.startswith("The shoe is offline") for p in answer["problems"]), answer
    assert any("deal no card until it is back online" in p for p in answer["problems"]), answer
    # the page says the same, in words, with since when
    summary = page.get_by_test_id("summary")
    expect(summary).to_have_attribute("data-state", "bad")
    given = context.request.get(rig.url + "/api/status").json()["summary"]
    assert not given["ok"] and given["problems"]
    n = len(given["problems"])
    expect(page.get_by_test_id("summary-head")).to_have_text(
        f"Not healthy: {n} problem{'s' if n > 1 else ''} now"
    )
    items = page.get_by_test_id("summary-list")
    for problem in given["problems"]:
        expect(items).to_contain_text(problem["text"])
    shoe = next(p for p in given["problems"] if p["kind"] == "shoe")
    expect(items).to_contain_text(f"since {local(shoe['since_utc_ms'])}, for ")
    # the shoe's tile from its state now: down, in one sentence, not "connected yes"
    tile = page.get_by_test_id("tile-shoe")
    expect(tile).to_have_attribute("data-state", "bad")
    expect(tile).to_contain_text("OFFLINE: the port is open but the shoe is silent")
    expect(tile).not_to_contain_text("connected")
    screenshot(page, "2-shoe-offline")

    # it talks again: /healthz is 200, the tile is no longer down; the blip is this hour's
    end_the_silence(rig)
    assert wait_healthz(rig, 200, timeout=60) == {"ok": True, "problems": []}
    expect(summary).to_have_attribute("data-state", "warn")
    expect(page.get_by_test_id("summary-head")).to_have_text("Healthy, but look at:")
    expect(tile).to_have_attribute("data-state", "warn")
    expect(tile).to_contain_text(re.compile(r"errors, last hour\s*heartbeat timeout 1"))
    expect(items).to_contain_text("Shoe: errors in the last hour: heartbeat timeout 1")
    expect(page.get_by_test_id("cleared-what")).to_contain_text("1 cleared alarm")
    screenshot(page, "3-shoe-back")


def test_the_login_page_names_the_table(rig, contexts, screenshot):
    page = contexts().new_page()
    page.goto(rig.url + "/diag")
    expect(page).to_have_url(rig.url + "/login")
    expect(page.get_by_test_id("login-table")).to_have_text(TABLE)
    expect(page).to_have_title(re.compile(re.escape(TABLE)))
    expect(page.get_by_test_id("login-where")).to_have_text("game pa-standard, property hcm")
    screenshot(page, "login")


def test_the_log_filter_keeps_warnings_apart_from_the_prompts(rig, contexts, screenshot):
    context = contexts()
    wrong = context.request.post(rig.url + "/login", data={"name": USER, "password": "nope-123"})
    assert wrong.status == 401  # a warning in the log
    rig.bets()
    rig.play_round()  # prompts: information
    page = diag(context, rig)
    records = page.get_by_test_id("log-record")
    expect(records.first).to_be_visible()

    def held(level: str) -> dict:
        """Pick ``level``; every later answer for it is the first one (the page polls every
        5 s and the table plays on): the page is checked against what it was given."""
        first: list = []

        def answer(route):
            if not first:
                first.append(route.fetch())
            route.fulfill(response=first[0])

        page.route(lambda url: f"/api/log?level={level}" in url, answer)
        with page.expect_response(lambda r: f"/api/log?level={level}" in r.url) as info:
            page.get_by_test_id("log-level").select_option(level)
        return info.value.json()

    given = held("warning")
    assert given["records"] and given["kept"]["warning"] == len(given["records"])
    expect(records).to_have_count(len(given["records"]))
    for level in records.evaluate_all("els => els.map(e => e.dataset.level)"):
        assert level in ("WARNING", "ERROR", "CRITICAL"), level
    expect(records.filter(has_text="wrong password")).to_have_count(1)
    newest = given["records"][-1]
    expect(records.first).to_contain_text(local(round(newest["t"] * 1000)))
    expect(page.get_by_test_id("log-what")).to_contain_text("warnings and errors")
    expect(page.get_by_test_id("nav-warnings")).to_have_text(str(given["kept"]["warning"]))
    screenshot(page, "1-warnings")

    given = held("info")
    expect(records).to_have_count(len(given["records"]))
    assert {r["level"] for r in given["records"]} == {"INFO"}
    expect(records.filter(has_text="prompt: ").first).to_be_visible()
    expect(records.filter(has_text="wrong password")).to_have_count(0)
    screenshot(page, "2-information")
    answer = context.request.get(rig.url + "/api/log?level=loud")
    assert answer.status == 400 and "level must be one of all, info" in answer.json()["error"]


def test_every_time_on_the_page_has_one_format_in_the_tables_zone(rig, contexts, screenshot):
    """One table brought to the state, then read from each size's browser."""
    context = contexts()
    context.request.post(rig.url + "/login", data={"name": USER, "password": "nope-123"})
    rig.bets()
    rig.play_round()  # a round to recall, points on the charts, prompts in the log
    rig.deal()  # a card while betting: an alarm open
    rig.wait(lambda a: any(x["active"] for x in alarms_of(a)), "an alarm")
    login = context.request.post(rig.url + "/login", data={"name": USER, "password": PASSWORD})
    assert login.ok
    deadline = time.monotonic() + 120  # a sample a minute, and one soon after each round
    while len(context.request.get(rig.url + "/api/history?hours=1").json()["t"]) < 2:
        assert time.monotonic() < deadline, "no history"
        time.sleep(0.5)
    for width, height in SIZES:
        context = contexts(width, height)
        page = diag(context, rig)  # logged in
        given = context.request.get(rig.url + "/api/status").json()
        [record] = context.request.get(rig.url + "/api/rounds").json()["rounds"]
        newest = max(
            (a for a in alarms_of(given) if a["active"]), key=lambda a: (a["utc_ms"], a["id"])
        )

        # every panel with a time shows it: the alarm, the recall (each action), the log, the
        # audit list, a chart's hover
        alarm = page.get_by_test_id("alarms").get_by_test_id("alarm").first
        expect(alarm).to_have_attribute("data-alarm-id", str(newest["id"]))
        expect(alarm.get_by_test_id("alarm-when")).to_have_text(f"raised {local(newest['utc_ms'])}")
        round_1 = page.locator('[data-testid="recall-round"][data-round="1"]')
        expect(round_1.get_by_test_id("round-when")).to_contain_text(
            f"settled {local(record['settled_utc_ms'])}"
        )
        round_1.locator("summary").first.click()
        steps = round_1.get_by_test_id("recall-step")
        expect(steps).to_have_count(len(record["steps"]))
        # each action with its time, its spot and hand, and its card as a face
        dealt = [(s["who"], s["cards"][0]) for s in record["steps"] if s["what"] == "dealt"]
        assert dealt[:6] == [("Spot 1", "10H"), ("Spot 2", "9C"), ("Dealer", "6D"),
                             ("Spot 1", "7S"), ("Spot 2", "8H"), ("Dealer", "10C")]  # fmt: skip
        ten = steps.filter(has=page.locator('[data-card="10H"]'))
        expect(ten).to_contain_text("Spot 1")
        expect(ten.locator(".card")).to_have_text("10\u2665")
        first_step = record["steps"][0]
        expect(steps.first).to_contain_text(local(first_step["utc_ms"]))
        expect(page.get_by_test_id("log-record").first).to_be_visible()
        expect(page.get_by_test_id("audit").locator("tbody tr").first).to_contain_text(" EST")
        chart = page.get_by_test_id("chart-pace")
        expect(chart.locator("canvas")).to_have_count(1)
        chart.scroll_into_view_if_needed()
        over = chart.locator(".u-over")
        box = over.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2)
        hover = chart.locator(".u-legend tr").first.locator("td")  # the time's cell
        expect(hover).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d E[SD]T$"))
        screenshot(page, f"page-{width}x{height}")

        # the whole visible text: each time in the one format; no other shape of date or time
        # (the log's messages are the log's own words, quoted: left out)
        text = page.evaluate("document.body.innerText")
        for quoted in page.locator(".log .msg").all_inner_texts():
            text = text.replace(quoted, " ")
        assert len(ONE_FORMAT.findall(text)) > len(record["steps"]), "the times shown"
        rest = ONE_FORMAT.sub(" ", text)
        for what, shape in OTHER_SHAPES.items():
            found = [rest[max(0, m.start() - 40) : m.end() + 40] for m in shape.finditer(rest)]
            assert not found, f"{what} not in the one format: {found[:5]}"
