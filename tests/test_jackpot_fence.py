"""The ledger's fence seen from the service, end to end on both backends (``ledger_at``: a real
SQLite file, a real PostgreSQL): a real Mosquitto, a real table (JournaledTable, Outbox,
TablePublisher) and the real :class:`JackpotService`, whose ledger is given a ``fence`` that
refuses every write for a while, as a hot standby's epoch check refuses an old leader's.

While fenced, nothing reaches the ledger and nothing is acknowledged: no application ack (the
table's outbox keeps every row), no PUBACK (the broker keeps the messages for the controller's
session). Once the fence lets it through, the same messages are applied, each exactly once.
"""

from __future__ import annotations

import threading
import time
from fractions import Fraction
from pathlib import Path

from _journal_feeder import SETTINGS, session_events
from link_keys import controller_signer, controller_verifier, jackpot_config, table_signer
from mqtt_broker import CONTROLLER, OBSERVER, TABLES, broker  # noqa: F401
from pg_server import ledger_at, pg_server  # noqa: F401

from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.publisher import TablePublisher
from jackpot.ledger import Ledger, LedgerFenced
from jackpot.pools import contribution
from jackpot.service import JackpotService

CONFIG = jackpot_config()
T7 = TABLES[0]


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def outbox(path: Path, what: str):
    box = Outbox(path)
    try:
        return getattr(box, what)()
    finally:
        box.close()


class Gate:
    """A fence that refuses while ``closed`` is set; counts what it was asked."""

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.asked = 0
        self.refused = 0

    def __call__(self, cursor) -> None:
        self.asked += 1
        cursor.execute("SELECT 1").fetchone()  # inside the ledger's own transaction
        if self.closed.is_set():
            self.refused += 1
            raise LedgerFenced("fenced: another controller holds a newer epoch")


def test_a_fenced_ledger_commits_nothing_and_the_service_acks_nothing(
    tmp_path,
    pa,
    broker,  # noqa: F811
    ledger_at,  # noqa: F811
):
    ledger, box = ledger_at(), tmp_path / "t7.journal"
    with JournaledTable(box, pa, SETTINGS) as table:
        for event in session_events("pa-standard", 3, 6):
            table.handle(event)
    rows = outbox(box, "pending")
    assert sum(r.kind == "contribution" for r in rows) >= 5
    spy = broker.client(OBSERVER)
    assert spy.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
    gate = Gate()
    svc = JackpotService(
        CONFIG, ledger, broker.host, broker.port, CONTROLLER, broker.passwords[CONTROLLER],
        signer=controller_signer(), backoff=(0.05, 0.3), fence=gate,
        randbelow=lambda n: n - 1,  # no Mystery hit in a few rounds
    )  # fmt: skip
    pub = None
    try:
        assert svc.wait_online(10)
        assert gate.asked >= 1  # opening the ledger and the boot count are writes: asked
        gate.closed.set()
        pub = TablePublisher(
            box, T7, broker.host, broker.port, T7, broker.passwords[T7],
            signer=table_signer(T7), verifier=controller_verifier(), backoff=(0.05, 0.3),
        )  # fmt: skip
        wait_for(lambda: gate.refused >= 3, what="the fence to refuse a few batches")
        wait_for(lambda: svc.health()["counts"].get("ledger_error", 0) >= 3)
        with Ledger(ledger, CONFIG) as led:  # nothing of the fenced batches
            assert led.applied() == [] and led.ack(T7) == 0
            seeds = {pool: led.meter(pool) for pool in CONFIG.pools}
        assert outbox(box, "last_acknowledged") == 0 and outbox(box, "depth") == len(rows)
        acks = [m for m in spy.drain(0.3) if m.topic.endswith("/ack")]
        assert acks == []  # no application ack while fenced
        gate.closed.clear()  # the fence lets it through: the same messages come again
        wait_for(lambda: outbox(box, "depth") == 0, what="the outbox to drain")
    finally:
        if pub is not None:
            pub.close()
        svc.close()
        spy.close()
    with Ledger(ledger, CONFIG) as led:
        assert [(t, s) for t, s, *_ in led.applied()] == [(T7, n) for n in range(1, len(rows) + 1)]
        for pool in CONFIG.pools.values():
            added = sum(
                (contribution(pool, r.payload["stake"]) for r in rows
                 if r.kind == "contribution" and (pool.kind == "progressive"
                                                  or r.payload["mystery"])),
                Fraction(0),
            )  # fmt: skip
            assert led.meter(pool.name) == seeds[pool.name] + added, pool.name
