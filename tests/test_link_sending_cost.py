"""The table's cheaper ways to frame and sign its rows give what the reference ways give: the
Merkle root without audit paths is the tree's root, whatever the count of rows; a row sent
alone, and a frame, are the signer's and wire_frame's own bytes for every row of a played
session."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from _journal_feeder import SETTINGS, session_events

from controller import json_rows
from controller.games import load_game
from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.frames import BATCH_BYTES, _Tree, leaf_hash, plan, tree_root, wire_frame
from controller.link.link_health import LinkHealth
from controller.link.messages import envelope, row_envelope, topic_for
from controller.link.sending import MAX_PAYLOAD, OutboxStream, wire_row
from controller.link.signing import Signer, canonical, new_signing_key
from controller.table.effects import Publish


@pytest.mark.parametrize("n", range(1, 131))
def test_the_root_alone_is_the_trees_root(n) -> None:
    leaves = [leaf_hash(str(i).encode()) for i in range(n)]
    assert tree_root(leaves) == _Tree(leaves).root


def test_a_tree_of_no_rows_is_refused() -> None:
    with pytest.raises(ValueError):
        tree_root([])


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """The envelopes of every row of a played session (the bench's game), as the sender
    makes them, with whether each holds a float."""
    path = tmp_path_factory.mktemp("rows") / "table.journal"
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:
        for event in session_events("pa-standard", 12, 80):
            table.handle(event)
    with Outbox(path) as box:
        rows = box.pending()
    return [
        (row_envelope("hcm-bj-07", 2, r.seq, r.kind, r.key, r.payload, 1770000000321), r.floats)
        for r in rows
    ]


def test_a_row_sent_alone_is_the_signers_bytes(played) -> None:
    signer = Signer("hcm-bj-07-1", new_signing_key())
    assert len(played) > 150
    for message, floats in played:
        topic = topic_for("hcm-bj-07", message["kind"])
        assert not floats
        assert wire_row(signer, topic, message, floats) == signer.wire(topic, message)
        assert wire_row(signer, topic, message, None) == signer.wire(topic, message)


def test_a_frame_of_orjsons_rows_is_the_frame_of_the_standard_librarys(played) -> None:
    """The rows' canonical text the sender passes to wire_frame is the standard library's,
    so the frame is byte for byte the one wire_frame makes by itself (Ed25519 signs alike)."""
    signer = Signer("hcm-bj-07-1", new_signing_key())
    for start in range(0, len(played), 40):
        rows = [message for message, _ in played[start : start + 40]]
        encoded = [json_rows.canonical(message) for message in rows]
        assert encoded == [canonical(message) for message in rows]
        assert wire_frame(signer, "hcm-bj-07", 2, 1770000000321, rows, encoded) == wire_frame(
            signer, "hcm-bj-07", 2, 1770000000321, rows
        )


class _Sent:
    rc = 0

    def __init__(self, mid: int) -> None:
        self.mid = mid


class _Client:
    """What the stream publishes, in order (no broker)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []

    def publish(self, topic, data, qos=1):
        self.sent.append((topic, data))
        return _Sent(len(self.sent))


class _Stream(OutboxStream):
    """The publisher's stream alone, on a fake client (the attributes it reads)."""

    def __init__(self, box: Outbox, signer: Signer, batch_rows: int, window: int) -> None:
        self._outbox, self._client, self.signer = box, _Client(), signer
        self.table_id, self.boot, self.clock = "hcm-bj-07", box.boot, lambda: 1770000000.5
        self.batch_rows, self.window, self.max_payload = batch_rows, window, MAX_PAYLOAD
        self._inflight, self._lock, self._health = {}, threading.Lock(), LinkHealth()
        self._stopped_at, self._pause_until, self._next_seq = None, 0.0, 1
        self.alarms: list = []

    def _set(self, **values) -> None:
        pass

    def _alarm(self, *alarm) -> None:
        self.alarms.append(alarm)


def _reference(box: Outbox, signer: Signer, batch_rows: int, window: int) -> list:
    """What one look sends, made the reference way: every pending row read by
    Outbox.resend_from and enveloped by envelope(), grouped by plan(), each group signed by
    Signer.wire (alone) or wire_frame (a frame) with the standard library's canonical JSON."""
    rows = box.resend_from(box.last_acknowledged() + 1, window)
    sent_t = 1770000000500
    messages = [
        envelope("hcm-bj-07", box.boot, r.seq, Publish(r.kind, r.key, r.payload), sent_t)
        for r in rows
    ]
    framing = batch_rows > 1 and len(rows) > 1
    sizes = [len(canonical(m)) if framing else 0 for m in messages]
    out, at = [], 0
    for count in plan(sizes, batch_rows, min(BATCH_BYTES, MAX_PAYLOAD)):
        group = messages[at : at + count]
        at += count
        if count == 1:
            topic = topic_for("hcm-bj-07", group[0]["kind"])
            out.append((topic, signer.wire(topic, group[0])))
        else:
            data = wire_frame(signer, "hcm-bj-07", box.boot, sent_t, group)
            out.append((topic_for("hcm-bj-07", "batch"), data))
    return out


@pytest.mark.parametrize(("batch_rows", "window"), [(1, 50), (2, 7), (3, 11), (5, 64), (64, 256)])
def test_what_the_stream_sends_is_the_reference_bytes(tmp_path, batch_rows, window) -> None:
    """Frames, rows alone, and rows alone inside a framed look (the last of a window, one
    too large for a frame), each byte for byte what the reference way makes."""
    path = tmp_path / "table.journal"
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:
        for event in session_events("pa-standard", 13, 110):
            table.handle(event)
    signer = Signer("hcm-bj-07-1", new_signing_key())
    with Outbox(path) as box:
        stream = _Stream(box, signer, batch_rows, window)
        looks = mixed = 0
        while box.depth():
            expected = _reference(box, signer, batch_rows, window)
            stream._client.sent.clear()
            stream._pump()
            assert stream._client.sent == expected
            assert not stream.alarms
            box.acknowledge(stream._next_seq - 1)
            looks += 1
            mixed += len({topic.endswith("/batch") for topic, _ in expected}) == 2
        assert looks >= 2
        assert mixed or batch_rows in (1, 64)  # a row alone inside a framed look


def test_a_stored_row_that_is_not_json_stops_the_stream_there(tmp_path) -> None:
    path = tmp_path / "table.journal"
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:
        for event in session_events("pa-standard", 13, 6):
            table.handle(event)
    db = sqlite3.connect(path)
    db.execute("UPDATE outbox SET payload = '{\"round\": 1,' WHERE seq = 4")
    db.commit()
    db.close()
    with Outbox(path) as box:
        stream = _Stream(box, Signer("hcm-bj-07-1", new_signing_key()), 64, 256)
        stream._pump()
        assert stream._next_seq == 4 and stream._stopped_at == 4
        assert [a[0] for a in stream.alarms] == ["invalid"]
        assert "seq 4 is not readable JSON" in stream.alarms[0][1]


def test_a_float_free_row_alone_is_signed_over_orjsons_text(tmp_path, monkeypatch) -> None:
    """Rows sent alone (the live case) take wire_row's orjson form, not Signer.wire's
    second encoding (the bytes are the same: the reference test above)."""
    path = tmp_path / "table.journal"
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:
        for event in session_events("pa-standard", 13, 4):
            table.handle(event)
    calls = []
    monkeypatch.setattr(Signer, "wire", lambda *args: calls.append(args))
    with Outbox(path) as box:
        stream = _Stream(box, Signer("hcm-bj-07-1", new_signing_key()), 1, 256)
        stream._pump()
        assert len(stream._client.sent) == box.depth() > 5
    assert calls == []
