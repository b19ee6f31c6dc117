"""A window of batch frames in flight (issue 32): the table sends frame after frame up to its
window without waiting for the controller's ack of each, and the controller acks a backlog in
parts (``batch_rows``), so both work at once. Real Mosquitto, real journal outboxes.

What must not change: each row applied once, in order; a reconnect in the middle of a window
starts again from the last ack + 1; a gap is filled by a resend; the frames are those
:func:`~controller.link.frames.plan` makes of the rows, whatever the reads.
"""

from __future__ import annotations

import json
import random

from link_keys import controller_verifier, table_signer
from mqtt_broker import OBSERVER, TABLES, broker  # noqa: F401
from tcp_proxy import TcpProxy
from test_jackpot_service import check_ledger, depth, service
from test_jackpot_service import fill as fill_rounds
from test_link_publisher import FakeController, fill, outbox_state, publisher, wait_for

from controller.journal.outbox import Outbox
from controller.link.frames import BATCH_BYTES, BATCH_ROWS, plan
from controller.link.messages import parse_message
from controller.link.publisher import TablePublisher
from controller.link.sending import MAX_PAYLOAD, READ_ROWS
from controller.link.signing import canonical

T7 = TABLES[0]


def test_frames_fill_the_window_before_any_ack_and_each_ack_lets_one_more_go(
    tmp_path,
    pa,
    broker,  # noqa: F811
):
    """Window 40, frames of 8: five frames go before any ack (in flight together), nothing
    beyond; an ack of the first frame lets exactly the next 8 rows go (nothing in flight is
    sent again); then every row arrives once, in order."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=40)
    assert len(keys) > 60
    ctl = FakeController(broker, acking=False)
    pub = publisher(broker, path, window=40, batch_rows=8)
    try:
        wait_for(lambda: len(ctl.seqs()) == 40, what="the first window")
        wait_for(lambda: len(ctl.frames) == 5, what="its five frames")
        assert ctl.frames == [list(range(s, s + 8)) for s in range(1, 41, 8)]
        assert outbox_state(path) == (len(keys), 0, len(keys))  # nothing deleted yet
        ctl.ack(T7, 8)
        wait_for(lambda: len(ctl.seqs()) == 48, what="one more frame")
        wait_for(lambda: outbox_state(path)[1] == 8, what="the ack of 8 kept")
        assert ctl.seqs() == list(range(1, 49)) and ctl.frames[-1] == list(range(41, 49))
        ctl.acking = True
        ctl.ack(T7, 48)
        wait_for(lambda: outbox_state(path)[2] == 0, what="the rest")
    finally:
        pub.close()
        ctl.close()
    assert ctl.seqs() == list(range(1, len(keys) + 1))
    assert [k for _, _, k in ctl.received] == keys
    assert ctl.refused == [] and pub.alarms == []


def test_the_frames_are_plans_groups_though_the_rows_are_read_a_frame_at_a_time(
    tmp_path,
    pa,
    broker,  # noqa: F811
):
    """The publisher reads :data:`READ_ROWS` rows at a time and sends each frame as soon as it
    is full; the frames are still the groups :func:`plan` makes of the whole window: a frame
    may take rows of two reads."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=60)
    assert len(keys) > 2 * READ_ROWS
    ctl = FakeController(broker, acking=False)
    sent: dict[int, dict] = {}  # seq -> the row as it arrived
    original = ctl._on_message

    def keeping(client, userdata, msg):
        if msg.topic.endswith("/batch"):
            sent.update((row["seq"], row) for row in json.loads(msg.payload)["rows"])
        original(client, userdata, msg)

    ctl.client.on_message = keeping
    pub = publisher(broker, path, window=len(keys))  # one look sends everything
    try:
        wait_for(lambda: len(ctl.seqs()) == len(keys), what="the backlog")
    finally:
        pub.close()
        ctl.close()
    with Outbox(path) as box:
        rows = box.pending()
    assert [r.key for r in rows] == keys
    frames = ctl.frames
    assert sum(map(len, frames)) == len(keys)  # all in frames: more than one row waited
    sizes = [len(canonical(sent[seq])) for seq in range(1, len(keys) + 1)]
    assert [len(f) for f in frames] == plan(sizes, BATCH_ROWS, min(BATCH_BYTES, MAX_PAYLOAD))
    # some frame holds rows of two reads (READ_ROWS apart), so the test shows the carry-over
    assert any(f[0] <= READ_ROWS < f[-1] or f[0] <= 2 * READ_ROWS < f[-1] for f in frames)


def test_a_reconnect_with_frames_in_flight_starts_again_from_the_last_ack(
    tmp_path,
    pa,
    broker,  # noqa: F811
):
    """Five frames in flight, the first two acked, then the table's connection is cut (a
    pulled cable): on reconnect the stream starts again from the ack + 1; the controller
    sees rows 17-40 twice and applies each once, in order, and the rest follows."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=40)
    ctl = FakeController(broker, acking=False)
    proxy = TcpProxy(broker.host, broker.port)
    pub = TablePublisher(
        path, T7, proxy.host, proxy.port, T7, broker.passwords[T7], window=40, batch_rows=8,
        signer=table_signer(T7), verifier=controller_verifier(), backoff=(0.05, 0.2),
        rng=random.Random(1),
    )  # fmt: skip
    try:
        wait_for(lambda: len(ctl.seqs()) == 40, what="the first window")
        ctl.ack(T7, 16)
        wait_for(lambda: outbox_state(path)[1] == 16, what="the ack of 16")
        wait_for(lambda: len(ctl.seqs()) == 56, what="two more frames")
        ctl.applied[T7] = 16  # what it applied: it forgets the rest (a restart, say)
        assert proxy.cut() >= 1
        wait_for(lambda: ctl.seqs().count(56) == 2, what="the window again from 17")
        ctl.acking = True
        ctl.ack(T7, 56)
        wait_for(lambda: outbox_state(path)[2] == 0, what="everything acked")
    finally:
        pub.close()
        proxy.close()
        ctl.close()
    seqs = ctl.seqs()
    again = seqs.index(17, 17)  # the second time 17 came: after the cut
    assert seqs[:56] == list(range(1, 57))
    assert seqs[again:] == list(range(17, len(keys) + 1))  # from the ack + 1, in order
    assert ctl.applied[T7] == len(keys) and ctl.refused == [] and pub.alarms == []


def test_a_frame_lost_in_the_window_is_resent_and_the_rows_applied_in_order(
    tmp_path,
    pa,
    broker,  # noqa: F811
):
    """The second frame of a window never reaches the controller: the frames after it are
    beyond a gap (not applied); its resend request from the gap rewinds the table's stream,
    and every row is applied once, in sequence order."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=40)
    ctl = FakeController(broker, acking=False)
    lost: list[list[int]] = []
    original = ctl._on_message

    def losing(client, userdata, msg):
        if msg.topic.endswith("/batch") and not lost:
            rows = json.loads(msg.payload)["rows"]
            if rows[0]["seq"] == 9:  # the second frame
                lost.append([r["seq"] for r in rows])
                return
        original(client, userdata, msg)

    ctl.client.on_message = losing
    pub = publisher(broker, path, window=40, batch_rows=8)
    try:
        wait_for(lambda: len(ctl.seqs()) == 32, what="the window but the lost frame")
        assert lost == [list(range(9, 17))] and ctl.applied[T7] == 8  # 17-40 beyond the gap
        ctl.acking = True  # from now on it acks what it applied after each message
        ctl.send(T7, "resend", {"v": 1, "table": T7, "from": 9, "sent_t": 0})
        wait_for(lambda: outbox_state(path)[2] == 0, what="everything acked")
    finally:
        pub.close()
        ctl.close()
    seqs = ctl.seqs()
    assert seqs[:32] == list(range(1, 9)) + list(range(17, 41))
    assert seqs[32:] == list(range(9, len(keys) + 1))  # from the gap, in order, once
    assert ctl.applied[T7] == len(keys) and ctl.refused == [] and pub.alarms == []


def test_the_controller_acks_a_backlog_in_parts_and_applies_every_row_once(
    tmp_path,
    pa,
    broker,  # noqa: F811
):
    """The real controller with ``batch_rows=16`` and a table sending frames of 8 in a window
    of 64: no ledger transaction takes more than 16 rows and a frame (it flushes once 16 are
    queued), the table gets several cumulative acks, ascending, and the ledger holds each row
    once (contributions and meters as the table's rows say)."""
    path = tmp_path / "t.journal"
    rows = fill_rounds(path, pa, rounds=30)
    assert len(rows) > 64
    spy = broker.client(OBSERVER)
    assert spy.subscribe(f"bj/v1/jackpot/{T7}/ack").value == 1
    ledger = tmp_path / "ledger.db"
    svc = service(broker, ledger, batch_rows=16)
    pub = None
    try:
        pub = TablePublisher(
            path, T7, broker.host, broker.port, T7, broker.passwords[T7], window=64,
            batch_rows=8, signer=table_signer(T7), verifier=controller_verifier(),
            backoff=(0.05, 0.5),
        )  # fmt: skip
        wait_for(lambda: depth(path) == 0, what="the backlog applied and acked")
        health = svc.health()
    finally:
        if pub is not None:
            pub.close()
        svc.close()
    acks = [parse_message(m.topic, m.payload)[2]["seq"] for m in spy.drain(0.5)]
    spy.close()
    assert health["counts"]["applied"] == len(rows)
    assert 1 < health["largest_batch"] <= 16 + 8 - 1
    assert health["counts"]["batch"] >= len(rows) // (16 + 8)
    assert len(acks) >= len(rows) // (16 + 8) and acks == sorted(acks) and acks[-1] == len(rows)
    check_ledger(ledger, rows)
