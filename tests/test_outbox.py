"""The table's durable outbox and boot counter (issue #5, table side).

Real SQLite files; real child processes killed with SIGKILL (``tests/_journal_feeder.py``
through the helpers of ``tests/test_recovery.py``). What the jackpot link relies on:
every publish request is on disk in the same transaction as the event that made it,
numbered 1, 2, 3 ... with no gap and never reused; recovery never writes it again;
only the jackpot controller's acknowledgement empties it; the boot counter only grows.
"""

from __future__ import annotations

import copy
import json
import random
import sqlite3
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, consumed, session_events
from journal_versions import back_to_version_3
from test_recovery import Reference, run_and_kill, start_feeder

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import SCHEMA_VERSION, Journal, JournaledTable
from controller.journal import outbox as outbox_module
from controller.journal.outbox import Outbox, OutboxError
from controller.table import Table
from controller.table.effects import Publish


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def on_disk(path: Path) -> tuple[tuple[int, int, int], list[tuple]]:
    """``(boot, written, acked)`` and every outbox row, read by another connection."""
    db = raw(path)
    try:
        link = db.execute("SELECT boot, written, acked FROM link").fetchone()
        rows = db.execute("SELECT seq, event, kind, key, payload FROM outbox ORDER BY seq")
        return link, rows.fetchall()
    finally:
        db.close()


def publishing_events(game: str = "pa-standard", seed: int = 3, rounds: int = 4):
    return session_events(game, seed, rounds)


def publishing_indexes(rules, events) -> list[int]:
    """The indexes of the events that make publish requests (a plain table decides)."""
    probe = Table(rules, SETTINGS)
    flags = [any(isinstance(e, Publish) for e in probe.handle(ev).effects) for ev in events]
    return [number for number, flag in enumerate(flags) if flag]


# -- written with the event, in one transaction -----------------------------------------


def test_every_publish_is_in_the_outbox_when_handle_returns(tmp_path, pa):
    path = tmp_path / "t.journal"
    expected = []
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in publishing_events():
            step = table.handle(event)
            for effect in step.effects:
                if isinstance(effect, Publish):
                    expected.append(
                        (table.journal.events_written, effect.topic, effect.key, effect.payload)
                    )
            (_, written, acked), rows = on_disk(path)
            assert written == len(expected) and acked == 0
            assert [r[0] for r in rows] == list(range(1, len(expected) + 1))
            got = [(event_seq, kind, key, json.loads(p)) for _, event_seq, kind, key, p in rows]
            # the journal adds its hash chain to each round_result (issue 29)
            assert all(len(g[3].pop("chain", "")) == 64 for g in got if g[1] == "round_result")
            assert got == expected
    kinds = {kind for _, kind, _, _ in expected}
    assert {"contribution", "round_result"} <= kinds
    assert len({key for _, _, key, _ in expected}) == len(expected)


@pytest.mark.parametrize("how", ["sqlite trigger", "python error"])
def test_a_failure_between_the_event_and_the_outbox_leaves_neither(tmp_path, pa, how, monkeypatch):
    path = tmp_path / "t.journal"
    events = publishing_events()
    table = JournaledTable(path, pa, SETTINGS)
    target = publishing_indexes(pa, events)[3]  # some messages are written before it
    for event in events[:target]:
        table.handle(event)
    assert on_disk(path)[0][1] >= 3
    rest = events[target:]
    events_before = table.journal.events_written
    link_before, rows_before = on_disk(path)
    state_before = copy.deepcopy(table.state)  # handle changes the state in place
    seen = []
    if how == "sqlite trigger":  # the database refuses the outbox insert itself
        db = table.journal.db
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON outbox "
            "BEGIN SELECT RAISE(ABORT, 'injected outbox failure'); END"
        )
    else:  # the process fails after the event row is in, before the outbox rows
        real = outbox_module.insert_rows

        def failing(db, event_seq, publishes):
            seen.append(db.execute("SELECT max(seq) FROM events").fetchone()[0])
            raise OSError(28, "injected: no space left on device")

        monkeypatch.setattr(outbox_module, "insert_rows", failing)
    with pytest.raises(JournalError, match="was not recorded"):
        table.handle(rest[0])
    if seen:
        assert seen == [events_before + 1]  # the event row was inserted, then the failure
    assert on_disk(path) == (link_before, rows_before)
    assert raw(path).execute("SELECT count(*) FROM events").fetchone()[0] == events_before
    assert table.journal.events_written == events_before
    assert table.state == state_before
    # the failure is repaired: the dealer repeats the event; the numbering goes on
    if how == "sqlite trigger":
        table.journal.db.execute("DROP TRIGGER refuse")
    else:
        monkeypatch.setattr(outbox_module, "insert_rows", real)
    step = table.handle(rest[0])
    keys = [e.key for e in step.effects if isinstance(e, Publish)]
    (_, written, _), rows = on_disk(path)
    assert [r[3] for r in rows[len(rows_before) :]] == keys
    assert written == link_before[1] + len(keys)
    assert [r[0] for r in rows] == list(range(1, written + 1))
    table.close()


# -- recovery never writes the outbox ---------------------------------------------------


def test_reopening_leaves_the_outbox_as_committed(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in publishing_events(rounds=6):
            table.handle(event)
        keys = [row[3] for row in on_disk(path)[1]]
    with Outbox(path) as box:
        box.acknowledge(5)
    link, rows = on_disk(path)
    for boot in (2, 3):
        with JournaledTable(path, pa, SETTINGS) as again:
            assert [p.key for p in again.recovery.publishes] == keys
        assert on_disk(path) == ((boot, *link[1:]), rows)


def test_recovery_refuses_an_outbox_that_is_not_what_the_events_made(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in publishing_events():
            table.handle(event)
    for tamper, match in (
        ("DELETE FROM outbox WHERE seq = 3", "exactly messages 1 to"),
        ("UPDATE outbox SET payload = '{\"stake\":1}' WHERE seq = 2", "message 2"),
        ("UPDATE link SET written = written + 1, acked = 0", "holds"),
    ):
        copy = tmp_path / f"copy-{len(match)}.journal"
        db = sqlite3.connect(path)
        db.execute(f"VACUUM INTO '{copy}'")
        db.close()
        db = sqlite3.connect(copy)
        db.execute(tamper)
        db.commit()
        db.close()
        with pytest.raises(JournalError, match=match):
            JournaledTable(copy, pa, SETTINGS)


# -- the jackpot controller's acknowledgement -------------------------------------------


@pytest.fixture
def filled(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in publishing_events(rounds=3):
            table.handle(event)
    with Outbox(path) as box:
        assert box.depth() >= 8
        yield path, box


def test_acknowledge_deletes_up_to_the_sequence_durably(filled, pa):
    path, box = filled
    written = box.last_written()
    keys = [row.key for row in box.pending()]
    assert [row.seq for row in box.pending()] == list(range(1, written + 1))
    assert box.acknowledge(0) == 0
    assert box.acknowledge(3) == 3
    assert box.acknowledge(3) == 0  # a repeated acknowledgement is harmless
    assert box.last_acknowledged() == 3 and box.depth() == written - 3
    assert [row.key for row in box.pending()] == keys[3:]
    assert [row.seq for row in box.pending(2)] == [4, 5]
    assert box.pending(0) == []
    assert [row.seq for row in box.resend_from(6)] == list(range(6, written + 1))
    assert [row.seq for row in box.resend_from(1, limit=1)] == [4]  # 1-3 are gone
    assert box.resend_from(written + 1) == []
    with Outbox(path) as other:  # durable: another connection sees it
        assert other.last_acknowledged() == 3 and other.depth() == written - 3
    assert box.acknowledge(written) == written - 3
    assert box.depth() == 0 and box.pending() == []
    # the sequence goes on after everything was acknowledged: never reused
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in session_events("pa-standard", 9, 2):
            table.handle(event)
    rows = box.pending()
    assert rows and rows[0].seq == written + 1
    assert [row.seq for row in rows] == list(range(written + 1, box.last_written() + 1))


def test_acknowledgements_ahead_or_backwards_are_refused_and_change_nothing(filled):
    path, box = filled
    written = box.last_written()
    box.acknowledge(4)
    before = on_disk(path)
    for bad, match in (
        (written + 1, f"written only up to {written}"),
        (3, "4 was already acknowledged"),
        (0, "already acknowledged"),
        (-1, "not a sequence number"),
        (True, "not a sequence number"),
        ("5", "not a sequence number"),
    ):
        with pytest.raises(OutboxError, match=match) as caught:
            box.acknowledge(bad)
        assert isinstance(caught.value, ValueError)
        assert on_disk(path) == before
        assert not box.db.in_transaction
    for bad in (0, -2, 1.5):
        with pytest.raises(OutboxError):
            box.resend_from(bad)
    assert box.acknowledge(5) == 1  # still works after the refusals


def test_acknowledging_while_the_table_writes(tmp_path, pa):
    """The publisher's connection and the table's: SQLite serialises them; nothing lost."""
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table, Outbox(path) as box:
        keys: list[str] = []
        acked_keys: list[str] = []
        for event in publishing_events(rounds=5):
            step = table.handle(event)
            keys += [e.key for e in step.effects if isinstance(e, Publish)]
            pending = box.pending(3)
            if pending:
                acked_keys += [row.key for row in pending]
                box.acknowledge(pending[-1].seq)
        acked_keys += [row.key for row in box.pending()]
        assert acked_keys == keys


# -- boot counter and schema ------------------------------------------------------------


def test_the_boot_counter_grows_once_per_writer_open_and_never_on_read(tmp_path, pa):
    path = tmp_path / "t.journal"
    for boot in (1, 2, 3):
        with JournaledTable(path, pa, SETTINGS) as table:
            assert table.journal.boot == boot
            with Journal(path) as reader, Outbox(path) as box:
                assert reader.boot is None
                assert box.boot == boot
    with Outbox(path) as box:
        assert box.boot == 3  # reading does not count a boot
    assert on_disk(path)[0][0] == 3


def test_a_version_1_journal_is_migrated_with_an_empty_outbox(tmp_path, pa):
    path = tmp_path / "old.journal"
    events = publishing_events(rounds=4)
    half = len(events) // 2
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in events[:half]:
            table.handle(event)
        state, old = table.state, table.journal.events_written
    back_to_version_3(path)
    db = sqlite3.connect(path)  # as the previous software wrote it
    db.executescript("DROP TABLE outbox; DROP TABLE link; PRAGMA user_version = 1;")
    db.close()
    with Journal(path) as reader:  # recall reads it as it is
        assert reader.events_written == old and reader.outbox_since() is None
    with pytest.raises(JournalError, match="start the table controller once"):
        Outbox(path)
    with JournaledTable(path, pa, SETTINGS) as table:
        assert table.state == state
        assert table.journal.boot == 1
        assert raw(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
        assert table.journal.outbox_since() == old
        with Outbox(path) as box:
            assert box.depth() == 0  # events before the link are not sent
        keys = []
        for event in events[half:]:
            keys += [e.key for e in table.handle(event).effects if isinstance(e, Publish)]
    with JournaledTable(path, pa, SETTINGS), Outbox(path) as box:
        assert [row.key for row in box.pending()] == keys
        assert [row.seq for row in box.pending()] == list(range(1, len(keys) + 1))


def test_a_version_2_journal_keeps_its_outbox_and_then_takes_award_confirms(tmp_path, pa):
    """Schema 2's outbox CHECK knew three kinds; version 3 adds award_confirm."""
    path = tmp_path / "v2.journal"
    events = publishing_events(rounds=4)
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in events:
            table.handle(event)
        state = table.state
    back_to_version_3(path)
    db = sqlite3.connect(path)  # the outbox as schema 2 made it, with its rows
    db.executescript(
        "ALTER TABLE outbox RENAME TO o3;"
        "CREATE TABLE outbox (seq INTEGER PRIMARY KEY CHECK (seq >= 1),"
        " event INTEGER NOT NULL REFERENCES events (seq),"
        " kind TEXT NOT NULL CHECK (kind IN ('contribution', 'round_result', 'hit_claim')),"
        " key TEXT NOT NULL UNIQUE, payload TEXT NOT NULL);"
        "INSERT INTO outbox SELECT * FROM o3; DROP TABLE o3; PRAGMA user_version = 2;"
    )
    before = db.execute("SELECT * FROM outbox ORDER BY seq").fetchall()
    db.close()
    assert before
    with JournaledTable(path, pa, SETTINGS) as table:
        assert table.state == state
        assert raw(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
        assert raw(path).execute("SELECT * FROM outbox ORDER BY seq").fetchall() == before
    db = sqlite3.connect(path)  # the new kind fits the rebuilt CHECK (rolled back)
    db.execute("INSERT INTO outbox VALUES (999999, 1, 'award_confirm', 'k', '{}')")
    db.rollback()
    db.close()


# -- SIGKILL: the outbox is exactly the publishes of the journaled events --------------


def expected_keys(ref: Reference, journaled: int) -> list[str]:
    n = consumed(ref.events, ref.game, journaled)
    return [key for keys in ref.publishes[:n] for key in keys]


@pytest.mark.parametrize(("game", "seed"), [("pa-standard", 13), ("blackjack-tie", 43)])
def test_killed_again_and_again_the_outbox_matches_the_journal(tmp_path, game, seed):
    ref = Reference(game, seed)
    rules = load_game(game)
    rng = random.Random(seed)
    path = tmp_path / "table.journal"
    acked = 0
    started = 0
    for _ in range(5):
        lines = run_and_kill(path, game, seed, rng, len(ref.rows))
        started += any(line.startswith("recovered ") for line in lines)
        if not path.exists() or path.stat().st_size == 0:
            continue  # killed before the journal was created
        try:
            before = on_disk(path)
        except sqlite3.OperationalError:
            continue  # killed before the schema was committed: nothing written yet
        with Journal(path) as reader:
            journaled = reader.events_written
        keys = expected_keys(ref, journaled)
        (boot, written, was_acked), rows = before
        assert boot >= started  # every start that got going counted a boot
        assert (written, was_acked) == (len(keys), acked)
        assert [row[0] for row in rows] == list(range(acked + 1, written + 1))
        assert [row[3] for row in rows] == keys[acked:]
        with JournaledTable(path, rules, SETTINGS):
            pass  # recovery
        after = on_disk(path)
        assert after[1] == rows and after[0][1:] == (written, acked)  # nothing re-written
        assert after[0][0] == boot + 1
        with Outbox(path) as box:  # the jackpot controller applies some of them
            acked = rng.randint(acked, written)
            box.acknowledge(acked)
    child = start_feeder(path, game, seed)
    _, errors = child.communicate(timeout=120)
    assert child.returncode == 0, errors
    with Outbox(path) as box:
        assert box.last_written() == len(ref.keys)
        assert [row.key for row in box.pending()] == ref.keys[acked:]
        assert box.acknowledge(len(ref.keys)) == len(ref.keys) - acked
