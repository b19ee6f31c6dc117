"""Gaming-day rotation under kill -9 (issue 17): a real table process (``tests/_journal_feeder.py``)
rotates its journal at every gaming day (one a round here), writes a checkpoint in most events'
transactions, pauses at each step of a rotation, and is killed with SIGKILL again and again:
inside a rotation's steps, inside event and checkpoint commits, and at start-up. The child waits
for the test at the line it is to be killed after (``FEEDER_HOLD``), so where kills land does not
depend on the machine's load. After each kill, and at the end, what a casino relies on:

- the recovered table is the table of the events on disk (the no-crash reference's prefix);
- the live file and its archives hold every event exactly once, in order: the chain of origins
  from the live file back to event 1 (each naming its archive and that file's SHA-256) has no gap
  and no overlap. The only overlap allowed is a killed rotation's archive that no origin names
  yet: it is named as the live file's next archive, holds a prefix of the live file's events
  exactly, and the next rotation writes it again whole (at the end there is none);
- every outbox message was written exactly once with no gap: in whichever files it is found, a
  sequence number always carries the same key, the reference's;
- a jackpot controller that takes the pending messages between runs (dropping resends it has
  applied, refusing a gap) and acknowledges as it goes (``Outbox.acknowledge``) applies every
  message exactly once, in order.

``ROTATION_KILL_SOAK=1`` runs a longer session with more kills (as ``TABLE_SOAK`` does for the
property tests).
"""

from __future__ import annotations

import collections
import hashlib
import os
import random
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, consumed, holds_at, killed, session_events

from controller.games import load_game
from controller.journal import Journal, JournaledTable, journal_event
from controller.journal.outbox import Outbox
from controller.journal.rotation import archive_path, archived_info, archives, file_day
from controller.table import Table
from controller.table.effects import Publish

ROOT = Path(__file__).resolve().parent.parent
FEEDER = Path(__file__).resolve().parent / "_journal_feeder.py"
SOAK = bool(os.environ.get("ROTATION_KILL_SOAK"))
ROUNDS = 60 if SOAK else 24  # one gaming day each
KILLS = 300 if SOAK else 40  # CI's size; each step of a rotation still killed 4-5 times
PACE_MS = 1
PAUSE_MS = 12  # at each step of a rotation
STEPS = ("backup", "archive", "prune", "commit", "retain")
GAME = "pa-standard"


class Session:
    """The uncrashed session: its journal rows, publish keys and the table after each."""

    def __init__(self, game: str, seed: int, rounds: int):
        self.game = game
        self.rounds = rounds
        self.rules = load_game(game)
        self.events = session_events(game, seed, rounds)
        table = Table(self.rules, SETTINGS)
        self.rows: list[tuple[dict, bool]] = []
        self.stamped = []
        self.keys: list[str] = []  # in outbox order: message seq n is keys[n - 1]
        self.written = [0]  # messages written after each journaled event
        for event in self.events:
            stamped = journal_event(event, table.state.now)
            step = table.handle(stamped)
            self.stamped.append(stamped)
            publishes = [e.key for e in step.effects if isinstance(e, Publish)]
            assert step.journal or not publishes
            self.keys.extend(publishes)
            if step.journal:
                self.rows.append((stamped.to_dict(), step.accepted))
                self.written.append(len(self.keys))
        self.final = table.state
        assert len(set(self.keys)) == len(self.keys)
        assert any("/contribution" in key for key in self.keys)

    def table_after(self, journaled: int) -> Table:
        table = Table(self.rules, SETTINGS)
        table.run(self.stamped[: consumed(self.events, self.game, journaled)])
        return table


@dataclass
class JackpotController:
    """The link's far end: applies message ``seq`` only after ``seq - 1``; a resend of one
    already applied is dropped (it must be the same message)."""

    applied: list[str] = field(default_factory=list)
    resends: int = 0

    def receive(self, path: Path) -> None:
        with Outbox(path) as outbox:
            for row in outbox.pending():
                if row.seq <= len(self.applied):
                    assert self.applied[row.seq - 1] == row.key, f"seq {row.seq} changed key"
                    self.resends += 1
                    continue
                assert row.seq == len(self.applied) + 1, f"gap before message {row.seq}"
                self.applied.append(row.key)

    def acknowledge(self, path: Path, up_to: int) -> None:
        with Outbox(path) as outbox:
            outbox.acknowledge(up_to)


def start(
    path: Path, seed: int, rounds: int, env: dict[str, str], holds: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    """The feeder; ``holds``: the lines it waits at for our go (``FEEDER_HOLD``)."""
    if holds:
        env = dict(env, FEEDER_HOLD=",".join(holds))
    return subprocess.Popen(
        [sys.executable, str(FEEDER), str(path), GAME, str(seed), str(rounds), str(PACE_MS)],
        stdin=subprocess.PIPE if holds else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows_of(journal: Journal) -> list[tuple[int, dict, bool]]:
    return [(e.seq, e.event, e.accepted) for e in journal.entries()]


def outbox_keys(journal: Journal) -> dict[int, str]:
    return {seq: key for seq, key in journal.db.execute("SELECT seq, key FROM outbox")}


@dataclass
class Files:
    """What the journal's files hold together."""

    rows: list[tuple[int, dict, bool]]  # every event, from the oldest file to the live one
    chain: list[Path]  # the archives the origins name, oldest first
    stray: Path | None  # a killed rotation's archive, not yet named by an origin
    messages: dict[int, str]  # every outbox row found in any file: seq -> key


def read_files(path: Path) -> Files:
    """Walk the origins from the live file back to event 1, checking each archive; see the
    module docstring for what may overlap."""
    left = {a.path.name: a for a in archives(path)}
    messages: dict[int, str] = {}

    def take(journal: Journal) -> None:
        for seq, key in outbox_keys(journal).items():
            assert messages.setdefault(seq, key) == key, f"message {seq} has two keys"

    with Journal(path) as live:
        rows = rows_of(live)
        first = live.first_event()
        origin = live.origin()
        day = file_day(live)
        take(live)
    assert [r[0] for r in rows] == list(range(first, first + len(rows))), "a gap in the live file"
    live_rows = rows
    chain: list[Path] = []
    expect_last = first - 1
    while origin is not None:
        assert origin.seq == expect_last
        assert origin.previous in left, f"the origin names {origin.previous}, which is gone"
        archive = left.pop(origin.previous)
        assert sha256(archive.path) == origin.previous_sha256, f"{archive.path.name} changed"
        check_read_only(archive.path)
        with Journal(archive.path) as old:
            held = rows_of(old)
            info = archived_info(old)
            origin = old.origin()
            take(old)
        assert info["first_event"] == archive.first_event and info["last_event"] == expect_last
        assert [r[0] for r in held] == list(range(archive.first_event, expect_last + 1))
        rows = held + rows
        chain.insert(0, archive.path)
        expect_last = archive.first_event - 1
    assert expect_last == 0, "the oldest file does not start at event 1"
    stray = None
    if left:
        (archive,) = left.values()  # at most one
        assert archive.path == archive_path(path, day, first), f"{archive.path.name} is not due"
        check_read_only(archive.path)
        with Journal(archive.path) as old:
            held = rows_of(old)
            take(old)
        assert held == live_rows[: len(held)], "a killed rotation's archive is not the live file's"
        stray = archive.path
    return Files([(e, a) for _, e, a in rows], chain, stray, messages)


def check_read_only(path: Path) -> None:
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert path.read_bytes()[18:20] == b"\x01\x01", f"{path.name} is in WAL mode"


@dataclass
class Tally:
    """Where the kills landed (the child's last complete line)."""

    where: collections.Counter = field(default_factory=collections.Counter)

    def landed(self, lines: list[str]) -> str:
        last = lines[-1] if lines else ""
        kind = last.split(" ")[0]
        where = {"rot": f"rotation {last[4:]}", "ok": "event", "pub": "event"}.get(kind, "start")
        if kind == "rotated":
            where = "after a rotation"
        self.where[where] += 1
        return where

    def inside_rotations(self) -> int:
        return sum(n for w, n in self.where.items() if w.startswith("rotation "))


@dataclass(frozen=True)
class Kill:
    """Where to kill the child: ``mode`` "rotation" (at the rotation step ``step``), "event"
    (after a journaled event) or "clock" (a moment after it starts); ``go``: let it go on
    from there and kill it a moment later, else kill it while it waits there."""

    mode: str
    step: str = ""
    go: bool = True


def kill_plan(rng: random.Random, kills: int, weights=(1, 1, 1, 1, 1)) -> list[Kill]:
    """``kills`` kills in a random order: 60% at a rotation's steps (shared by ``weights``,
    one of :data:`STEPS` each), 32% after a journaled event, the rest by the clock. Every
    other kill at each step and after events is where the child waits, so how many land
    where does not depend on the machine's speed."""
    rotation, event = round(kills * 0.6), round(kills * 0.32)
    shares = [rotation * w / sum(weights) for w in weights]
    counts = [int(x) for x in shares]
    for i in sorted(range(len(STEPS)), key=lambda i: int(shares[i]) - shares[i]):
        counts[i] += sum(counts) < rotation
    plan = [
        Kill("rotation", step, k % 2 == 1)
        for step, count in zip(STEPS, counts, strict=True)
        for k in range(count)
    ]
    plan += [Kill("event", go=k % 2 == 1) for k in range(event)]
    plan += [Kill("clock")] * (kills - len(plan))
    rng.shuffle(plan)
    return plan


def run_once(path, seed, env, rng, ref, journaled, kill: Kill) -> tuple[list[str], bool]:
    """Start the feeder and kill it where ``kill`` says; return its complete lines and
    whether it was killed (False: it finished the session).

    The child waits at the line we kill it after (``FEEDER_HOLD``): at a rotation's step
    (before the step's work), or after the ``ok`` of a random event among the next 8. We
    kill it there, or let it go and kill it within the step's pause or work, or in the next
    event or two; it waits again at the next step (the end of the rotation) or two events
    on, so a late kill lands there. Where a kill lands thus does not depend on how soon this
    process reads the child's lines, which on a loaded machine is many events late."""
    lines: list[str] = []
    holds: tuple[str, ...] = ()
    if kill.mode == "rotation":
        after = STEPS.index(kill.step) + 1
        holds = (f"rot {kill.step}", f"rot {STEPS[after]}" if after < len(STEPS) else "rotated")
    elif kill.mode == "event":
        target = journaled + rng.randint(1, 8)
        holds = (f"ok {target}", f"ok {target + 2}")
    child = start(path, seed, ref.rounds, env, holds)
    assert child.stdout is not None
    if not holds:
        time.sleep(rng.uniform(0.0, 0.35))  # start-up, recovery, a rotation at start-up
    else:
        late = rng.uniform(0, PAUSE_MS * 1.3 / 1000 if kill.mode == "rotation" else 0.003)
        hold = holds[0]
        for line in child.stdout:
            lines.append(line)
            if holds_at(line.rstrip("\n"), hold):  # it waits there
                if kill.go:
                    assert child.stdin is not None
                    child.stdin.write("go\n")
                    child.stdin.flush()
                    time.sleep(late)
                break
    rest, errors = killed(child)
    lines.extend(rest.splitlines(keepends=True))
    complete = [line.rstrip("\n") for line in lines if line.endswith("\n")]
    if child.returncode == 0:
        assert complete[-1] == "done"
        return complete, False
    assert child.returncode == -signal.SIGKILL, errors
    return complete, True


def check(path: Path, ref: Session, lines: list[str], before: int) -> int:
    """After a kill: recovery, the files, the outbox. Returns the events journaled."""
    reported = max([int(x.split()[1]) for x in lines if x.startswith("ok ")], default=0)
    recovered = [int(x.split()[1]) for x in lines if x.startswith("recovered ")]
    floor = max([before, reported, *recovered])
    with JournaledTable(path, ref.rules, SETTINGS) as table:
        journaled = table.recovered
        assert floor <= journaled <= floor + 1, (floor, journaled)
        assert table.state == ref.table_after(journaled).state
        written, acked, pending = table.journal.outbox_rows()
    files = read_files(path)
    assert files.rows == ref.rows[:journaled], "the files do not hold the session's events once"
    assert written == ref.written[journaled], "the outbox lost or doubled a message"
    assert [row.seq for row in pending] == list(range(acked + 1, written + 1))
    assert all(ref.keys[seq - 1] == key for seq, key in files.messages.items())
    assert set(files.messages) >= set(range(acked + 1, written + 1))
    return journaled


def deliver(lines: list[str], delivered: set[str]) -> None:
    for line in lines:
        kind, _, key = line.partition(" ")
        if kind == "pub":
            assert key not in delivered, f"{key} published twice"
        if kind in ("pub", "repub"):
            delivered.add(key)


def test_killed_inside_rotations_and_checkpoints_the_files_and_the_link_stay_exact(tmp_path):
    seed = 90
    ref = Session(GAME, seed, ROUNDS)
    rng = random.Random(seed)
    path = tmp_path / "journal.sqlite"
    env = {
        "FEEDER_CHECKPOINT_EVERY": "2",
        "FEEDER_ROTATE_EVERY_ROUNDS": "1",
        "FEEDER_ROTATION_PAUSE_MS": str(PAUSE_MS),
    }
    jackpot = JackpotController()
    delivered: set[str] = set()
    tally = Tally()
    journaled = 0
    strays = 0
    began = time.monotonic()
    for kill in kill_plan(rng, KILLS):
        lines, killed = run_once(path, seed, env, rng, ref, journaled, kill)
        if not killed:
            break
        tally.landed(lines)
        journaled = check(path, ref, lines, journaled)
        strays += read_files(path).stray is not None
        deliver(lines, delivered)
        jackpot.receive(path)
        with Outbox(path) as outbox:
            acked = outbox.last_acknowledged()
        jackpot.acknowledge(path, rng.randint(acked, len(jackpot.applied)))
    kills = sum(tally.where.values())
    child = start(path, seed, ROUNDS, env)  # the rest of the session, uncrashed
    out, errors = child.communicate(timeout=120)
    assert child.returncode == 0, errors
    deliver(out.splitlines(), delivered)
    journaled = check(path, ref, out.splitlines(), journaled)
    assert journaled == len(ref.rows)
    with JournaledTable(path, ref.rules, SETTINGS) as table:
        assert table.state == ref.final
    files = read_files(path)
    assert files.rows == ref.rows and files.stray is None
    assert len(files.chain) == ROUNDS  # a gaming day each round, the last one in the live file
    assert [date.fromisoformat(p.name[-20:-10]) for p in files.chain] == [
        date(2026, 1, 1) + timedelta(days=n) for n in range(ROUNDS)
    ]
    assert not list(tmp_path.glob("*.part*")), "a half-written file was left behind"
    assert delivered == set(ref.keys)
    jackpot.receive(path)
    jackpot.acknowledge(path, len(jackpot.applied))
    assert jackpot.applied == ref.keys, "the link did not deliver every message once in order"
    with Outbox(path) as outbox:
        assert outbox.depth() == 0 and outbox.last_written() == len(ref.keys)
    print(f"{kills} kills in {time.monotonic() - began:.1f} s: {dict(tally.where)}; "
          f"{strays} killed rotations left an archive to write again; "
          f"{jackpot.resends} resends dropped")  # fmt: skip
    assert kills >= KILLS * 5 // 6, f"only {kills} kills before the session ended"
    assert tally.inside_rotations() >= KILLS * 5 // 12, tally.where
    assert all(tally.where[f"rotation {s}"] >= 3 for s in STEPS), tally.where
    assert tally.where["event"] >= 10, tally.where
    assert strays >= 1, "no kill landed between a rotation's archive and its commit"
    assert jackpot.resends > 0, "every message was acknowledged before a restart"


@pytest.mark.parametrize("seed", [91])
def test_killed_while_retention_removes_archives_none_with_unacknowledged_messages(tmp_path, seed):
    """Two gaming days kept; the jackpot controller lags behind by four gaming days, then
    catches up. A kill at any step never removes an archive holding a message not yet
    acknowledged, nor one within the kept days, and the live file's origin always names a
    file that is there."""
    keep = 2
    ref = Session(GAME, seed, 14)
    rng = random.Random(seed)
    path = tmp_path / "journal.sqlite"
    env = {
        "FEEDER_ROTATE_EVERY_ROUNDS": "1",
        "FEEDER_ROTATION_PAUSE_MS": str(PAUSE_MS),
        "FEEDER_KEEP_DAYS": str(keep),
    }
    jackpot = JackpotController()
    seen: dict[str, tuple[date, int]] = {}  # archive name -> gaming day, messages written
    journaled = removed = kept_unacked = kills = 0
    acked_day = date(2026, 1, 1)  # the live file's day when the jackpot controller caught up
    tally = Tally()
    for kill in kill_plan(rng, 24, weights=(1, 1, 1, 1, 2)):
        with Outbox(path) if path.exists() else _nothing() as outbox:
            acked = outbox.last_acknowledged() if outbox else 0
        lines, killed = run_once(path, seed, env, rng, ref, journaled, kill)
        if not killed:
            break
        kills += 1
        tally.landed(lines)
        journaled = check_retained(path, ref, lines, journaled)
        with Journal(path) as live:  # no day yet: killed before the feeder gave it one
            live_day = date.fromisoformat(file_day(live) or "2026-01-01")
            origin = live.origin()
        now = {a.path.name: a for a in archives(path)}
        assert origin is None or origin.previous in now
        for name, (day, written) in seen.items():
            if name not in now:  # removed in the run just killed
                assert written <= acked, f"{name} was removed holding message {written}"
                assert day < live_day - timedelta(days=keep), f"{name} was removed too early"
                removed += 1
        for name, archive in now.items():
            with Journal(archive.path) as old:
                written = old.outbox_rows()[0]
            seen[name] = (archive.gaming_day, written)
            retained = lines[-1:] != ["rot retain"]  # else retention has not run yet
            old = archive.gaming_day < live_day - timedelta(days=keep)
            kept_unacked += retained and old and written > acked
        seen = {name: seen[name] for name in now}
        jackpot.receive(path)
        if live_day - acked_day > timedelta(days=keep + 1):  # it catches up, else it lags
            jackpot.acknowledge(path, len(jackpot.applied))
            acked_day = live_day
    print(f"{kills} kills: {dict(tally.where)}; {removed} archives removed, {kept_unacked} "
          "times an old archive was kept for an unacknowledged message")  # fmt: skip
    assert kills >= 8 and removed >= 1 and kept_unacked >= 1, (kills, removed, kept_unacked)
    assert tally.where["rotation retain"] >= 2, tally.where


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def check_retained(path: Path, ref: Session, lines: list[str], before: int) -> int:
    """:func:`check` for a journal whose oldest archives retention removed: the files hold
    the session's events from the oldest kept archive on."""
    reported = max([int(x.split()[1]) for x in lines if x.startswith("ok ")], default=0)
    floor = max(before, reported)
    with JournaledTable(path, ref.rules, SETTINGS) as table:
        journaled = table.recovered
        assert floor <= journaled <= floor + 1, (floor, journaled)
        assert table.state == ref.table_after(journaled).state
        assert table.journal.outbox_rows()[0] == ref.written[journaled]
    kept = [a for a in archives(path)]
    rows: list[tuple[int, dict, bool]] = []
    for archive in kept:
        with Journal(archive.path) as old:
            held = rows_of(old)
        if rows and held and held[0][0] <= rows[-1][0]:  # a killed rotation's copy
            assert held == [r for r in rows if r[0] >= held[0][0]][: len(held)]
            continue
        assert not rows or held[0][0] == rows[-1][0] + 1, "a gap between the kept archives"
        rows.extend(held)
    with Journal(path) as live:
        live_rows = rows_of(live)
    rows = [r for r in rows if not live_rows or r[0] < live_rows[0][0]] + live_rows
    if rows:
        start = rows[0][0]
        assert [r[0] for r in rows] == list(range(start, journaled + 1))
        assert [(e, a) for _, e, a in rows] == ref.rows[start - 1 : journaled]
    return journaled
