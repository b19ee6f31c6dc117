"""Faults on the jackpot link: kill -9 the broker, the controller and a table process at seeded
random moments, cut the network (tests/tcp_proxy.py), then check money end to end.

The machinery is bench/jackpot_faults.py's :class:`FaultRun` (real Mosquitto with persistence,
a real TCP proxy, the controller and the tables as child processes, real SQLite). Once quiet:
the contributions the tables' journals made == the ledger's == the meters' movements; every
(table, seq) applied once, in order, none missing; every outbox acknowledged; a mystery
trigger (read by direct SQL only) never changed by a restart.

``JACKPOT_FAULTS_SEEDS=1,2,3`` runs more seeds (default: one seed, CI size);
``JACKPOT_FAULTS_BIG=1`` runs a longer session with more faults.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from link_keys import controller_signer, jackpot_config, table_signer
from mqtt_broker import CONTROLLER, TABLES, broker, find_mosquitto  # noqa: F401
from tcp_proxy import TcpProxy

from controller.link.messages import envelope, parse_message, topic_for
from controller.table.effects import Publish
from jackpot.ledger import Ledger
from jackpot.service import JackpotService

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from jackpot_faults import FaultRun, run  # noqa: E402

SEEDS = [int(s) for s in os.environ.get("JACKPOT_FAULTS_SEEDS", "20260").split(",") if s]
BIG = bool(os.environ.get("JACKPOT_FAULTS_BIG"))
T7 = TABLES[0]

needs_mosquitto = pytest.mark.skipif(find_mosquitto() is None, reason="mosquitto not installed")


def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# -- the proxy itself ---------------------------------------------------------------------------


def test_the_proxy_forwards_cuts_refuses_and_resumes(broker):  # noqa: F811
    proxy = TcpProxy(broker.host, broker.port)
    try:
        broker.port, real = proxy.port, broker.port  # clients now go through the proxy
        client = broker.client(TABLES[0], client_id="via-proxy")
        assert client.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
        assert proxy.open_connections == 1
        assert proxy.cut() == 1
        wait_for(lambda: not client._client.is_connected(), 15, "the client to see the cut")
        client.close()
        proxy.refuse()
        with pytest.raises((TimeoutError, ConnectionError, OSError)):
            broker.client(TABLES[0], client_id="refused", timeout=1.0)
        proxy.resume()
        again = broker.client(TABLES[0], client_id="resumed")
        assert again.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
        again.close()
    finally:
        broker.port = real
        proxy.close()
        proxy.close()  # safe twice


# -- the randomized fault run -------------------------------------------------------------------


@needs_mosquitto
@pytest.mark.parametrize("seed", SEEDS)
def test_random_faults_lose_nothing_and_count_nothing_twice(tmp_path, seed):
    faults, rounds = (40, 120) if BIG else (10, 25)
    fig = run(tmp_path, seed, faults=faults, rounds=rounds, tables=2, quiet_timeout=45)
    assert sum(fig.faults.values()) == faults
    assert fig.problems == [], fig.problems
    assert fig.sent > 50, "too short a session to mean anything"
    assert (fig.applied, fig.lost, fig.duplicated) == (fig.sent, 0, 0), fig.line()


@needs_mosquitto
def test_the_check_sees_a_loss_a_changed_trigger_and_a_wrong_sum(tmp_path):
    """The check is not vacuous: remove an applied row, change a trigger, add a movement."""
    fr = FaultRun(tmp_path, seed=5, tables=1, rounds=6, pace_ms=0)
    try:
        fr.start()
        assert fr.quiesce(30), fr.problems
    finally:
        fr.close()
    assert fr.check().problems == []
    fr.read_triggers()
    db = sqlite3.connect(fr.ledger)
    with db:
        db.execute("DELETE FROM applied WHERE n = (SELECT MAX(n) FROM applied)")
        db.execute("UPDATE draws SET commitment = 'x' || commitment WHERE ended IS NULL")
        db.execute(
            "INSERT INTO movements (pool, table_id, seq, what, amount) SELECT pool, table_id,"
            " seq, what, amount FROM movements WHERE what='contribution' LIMIT 1"
        )
    db.close()
    fig = fr.check()
    assert fig.lost == 1 and fig.duplicated == 0
    text = "\n".join(fig.problems)
    assert "trigger changed" in text
    assert "ledger contributions" in text and "meter != the sum" in text


# -- replays and claims that do not qualify ------------------------------------------------------

CONFIG = jackpot_config()


def message(kind: str, seq: int, payload: dict, boot: int = 1) -> bytes:
    publish = Publish(topic=kind, key=f"k-{seq}", payload=payload)
    message = envelope(T7, boot, seq, publish, 1_770_000_000_000 + seq)
    return json.dumps(table_signer(T7).sign(topic_for(T7, kind), message)).encode()


def contribution_payload(seq: int) -> dict:
    return {"round": seq, "game": "pa-standard", "spot": 1, "wager": "blazing_7s",
            "pool": "blazing_7s", "stake": 500, "mystery": True}  # fmt: skip


def next_of(client, kind: str, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = client.get(0.2)
        if m is not None and m.topic.endswith("/" + kind):
            return parse_message(m.topic, m.payload)[2]
    raise AssertionError(f"no {kind}")


def snapshot(ledger: Path) -> dict:
    db = sqlite3.connect(ledger)
    try:
        return {
            t: db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
            for t in ("meters", "movements", "applied", "awards", "mystery")
        }
    finally:
        db.close()


def test_an_old_replay_after_a_restart_changes_nothing(tmp_path, broker):  # noqa: F811
    ledger = tmp_path / "ledger.db"
    kw = {"backoff": (0.05, 0.5), "randbelow": lambda n: 61_357, "signer": controller_signer()}
    args = (CONFIG, ledger, broker.host, broker.port, CONTROLLER, broker.passwords[CONTROLLER])
    table = broker.client(T7, client_id="raw-table")
    assert table.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
    svc = JackpotService(*args, **kw)
    try:
        assert svc.wait_online(10)
        for seq in (1, 2, 3):
            table.publish(topic_for(T7, "contribution"), message("contribution", seq,
                          contribution_payload(seq)))  # fmt: skip
            assert next_of(table, "ack")["seq"] == seq
    finally:
        svc.close()
    before = snapshot(ledger)
    svc = JackpotService(*args, **kw)  # a restart: the replay protection is on disk
    try:
        assert svc.wait_online(10)
        for seq, boot in ((1, 1), (2, 2), (1, 3)):  # old seqs, from this boot or a later one
            same = contribution_payload(seq)
            table.publish(topic_for(T7, "contribution"), message("contribution", seq, same,
                          boot))  # fmt: skip
            assert next_of(table, "ack")["seq"] == 3
        wait_for(lambda: svc.health()["counts"].get("duplicate") == 3, what="3 duplicates")
        # the same sequence numbers with other content: refused and alarmed, never acked
        for seq, boot in ((1, 1), (2, 2), (3, 3)):
            changed = contribution_payload(seq) | {"stake": 5_000}
            table.publish(topic_for(T7, "contribution"), message("contribution", seq, changed,
                          boot))  # fmt: skip
        wait_for(lambda: svc.health()["alarm_counts"].get("seq_conflict") == 3, what="alarms")
        assert svc.health()["counts"].get("duplicate") == 3
        assert [a["seq"] for a in svc.health()["alarms"]] == [1, 2, 3]
    finally:
        svc.close()
        table.close()
    assert snapshot(ledger) == before


def test_a_claim_that_does_not_qualify_is_refused_logged_and_moves_nothing(
    tmp_path,
    broker,  # noqa: F811
    caplog,
):
    caplog.set_level("INFO")
    ledger = tmp_path / "ledger.db"
    svc = JackpotService(CONFIG, ledger, broker.host, broker.port, CONTROLLER,
                         broker.passwords[CONTROLLER], backoff=(0.05, 0.5),
                         signer=controller_signer())  # fmt: skip
    table = broker.client(T7, client_id="raw-table")
    try:
        assert svc.wait_online(10)
        assert table.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
        contrib = contribution_payload(1) | {"spot": 2}
        table.publish(topic_for(T7, "contribution"), message("contribution", 1, contrib))
        assert next_of(table, "ack")["seq"] == 1
        before = snapshot(ledger)
        # three 7s (7, 7 and the dealer's 7) would hit; a 7 and an 8 do not
        claim = {"round": 1, "game": "pa-standard", "spot": 2, "wager": "blazing_7s",
                 "pool": "blazing_7s", "stake": 500, "line": "Three 7's",
                 "meter": "100% of meter", "cards": ["7D", "8D"], "up_card": "7S"}  # fmt: skip
        table.publish(topic_for(T7, "hit_claim"), message("hit_claim", 2, claim))
        got = {}
        for m in table.drain(0.5):
            kind, _, body = parse_message(m.topic, m.payload)
            got.setdefault(kind, []).append(body)
    finally:
        table.close()
        svc.close()
    (award,) = got["award"]
    assert award["state"] == "refused" and award["amount"] == 0
    assert "no contribution" not in award["reason"], award["reason"]
    assert [a["seq"] for a in got["ack"]] == [2]  # the sequence is taken; nothing else
    after = snapshot(ledger)
    assert after["meters"] == before["meters"] and after["movements"] == before["movements"]
    assert [row[4] for row in after["applied"]] == ["contribution", "hit_claim"]
    with Ledger(ledger, CONFIG) as led:
        row = led.applied()[-1]
        assert row[3] == "refused" and row[4] == award["reason"]
    assert "ALARM claim_" in caplog.text and f"from {T7} seq 2" in caplog.text
    (alarm,) = svc.health()["alarms"]
    assert (alarm["table"], alarm["seq"]) == (T7, 2) and alarm["kind"].startswith("claim_")
