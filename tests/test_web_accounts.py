"""Named accounts on the running table's diagnostics page (issue 28 item 1): logins name an
account of the users file, each action needs its role's permission, an auditor only reads,
a removed account's session ends, and every login, failure, logout and action (done or
refused) is in the audit list that ``/diag`` shows. The real daemon, broker and controller
(tests/table_rig.py); accounts made with the real ``table-controller user add``."""

from __future__ import annotations

import browser
import pytest
from conftest import run_cli
from mqtt_broker import broker  # noqa: F401
from table_rig import Rig, free_port
from test_web_server import Http, wait_http

from controller.web.auth import hash_password

PASSWORDS = {
    "jsmith": "Felt-and-Chips-2026",
    "mlopez": "Pit-Boss-Keys-77",
    "kaudit": "Ledger-Eyes-4412",
}
ROLES = {"jsmith": "technician", "mlopez": "supervisor", "kaudit": "auditor"}
LEGACY = "green-felt-seven"


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    port = free_port()
    web = f'bind = "127.0.0.1"\nport = {port}\npassword_hash = "{hash_password(LEGACY, n=2**10)}"'
    r = Rig(tmp_path, broker, web=web)
    r.http_port = port
    try:
        yield r
    finally:
        r.stop()


def add(rig: Rig, name: str) -> None:
    done = run_cli(
        "user", "add", name, "--role", ROLES[name], "--stdin", "--config", str(rig.config),
        stdin=PASSWORDS[name] + "\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def logged_in(rig: Rig, name: str) -> Http:
    web = Http(rig.http_port)
    status, _h, body = web.login(name, PASSWORDS[name])
    assert status == 200, body
    assert (body["user"], web.get_json("/api/session")["role"]) == (name, ROLES[name])
    return web


def test_the_old_password_is_one_technician_until_accounts_exist_then_roles_rule(rig):
    rig.start_table()
    wait_http(rig.http_port)
    # no users file yet: the old [web] password_hash logs in as a technician (migration)
    old = Http(rig.http_port)
    assert old.login("Ana 4411", LEGACY)[0] == 200
    assert old.get_json("/api/session")["role"] == "technician"

    for name in PASSWORDS:  # the first account ends the old password's logins
        add(rig, name)
    assert Http(rig.http_port).login("Ana 4411", LEGACY)[0] == 401
    assert old.request("GET", "/api/session")[0] == 401  # its session ended too

    tech, boss, auditor = (logged_in(rig, n) for n in ("jsmith", "mlopez", "kaudit"))
    # the auditor reads everything, and may change nothing
    assert auditor.get_json("/api/status")["table"] == "hcm-bj-07"
    assert auditor.get_json("/api/rounds")["rounds"] == []
    for path, body in (
        ("/api/alarms/ack", {"alarm": 0}),
        ("/api/faults/clear", {}),
        ("/api/lights/test", {}),
        ("/api/journal/rotate", {}),
    ):
        status, _h, raw = auditor.request("POST", path, body)
        assert status == 403, (path, raw)
        assert b"kaudit is an auditor" in raw and b"needs a technician or supervisor" in raw
    # a technician may run the light test; a supervisor may acknowledge, and the table's own
    # refusal (no alarm is open) is in the audit list with its words
    assert tech.request("POST", "/api/lights/test", {})[0] == 200
    assert boss.request("POST", "/api/alarms/ack", {"alarm": 0})[0] == 409
    # a wrong password and an unknown account: one answer, both in the audit list
    assert Http(rig.http_port).login("jsmith", "not-the-password")[0] == 401
    assert Http(rig.http_port).login("nobody", "whatever-it-is")[0] == 401
    # a removed account's session ends at its next request
    done = run_cli("user", "remove", "jsmith", "--config", str(rig.config))
    assert done.returncode == 0, done.stderr
    assert tech.request("GET", "/api/status")[0] == 401
    assert boss.request("POST", "/logout", {})[0] == 200

    rows = auditor.get_json("/api/audit")["entries"][::-1]
    seen = [(r["account"], r["role"], r["action"], r["outcome"], r["detail"]) for r in rows]
    assert seen[0][2] == "service_start" and seen[1][:4] == (
        "Ana 4411",
        "technician",
        "login",
        "ok",
    )
    web_rows = [s[:4] for s in seen if s[2] not in ("service_start", "user_add", "user_remove")]
    assert web_rows == [
        ("Ana 4411", "technician", "login", "ok"),
        ("Ana 4411", "", "login", "refused"),  # the old password, once accounts exist
        ("Ana 4411", "technician", "session_ended", "ok"),
        ("jsmith", "technician", "login", "ok"),
        ("mlopez", "supervisor", "login", "ok"),
        ("kaudit", "auditor", "login", "ok"),
        ("kaudit", "auditor", "acknowledge_alarm", "refused"),
        ("kaudit", "auditor", "clear_faults", "refused"),
        ("kaudit", "auditor", "light_test", "refused"),
        ("kaudit", "auditor", "rotate_journal", "refused"),
        ("jsmith", "technician", "light_test", "ok"),
        ("mlopez", "supervisor", "acknowledge_alarm", "refused"),
        ("jsmith", "", "login", "refused"),
        ("nobody", "", "login", "refused"),
        ("jsmith", "technician", "session_ended", "ok"),
        ("mlopez", "supervisor", "logout", "ok"),
    ]
    details = {(s[0], s[2], s[3]): s[4] for s in seen}
    assert details[("jsmith", "login", "refused")] == "wrong password"
    assert details[("nobody", "login", "refused")] == "unknown account"
    assert [s[2] for s in seen].count("user_add") == 3
    assert all(r["source"].startswith("web 127.0.0.1") for r in rows if r["action"] == "login")


chromium = browser.chromium  # the fixtures of tests/browser.py
browser_context = browser.browser_context
screenshot = browser.screenshot


def test_diag_shows_the_role_and_the_audit_list_in_a_browser(rig, browser_context, screenshot):
    expect = pytest.importorskip("playwright.sync_api").expect
    add(rig, "kaudit")
    rig.start_table()
    wait_http(rig.http_port)
    url = f"http://127.0.0.1:{rig.http_port}"
    page = browser_context.new_page()
    page.goto(url + "/diag")
    expect(page).to_have_url(url + "/login")
    page.get_by_label("Name or badge number").fill("kaudit")
    page.get_by_label("Password").fill("wrong-password-1")
    with page.expect_response(lambda r: r.url.endswith("/login")):
        page.get_by_role("button", name="Log in").click()
    expect(page.get_by_test_id("login-error")).to_have_text("wrong name or password")
    page.get_by_label("Password").fill(PASSWORDS["kaudit"])
    with page.expect_response(lambda r: r.url.endswith("/login")):
        page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(url + "/diag")
    expect(page.get_by_test_id("user")).to_have_text("kaudit")
    expect(page.get_by_test_id("role")).to_have_text("(auditor)")
    audit = page.get_by_test_id("audit")
    expect(audit.locator("tr[data-action='login'][data-outcome='refused']")).to_have_count(1)
    expect(audit.locator("tr[data-action='login'][data-outcome='ok']")).to_have_count(1)
    expect(audit.locator("tr[data-action='user_add']")).to_contain_text("kaudit")
    for button in ("clear-faults", "ack-all", "light-test", "rotate-journal"):
        expect(page.get_by_test_id(button)).to_have_attribute("data-denied", "1")
    csrf = browser_context.request.get(url + "/api/session").json()["csrf"]
    refused = browser_context.request.post(
        url + "/api/alarms/ack", data={"alarm": 0}, headers={"X-CSRF-Token": csrf}
    )
    assert refused.status == 403 and "kaudit is an auditor" in refused.json()["error"]
    page.get_by_test_id("audit-refresh").click()
    expect(audit.locator("tr[data-action='acknowledge_alarm']")).to_contain_text("refused")
    screenshot(page, "audit-list")
