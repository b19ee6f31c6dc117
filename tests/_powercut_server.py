"""The server of tests/powercut_fs.py: a FUSE file system that keeps unsynced writes in memory.

Run by :class:`powercut_fs.PowerCutMount` as ``python tests/_powercut_server.py STORE
MOUNTPOINT``; the model (what a power cut keeps) is in tests/powercut_fs.py, the disk in
tests/_powercut_disk.py. It prints ``ready`` once mounted. On stdin it takes ``arm N``
(freeze after N more operations that change something: :meth:`PowerCutFS.arm`; prints
``frozen after operation ...`` then), ``cut drop|torn SEED`` (prints what was lost, then exits
without writing anything more) and ``stats`` (a JSON line); the end of stdin is a cut too.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

from _powercut_disk import PAGE, ROOT_INO, Disk, Node


def _op(changes: bool):
    """A file system operation: none runs once the disk is frozen (the power is off: it
    waits for the cut), each runs alone under the lock, and one that ``changes`` what a
    cut could keep counts towards an armed freeze (:meth:`PowerCutFS.arm`)."""

    def wrap(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            self._gate()
            with self.mutex:
                result = method(self, *args, **kwargs)
                if changes:
                    self._changed(method.__name__, args)
            self._gate()
            return result

        return run

    return wrap


def _oserror(code: int, what: str = "") -> OSError:
    return OSError(code, f"{os.strerror(code)}{': ' + what if what else ''}")


class PowerCutFS(Disk):
    """The operations mfusepy calls (path based, ``fh`` for open files) on the :class:`Disk`
    in ``store``. One lock: operations never overlap."""

    use_ns = True

    def __init__(self, store: Path, context=lambda: (0, 0, 0), say=print) -> None:
        super().__init__(store)
        self.context = context
        self.say = say  # one line to the test
        self.ops = 0  # operations that changed something since the mount
        self.trigger = 0  # freeze once ``ops`` reaches it (0: never)
        self.frozen = threading.Event()
        self.mutex = threading.RLock()
        self.handles: dict[int, int] = {}
        self.next_fh = 1

    # -- freezing: the moment of the cut ---------------------------------------------------

    def arm(self, after: int) -> None:
        """Freeze once ``after`` more operations changed something: from then on no
        operation returns (the one that froze it included), as if the power went off just
        after the disk took it; the test kills the programs, then cuts."""
        self.trigger = self.ops + after

    def _changed(self, name: str, args: tuple) -> None:
        self.ops += 1
        if self.trigger and self.ops >= self.trigger and not self.frozen.is_set():
            self.frozen.set()
            where = f" at {args[2]} ({len(args[1])} bytes)" if name == "write" else ""
            self.say(f"frozen after operation {self.ops}: {name} {args[0]}{where}")

    def _gate(self) -> None:
        if self.frozen.is_set():
            threading.Event().wait()  # until the cut ends the process

    # -- names ------------------------------------------------------------------------------

    def _lookup(self, path: str) -> Node:
        node = self.nodes[ROOT_INO]
        for part in [p for p in path.split("/") if p]:
            if node.entries is None:
                raise _oserror(errno.ENOTDIR, path)
            if part not in node.entries:
                raise _oserror(errno.ENOENT, path)
            node = self.nodes[node.entries[part]]
        return node

    def _parent(self, path: str) -> tuple[Node, str]:
        head, _, name = path.rstrip("/").rpartition("/")
        parent = self._lookup(head or "/")
        if parent.entries is None:
            raise _oserror(errno.ENOTDIR, head)
        return parent, name

    def _node(self, path: str | None, fh: int | None) -> Node:
        if fh is not None and fh in self.handles:
            return self.nodes[self.handles[fh]]
        if path is None:
            raise _oserror(errno.EBADF)
        return self._lookup(path)

    def _new(self, path: str, mode: int, **kw: Any) -> Node:
        parent, name = self._parent(path)
        if name in parent.entries:
            raise _oserror(errno.EEXIST, path)
        uid, gid, _pid = self.context()
        now = time.time_ns()
        node = Node(self.next_ino, mode, uid, gid, atime=now, mtime=now, ctime=now, **kw)
        self.next_ino += 1
        self.nodes[node.ino] = node
        parent.entries[name] = node.ino
        parent.mtime = parent.ctime = now
        node.links = 1
        return node

    def _unname(self, parent: Node, name: str) -> None:
        node = self.nodes[parent.entries.pop(name)]
        node.links -= 1
        parent.mtime = parent.ctime = node.ctime = time.time_ns()
        self._maybe_forget(node)

    def _maybe_forget(self, node: Node) -> None:
        if node.links <= 0 and node.opened <= 0 and node.ino != ROOT_INO:
            del self.nodes[node.ino]
            if node.ino not in self.durable:
                self._forget_data(node.ino)

    def _open(self, node: Node) -> int:
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = node.ino
        node.opened += 1
        return fh

    # -- the operations (mfusepy's names and arguments) -------------------------------------

    def init(self, path: str) -> None:
        self.say("ready")

    @_op(changes=False)
    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        node = self._node(path, fh)
        if node.entries is not None:
            size = PAGE
            nlink = 2 + sum(self.nodes[i].entries is not None for i in node.entries.values())
        else:
            size = node.size
            nlink = node.links
        return {
            "st_mode": node.mode, "st_ino": node.ino, "st_nlink": nlink,
            "st_uid": node.uid, "st_gid": node.gid, "st_rdev": node.rdev, "st_size": size,
            "st_blocks": (size + 511) // 512, "st_blksize": PAGE,
            "st_atime": node.atime, "st_mtime": node.mtime, "st_ctime": node.ctime,
        }  # fmt: skip

    @_op(changes=False)
    def readdir(self, path: str, fh: int) -> list:
        node = self._node(path, fh)
        if node.entries is None:
            raise _oserror(errno.ENOTDIR, path)
        out: list = [".", ".."]
        for name, ino in node.entries.items():
            out.append((name, {"st_mode": self.nodes[ino].mode, "st_ino": ino}, 0))
        return out

    @_op(changes=True)
    def mkdir(self, path: str, mode: int) -> int:
        self._new(path, stat.S_IFDIR | (mode & 0o7777), entries={})
        return 0

    @_op(changes=True)
    def mknod(self, path: str, mode: int, dev: int) -> int:
        self._new(path, mode if stat.S_IFMT(mode) else stat.S_IFREG | mode, rdev=dev)
        return 0

    @_op(changes=True)
    def unlink(self, path: str) -> int:
        parent, name = self._parent(path)
        if name not in parent.entries:
            raise _oserror(errno.ENOENT, path)
        if self.nodes[parent.entries[name]].entries is not None:
            raise _oserror(errno.EISDIR, path)
        self._unname(parent, name)
        return 0

    @_op(changes=True)
    def rmdir(self, path: str) -> int:
        parent, name = self._parent(path)
        node = self._lookup(path)
        if node.entries is None:
            raise _oserror(errno.ENOTDIR, path)
        if node.entries:
            raise _oserror(errno.ENOTEMPTY, path)
        self._unname(parent, name)
        return 0

    @_op(changes=True)
    def rename(self, old: str, new: str, flags: int = 0) -> int:
        if flags & ~1:  # RENAME_EXCHANGE, RENAME_WHITEOUT: not needed by anything here
            raise _oserror(errno.EINVAL, "rename flags")
        src_parent, src_name = self._parent(old)
        if src_name not in src_parent.entries:
            raise _oserror(errno.ENOENT, old)
        node = self.nodes[src_parent.entries[src_name]]
        dst_parent, dst_name = self._parent(new)
        if (dst_parent.ino, dst_name) == (src_parent.ino, src_name):
            return 0
        if dst_name in dst_parent.entries:
            if flags & 1:  # RENAME_NOREPLACE
                raise _oserror(errno.EEXIST, new)
            old_node = self.nodes[dst_parent.entries[dst_name]]
            if old_node.entries is not None and (node.entries is None or old_node.entries):
                raise _oserror(errno.ENOTEMPTY if old_node.entries else errno.EISDIR, new)
            if old_node.entries is None and node.entries is not None:
                raise _oserror(errno.ENOTDIR, new)
            self._unname(dst_parent, dst_name)
        del src_parent.entries[src_name]
        dst_parent.entries[dst_name] = node.ino
        now = time.time_ns()
        src_parent.mtime = dst_parent.mtime = node.ctime = now
        return 0

    @_op(changes=True)
    def chmod(self, path: str | None, mode: int) -> int:
        node = self._lookup(path)
        node.mode = stat.S_IFMT(node.mode) | (mode & 0o7777)
        node.ctime = time.time_ns()
        return 0

    @_op(changes=True)
    def chown(self, path: str | None, uid: int, gid: int) -> int:
        node = self._lookup(path)
        node.uid = node.uid if uid == -1 else uid
        node.gid = node.gid if gid == -1 else gid
        node.ctime = time.time_ns()
        return 0

    @_op(changes=False)
    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> int:
        node = self._lookup(path)
        now = time.time_ns()
        atime, mtime = times or (now, now)
        for name, value in (("atime", atime), ("mtime", mtime)):
            nsec = divmod(int(value), 10**9)[1]
            if nsec == (1 << 30) - 2:  # UTIME_OMIT
                continue
            setattr(node, name, now if nsec == (1 << 30) - 1 else int(value))  # UTIME_NOW
        node.ctime = now
        return 0

    @_op(changes=True)
    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        node = self._node(path, fh)
        if node.entries is not None:
            raise _oserror(errno.EISDIR, path or "")
        self._truncate(node, length)
        return 0

    def _truncate(self, node: Node, length: int) -> None:
        if length < node.size:
            last, rest = divmod(length, PAGE)
            if rest:
                page = self._page(node, last)
                node.dirty[last] = page[:rest] + bytes(PAGE - rest)
            node.dirty = {i: p for i, p in node.dirty.items() if i * PAGE < length}
            node.floor = min(node.floor, length)
        node.size = length
        node.mtime = node.ctime = time.time_ns()

    @_op(changes=False)
    def open(self, path: str, flags: int) -> int:
        node = self._lookup(path)
        if flags & os.O_TRUNC and stat.S_ISREG(node.mode):
            self._truncate(node, 0)
        return self._open(node)

    @_op(changes=True)
    def create(self, path: str, mode: int, flags: int = 0) -> int:
        parent, name = self._parent(path)
        if name in parent.entries:
            if flags & os.O_EXCL:
                raise _oserror(errno.EEXIST, path)
            node = self.nodes[parent.entries[name]]
        else:
            node = self._new(path, stat.S_IFREG | (mode & 0o7777))
        return self._open(node)

    @_op(changes=False)
    def opendir(self, path: str) -> int:
        return self._open(self._lookup(path))

    @_op(changes=False)
    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        node = self._node(path, fh)
        end = min(offset + size, node.size)
        if end <= offset:
            return b""
        first, last = offset // PAGE, (end - 1) // PAGE
        data = b"".join(self._page(node, i) for i in range(first, last + 1))
        return data[offset - first * PAGE : end - first * PAGE]

    @_op(changes=True)
    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        node = self._node(path, fh)
        self.stats["writes"] += 1
        end = offset + len(data)
        for index in range(offset // PAGE, (end - 1) // PAGE + 1 if data else 0):
            start = index * PAGE
            lo, hi = max(offset, start), min(end, start + PAGE)
            if lo == start and hi == start + PAGE:
                page = data[lo - offset : hi - offset]
            else:
                old = self._page(node, index)
                page = old[: lo - start] + data[lo - offset : hi - offset] + old[hi - start :]
            node.dirty[index] = bytes(page)
        node.size = max(node.size, end)
        node.mtime = node.ctime = time.time_ns()
        return len(data)

    @_op(changes=True)
    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        self.stats["fsync"] += 1
        self.sync_file(self._node(path, fh), attributes=not datasync)
        return 0

    @_op(changes=True)
    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        self.stats["fsyncdir"] += 1
        node = self._node(path, fh)
        if node.entries is None:
            raise _oserror(errno.ENOTDIR, path or "")
        self.sync_dir(node)
        return 0

    @_op(changes=False)
    def _close(self, fh: int) -> int:
        ino = self.handles.pop(fh, None)
        if ino is not None and ino in self.nodes:
            node = self.nodes[ino]
            node.opened -= 1
            self._maybe_forget(node)
        return 0

    def release(self, path: str | None, fh: int) -> int:
        return self._close(fh)

    def releasedir(self, path: str | None, fh: int) -> int:
        return self._close(fh)

    def flush(self, path: str | None, fh: int) -> int:
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self.store)
        keys = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree",
                "f_favail", "f_namemax")  # fmt: skip
        return {key: getattr(st, key) for key in keys}


def serve(store: Path, mountpoint: Path) -> int:
    """Mount ``store`` at ``mountpoint`` and serve it until a ``cut`` command or the end of
    stdin (which is a cut too). Prints ``ready`` once the kernel talks to it."""
    import mfusepy

    class Fuse(mfusepy.FUSE):
        # mfusepy 3.1 drops libfuse3's file handle for ftruncate and the flags of rename
        def truncate_fuse_3(self, path, length, fip):
            fh = fip.contents.fh if fip else None
            return self.operations.truncate(None if path is None else path.decode(), length, fh)

        def rename_fuse_3(self, old, new, flags):
            return self.operations.rename(old.decode(), new.decode(), flags)

    out_lock = threading.Lock()

    def say(line: str) -> None:
        with out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    fs = PowerCutFS(store, mfusepy.fuse_get_context, say)

    def control() -> None:
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["cut"] and len(words) == 3:
                with fs.mutex:
                    say(fs.cut(words[1] == "torn", int(words[2])))
                    os._exit(0)
            elif words[:1] == ["arm"] and len(words) == 2:
                with fs.mutex:
                    fs.arm(int(words[1]))
                    say(f"armed {words[1]}")
            elif words == ["stats"]:
                with fs.mutex:
                    say(json.dumps({**fs.stats, "ops": fs.ops}))
        os._exit(0)  # the test is gone: nothing more reaches the disk

    threading.Thread(target=control, daemon=True).start()
    Fuse(fs, str(mountpoint), foreground=True, use_ino=True, hard_remove=True,
         fsname="powercut", subtype="powercut")  # fmt: skip
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} STORE MOUNTPOINT")
    sys.exit(serve(Path(sys.argv[1]), Path(sys.argv[2])))
