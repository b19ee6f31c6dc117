"""The jackpot hand pay, confirmed by a supervisor (issue 28 item 2), on the running table.

Real parts only (tests/table_rig.py): Mosquitto, the real ``jackpot-controller`` and its
SQLite ledger, ``shoe-sim`` dealing scripted cards and ``table-controller run``. Spot 1's
first two cards and the dealer's up card are the 7 of diamonds: Blazing 7's "three 7's,
diamonds" pays 100% of the meter. The award is offered at the table (the dealer display says
so), then confirmed

- at the console: the supervisor key on, the dealer display names the award and its amount,
  the JACKPOT PAID button confirms the oldest award waiting: ``confirmed_by`` "supervisor key";
- on ``/diag`` in Chromium, by a supervisor account that types the amount again:
  ``confirmed_by`` "supervisor mlopez". A technician cannot; a wrong amount or an award that
  does not wait is refused and changes nothing; each attempt is in the audit list.

Either way the controller commits the award and its ledger keeps who confirmed it.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import browser
import pytest
from conftest import run_cli
from link_keys import jackpot_config
from mqtt_broker import broker  # noqa: F401
from table_rig import ROUND_CARDS, Rig, free_port
from test_controller_heartbeat import heard
from test_web_server import Http, wait_http

from jackpot.ledger import Ledger

# spot 1 7D, spot 2 9C, dealer 7D (up), spot 1 7D, spot 2 8H, dealer 10C (hole): 17 stands
AWARD_CARDS = ["7D", "9C", "7D", "7D", "8H", "10C", *ROUND_CARDS * 3]
PASSWORDS = {"mlopez": "Pit-Boss-Keys-77", "jsmith": "Felt-and-Chips-2026"}
ROLES = {"mlopez": "supervisor", "jsmith": "technician"}

chromium = browser.chromium  # the fixtures of tests/browser.py
browser_context = browser.browser_context
screenshot = browser.screenshot


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    port = free_port()
    r = Rig(tmp_path, broker, web=f'bind = "127.0.0.1"\nport = {port}', cards=AWARD_CARDS)
    r.http_port = port
    r.url = f"http://127.0.0.1:{port}"
    try:
        yield r
    finally:
        r.stop()


def dealer(rig: Rig) -> dict:
    with urllib.request.urlopen(rig.url + "/api/dealer", timeout=10) as answer:
        return json.loads(answer.read())


def play_the_winning_round(rig: Rig) -> dict:
    """Blazing 7's on spot 1, the round dealt and settled; returns the award offered."""
    rig.start_table()
    rig.wait(heard, "the jackpot controller's heartbeat", timeout=30)
    wait_http(rig.http_port)
    rig.bets()
    rig.act("press", name="console.lockout")
    for _ in range(6):
        rig.deal()
    for _ in range(6):  # close the windows, spot 1 and spot 2 stand; the dealer's 17 stands
        if rig.status()["status"]["snapshot"]["phase"] == "settled":
            break
        rig.act("press", name="console.next")
    answer = rig.wait(lambda a: a["status"]["snapshot"]["awards"], "the award offered", timeout=30)
    (award,) = answer["status"]["snapshot"]["awards"]
    assert (award["spot"], award["pool"], award["line"]) == (1, "blazing_7s", "100% of meter")
    assert award["amount"] >= 1_000_000  # the meter: its $10,000 seed and the contributions
    prompt = dealer(rig)["prompt"]  # the headline until it is confirmed
    assert prompt["code"] == "jackpot_hand_pay", prompt
    assert prompt["text"] == (
        f"Jackpot award {award['award_id']}: spot 1 Blazing 7's {money(award['amount'])} "
        "hand pay waits: call the supervisor (key on, then JACKPOT PAID)"
    )
    return award


def money(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


def ledger_award(rig: Rig, award_id: str) -> tuple[str, str | None]:
    """The award's state in the controller's ledger, and who confirmed it (read-only)."""
    db = sqlite3.connect(f"file:{rig.ledger}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT w.state, a.message FROM awards w LEFT JOIN applied a"
            " ON a.table_id = w.table_id AND a.seq = w.confirm_seq WHERE w.award_id = ?",
            (award_id,),
        ).fetchone()
    finally:
        db.close()
    if row is None:
        return "none", None
    return row[0], (json.loads(row[1])["payload"].get("confirmed_by") if row[1] else None)


def committed(rig: Rig, award: dict, by: str) -> None:
    """The controller commits the award, its ledger names who confirmed; the table hears it."""
    rig.wait(
        lambda a: ledger_award(rig, award["award_id"])[0] == "committed",
        "the controller to commit the award",
        timeout=30,
    )
    assert ledger_award(rig, award["award_id"]) == ("committed", by)
    rig.wait(
        lambda a: any(i.get("code") == "jackpot_committed" for i in a["feed"]),
        "the table to hear the award committed",
        timeout=30,
    )
    rig.stop()
    with Ledger(rig.ledger, jackpot_config()) as ledger:  # the ledger's own reading
        assert ledger.confirmed_by(award["award_id"]) == by
    done = subprocess.run(  # and the awards report (jackpot-controller report awards)
        [sys.executable, "-m", "jackpot.cli", "report", "awards", "--ledger", str(rig.ledger)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = [
        r for r in csv.DictReader(io.StringIO(done.stdout)) if r["award_id"] == award["award_id"]
    ]
    assert row["state"] == "committed" and row["confirmed_by"].endswith(f": {by}")


def test_the_jackpot_paid_button_confirms_the_oldest_award_with_the_key(rig):
    award = play_the_winning_round(rig)
    # without the key the button is refused: nothing confirmed
    rig.act("press", name="console.jackpot_paid")
    refused = [i for i in rig.status()["feed"] if i["kind"] == "refused"]
    assert refused[-1]["reason"] == "jackpot paid refused: turn the supervisor key first"
    assert rig.status()["status"]["snapshot"]["awards"] == [award]

    rig.act("input", name="console.supervisor_key", active=True)
    prompt = rig.wait(
        lambda a: dealer(rig)["prompt"]["code"] == "jackpot_paid_ready", "the dealer display"
    )
    assert prompt is not None
    text = dealer(rig)["prompt"]["text"]
    dollars = money(award["amount"])
    assert text == (
        f"JACKPOT PAID confirms award {award['award_id']}: spot 1 Blazing 7's {dollars} hand pay"
    )
    rig.act("press", name="console.jackpot_paid")
    after = rig.wait(lambda a: not a["status"]["snapshot"]["awards"], "the award confirmed")
    confirmed = [i for i in after["feed"] if i.get("code") == "jackpot_confirmed"]
    assert confirmed and "(by supervisor key)" in confirmed[-1]["text"]
    committed(rig, award, "supervisor key")


def add(rig: Rig, name: str) -> None:
    done = run_cli(
        "user", "add", name, "--role", ROLES[name], "--stdin", "--config", str(rig.config),
        stdin=PASSWORDS[name] + "\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_supervisor_confirms_the_award_on_the_page(rig, browser_context, screenshot):
    expect = pytest.importorskip("playwright.sync_api").expect
    for name in PASSWORDS:
        add(rig, name)
    award = play_the_winning_round(rig)
    dollars = money(award["amount"])

    # a technician may not; an award that does not wait and a wrong amount are refused
    tech = Http(rig.http_port)
    assert tech.login("jsmith", PASSWORDS["jsmith"])[0] == 200
    status, _h, body = tech.request(
        "POST", "/api/awards/confirm", {"award": award["award_id"], "amount": dollars}
    )
    assert status == 403 and b"needs a supervisor account" in body
    boss = Http(rig.http_port)
    assert boss.login("mlopez", PASSWORDS["mlopez"])[0] == 200
    status, _h, body = boss.request(
        "POST", "/api/awards/confirm", {"award": "hcm-bj-07/999", "amount": dollars}
    )
    assert status == 409 and b"no award hcm-bj-07/999 waits for a hand pay" in body
    status, _h, body = boss.request("POST", "/api/awards/confirm", {"award": award["award_id"]})
    assert status == 400 and b"typed again" in body
    assert rig.status()["status"]["snapshot"]["awards"] == [award]  # nothing changed

    page = browser_context.new_page()
    page.goto(rig.url + "/login")
    page.get_by_label("Name or badge number").fill("mlopez")
    page.get_by_label("Password").fill(PASSWORDS["mlopez"])
    with page.expect_response(lambda r: r.url.endswith("/login")):
        page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(rig.url + "/diag")
    row = page.locator(f"[data-award='{award['award_id']}']")
    expect(row).to_contain_text(f"spot 1 Blazing 7's 100% of meter, {dollars} hand pay")
    row.get_by_test_id("award-amount").fill("$1.00")
    row.get_by_test_id("award-confirm").click()
    message = page.get_by_test_id("awards-msg")
    expect(message).to_contain_text(f"the amount typed, $1.00, is not award {award['award_id']}")
    assert rig.status()["status"]["snapshot"]["awards"] == [award]  # still waiting
    screenshot(page, "1-wrong-amount")
    row.get_by_test_id("award-amount").fill(dollars)
    row.get_by_test_id("award-confirm").click()
    expect(message).to_contain_text(f"Award {award['award_id']} confirmed")
    expect(page.get_by_test_id("award-count")).to_have_text("0")
    screenshot(page, "2-confirmed")

    rows = boss.get_json("/api/audit")["entries"]
    tried = [
        (r["account"], r["outcome"], r["object"])
        for r in rows[::-1]
        if r["action"] == "confirm_award"
    ]
    assert tried == [
        ("jsmith", "refused", ""),
        ("mlopez", "refused", "hcm-bj-07/999"),
        ("mlopez", "refused", award["award_id"]),  # no amount
        ("mlopez", "refused", award["award_id"]),  # the wrong amount
        ("mlopez", "ok", award["award_id"]),
    ]
    committed(rig, award, "supervisor mlopez")


def test_the_schema_carries_who_confirmed():
    schema = json.loads(
        (
            Path(__file__).resolve().parent.parent / "controller/link/schemas/award_confirm.json"
        ).read_text(encoding="utf-8")
    )
    assert "confirmed_by" in schema["properties"]["payload"]["properties"]
    assert "confirmed_by" not in schema["properties"]["payload"]["required"]  # older tables
