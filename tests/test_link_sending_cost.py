"""The table's cheaper ways to frame and sign its rows give what the reference ways give: the
Merkle root without audit paths is the tree's root, whatever the count of rows; a row sent
alone, and a frame, are the signer's and wire_frame's own bytes for every row of a played
session."""

from __future__ import annotations

import pytest
from _journal_feeder import SETTINGS, session_events

from controller import json_rows
from controller.games import load_game
from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.frames import _Tree, leaf_hash, tree_root, wire_frame
from controller.link.messages import row_envelope, topic_for
from controller.link.sending import wire_row
from controller.link.signing import Signer, canonical, new_signing_key


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
