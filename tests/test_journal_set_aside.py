"""The technician's way out (issue 17, item 2): new software that settles a round differently
refuses the old journal, naming the round and what differs; ``set_aside`` then keeps the whole
journal as a read-only archive and starts a new live file that the new software opens, with the
same link and every message the jackpot controller has not acknowledged, the sequence carrying
on with no gap. It refuses while a table controller holds the journal, and a kill -9 at any of
its steps leaves the old live file whole or the new one, never neither."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import Journal, JournaledTable
from controller.journal.outbox import Outbox
from controller.journal.rotation import archived_info, archives, set_aside
from controller.table.effects import Record
from controller.table.state import Phase

ROOT = Path(__file__).resolve().parent.parent
GAME = "pa-standard"
SET_ASIDE_AT = 1_767_268_800_000  # 2026-01-01 12:00 UTC
STEPS = ("backup", "new file", "record", "swap")


def blackjack_settled(step) -> int | None:
    """The round a step settled with a blackjack paid 3 to 2, if it did."""
    for effect in step.effects:
        if isinstance(effect, Record) and effect.record == "round":
            for settled in effect.data["effects"]:
                if settled.get("reason") == "blackjack pays 3 to 2":
                    return int(effect.data["round"])
    return None


def written_before_the_update(path: Path) -> tuple[int, list]:
    """A journal as the daemon writes it (a checkpoint at each round's end), stopped as the
    dealer pays a round with a blackjack paid 3 to 2 (settled, end round not yet pressed);
    the jackpot controller acknowledged all but the last 3 messages. Returns that round and
    the events."""
    rules = load_game(GAME)
    events = session_events(GAME, 4, 30)
    with JournaledTable(path, rules, SETTINGS, checkpoint_every=1000) as table:
        for event in events:
            number = blackjack_settled(table.handle(event))
            if number is not None and number > 2:
                break
        assert table.state.phase is Phase.SETTLED
    with Outbox(path) as outbox:
        outbox.acknowledge(outbox.last_written() - 3)
    return number, events


class Snapshot:
    """What a journal file holds that a set-aside must keep."""

    def __init__(self, path: Path):
        with Journal(path) as journal:
            self.rows = [(e.seq, e.event, e.accepted) for e in journal.entries()]
            self.rounds = journal.last_rounds(1000)
            self.origin = journal.origin()
            self.last = journal.events_written
            (self.used,) = journal.db.execute("SELECT max(round) FROM events").fetchone()
            self.link = journal.db.execute("SELECT boot, written, acked FROM link").fetchone()
            self.pending = journal.db.execute(
                "SELECT seq, event, kind, key, payload FROM outbox ORDER BY seq"
            ).fetchall()


def same_link(now: Snapshot, before: Snapshot) -> bool:
    """The same messages written and acknowledged; the boot counter never goes back (each
    writer that opens the journal, a set-aside too, counts one)."""
    return now.link[1:] == before.link[1:] and now.link[0] >= before.link[0]


@pytest.fixture
def six_to_five(edited):
    """The update: the table's software now settles a blackjack 6 to 5."""
    return edited(GAME, ('pays = "3 to 2"', 'pays = "6 to 5"'))


def test_an_update_that_settles_the_round_differently_is_refused_then_set_aside(
    tmp_path, six_to_five
):
    path = tmp_path / "journal.sqlite"
    number, _ = written_before_the_update(path)
    before = Snapshot(path)
    assert len(before.pending) == 3 and before.link[1] - before.link[2] == 3
    with pytest.raises(JournalError) as caught:
        JournaledTable(path, six_to_five, SETTINGS, checkpoint_every=1000)
    text = str(caught.value)
    assert f"settles round {number} differently" in text
    assert "settled" in text and "main" in text and "blackjack pays 3 to 2" in text
    assert "start a new journal file" in text
    assert Snapshot(path).rows == before.rows  # refusing changed nothing

    done = set_aside(path, six_to_five, SETTINGS, utc_ms=SET_ASIDE_AT, by="ana (command line)")

    # the archive keeps everything, read-only, and recall reads its rounds
    assert done.archive == path.with_name(f"journal.sqlite.2026-01-01.{1:09d}")
    assert archives(path)[0].path == done.archive
    assert (done.first_event, done.last_event) == (1, before.last)
    assert done.archive.stat().st_mode & 0o777 == 0o444
    assert done.archive.read_bytes()[18:20] == b"\x01\x01"  # not WAL: self-contained
    kept = Snapshot(done.archive)
    assert kept.rows == before.rows and kept.rounds == before.rounds
    assert kept.pending == before.pending and same_link(kept, before)
    with Journal(done.archive) as archive:
        info = archived_info(archive)
        assert info["reason"] == "set aside" and info["last_event"] == before.last
        assert archive.round_record(number)["round"] == number
    # the new live file names it by its SHA-256 and holds the link and every pending message
    digest = hashlib.sha256(done.archive.read_bytes()).hexdigest()
    new = Snapshot(path)
    # its one event records the change, and its message for the center waits in the outbox
    # behind the three the controller has not acknowledged (issue 28 item 4)
    ((seq, change, accepted),) = new.rows
    assert (seq, accepted, new.last) == (before.last + 1, True, before.last + 1)
    assert (change["type"], change["action"], change["by"]) == (
        "journal_change",
        "set_aside",
        "ana (command line)",
    )
    assert done.archive.name in change["detail"] and digest[:16] in change["detail"]
    assert new.pending[:3] == before.pending and len(new.pending) == 4
    seq, event, kind, key, payload = new.pending[3]
    assert (seq, event, kind) == (before.link[1] + 1, before.last + 1, "event")
    assert key == f"event/{before.link[1] + 1}"  # past every key the old file could have used
    assert json.loads(payload) == {
        "code": "journal_set_aside",
        "utc_ms": SET_ASIDE_AT,
        "round": number + 1,
        "in_round": False,
        "by": "ana (command line)",
        "detail": change["detail"],
    }
    assert (new.origin.reason, new.origin.previous, new.origin.previous_sha256) == (
        "set aside",
        done.archive.name,
        digest,
    )
    assert new.origin.written == before.link[1]
    assert new.link[1:] == (before.link[1] + 1, before.link[2])
    # the new software opens it; the next round follows every one used
    later = before.rows[-1][1]["t"] + 600_000
    fresh = session_events(GAME, 8, 3, clock=later)
    with JournaledTable(path, six_to_five, SETTINGS, checkpoint_every=40) as table:
        assert table.state.round_number == number + 1 == before.used + 1
        assert table.journal.events_written == before.last + 1
        boot, written, acked = table.journal.db.execute(
            "SELECT boot, written, acked FROM link"
        ).fetchone()
        assert (written, acked) == new.link[1:] and boot == new.link[0] + 1 > before.link[0]
        for event in fresh:
            table.handle(event)
        assert table.state.round_number == number + 4
    # messages published afterwards continue the sequence: no gap, no reuse
    after = Snapshot(path)
    assert after.rows[0][0] == before.last + 1
    assert [row[0] for row in after.pending] == list(range(before.link[2] + 1, after.link[1] + 1))
    assert after.pending[:3] == before.pending
    assert after.link[1] > before.link[1]
    new_keys = [row[3] for row in after.pending[4:]]
    assert all(int(key.split("/")[0].split("-")[1]) > number for key in new_keys), new_keys
    with JournaledTable(path, six_to_five, SETTINGS) as again:  # and it recovers
        assert again.state.round_number == number + 4


def test_a_round_in_progress_is_left_in_the_archive_and_its_number_not_reused(tmp_path, pa):
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, pa, SETTINGS, checkpoint_every=40) as table:
        for event in session_events(GAME, 6, 10):
            table.handle(event)
            if table.state.round_number == 3 and table.state.phase is Phase.PLAYERS:
                break
    done = set_aside(path, pa, SETTINGS, utc_ms=SET_ASIDE_AT)
    with Journal(done.archive) as archive:
        (used,) = archive.db.execute("SELECT max(round) FROM events").fetchone()
        assert used == 3 and archive.round_record(3) is None  # in progress: no record
    with JournaledTable(path, pa, SETTINGS) as table:
        assert table.state.round_number == 4 and table.state.phase is Phase.BETTING
    again = set_aside(path, pa, SETTINGS, utc_ms=SET_ASIDE_AT)  # a file of one event: the change
    assert again.first_event == done.last_event + 1 and again.last_event == done.last_event + 1
    with JournaledTable(path, pa, SETTINGS) as table:
        assert table.state.round_number == 4


def test_set_aside_refuses_while_a_table_controller_holds_the_journal(tmp_path, pa):
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in session_events(GAME, 3, 2):
            table.handle(event)
        before = Snapshot(path)
        # the running controller's rotation is half-way through its archive
        part = path.with_name("journal.sqlite.2026-01-01.000000001.part")
        part.write_bytes(b"being written")
        with pytest.raises(JournalError, match="in use by another table controller"):
            set_aside(path, pa, SETTINGS, utc_ms=SET_ASIDE_AT)
        assert part.exists(), "set-aside removed a running rotation's file"
        assert archives(path) == []
        assert Snapshot(path).rows == before.rows
        table.handle(session_events(GAME, 3, 3)[len(before.rows) + 5])  # it carries on


SCRIPT = """
import sys, time
from _journal_feeder import SETTINGS
from controller.games import load_game
from controller.journal.rotation import set_aside
path, stop = sys.argv[1], sys.argv[2]
def hook(step):
    print("step " + step, flush=True)
    if step == stop:
        time.sleep(60)  # killed here
set_aside(path, load_game("pa-standard"), SETTINGS, utc_ms=int(sys.argv[3]), hook=hook)
print("done", flush=True)
"""


def kill_set_aside(path: Path, stop: str, delay: float | None) -> list[str]:
    """Run set_aside in a child and SIGKILL it at step ``stop`` (it waits there), or
    ``delay`` seconds after it announced that step (inside the step's work); returns its
    lines (``done`` if it finished first)."""
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(path), stop if delay is None else "", str(SET_ASIDE_AT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests'}"),
    )
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line.strip())
        if line.strip() == f"step {stop}":
            time.sleep(delay or 0.0)
            break
    child.send_signal(signal.SIGKILL)
    rest, errors = child.communicate(timeout=60)
    lines.extend(rest.split())
    assert child.returncode in (0, -signal.SIGKILL), errors
    return lines


def old_or_new(path: Path, before: Snapshot) -> str:
    """Which live file a killed set-aside left: the old one whole or the new one."""
    assert path.is_file(), "the set-aside left no live journal"
    now = Snapshot(path)
    if now.origin is not None and now.origin.reason == "set aside":
        ((_, change, _),) = now.rows  # the set-aside's own record, and its one message
        assert change["type"] == "journal_change" and now.last == before.last + 1
        assert now.link[1:] == (before.link[1] + 1, before.link[2])
        assert now.pending[:-1] == before.pending and now.pending[-1][2] == "event"
        archive = path.with_name(now.origin.previous)
        assert hashlib.sha256(archive.read_bytes()).hexdigest() == now.origin.previous_sha256
        assert Snapshot(archive).rows == before.rows
        return "new"
    assert now.rows == before.rows and now.origin == before.origin
    assert same_link(now, before) and now.pending == before.pending
    return "old"


def test_kill_9_at_each_step_of_set_aside_leaves_the_old_file_or_the_new(tmp_path, pa):
    template = tmp_path / "template"
    template.mkdir()
    number, _ = written_before_the_update(template / "journal.sqlite")
    before = Snapshot(template / "journal.sqlite")
    rng = random.Random(17)
    cases = [(step, None) for step in STEPS]  # waiting at the step
    cases += [(rng.choice(STEPS), rng.uniform(0, 0.03)) for _ in range(9)]  # inside a step
    seen: dict[str, int] = {}
    for n, (stop, delay) in enumerate(cases):
        where = tmp_path / f"kill{n}"
        shutil.copytree(template, where)
        path = where / "journal.sqlite"
        lines = kill_set_aside(path, stop, delay)
        assert f"step {stop}" in lines, lines
        left = old_or_new(path, before)
        seen[left] = seen.get(left, 0) + 1
        if delay is None:
            assert left == "old"  # before the swap nothing of the old file changed
        # a second set-aside works after the killed one
        done = set_aside(path, pa, SETTINGS, utc_ms=SET_ASIDE_AT)
        assert not list(where.glob("*.part*")), "a half-written file was left"
        assert Snapshot(done.archive).rows[: len(before.rows) if left == "old" else 0] == (
            before.rows if left == "old" else []
        )
        every = [row for a in archives(path) for row in Snapshot(a.path).rows]
        changes = [row for row in every if row[1]["type"] == "journal_change"]
        assert len(changes) == (left == "new")  # each file set aside: one record, kept
        assert sorted(set(map(str, every))) == sorted(map(str, before.rows + changes))
        after = Snapshot(path)
        events = 1 + (left == "new")  # the set-aside records' messages, never lost
        assert after.link[1:] == (before.link[1] + events, before.link[2])
        assert after.pending[:3] == before.pending
        assert [row[2] for row in after.pending[3:]] == ["event"] * events
        with JournaledTable(path, pa, SETTINGS) as table:
            assert table.state.round_number == number + 1
    assert seen.get("old", 0) >= len(STEPS), seen
    print(f"set-aside killed {len(cases)} times: {seen}")
