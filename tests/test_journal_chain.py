"""The journal's hash chain (issue 29 item 5): a settled round edited with sqlite3 into a
$5,000 win, or an edited event, is refused when the table reopens the file, naming the
record, and recall marks it; the chain carries on across gaming-day files and set-aside; a
migrated journal starts its chain; each round_result carries its record's link, the same
after a replay."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events
from hypothesis import given, settings
from hypothesis import strategies as st
from journal_versions import back_to_version_5

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import Journal, JournaledTable, chain
from controller.journal.library import JournalLibrary
from controller.journal.rotation import archives, rotate, set_aside

GAME = "pa-standard"
WIN = 500_000  # $5,000 in cents


@pytest.fixture(scope="module")
def rules():
    return load_game(GAME)


EVENTS = session_events(GAME, 3, 8)


def played(path: Path, rules, rounds: int = 4, every: int | None = 1000, fed: int = 0):
    """A table that played one session up to round ``rounds`` from its event ``fed``,
    checkpointed as the daemon does (so recovery alone would never replay the settled
    rounds); ``table.fed``: the events fed by then."""
    table = JournaledTable(path, rules, SETTINGS, checkpoint_every=every)
    while table.state.round_number <= rounds:
        table.handle(EVENTS[fed])
        fed += 1
    table.fed = fed
    return table


def edit(path: Path, sql: str, *params) -> None:
    db = sqlite3.connect(path)
    db.execute(sql, params)
    db.commit()
    db.close()


def test_a_round_edited_into_a_5000_win_is_refused_on_reopen_and_recall_marks_it(tmp_path, rules):
    path = tmp_path / "journal.sqlite"
    played(path, rules).close()
    db = sqlite3.connect(path)
    (seq,) = db.execute("SELECT seq FROM rounds WHERE round = 2").fetchone()
    db.close()
    edit(
        path,
        "UPDATE rounds SET record = json_set(record, '$.result.paid', ?) WHERE round = 2",
        WIN,
    )
    with pytest.raises(JournalError) as refused:
        JournaledTable(path, rules, SETTINGS, checkpoint_every=1000)
    text = str(refused.value)
    assert f"the record of round 2 (settled by event {seq}) does not verify" in text
    assert "table-controller journal-set-aside" in text

    with Journal(path) as journal:  # recall: round 1 verifies, round 2 and later do not
        assert journal.round_record(1)["chain"] == "verified"
        assert journal.round_record(2)["result"]["paid"] == WIN
        for number in (2, 3):
            assert journal.round_record(number)["chain"].startswith("UNVERIFIED")
    shown = subprocess.run(
        [sys.executable, "-m", "controller.cli", "recall", str(path), "--round", "2"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": "."},
    )  # fmt: skip
    assert "chain: UNVERIFIED: the journal's hash chain breaks at the record of round 2" in (
        shown.stdout
    )

    # the way out keeps the altered file and starts a new one that carries the chain on
    done = set_aside(path, rules, SETTINGS, by="tech")
    with JournaledTable(path, rules, SETTINGS) as table:
        assert table.journal.origin().previous == done.archive.name
    with Journal(done.archive) as archive:
        assert archive.verified().broken.round == 2


def test_an_edited_event_is_refused_naming_it(tmp_path, rules):
    path = tmp_path / "journal.sqlite"
    played(path, rules, rounds=2).close()
    db = sqlite3.connect(path)
    (seq,) = db.execute(
        "SELECT seq FROM events WHERE json_extract(event, '$.type') = 'card' ORDER BY seq LIMIT 1"
    ).fetchone()
    db.close()
    edit(path, "UPDATE events SET event = json_set(event, '$.card', 'AS') WHERE seq = ?", seq)
    with pytest.raises(JournalError, match=f"journal .*: event {seq} does not verify"):
        JournaledTable(path, rules, SETTINGS)


def test_the_chain_carries_on_across_gaming_day_files_and_set_aside(tmp_path, rules):
    path = tmp_path / "journal.sqlite"
    with played(path, rules, rounds=2) as table:
        head = table.journal.chain_head
        rotate(table, "2026-01-02", utc_ms=1_767_355_200_000)
        assert table.journal.origin().chain == head
        for event in session_events(GAME, 5, 3)[:60]:
            table.handle(event)
        assert table.journal.chain_head != head
    with Journal(archives(path)[0].path) as archive:
        assert archive.verified().head == head  # the archive ends where the live file starts
    done = set_aside(path, rules, SETTINGS, by="tech")
    with JournaledTable(path, rules, SETTINGS) as table:  # verifies from the origin's head
        assert table.journal.origin().previous == done.archive.name
    files = JournalLibrary(path).files()
    assert len(files) == 3 and all(f.chain_problem is None for f in files)

    # a live file whose origin does not carry on its archive's head is found by recall
    edit(path, "UPDATE origin SET chain = ?", "0" * 64)
    problems = [f for f in JournalLibrary(path).files() if f.chain_problem]
    assert [f.name for f in problems] == [path.name]
    with pytest.raises(JournalError, match="does not verify"):
        JournaledTable(path, rules, SETTINGS)


def test_a_migrated_journal_starts_its_chain_at_the_migration(tmp_path, rules):
    path = tmp_path / "journal.sqlite"
    with played(path, rules, rounds=2) as table:
        fed = table.fed
    back_to_version_5(path)
    with Journal(path) as old:
        assert old.round_record(1)["chain"].startswith("not chained")
    with played(path, rules, rounds=4, fed=fed) as table:  # migrates, then plays on
        last_old = int(table.journal.meta()["chain_since"])
        assert last_old > 0
    with Journal(path) as journal:
        assert journal.round_record(1)["chain"].startswith("not chained")
        assert journal.round_record(4)["chain"] == "verified"
    edit(
        path, "UPDATE rounds SET record = json_set(record, '$.result.paid', ?) WHERE round = 4", WIN
    )
    with pytest.raises(JournalError, match=r"the record of round 4 .* does not verify"):
        JournaledTable(path, rules, SETTINGS)


def test_each_round_result_carries_its_records_link_and_a_replay_makes_the_same(tmp_path, rules):
    path = tmp_path / "journal.sqlite"
    played(path, rules, rounds=3, every=None).close()
    db = sqlite3.connect(path)
    links = dict(db.execute("SELECT round, chain FROM rounds"))
    sent = {
        json.loads(payload)["round"]: json.loads(payload)["chain"]
        for (payload,) in db.execute("SELECT payload FROM outbox WHERE kind = 'round_result'")
    }
    db.close()
    assert sent == links and len(sent) == 3
    # recovery replays every event and checks each outbox message against what it makes
    with JournaledTable(path, rules, SETTINGS) as table:
        results = [p for p in table.recovery.publishes if p.topic == "round_result"]
        assert {p.payload["round"]: p.payload["chain"] for p in results} == links


@settings(max_examples=300, deadline=None)
@given(
    prev=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    seq=st.integers(min_value=0, max_value=2**53),
    number=st.integers(min_value=0, max_value=2**31),
    text=st.text(st.characters(exclude_categories=("Cs",))),
    accepted=st.booleans(),
    utc_ms=st.none() | st.integers(min_value=-(2**62), max_value=2**62),
)
def test_the_links_written_by_hand_are_the_links_of_the_json_encoder(
    prev, seq, number, text, accepted, utc_ms
):
    """Issue 32: event_link and round_link write their hashed JSON themselves (the prompt's
    path, the check on open); every link must stay what json.dumps made, or every journal
    written before would stop verifying."""
    assert chain.event_link(prev, seq, number, text, accepted, utc_ms) == chain._link(
        prev, ["event", seq, number, text, int(accepted), utc_ms]
    )
    assert chain.round_link(prev, number, seq, text, utc_ms) == chain._link(
        prev, ["round", number, seq, text, utc_ms]
    )
