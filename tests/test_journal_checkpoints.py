"""Checkpoints in the journal (issue 17, item 1): written in the event's own transaction at each
round's end and every N events, at most two kept, and recovery starts from the newest one
before the last event: the same table as a full replay, with only the events after it
replayed. Real SQLite with the production settings."""

from __future__ import annotations

import json
import sqlite3

import pytest
from _journal_feeder import SETTINGS, session_events

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import CHECKPOINTS_KEPT, JournaledTable
from controller.journal.outbox import Outbox


def checkpoint_rows(path) -> list[int]:
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT seq FROM checkpoints ORDER BY seq")]
    finally:
        db.close()


@pytest.mark.parametrize("game", ["pa-standard", "double-up", "blackjack-tie", "online-6deck"])
def test_recovery_from_a_checkpoint_is_the_table_of_a_full_replay(tmp_path, game):
    rules = load_game(game)
    events = session_events(game, 5, 12)
    path = tmp_path / "t.journal"
    cut = [len(events) * k // 7 for k in range(1, 7)]
    fed = 0
    for stop in [*cut, len(events)]:
        with JournaledTable(path, rules, SETTINGS, checkpoint_every=25) as table:
            for event in events[fed:stop]:
                table.handle(event)
            fed = stop
            written = table.journal.events_written
        with JournaledTable(path, rules, SETTINGS) as again:
            assert again.recovery.checkpoint > 0
            assert again.recovery.events == written
            assert again.recovery.replayed == written - again.recovery.checkpoint
            assert again.recovery.replayed <= 200  # about a round, not the history
            state = again.state
        db = sqlite3.connect(path)
        db.execute("DELETE FROM checkpoints")
        db.commit()
        db.close()
        with JournaledTable(path, rules, SETTINGS) as replayed:  # a full replay now
            assert replayed.recovery.checkpoint == 0 and replayed.recovery.events == written
            assert replayed.state == state
            assert replayed.state.now == state.now


def test_at_most_two_checkpoints_are_kept_and_each_is_in_its_events_transaction(tmp_path):
    rules = load_game("pa-standard")
    path = tmp_path / "t.journal"
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=10) as table:
        seen = set()
        for event in session_events("pa-standard", 3, 8):
            table.handle(event)
            rows = checkpoint_rows(path)
            assert len(rows) <= CHECKPOINTS_KEPT
            assert all(seq <= table.journal.events_written for seq in rows)
            seen.update(rows)
        assert len(seen) > 8  # one at each round's end at least
        last = table.journal.events_written
    db = sqlite3.connect(path)
    try:
        gaps = db.execute(
            "SELECT count(*) FROM checkpoints c LEFT JOIN events e ON e.seq = c.seq "
            "WHERE e.seq IS NULL"
        ).fetchone()[0]
        software = {r[0] for r in db.execute("SELECT software FROM checkpoints")}
    finally:
        db.close()
    assert gaps == 0 and max(checkpoint_rows(path)) <= last
    assert software and all(software)


def test_a_damaged_checkpoint_falls_back_to_the_events(tmp_path):
    rules = load_game("pa-standard")
    path = tmp_path / "t.journal"
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=10) as table:
        for event in session_events("pa-standard", 4, 6):
            table.handle(event)
        state, written = table.state, table.journal.events_written
    for damage in ("not json", json.dumps({"version": 99, "state": {}})):
        db = sqlite3.connect(path)
        db.execute("UPDATE checkpoints SET state = ?", (damage,))
        db.commit()
        db.close()
        with JournaledTable(path, rules, SETTINGS) as again:
            assert again.recovery.checkpoint == 0  # every event replayed instead
            assert again.recovery.events == written and again.state == state


def test_the_outbox_after_a_checkpoint_is_still_checked_against_the_replay(tmp_path):
    rules = load_game("pa-standard")
    path = tmp_path / "t.journal"

    def made_after_checkpoint() -> bool:
        db = sqlite3.connect(path)
        try:
            (made,) = db.execute("SELECT max(event) FROM outbox").fetchone()
            (cp,) = db.execute("SELECT max(seq) FROM checkpoints").fetchone()
        finally:
            db.close()
        return made is not None and cp is not None and made > cp

    with JournaledTable(path, rules, SETTINGS, checkpoint_every=50) as table:
        for event in session_events("pa-standard", 3, 8):
            table.handle(event)
            if table.journal.events_written > 100 and made_after_checkpoint():
                break  # a contribution after the last round's checkpoint
    with Outbox(path) as box:
        pending = box.pending()
    assert pending
    with JournaledTable(path, rules, SETTINGS) as again:
        base = again.recovery.checkpoint
    db = sqlite3.connect(path)
    try:
        (event,) = db.execute("SELECT max(event) FROM outbox").fetchone()
        assert event > base  # the last message was made after the checkpoint
        db.execute(
            "UPDATE outbox SET payload = json_set(payload, '$.round', 999) WHERE seq = "
            "(SELECT max(seq) FROM outbox)"
        )
        db.commit()
    finally:
        db.close()
    with pytest.raises(JournalError, match="is not what event"):
        JournaledTable(path, rules, SETTINGS)


def test_a_rounds_checkpoint_goes_with_the_event_after_the_one_that_settles_it(tmp_path):
    """Issue 32: the settling event's commit (a card: the dealer's prompt waits for it)
    carries no checkpoint; the next journaled event's does, one per round."""
    rules = load_game("pa-standard")
    path = tmp_path / "t.journal"
    settled_at, with_checkpoint = [], []
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=1000) as table:
        for event in session_events("pa-standard", 3, 8):
            rounds = table.journal.round_count()[0]
            before = set(checkpoint_rows(path))
            step = table.handle(event)
            if not step.journal:
                continue
            seq = table.journal.events_written
            if table.journal.round_count()[0] > rounds:
                settled_at.append(seq)
            if set(checkpoint_rows(path)) - before:
                with_checkpoint.append(seq)
        last = table.journal.events_written
    assert len(settled_at) >= 8 and last < 1000  # no checkpoint for the count of events
    # each round's checkpoint is the first journaled event after its settlement, none other
    assert with_checkpoint == [seq + 1 for seq in settled_at if seq < last]
