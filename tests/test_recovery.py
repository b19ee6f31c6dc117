"""Crash recovery: kill -9 a real table process at random events; the journal loses nothing.

A child process (``tests/_journal_feeder.py``) feeds a long session of legal rounds
(3-7 spots, splits, doubles, insurance, side bets, a few refused presses, late bets,
voided rounds) through a :class:`JournaledTable` and reports each journaled step on
stdout. The test kills it with SIGKILL at a random moment, then checks what a casino
relies on: the recovered table is the table before the crash, the journal is an
exact prefix of the session, and carrying on gives the same end and the same
contributions and results, none lost and none published twice.

Also: a journal that cannot be written (disk full, disk remounted read-only) raises
:class:`JournalError` and the table in memory stays what is on disk.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, consumed, killed, session_events

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import Journal, JournaledTable, journal_event
from controller.table import Table
from controller.table.effects import Publish

ROOT = Path(__file__).resolve().parent.parent
FEEDER = Path(__file__).resolve().parent / "_journal_feeder.py"
ROUNDS = 10  # about 350 journaled events: a few seconds even when fsync is slow
PACE_MS = 1  # the child's pause after each event, so a kill lands mid-session on a fast disk


class Reference:
    """The uncrashed session: what the journal must hold and how the table must end."""

    def __init__(self, game: str, seed: int):
        self.game = game
        self.rules = load_game(game)
        self.events = session_events(game, seed, ROUNDS)
        table = Table(self.rules, SETTINGS)
        self.rows: list[tuple[dict, bool]] = []  # what the journal stores, in order
        self.stamped = []  # the events as the journaled table handles them
        self.publishes: list[list[str]] = []  # publish keys of each event
        for event in self.events:
            stamped = journal_event(event, table.state.now)
            step = table.handle(stamped)
            self.stamped.append(stamped)
            if step.journal:
                self.rows.append((stamped.to_dict(), step.accepted))
            self.publishes.append([e.key for e in step.effects if isinstance(e, Publish)])
        self.final = table.state
        self.keys = [key for keys in self.publishes for key in keys]
        assert len(self.keys) == len(set(self.keys)), "publish keys must be unique"
        assert sum("/contribution" in k for k in self.keys) or game != "pa-standard"

    def table_after(self, journaled: int) -> Table:
        table = Table(self.rules, SETTINGS)
        table.run(self.stamped[: consumed(self.events, self.game, journaled)])
        return table

    def keys_before(self, journaled: int) -> set[str]:
        n = consumed(self.events, self.game, journaled)
        return {key for keys in self.publishes[:n] for key in keys}


def start_feeder(
    path: Path, game: str, seed: int, checkpoint_every: int | None = None, hold: int = 0
) -> subprocess.Popen[str]:
    """The feeder; ``hold``: the journaled event after whose ``ok`` line it waits for a
    line on stdin, and again two events later (``FEEDER_HOLD``; 0: it never waits)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if checkpoint_every:
        env["FEEDER_CHECKPOINT_EVERY"] = str(checkpoint_every)
    if hold:
        env["FEEDER_HOLD"] = f"ok {hold},ok {hold + 2}"
    return subprocess.Popen(
        [sys.executable, str(FEEDER), str(path), game, str(seed), str(ROUNDS), str(PACE_MS)],
        stdin=subprocess.PIPE if hold else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def run_and_kill(
    path: Path,
    game: str,
    seed: int,
    rng: random.Random,
    total: int,
    *,
    checkpoint_every: int | None = None,
    after: int = 0,
    clock_max: float = 0.4,
) -> list[str]:
    """Start the feeder, SIGKILL it at a random moment, return its complete output lines.
    ``after``: the events already journaled; with it the kill lands within the next
    ``total`` events (a span), else anywhere in the first 60% of the session. The child
    waits after the target event's ``ok`` until we let it go, then we kill it in the next
    event or two (it waits again after the second): how late we read its lines (a loaded
    machine) does not move the kill."""
    target = 0
    if rng.random() >= 0.25:  # else by the clock: start-up, opening, recovery, first events
        span = total if after else max(1, int(total * 0.6))
        target = rng.randint(after + 1, after + span)
    child = start_feeder(path, game, seed, checkpoint_every, hold=target)
    lines: list[str] = []
    assert child.stdout is not None
    if not target:
        time.sleep(rng.uniform(0.0, clock_max))
    else:
        for line in child.stdout:
            lines.append(line)
            if line.startswith("ok ") and int(line.split()[1]) >= target:  # it waits
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.flush()
                time.sleep(rng.uniform(0, 0.003))  # anywhere in the next event or two
                break
    rest, errors = killed(child, timeout=30)
    assert child.returncode == -signal.SIGKILL, f"the child was not killed: {errors}"
    lines.extend(rest.splitlines(keepends=True))
    return [line.rstrip("\n") for line in lines if line.endswith("\n")]


def deliver(lines: list[str], delivered: set[str]) -> None:
    """Add the keys a feeder's output published (``pub``) or offered again after a crash
    (``repub``, which the outbox takes once) to ``delivered``; a ``pub`` seen before fails."""
    for line in lines:
        kind, _, key = line.partition(" ")
        if kind == "pub":
            assert key not in delivered, f"{key} published twice"
        if kind in ("pub", "repub"):
            delivered.add(key)


def last_ok(lines: list[str]) -> int:
    oks = [int(line.split()[1]) for line in lines if line.startswith("ok ")]
    return max(oks, default=0)


def check_recovered(
    table: JournaledTable, ref: Reference, lines: list[str], before: int = 0
) -> int:
    """(a) and (b): the recovered table and the journal's events after a kill; ``before``
    events were known to be journaled before the killed run."""
    journaled = table.recovered
    reported = last_ok(lines)
    recovered_line = [int(x.split()[1]) for x in lines if x.startswith("recovered ")]
    floor = max([before, reported, *recovered_line])
    # every step the child reported is on disk; at most one more (journaled, not reported)
    assert floor <= journaled <= floor + 1, (floor, journaled)
    rows = [(entry.event, entry.accepted) for entry in table.journal.entries()]
    assert [e.seq for e in table.journal.entries()] == list(range(1, journaled + 1))
    assert rows == ref.rows[:journaled], "the journal is not an exact prefix of the session"
    assert table.state == ref.table_after(journaled).state
    if table.recovery.checkpoint == 0:  # a full replay checks every round record
        assert table.recovery.rounds == len(table.journal.last_rounds(10_000))
    else:  # from a checkpoint: only the events after it are replayed
        assert table.recovery.replayed == journaled - table.recovery.checkpoint
    return journaled


CASES = [
    ("pa-standard", 11),
    ("pa-standard", 12),
    ("double-up", 21),
    ("online-6deck", 31),
    ("blackjack-tie", 41),
]


@pytest.mark.parametrize(("game", "seed"), CASES)
def test_kill_at_a_random_event_then_carry_on_in_the_recovered_table(tmp_path, game, seed):
    ref = Reference(game, seed)
    rng = random.Random(seed)
    path = tmp_path / "table.journal"
    lines = run_and_kill(path, game, seed, rng, len(ref.rows))

    with JournaledTable(path, ref.rules, SETTINGS) as table:
        journaled = check_recovered(table, ref, lines)
        # (c) what the child carried out, what the crash may have lost, what follows
        delivered = {x.split()[1] for x in lines if x.startswith("pub ")}
        made = ref.keys_before(journaled)
        assert delivered <= made, "a publish went out for an event that is not journaled"
        assert {p.key for p in table.recovery.publishes} == made
        last = table.recovery.last_step
        delivered |= {e.key for e in (last.effects if last else ()) if isinstance(e, Publish)}
        assert delivered == made, "a publish request was lost in the crash"
        for event in ref.events[consumed(ref.events, game, journaled) :]:
            for effect in table.handle(event).effects:
                if isinstance(effect, Publish):
                    assert effect.key not in delivered, f"{effect.key} published twice"
                    delivered.add(effect.key)
        assert table.state == ref.final
        assert delivered == set(ref.keys)
        assert table.journal.events_written == len(ref.rows)


def test_killed_again_and_again_the_session_still_ends_as_without_a_crash(tmp_path):
    game, seed = "pa-standard", 77
    ref = Reference(game, seed)
    rng = random.Random(seed)
    path = tmp_path / "table.journal"
    delivered: set[str] = set()
    journaled = 0
    for _ in range(4):
        lines = run_and_kill(path, game, seed, rng, len(ref.rows))
        with JournaledTable(path, ref.rules, SETTINGS) as table:
            journaled = check_recovered(table, ref, lines, journaled)
        deliver(lines, delivered)
    child = start_feeder(path, game, seed)
    out, errors = child.communicate(timeout=60)
    assert child.returncode == 0, errors
    assert out.endswith("done\n")
    deliver(out.splitlines(), delivered)
    assert delivered == set(ref.keys)
    with JournaledTable(path, ref.rules, SETTINGS) as table:
        assert table.state == ref.final
        assert [(e.event, e.accepted) for e in table.journal.entries()] == ref.rows


def test_killed_fifty_times_while_it_writes_checkpoints_nothing_is_lost_or_doubled(tmp_path):
    """Checkpoints in most events' transactions (every 2 events, and each round's end):
    a kill -9 at 50 points, each restart recovering from the newest checkpoint to exactly
    the state of the events on disk, and the session ends as without a crash."""
    game, seed = "pa-standard", 78
    ref = Reference(game, seed)
    rng = random.Random(seed)
    path = tmp_path / "table.journal"
    delivered: set[str] = set()
    journaled = 0
    from_checkpoint = 0
    span = max(2, len(ref.rows) // 60)
    for _ in range(50):
        lines = run_and_kill(
            path, game, seed, rng, span, checkpoint_every=2, after=journaled, clock_max=0.05
        )  # kills by the clock land in start-up and recovery
        with JournaledTable(path, ref.rules, SETTINGS) as table:
            journaled = check_recovered(table, ref, lines, journaled)
            from_checkpoint += table.recovery.checkpoint > 0
        deliver(lines, delivered)
    assert from_checkpoint >= 40, "recovery did not start from the checkpoints"
    child = start_feeder(path, game, seed, checkpoint_every=2)
    out, errors = child.communicate(timeout=120)
    assert child.returncode == 0, errors
    deliver(out.splitlines(), delivered)
    assert delivered == set(ref.keys)
    with JournaledTable(path, ref.rules, SETTINGS) as table:
        assert table.recovery.checkpoint > 0
        assert table.state == ref.final
        assert [(e.event, e.accepted) for e in table.journal.entries()] == ref.rows


# -- a journal that cannot be written --------------------------------------------------


def _feed_until_refused(table: JournaledTable, events, limit: int = 3000):
    for number, event in enumerate(events[:limit]):
        before = table.journal.events_written
        try:
            table.handle(event)
        except JournalError as exc:
            return number, before, exc
    raise AssertionError("the journal never refused a write")


def table_fed(rules, events) -> Table:
    """A fresh table fed ``events`` as a journaled table feeds them (stamped)."""
    table = Table(rules, SETTINGS)
    for event in events:
        table.handle(journal_event(event, table.state.now))
    return table


def _on_disk(table: JournaledTable, rules) -> Table:
    with Journal(table.journal.path) as reader:
        fresh = Table(rules, SETTINGS)
        fresh.run(reader.events())
    return fresh


def test_disk_full_raises_journal_error_and_the_table_stays_what_is_on_disk(tmp_path, pa):
    events = session_events("pa-standard", 5, 10)
    with JournaledTable(tmp_path / "full.journal", pa, SETTINGS) as table:
        for event in events[:50]:
            table.handle(event)
        db = table.journal.db
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full from here
        number, before, exc = _feed_until_refused(table, events[50:])
        assert "full" in str(exc) and "was not recorded" in str(exc)
        assert "check the journal's disk" in str(exc)
        assert isinstance(exc, OSError)
        assert table.journal.events_written == before
        assert table.state == _on_disk(table, pa).state
        # memory did not run ahead: the refused event is not in the table
        expected = table_fed(pa, events[: 50 + number])
        assert table.state == expected.state
        # space again: the dealer repeats the event and the session goes on
        db.execute("PRAGMA max_page_count = 1073741823")
        for event in events[50 + number :]:
            table.handle(event)
        expected = table_fed(pa, events)
        assert table.state == expected.state
    with JournaledTable(tmp_path / "full.journal", pa, SETTINGS) as again:
        assert again.state == expected.state


def test_disk_remounted_read_only_raises_journal_error_every_time(tmp_path, pa):
    events = session_events("pa-standard", 6, 6)
    with JournaledTable(tmp_path / "ro.journal", pa, SETTINGS) as table:
        for event in events[:40]:
            table.handle(event)
        before = table.journal.events_written
        table.journal.db.execute("PRAGMA query_only = ON")  # as ext4 does on SD-card errors
        for event in [e for e in events[40:] if e.TYPE != "tick"][:3]:
            with pytest.raises(JournalError, match="was not recorded"):
                table.handle(event)
            assert table.journal.events_written == before
            assert table.state == _on_disk(table, pa).state


def test_a_journal_that_cannot_be_read_back_stops_the_table(tmp_path, pa):
    events = session_events("pa-standard", 8, 3)
    table = JournaledTable(tmp_path / "gone.journal", pa, SETTINGS)
    for event in events[:20]:
        table.handle(event)
    # the journal's disk is gone: writes and reads both fail
    table.journal.db.close()
    table.journal._db = sqlite3.connect(":memory:")
    event = next(e for e in events[20:] if e.TYPE != "tick")
    with pytest.raises(JournalError, match="cannot be read back"):
        table.handle(event)
    with pytest.raises(JournalError, match="restart the controller"):
        table.handle(event)
    with pytest.raises(JournalError, match="restart the controller"):
        table.snapshot()
    table.close()
    with JournaledTable(tmp_path / "gone.journal", pa, SETTINGS) as restarted:
        assert restarted.state == table_fed(pa, events[:20]).state
