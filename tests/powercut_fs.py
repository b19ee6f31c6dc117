"""A file system that forgets what was not synced: power cuts for the durability tests.

``kill -9`` leaves the kernel's page cache alone, so a write the program never fsynced is
still read back after the restart. A power cut loses it. This module is a FUSE file system
(through mfusepy and Debian's libfuse3) that keeps everything a program writes in the memory
of its own server process until the program syncs it, then writes it to a backing folder (the
"disk"). A power cut is: every program using the mount is killed, then the server is told to
cut (``cut``): it exits without writing anything more. Remounting the same backing folder
gives what the disk held.

The model (what survives a cut), as POSIX promises and SQLite relies on, no more:

- file data: a write reaches the disk only when the file is fsynced or fdatasynced
  (``fsync`` on any descriptor of it); everything written since is lost, truncations too;
- names: creating, unlinking or renaming a file or folder reaches the disk only when its
  folder is fsynced (``open(dir) + fsync``); a file whose name never did is gone after the
  cut, whatever its data (an unlinked file whose unlink was not synced comes back); there are
  no hard or symbolic links (nothing on these disks makes them);
- attributes (mode, owner): with the file's fsync, or with an fsync of a folder that names
  it (as a journaling file system commits them);
- ``torn`` cuts (the disk's writeback caught part of the cache): each unsynced 4 KiB page of
  a file reaches the disk or not, at random (seeded), as does a size change; names stay
  strict. ``drop`` cuts lose every unsynced byte.

This is stricter than ext4 (whose journal commits every earlier name change at any fsync and
every 5 s) and is the contract SQLite is written against: in WAL mode with ``synchronous =
FULL`` a commit is an fdatasync of the ``-wal`` file, and the first sync of a new ``-wal`` or
rollback journal also fsyncs its folder (SQLite's ``UNIXFILE_DIRSYNC``), so the folder's
entries (the database's own name too) reach the disk with it. A checkpoint fsyncs the database
before the WAL is reused. The ``-shm`` file is SQLite's shared memory (mmap); its content after
a cut does not matter (SQLite rebuilds it from the WAL). File locks (fcntl, flock) are the
kernel's own, as on a local disk.

Not modelled: a disk that lies about flushes, bytes torn inside a page, media errors.

A cut can also land at a chosen disk operation: ``arm(N)`` freezes the disk after the N-th
operation that changes something (a write, an fsync, a rename...); no operation returns after
it, the test kills the programs, then cuts.

The server is tests/_powercut_server.py (its disk: tests/_powercut_disk.py), a child process
of :class:`PowerCutMount` (``mount()``, ``arm(n)``, ``cut(torn, seed)``, ``close()``), which
the tests use. ``python tests/powercut_fs.py sqlite-sync-off (-m MODULE | SCRIPT) ARGS...``
runs a program with every ``PRAGMA synchronous`` turned into ``OFF``: a test-only knob that
shows the power-cut tests catch a program that does not sync.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve()
SERVER = HERE.with_name("_powercut_server.py")


def fuse_missing() -> str | None:
    """Why FUSE cannot run here (no ``/dev/fuse``), or None. Only that skips a test: a missing
    libfuse or a refused mount is a failure (``scripts/setup.sh --test`` installs fuse3)."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine (a container without FUSE): power cuts need it"
    return None


# -- the test's side -------------------------------------------------------------------------


class PowerCutError(RuntimeError):
    """The power-cut file system did not mount, answer or unmount."""


def _detach(mountpoint: Path) -> None:
    """Lazy unmount (``umount -l``): the server may be dead (its connection aborted). Not as
    root (libfuse mounted through the setuid ``fusermount3``): ``fusermount3 -u -z``."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(os.fsencode(mountpoint), 2) == 0:  # MNT_DETACH
        return
    code = ctypes.get_errno()
    if code == errno.EPERM and _mounted(mountpoint):
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True)
    if _mounted(mountpoint):
        raise PowerCutError(f"cannot unmount {mountpoint}: {os.strerror(code)}")


def _mounted(mountpoint: Path) -> bool:
    """Whether something is mounted there (a dead FUSE mount too, which ``ismount`` misses)."""
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        where = os.path.realpath(mountpoint)
        return any(line.split()[1].replace("\\040", " ") == where for line in mounts)


class PowerCutMount:
    """The file system over ``store`` at ``mountpoint``, its server a child process (stderr
    to ``log``). ``mount()`` again after ``cut()`` gives what the disk kept."""

    def __init__(self, store: Path, mountpoint: Path, log: Path) -> None:
        self.store = store
        self.mountpoint = mountpoint
        self.log = log
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue[str] = queue.Queue()
        self.frozen: str | None = None  # the server's line once an armed freeze happened
        store.mkdir(parents=True, exist_ok=True)
        mountpoint.mkdir(parents=True, exist_ok=True)

    def mount(self, timeout: float = 30.0) -> None:
        if self.proc is not None:
            raise PowerCutError("mounted already")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(SERVER), str(self.store), str(self.mountpoint)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                text=True, bufsize=1,
            )  # fmt: skip
        self.lines = queue.Queue()
        self.frozen = None
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        line = self._expect("ready", timeout)
        if line != "ready":
            self.close()
            raise PowerCutError(f"the FUSE server did not start ({line!r}): {self.log_text()}")
        deadline = time.monotonic() + timeout
        while not os.path.ismount(self.mountpoint):
            if time.monotonic() > deadline:
                self.close()
                raise PowerCutError(f"{self.mountpoint} never showed as mounted")
            time.sleep(0.01)

    @staticmethod
    def _read(proc: subprocess.Popen, lines: queue.Queue[str]) -> None:
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put("")  # the server is gone

    def _expect(self, prefix: str, timeout: float) -> str:
        """The server's next line starting with ``prefix`` (a freeze is noted on the way);
        else what it said instead."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return f"no answer in {timeout:g} s"
            if line.startswith("frozen"):
                self.frozen = line
            if line.startswith(prefix) or not line:
                return line

    def _send(self, command: str) -> None:
        if self.proc is None:
            raise PowerCutError("not mounted")
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def stats(self) -> dict[str, int]:
        """The server's counts since the mount: fsyncs, folder fsyncs, writes, operations."""
        self._send("stats")
        return json.loads(self._expect("{", 30))

    def arm(self, after: int) -> None:
        """Freeze the disk once ``after`` more operations changed something (a write, an
        fsync, a rename...): none returns after it, as if the power went off there. Then kill
        the programs (their operations never return: do not wait for them) and ``cut()``."""
        self._send(f"arm {after}")
        if self._expect("armed", 30) != f"armed {after}":
            raise PowerCutError(f"the server did not arm: {self.log_text()}")

    def wait_frozen(self, timeout: float) -> str | None:
        """The server's line once an armed freeze happened (within ``timeout`` s), or None."""
        if self.frozen is None:
            self._expect("frozen", timeout)
        return self.frozen

    def cut(self, torn: bool = False, seed: int = 0) -> str:
        """The power cut: the programs on the mount must be killed first (a frozen one dies
        with the cut). Unsynced writes are lost (``torn``: some reach the disk); the mount is
        gone. Returns the server's line saying what was lost."""
        try:
            self._send(f"cut {'torn' if torn else 'drop'} {seed}")
            said = self._expect("cut ", 30)
        except OSError as exc:
            said = f"the server was gone ({exc})"
        self._end()
        if not said.startswith("cut "):
            raise PowerCutError(f"the cut was not done: {said}: {self.log_text()}")
        return said

    def _end(self) -> None:
        proc, self.proc = self.proc, None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _detach(self.mountpoint)

    def close(self) -> None:
        """Unmount, losing what was not synced (a cut with no report); safe twice."""
        if self.proc is not None:
            self._end()
        else:
            _detach(self.mountpoint)


# -- the test-only knob ----------------------------------------------------------------------

_SYNCHRONOUS = re.compile(r"\s*PRAGMA\s+(\w+\.)?synchronous\s*=", re.IGNORECASE)


def sqlite_sync_off(argv: list[str]) -> list[str]:
    """``argv`` (``[sys.executable, "-m", MODULE, ...]`` or ``[sys.executable, SCRIPT, ...]``)
    made to run with SQLite's ``synchronous`` forced ``OFF`` (:func:`force_sqlite_sync_off`)."""
    if argv[:1] != [sys.executable]:
        raise ValueError(f"not a Python program of this interpreter: {argv[:2]}")
    return [sys.executable, str(HERE), "sqlite-sync-off", *argv[1:]]


def force_sqlite_sync_off() -> None:
    """Every later ``sqlite3.connect`` gives a connection on which ``PRAGMA synchronous =
    ...`` sets ``OFF``: commits are never synced (to show the tests catch it)."""
    import sqlite3

    class Unsynced(sqlite3.Connection):
        def execute(self, sql, *args):
            if _SYNCHRONOUS.match(sql):
                sql = "PRAGMA synchronous = OFF"
            return super().execute(sql, *args)

    real = sqlite3.connect

    def connect(*args, **kwargs):
        kwargs.setdefault("factory", Unsynced)
        db = real(*args, **kwargs)
        db.execute("PRAGMA synchronous = OFF")
        return db

    sqlite3.connect = connect


def main(argv: list[str]) -> int:
    if argv[:1] == ["sqlite-sync-off"] and len(argv) >= 2:
        import runpy

        force_sqlite_sync_off()
        sys.stderr.write("powercut_fs: SQLite synchronous forced OFF (a test of the tests)\n")
        if argv[1] == "-m":
            sys.argv = [argv[2], *argv[3:]]
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv[1:]
            sys.path.insert(0, str(Path(argv[1]).resolve().parent))
            runpy.run_path(argv[1], run_name="__main__")
        return 0
    sys.stderr.write("usage: powercut_fs.py sqlite-sync-off (-m MODULE | SCRIPT) ARGS...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
