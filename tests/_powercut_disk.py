"""The disk under tests/_powercut_server.py: what the programs see, what a power cut keeps.

Each inode (:class:`Node`) is what the programs see now: a file's unsynced pages are held in
memory (``dirty``), its synced bytes are in the store. :meth:`Disk.sync_file` and
:meth:`Disk.sync_dir` are an fsync of a file and of a folder; :meth:`Disk.cut` is the power
cut. The model is in tests/powercut_fs.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PAGE = 4096
"""Bytes of a page: the unit a torn cut keeps or loses."""
ROOT_INO = 1


@dataclass
class Node:
    """One inode as the programs see it now. Files: ``size`` bytes, of which pages in
    ``dirty`` are unsynced, and the store file's bytes below ``floor`` are current (a
    truncation lowers it); folders: ``entries`` name -> inode."""

    ino: int
    mode: int
    uid: int = 0
    gid: int = 0
    rdev: int = 0
    entries: dict[str, int] | None = None
    size: int = 0
    floor: int = 0
    dirty: dict[int, bytes] = field(default_factory=dict)
    links: int = 0
    opened: int = 0
    atime: int = 0
    mtime: int = 0
    ctime: int = 0

    def record(self) -> dict[str, Any]:
        """What the disk keeps of it besides the data (a folder's entries are set apart)."""
        out: dict[str, Any] = {"mode": self.mode, "uid": self.uid, "gid": self.gid}
        if self.rdev:
            out["rdev"] = self.rdev
        if self.entries is not None:
            out["entries"] = {}
        return out


class Disk:
    """The inodes as the programs see them (``nodes``) over what the disk holds: the store's
    ``meta.json`` (``durable``: every synced inode's record, each folder's synced entries) and
    ``data/<ino>`` (each file's synced bytes). Not thread-safe: the server holds its lock."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.data = store / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.fds: dict[int, int] = {}
        self.stats = {"fsync": 0, "fsyncdir": 0, "writes": 0}
        self.durable = self._load()
        self.nodes: dict[int, Node] = {}
        now = time.time_ns()
        for ino, rec in self.durable.items():
            node = Node(ino, rec["mode"], rec["uid"], rec["gid"], rec.get("rdev", 0),
                        dict(rec["entries"]) if "entries" in rec else None,
                        atime=now, mtime=now, ctime=now)  # fmt: skip
            path = self.data / str(ino)
            node.size = node.floor = path.stat().st_size if path.exists() else 0
            self.nodes[ino] = node
        for node in self.nodes.values():
            for child in (node.entries or {}).values():
                self.nodes[child].links += 1
        self.next_ino = max(self.nodes) + 1

    def _load(self) -> dict[int, dict[str, Any]]:
        """The synced records reachable from the root; every other data file is removed (what
        fsck does with an orphan inode)."""
        meta = self.store / "meta.json"
        saved = json.loads(meta.read_text()) if meta.exists() else {}
        records = {int(k): v for k, v in saved.items()}
        records.setdefault(ROOT_INO, {"mode": stat.S_IFDIR | 0o755, "uid": 0, "gid": 0,
                                      "entries": {}})  # fmt: skip
        reachable, todo = {}, [ROOT_INO]
        while todo:
            ino = todo.pop()
            if ino in reachable or ino not in records:
                continue
            reachable[ino] = records[ino]
            todo.extend(records[ino].get("entries", {}).values())
        for rec in reachable.values():
            if "entries" in rec:  # a name whose inode never reached the disk: gone
                rec["entries"] = {n: i for n, i in rec["entries"].items() if i in reachable}
        for path in self.data.iterdir():
            if not path.name.isdigit() or int(path.name) not in reachable:
                path.unlink()
        return reachable

    def _save(self) -> None:
        meta = self.store / "meta.json"
        temp = meta.with_suffix(".tmp")
        temp.write_text(json.dumps({str(k): v for k, v in self.durable.items()}))
        os.replace(temp, meta)

    def _fd(self, ino: int) -> int:
        if ino not in self.fds:
            self.fds[ino] = os.open(self.data / str(ino), os.O_RDWR | os.O_CREAT, 0o600)
        return self.fds[ino]

    def _stored(self, ino: int) -> bool:
        return ino in self.fds or (self.data / str(ino)).exists()

    # -- pages ------------------------------------------------------------------------------

    def _page(self, node: Node, index: int) -> bytes:
        """Page ``index`` of the file as the programs see it (PAGE bytes, zeros past EOF)."""
        if index in node.dirty:
            return node.dirty[index]
        start = index * PAGE
        valid = min(PAGE, node.floor - start)
        if valid <= 0 or not self._stored(node.ino):
            return bytes(PAGE)
        data = os.pread(self._fd(node.ino), valid, start)
        return data + bytes(PAGE - len(data))

    def _write_back(self, node: Node, pages: dict[int, bytes], size: int, floor: int) -> None:
        """Put ``pages`` of ``node`` on the disk, the file ``size`` bytes long, its stored
        bytes from ``floor`` on dropped first (a truncation that reached the disk)."""
        fd = self._fd(node.ino)
        os.ftruncate(fd, min(floor, os.fstat(fd).st_size))
        os.ftruncate(fd, size)
        for index, page in sorted(pages.items()):
            start = index * PAGE
            if start < size:
                os.pwrite(fd, page[: size - start], start)

    def sync_file(self, node: Node, attributes: bool) -> None:
        if stat.S_ISREG(node.mode):
            self._write_back(node, node.dirty, node.size, node.floor)
            node.dirty = {}
            node.floor = node.size
        if attributes and node.ino in self.durable:
            record = node.record()
            if "entries" in record:
                record["entries"] = self.durable[node.ino].get("entries", {})
            if record != self.durable[node.ino]:
                self.durable[node.ino] = record
                self._save()

    def sync_dir(self, node: Node) -> None:
        """The folder's entries as they are now reach the disk, with the attributes of each
        inode they name (a new file: its synced data, if any, comes with it; a folder's own
        entries only with its own fsync)."""
        record = node.record()
        record["entries"] = dict(node.entries or {})
        self.durable[node.ino] = record
        for ino in record["entries"].values():
            child = self.nodes[ino].record()
            if "entries" in child:
                child["entries"] = self.durable.get(ino, {}).get("entries", {})
            self.durable[ino] = child
        self._collect()
        self._save()

    def _collect(self) -> None:
        """Drop the records (and data) of inodes no synced folder names and no program has."""
        reachable, todo = set(), [ROOT_INO]
        while todo:
            ino = todo.pop()
            if ino not in reachable:
                reachable.add(ino)
                todo.extend(self.durable.get(ino, {}).get("entries", {}).values())
        for ino in [i for i in self.durable if i not in reachable]:
            del self.durable[ino]
            if ino not in self.nodes:
                self._forget_data(ino)

    def _forget_data(self, ino: int) -> None:
        fd = self.fds.pop(ino, None)
        if fd is not None:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            (self.data / str(ino)).unlink()

    def cut(self, torn: bool, seed: int) -> str:
        """The power cut: a ``torn`` one first writes back a random part of the unsynced
        pages and sizes of files on the disk; then nothing more is written. Returns a line
        saying what was lost."""
        rng = random.Random(seed)
        lost = kept = files = 0
        for node in sorted(self.nodes.values(), key=lambda n: n.ino):
            if node.ino not in self.durable or not stat.S_ISREG(node.mode):
                lost += len(node.dirty)
                continue
            pending = node.dirty or node.size != node.floor or self._size(node) != node.size
            if not pending:
                continue
            files += 1
            if torn:
                resize = rng.random() < 0.5
                pages = {i: p for i, p in node.dirty.items() if rng.random() < 0.5}
                size = node.size if resize else self._size(node)
                floor = node.floor if resize else self._size(node)
                self._write_back(node, pages, size, floor)
                kept += len(pages)
                lost += len(node.dirty) - len(pages)
            else:
                lost += len(node.dirty)
        names = sum(
            1
            for node in self.nodes.values()
            if node.entries is not None
            and self.durable.get(node.ino, {}).get("entries") != node.entries
        )
        return (
            f"cut {'torn' if torn else 'drop'} seed={seed}: {lost} unsynced pages lost, "
            f"{kept} kept, in {files} files; {names} folders with unsynced names; "
            f"{self.stats['fsync']} fsyncs, {self.stats['fsyncdir']} folder fsyncs since mount"
        )

    def _size(self, node: Node) -> int:
        return os.fstat(self._fd(node.ino)).st_size if self._stored(node.ino) else 0
