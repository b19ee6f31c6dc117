"""The intake's shortcuts (jackpot/intake.py) give exactly what the long way gives.

A frame's rows carry their content digest from the intake to the ledger, cut out of the
canonical text the signature check encoded (``content_digest``) instead of encoding each row
again: checked here against :func:`controller.link.signing.digest` on every row of real
tables' outbox rows (a ``JournaledTable`` playing sessions), framed and signed as a table
sends them, and on rows of other shapes, which are encoded again.
"""

from __future__ import annotations

import json

import pytest
from _journal_feeder import SETTINGS, session_events
from link_keys import jackpot_config, table_signer

from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.frames import wire_frame
from controller.link.messages import envelope, topic_for
from controller.link.signing import digest
from controller.table.effects import Publish
from jackpot.intake import Intake, content_digest

CONFIG = jackpot_config()
TABLE = "hcm-bj-07"


@pytest.fixture(scope="module")
def rows(tmp_path_factory, pa) -> list[dict]:
    path = tmp_path_factory.mktemp("intake") / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in session_events("pa-standard", 5, 30):
            table.handle(event)
    with Outbox(path) as box:
        pending = box.pending()
    return [
        envelope(TABLE, 3, r.seq, Publish(topic=r.kind, key=r.key, payload=r.payload),
                 1_770_000_000_000 + 17 * r.seq)
        for r in pending
    ]  # fmt: skip


def test_a_frames_rows_carry_the_digest_the_ledger_would_compute(rows):
    intake = Intake(CONFIG.tables, CONFIG.table_keys)
    kinds = set()
    for start in range(0, len(rows), 16):
        part = rows[start : start + 16]
        topic = topic_for(TABLE, "batch")
        got = intake.read(topic, wire_frame(table_signer(TABLE), TABLE, 3, 1, part))
        assert len(got.digests) == len(part)
        for (body, _text), found in zip(got.rows, got.digests, strict=True):
            assert found == digest(body)
            kinds.add(body["kind"])
    assert {"contribution", "round_result"} <= kinds
    one = rows[0]
    topic = topic_for(TABLE, one["kind"])
    single = intake.read(topic, json.dumps(table_signer(TABLE).sign(topic, one)).encode())
    assert single.digests == [None]  # a single message: the ledger computes it


def test_a_row_of_another_shape_is_encoded_again(rows):
    row = rows[0]
    record = json.dumps(row, sort_keys=True, separators=(",", ":"))[:-1] + ',"frame":{}}'
    assert content_digest(row, record) == digest(row)
    extra = {**row, "note": "x"}
    assert content_digest(extra, record) == digest(extra)
    wrong = {**row, "boot": True}
    assert content_digest(wrong, record) == digest(wrong)
    assert content_digest(row, "{}") == digest(row)
    # a payload holding the text the cut looks for changes nothing
    tricky = {**row, "payload": {**row["payload"], "x": ',"sent_t":1,"seq":'}}
    text = json.dumps(tricky, sort_keys=True, separators=(",", ":"))[:-1] + ',"frame":{}}'
    assert content_digest(tricky, text) == digest(tricky)
