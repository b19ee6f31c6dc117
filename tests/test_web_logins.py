"""Logins when many clients guess (issue 26 item 4) and names that show (item 6).

The finding: the login throttle was per address only. 240 wrong guesses from 60 loopback
addresses were all checked, and the technician's right password waited 33 s behind them in
the same scrypt queue. These tests count checks and places in the queue, not seconds: the
password check is held until the test lets it go, so the order is the server's alone.

The server is the table's own ``WebServer`` in this process on real loopback sockets
(tests/test_web_front.py's ``serve``); the attackers come from 127.0.0.10 and up.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from test_web_front import PASSWORD, answer, connect, serve, status_of, wait_for  # noqa: F401

import controller.web.server as server_module
from controller.web.auth import LoginNameError, LoginThrottle, technician_name
from controller.web.logins import LoginBudget, LoginChecks, Refused


def login_request(name: str, password: str, cookie: str | None = None) -> bytes:
    body = json.dumps({"name": name, "password": password}).encode()
    head = (
        "POST /login HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    )
    if cookie:
        head += f"Cookie: {cookie}\r\n"
    return (head + "\r\n").encode() + body


def log_in(port: int, source: str, name: str, password: str, cookie: str | None = None):
    """One login from ``source``: (status, body as a dict, the raw answer)."""
    with connect(port, source, timeout=60) as sock:
        data = answer(sock, login_request(name, password, cookie), wait=60)
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    return status_of(data), json.loads(body or b"{}"), data


class HeldChecks:
    """The password check, held: each records its password when it starts, then waits for
    :meth:`release` (so the test, not the machine's speed, decides when checks end)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self._go = threading.Semaphore(0)
        self._lock = threading.Lock()

    def __call__(self, password: str, stored: str) -> bool:
        with self._lock:
            self.started.append(password)
        assert self._go.acquire(timeout=120), "a check was never released"
        return password == PASSWORD

    def release(self, n: int) -> None:
        for _ in range(n):
            self._go.release()


@pytest.fixture
def held(monkeypatch) -> HeldChecks:
    checks = HeldChecks()
    monkeypatch.setattr(server_module, "verify_password", checks)
    return checks


def test_sixty_guessing_addresses_neither_get_every_guess_checked_nor_delay_the_technician(
    serve,  # noqa: F811
    held,
):
    web = serve()
    port = web.address[1]
    addresses, guesses = 60, 4
    answers: list[tuple[int, dict[str, Any]]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(addresses * guesses)

    def guess(a: int, k: int) -> None:
        barrier.wait()
        status, body, _raw = log_in(port, f"127.0.0.{10 + a}", "x", f"guess-{a}-{k}")
        with lock:
            answers.append((status, body))

    attackers = [
        threading.Thread(target=guess, args=(a, k))
        for a in range(addresses)
        for k in range(guesses)
    ]
    for t in attackers:
        t.start()
    logins = web.logins
    wait_for("every guess decided", lambda: logins.counters["submitted"] == addresses * guesses)
    wait_for("both checks under way", lambda: len(held.started) == 2)
    checked_before = len(held.started)

    tech: list[Any] = []
    technician = threading.Thread(
        target=lambda: tech.append(log_in(port, "127.0.0.250", "Ana 4411", PASSWORD))
    )
    technician.start()
    wait_for("the technician's login queued", lambda: logins.counters["submitted"] == 241)
    held.release(addresses * guesses + 1)  # every check may end now: the order is the server's
    technician.join(120)
    for t in attackers:
        t.join(120)

    status, body, _raw = tech[0]
    assert status == 200 and body["user"] == "Ana 4411"
    place = held.started.index(PASSWORD)
    # no check started between the technician's arrival and its own: only the two that
    # were under way when it came ran before it (the finding: it waited behind all 240)
    assert place == checked_before, held.started[: place + 1]
    checked = len(held.started) - 1
    budget = web.logins.budget
    # each address's first guess, and the table-wide budget's few for failing clients
    assert checked <= addresses + budget.burst + 1, checked  # (+1: a token the seconds added)
    statuses = [s for s, _b in answers]
    assert statuses.count(401) == checked
    assert statuses.count(429) == addresses * guesses - checked
    refusals = [b["error"] for s, b in answers if s == 429]
    assert any("at this table from several places" in e for e in refusals), refusals[:3]
    assert web.counters["login_failures"] == checked


# -- the order and the budget, without a server ------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Work:
    """A check that records that it started and waits until let go."""

    def __init__(self, log: list[str], name: str):
        self.log, self.name = log, name
        self.go = threading.Event()

    def __call__(self) -> str:
        self.log.append(self.name)
        assert self.go.wait(30)
        return self.name


@pytest.fixture
def checks() -> Any:
    made: list[LoginChecks] = []

    def make(**kwargs: Any) -> LoginChecks:
        kwargs.setdefault("clock", Clock())
        c = LoginChecks(LoginThrottle(), **kwargs)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def submit(c: LoginChecks, log: list[str], name: str, address: str, session: bool = False):
    work = Work(log, name)
    return work, c.submit(address, session=session, work=work)


def test_failing_clients_never_hold_the_kept_check(checks):
    c: LoginChecks = checks(checks=2, kept=1, budget=LoginBudget(burst=20))
    log: list[str] = []
    works = []
    c.throttle.saw("10.0.0.9", c.clock())
    c.throttle.failed("10.0.0.9", c.clock())  # a wrong password on record: failing
    for k in range(3):  # three guesses at once, each checked (the address's free ones)
        works.append(submit(c, log, f"guess{k}", "10.0.0.9"))
    assert not any(isinstance(f, Refused) for _w, f in works)
    wait_for("the general check under way", lambda: log == ["guess0"])
    assert c.waiting == 2  # the kept check stays free: neither may take it
    tech, future = submit(c, log, "tech", "10.0.0.77")
    wait_for("the technician checked at once", lambda: "tech" in log)
    assert log == ["guess0", "tech"]
    tech.go.set()
    assert future.result(5) == "tech"
    for work, _f in works:
        work.go.set()


def test_a_known_good_session_then_clients_that_have_not_failed_then_the_fewest_failures(checks):
    c: LoginChecks = checks(checks=1, kept=0, budget=LoginBudget(burst=20))
    log: list[str] = []
    works: dict[str, Work] = {}

    def add(name: str, address: str, session: bool = False) -> None:
        works[name], _future = submit(c, log, name, address, session)

    add("first", "10.0.0.1")  # holds the one check while the others arrive
    wait_for("the first check", lambda: log == ["first"])
    for k in range(3):
        add(f"many{k}", "10.0.0.2")  # three guesses at once: failing
    add("few", "10.0.0.3")
    add("few again", "10.0.0.3")  # two: failing, with fewer failures than 10.0.0.2
    add("clean", "10.0.0.4")  # one: has not failed
    add("session", "10.0.0.2", session=True)  # a logged-in browser, whatever its address
    for _ in range(7):  # each check ends after the next is queued: the order is the queue's
        n = len(log)
        works[log[-1]].go.set()
        wait_for("the next check", lambda n=n: len(log) == n + 1)
    works[log[-1]].go.set()
    assert log[1:] == ["session", "clean", "few", "few again", "many0", "many1", "many2"]


def test_the_budget_refuses_failing_clients_but_not_one_that_has_not_failed(checks):
    clock = Clock()
    c: LoginChecks = checks(checks=2, kept=1, budget=LoginBudget(burst=3, every_s=6.0), clock=clock)
    log: list[str] = []
    works = []
    answers = []
    for a in range(4):  # four addresses, two guesses each
        for k in range(2):
            work, got = submit(c, log, f"{a}-{k}", f"10.0.1.{a}")
            works.append(work)
            answers.append(got)
    # each address's first guess has not failed: checked, with a token while any is left;
    # a second guess is a failing client's: checked only with a token
    refused = [got for got in answers if isinstance(got, Refused)]
    assert [isinstance(got, Refused) for got in answers] == [
        False, False, False, True, False, True, False, True
    ]  # fmt: skip
    assert all(r.table_wide for r in refused)
    assert refused[0].wait_s == 6.0
    assert c.counters["refused_table_wide"] == 3
    clean, future = submit(c, log, "tech", "10.0.2.1")
    assert not isinstance(future, Refused)  # a client that has not failed: checked anyway
    clock.now += 6.0  # a token: a failing client's next guess is checked again
    again, got = submit(c, log, "0-2", "10.0.1.0")
    assert not isinstance(got, Refused)
    for work in [*works, clean, again]:
        work.go.set()


def test_closing_cancels_the_waiting_attempts(checks):
    c: LoginChecks = checks(checks=1, kept=0)
    log: list[str] = []
    first, running = submit(c, log, "first", "10.0.0.1")
    wait_for("the first check", lambda: log == ["first"])
    _w, waiting = submit(c, log, "second", "10.0.0.2")
    c.close()
    assert waiting.cancelled()
    first.go.set()
    assert running.result(5) == "first"


# -- names that show ---------------------------------------------------------------------------

BLANK = ["\u3164", "\u115f", "\u1160", "\uffa0"]
"""Letters to Python that a screen draws as nothing (the audit logged in as each)."""


@pytest.mark.parametrize("char", BLANK)
def test_a_name_that_shows_blank_is_refused_naming_the_character(serve, char):  # noqa: F811
    web = serve()
    for name in (char, char * 12, f"Ana{char}", f"{char} 4411"):
        status, body, _raw = log_in(web.address[1], "127.0.0.1", name, PASSWORD)
        assert status == 400, (name, body)
        code = f"U+{ord(char):04X}"
        assert f"the name holds {code}" in body["error"] and "shows as nothing" in body["error"]
        assert "name or badge number" in body["error"]
    assert web.sessions.count(web.clock()) == 0


def test_names_in_any_script_that_show_are_accepted_as_typed(serve):  # noqa: F811
    web = serve()
    port = web.address[1]
    for typed, kept in (
        ("Ana 4411", "Ana 4411"),
        ("José", "José"),
        ("Jose\u0301", "José"),  # an accent typed apart: kept as one letter
        ("김민준", "김민준"),
        ("O'Brien-Smith", "O'Brien-Smith"),
        ("  tech_7@floor2  ", "tech_7@floor2"),
    ):
        status, body, _raw = log_in(port, "127.0.0.1", typed, PASSWORD)
        assert (status, body.get("user")) == (200, kept), (typed, body)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "give your name or badge number"),
        ("...", "give your name or badge number"),
        ("a" * 41, "the name is 41 characters"),
        ("\u0301abc", "an accent, U+0301 (COMBINING ACUTE ACCENT), on no letter"),
        ("Ana\u200b", "U+200B (ZERO WIDTH SPACE), which shows as nothing"),
        ("Ana\u202eX", "U+202E (RIGHT-TO-LEFT OVERRIDE), which shows as nothing"),
        ("Ana\tB", "U+0009 (unnamed)"),
        ("Ana\u3000B", "U+3000 (IDEOGRAPHIC SPACE)"),
        ("\u2800\u2800", "U+2800 (BRAILLE PATTERN BLANK)"),
        (None, "give your name or badge number"),
    ],
)
def test_technician_name_refuses_with_what_to_give(name, says):
    with pytest.raises(LoginNameError) as caught:
        technician_name(name)
    assert says in str(caught.value)
    assert "letters and digits that show" in str(caught.value)
