"""The jackpot controller service end to end: a real Mosquitto (tests/mqtt_broker.py), real
SQLite ledgers and outboxes, real table publishers, and a service child process killed -9.

Table outboxes are filled by a ``JournaledTable`` playing Blazing 7's sessions
(tests/_journal_feeder.session_events), published by a real ``TablePublisher``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events
from link_keys import (
    CONTROLLER_KID,
    controller_signer,
    controller_verifier,
    jackpot_config,
    jackpot_config_text,
    table_signer,
    write_key,
)
from mqtt_broker import CONTROLLER, CONTROLLER_TWIN, OBSERVER, SIGN, TABLES, broker  # noqa: F401

from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.messages import JACKPOT_STATUS_TOPIC, envelope, parse_message, topic_for
from controller.link.publisher import TablePublisher
from controller.table.effects import Publish
from jackpot.cli import main
from jackpot.draws import TriggerKey
from jackpot.ledger import Ledger
from jackpot.pools import contribution
from jackpot.service import JackpotService

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config" / "jackpot.example.toml"
CONFIG = jackpot_config()
T7, T8 = TABLES
TRIGGER_OFFSET = 61_357  # trigger = $250 + 613.57 = 86357 cents: must never be published


def wait_for(predicate, timeout: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def fixed(offset: int):
    return lambda n: offset


def fill(path: Path, pa, rounds: int, seed: int = 3) -> list:
    """Journal ``rounds`` rounds; return the outbox rows (kind, key, payload) in order."""
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in session_events("pa-standard", seed, rounds):
            table.handle(event)
    box = Outbox(path)
    try:
        return box.pending()
    finally:
        box.close()


def depth(path: Path) -> int:
    box = Outbox(path)
    try:
        return box.depth()
    finally:
        box.close()


def acked(path: Path) -> int:
    box = Outbox(path)
    try:
        return box.last_acknowledged()
    finally:
        box.close()


def expected_contributions(rows) -> dict[str, Fraction]:
    """Per pool, what the table's contributions should add, computed from the table's rows."""
    out: dict[str, Fraction] = {}
    for row in rows:
        if row.kind != "contribution":
            continue
        p = row.payload
        pools = [CONFIG.progressive_for(p["wager"])]
        if p["mystery"]:
            pools.append(CONFIG.mystery_for(p["wager"]))
        for pool in pools:
            out[pool.name] = out.get(pool.name, Fraction(0)) + contribution(pool, p["stake"])
    return out


def service(broker, ledger: Path, **kwargs) -> JackpotService:  # noqa: F811
    kwargs.setdefault("backoff", (0.05, 0.5))
    kwargs.setdefault("randbelow", fixed(TRIGGER_OFFSET))
    svc = JackpotService(
        CONFIG,
        ledger,
        broker.host,
        broker.port,
        CONTROLLER,
        broker.passwords[CONTROLLER],
        signer=controller_signer(),
        **kwargs,
    )
    assert svc.wait_online(10), "the service did not come online"
    return svc


def publisher(broker, path: Path, **kwargs) -> TablePublisher:  # noqa: F811
    kwargs.setdefault("backoff", (0.05, 0.5))
    return TablePublisher(
        path, T7, broker.host, broker.port, T7, broker.passwords[T7],
        signer=table_signer(T7), verifier=controller_verifier(), **kwargs,
    )  # fmt: skip


def trigger(ledger: Path) -> int:
    """The live Mystery trigger, opened with the trigger key (the ledger holds it sealed)."""
    db = sqlite3.connect(ledger)
    try:
        cycle, sealed = db.execute(
            "SELECT cycle, sealed FROM draws WHERE ended IS NULL AND pool='mystery'"
        ).fetchone()
    finally:
        db.close()
    return TriggerKey.load(os.environ["JACKPOT_TRIGGER_KEY"]).open("mystery", cycle, sealed)[0]


def check_ledger(ledger: Path, rows) -> None:
    """Every (table, seq) applied once, in order; contributions = the table's; meter = sum."""
    with Ledger(ledger, CONFIG) as led:
        applied = [(t, s) for t, s, *_ in led.applied()]
        assert applied == [(T7, n) for n in range(1, len(rows) + 1)]
        assert all(outcome == "applied" for *_, outcome, _ in led.applied())
        for pool, total in expected_contributions(rows).items():
            moves = led.totals(pool)
            assert moves["contribution"] == total, pool
            held = sum(v for k, v in moves.items() if k != "excess")  # excess: information
            assert led.meter(pool) == held, pool


def test_a_table_stream_is_applied_once_acked_and_metered(tmp_path, pa, broker, caplog):  # noqa: F811
    caplog.set_level("DEBUG")
    box, ledger = tmp_path / "t.journal", tmp_path / "ledger.db"
    rows = fill(box, pa, rounds=12)
    assert sum(r.kind == "contribution" for r in rows) >= 10
    table = broker.client(OBSERVER)  # what the table is told (a spy: T7 is the publisher)
    assert table.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
    meters = broker.client(SIGN, client_id="sign-live")
    assert meters.subscribe("bj/v1/meters/#").value == 1
    svc = service(broker, ledger, meter_rate=2)
    pub = publisher(broker, box, window=5)
    try:
        wait_for(lambda: depth(box) == 0, what="the outbox to drain")
        assert acked(box) == len(rows)
        counts = svc.health()["counts"]
        assert counts["applied"] == len(rows)
        assert counts.get("malformed", 0) == counts.get("gap", 0) == 0
        with Ledger(ledger, CONFIG) as led:
            final = {p: r.message(0) for p, r in led.meters().items()}
        # the coalesced meters go out: read until each pool's final value has arrived
        live: list = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            live += [m for m in meters.drain(0.3) if not m.retain]
            seen = {parse_message(m.topic, m.payload)[2]["pool"]: m for m in live}
            if all(
                parse_message(m.topic, m.payload)[2]["seq"] == final[p]["seq"]
                for p, m in seen.items()
            ) and set(seen) == set(final):
                break
    finally:
        pub.close()
        svc.close()
        svc.close()  # safe twice
    check_ledger(ledger, rows)
    # coalesced: fewer meter messages than contributions, the last one is the final value
    meters.close()  # the late sign below is the same user: one connection at a time
    contributions = sum(r.kind == "contribution" for r in rows)
    assert 1 <= len([m for m in live if m.topic.endswith("blazing_7s")]) < contributions
    last = {}
    for m in live:
        _, _, body = parse_message(m.topic, m.payload)
        last[body["pool"]] = body
    for pool, body in last.items():
        assert (body["amount"], body["fraction"], body["seq"]) == (
            final[pool]["amount"],
            final[pool]["fraction"],
            final[pool]["seq"],
        )
    # a late sign sees the meters retained, and the controller's status offline
    sign = broker.client(SIGN, client_id="sign-late")
    try:
        assert sign.subscribe("bj/v1/meters/#").value == 1
        assert sign.subscribe("bj/v1/jackpot/status").value == 1
        got = sign.drain(0.5)
    finally:
        sign.close()
    assert all(m.retain for m in got)
    seen = {}
    for m in got:
        kind, _, body = parse_message(m.topic, m.payload)
        controller_verifier().verify(m.topic, body, kind)  # the signs' meters are signed
        seen[body.get("pool", kind)] = body
    assert seen["jackpot_status"]["state"] == "offline"
    assert seen["jackpot_status"]["boot"] == 1
    assert seen["blazing_7s"]["amount"] == final["blazing_7s"]["amount"]
    assert seen["mystery"]["must_hit_by"] == 100_000
    # every ack the table got is valid and in order; the trigger is nowhere
    acks = []
    for m in table.drain(0.3):
        kind, _, body = parse_message(m.topic, m.payload)
        assert controller_verifier().verify(m.topic, body, kind) == CONTROLLER_KID
        if kind == "ack":
            acks.append(body["seq"])
    assert acks == sorted(acks) and acks[-1] == len(rows)
    secret = str(trigger(ledger))
    assert secret == str(25_000 + TRIGGER_OFFSET)
    published = [m.payload.decode() for m in (*live, *got)]
    assert not any(secret in text for text in published)
    assert secret not in caplog.text
    table.close()
    meters.close()


def contribution_message(seq: int, boot: int = 1, table: str = T7, spot: int = 1) -> bytes:
    payload = {"round": seq, "game": "pa-standard", "spot": spot, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": 500, "mystery": True}  # fmt: skip
    publish = Publish(topic="contribution", key=f"round-{seq}/spot-{spot}/c", payload=payload)
    message = envelope(T7, boot, seq, publish, 1_770_000_000_000 + seq)
    message["table"] = table
    return json.dumps(table_signer(T7).sign(topic_for(table, "contribution"), message)).encode()


def signed_status(message: dict) -> str:
    return json.dumps(table_signer(T7).sign(topic_for(T7, "status"), message))


def next_of(client, kind: str, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = client.get(0.2)
        if m is not None and m.topic.endswith("/" + kind):
            return parse_message(m.topic, m.payload)[2]
    raise AssertionError(f"no {kind}")


def test_gap_resend_forgeries_and_stale_wills(tmp_path, broker):  # noqa: F811
    ledger = tmp_path / "ledger.db"
    svc = service(broker, ledger)
    table = broker.client(T7, client_id="raw-table")
    try:
        assert table.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
        topic = topic_for(T7, "contribution")
        assert table.publish(topic, contribution_message(1)).value in (0, 16)
        assert next_of(table, "ack")["seq"] == 1
        # seq 3 before 2: nothing applied, resend from 2
        table.publish(topic, contribution_message(3))
        assert next_of(table, "resend")["from"] == 2
        table.publish(topic, contribution_message(2))
        assert next_of(table, "ack")["seq"] == 2
        table.publish(topic, contribution_message(3))
        assert next_of(table, "ack")["seq"] == 3
        # a replay of 2: nothing applied, the latest ack again
        table.publish(topic, contribution_message(2))
        assert next_of(table, "ack")["seq"] == 3
        # publishing on another table's topic: the broker refuses it (135)
        forged = contribution_message(4, table=T8)
        assert table.publish(topic_for(T8, "contribution"), forged).value == 135
        # another table in the envelope on its own topic: the service refuses it
        table.publish(topic, forged)
        table.publish(topic, b"{not json")
        wait_for(lambda: svc.health()["counts"].get("malformed") == 2, what="two refusals")
        # a birth from boot 2: the latest ack again; then a late will of boot 1 is ignored
        status = topic_for(T7, "status")
        birth = {"v": 1, "table": T7, "boot": 2, "state": "online", "sent_t": 1}
        table.publish(status, signed_status(birth), retain=True)
        assert next_of(table, "ack")["seq"] == 3
        will = {"v": 1, "table": T7, "boot": 1, "state": "offline", "clean": False, "sent_t": 0}
        table.publish(status, signed_status(will), retain=True)
        wait_for(lambda: svc.health()["counts"].get("stale_status") == 1, what="stale will")
        counts = svc.health()["counts"]
        assert counts.get("table_offline", 0) == 0 and counts["table_online"] == 1
        assert (counts["applied"], counts["duplicate"], counts["gap"]) == (3, 1, 1)
    finally:
        table.close()
        svc.close()
    with Ledger(ledger, CONFIG) as led:
        assert [s for _, s, *_ in led.applied()] == [1, 2, 3]
        assert led.totals("blazing_7s")["contribution"] == 3 * Fraction(75)


def test_a_signed_contribution_for_a_spot_the_table_does_not_have_is_refused(tmp_path, broker):  # noqa: F811
    """Issue 26: the ledger took a contribution for spot 9 of a 7-spot table. Signed with the
    table's key (a stolen key, or a table that is not what the config says), it is refused
    like any message off the terms: alarmed and counted, no meter moves, and it takes its
    sequence, so the table's stream goes on (the next one, spot 7, is applied)."""
    ledger = tmp_path / "ledger.db"
    svc = service(broker, ledger)
    table = broker.client(T7, client_id="raw-table")
    try:
        assert table.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
        topic = topic_for(T7, "contribution")
        table.publish(topic, contribution_message(1, spot=9))
        assert next_of(table, "ack")["seq"] == 1
        table.publish(topic, contribution_message(2, spot=7))
        assert next_of(table, "ack")["seq"] == 2
        health = svc.health()
    finally:
        table.close()
        svc.close()
    assert (health["counts"]["refused"], health["counts"]["applied"]) == (1, 1)
    (alarm,) = health["alarms"]
    assert (alarm["kind"], alarm["table"], alarm["seq"]) == ("contribution_terms", T7, 1)
    assert "spot 9: table hcm-bj-07 has 7 betting spots" in alarm["detail"]
    with Ledger(ledger, CONFIG) as led:
        assert led.totals("blazing_7s")["contribution"] == Fraction(75)  # spot 7's only
        assert [outcome for *_, outcome, _ in led.applied()] == ["refused", "applied"]


def test_a_mystery_hit_is_offered_and_offered_again_on_birth(tmp_path, broker):  # noqa: F811
    draws = iter([0, TRIGGER_OFFSET])  # first trigger = the seed: the first contribution hits
    ledger = tmp_path / "ledger.db"
    svc = service(broker, ledger, randbelow=lambda n: next(draws))
    table = broker.client(T7, client_id="raw-table")
    try:
        assert table.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
        table.publish(topic_for(T7, "contribution"), contribution_message(1))
        award = next_of(table, "award")
        assert (award["state"], award["pool"], award["amount"]) == ("offered", "mystery", 25_000)
        assert award["award_id"] == f"{T7}/1" and award["order"] == 1
        birth = {"v": 1, "table": T7, "boot": 1, "state": "online", "sent_t": 1}
        table.publish(topic_for(T7, "status"), signed_status(birth), retain=True)
        assert next_of(table, "award")["award_id"] == f"{T7}/1"
    finally:
        table.close()
        svc.close()


def test_main_refuses_bad_arguments_clearly(tmp_path, capsys):
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    bad = tmp_path / "bad.toml"
    bad.write_text("[pools.x]\nkind = 'progressive'\nbogus = 1\n")
    base = ["--ledger", str(tmp_path / "l.db"), "--port", "1"]
    cases = [
        (["--config", str(bad), "--password-file", str(pw)], "bad config"),
        (["--config", str(tmp_path / "none.toml"), "--password-file", str(pw)], "bad config"),
        (["--config", str(EXAMPLE), "--password-file", str(tmp_path / "nope")], "password-file"),
    ]
    for args, words in cases:
        with pytest.raises(SystemExit) as exit_:
            main([*args, *base])
        assert exit_.value.code == 2
        assert words in capsys.readouterr().err
    assert not (tmp_path / "l.db").exists()


CHILD = [sys.executable, "-c", "import sys; from jackpot.cli import main; "
         "sys.exit(main(sys.argv[1:]))"]  # fmt: skip


def start_child(broker, ledger: Path, pw: Path) -> subprocess.Popen:  # noqa: F811
    config, key = ledger.parent / "jackpot.toml", ledger.parent / "controller.key"
    if not config.exists():
        config.write_text(jackpot_config_text())
        write_key(controller_signer(), key)
    args = ["--config", str(config), "--ledger", str(ledger), "--host", broker.host]
    args += ["--port", str(broker.port), "--password-file", str(pw), "--log-level", "WARNING"]
    args += ["--signing-key", str(key), "--key-id", CONTROLLER_KID]
    return subprocess.Popen(
        [*CHILD, *args],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def controller_status(broker) -> dict | None:  # noqa: F811
    sign = broker.client(SIGN, client_id=f"sign-{time.monotonic_ns()}")
    try:
        sign.subscribe("bj/v1/jackpot/status")
        m = sign.get(0.5)
        return None if m is None else json.loads(m.payload)
    finally:
        sign.close()


def test_kill_9_mid_stream_loses_nothing_and_counts_nothing_twice(tmp_path, pa, broker):  # noqa: F811
    box, ledger, pw = tmp_path / "t.journal", tmp_path / "ledger.db", tmp_path / "pw"
    pw.write_text(broker.passwords[CONTROLLER] + "\n")
    pw.chmod(0o600)
    rows = fill(box, pa, rounds=60)
    n = len(rows)
    child = start_child(broker, ledger, pw)
    pub = publisher(broker, box, window=3)
    try:
        wait_for(lambda: acked(box) >= n // 4, what="a quarter applied")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(5)
        killed_at = acked(box)
        assert killed_at < n, "the stream finished before the kill"
        wait_for(lambda: (controller_status(broker) or {}).get("state") == "offline", what="will")
        child.stderr.close()
        child = start_child(broker, ledger, pw)
        wait_for(lambda: depth(box) == 0, timeout=30, what="the rest after the restart")
        # the retained status, read by a sign that may take a while on a busy machine
        status = wait_for(lambda: controller_status(broker), timeout=30, what="the status")
        assert (status["state"], status["boot"]) == ("online", 2)
    finally:
        pub.close()
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)  # a clean stop: offline, disconnect, exit 0
            assert child.wait(10) == 0
        err = child.stderr.read().decode()
        child.stderr.close()
    assert "Traceback" not in err
    status = wait_for(lambda: controller_status(broker), timeout=30, what="the status")
    assert (status["state"], status["boot"]) == ("offline", 2)
    check_ledger(ledger, rows)


# -- group commit --------------------------------------------------------------------------

#: The ledger's tables that hold money and order (meta holds the controller's boot counter).
LEDGER_TABLES = ("tables", "applied", "meters", "mystery", "movements", "awards",
                 "contributions", "round_results", "draws")  # fmt: skip
#: Columns that differ between two runs of one stream: when (the controller's clock) and each
#: draw's random salt (so its commitment and ciphertext), and the hash chains over them
#: (jackpot/chain.py); the triggers themselves do not.
RUN_COLUMNS = {"received_utc", "gaming_day", "t_utc", "offered_utc", "committed_utc",
               "drawn_utc", "ended_utc", "commitment", "sealed", "salt", "chain",
               "confirm_chain"}  # fmt: skip


def ledger_rows(ledger: Path) -> dict[str, list[tuple]]:
    db = sqlite3.connect(ledger)
    try:
        out = {}
        for table in LEDGER_TABLES:
            cursor = db.execute(f"SELECT * FROM {table} ORDER BY rowid")
            keep = [i for i, d in enumerate(cursor.description) if d[0] not in RUN_COLUMNS]
            out[table] = [tuple(row[i] for i in keep) for row in cursor.fetchall()]
        out["live trigger"] = [trigger(ledger)]
        return out
    finally:
        db.close()


def signed_stream(rows) -> list[tuple[str, bytes]]:
    """The table's outbox rows as the publisher sends them (signed envelopes, fixed times)."""
    out = []
    for row in rows:
        publish = Publish(topic=row.kind, key=row.key, payload=row.payload)
        message = envelope(T7, 1, row.seq, publish, 1_770_000_000_000 + row.seq)
        topic = topic_for(T7, row.kind)
        out.append((topic, json.dumps(table_signer(T7).sign(topic, message)).encode()))
    return out


def mystery_offset(rows, share: float) -> int:
    """A trigger offset the Mystery meter reaches after ``share`` of the stream's Mystery
    contributions: the hit lands inside the stream, not at its first or last message."""
    pool = CONFIG.mystery_for("blazing_7s")
    feeding = [r for r in rows if r.kind == "contribution" and r.payload["mystery"]]
    fed = feeding[: int(len(feeding) * share)]
    return int(sum(contribution(pool, r.payload["stake"]) for r in fed))


def test_a_burst_applied_in_batches_gives_the_ledger_of_one_by_one(
    tmp_path,
    pa,
    broker,  # noqa: F811
    monkeypatch,
):
    """The same signed stream, once a message at a time (each acked before the next) and
    once queued by the broker while the controller was away and delivered as a burst (batches
    of 16; the first fails on the disk: no PUBACK, the broker sends it all again): the
    ledgers are identical row for row (applied, meters, the Mystery trigger, movements,
    awards), and the table is told the same awards, Mystery hits inside batches included,
    with one ack per batch."""
    rows = fill(tmp_path / "t.journal", pa, rounds=40)
    stream = signed_stream(rows)
    n = len(stream)
    draws = fixed(mystery_offset(rows, 0.4))
    batches: list[list[int]] = []
    failures = []  # the burst's first batch: the disk fails
    apply_batch = Ledger.apply_batch

    def recording(self, messages, **options):
        if failures == [] and len(messages) > 1:
            failures.append([m["seq"] for m in messages])
            raise sqlite3.OperationalError("disk I/O error")
        batches.append([m["seq"] for m in messages])
        return apply_batch(self, messages, **options)

    monkeypatch.setattr(Ledger, "apply_batch", recording)
    spy = broker.client(OBSERVER)
    assert spy.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
    table = broker.client(T7, client_id="raw-table")
    one, burst = tmp_path / "one.db", tmp_path / "burst.db"
    try:
        svc = service(broker, one, randbelow=draws)
        try:
            for seq, (topic, payload) in enumerate(stream, 1):
                assert table.publish(topic, payload).value in (0, 16)
                wait_for(lambda s=seq: svc.health()["tables"][T7]["last_seq"] == s, what=f"{seq}")
        finally:
            svc.close()
        assert all(len(b) == 1 for b in batches[-n:]) and len(batches) >= n
        told_one = [parse_message(m.topic, m.payload) for m in spy.drain(0.5)]
        # the controller is away: its persistent session queues the whole stream
        del batches[:]
        for topic, payload in stream:
            assert table.publish(topic, payload).value in (0, 16)
        svc = service(broker, burst, randbelow=draws, batch_max=16)
        try:
            wait_for(lambda: svc.health()["tables"][T7]["last_seq"] == n, what="the burst")
            health = svc.health()
        finally:
            svc.close()
        told_burst = [parse_message(m.topic, m.payload) for m in spy.drain(0.5)]
    finally:
        table.close()
        spy.close()
    assert failures and health["counts"]["ledger_error"] == 1
    assert health["counts"]["applied"] == n and health["counts"]["batch"] == len(batches)
    assert sum(map(len, batches)) == n and len(batches) < n / 4  # grouped, each once
    assert health["largest_batch"] == max(map(len, batches)) == 16
    assert ledger_rows(burst) == ledger_rows(one)
    with Ledger(burst, CONFIG) as led:
        hits = [a for a in led.awards() if a.pool == "mystery"]
        meters = led.meters()
    assert hits and all(a.state == "offered" for a in hits)
    for hit in hits:  # each Mystery hit came in a batch with other messages
        assert len(next(b for b in batches if hit.claim_seq in b)) > 1
    key = lambda a: (a["award_id"], a["state"], a["pool"], a["amount"], a.get("order"))  # noqa: E731
    awards_one = [body for kind, _, body in told_one if kind == "award"]
    awards_burst = [body for kind, _, body in told_burst if kind == "award"]
    assert sorted(map(key, awards_burst)) == sorted(map(key, awards_one))
    assert {key(a)[0] for a in awards_one} >= {a.award_id for a in hits}
    mystery = CONFIG.mystery_for("blazing_7s").name
    assert meters[mystery].amount < 25_000 + mystery_offset(rows, 0.4)  # it was hit and reset
    # acks are cumulative: one a message one by one, one per batch (its last) in the burst
    assert [body["seq"] for kind, _, body in told_one if kind == "ack"] == list(range(1, n + 1))
    acks = [body["seq"] for kind, _, body in told_burst if kind == "ack"]
    assert acks == [b[-1] for b in batches]


def test_a_status_in_a_burst_is_handled_after_the_messages_before_it(tmp_path, broker):  # noqa: F811
    """Queued while the controller was away: seq 1-5, the table's birth, seq 6-9. The birth
    is answered with the ack of 5 (the batch before it is committed first), then 9."""
    ledger = tmp_path / "ledger.db"
    service(broker, ledger).close()  # the controller's session exists: the broker queues
    table = broker.client(T7, client_id="raw-table")
    spy = broker.client(OBSERVER)
    try:
        assert spy.subscribe(f"bj/v1/jackpot/{T7}/ack").value == 1
        topic = topic_for(T7, "contribution")
        for seq in range(1, 6):
            assert table.publish(topic, contribution_message(seq)).value in (0, 16)
        birth = {"v": 1, "table": T7, "boot": 1, "state": "online", "sent_t": 1}
        assert table.publish(topic_for(T7, "status"), signed_status(birth)).value in (0, 16)
        for seq in range(6, 10):
            assert table.publish(topic, contribution_message(seq)).value in (0, 16)
        svc = service(broker, ledger)
        try:
            wait_for(lambda: svc.health()["tables"][T7]["last_seq"] == 9, what="seq 9")
            counts = svc.health()["counts"]
        finally:
            svc.close()
        acks = [parse_message(m.topic, m.payload)[2]["seq"] for m in spy.drain(0.5)]
    finally:
        spy.close()
        table.close()
    assert counts["table_online"] == 1 and counts["applied"] == 9
    assert acks.count(5) == 2 and acks == sorted(acks) and acks[-1] == 9, acks


def test_a_late_will_of_another_controller_is_answered_with_online(tmp_path, broker):  # noqa: F811
    """A killed leader's will (``offline``, retained) can reach the broker's status topic
    after the new leader came online; the signs would show the jackpots offline for good.
    The controller watches its status topic (without its own publishes) and says ``online``
    again within a second; a sign that connects later gets the new controller's ``online``."""
    old_leader = broker.client(CONTROLLER_TWIN)
    sign = broker.client(SIGN)
    with service(broker, tmp_path / "ledger.db") as svc:
        time.sleep(0.2)
        will = controller_signer().sign(
            JACKPOT_STATUS_TOPIC, {"v": 1, "state": "offline", "boot": 99, "sent_t": 1}
        )
        assert old_leader.publish(JACKPOT_STATUS_TOPIC, json.dumps(will), retain=True).value == 0

        def latest():
            late = broker.client(SIGN, client_id="late-sign")
            try:
                late.subscribe(JACKPOT_STATUS_TOPIC)
                got = late.get(2)
                return got and json.loads(got.payload)
            finally:
                late.close()

        deadline = time.monotonic() + 30  # a busy machine: the sign's reads may be slow
        status = latest() or {}
        while status.get("state") != "online" and time.monotonic() < deadline:
            time.sleep(0.1)
            status = latest() or {}
        assert (status.get("state"), status.get("boot")) == ("online", svc.boot)
        assert svc.health()["counts"]["status_again"] == 1
    old_leader.close()
    sign.close()
