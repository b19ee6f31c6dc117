"""The table's link publisher against a real Mosquitto and a real SQLite outbox (issue #5).

The "controller" here is a plain paho-mqtt client logged in as ``jackpot-controller``,
subscribed to ``bj/v1/table/+/#``: it checks every message with ``parse_message``, keeps
what arrived, and (unless told not to) acknowledges in order, as the jackpot controller will.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from _journal_feeder import SETTINGS, session_events
from link_keys import (
    CONTROLLER_KID,
    controller_signer,
    controller_verifier,
    table_kid,
    table_signer,
    table_verifier,
    write_key,
)
from mqtt_broker import CONTROLLER, CONTROLLER_TWIN, OBSERVER, TABLES, broker, disconnect_and_stop  # noqa: F401
from paho.mqtt.enums import CallbackAPIVersion

from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.frames import verify_frame
from controller.link.messages import TABLE_KINDS, parse_message
from controller.link.publisher import TablePublisher

T7, T8 = TABLES
ROOT = Path(__file__).resolve().parent.parent


def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class FakeController:
    """Receives table streams, single messages and batch frames; acknowledges in order (the
    highest sequence in order, once per MQTT message) when ``acking``."""

    def __init__(
        self,
        broker,  # noqa: F811
        acking: bool = True,
        applied: dict | None = None,
        resend_on_retained_birth: bool = False,
    ):
        self.acking = acking
        # as the jackpot controller does (jackpot/service.py, births): a table's "online"
        # status delivered retained means the table was up before this subscription, so what
        # it sent meanwhile went to no one: ask for the rest of its stream
        self.resend_on_retained_birth = resend_on_retained_birth
        self.received: list[tuple[str, int, str]] = []  # (table, seq, key)
        self.applied: dict[str, int] = dict(applied or {})  # its ledger, kept across restarts
        self.status: list[dict] = []
        self.refused: list[str] = []
        self.frames: list[list[int]] = []  # each batch frame's sequences
        self._lock = threading.Lock()
        self._subscribed: queue.Queue[bool] = queue.Queue()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id="fake-controller", protocol=mqtt.MQTTv5
        )
        self.client.username_pw_set(CONTROLLER, broker.passwords[CONTROLLER])
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe("bj/v1/table/+/#", qos=1)
        self.client.on_subscribe = lambda c, u, mid, rcs, p: self._subscribed.put(True)
        self.client.on_message = self._on_message
        self.client.connect(broker.host, broker.port, 30)
        self.client.loop_start()
        self._subscribed.get(timeout=5)

    def _on_message(self, client, userdata, msg) -> None:
        try:
            kind, table, message = parse_message(msg.topic, msg.payload)
            if kind == "batch":  # several rows, one signature (controller/link/frames.py)
                verify_frame(table_verifier(table), msg.topic, message)
                rows = message["rows"]  # parse_message checked each, and their order
            else:
                table_verifier(table).verify(msg.topic, message, kind)
                rows = [message]
        except ValueError as exc:
            with self._lock:
                self.refused.append(str(exc))
            return
        with self._lock:
            if kind == "status":
                self.status.append(message)
                if (
                    self.resend_on_retained_birth
                    and msg.retain
                    and message.get("state") == "online"
                ):
                    start = self.applied.get(table, 0) + 1
                    self.send(table, "resend", {"v": 1, "table": table, "from": start, "sent_t": 0})
                return
            if kind == "batch":
                self.frames.append([row["seq"] for row in rows])
            for row in rows:
                assert row["kind"] in TABLE_KINDS
                self.received.append((table, row["seq"], row["key"]))
                if row["seq"] == self.applied.get(table, 0) + 1:
                    self.applied[table] = row["seq"]
            if self.acking:
                self.ack(table, self.applied.get(table, 0))

    def ack(self, table: str, seq: int) -> None:
        self.send(table, "ack", {"v": 1, "table": table, "seq": seq, "sent_t": 0})

    def send(self, table: str, kind: str, body: dict | bytes) -> None:
        """Publish ``body`` to the table, signed with the controller's key (bytes: as is)."""
        topic = f"bj/v1/jackpot/{table}/{kind}"
        if isinstance(body, bytes):
            payload = body
        else:
            payload = json.dumps(controller_signer().sign(topic, body))
        self.client.publish(topic, payload, qos=1)

    def seqs(self, table: str = T7) -> list[int]:
        with self._lock:
            return [s for t, s, _ in self.received if t == table]

    def close(self) -> None:
        disconnect_and_stop(self.client)


def fill(path: Path, pa, rounds: int = 6, seed: int = 3) -> list[str]:
    """Journal ``rounds`` rounds; return the keys written to the outbox, in order."""
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in session_events("pa-standard", seed, rounds):
            table.handle(event)
    box = Outbox(path)
    try:
        return [row.key for row in box.pending()]
    finally:
        box.close()


def outbox_state(path: Path) -> tuple[int, int, int]:
    box = Outbox(path)
    try:
        return box.last_written(), box.last_acknowledged(), box.depth()
    finally:
        box.close()


def publisher(broker, path, table_id=T7, user=T7, **kwargs) -> TablePublisher:  # noqa: F811
    kwargs.setdefault("backoff", (0.05, 0.5))
    kwargs.setdefault("rng", random.Random(1))
    kwargs.setdefault("signer", table_signer(table_id))
    kwargs.setdefault("verifier", controller_verifier())
    return TablePublisher(
        path, table_id, broker.host, broker.port, user, broker.passwords[user], **kwargs
    )


@pytest.fixture
def controller(broker):  # noqa: F811
    c = FakeController(broker)
    yield c
    c.close()


def test_a_backlog_goes_as_frames_and_one_waiting_row_as_a_single_message(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    """Issue 32 item 1: with rows waiting the publisher sends frames of consecutive rows (at
    most ``batch_rows``), each verified by the controller with one signature; with one row
    waiting (a window of 1 lets one out at a time) it sends single messages, never a frame
    of one; ``batch_rows=1`` sends single messages only."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=12)
    assert len(keys) > 20
    pub = publisher(broker, path, batch_rows=8)
    try:
        wait_for(lambda: outbox_state(path)[2] == 0, what="the backlog sent and acked")
        health = pub.health()
    finally:
        pub.close()
    assert controller.seqs() == list(range(1, len(keys) + 1))
    assert [k for _, _, k in controller.received] == keys
    assert controller.refused == [] and pub.alarms == []
    frames = controller.frames
    assert frames and all(2 <= len(f) <= 8 for f in frames)
    assert all(f == list(range(f[0], f[0] + len(f))) for f in frames)
    assert health["frames"] == len(frames) and health["framed_rows"] == sum(map(len, frames))
    for window, batch_rows in ((1, 64), (64, 1)):
        more = tmp_path / f"w{window}.journal"
        fill(more, pa, rounds=3, seed=5)
        before = len(controller.frames)
        controller.applied.pop(T7, None)  # a new journal: its sequence starts at 1 again
        pub = publisher(broker, more, window=window, batch_rows=batch_rows)
        try:
            wait_for(lambda p=more: outbox_state(p)[2] == 0, what=f"window {window}")
            assert pub.health()["frames"] == 0
        finally:
            pub.close()
        assert len(controller.frames) == before  # single messages only


def test_every_row_arrives_once_in_order_and_is_deleted_only_after_the_ack(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    path = tmp_path / "t.journal"
    keys = fill(path, pa)
    assert len(keys) >= 10
    controller.acking = False
    pub = publisher(broker, path, window=4)
    try:
        # without acks: the window (4) is sent, nothing is deleted
        wait_for(lambda: len(controller.seqs()) == 4, what="the first window")
        time.sleep(0.3)
        assert controller.seqs() == [1, 2, 3, 4]
        assert outbox_state(path) == (len(keys), 0, len(keys))
        # the controller acks what it applied: the rest flows, each once, in order
        controller.acking = True
        controller.ack(T7, 4)
        wait_for(lambda: outbox_state(path)[2] == 0, what="the outbox to empty")
        assert controller.seqs() == list(range(1, len(keys) + 1))
        assert [k for _, _, k in controller.received] == keys
        # health is a snapshot the link's thread takes after the outbox commits
        health = wait_for(lambda: (h := pub.health())["depth"] == 0 and h, what="health")
        assert health["connected"] and health["depth"] == 0
        assert health["last_ack"] == len(keys) and health["last_ack_age_s"] < 5
        assert health["errors"] == {} and pub.alarms == []
        # rows journaled while the publisher runs go out too
        fill(path, pa, rounds=3, seed=11)  # pending rows may already be sent and acked
        written = outbox_state(path)[0]
        assert written > len(keys)
        wait_for(lambda: outbox_state(path)[2] == 0, what="the new rows")
        assert controller.seqs() == list(range(1, written + 1))
    finally:
        pub.close()
        pub.close()  # safe twice
    online = [s for s in controller.status if s["state"] == "online"]
    assert online and online[0]["boot"] == 1  # the first JournaledTable was boot 1
    wait_for(lambda: controller.status[-1]["state"] == "offline", what="the clean offline")
    assert controller.status[-1]["clean"] is True and controller.refused == []


def test_rows_go_out_when_the_table_wakes_the_link_not_on_a_poll(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    """Issue 32 item 4: the table's loop wakes the link's thread after it wrote rows
    (``wake``); the thread does not look at the outbox every few milliseconds to find them.
    With the safety poll an hour long, rows written while the link is quiet go out on the
    wake alone."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=2)
    pub = publisher(broker, path, poll_s=3600.0)
    try:
        wait_for(lambda: outbox_state(path)[2] == 0, what="the first rows (sent on connect)")
        assert controller.seqs() == list(range(1, len(keys) + 1))
        wait_for(lambda: pub.health()["depth"] == 0, what="the link quiet")
        fill(path, pa, rounds=2, seed=11)
        written = outbox_state(path)[0]
        assert written > len(keys)
        pub.wake()
        wait_for(lambda: outbox_state(path)[2] == 0, what="the rows the wake announced")
        assert controller.seqs() == list(range(1, written + 1))
        assert controller.refused == [] and pub.alarms == []
    finally:
        pub.close()


def test_rows_written_while_the_broker_is_down_go_out_after_reconnect(
    tmp_path,
    pa,
    broker,  # noqa: F811
):
    path = tmp_path / "t.journal"
    first = fill(path, pa, rounds=2)
    ctl = FakeController(broker)
    pub = publisher(broker, path)
    try:
        wait_for(lambda: outbox_state(path)[2] == 0, what="the first rows")
        ctl.close()
        broker.kill()
        wait_for(lambda: not pub.health()["connected"], what="the publisher to see it")
        more = fill(path, pa, rounds=3, seed=5)
        assert outbox_state(path)[2] == len(more)
        time.sleep(0.3)
        broker.start()
        # the publisher may reconnect and send before this subscription exists (a loaded
        # machine): its retained birth then asks for the rest, as the real controller does
        ctl = FakeController(broker, applied={T7: len(first)}, resend_on_retained_birth=True)
        wait_for(lambda: outbox_state(path)[2] == 0, timeout=60, what="delivery after restart")
        total = len(first) + len(more)
        assert sorted(set(ctl.seqs())) == list(range(len(first) + 1, total + 1))
        assert pub.health()["errors"].get("connect", 0) >= 1
    finally:
        pub.close()
        ctl.close()


def test_unacked_rows_stay_and_are_sent_again_after_a_restart(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=3)
    controller.acking = False
    pub = publisher(broker, path)
    wait_for(lambda: len(controller.seqs()) == len(keys), what="everything once")
    pub.close()
    assert outbox_state(path) == (len(keys), 0, len(keys))
    controller.acking = True
    pub = publisher(broker, path)
    try:
        wait_for(lambda: outbox_state(path)[2] == 0, what="the acks")
    finally:
        pub.close()
    # at least once: every seq twice here (the last ones may still be on their way to the
    # controller when the ack of all, sent on the first, empties the outbox); applied once
    wait_for(lambda: len(controller.seqs()) == 2 * len(keys), what="every row again")
    assert sorted(controller.seqs()) == sorted(list(range(1, len(keys) + 1)) * 2)
    assert controller.applied[T7] == len(keys)


def test_a_resend_request_republishes_from_n(tmp_path, pa, broker, controller):  # noqa: F811
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=3)
    controller.acking = False
    pub = publisher(broker, path)
    try:
        wait_for(lambda: len(controller.seqs()) == len(keys), what="everything once")
        controller.ack(T7, 2)
        wait_for(lambda: outbox_state(path)[1] == 2, what="ack 2")
        controller.send(T7, "resend", {"v": 1, "table": T7, "from": 4, "sent_t": 0})
        n = len(keys)
        wait_for(lambda: len(controller.seqs()) == 2 * n - 3, what="the resend")
        time.sleep(0.3)
        assert controller.seqs() == list(range(1, n + 1)) + list(range(4, n + 1))
        # a resend from before the ack starts at the first pending row
        controller.send(T7, "resend", {"v": 1, "table": T7, "from": 1, "sent_t": 0})
        wait_for(lambda: len(controller.seqs()) == 3 * n - 5, what="the second resend")
        assert controller.seqs()[2 * n - 3 :] == list(range(3, n + 1))
    finally:
        pub.close()


def test_forged_and_malformed_acks_change_nothing(tmp_path, pa, broker, controller):  # noqa: F811
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=3)
    controller.acking = False
    pub = publisher(broker, path)
    try:
        wait_for(lambda: len(controller.seqs()) == len(keys), what="everything once")
        controller.send(T7, "ack", {"v": 1, "table": T8, "seq": 3, "sent_t": 0})  # other table
        controller.send(T7, "ack", {"v": 1, "table": T7, "seq": "3", "sent_t": 0})  # schema
        controller.send(T7, "ack", b"not json")
        controller.send(T7, "ack", {"v": 1, "table": T7, "seq": len(keys) + 5, "sent_t": 0})
        controller.send(T7, "resend", {"v": 1, "table": T7, "from": 0, "sent_t": 0})
        # well-formed acks the controller did not sign: unsigned, signed by the table's own
        # key, and a true signature moved to another message
        ack3 = {"v": 1, "table": T7, "seq": 3, "sent_t": 0}
        controller.send(T7, "ack", json.dumps(ack3).encode())
        topic = f"bj/v1/jackpot/{T7}/ack"
        controller.send(T7, "ack", json.dumps(table_signer(T7).sign(topic, ack3)).encode())
        moved = controller_signer().sign(topic, {**ack3, "seq": 1})
        controller.send(T7, "ack", json.dumps({**moved, "seq": 3}).encode())
        wait_for(lambda: len(pub.alarms) == 8, what="eight alarms")
        time.sleep(0.2)
        assert outbox_state(path) == (len(keys), 0, len(keys))
        errors = pub.health()["errors"]
        assert errors == {
            "ack_malformed": 3,
            "ack_refused": 1,
            "resend_malformed": 1,
            "signature": 3,
        }
        assert controller.seqs() == list(range(1, len(keys) + 1))  # nothing re-sent
        controller.ack(T7, 2)  # a true ack still works
        wait_for(lambda: outbox_state(path)[1] == 2, what="the true ack")
    finally:
        pub.close()


def test_a_resend_from_beyond_what_was_written_is_refused_and_the_stream_goes_on(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    """Issue 26 item 5: a signed resend from 1,000,000,000 once set the next sequence there,
    and nothing was sent again until a restart. It is refused like an ack beyond what was
    written, with an alarm, and the stream carries on."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=3)
    pub = publisher(broker, path)
    try:
        wait_for(lambda: outbox_state(path)[1:] == (len(keys), 0), what="everything acked")
        sent = len(controller.seqs())
        for start in (len(keys) + 2, 1_000_000_000):
            controller.send(T7, "resend", {"v": 1, "table": T7, "from": start, "sent_t": 0})
        wait_for(lambda: len(pub.alarms) == 2, what="two refusals")
        assert [(a.kind, a.seq) for a in pub.alarms] == [
            ("resend_refused", len(keys) + 2),
            ("resend_refused", 1_000_000_000),
        ]
        assert f"written only up to {len(keys)}" in pub.alarms[-1].detail
        # from the next one to write: nothing to send again, no alarm
        controller.send(T7, "resend", {"v": 1, "table": T7, "from": len(keys) + 1, "sent_t": 0})
        fill(path, pa, rounds=3, seed=11)  # the table plays on
        written = outbox_state(path)[0]
        assert written > len(keys)
        wait_for(lambda: outbox_state(path)[1:] == (written, 0), what="the new rows acked")
        assert controller.seqs()[sent:] == list(range(len(keys) + 1, written + 1))
        assert len(pub.alarms) == 2 and pub.health()["errors"] == {"resend_refused": 2}
        assert pub.health()["stopped_at"] is None
    finally:
        pub.close()


def test_a_stale_ack_is_old_news_and_a_forged_one_still_an_alarm(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
    caplog,
):
    """Issue 26 item 6: after a broker crash its store redelivered a true ack below the last
    one, and the dealer saw "it may be forged". A validly signed ack at or below the last is
    old news (counted, logged once a minute at most); a bad signature is still an alarm."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=3)
    controller.acking = False
    pub = publisher(broker, path)
    try:
        wait_for(lambda: len(controller.seqs()) == len(keys), what="everything once")
        controller.ack(T7, 5)
        wait_for(lambda: outbox_state(path)[1] == 5, what="ack 5")
        with caplog.at_level("INFO", logger="table-controller.link"):
            for seq in (2, 3, 5):  # the broker's stored copies, the last one again
                controller.ack(T7, seq)
            wait_for(lambda: pub.health()["errors"].get("ack_stale") == 2, what="two stale")
        controller.ack(T7, 6)  # the stream goes on
        wait_for(lambda: outbox_state(path)[1] == 6, what="ack 6")
        # the journal first, then the publisher's own count (another thread: wait for it)
        wait_for(lambda: pub.health()["last_ack"] == 6, what="the publisher's ack 6")
        assert pub.alarms == []
        stale = [r.getMessage() for r in caplog.records if "stale" in r.getMessage()]
        assert len(stale) == 1 and "below the acknowledged 5" in stale[0], stale
        # an old ack with a signature that does not match: still refused as a forgery
        topic = f"bj/v1/jackpot/{T7}/ack"
        moved = controller_signer().sign(topic, {"v": 1, "table": T7, "seq": 1, "sent_t": 0})
        controller.send(T7, "ack", json.dumps({**moved, "seq": 2}).encode())
        controller.send(T7, "ack", json.dumps(table_signer(T7).sign(topic, moved)).encode())
        wait_for(lambda: len(pub.alarms) == 2, what="two signature alarms")
        assert [a.kind for a in pub.alarms] == ["signature", "signature"]
        assert outbox_state(path)[1] == 6
    finally:
        pub.close()


def test_a_stale_ack_the_broker_kept_through_its_restart_is_no_alarm(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    """The audit's case on a real broker: an ack queued for the table's session while it was
    offline, saved by the broker and delivered after the broker came back, below what the
    table has acknowledged since. Old news: no alarm (it said "may be forged" before)."""
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=2)
    pub = publisher(broker, path)
    try:
        wait_for(lambda: outbox_state(path)[1:] == (len(keys), 0), what="everything acked")
    finally:
        pub.close()  # offline; its session (and what is queued for it) stays on the broker
    twin = broker.client(CONTROLLER_TWIN)
    try:
        topic = f"bj/v1/jackpot/{T7}/ack"
        old = controller_signer().sign(topic, {"v": 1, "table": T7, "seq": 2, "sent_t": 0})
        assert twin.publish(topic, json.dumps(old)).value == 0  # the broker holds it
    finally:
        twin.close()
    broker.restart()  # saves its store, comes back with the session and the queued ack
    pub = publisher(broker, path)
    try:
        wait_for(lambda: pub.health()["errors"], what="the stale ack delivered")
        assert pub.alarms == [] and pub.health()["errors"] == {"ack_stale": 1}, pub.alarms
        assert outbox_state(path)[1:] == (len(keys), 0)
    finally:
        pub.close()


def test_a_publish_the_acl_denies_is_an_alarm_with_reason_135(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=2)
    seen = []
    pub = publisher(broker, path, table_id=T8, user=T7, on_alarm=seen.append)
    try:
        wait_for(lambda: any(a.seq == 1 for a in pub.alarms), what="the alarm for seq 1")
        alarm = next(a for a in pub.alarms if a.seq == 1)
        assert (alarm.kind, alarm.reason_code) == ("puback", 135)
        status = [a for a in pub.alarms if a.seq is None]
        assert status and status[0].reason_code == 135  # the birth was refused too
        assert seen[: len(pub.alarms)] == pub.alarms[: len(seen)]
        assert pub.health()["errors"]["puback"] >= 2
    finally:
        pub.close()
    assert outbox_state(path) == (len(keys), 0, len(keys))
    assert controller.received == [] and controller.status == []


def test_an_oversized_row_stops_the_stream_and_is_never_sent(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    path = tmp_path / "t.journal"
    keys = fill(path, pa, rounds=3)
    box = Outbox(path)
    sizes = [len(json.dumps(r.payload)) for r in box.pending()]
    box.close()
    limit = sizes[0] + 400  # the first row fits, find the first that does not
    too_big = next(i for i, s in enumerate(sizes, 1) if s + 300 > limit)
    pub = publisher(broker, path, max_payload=limit)
    try:
        wait_for(lambda: pub.health()["stopped_at"] == too_big, what="the stop")
        time.sleep(0.3)
        assert controller.seqs() == list(range(1, too_big))
        assert pub.alarms[0].kind == "too_large" and pub.alarms[0].seq == too_big
        assert outbox_state(path)[2] == len(keys) - too_big + 1
    finally:
        pub.close()


CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from controller.link.publisher import TablePublisher
from controller.link.signing import Signer, Verifier, load_signing_key, parse_public_key
signer = Signer(sys.argv[7], load_signing_key(sys.argv[6]))
verifier = Verifier({sys.argv[8]: parse_public_key(sys.argv[9])})
pub = TablePublisher(sys.argv[2], sys.argv[3], "127.0.0.1", int(sys.argv[4]), sys.argv[3],
                     sys.argv[5], backoff=(0.05, 0.5), signer=signer, verifier=verifier)
while not pub.health()["connected"]:
    time.sleep(0.02)
print("up", flush=True)
time.sleep(60)
"""


def test_a_killed_publisher_leaves_the_retained_will_with_its_boot(
    tmp_path,
    pa,
    broker,  # noqa: F811
    controller,
):
    path = tmp_path / "t.journal"
    fill(path, pa, rounds=1)
    fill(path, pa, rounds=1, seed=9)  # a second start: boot 2
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(ROOT),
            str(path),
            T7,
            str(broker.port),
            broker.passwords[T7],
            str(write_key(table_signer(T7), tmp_path / "t7.key")),
            table_kid(T7),
            CONTROLLER_KID,
            controller_signer().public_key,
        ],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout.readline().strip() == b"up"
        wait_for(lambda: any(s["state"] == "online" for s in controller.status), what="birth")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(5)
        wait_for(lambda: controller.status[-1]["state"] == "offline", what="the will")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    online = [s for s in controller.status if s["state"] == "online"][-1]
    will = controller.status[-1]
    assert (will["boot"], will["clean"]) == (online["boot"], False) and will["boot"] == 2
    sub = broker.client(OBSERVER)  # a newcomer sees it retained
    try:
        assert sub.subscribe(f"bj/v1/table/{T7}/status").value == 1
        msg = sub.get()
        assert msg is not None and msg.retain
        assert json.loads(msg.payload)["state"] == "offline"
    finally:
        sub.close()


def test_the_table_reads_the_meters_the_controller_signed(tmp_path, pa, broker):  # noqa: F811
    """The dealer display shows the progressive meters: the table reads the retained
    ``bj/v1/meters/{pool}`` the controller signs, keeps the highest ``seq`` of each pool and
    refuses (alarm, nothing shown) a meter that is unsigned, signed by another key or
    unreadable."""
    path = tmp_path / "t.journal"
    fill(path, pa, rounds=1)
    controller, genuine = broker.client(CONTROLLER_TWIN), controller_signer()

    def meter(pool, amount, seq, signer=genuine):
        topic = f"bj/v1/meters/{pool}"
        body = {"v": 1, "pool": pool, "amount": amount, "fraction": "1/4", "seq": seq,
                "sent_t": 0}  # fmt: skip
        return topic, json.dumps(signer.sign(topic, body) if signer else body)

    assert controller.publish(*meter("blazing_7s", 1_000_075, 5), retain=True).value in (0, 16)
    pub = publisher(broker, path)
    try:
        wait_for(pub.meters, what="the retained meter")
        controller.publish(*meter("blazing_7s", 999, 4))  # an older copy: ignored
        controller.publish(*meter("blazing_7s", 5, 9, signer=table_signer(T7)))  # forged
        controller.publish(*meter("mystery", 25_000, 2, signer=None))  # unsigned
        controller.publish("bj/v1/meters/mystery", b"not json")
        controller.publish(*meter("mystery", 25_107, 3))
        wait_for(lambda: len(pub.meters()) == 2 and len(pub.alarms) == 3, what="all of it")
        time.sleep(0.2)
        assert pub.meters() == [
            {"pool": "blazing_7s", "amount": 1_000_075, "seq": 5, "must_hit_by": None},
            {"pool": "mystery", "amount": 25_107, "seq": 3, "must_hit_by": None},
        ]
        assert pub.health()["errors"] == {"signature": 2, "meter_malformed": 1}
    finally:
        pub.close()
        controller.close()


def test_the_table_hears_the_controllers_signed_heartbeat(tmp_path, pa, broker):  # noqa: F811
    """Issue 28 item 3: the retained status gives the controller's state, never a heartbeat;
    a live signed ``online`` is one; a copy not newer than one heard, or from an older boot
    (a late will), is stale and changes nothing; a forged or unreadable one is an alarm."""
    path = tmp_path / "t.journal"
    fill(path, pa, rounds=1)
    controller, genuine = broker.client(CONTROLLER_TWIN), controller_signer()
    topic = "bj/v1/jackpot/status"

    def status(state, boot, sent_t, signer=genuine):
        body = {"v": 1, "state": state, "boot": boot, "sent_t": sent_t}
        return topic, json.dumps(signer.sign(topic, body) if signer else body)

    assert controller.publish(*status("online", 4, 100), retain=True).value in (0, 16)
    pub = publisher(broker, path)
    try:
        wait_for(lambda: pub.health()["controller"]["state"] == "online", what="the retained")
        c = pub.health()["controller"]
        assert (c["boot"], c["heartbeats"], c["heard_age_s"]) == (4, 0, None)
        controller.publish(*status("online", 4, 200))
        wait_for(lambda: pub.health()["controller"]["heartbeats"] == 1, what="a heartbeat")
        assert pub.health()["controller"]["heard_age_s"] < 60
        controller.publish(*status("offline", 3, 900))  # an older boot's late will
        controller.publish(*status("online", 4, 200))  # a copy of one heard
        controller.publish(*status("offline", 4, 300, signer=table_signer(T7)))  # forged
        controller.publish(*status("offline", 4, 300, signer=None))  # unsigned
        controller.publish(topic, b"not json")
        wait_for(lambda: pub.health()["controller"]["stale"] == 2, what="the stale ones")
        wait_for(lambda: len(pub.alarms) == 3, what="the alarms")
        c = pub.health()["controller"]
        assert (c["state"], c["boot"], c["heartbeats"]) == ("online", 4, 1)
        assert pub.health()["errors"] == {"signature": 2, "status_malformed": 1}
        controller.publish(*status("offline", 4, 400))  # its will: the state says so at once
        wait_for(lambda: pub.health()["controller"]["state"] == "offline", what="offline")
        controller.publish(*status("online", 5, 10))  # restarted: a newer boot
        wait_for(lambda: pub.health()["controller"]["heartbeats"] == 2, what="boot 5")
    finally:
        pub.close()
        controller.close()
