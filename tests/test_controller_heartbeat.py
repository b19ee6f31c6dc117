"""The jackpot controller is missed within seconds (issue 28 item 3).

Real parts only: Mosquitto (tests/mqtt_broker.py), the real ``jackpot-controller`` process,
``shoe-sim`` and the real ``table-controller run`` with its web pages (tests/table_rig.py).
The controller is frozen with SIGSTOP while the broker stays up: its TCP connection stays
open, so the broker sees nothing wrong for 1.5 keepalives, and an idle table used to take
Blazing 7's wagers until a contribution had waited ``ack_timeout_s`` (30 s). Now the table
misses the signed heartbeat (``bj/v1/jackpot/status`` every 2 s) after
``[mqtt] controller_timeout_s`` (6 s): the link is down at once, the next Blazing 7's bet is
not latched, the dealer display and ``/healthz`` say the controller is not answering. After
SIGCONT play goes on and every message reaches the ledger exactly once.

N.J.A.C. 13:69E-1.39B(d)3: the linked game is unplayable once it loses the controller.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mqtt_broker import broker  # noqa: F401
from table_rig import TABLE, Rig, free_port

NOT_ANSWERING = "the jackpot controller is not answering"


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    port = free_port()
    r = Rig(tmp_path, broker, web=f'bind = "127.0.0.1"\nport = {port}')
    r.url = f"http://127.0.0.1:{port}"
    try:
        yield r
    finally:
        if r.jackpot.poll() is None:
            r.jackpot.send_signal(signal.SIGCONT)  # a frozen process would ignore SIGTERM
        r.stop()


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_http(rig: Rig, path: str, predicate, what: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = get(rig.url + path)
        except OSError as exc:  # the pages start a moment after the control socket
            last = exc
        else:
            if predicate(*last):
                return last[1]
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: {last!r}")


def ledger_applied(path: Path) -> list[tuple[int, str, str]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT seq, kind, key FROM applied WHERE table_id = ? ORDER BY seq", (TABLE,)
        ).fetchall()
    finally:
        db.close()


def heard(answer: dict) -> bool:
    link = answer["health"]["link"]
    return (
        link["connected"]
        and link["controller"]["state"] == "online"
        and link["controller"]["heartbeats"] >= 1
        and answer["status"]["jackpot_link"]
    )


def test_a_frozen_controller_is_missed_at_once_and_play_goes_on_after_it_thaws(rig):
    rig.start_table()
    rig.wait(heard, "the controller's heartbeat", timeout=30)
    wait_http(rig, "/healthz", lambda code, body: code == 200, "/healthz 200")

    # round 1: the Blazing 7's bet is a wager and its contribution is acknowledged
    rig.bets()
    rig.play_round()
    rig.wait(lambda a: a["health"]["link"]["depth"] == 0, "round 1's messages acked", 30)

    # freeze the controller; the broker stays up and the table stays connected to it
    rig.jackpot.send_signal(signal.SIGSTOP)
    try:
        frozen = time.monotonic()
        down = rig.wait(lambda a: not a["status"]["jackpot_link"], "the link down", timeout=25)
        # within the 25 s wait and so before the 30 s ack timeout could say it: the table
        # missed the heartbeat (an idle table has nothing waiting for an ack in any case)
        assert time.monotonic() - frozen < 30
        assert down["health"]["link"]["connected"], "the broker is up: the table is connected"
        assert down["health"]["link"]["depth"] == 0
        assert down["status"]["jackpot_link_why"] == "controller_silent"
        assert down["health"]["link"]["controller"]["heard_age_s"] >= 6
        alarms = [i for i in down["feed"] if i.get("code") == "jackpot_link_down"]
        assert alarms and alarms[-1]["text"].startswith("The jackpot controller is not answering")

        # the dealer display and /healthz say so
        view = wait_http(
            rig, "/api/dealer", lambda code, body: body["jackpot_link"] is False, "dealer view"
        )
        assert NOT_ANSWERING in view["jackpot_link_words"]
        code, health = get(rig.url + "/healthz")
        assert code == 503 and not health["ok"]
        assert any(NOT_ANSWERING in p for p in health["problems"]), health

        # round 2: the Blazing 7's chips are not latched as a wager
        rig.act("press", name="console.lockout")
        spots = rig.status()["status"]["snapshot"]["spots"]
        assert spots[0]["wagers"] == {"main": 2500}, spots[0]
        codes = [i.get("code") for i in rig.status()["feed"] if i["kind"] == "alarm"]
        assert "progressive_refused" in codes
        for _ in range(6):
            rig.deal()
        rig.stand_both()
        rig.deal()
        rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "round 2 settled")
        rig.act("press", name="console.end_round")
    finally:
        rig.jackpot.send_signal(signal.SIGCONT)

    # the controller thaws: its next heartbeat brings the link back, the messages of the
    # round played meanwhile are acknowledged, round 3's Blazing 7's is a wager again
    rig.wait(lambda a: a["status"]["jackpot_link"], "the link back up", timeout=40)
    wait_http(rig, "/healthz", lambda code, body: code == 200, "/healthz 200 again")
    rig.act("input", name="sensors.1.blazing_7s", active=False)
    rig.act("input", name="sensors.1.blazing_7s", active=True)
    rig.act("press", name="console.lockout")
    spots = rig.status()["status"]["snapshot"]["spots"]
    assert spots[0]["wagers"].get("blazing_7s"), spots[0]
    for _ in range(6):
        rig.deal()
    rig.stand_both()
    rig.deal()
    rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "round 3 settled")
    rig.act("press", name="console.end_round")
    done = rig.wait(lambda a: a["health"]["link"]["depth"] == 0, "every message acked", 40)

    # nothing lost: every sequence number once in the ledger, a contribution for rounds 1
    # and 3 only
    written = done["health"]["link"]["last_ack"]
    applied = ledger_applied(rig.ledger)
    assert [seq for seq, _k, _key in applied] == list(range(1, written + 1))
    contributions = [key for _s, kind, key in applied if kind == "contribution"]
    assert contributions == [f"round-{n}/spot-1/blazing_7s/contribution" for n in (1, 3)]
