"""A software update recovers a journal an older version wrote (issue 17, item 2): what must
match on replay is the money and the game, not the wording of a dealer prompt. A change that
alters a settlement is still refused, naming the round and what differs."""

from __future__ import annotations

import pytest
from _journal_feeder import SETTINGS, session_events

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import JournaledTable, money_and_game_difference
from controller.table import procedure, view
from controller.table.state import IN_PROGRESS


def reword(monkeypatch) -> None:
    """The update: every pay prompt gains a full stop (as issue 17 tried it)."""
    original = view.settlement_prompt

    def worded(line):
        return original(line) + "."

    monkeypatch.setattr(procedure, "settlement_prompt", worded)
    monkeypatch.setattr(view, "settlement_prompt", worded)


def test_a_reworded_prompt_recovers_a_whole_old_journal(tmp_path, monkeypatch):
    rules = load_game("pa-standard")
    path = tmp_path / "t.journal"
    with JournaledTable(path, rules, SETTINGS) as old:  # no checkpoints: a full replay
        for event in session_events("pa-standard", 3, 6):
            old.handle(event)
        state_rounds = old.state.round_number
        first = old.journal.round_record(1)
    reword(monkeypatch)
    with JournaledTable(path, rules, SETTINGS) as new:
        assert new.recovery.checkpoint == 0 and new.recovery.rounds == 6
        assert new.state.round_number == state_rounds
        assert new.journal.round_record(1) == first  # recall shows it as it was shown
    pays = [e for e in first["effects"] if e.get("code") == "pay"]
    assert pays and not pays[0]["text"].endswith(".")


def test_a_reworded_prompt_recovers_an_old_journal_mid_round(tmp_path, monkeypatch):
    rules = load_game("pa-standard")
    events = session_events("pa-standard", 5, 5)
    path = tmp_path / "t.journal"
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=1000) as old:
        fed = 0
        for event in events:
            old.handle(event)
            fed += 1
            state = old.state
            dealt = state.round is not None and len(state.round.dealer) == 2
            if state.round_number == 4 and state.phase in IN_PROGRESS and dealt:
                break  # round 4 dealt, in play
        assert old.state.phase in IN_PROGRESS
    reword(monkeypatch)
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=1000) as new:
        assert new.state.round_number == 4 and new.state.phase in IN_PROGRESS
        for event in events[fed:]:
            new.handle(event)
        record = new.journal.round_record(4)
    assert record is not None
    assert all(e["text"].endswith(".") for e in record["effects"] if e.get("code") == "pay")
    # and the whole file, old rounds and new, recovers on the new software from the start
    with JournaledTable(path, rules, SETTINGS) as again:
        assert again.journal.round_record(5) is not None


def test_a_changed_settlement_is_refused_naming_the_round_and_what_differs(tmp_path, edited):
    rules = load_game("pa-standard")
    path = tmp_path / "t.journal"
    with JournaledTable(path, rules, SETTINGS) as old:
        for event in session_events("pa-standard", 4, 30):
            old.handle(event)
    six_to_five = edited("pa-standard", ('pays = "3 to 2"', 'pays = "6 to 5"'))
    with pytest.raises(JournalError) as caught:
        JournaledTable(path, six_to_five, SETTINGS)
    text = str(caught.value)
    assert "settles round" in text and "differently" in text and "settled" in text
    assert "changed since the journal was written" in text


def test_only_presentation_may_differ():
    settled = {"effect": "settled", "spot": 2, "wager": "main", "stake": 500, "outcome": "win",
               "paid": 500, "returned": 500, "reason": "win"}  # fmt: skip
    prompt = {"effect": "prompt", "code": "pay", "text": "Pay spot 2"}
    record = {"round": 3, "dealer": ["KD", "7S"], "effects": [prompt, settled], "result": {}}
    reworded = {**record, "effects": [{**prompt, "text": "Pay spot 2."}, settled]}
    assert money_and_game_difference(record, reworded) is None
    paid_more = {**record, "effects": [prompt, {**settled, "paid": 750}]}
    assert "spot 2 main" in money_and_game_difference(record, paid_more)
    other_cards = {**record, "dealer": ["KD", "8S"]}
    assert money_and_game_difference(record, other_cards) == "its dealer differs"


def test_each_run_records_its_software_version_and_recall_shows_it(tmp_path, monkeypatch):
    import subprocess
    import sys
    from pathlib import Path

    from controller import build

    rules = load_game("pa-standard")
    path = tmp_path / "t.journal"
    events = session_events("pa-standard", 3, 4)
    with JournaledTable(path, rules, SETTINGS) as first:
        for event in events[: len(events) // 2]:
            first.handle(event)
        half = first.journal.events_written
    first_build = build.software()  # the version and the manifest's digest, or unverified
    assert first_build.startswith(f"{build.version()} (")
    monkeypatch.setattr(build, "software", lambda: "0.2.0-test")  # an update
    with JournaledTable(path, rules, SETTINGS) as second:
        for event in events[len(events) // 2 :]:
            second.handle(event)
        runs = second.journal.runs()
    assert [(r["boot"], r["software"], r["first_event"]) for r in runs] == [
        (1, first_build, 1),
        (2, "0.2.0-test", half + 1),
    ]
    assert runs[0]["software"] != "0.2.0-test" and runs[1]["started_ms"] > 1_700_000_000_000
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-m", "controller", "recall", str(path), "--last", "2"],
        cwd=root, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert f"0.2.0-test from event {half + 1} (boot 2, " in out.stdout
