"""A table's significant events reach the center (issue 28 item 4; N.J.A.C. 13:69E-1.39C(b)5).

What a surveillance or compliance officer relies on: each signed ``event`` a table sends is in
the jackpot ledger once, with the table, its seq, the table's own UTC time and the
controller's receive time and gaming day, whatever the table's clock said; ``report events``
lists them in the order received, by gaming day; a ledger of schema 3 migrates and keeps
everything; through the running service a signed event is stored, acknowledged and, where a
person must look, an alarm, while one whose signature fails is refused, counted and alarmed,
and leaves nothing in the ledger. Real SQLite, real PostgreSQL (tests/pg_server.py), a real
Mosquitto (tests/mqtt_broker.py).
"""

from __future__ import annotations

import json
import time

from link_keys import controller_signer, jackpot_config, table_signer
from mqtt_broker import CONTROLLER, OBSERVER, TABLES, broker  # noqa: F401
from pg_server import ledger_at, pg_server  # noqa: F401
from test_jackpot_ledger import CONFIG, T1, T3, contrib, envelope, fixed, rows, state
from test_jackpot_time import Clock, utc_ms

from controller.link.messages import parse_message, topic_for
from controller.link.signing import digest
from jackpot.alarms import AlarmLog
from jackpot.chain import V5_COLUMNS
from jackpot.commands import run
from jackpot.ledger import SCHEMA_VERSION as LEDGER_SCHEMA
from jackpot.ledger import Ledger, Status
from jackpot.service import JackpotService
from jackpot.store import open_store, postgres, sqlite

EVENT_COLUMNS = ("table_id, seq, code, table_utc_ms, received_utc, gaming_day, round, in_round,"
                 " detail, by_name")  # fmt: skip
A_WRONG_CLOCK = utc_ms("2001-01-01T00:00:00")  # an unsynchronised table's idea of the time


def event(table: str, seq: int, code: str, utc: int, *, key: str | None = None, rnd: int = 12,
          in_round: bool = False, **more) -> dict:  # fmt: skip
    payload = {"code": code, "utc_ms": utc, "round": rnd, "in_round": in_round, **more}
    return envelope(table, seq, "event", key or f"event/{seq}", payload)


def report(capsys, location, *argv: str) -> tuple[int, list[dict], str]:
    status = run(["report", "events", "--ledger", str(location), "--format", "json", *argv])
    out, err = capsys.readouterr()
    return status, (json.loads(out)["rows"] if status == 0 else []), err


def test_an_event_is_kept_with_both_clocks_once_and_listed_by_gaming_day(ledger_at, capsys):  # noqa: F811
    location = ledger_at()
    clock = Clock("2026-03-02T10:30:00")  # 05:30 in New York: gaming day 2026-03-01
    with Ledger(location, CONFIG, randbelow=fixed(0), clock=clock) as led:
        assert led.apply(contrib(T1, 1, 1)).status is Status.APPLIED
        meters = led.meters()
        unsynced = event(T1, 2, "clock_unsynchronised", A_WRONG_CLOCK,
                         detail="chrony: not synchronised, offset unknown")  # fmt: skip
        got = led.apply(unsynced)
        assert (got.status, got.ack, got.alarm, got.awards, got.meters) == (
            Status.APPLIED, 2, None, (), ()
        )  # fmt: skip
        clock.set("2026-03-02T12:00:00")  # 07:00: gaming day 2026-03-02
        door = event(T1, 3, "shoe_door_open", utc_ms("2026-03-02T11:59:59.250"), rnd=2,
                     in_round=True, by="technician ana")  # fmt: skip
        power = event(T3, 1, "power_loss", 0, rnd=40, last_event=977,
                      last_utc_ms=utc_ms("2026-03-02T11:00:00"))  # fmt: skip
        assert [led.apply(m).status for m in (door, power)] == [Status.APPLIED] * 2
        before = state(led)
        # a resend is a duplicate, acknowledged again; a replayed key takes its seq, refused
        again = led.apply(unsynced)
        assert (again.status, again.ack) == (Status.DUPLICATE, 3)
        replay = led.apply(event(T1, 4, "shoe_door_closed", 1, key="event/3"))
        assert (replay.status, replay.alarm, replay.ack) == (Status.REFUSED, "key_replay", 4)
        assert led.meters() == meters  # no meter moves, ever
        after = state(led)
    assert after["movements"] == before["movements"] and after["awards"] == before["awards"]
    assert rows(location, f"SELECT {EVENT_COLUMNS} FROM events ORDER BY n") == [
        (T1, 2, "clock_unsynchronised", A_WRONG_CLOCK, utc_ms("2026-03-02T10:30:00"),
         "2026-03-01", 12, 0, "chrony: not synchronised, offset unknown", None),
        (T1, 3, "shoe_door_open", utc_ms("2026-03-02T11:59:59.250"),
         utc_ms("2026-03-02T12:00:00"), "2026-03-02", 2, 1, None, "technician ana"),
        (T3, 1, "power_loss", 0, utc_ms("2026-03-02T12:00:00"), "2026-03-02", 40, 0, None,
         None),
    ]  # fmt: skip
    # the events row and its applied row carry the same receive time and gaming day
    assert rows(location, "SELECT e.seq FROM events e JOIN applied a ON a.table_id=e.table_id"
                " AND a.seq=e.seq AND a.received_utc=e.received_utc AND a.gaming_day="
                "e.gaming_day AND a.kind='event' AND a.outcome='applied' ORDER BY e.n") == [
        (2,), (3,), (1,)]  # fmt: skip
    assert rows(location, f"SELECT outcome FROM applied WHERE table_id='{T1}' AND seq=4") == [
        ("refused",)
    ]
    status, listed, err = report(capsys, location)
    assert status == 0, err
    assert [(r["table"], r["seq"], r["code"]) for r in listed] == [
        (T1, 2, "clock_unsynchronised"),
        (T1, 3, "shoe_door_open"),
        (T3, 1, "power_loss"),
    ]
    assert listed[0] == {
        "received_utc": "2026-03-02T10:30:00.000Z", "gaming_day": "2026-03-01", "table": T1,
        "seq": 2, "code": "clock_unsynchronised", "table_utc": "2001-01-01T00:00:00.000Z",
        "round": 12, "in_round": "no", "by": "",
        "detail": "chrony: not synchronised, offset unknown", "fault": "", "at_start": "",
        "last_event": "", "last_utc": ""}  # fmt: skip
    assert (listed[1]["in_round"], listed[1]["by"]) == ("yes", "technician ana")
    assert (listed[2]["table_utc"], listed[2]["last_event"], listed[2]["last_utc"]) == (
        "unknown", 977, "2026-03-02T11:00:00.000Z")  # fmt: skip
    status, day, err = report(capsys, location, "--day", "2026-03-02")
    assert status == 0 and [(r["table"], r["seq"]) for r in day] == [(T1, 3), (T3, 1)], err
    assert run(["report", "events", "--ledger", str(location), "--day", "2026-03-01"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("received_utc,gaming_day,table,seq,code,table_utc,round,in_round,by,"
                      "detail,fault,at_start,last_event,last_utc")  # fmt: skip
    assert [line.split(",")[2:5] for line in out[1:]] == [[T1, "2", "clock_unsynchronised"]]
    status, _, err = report(capsys, location, "--pool", "mystery")
    assert status == 2 and "events belong to no pool: leave out --pool" in err


def test_a_schema_3_ledger_migrates_to_4_and_keeps_everything(ledger_at, capsys):  # noqa: F811
    assert LEDGER_SCHEMA == sqlite.SCHEMA_VERSION == postgres.SCHEMA_VERSION == 5
    location = ledger_at()
    with Ledger(location, CONFIG, randbelow=fixed(0)) as led:
        for seq in (1, 2, 3):
            led.apply(contrib(T1, seq, seq))
        before = state(led)
    store = open_store(location)  # what schema 3 had: everything but the events table
    try:
        store.execute("DROP TABLE events")
        for table, column in V5_COLUMNS:  # and schema 5's hash chains
            store.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        store.execute("DELETE FROM meta WHERE key = 'chain_since'")
        store.execute("UPDATE meta SET value='3' WHERE key='schema'")
    finally:
        store.close()
    status, _, err = report(capsys, location)
    assert status == 2 and "ledger schema 3; the reports read schema 5" in err
    with Ledger(location, CONFIG, randbelow=fixed(0)) as led:
        # meta's schema is 5 again, as before the downgrade, and the chain starts after
        assert [r for r in state(led)["meta"] if r[0] != "chain_since"] == before["meta"]
        assert {k: v for k, v in state(led).items() if k != "meta"} == {
            k: v for k, v in before.items() if k != "meta"
        }
        assert rows(location, "SELECT COUNT(*) FROM events") == [(0,)]
        assert led.apply(contrib(T1, 2, 2)).status is Status.DUPLICATE
        assert led.apply(event(T1, 4, "enclosure_open", 1, at_start=True)).status is (
            Status.APPLIED
        )
    assert rows(location, "SELECT table_id, seq, code FROM events") == [(T1, 4, "enclosure_open")]
    status, listed, err = report(capsys, location)
    assert status == 0 and [(r["code"], r["at_start"]) for r in listed] == [
        ("enclosure_open", "yes")], err  # fmt: skip


def test_the_service_stores_and_acks_a_signed_event_and_refuses_a_forged_one(
    tmp_path,
    broker,  # noqa: F811
    caplog,
):
    caplog.set_level("INFO", logger="jackpot.service")
    ledger = tmp_path / "ledger.db"
    t7 = TABLES[0]
    topic = topic_for(t7, "event")
    signer = table_signer(t7)
    power = signer.sign(topic, event(t7, 1, "power_loss", utc_ms("2026-03-02T12:00:00"),
                                     last_event=977, last_utc_ms=0))  # fmt: skip
    closed = signer.sign(topic, event(t7, 2, "shoe_door_closed", 1_772_456_400_000))
    # the same seq 1, signed, then altered: a power loss hidden as a closed shoe door
    forged = dict(power, payload={**power["payload"], "code": "shoe_door_closed"})
    told = broker.client(OBSERVER)  # what the table is told
    assert told.subscribe(f"bj/v1/jackpot/{t7}/#").value == 1
    svc = JackpotService(jackpot_config(), ledger, broker.host, broker.port, CONTROLLER,
                         broker.passwords[CONTROLLER], signer=controller_signer(),
                         backoff=(0.05, 0.5))  # fmt: skip
    table = broker.client(t7)
    try:
        assert svc.wait_online(10)
        for message in (forged, power, closed):  # in this order, on one topic
            assert table.publish(topic, json.dumps(message)).value == 0
        acks: list[int] = []
        deadline = time.monotonic() + 30
        while 2 not in acks and time.monotonic() < deadline:
            got = told.get(0.5)
            if got is not None and got.topic == topic_for(t7, "ack"):
                acks.append(parse_message(got.topic, got.payload)[2]["seq"])
        assert acks and acks[-1] == 2 and max(acks) == 2, acks
        health = svc.health()
    finally:
        table.close()
        told.close()
        svc.close()
    assert health["counts"]["signature"] == 1 and health["counts"]["applied"] == 2
    assert rows(ledger, "SELECT seq, digest FROM applied ORDER BY n") == [
        (1, digest(power)), (2, digest(closed))]  # fmt: skip
    assert rows(ledger, "SELECT seq, code FROM events ORDER BY n") == [
        (1, "power_loss"), (2, "shoe_door_closed")]  # fmt: skip
    with AlarmLog(ledger) as alarms:
        raised = {row.kind: row for row in alarms.rows()}
    assert set(raised) == {"signature", "event_power_loss"}  # a closed shoe door needs no one
    assert (raised["signature"].table, raised["signature"].seq) == (t7, 1)
    assert "nothing applied" in raised["signature"].detail
    power_alarm = raised["event_power_loss"]
    assert (power_alarm.table, power_alarm.seq) == (t7, 1)
    assert power_alarm.detail.startswith(
        f"table {t7}: power loss: the table's last stop was not clean (its last event #977 at "
        "an unknown time); round 12, between rounds; the table's time 2026-03-02T12:00:00.000Z"
    )
    logged = [r.getMessage() for r in caplog.records]
    assert any(line.startswith(f"ALARM event_power_loss from {t7} seq 1: ") for line in logged)
    assert (
        f"event from {t7} seq 2: the shoe door was closed; round 12, between rounds; the "
        "table's time 2026-03-02T13:00:00.000Z" in logged
    )
