"""The web pages' server over real HTTP, against the real running table (issue 7).

The rig (tests/table_rig.py) runs ``table-controller run`` with a ``[web]`` section, a real
Mosquitto, the jackpot controller and the simulated shoe on a pseudo-terminal. These tests
speak HTTP the way a browser or an attacker on the casino network would: logins, cookies,
CSRF tokens, the live streams, recall downloads, ``/healthz`` and ``/metrics``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mqtt_broker import MosquittoBroker, broker, started_broker  # noqa: F401
from table_rig import ROOT, Rig, free_port, replayed_settlements, settlement_keys

from controller.journal import Journal
from controller.web.auth import hash_password

PASSWORD = "green-felt-seven"
HOLE = "10C"  # ROUND_CARDS' sixth card: the dealer's hole card; no other card of the round
HOLE_RE = re.compile(rb"(?<![0-9A-Za-z])10C(?![0-9A-Za-z])|10\xe2\x99\xa3|10 of clubs", re.I)


class Http:
    """A client with its own cookie, as one browser."""

    def __init__(self, port: int):
        self.port = port
        self.cookie: str | None = None
        self.csrf: str | None = None

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        headers: dict[str, str] | None = None,
        csrf: bool = True,
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)  # a loaded machine
        hdrs = dict(headers or {})
        if self.cookie:
            hdrs.setdefault("Cookie", self.cookie)
        if csrf and self.csrf and method == "POST":
            hdrs.setdefault("X-CSRF-Token", self.csrf)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        payload = resp.read()
        out = {k.lower(): v for k, v in resp.getheaders()}
        conn.close()
        return resp.status, out, payload

    def get_json(self, path: str) -> dict:
        status, _h, body = self.request("GET", path)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def login(self, name: str = "Ana 4411", password: str = PASSWORD) -> tuple[int, dict, dict]:
        status, headers, body = self.request("POST", "/login", {"name": name, "password": password})
        if status == 200:
            self.cookie = headers["set-cookie"].split(";")[0]
            self.csrf = json.loads(body)["csrf"]
        return status, headers, json.loads(body)

    def stream(self, path: str, seconds: float, started: threading.Event | None = None) -> bytes:
        """Read a server-sent event stream for ``seconds`` or until the server ends it; every
        byte received (headers too). ``started`` is set once the first update has arrived."""
        cookie = f"Cookie: {self.cookie}\r\n" if self.cookie else ""
        chunks: list[bytes] = []
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{cookie}\r\n".encode())
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                ready, _w, _x = select.select([sock], [], [], left)
                if not ready:
                    break
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if started is not None and b"event: update" in b"".join(chunks):
                    started.set()
        data = b"".join(chunks)
        assert data.startswith(b"HTTP/1.1 200"), data[:200]
        return data


def web_section(port: int, password_hash: str, extra: str = "") -> str:
    return f'bind = "127.0.0.1"\nport = {port}\npassword_hash = "{password_hash}"\n{extra}'


@contextlib.contextmanager
def running_web_rig(
    tmp: Path,
    broker: MosquittoBroker,  # noqa: F811
    web_extra: str = "",
) -> Iterator[Rig]:
    """A table with its web pages; ``web_extra``: more ``[web]`` lines."""
    port = free_port()
    rig = Rig(tmp, broker, web=web_section(port, hash_password(PASSWORD, n=2**10), web_extra))
    rig.http_port = port
    try:
        rig.start_table()
        wait_http(port, rig=rig)
        yield rig
    finally:
        rig.stop()


@pytest.fixture
def web_rig(tmp_path, broker):  # noqa: F811
    """A table of this test's own: for a test that changes what the others would see (plays
    a round, acknowledges an alarm, counts wrong passwords, holds connections)."""
    with running_web_rig(tmp_path, broker) as rig:
        yield rig


@pytest.fixture(scope="module")
def shared_web_rig(tmp_path_factory):
    """One table for a module's tests that change nothing another of them looks at: they
    read, or are refused (a table of its own is a broker, the jackpot controller, the shoe
    and the daemon started: seconds each)."""
    tmp = tmp_path_factory.mktemp("shared-web-rig")
    with started_broker(tmp) as b, running_web_rig(tmp, b) as rig:
        yield rig


def wait_http(port: int, timeout: float = 180.0, rig: Rig | None = None) -> None:
    """Until the web server answers; a daemon that exited (or never answers: a machine loaded
    past its cores starts it late) fails with its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if rig is not None and rig.table is not None and rig.table.poll() is not None:
            raise AssertionError(f"table-controller run exited:\n{rig.log('table')}")
        try:
            Http(port).request("GET", "/healthz")
            return
        except OSError:
            time.sleep(0.05)
    log = rig.log("table") if rig is not None else ""
    raise AssertionError(f"the web server on port {port} never answered in {timeout:g} s\n{log}")


def test_actions_need_a_login_and_the_sessions_csrf_token(shared_web_rig):
    anon = Http(shared_web_rig.http_port)
    for method, path in [
        ("GET", "/api/status"),
        ("GET", "/api/stream"),
        ("GET", "/api/rounds"),
        ("GET", "/api/rounds/1/script"),
        ("GET", "/api/log"),
        ("POST", "/api/alarms/ack"),
        ("POST", "/api/faults/clear"),
        ("POST", "/api/lights/test"),
    ]:
        status, _h, body = anon.request(method, path, {} if method == "POST" else None)
        assert status == 401, (method, path, status)
        assert "log in" in json.loads(body)["error"]
    status, headers, _ = anon.request("GET", "/diag")
    assert (status, headers["location"]) == (303, "/login")
    # the kiosk and the monitoring endpoints need no login
    assert anon.request("GET", "/dealer")[0] == 200
    assert anon.request("GET", "/api/dealer")[0] == 200
    assert anon.request("GET", "/healthz")[0] == 200

    tech = Http(shared_web_rig.http_port)
    status, _h, answer = tech.login(password="not-the-password")
    assert status == 401 and answer["error"].startswith("wrong password")
    status, headers, answer = tech.login()
    assert status == 200 and answer["user"] == "Ana 4411"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert tech.get_json("/api/session") == {
        "ok": True,
        "user": "Ana 4411",
        "csrf": tech.csrf,
        "role": "technician",  # the old single password is one technician's account
        "permissions": [
            "acknowledge_alarm",
            "clear_faults",
            "light_test",
            "read",
            "rotate_journal",
        ],
    }

    before = shared_web_rig.events()
    # logged in, but no token, a wrong token, or a foreign page's Origin: refused, nothing sent
    for headers_ in ({"X-CSRF-Token": ""}, {"X-CSRF-Token": "forged"}):
        status, _h, body = tech.request("POST", "/api/faults/clear", {}, headers_)
        assert status == 403 and "CSRF" in json.loads(body)["error"]
    status, _h, _b = tech.request("POST", "/api/lights/test", {}, csrf=False)
    assert status == 403
    status, _h, _b = tech.request(
        "POST", "/api/faults/clear", {}, {"Origin": "http://evil.example"}
    )
    assert status == 403
    assert shared_web_rig.events() == before  # nothing reached the table
    # with the token: no fault is latched, so the server answers itself and the table never
    # hears of it (no refusal in the journal, none on the dealer's screen)
    status, _h, body = tech.request("POST", "/api/faults/clear", {})
    assert status == 409 and json.loads(body)["error"] == "no fault is latched: nothing to clear"
    # an action the table decides reaches it, and is journaled whatever its answer
    status, _h, body = tech.request("POST", "/api/alarms/ack", {"alarm": 0})
    assert status in (200, 409), body
    with Journal(shared_web_rig.tmp / "data" / "journal.sqlite") as journal:
        kinds = [e.event["type"] for e in journal.entries()]
    assert "clear_faults" not in kinds and kinds.count("acknowledge_alarm") == 1
    # another browser's cookie cannot use this session's token
    other = Http(shared_web_rig.http_port)
    other.login(name="Bo")
    status, _h, _b = other.request("POST", "/api/faults/clear", {}, {"X-CSRF-Token": tech.csrf})
    assert status == 403
    # logout ends the session: the cookie is worthless afterwards
    assert tech.request("POST", "/logout", {})[0] == 200
    assert tech.request("GET", "/api/status")[0] == 401


def test_wrong_passwords_are_slowed_down(web_rig):
    web = Http(web_rig.http_port)
    answers = []
    for _ in range(10):
        status, headers, body = web.login(password="guess-" + str(len(answers)))
        answers.append((status, headers.get("retry-after"), body["error"]))
    # three free tries, then each wrong password buys a wait and attempts inside it are not
    # even checked
    assert [s for s, _r, _e in answers[:3]] == [401, 401, 401]
    assert answers[3][0] == 401 and int(answers[3][1]) >= 1 and "wait" in answers[3][2]
    throttled = [a for a in answers[4:] if a[0] == 429]
    assert len(throttled) >= 5, answers
    assert all(int(r) >= 1 and "too many wrong passwords" in e for _s, r, e in throttled)
    # the right password is refused too until the wait is over, then works
    status, headers, body = web.login()
    assert status == 429, body
    time.sleep(int(headers["retry-after"]) + 0.2)
    status, _h, body = web.login()
    assert status == 200, body
    metrics = web.request("GET", "/metrics")[2].decode()
    found = re.search(r"^table_controller_web_login_failures_total (\d+)(?:\.0)?$", metrics, re.M)
    assert found, metrics
    failures = int(found[1])
    assert failures == 10 - len(throttled)
    assert "wrong password" in web_rig.log("table")


def _everything(web: Http, anon: Http) -> dict[str, bytes]:
    """Every byte the server serves for the pages: HTML, scripts, APIs, logs, both streams."""
    out: dict[str, bytes] = {}
    for path in ("/diag", "/dealer", "/login"):
        out[path] = web.request("GET", path)[2]
    for name in re.findall(rb'(?:src|href)="/static/([^"]+)"', b"".join(out.values())):
        path = "/static/" + name.decode()
        out[path] = web.request("GET", path)[2]
    for path in ("/api/status", "/api/rounds", "/api/log", "/api/session", "/metrics", "/healthz"):
        out[path] = web.request("GET", path)[2]
    out["/api/dealer"] = anon.request("GET", "/api/dealer")[2]
    streams: dict[str, bytes] = {}

    def read(path: str, client: Http) -> None:
        streams[path] = client.stream(path, 1.5)

    threads = [
        threading.Thread(target=read, args=("/api/stream", web)),
        threading.Thread(target=read, args=("/api/dealer/stream", anon)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.update(streams)
    return out


def test_the_hole_card_is_in_no_byte_served_before_the_dealers_turn(web_rig):
    web, anon = Http(web_rig.http_port), Http(web_rig.http_port)
    web.login()
    web_rig.bets()
    web_rig.act("press", name="console.lockout")
    for _ in range(6):  # up to and including the hole card
        web_rig.deal()
    snap = web_rig.status()["status"]["snapshot"]
    assert snap["dealer"]["cards"] == ["6D", "back"] and snap["phase"] != "dealer"
    served = _everything(web, anon)
    assert served["/api/stream"].count(b"event: update") >= 1
    assert b"6D" in served["/api/stream"] and b"6D" in served["/api/dealer/stream"]
    leaks = [path for path, body in served.items() if HOLE_RE.search(body)]
    assert leaks == [], f"the hole card {HOLE} was served by {leaks}"
    web_rig.stand_both()  # the dealer's turn: the hole card is turned over
    web_rig.wait(
        lambda a: "10C" in a["status"]["snapshot"]["dealer"]["cards"], "the hole card shown"
    )
    served = _everything(web, anon)
    # the same search finds it now: the check above could fail
    assert HOLE_RE.search(served["/api/stream"]) and HOLE_RE.search(served["/api/dealer"])


def test_light_test_asked_mid_round_runs_at_the_round_break(web_rig):
    web = Http(web_rig.http_port)
    web.login()
    web_rig.bets()
    web_rig.act("press", name="console.lockout")
    lights_before = web.get_json("/api/status")["health"]["gpio"]["lights"]
    status, _h, body = web.request("POST", "/api/lights/test", {})
    answer = json.loads(body)
    assert status == 202 and answer["ok"] is True and answer["queued"] is True
    assert answer["message"] == (
        "light test queued: round 1 is in progress (dealing); it runs at the round break"
    )
    pending = web.get_json("/api/status")["light_test"]
    assert pending["pending"] is True and pending["by"] == "technician Ana 4411"
    status, _h, body = web.request("POST", "/api/lights/test", {})  # one is enough
    assert status == 409 and "queued one already" in json.loads(body)["message"]
    # the round goes on with the table's lights; once it is settled the test runs by itself
    for _ in range(6):
        web_rig.deal()
    assert web.get_json("/api/status")["light_test"]["pending"] is True
    web_rig.stand_both()
    web_rig.deal()
    web_rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "settlement")
    seen_on: set[str] = set()
    test = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        bundle = web.get_json("/api/status")
        seen_on |= {n for n, s in bundle["health"]["gpio"]["lights"].items() if s == "on"}
        test = bundle["light_test"]
        if test and not test["pending"] and not test["running"]:
            break
        time.sleep(0.05)
    assert test is not None
    assert test["result"].startswith("finished") and test["by"] == "technician Ana 4411"
    assert seen_on == set(lights_before)  # every light of the pin map was on at some point
    log = web_rig.log("table")
    assert "light test queued by technician Ana 4411" in log
    assert "light test started by technician Ana 4411" in log


def test_alarm_acknowledged_from_the_page_is_journaled_with_the_technicians_name(web_rig):
    web = Http(web_rig.http_port)
    web.login(name="Cy 17")
    web_rig.deal()  # a card drawn while bets are open: out of turn, an alarm
    alarms = web_rig.wait(lambda a: a["status"]["snapshot"].get("alarms"), "an alarm")["status"][
        "snapshot"
    ]["alarms"]
    dealer = web.get_json("/api/dealer")
    assert [a["text"] for a in dealer["alarms"]][-1] == alarms[-1]["text"]
    status, _h, body = web.request("POST", "/api/alarms/ack", {"alarm": alarms[-1]["id"]})
    assert status == 200, body
    left = web.get_json("/api/status")["status"]["snapshot"]["alarms"]
    assert alarms[-1]["id"] not in [a["id"] for a in left]
    status, _h, body = web.request("POST", "/api/alarms/ack", {"alarm": alarms[-1]["id"]})
    assert status == 409 and "not open" in json.loads(body)["error"]
    status, _h, body = web.request("POST", "/api/alarms/ack", {"alarm": "all"})
    assert status == 400 and "whole number" in json.loads(body)["error"]
    with Journal(web_rig.tmp / "data" / "journal.sqlite") as journal:
        acks = [e.event for e in journal.entries() if e.event["type"] == "acknowledge_alarm"]
    assert acks[0]["alarm"] == alarms[-1]["id"] and acks[0]["by"] == "technician Cy 17"


def test_recall_download_replays_to_the_same_settlement(web_rig, tmp_path):
    web = Http(web_rig.http_port)
    web.login()
    web_rig.bets()
    web_rig.play_round()
    rounds = web.get_json("/api/rounds")["rounds"]
    assert [r["round"] for r in rounds] == [1]
    record = rounds[0]
    assert "Round 1" in record["text"] and "dealer: 6♦ 10♣ 9♠ = bust 25" in record["text"]
    # the hands as the page draws them: the dealer first, then each spot, with totals
    assert [(h["who"], h["cards"], h["total"], h["bust"]) for h in record["hands"]] == [
        ("Dealer", ["6D", "10C", "9S"], 25, True),
        ("Spot 1", ["10H", "7S"], 17, False),
        ("Spot 2", ["9C", "8H"], 17, False),
    ]
    # every card of every hand, and every action in order (replayed from the record's events)
    assert "  spot 1: 10♥ 7♠ = 17\n  spot 2: 9♣ 8♥ = 17\n" in record["text"]
    actions = record["text"].split("  actions: ", 1)[1].split("\n", 1)[0].split(", ")
    actions = [a for a in actions if not a.startswith("shoe ")]  # the shoe coming online
    assert actions[:2] == ["chips on spot 1 main wager", "spot 1 main wager $25.00"]
    assert (
        actions[-10:]
        == [
            "lockout",
            "card 10H",
            "card 9C",
            "card 6D",
            "card 7S",
            "card 8H",
            "card 10C",
            "next",
            "next",
            "next",
            "card 9S",
        ][-10:]
    )
    status, headers, script = web.request("GET", "/api/rounds/1/script")
    assert status == 200
    assert headers["content-disposition"] == 'attachment; filename="hcm-bj-07-round-1.jsonl"'
    path = tmp_path / "round-1.jsonl"
    path.write_bytes(script)
    assert replayed_settlements(path) == settlement_keys(record["result"]["settlements"])
    assert web.request("GET", "/api/rounds/2/script")[0] == 404  # round 2 is not settled


def test_history_older_rounds_and_the_vendored_charts_are_served(web_rig):
    web = Http(web_rig.http_port)
    assert web.request("GET", "/api/history")[0] == 401  # technicians only
    web.login()
    web_rig.bets()
    web_rig.play_round()
    # the history the daemon keeps: a point at start and one soon after the round
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        history = web.get_json("/api/history?hours=1")
        # the point after the round (the start's point may already say 0 rounds an hour)
        if max((v or 0 for v in history["rounds_per_hour"]), default=0) > 0:
            break
        time.sleep(0.5)
    assert history["ok"] and history["problem"] is None and len(history["t"]) >= 2
    assert history["link_up"][-1] == 1
    assert history["bets"]["blazing_7s"]["wagers"] == 1  # spot 1's Blazing 7's
    assert history["main"]["wagers"] >= 1 and history["main"]["stakes"] > 0  # issue 31
    assert (web_rig.tmp / "data" / "history.sqlite").is_file()
    for bad in ("0", "73", "six", "nan"):
        status, _h, body = web.request("GET", f"/api/history?hours={bad}")
        assert status == 400, bad
        assert json.loads(body)["error"].startswith("hours must be a number of hours from 1 to 72")
    # older rounds: paging back by number
    assert web.get_json("/api/rounds/older?before=2")["rounds"][0]["round"] == 1
    assert web.get_json("/api/rounds/older?before=1")["rounds"] == []
    status, _h, body = web.request("GET", "/api/rounds/older?before=x")
    assert status == 400 and "before must be a round number" in json.loads(body)["error"]
    # uPlot from the table itself, nothing else under /static/vendor/
    status, headers, body = web.request("GET", "/static/vendor/uPlot.iife.min.js")
    assert status == 200 and headers["content-type"] == "text/javascript; charset=utf-8"
    assert body.startswith(b"/*! https://github.com/leeoniya/uPlot (v1.6.32) */")
    for path in ("/static/vendor/../server.py", "/static/vendor/README.md", "/static/x/a.js"):
        assert web.request("GET", path)[0] == 404, path


def test_healthz_and_metrics(shared_web_rig):
    web = Http(shared_web_rig.http_port)
    deadline = time.monotonic() + 15  # the daemon answers before its link has connected
    while time.monotonic() < deadline:
        if (shared_web_rig.status().get("health") or {}).get("link", {}).get("connected"):
            break
        time.sleep(0.05)
    status, _h, body = web.request("GET", "/healthz")
    assert (status, json.loads(body)) == (200, {"ok": True, "problems": []})
    status, headers, body = web.request("GET", "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    labels = r'(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})?'
    sample = re.compile(r"^[a-z_]+" + labels + r" -?\d+(\.\d+)?(e[+-]?\d+)?$")
    for line in text.splitlines():
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or sample.match(line), line
    checksum = shared_web_rig.status()["config_checksum"]
    assert f'config_checksum="{checksum}"' in text and 'table="hcm-bj-07"' in text
    assert re.search(r"^table_controller_link_connected 1(\.0)?$", text, re.M)
    assert re.search(r"^table_controller_round 1(\.0)?$", text, re.M)
    assert re.search(r'^table_controller_driver_connected\{driver="shoe"\} 1(\.0)?$', text, re.M)


def test_the_pages_send_security_headers(shared_web_rig):
    web = Http(shared_web_rig.http_port)
    for path in ("/dealer", "/login", "/api/dealer"):
        _s, headers, _b = web.request("GET", path)
        assert "default-src 'self'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store"
    assert web.request("GET", "/static/../config.py")[0] == 404
    assert web.request("GET", "/static/server.py")[0] == 404


def test_no_web_server_without_a_web_section(tmp_path, broker):  # noqa: F811
    rig = Rig(tmp_path, broker)
    try:
        rig.start_table()
        assert "web pages on" not in rig.log("table")
    finally:
        rig.stop()


def test_static_files_are_packaged():
    static = ROOT / "controller" / "web" / "static"
    assert {"login.html", "diag.html", "dealer.html"} <= {p.name for p in static.iterdir()}
    assert (
        '"controller.web" = ["static/*", "static/vendor/*"]'
        in (ROOT / "pyproject.toml").read_text()
    )
    # the vendored charting library ships with its licence and its version noted
    vendor = static / "vendor"
    assert {"uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE"} <= {
        p.name for p in vendor.iterdir()
    }
    assert "(v1.6.32)" in (vendor / "uPlot.iife.min.js").read_text()[:200]
    assert "1.6.32" in (vendor / "README.md").read_text()
    assert "MIT License" in (vendor / "uPlot.LICENSE").read_text()


def test_a_plain_form_login_works_and_a_foreign_page_cannot_post_one(shared_web_rig):
    web = Http(shared_web_rig.http_port)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    body = f"name=Dee&password={PASSWORD}"
    conn = http.client.HTTPConnection("127.0.0.1", shared_web_rig.http_port, timeout=10)
    conn.request("POST", "/login", body=body, headers={**form, "Origin": "http://evil.example"})
    resp = conn.getresponse()
    assert resp.status == 403 and resp.getheader("Set-Cookie") is None
    resp.read()
    conn.request("POST", "/login", body=body, headers=form)
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 303 and resp.getheader("Location") == "/diag"
    web.cookie = resp.getheader("Set-Cookie").split(";")[0]
    conn.close()
    assert web.get_json("/api/session")["user"] == "Dee"
    # a session ended elsewhere (logout) ends its live stream too
    web.csrf = web.get_json("/api/session")["csrf"]
    streamed: list[bytes] = []
    started = threading.Event()
    reader = threading.Thread(
        target=lambda: streamed.append(web.stream("/api/stream", 60.0, started))
    )
    reader.start()
    assert started.wait(30), "the live stream's first update"
    assert web.request("POST", "/logout", {})[0] == 200
    reader.join()
    assert b"event: update" in streamed[0] and b"event: logout" in streamed[0]
