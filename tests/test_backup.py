"""Backups of the table's journal and the jackpot ledger (issue 17, item 6), on real SQLite.

A copy taken while a table controller (a child process) journals a session opens and
replays to the state of a prefix of the session; a ledger copy taken while a ledger applies
contributions has the meters of a prefix; retention keeps the newest N; a restore as
docs/journal.md says recovers the backup's state, never a stale WAL; damaged copies are
refused; the commands print where the copy went.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, consumed
from test_jackpot_ledger import CONFIG, T1, contrib, fixed
from test_recovery import Reference, start_feeder

from controller import backup as bk
from controller.cli import main as table_cli
from controller.errors import JournalError
from controller.journal import Journal, JournaledTable
from controller.journal.outbox import Outbox, OutboxError
from jackpot import backup as jackpot_backup
from jackpot.cli import main as jackpot_cli
from jackpot.ledger import Ledger

ROOT = Path(__file__).resolve().parent.parent
GAME, SEED = "pa-standard", 11


@pytest.fixture(scope="module")
def ref() -> Reference:
    return Reference(GAME, SEED)


def opened_copy(path: Path, tmp: Path, ref: Reference) -> JournaledTable:
    """The copy recovered as a table controller would (on a copy of it: opening counts a
    boot), checked to be the session's journal up to the events it holds."""
    work = tmp / f"open-{path.name}"
    shutil.copyfile(path, work)
    table = JournaledTable(work, ref.rules, SETTINGS)
    n = table.recovered
    assert [(e.event, e.accepted) for e in table.journal.entries()] == ref.rows[:n]
    assert table.state == ref.table_after(n).state
    return table


def test_a_journal_backup_taken_while_the_table_writes_replays_to_a_prefix(tmp_path, ref):
    journal, folder = tmp_path / "journal.sqlite", tmp_path / "backups"
    child = start_feeder(journal, GAME, SEED)
    taken = []
    try:
        while child.poll() is None:
            if journal.exists():
                try:
                    taken.append(bk.backup_journal(journal, folder, keep=1000))
                except bk.BackupError as exc:
                    assert "no file" in str(exc) or "not a table journal" in str(exc)
            time.sleep(0.05)
    finally:
        _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    total = len(ref.rows)
    counts = []
    for done in taken:
        with opened_copy(done.path, tmp_path, ref) as table:
            counts.append(table.recovered)
            assert f"{table.recovered} events" in done.summary
    assert counts == sorted(counts)
    assert len([n for n in counts if 0 < n < total]) >= 2, counts  # taken mid-session
    with JournaledTable(journal, ref.rules, SETTINGS) as live:  # the writer was undisturbed
        assert live.recovered == total


def apply_all(path: Path, messages, done: threading.Event) -> None:
    with Ledger(path, CONFIG, randbelow=fixed(0)) as led:
        for message in messages:
            led.apply(message)
    done.set()


def test_a_ledger_backup_taken_while_messages_are_applied_has_the_meters_of_a_prefix(tmp_path):
    messages = [contrib(T1, seq, seq, spot=1 + seq % 7) for seq in range(1, 301)]
    expected = []  # the meters after each prefix
    with Ledger(tmp_path / "reference.sqlite", CONFIG, randbelow=fixed(0)) as led:
        expected.append(led.meters())
        for message in messages:
            led.apply(message)
            expected.append(led.meters())
    path, folder = tmp_path / "ledger.sqlite", tmp_path / "backups"
    Ledger(path, CONFIG, randbelow=fixed(0)).close()
    done = threading.Event()
    writer = threading.Thread(target=apply_all, args=(path, messages, done))
    writer.start()
    taken = []
    while not done.is_set():
        taken.append(jackpot_backup.backup_ledger(path, folder, keep=1000))
    writer.join()
    prefixes = []
    for copy in taken:
        assert "schema 5" in copy.summary
        with Ledger(copy.path, CONFIG, randbelow=fixed(0)) as led:
            k = led.ack(T1)
            assert led.meters() == expected[k]
            prefixes.append(k)
    assert len([k for k in prefixes if 0 < k < len(messages)]) >= 2, prefixes


def a_journal(tmp_path: Path, ref: Reference, events: int) -> Path:
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, ref.rules, SETTINGS) as table:
        for event in ref.events:
            if table.journal.events_written >= events:
                break
            table.handle(event)
    return path


def at(second: int) -> dt.datetime:
    return dt.datetime(2026, 11, 24, 3, 30, second, tzinfo=dt.UTC)


def test_the_copies_are_dated_and_only_the_newest_are_kept(tmp_path, ref):
    journal, folder = a_journal(tmp_path, ref, 40), tmp_path / "backups"
    folder.mkdir()
    stale = folder / ".journal-2026-11-23T033000Z-99.tmp"  # left by a backup that died
    stale.write_bytes(b"half a copy")
    os.utime(stale, (time.time() - 7200,) * 2)
    made = [bk.backup_journal(journal, folder, keep=3, now=at(s)) for s in (1, 2, 2, 3, 4)]
    assert [m.path.name for m in made] == [
        "journal-2026-11-24T033001Z.sqlite",
        "journal-2026-11-24T033002Z.sqlite",
        "journal-2026-11-24T033002Z-2.sqlite",
        "journal-2026-11-24T033003Z.sqlite",
        "journal-2026-11-24T033004Z.sqlite",
    ]
    assert made[3].removed == (made[0].path,)
    assert made[4].removed == (made[1].path,)
    assert sorted(p.name for p in folder.iterdir()) == [m.path.name for m in made[2:]]
    assert oct(made[4].path.stat().st_mode & 0o777) == "0o600"  # holds the hole card
    with pytest.raises(bk.BackupError, match="keep at least one"):
        bk.backup_journal(journal, folder, keep=0)


def test_restore_puts_the_backup_back_and_never_the_stale_wal(tmp_path, ref):
    """The documented procedure: stop the table (here: the feeder killed -9, leaving its
    WAL), restore, start: the table recovers the backup's state; the replaced journal and
    its WAL are kept and still open."""
    journal, folder = a_journal(tmp_path, ref, 60), tmp_path / "backups"
    copy = bk.backup_journal(journal, folder)
    child = start_feeder(journal, GAME, SEED)
    assert child.stdout is not None
    for line in child.stdout:
        if line.startswith("ok ") and int(line.split()[1]) >= 200:
            break
    with pytest.raises(bk.BackupError, match="stop it first"):
        bk.restore_journal(copy.path, journal)  # the table controller still runs
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert Path(f"{journal}-wal").stat().st_size > 0  # the killed writer's WAL
    done = bk.restore_journal(copy.path, journal, now=at(9))
    assert done.kept == tmp_path / "journal.sqlite.replaced-2026-11-24T033009Z"
    assert not Path(f"{journal}-wal").exists() and not Path(f"{journal}-shm").exists()
    with JournaledTable(journal, ref.rules, SETTINGS) as table:
        assert table.recovered == 60
        assert table.state == ref.table_after(60).state
    with Journal(done.kept) as old:  # its WAL went with it
        assert old.events_written >= 200


def test_the_manual_restore_steps_of_the_docs_recover_too(tmp_path, ref):
    journal, folder = a_journal(tmp_path, ref, 50), tmp_path / "backups"
    copy = bk.backup_journal(journal, folder)
    with JournaledTable(journal, ref.rules, SETTINGS) as table:  # more rounds, then lost
        for event in ref.events[consumed(ref.events, GAME, 50) :][:150]:
            table.handle(event)
    journal.write_bytes(b"\0" * 4096)  # a damaged journal
    with pytest.raises(JournalError):
        JournaledTable(journal, ref.rules, SETTINGS).close()
    # cp BACKUP data_dir/journal.sqlite; rm -f journal.sqlite-wal journal.sqlite-shm
    shutil.copyfile(copy.path, journal)
    for suffix in ("-wal", "-shm"):
        Path(f"{journal}{suffix}").unlink(missing_ok=True)
    with JournaledTable(journal, ref.rules, SETTINGS) as table:
        assert table.recovered == 50
        assert table.state == ref.table_after(50).state


def test_after_a_restore_an_ack_beyond_the_backup_is_refused_by_the_table(tmp_path, ref):
    """What docs/journal.md says of the jackpot link: the controller acknowledged messages
    the restored journal no longer has; the table refuses that ack (and keeps its rows)."""
    journal = a_journal(tmp_path, ref, 100)
    copy = bk.backup_journal(journal, tmp_path / "backups")
    with JournaledTable(journal, ref.rules, SETTINGS) as table:
        for event in ref.events[consumed(ref.events, GAME, 100) :]:
            table.handle(event)
    with Outbox(journal) as outbox:
        controller_ack = outbox.last_written()
        outbox.acknowledge(controller_ack)
    bk.restore_journal(copy.path, journal)
    with Outbox(journal) as outbox:
        written = outbox.last_written()
        assert written < controller_ack
        with pytest.raises(OutboxError, match=f"written only up to {written}"):
            outbox.acknowledge(controller_ack)
        assert outbox.depth() == written


# -- damaged copies ---------------------------------------------------------------------------


def test_a_truncated_or_corrupt_copy_is_refused(tmp_path, ref):
    journal = a_journal(tmp_path, ref, 300)
    good = bk.backup_journal(journal, tmp_path / "backups").path
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(bk.BackupError, match=re.escape(str(truncated))):
        bk.verify_journal(truncated)
    corrupt = tmp_path / "corrupt.sqlite"
    data = bytearray(good.read_bytes())
    page = 4096 * 3
    data[page + 8 : page + 200] = os.urandom(192)  # a b-tree page's header and cells
    corrupt.write_bytes(bytes(data))
    with pytest.raises(bk.BackupError, match=r"integrity_check|not a"):
        bk.verify_journal(corrupt)
    before = journal.read_bytes()
    for bad in (truncated, corrupt):  # restore refuses it and changes nothing
        with pytest.raises(bk.BackupError, match="nothing changed"):
            bk.restore_journal(bad, journal)
        assert journal.read_bytes() == before
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger, CONFIG).close()
    with pytest.raises(bk.BackupError, match="not a table journal"):
        bk.verify_journal(ledger)
    with pytest.raises(bk.BackupError, match="not a jackpot ledger"):
        jackpot_backup.verify_ledger(good)


def test_a_damaged_source_leaves_no_copy(tmp_path, ref):
    journal = a_journal(tmp_path, ref, 300)
    data = bytearray(journal.read_bytes())
    data[4096 * 3 + 8 : 4096 * 3 + 200] = os.urandom(192)
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(bytes(data))
    folder = tmp_path / "backups"
    with pytest.raises(bk.BackupError, match=re.escape(f"copy of {damaged} failed its check")):
        bk.backup_journal(damaged, folder)
    assert list(folder.iterdir()) == []
    with pytest.raises(bk.BackupError, match="no file to back up"):
        bk.backup_journal(tmp_path / "missing.sqlite", folder)


# -- the commands -----------------------------------------------------------------------------


def table_config(tmp_path: Path) -> Path:
    text = (ROOT / "config" / "table.example.toml").read_text()
    text = text.replace('"/var/lib/table-controller"', f'"{tmp_path / "data"}"')
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path


def test_table_controller_backup_and_restore_print_where(tmp_path, ref, capsys):
    config = table_config(tmp_path)
    (tmp_path / "data").mkdir()
    a_journal(tmp_path / "data", ref, 30)
    assert table_cli(["backup", "--config", str(config), "--keep", "2"]) == 0
    out = capsys.readouterr().out
    made = sorted((tmp_path / "data" / "backups").glob("journal-*.sqlite"))
    assert len(made) == 1 and f"to {made[0]} (" in out and "30 events" in out
    with JournaledTable(tmp_path / "data" / "journal.sqlite", ref.rules, SETTINGS):
        assert table_cli(["restore", "--config", str(config), str(made[0])]) == 2
        assert "stop it first" in capsys.readouterr().err
    assert table_cli(["restore", "--config", str(config), str(made[0])]) == 0
    assert "restored" in capsys.readouterr().out
    # the restored journal's next event says who restored which backup, and its message for
    # the jackpot controller waits in the outbox (issue 28 item 4)
    with Journal(tmp_path / "data" / "journal.sqlite") as journal:
        *_, last = journal.entries()
        assert (last.seq, last.event["type"], last.event["action"]) == (31, "journal_change",
                                                                        "restore")  # fmt: skip
        assert last.event["by"].endswith("(command line)") and made[0].name in last.event["detail"]
        row = journal.outbox_rows()[2][-1]
        assert (row.event, row.kind, row.payload["code"]) == (31, "event", "journal_restored")
        assert row.payload["utc_ms"] == last.utc_ms > 0
    assert not list((tmp_path / "data").glob(".*restore*")), "a temporary copy was left"
    # a backup this table cannot carry on (other table settings) is refused, nothing changes
    other = config.read_text().replace('main_minimum = "$10"', 'main_minimum = "$25"')
    assert other != config.read_text()
    config.with_name("other.toml").write_text(other)
    before = (tmp_path / "data" / "journal.sqlite").read_bytes()
    other_config = str(config.with_name("other.toml"))
    assert table_cli(["restore", "--config", other_config, str(made[0])]) == 2
    err = capsys.readouterr().err
    assert "was not restored" in err and "main_minimum" in err and "nothing was changed" in err
    assert (tmp_path / "data" / "journal.sqlite").read_bytes() == before
    assert table_cli(["backup", "--config", str(config), "--to", str(tmp_path / "x")]) == 0
    assert "journal-" in capsys.readouterr().out


def test_jackpot_controller_backup_prints_where(tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite"
    with Ledger(ledger, CONFIG) as led:
        led.apply(contrib(T1, 1, 1))
    folder = tmp_path / "backups"
    assert jackpot_cli(["backup", "--ledger", str(ledger), "--to", str(folder)]) == 0
    out = capsys.readouterr().out
    (made,) = folder.glob("ledger-*.sqlite")
    assert f"to {made} (" in out and "1 messages applied" in out
    assert sqlite3.connect(made).execute("SELECT acked FROM tables WHERE table_id=?",
                                         (T1,)).fetchone() == (1,)  # fmt: skip
    with pytest.raises(SystemExit) as exit_:
        jackpot_cli(["backup", "--ledger", str(tmp_path / "none.sqlite"), "--to", str(folder)])
    assert exit_.value.code == 2
    assert "no file to back up" in capsys.readouterr().err


def test_the_gaming_day_files_are_copied_once_each_and_checked(tmp_path, ref):
    from controller.journal import rotation

    live = tmp_path / "journal.sqlite"
    folder = tmp_path / "backups"
    days = ["2026-11-22", "2026-11-23"]
    with JournaledTable(live, ref.rules, SETTINGS) as table:
        for number, event in enumerate(ref.events[:400]):
            table.handle(event)
            if days and number >= 150 * (3 - len(days)) and not table.round_in_progress:
                rotation.rotate(table, days.pop(0))
    kept = rotation.archives(live)
    assert len(kept) == 2 and not days
    first = bk.backup_journal(live, folder)
    assert [p.name for p in first.archives] == [a.path.name for a in kept]
    for archive in kept:
        copy = folder / "archives" / archive.path.name
        assert rotation.sha256(copy) == rotation.sha256(archive.path)
        assert oct(copy.stat().st_mode & 0o777) == "0o444"
    assert "copied the gaming-day file" in first.report()
    again = bk.backup_journal(live, folder)
    assert again.archives == ()  # already there: never copied twice
