"""Batch frames (issue 32 item 1): several outbox rows in one MQTT message, one signature.

The frame's contract (controller/link/frames.py) and the controller's intake
(jackpot/intake.py) with real keys, real tables' outbox rows (a ``JournaledTable`` playing
Blazing 7's sessions) and real ledgers on both backends (SQLite, and PostgreSQL from
tests/pg_server.py): a burst sent as frames gives exactly the ledger the same rows give sent
one by one (the order of hits, every Must-Hit-By decision, the meters, the per-row records),
and every stored row of a frame can be audited alone. The forgery suite
(tests/test_link_forgery.py) sends forged frames through a real broker and service.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from link_keys import jackpot_config, table_signer
from pg_server import ledger_at, pg_server  # noqa: F401

from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.frames import (
    BATCH_BYTES,
    BATCH_ROWS,
    _Tree,
    leaf_hash,
    plan,
    root_from_path,
    verify_row,
    wire_frame,
)
from controller.link.messages import envelope, topic_for
from controller.link.signing import SignatureError, Verifier, canonical
from controller.table.effects import Publish
from jackpot.audit import audit
from jackpot.intake import Intake, Refusal
from jackpot.ledger import Ledger
from jackpot.pools import contribution
from jackpot.reports import Reader
from jackpot.store import open_store

CONFIG = jackpot_config()
T7, T8 = "hcm-bj-07", "hcm-bj-01"  # two tables of the config, each with its key
SENT_T = 1_770_000_000_000


def _rows(path: Path, pa, seed: int, rounds: int) -> list:
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in session_events("pa-standard", seed, rounds):
            table.handle(event)
    with Outbox(path) as box:
        return box.pending()


@pytest.fixture(scope="module")
def streams(tmp_path_factory, pa) -> dict[str, list[dict]]:
    """Each table's outbox rows for 24 rounds, as unsigned envelopes (boot 1), in order."""
    out = {}
    for table, seed in ((T7, 3), (T8, 4)):
        rows = _rows(tmp_path_factory.mktemp(table) / "t.journal", pa, seed, 24)
        out[table] = [
            envelope(
                table, 1, r.seq, Publish(topic=r.kind, key=r.key, payload=r.payload), SENT_T + r.seq
            )
            for r in rows
        ]
    return out


def single(table: str, row: dict) -> tuple[str, bytes]:
    topic = topic_for(table, row["kind"])
    return topic, json.dumps(table_signer(table).sign(topic, row)).encode()


def frame(table: str, rows: list[dict], boot: int = 1) -> tuple[str, bytes]:
    return topic_for(table, "batch"), wire_frame(table_signer(table), table, boot, SENT_T, rows)


def intake() -> Intake:
    return Intake(CONFIG.tables, CONFIG.table_keys)


# -- the tree and the frame --------------------------------------------------------------


@given(st.integers(1, 70))
def test_every_rows_path_leads_to_the_root_and_no_other_index_does(n):
    leaves = [leaf_hash(str(i).encode()) for i in range(n)]
    tree = _Tree(leaves)
    for i in range(n):
        path = tree.path(i)
        assert root_from_path(leaves[i], i, n, path) == tree.root
        assert len(path) <= (n - 1).bit_length()
        if n > 1:  # the same leaf at another place: another root
            assert root_from_path(leaves[i], (i + 1) % n, n, path) != tree.root
    assert root_from_path(leaves[0], n, n, []) is None


def test_a_frame_is_read_as_its_rows_and_each_stored_row_checks_alone(streams):
    rows = streams[T7][:10]
    got = intake().read(*frame(T7, rows))
    assert got.kind == "batch" and [body for body, _ in got.rows] == rows
    verifier = Verifier(CONFIG.table_keys[T7])
    for body, text in got.rows:
        record = json.loads(text)
        assert {k: v for k, v in record.items() if k not in ("kid", "frame")} == body
        assert verify_row(verifier, record) == "hcm-bj-07-1"
        changed = {**record, "payload": {**record["payload"], "round": 10**6}}
        with pytest.raises(SignatureError):
            verify_row(verifier, changed)
        moved = {**record, "frame": {**record["frame"], "index": (record["frame"]["index"] + 1)
                                     % len(rows)}}  # fmt: skip
        with pytest.raises(SignatureError):
            verify_row(verifier, moved)


def _refused(topic: str, data: bytes) -> Refusal:
    with pytest.raises(Refusal) as caught:
        intake().read(topic, data)
    return caught.value


def test_a_forged_truncated_reordered_spliced_or_mixed_frame_is_refused_whole(streams):
    rows, other = streams[T7][:8], streams[T8][:8]
    topic, data = frame(T7, rows)
    wire = json.loads(data)

    def edited(change) -> bytes:
        copy = json.loads(data)
        change(copy)
        return json.dumps(copy).encode()

    later = frame(T7, streams[T7][8:16])[1]
    signature = [
        edited(lambda f: f["rows"].pop()),  # truncated
        edited(lambda f: f["rows"].pop(0)),  # the first dropped (consecutive still)
        edited(lambda f: f["rows"][3]["payload"].update(round=10**6)),  # a row changed
        edited(lambda f: f.update(sent_t=f["sent_t"] + 1)),  # the header changed
        edited(lambda f: f["rows"].extend(json.loads(later)["rows"][:1])),  # spliced on
        edited(lambda f: f.update(sig=json.loads(later)["sig"])),  # another frame's sig
        edited(lambda f: f.update(sig="A" * 86 + "==")),
        edited(lambda f: f.pop("sig")),  # unsigned
        json.dumps({**wire, "kid": "hcm-bj-07-9"}).encode(),  # an unknown key
    ]
    outcomes = [_refused(topic, forged).outcome for forged in signature]
    assert outcomes == ["signature"] * len(signature)
    assert len(intake().read(topic, data).rows) == len(rows)  # the true frame passes
    # another table's key signing this table's frame; a true frame on another's topic
    stolen = wire_frame(table_signer(T8), T7, 1, SENT_T, rows)
    assert _refused(topic, stolen).outcome == "signature"
    assert _refused(topic_for(T8, "batch"), data).outcome == "malformed"  # table != topic's
    malformed = [
        edited(lambda f: f["rows"].reverse()),  # reordered
        edited(lambda f: f["rows"].pop(3)),  # a hole
        edited(lambda f: f["rows"].append(f["rows"][-1])),  # a row twice
        edited(lambda f: f["rows"].__setitem__(2, {**other[2]})),  # another table's row
        edited(lambda f: f["rows"][2].update(boot=2)),  # mixed boots
        edited(lambda f: f["rows"][2].update(kid="hcm-bj-07-1")),  # a row signed on its own
        edited(lambda f: f["rows"][2]["payload"].update(stake=500.0)),  # a float stake
        edited(lambda f: f["rows"][2].update(kind="award")),  # not a table kind
        edited(lambda f: f.update(rows=[])),
        edited(lambda f: f.update(rows=f["rows"] * 9)),  # 72 rows > 64
        edited(lambda f: f.update(extra=1)),
        b"[" * 40 + b"]" * 40,
    ]
    for forged in malformed:
        assert _refused(topic, forged).outcome == "malformed", forged[:200]
    # more bytes than a frame may hold: refused before it is parsed
    assert _refused(topic, b" " * (BATCH_BYTES + 1)).outcome == "malformed"
    assert len(data) < BATCH_BYTES and len(wire["rows"]) <= BATCH_ROWS
    assert _refused(topic_for("hcm-bj-99", "batch"),
                    frame("hcm-bj-99", [{**r, "table": "hcm-bj-99"} for r in rows])[1]
                    ).outcome == "unknown_table"  # fmt: skip


# -- the property: frames give the ledger of single messages, on both backends ---------------

#: What holds money and order in a ledger; not the times, salts, chains or signed texts.
QUERIES = {
    "tables": "SELECT table_id, acked FROM tables ORDER BY table_id",
    "applied": "SELECT table_id, seq, key, kind, boot, outcome, reason, digest FROM applied"
               " ORDER BY n",
    "meters": "SELECT pool, value, seq, hits FROM meters ORDER BY pool",
    "mystery": "SELECT pool, cycle FROM mystery ORDER BY pool",
    "movements": "SELECT pool, table_id, seq, what, amount, change_n FROM movements ORDER BY n",
    "awards": "SELECT award_id, pool, table_id, claim_seq, claim_key, round, spot, meter,"
              " amount, state, hit_order, reason, confirm_seq, meter_before FROM awards"
              " ORDER BY hit_order, award_id",
    "contributions": "SELECT * FROM contributions ORDER BY table_id, round, spot, pool",
    "round_results": "SELECT * FROM round_results ORDER BY table_id, round",
    "draws": "SELECT pool, cycle, low, high, trigger_cents, ended, award_id FROM draws"
             " ORDER BY pool, cycle",
}  # fmt: skip


def ledger_state(location) -> dict[str, list[tuple]]:
    db = open_store(location)
    try:
        return {name: [tuple(r) for r in db.execute(sql).fetchall()]
                for name, sql in QUERIES.items()}  # fmt: skip
    finally:
        db.close()


def _apply(location, deliveries: list[list[tuple[str, bytes]]], draws) -> None:
    """Each delivery (MQTT messages that arrived together) through the intake, then applied
    in one ledger transaction, as the service does."""
    reader = intake()
    with Ledger(location, CONFIG, randbelow=draws) as led:
        for delivery in deliveries:
            rows = [row for topic, data in delivery for row in reader.read(topic, data).rows]
            led.apply_batch([b for b, _ in rows], checked=True, texts=[t for _, t in rows])


def _mystery_offset(streams, share: float) -> int:
    pool = CONFIG.mystery_for("blazing_7s")
    feeding = [r for rows in streams.values() for r in rows
               if r["kind"] == "contribution" and r["payload"]["mystery"]]  # fmt: skip
    return int(sum(contribution(pool, r["payload"]["stake"])
                   for r in feeding[: int(len(feeding) * share)]))  # fmt: skip


_names = itertools.count()


def fitted(rows: list[dict]) -> list[list[dict]]:
    """``rows`` cut where a frame would pass BATCH_BYTES, as the publisher cuts them."""
    out, start = [], 0
    for count in plan([len(canonical(row)) for row in rows], BATCH_ROWS, BATCH_BYTES):
        out.append(rows[start : start + count])
        start += count
    return out


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    cuts=st.lists(st.integers(1, BATCH_ROWS), min_size=1, max_size=40),
    seed=st.integers(0, 2**32 - 1),
    per_delivery=st.integers(1, 6),
    share=st.sampled_from([0.15, 0.5, 0.85]),
)  # fmt: skip
def test_frames_give_the_ledger_of_the_same_rows_one_by_one(
    streams,
    ledger_at,  # noqa: F811
    cuts,
    seed,
    per_delivery,
    share,
):
    """A random burst: both tables' rows cut into frames of random sizes (a frame of one row
    goes as a single message, as the publisher sends it), the two tables' frames interleaved
    at random, several frames delivered together. Applied as frames, and as the same rows one
    by one in the same order: the same hits in the same order, the same Must-Hit-By draws and
    decisions, meters, movements and per-row records, on SQLite and PostgreSQL."""
    rng = random.Random(seed)
    chunks: dict[str, list[list[dict]]] = {}
    for number, (table, rows) in enumerate(streams.items()):
        sizes = itertools.cycle(cuts[number:] + cuts[:number])
        cut, at = [], 0
        while at < len(rows):
            size = next(sizes)
            cut.extend(fitted(rows[at : at + size]))
            at += size
        chunks[table] = cut
    order = [t for t, cut in chunks.items() for _ in cut]
    rng.shuffle(order)  # the tables interleaved; each table's frames stay in order
    taken = {t: iter(cut) for t, cut in chunks.items()}
    messages = []
    for table in order:
        rows = next(taken[table])
        messages.append(single(table, rows[0]) if len(rows) == 1 else frame(table, rows))
    deliveries = [messages[i : i + per_delivery] for i in range(0, len(messages), per_delivery)]
    one_by_one: list[list[tuple[str, bytes]]] = []  # the same rows, in the same order
    taken = {t: iter(cut) for t, cut in chunks.items()}
    for table in order:
        one_by_one.extend([single(table, row)] for row in next(taken[table]))
    draws = (lambda offset: lambda n: offset)(_mystery_offset(streams, share))
    n = next(_names)
    framed, single_loc = ledger_at(f"framed{n}"), ledger_at(f"single{n}")
    _apply(framed, deliveries, draws)
    _apply(single_loc, one_by_one, draws)
    got, want = ledger_state(framed), ledger_state(single_loc)
    assert got == want
    assert any(r[9] in ("offered", "paid") for r in want["awards"] if r[1] == "mystery")
    total = sum(len(rows) for rows in streams.values())
    assert [r[5] for r in want["applied"]].count("applied") == total


def test_the_audit_checks_every_stored_row_of_a_frame(streams, ledger_at):  # noqa: F811
    location = ledger_at()
    rows = streams[T7]
    deliveries = [[frame(T7, rows[i : i + 20])] for i in range(0, len(rows), 20)]
    _apply(location, deliveries, lambda n: 70_000)
    result = audit(Reader(location))
    assert result.failures == [] and result.messages == len(rows)
    assert result.by_key == {"hcm-bj-07-1": len(rows)}
    # one stored row changed by hand: the audit names it
    db = open_store(location)
    try:
        text = db.execute("SELECT message FROM applied WHERE seq=3").fetchone()[0]
        record = json.loads(text)
        record["frame"]["index"] = 0
        db.begin_write()
        db.execute("UPDATE applied SET message=? WHERE seq=3", (json.dumps(record),))
        db.commit()
    finally:
        db.close()
    failures = audit(Reader(location)).failures
    assert len(failures) == 1 and failures[0].startswith("seq 3 ")


def test_a_frame_row_and_the_same_row_sent_alone_are_one_message(streams):
    """The ledger's digest of a frame's row is the single message's: a resend of the same row
    in another form is a duplicate, never a conflict."""
    from controller.link.signing import digest

    row = streams[T7][4]
    framed = intake().read(*frame(T7, streams[T7][3:7])).rows[1]
    alone = intake().read(*single(T7, row)).rows[0]
    assert framed[0] == {k: v for k, v in alone[0].items() if k not in ("kid", "sig")}
    assert digest(json.loads(framed[1])) == digest(json.loads(alone[1]))
    assert canonical(framed[0]) == canonical(row)
