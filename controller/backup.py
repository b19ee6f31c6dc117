"""Consistent copies of a live SQLite file: the table's journal; the jackpot controller's
ledger goes through :func:`copy_database` too (``jackpot/backup.py``).

``backup_journal`` and ``jackpot.backup.backup_ledger`` copy the file with SQLite's online
backup API (``Connection.backup`` in one step: one read transaction, so the copy is the
database as of one commit while the writer goes on committing in WAL mode), into a temporary
file in the target folder; check the copy (``PRAGMA integrity_check``, then what it holds: a
journal's game and events, a ledger's schema version); fsync it; rename it to a dated name
(``journal-2026-11-24T033012Z.sqlite``) and remove all but the newest ``keep`` copies.
``restore_journal`` puts a backup back under a stopped table controller. No game logic here.
See docs/journal.md ("Backups") and docs/jackpot/controller.md ("Backups").
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from controller.errors import JournalError, TableControllerError

DEFAULT_KEEP = 14
STALE_TEMP_S = 3600  # a temporary copy older than this was left by a backup that died


class BackupError(TableControllerError, OSError):
    """A backup or restore failed; the message names the file and what to do."""


@dataclass(frozen=True)
class Backup:
    """One copy made: where it went, what it holds (``summary``), its size, how long it took,
    and the older copies removed to keep the newest ``keep``."""

    path: Path
    source: Path
    summary: str
    size: int
    seconds: float
    removed: tuple[Path, ...] = ()
    archives: tuple[Path, ...] = ()

    def report(self) -> str:
        """What the backup commands print: the copy, then each older copy removed."""
        lines = [
            f"backed up {self.source} to {self.path} ({self.size / 1e6:.1f} MB, "
            f"{self.seconds:.2f} s): {self.summary}"
        ]
        lines += [f"removed the older copy {path}" for path in self.removed]
        lines += [f"copied the gaming-day file {path}" for path in self.archives]
        return "\n".join(lines)


# -- checking a copy --------------------------------------------------------------------------


def check_integrity(path: Path) -> None:
    """Raise :class:`BackupError` unless ``path`` is a readable SQLite file that passes
    ``PRAGMA integrity_check``."""
    try:
        db = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=ro", uri=True)
        try:
            rows = db.execute("PRAGMA integrity_check").fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise BackupError(f"{path} is not a readable SQLite database ({exc})") from None
    if rows != [("ok",)]:
        problems = "; ".join(str(row[0]) for row in rows[:3])
        raise BackupError(f"{path} fails PRAGMA integrity_check: {problems}")


def verify_journal(path: str | os.PathLike[str]) -> str:
    """Check that ``path`` is a whole, readable table journal; return what it holds
    (game, events, rounds, outbox). Raises :class:`BackupError`."""
    from controller.journal import Journal

    path = Path(path)
    check_integrity(path)
    try:
        with Journal(path) as journal:
            game = journal.game
            events = journal.events_written
            rounds, _, last = journal.round_count()
            link = ""
            if journal.outbox_since() is not None:
                written, acked, _ = journal.outbox_rows()
                link = f", outbox written {written} acked {acked}"
    except JournalError as exc:
        raise BackupError(f"{path} is not a table journal: {exc}") from None
    return f"game {game}, {events} events, {rounds} rounds (last {last}){link}"


# -- taking a copy ----------------------------------------------------------------------------

_STAMP = "%Y-%m-%dT%H%M%SZ"


def _name_pattern(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(prefix)}-(\d{{4}}-\d\d-\d\dT\d{{6}}Z)(?:-(\d+))?\.sqlite$")


def backups(folder: str | os.PathLike[str], prefix: str) -> list[Path]:
    """The dated copies ``prefix-...sqlite`` in ``folder``, oldest first."""
    pattern, found = _name_pattern(prefix), []
    with contextlib.suppress(FileNotFoundError):
        for entry in Path(folder).iterdir():
            match = pattern.match(entry.name)
            if match and entry.is_file():
                found.append(((match[1], int(match[2] or 1)), entry))
    return [path for _, path in sorted(found)]


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_sqlite(path: Path) -> None:
    for name in (path.name, path.name + "-wal", path.name + "-shm", path.name + "-journal"):
        with contextlib.suppress(FileNotFoundError):
            (path.parent / name).unlink()


def _owned_like(path: Path, like: Path) -> None:
    """Run as root, give ``path`` the owner of ``like`` (the service user's directory), so
    the service can still write and prune what a technician's ``sudo`` made."""
    if os.geteuid() == 0:
        st = like.stat()
        os.chown(path, st.st_uid, st.st_gid)


def _prepare_folder(folder: Path) -> None:
    try:
        if not folder.is_dir():
            folder.mkdir(mode=0o750, parents=True)
            _owned_like(folder, folder.parent)
    except OSError as exc:
        raise BackupError(
            f"cannot create the backup folder {folder}: {exc.strerror}; create it, writable by "
            "the user who runs the backup (the service's user), or give another --to"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BackupError(
            f"the backup folder {folder} is not writable by this user; chown it to the "
            "service's user or give another --to"
        )


def copy_database(
    source: Path,
    folder: Path,
    prefix: str,
    keep: int,
    verify: Callable[[Path], str],
    now: dt.datetime | None,
) -> Backup:
    """A checked copy of the SQLite file ``source`` as ``folder/prefix-<UTC time>.sqlite``
    (``verify`` checks the copy and says what it holds), keeping the newest ``keep``."""
    if keep < 1:
        raise BackupError(f"--keep {keep}: keep at least one copy")
    if not source.is_file():
        raise BackupError(f"no file to back up at {source}: check the path (or the config)")
    folder = folder.absolute()
    _prepare_folder(folder)
    started = time.monotonic()
    stamp = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).strftime(_STAMP)
    temp = folder / f".{prefix}-{stamp}-{os.getpid()}.tmp"
    try:
        os.close(os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        _owned_like(temp, folder)
        uri = f"file:{quote(str(source.absolute()))}?mode=rw"
        src = sqlite3.connect(uri, uri=True, timeout=30)
        try:
            dst = sqlite3.connect(temp)
            try:
                src.backup(dst, pages=-1)  # one step: one read transaction, one snapshot
            finally:
                dst.close()
        finally:
            src.close()
    except (sqlite3.Error, OSError) as exc:
        _unlink_sqlite(temp)
        reason = getattr(exc, "strerror", None) or str(exc)
        raise BackupError(
            f"backing up {source} into {folder} failed ({reason}); nothing was kept. Check the "
            "free space in the folder (df -h) and that this user may read the file"
        ) from None
    try:
        summary = verify(temp)
    except BackupError as exc:
        _unlink_sqlite(temp)
        raise BackupError(
            f"the copy of {source} failed its check and was removed: {exc}. The file itself may "
            "be damaged: keep it, take no more backups over the good ones, call a technician"
        ) from None
    target = folder / f"{prefix}-{stamp}.sqlite"
    n = 1
    while target.exists():
        n += 1
        target = folder / f"{prefix}-{stamp}-{n}.sqlite"
    try:
        _fsync(temp)
        os.replace(temp, target)
        _fsync(folder, directory=True)
    except OSError as exc:
        _unlink_sqlite(temp)
        raise BackupError(
            f"cannot store the copy of {source} as {target}: {exc.strerror}; check the folder"
        ) from None
    removed = _prune(folder, prefix, keep)
    return Backup(target, source, summary, target.stat().st_size, time.monotonic() - started,
                  removed)  # fmt: skip


def _prune(folder: Path, prefix: str, keep: int) -> tuple[Path, ...]:
    """Remove all but the newest ``keep`` copies, and temporary copies a dead backup left."""
    old = backups(folder, prefix)[:-keep]
    for path in old:
        _unlink_sqlite(path)
    for temp in folder.glob(f".{prefix}-*.tmp"):
        with contextlib.suppress(OSError):
            if time.time() - temp.stat().st_mtime > STALE_TEMP_S:
                _unlink_sqlite(temp)
    return tuple(old)


def backup_journal(
    journal: str | os.PathLike[str],
    folder: str | os.PathLike[str],
    keep: int = DEFAULT_KEEP,
    now: dt.datetime | None = None,
) -> Backup:
    """A checked copy of the table's journal (also while the table controller writes it)
    as ``folder/journal-<UTC time>.sqlite``, keeping the newest ``keep`` copies, and of each
    retained gaming-day file not yet in ``folder/archives`` (:func:`copy_archives`)."""
    done = copy_database(Path(journal), Path(folder), "journal", keep, verify_journal, now)
    copied = copy_archives(journal, Path(folder) / "archives")
    return dataclasses.replace(done, archives=copied)


def copy_archives(
    journal: str | os.PathLike[str], folder: str | os.PathLike[str]
) -> tuple[Path, ...]:
    """Copy the journal's retained gaming-day files (read-only, never changed once written:
    :mod:`controller.journal.rotation`) that ``folder`` lacks, each checked by SHA-256 and
    renamed into place; the copies are kept however many there are (the table removes its
    own after ``[journal] keep_days``: these are the casino's). Returns the new copies."""
    from controller.journal.rotation import archives, sha256

    folder = Path(folder).absolute()
    found = archives(journal)
    if not found:
        return ()
    _prepare_folder(folder)
    copied = []
    for archive in found:
        target = folder / archive.path.name
        if target.exists():
            continue
        temp = folder / f".{archive.path.name}.{os.getpid()}.tmp"
        try:
            shutil.copyfile(archive.path, temp)
            if sha256(temp) != sha256(archive.path):
                raise OSError(0, "the copy differs from the file")
            _fsync(temp)
            os.chmod(temp, 0o444)
            os.replace(temp, target)
            _fsync(folder, directory=True)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise BackupError(
                f"copying the gaming-day file {archive.path} into {folder} failed "
                f"({exc.strerror or exc}); the journal's backup was kept. Check the free space "
                "(df -h) and run the backup again"
            ) from None
        copied.append(target)
    return tuple(copied)


# -- restoring --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Restored:
    """A restore done: the journal now holds ``summary``; the file it replaced (with its
    ``-wal``) was kept as ``kept`` (None if there was none)."""

    journal: Path
    summary: str
    kept: Path | None


def restore_journal(
    backup: str | os.PathLike[str],
    journal: str | os.PathLike[str],
    now: dt.datetime | None = None,
    carry_on: Callable[[Path], None] | None = None,
) -> Restored:
    """Put ``backup`` in place of the journal ``journal`` of a stopped table controller.

    Refused while a table controller holds the journal (``<journal>.lock``). The backup is
    copied next to the journal and checked; the current journal, with its ``-wal`` and
    ``-shm``, is renamed ``<journal>.replaced-<UTC time>`` (kept for the investigation: a
    stale WAL must never meet the restored file); then the copy is renamed into place.
    ``carry_on(copy)``, if given, is called on the checked copy before it goes into place
    (the table command journals the restore in it, :mod:`controller.journal.maintenance`);
    if it raises, nothing changed.
    """
    backup, journal = Path(backup), Path(journal).absolute()
    if not backup.is_file():
        raise BackupError(f"no backup at {backup}: check the path (ls the backup folder)")
    folder = journal.parent
    lock = folder / (journal.name + ".lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise BackupError(f"cannot open the lock file {lock}: {exc.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BackupError(
                f"journal {journal} is in use by a running table controller: stop it first "
                "(systemctl stop table-controller), then restore"
            ) from None
        _owned_like(lock, folder)
        stamp = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).strftime(_STAMP)
        temp = folder / f".{journal.name}.restore-{stamp}.tmp"
        try:
            shutil.copyfile(backup, temp)
            _owned_like(temp, folder)
            os.chmod(temp, 0o640)
        except OSError as exc:
            _unlink_sqlite(temp)
            raise BackupError(
                f"cannot copy {backup} to {folder}: {exc.strerror}; nothing changed"
            ) from None
        try:
            summary = verify_journal(temp)
        except BackupError as exc:
            _unlink_sqlite(temp)
            raise BackupError(
                f"the backup {backup} failed its check ({exc}); nothing changed: restore an "
                "older backup"
            ) from None
        if carry_on is not None:
            try:
                carry_on(temp)
            except Exception as exc:
                _unlink_sqlite(temp)
                raise BackupError(f"the backup {backup} was not restored: {exc}") from None
            finally:
                with contextlib.suppress(FileNotFoundError):
                    temp.with_name(temp.name + ".lock").unlink()
        _fsync(temp)
        kept = None
        if journal.exists():
            kept = folder / f"{journal.name}.replaced-{stamp}"
            os.replace(journal, kept)
        for suffix in ("-wal", "-shm"):  # the old file's: never beside the restored one
            stale = folder / (journal.name + suffix)
            if stale.exists():
                if kept is not None:
                    os.replace(stale, folder / (kept.name + suffix))
                else:
                    stale.unlink()
        os.replace(temp, journal)
        _fsync(folder, directory=True)
    finally:
        os.close(fd)
    return Restored(journal, summary, kept)
