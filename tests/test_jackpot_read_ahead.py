"""The service reads the next batch while a batch's COMMIT is on its way (PostgreSQL's fsync;
jackpot/service_messages.py ``_read_early``): the messages read meanwhile are checked then,
and handled in the order received once the commit answered; nothing is acked before its own
commit, every message once."""

from __future__ import annotations

import json

from mqtt_broker import OBSERVER, broker  # noqa: F401
from pg_server import pg_server  # noqa: F401
from test_jackpot_ledger import CONFIG, contrib
from test_jackpot_service import (
    T7,
    contribution_message,
    service,
    signed_status,
    wait_for,
)

from controller.link.messages import parse_message, topic_for
from jackpot.ledger import Ledger, Status
from jackpot.service_messages import MessagesMixin
from jackpot.store import open_store


def test_a_batch_calls_meanwhile_once_its_commit_is_sent_on_postgresql_only(
    tmp_path,
    pg_server,  # noqa: F811
):
    """``meanwhile`` runs after the batch's statements, the COMMIT's included, were sent and
    before the pipeline ends; SQLite (in-process, nothing to overlap) never calls it."""
    for location in (tmp_path / "l.db", pg_server.create_database()):
        called = []
        with Ledger(location, CONFIG) as led:
            results = led.apply_batch(
                [contrib(T7, 1, 1), contrib(T7, 2, 2)], meanwhile=lambda c=called: c.append(1)
            )
        assert [r.status for r in results] == [Status.APPLIED] * 2
        assert called == ([] if str(location).endswith(".db") else [1])


def test_a_burst_read_ahead_on_postgresql_is_applied_once_in_order(
    broker,  # noqa: F811
    pg_server,  # noqa: F811
    monkeypatch,
):
    """Queued while the controller was away: 60 contributions, a forged one, the table's
    birth in the middle; batches of 8 on PostgreSQL, each next batch read while the one
    before it committed. Every contribution applied once in sequence, the forgery refused,
    the birth answered after the messages before it, the acks in order."""
    read_ahead: list[int] = []
    read_early = MessagesMixin._read_early

    def counting(self):
        read_early(self)
        read_ahead.append(len(self._early))

    monkeypatch.setattr(MessagesMixin, "_read_early", counting)
    ledger = pg_server.create_database()
    service(broker, ledger).close()  # the controller's session exists: the broker queues
    table = broker.client(T7, client_id="raw-table")
    spy = broker.client(OBSERVER)
    try:
        assert spy.subscribe(f"bj/v1/jackpot/{T7}/ack").value == 1
        topic = topic_for(T7, "contribution")
        for seq in range(1, 61):
            if seq == 30:
                forged = json.loads(contribution_message(99))
                forged["payload"]["stake"] = 50_000  # after signing
                assert table.publish(topic, json.dumps(forged).encode()).value in (0, 16)
            if seq == 41:
                birth = {"v": 1, "table": T7, "boot": 1, "state": "online", "sent_t": 1}
                assert table.publish(topic_for(T7, "status"), signed_status(birth)).value in (0, 16)
            assert table.publish(topic, contribution_message(seq)).value in (0, 16)
        svc = service(broker, ledger, batch_max=8)
        try:
            wait_for(lambda: svc.health()["tables"][T7]["last_seq"] == 60, what="seq 60")
            counts = svc.health()["counts"]
        finally:
            svc.close()
        acks = [parse_message(m.topic, m.payload)[2]["seq"] for m in spy.drain(0.5)]
    finally:
        spy.close()
        table.close()
    assert any(read_ahead), "no batch was read while one committed"
    assert counts["applied"] == 60 and counts["signature"] == 1 and counts["table_online"] == 1
    assert acks == sorted(acks) and acks[-1] == 60 and 40 in acks, acks
    db = open_store(ledger)
    try:
        seqs = [r[0] for r in db.execute(
            "SELECT seq FROM applied WHERE table_id=? AND kind='contribution' ORDER BY n", (T7,)
        ).fetchall()]  # fmt: skip
    finally:
        db.close()
    assert seqs == list(range(1, 61))
