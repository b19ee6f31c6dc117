"""The journal: durable before effects, one transaction per event, recovery, recall, export.

Real SQLite files in a temporary directory; sessions of legal rounds from
``tests/_journal_feeder.py``. What a casino relies on: an event is on disk when
its effects go out; the journal belongs to one game and table; reopening gives
the table back exactly; the last ten rounds (and every earlier one) can be
recalled, never the round in progress; a recalled round and the whole journal
replay to what was recorded.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events
from conftest import run_cli

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import RECALL_KEYS, SCHEMA_VERSION, Journal, JournaledTable
from controller.recall import round_layout
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Publish, Record
from controller.table.script import parse_script, replay, round_script
from controller.table.state import Phase

ROOT = Path(__file__).resolve().parent.parent
GAMES = ("pa-standard", "double-up", "online-6deck", "blackjack-tie")


def raw(path: Path) -> sqlite3.Connection:
    """Another connection to the file, as another process would see it."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def journaled_session(path: Path, game: str, seed: int, rounds: int) -> JournaledTable:
    table = JournaledTable(path, load_game(game), SETTINGS)
    for event in session_events(game, seed, rounds):
        table.handle(event)
    return table


# -- the file -------------------------------------------------------------------------


def test_every_connection_is_wal_with_full_sync_and_foreign_keys(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table, Journal(path) as reader:
        for db in (table.journal.db, reader.db):
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
            assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        other = raw(path)
        assert other.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in other.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {
            *("meta", "events", "rounds", "outbox", "link", "checkpoints", "runs"),
            *("clock_steps", "origin"),
        }
        assert reader.game == "pa-standard"
        assert reader.settings == SETTINGS
        other.close()


def test_an_event_is_on_disk_before_handle_returns_its_effects(tmp_path, pa):
    path = tmp_path / "t.journal"
    other = None
    with JournaledTable(path, pa, SETTINGS) as table:
        other = raw(path)
        for event in session_events("pa-standard", 1, 3):
            step = table.handle(event)
            # another process sees the event (and any round it settled) the moment we return
            (count,) = other.execute("SELECT count(*) FROM events").fetchone()
            assert count == table.journal.events_written
            if not step.journal:
                continue
            seq, stored, accepted = other.execute(
                "SELECT seq, event, accepted FROM events ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            assert json.loads(stored)["type"] == event.TYPE
            assert bool(accepted) == step.accepted
            records = [e.data for e in step.effects if isinstance(e, Record)]
            rows = other.execute("SELECT round, record FROM rounds WHERE seq = ?", (seq,))
            assert [(n, json.loads(text)) for n, text in rows] == [(r["round"], r) for r in records]
    other.close()


def test_a_round_record_that_cannot_be_written_takes_its_event_with_it(tmp_path, pa):
    path = tmp_path / "t.journal"
    events = session_events("pa-standard", 2, 2)
    table = JournaledTable(path, pa, SETTINGS)
    # someone wrote a bogus record of round 1 behind the table's back
    sneak = sqlite3.connect(path)
    sneak.execute("INSERT INTO rounds (round, seq, record) VALUES (1, 1, '{}')")
    sneak.commit()
    for number, event in enumerate(events):  # noqa: B007 - used after the loop
        before = table.journal.events_written
        try:
            table.handle(event)
        except JournalError as exc:
            message = str(exc)
            break
    else:
        raise AssertionError("round 1 settled without a conflict")
    assert "was not recorded" in message
    # the settling event is not on disk either: one transaction
    assert sneak.execute("SELECT count(*) FROM events").fetchone()[0] == before
    # and the journal no longer reads back as the table played it: the table stops
    assert "cannot be read back" in message
    with pytest.raises(JournalError, match="restart the controller"):
        table.handle(events[number])
    table.close()
    sneak.execute("DELETE FROM rounds")
    sneak.commit()
    sneak.close()
    with JournaledTable(path, pa, SETTINGS) as restarted:
        assert restarted.recovered == before
        assert restarted.state.phase is not Phase.SETTLED
        expected = Table(pa, SETTINGS)
        expected.run(events[:number])
        assert restarted.snapshot() == expected.snapshot()


def test_foreign_keys_hold_a_round_record_to_its_event(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table, pytest.raises(sqlite3.IntegrityError):
        table.journal.db.execute("INSERT INTO rounds (round, seq, record) VALUES (9, 42, '{}')")


def test_ticks_that_change_nothing_are_not_journaled_and_lend_their_time(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        assert not table.handle(ev.Tick(t=5000)).journal
        assert table.journal.events_written == 0
        table.handle(ev.BetSensor(1, "main", True))  # the driver sent no time
        table.handle(ev.Lockout())
        assert [e.event for e in table.journal.entries()] == [
            {"type": "bet", "spot": 1, "circle": "main", "on": True, "t": 5000},
            {"type": "lockout", "t": 5000},
        ]
    with JournaledTable(path, pa, SETTINGS) as again:  # recovery keeps the round's clock
        assert again.state.round.started_t == 5000


# -- one journal, one table ---------------------------------------------------------


def test_reopening_with_another_game_is_refused_naming_both(tmp_path, pa, double_up):
    path = tmp_path / "t.journal"
    JournaledTable(path, pa, SETTINGS).close()
    with pytest.raises(JournalError) as info:
        JournaledTable(path, double_up, SETTINGS)
    assert "'pa-standard'" in str(info.value) and "'double-up'" in str(info.value)
    assert "start a new journal file" in str(info.value)


def test_reopening_with_other_table_settings_is_refused_naming_the_setting(tmp_path, pa):
    path = tmp_path / "t.journal"
    JournaledTable(path, pa, SETTINGS).close()
    with pytest.raises(JournalError, match=r"spots 7 \(journal\) vs 5 \(table\)"):
        JournaledTable(path, pa, TableSettings(spots=5))


def test_two_controllers_cannot_write_one_journal_but_recall_can_read_it(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        table.handle(ev.BetSensor(1, "main", True, t=1))
        with pytest.raises(
            JournalError, match=f"in use by another table controller .pid {os.getpid()}"
        ):
            JournaledTable(path, pa, SETTINGS)
        with Journal(path) as reader:
            assert [e.event["type"] for e in reader.entries()] == ["bet"]
    with JournaledTable(path, pa, SETTINGS) as again:  # closed: free again
        assert again.recovered == 1


def test_files_that_are_no_journal_are_refused(tmp_path, pa):
    with pytest.raises(JournalError, match="no journal at"):
        Journal(tmp_path / "missing.journal")
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE chips (colour TEXT)")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match="not a table-controller journal"):
        JournaledTable(other, pa, SETTINGS)
    text = tmp_path / "notes.txt"
    text.write_text("the pit boss's notes\n" * 100)
    with pytest.raises(JournalError, match=r"not a readable journal|cannot open"):
        JournaledTable(text, pa, SETTINGS)
    newer = tmp_path / "newer.journal"
    JournaledTable(newer, pa, SETTINGS).close()
    db = sqlite3.connect(newer)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(JournalError, match="newer table controller"):
        Journal(newer)


# -- recovery ---------------------------------------------------------------------------


@pytest.mark.parametrize("game", GAMES)
def test_reopening_replays_the_journal_into_the_same_table(tmp_path, game):
    path = tmp_path / "t.journal"
    with journaled_session(path, game, 3, 12) as table:
        state, snapshot, written = table.state, table.snapshot(), table.journal.events_written
        keys = [p.key for p in table.recovery.publishes]
    assert keys == []  # a new journal replays nothing
    with JournaledTable(path, load_game(game), SETTINGS) as again:
        assert again.recovered == written
        assert again.recovery.rounds == 12
        assert again.state == state
        assert again.snapshot() == snapshot
        results = [p for p in again.recovery.publishes if p.topic == "round_result"]
        assert [p.key for p in results] == [f"round-{n}/result" for n in range(1, 13)]
        # and it carries on: the next event is numbered after the last one
        again.handle(ev.Tick(t=10**13))
        again.handle(ev.ShoeEvent("door_open", t=10**13))
        assert again.journal.events_written == written + 1


def test_a_changed_profile_is_caught_on_recovery_not_replayed_silently(tmp_path, pa, edited):
    path = tmp_path / "t.journal"
    journaled_session(path, "pa-standard", 4, 30).close()
    six_to_five = edited("pa-standard", ('pays = "3 to 2"', 'pays = "6 to 5"'))
    assert six_to_five.name == "pa-standard"
    with pytest.raises(JournalError, match="changed since the journal was written"):
        JournaledTable(path, six_to_five, SETTINGS)
    with JournaledTable(path, pa, SETTINGS) as table:  # the profile that wrote it still works
        assert table.recovery.rounds == 30


def test_a_tampered_journal_is_caught_on_recovery(tmp_path, pa):
    path = tmp_path / "t.journal"
    journaled_session(path, "pa-standard", 5, 3).close()
    db = sqlite3.connect(path)
    (lockout,) = db.execute(
        "SELECT seq FROM events WHERE event LIKE '%lockout%' LIMIT 1"
    ).fetchone()
    db.execute("UPDATE events SET accepted = 0 WHERE seq = ?", (lockout,))
    db.commit()
    with pytest.raises(  # the hash chain finds it before the replay would (issue 29)
        JournalError, match=f"event {lockout} does not verify .*journal-set-aside"
    ):
        JournaledTable(path, pa, SETTINGS)
    db.execute("UPDATE events SET accepted = 1 WHERE seq = ?", (lockout,))
    db.execute("DELETE FROM events WHERE seq = 7")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match=r"event 7 does not verify .*missing"):
        JournaledTable(path, pa, SETTINGS)


def test_a_failure_inside_the_table_leaves_it_as_the_journal_says(tmp_path, pa, monkeypatch):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        table.handle(ev.BetSensor(1, "main", True, t=1))
        before = table.snapshot()
        original = Table._on_lockout

        def half_way(self, event):  # a bug: the state changes, then an exception
            original(self, event)
            raise RuntimeError("bug after lockout")

        monkeypatch.setattr(Table, "_on_lockout", half_way)
        table._rebuild()  # tables built from now on have the bug
        with pytest.raises(RuntimeError, match="bug after lockout"):
            table.handle(ev.Lockout(t=2))
        assert table.snapshot() == before
        assert table.state.phase is Phase.BETTING
        assert table.journal.events_written == 1


# -- recall -----------------------------------------------------------------------------


def _play_into_round(table: JournaledTable, events, round_number: int) -> None:
    """Feed events until ``round_number`` is in the players' turn (hole card down)."""
    for event in events:
        table.handle(event)
        state = table.state
        if state.round_number == round_number and state.phase is Phase.PLAYERS:
            return
    raise AssertionError(f"round {round_number} never reached the players' turn")


def test_recall_gives_the_last_ten_rounds_and_keeps_every_round(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        _play_into_round(table, session_events("pa-standard", 6, 20), 13)
        last = table.last_rounds()
        assert [r["round"] for r in last] == list(range(12, 2, -1))  # newest first
        for record in last:
            assert record["result"]["settlements"], record["round"]
            assert record["events"] and record["effects"] and record["dealer"]
        assert table.round_record(1)["round"] == 1  # nothing pruned
        assert len(table.last_rounds(100)) == 12
        # the round in progress is not recalled: its hole card is still face down
        assert table.round_in_progress
        assert table.round_record(13) is None
        with pytest.raises(JournalError, match=r"no record of round 13 \(rounds 1 to 12"):
            table.round_script(13)


@pytest.mark.parametrize("game", GAMES)
def test_a_recalled_round_replays_to_the_settlements_recorded(tmp_path, game):
    path = tmp_path / "t.journal"
    rules = load_game(game)
    with journaled_session(path, game, 7, 14) as table:
        records = table.last_rounds(10)
        assert len(records) == 10
        for record in records:
            script = table.round_script(record["round"])
            assert script == round_script(record)
            result = replay(parse_script(script), rules)
            replayed = [s.to_dict() for s in result.settlements()]
            assert replayed == record["result"]["settlements"], record["round"]
            again = [e.data for _, s in result.steps for e in s.effects if isinstance(e, Record)]
            stored = {k: v for k, v in record.items() if k not in RECALL_KEYS}
            assert again == [stored]  # every card, action, prompt and publish key
            keys = [e.key for _, s in result.steps for e in s.effects if isinstance(e, Publish)]
            assert f"round-{record['round']}/result" in keys


@pytest.mark.parametrize("game", ["pa-standard", "blackjack-tie"])
def test_the_exported_journal_replays_to_the_recovered_table(tmp_path, game):
    path = tmp_path / "t.journal"
    rules = load_game(game)
    with JournaledTable(path, rules, SETTINGS) as table:
        _play_into_round(table, session_events(game, 8, 12), 9)  # ends mid-round
    with JournaledTable(path, rules, SETTINGS) as recovered:
        script = parse_script(recovered.export_script())
        assert script.header["game"] == game
        assert len(script.events) == recovered.recovered
        result = replay(script, rules)
        assert result.table.state == recovered.state
        refused = [step for _, step in result.steps if not step.accepted]
        assert len(refused) == sum(not e.accepted for e in recovered.journal.entries())


# -- the command line ---------------------------------------------------------------------


def test_recall_on_the_command_line(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        _play_into_round(table, session_events("pa-standard", 9, 16), 12)
        record = table.round_record(11)
        script = table.round_script(7)
    summary = run_cli("recall", str(path))
    assert summary.returncode == 0, summary.stderr
    heads = [line.split()[1] for line in summary.stdout.splitlines() if line.startswith("Round ")]
    assert heads == [str(n) for n in range(11, 1, -1)]
    assert "11 rounds recorded (1 to 11)" in summary.stdout
    assert f"dealer: {' '.join(record['dealer'])}" in summary.stdout
    # the recall shows every hand's cards: replayed from the record's events
    layout = round_layout(record, pa)
    for spot in layout["spots"]:
        for hand in spot["hands"]:
            assert " ".join(hand["cards"]) in summary.stdout
    assert summary.stdout.count("  actions: ") == 10
    one = run_cli("recall", str(path), "--round", "11", "--json")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout) == record
    many = run_cli("recall", str(path), "--last", "3", "--json")
    assert [r["round"] for r in json.loads(many.stdout)] == [11, 10, 9]
    as_script = run_cli("recall", str(path), "--round", "7", "--script")
    assert as_script.stdout == script
    missing = run_cli("recall", str(path), "--round", "12")
    assert missing.returncode == 2
    assert missing.stderr.startswith("table-controller: error: ")
    assert "no record of round 12 (rounds 1 to 11 are recorded" in missing.stderr
    nothing = run_cli("recall", str(tmp_path / "nope.journal"))
    assert nothing.returncode == 2 and "no journal at" in nothing.stderr


def test_a_disputed_round_replays_from_the_command_line(tmp_path, pa):
    path = tmp_path / "t.journal"
    journaled_session(path, "pa-standard", 10, 5).close()
    with Journal(path) as journal:
        record = journal.round_record(4)
    script = tmp_path / "round-4.jsonl"
    script.write_text(run_cli("recall", str(path), "--round", "4", "--script").stdout)
    result = run_cli("replay", str(script), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["settlements"] == record["result"]["settlements"]


def test_journal_export_on_the_command_line_replays_to_the_recovered_table(tmp_path, pa):
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        _play_into_round(table, session_events("pa-standard", 11, 8), 6)
        snapshot = table.snapshot()
    export = run_cli("journal-export", str(path), "--open-round")
    assert export.returncode == 0, export.stderr
    assert "hole card" in export.stderr
    script = tmp_path / "all.jsonl"
    script.write_text(export.stdout)
    result = run_cli("replay", str(script), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["final"] == snapshot


def test_journal_export_by_default_stops_at_the_last_settled_round(tmp_path, pa):
    """The hole card of the round in progress never leaves the controller by default."""
    path = tmp_path / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        _play_into_round(table, session_events("pa-standard", 11, 8), 6)
        assert table.round_in_progress
        settled = table.last_rounds(1)[0]
        hole = table.state.round.dealer[1]
    export = run_cli("journal-export", str(path))
    assert export.returncode == 0, export.stderr
    with Journal(path) as journal:
        everything = list(journal.script_lines())
        cut = list(journal.script_lines(open_round=False))
    assert export.stdout.splitlines() == cut
    assert len(cut) < len(everything)
    result = parse_script(export.stdout)
    assert replay(result, pa).table.state.round_number == settled["round"]
    omitted = [json.loads(line) for line in everything[len(cut) :]]
    assert {"type": "card", "card": str(hole), "source": "shoe"} in [
        {k: v for k, v in e.items() if k != "t"} for e in omitted
    ]


def test_ticks_that_are_not_journaled_leave_no_trace_in_the_replay(tmp_path):
    # found by the daemon's kill -9 test: a debounced button is stamped with the moment it
    # was confirmed, which can be earlier than the last tick; a tick that moved the table's
    # clock made the live round record differ from the replayed one
    from controller.games import load_game
    from controller.journal import JournaledTable
    from controller.table import events as ev
    from controller.table.settings import TableSettings

    rules, settings = load_game("pa-standard"), TableSettings(spots=2)
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, rules, settings) as live:
        live.handle(ev.BetSensor(1, "main", True, t=100))
        assert not live.handle(ev.Tick(t=500)).journal
        live.handle(ev.Lockout(t=450))  # confirmed at 450, after the tick at 500 was seen
        snapshot, state = live.snapshot(), live.state
        assert state.now == 500 and state.round.started_t == 500
        assert [e.event["t"] for e in live.journal.entries()] == [100, 500]
    with JournaledTable(path, rules, settings) as again:
        assert again.snapshot() == snapshot
        assert again.state.round.started_t == 500
