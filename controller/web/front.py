"""The web server's front: one asyncio loop that holds every connection cheaply.

It runs in its own thread of the table daemon (the money loop and the watchdog live in
the same process), so nothing a client does may take threads, memory or time without a
bound:

- a connection waiting for a request costs a few kilobytes, no thread; at most
  :attr:`Limits.max_connections` are open from strangers, and at most
  :attr:`Limits.connections_per_address` from one address (an IPv6 /64); past either, the
  one of them that has waited longest without a request is closed for the newcomer (a new
  connection is never refused while idle ones are held). The dealer's screen's addresses
  have :attr:`Limits.dealer_connections` of their own besides: a stranger's connection never
  closes one of theirs (issue 26 item 3; counted by :mod:`.admission`);
- a request's head and body must arrive within :attr:`Limits.request_timeout_s` of the
  server waiting for it (a kept-alive connection too): a connection that sent part of a
  request gets ``408`` and is closed, a silent one is closed;
- a reply (or a live-stream frame) the client does not read within
  :attr:`Limits.write_timeout_s` closes the connection;
- a request is read whole and checked (:mod:`.protocol`) before a handler sees it; the
  handlers run in small thread pools, one per role (:data:`ROLES`), so a flood from
  strangers queues in theirs while the dealer's screen and logged-in technicians keep
  theirs;
- live streams have a budget per role: the dealer's screen, technicians, everyone else
  (also capped per address). One thread reads the table for every stream.

The front knows no route: :meth:`Front.handler` (the server's) turns a
:class:`Request` into a :class:`Reply` or a :class:`Stream`, or a future of a reply that
other threads make (a login's password check, :mod:`.logins`: no handler thread waits for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import resource
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from controller.web.admission import DEALER_ADDRESSES, Admission, Budget, Conn, client_address
from controller.web.protocol import MAX_HEAD, BadRequest, Head, head_end, parse_head

log = logging.getLogger("table-controller.web")

ROLES = ("dealer", "technician", "anonymous")
"""Who a request is from: ``dealer`` the dealer's screen (no login, from one of
:data:`DEALER_ADDRESSES`), ``technician`` a logged-in session, ``anonymous`` anyone else."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The server's bounds (docs/web.md, "Limits")."""

    request_timeout_s: float = 10.0
    """A request's head and body must arrive within this (s) of the server waiting."""
    write_timeout_s: float = 10.0
    """A reply or a stream frame the client has not taken within this (s): closed."""
    max_connections: int = 1024
    """Open connections from strangers at most (idle ones are closed, oldest first, for new
    ones); the dealer's screen's are counted apart."""
    connections_per_address: int = 32
    """Open connections from one address (an IPv6 /64) at most, the dealer's screen's
    aside: past it, that address's own oldest idle one is closed for its new one."""
    dealer_connections: int = 64
    """Open connections from the dealer's screen's addresses at most, besides
    :attr:`max_connections` (its own oldest idle one is closed for a new one)."""
    streams: dict[str, int] = field(
        default_factory=lambda: {"dealer": 6, "technician": 8, "anonymous": 4}
    )
    """Live streams at once, per role."""
    anonymous_streams_per_address: int = 2
    workers: dict[str, int] = field(
        default_factory=lambda: {"dealer": 2, "technician": 4, "anonymous": 3}
    )
    """Handler threads per role."""


@dataclass(slots=True)
class Request:
    """A whole request, checked: what a route handler sees."""

    head: Head
    body: bytes
    address: str
    role: str = "anonymous"


@dataclass(slots=True)
class Reply:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    close: bool = False


@dataclass(slots=True)
class Stream:
    """Server-sent events of ``kind`` (a name :attr:`Front.views` publishes) for as long as
    the client reads, ``session`` still logged in (when given)."""

    kind: str
    headers: list[tuple[str, str]]
    session: Any = None
    still_valid: Callable[[], bool] | None = None


STREAM_POLL_S = 0.1
"""A stream wakes when the loop publishes a change, and at least this often (s)."""
STREAM_FULL_S = 1.0
"""A stream sends its view at once when it changes, and at least once a second."""
KEEPALIVE_S = 15.0


class Front:
    """Serves ``handler`` on ``sock`` (bound, listening) in a thread of its own.

    ``handler(request)`` runs in the request's role's pool; ``role(head, address)`` picks
    the role (in the loop: it must be quick); ``views()`` returns ``{kind: view}`` for the
    streams (run by the view thread after each table change, at most every
    :data:`STREAM_POLL_S`); ``key(kind, view)`` says what changed at once.
    """

    def __init__(
        self,
        sock: socket.socket,
        *,
        handler: Callable[[Request], Reply | Stream | Future[Reply]],
        role: Callable[[Head, str], str],
        views: Callable[[set[str]], dict[str, Any]],
        frame: Callable[[str, Any], tuple[bytes, bytes]],
        wait_change: Callable[[float], Any],
        error: Callable[[int, str], Reply],
        limits: Limits,
        dealer_addresses: Iterable[str] = DEALER_ADDRESSES,
    ):
        self.sock = sock
        self.handler, self.role, self.views, self.frame = handler, role, views, frame
        self.wait_change, self.error, self.limits = wait_change, error, limits
        self.stopping = threading.Event()
        per_address = limits.anonymous_streams_per_address
        self.budgets = {
            r: Budget(r, limits.streams[r], per_address if r == "anonymous" else 0) for r in ROLES
        }
        self.pools = {
            r: ThreadPoolExecutor(limits.workers[r], thread_name_prefix=f"web-{r}") for r in ROLES
        }
        self.counters = {
            "evicted": 0,
            "connections_refused": 0,
            "timed_out": 0,
            "bad_requests": 0,
            "streams_refused": 0,
        }
        self.admission = Admission(
            max_connections=limits.max_connections,
            connections_per_address=limits.connections_per_address,
            dealer_connections=limits.dealer_connections,
            dealer_addresses=dealer_addresses,
            counters=self.counters,
        )
        self._kinds: dict[str, int] = {}  # stream kind -> streams open
        self._frames: dict[str, tuple[bytes, bytes]] = {}  # kind -> (key, frame)
        self._changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._thread = threading.Thread(target=self._run, name="web", daemon=True)
        self._viewer = threading.Thread(target=self._watch, name="web-views", daemon=True)
        self._ready = threading.Event()

    # -- life ------------------------------------------------------------------------------

    def start(self) -> None:
        self._raise_file_limit()
        self._thread.start()
        self._ready.wait(10)
        self._viewer.start()

    def close(self) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        loop = self._loop
        if loop is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(5)
            self._thread.join(5)
        with contextlib.suppress(OSError):
            self.sock.close()
        for pool in self.pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
        if self._viewer.is_alive():
            self._viewer.join(2)

    @property
    def streams(self) -> int:
        return sum(b.used for b in self.budgets.values())

    @property
    def connections(self) -> int:
        return len(self.admission.conns)

    def is_dealer(self, address: str) -> bool:
        """Whether ``address`` (as :func:`client_address` writes it) is the dealer's screen's."""
        return self.admission.is_dealer(address)

    def _raise_file_limit(self) -> None:
        """Room for every connection: the soft limit of open files up to the hard one
        (systemd gives services 1024 soft, 524288 hard)."""
        want = self.limits.max_connections + self.limits.dealer_connections + 256
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < want:
            new = want if hard == resource.RLIM_INFINITY else min(want, hard)
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            if soft < want:
                log.warning(
                    "web: only %d open files allowed (want %d for %d connections): raise "
                    "LimitNOFILE in the service unit",
                    soft,
                    want,
                    self.limits.max_connections,
                )

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._open())
            self._ready.set()
            loop.run_forever()
        finally:
            self._ready.set()
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _open(self) -> None:
        self._changed = asyncio.Event()
        self._server = await asyncio.start_server(
            self._accept, sock=self.sock, limit=MAX_HEAD * 2, backlog=1024
        )

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.admission.conns):
            conn.writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_soon(asyncio.get_running_loop().stop)

    # -- the live views ---------------------------------------------------------------------

    def _watch(self) -> None:
        """One thread reads the table for every stream: after each change, at most every
        :data:`STREAM_POLL_S`, the views of the kinds someone watches."""
        loop = self._loop
        while not self.stopping.is_set() and loop is not None:
            try:
                self.wait_change(STREAM_POLL_S)
                kinds = {k for k, n in dict(self._kinds).items() if n > 0}
                views = self.views(kinds) if kinds else {}
                frames = {k: self.frame(k, v) for k, v in views.items()}
                loop.call_soon_threadsafe(self._publish, frames)
            except RuntimeError:  # the loop is closed: the server stops
                return
            except Exception:
                log.exception("web: the live view failed")
                time.sleep(1.0)

    def _publish(self, frames: dict[str, tuple[bytes, bytes]]) -> None:
        self._frames.update(frames)
        if self._changed is not None:
            self._changed.set()
            self._changed = asyncio.Event()

    # -- connections ------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        address = client_address(str(peer[0]))
        conn = Conn(writer, address, self.admission.group_of(address), time.monotonic())
        try:
            refused = self.admission.admit(conn)
            if refused is not None:
                self.counters["connections_refused"] += 1
                await self._write(conn, self.error(503, refused), True)
                return
            await self._serve(conn, reader)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("web: a connection from %s failed", conn.address)
        finally:
            self.admission.drop(conn)
            writer.transport.abort()
            if task is not None:
                self._tasks.discard(task)

    async def _serve(self, conn: Conn, reader: asyncio.StreamReader) -> None:
        loop = asyncio.get_running_loop()
        while not self.stopping.is_set():
            self.admission.mark(conn, idle=True)
            try:
                async with asyncio.timeout(self.limits.request_timeout_s):
                    head = await self._read_head(conn, reader)
                    if head is None:
                        return  # the client closed
                    self.admission.mark(conn, idle=False)
                    body = await self._read_body(conn, reader, head.content_length)
            except TimeoutError:
                self.counters["timed_out"] += 1
                if conn.buffer or not conn.idle:
                    await self._write(
                        conn,
                        self.error(
                            408,
                            f"the request did not arrive within "
                            f"{self.limits.request_timeout_s:g} s; send it whole",
                        ),
                        True,
                    )
                return
            except BadRequest as exc:
                self.counters["bad_requests"] += 1
                log.info("web: refused a request from %s: %s", conn.address, exc.message)
                await self._write(conn, self.error(exc.status, exc.message), True)
                return
            role = self.role(head, conn.address)
            request = Request(head, body, conn.address, role)
            answer = await loop.run_in_executor(self.pools[role], self.handler, request)
            if isinstance(answer, Future):  # work handed on (a password check): its reply
                answer = await asyncio.wrap_future(answer)
            if isinstance(answer, Stream):
                await self._stream(conn, reader, request, answer)
                return
            close = answer.close or not head.keep_alive or self.stopping.is_set()
            if head.method == "HEAD":
                answer.body = b""
            if not await self._write(conn, answer, close) or close:
                return

    async def _read_head(self, conn: Conn, reader: asyncio.StreamReader) -> Head | None:
        while True:
            if conn.buffer[:1] in (b"\r", b"\n"):
                # blank lines before a request are ignored (RFC 9112 section 2.2)
                conn.buffer[:] = conn.buffer.lstrip(b"\r\n")
            end = head_end(conn.buffer)
            if end >= 0:
                raw = bytes(conn.buffer[:end])
                del conn.buffer[:end]
                return parse_head(raw)
            if len(conn.buffer) > MAX_HEAD:
                raise BadRequest(431, f"the request head is over {MAX_HEAD} bytes")
            chunk = await reader.read(4096)
            if not chunk:
                if conn.buffer:
                    raise BadRequest(400, "the connection ended inside the request head")
                return None
            conn.buffer += chunk

    async def _read_body(self, conn: Conn, reader: asyncio.StreamReader, length: int) -> bytes:
        while len(conn.buffer) < length:
            chunk = await reader.read(max(4096, length - len(conn.buffer)))
            if not chunk:
                raise ConnectionResetError("the connection ended inside the body")
            conn.buffer += chunk
        body = bytes(conn.buffer[:length])
        del conn.buffer[:length]
        return body

    async def _write(self, conn: Conn, reply: Reply, close: bool) -> bool:
        """Send ``reply`` (``Connection: close`` when ``close``); False if the client did
        not take it in time or is gone."""
        lines = [f"HTTP/1.1 {reply.status} {reply.reason}"]
        names = {k.lower() for k, _v in reply.headers}
        lines += [f"{k}: {v}" for k, v in reply.headers]
        if "content-length" not in names:
            lines.append(f"Content-Length: {len(reply.body)}")
        lines.append(f"Date: {email.utils.formatdate(usegmt=True)}")
        if close:
            lines.append("Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + reply.body
        return await self._send(conn, data)

    async def _send(self, conn: Conn, data: bytes) -> bool:
        writer = conn.writer
        if writer.transport.is_closing():
            return False
        writer.write(data)
        try:
            await asyncio.wait_for(writer.drain(), self.limits.write_timeout_s)
        except (TimeoutError, ConnectionError):
            writer.transport.abort()
            return False
        return True

    # -- live streams ------------------------------------------------------------------------

    async def _stream(
        self, conn: Conn, reader: asyncio.StreamReader, request: Request, stream: Stream
    ) -> None:
        budget = self.budgets[request.role]
        if not budget.take(request.address):
            self.counters["streams_refused"] += 1
            what = {
                "dealer": "the dealer's screen already has its live pages",
                "technician": "technicians already have their live pages",
                "anonymous": "live pages without a login are taken (at most "
                f"{self.limits.anonymous_streams_per_address} an address)",
            }[request.role]
            await self._write(
                conn, self.error(503, f"{what} ({budget.size}); close one and reload"), True
            )
            return
        self._kinds[stream.kind] = self._kinds.get(stream.kind, 0) + 1
        closed = asyncio.ensure_future(reader.read(1))  # a client that hangs up is seen at once
        try:
            head = "HTTP/1.1 200 OK\r\n" + "".join(f"{k}: {v}\r\n" for k, v in stream.headers)
            head += "Connection: close\r\n\r\nretry: 1000\n\n"
            if not await self._send(conn, head.encode("latin-1")):
                return
            last_key: bytes | None = None
            last_sent = last_write = 0.0
            while not self.stopping.is_set():
                if stream.still_valid is not None and not stream.still_valid():
                    await self._send(conn, b"event: logout\ndata: {}\n\n")
                    return
                if stream.kind not in self._frames:  # the first view: at once
                    loop = asyncio.get_running_loop()
                    views = await loop.run_in_executor(
                        self.pools[request.role], self.views, {stream.kind}
                    )
                    self._frames[stream.kind] = self.frame(stream.kind, views[stream.kind])
                key, frame = self._frames[stream.kind]
                now = time.monotonic()
                if key != last_key or now - last_sent >= STREAM_FULL_S:
                    last_key, last_sent, last_write = key, now, now
                    if not await self._send(conn, frame):
                        return
                elif now - last_write >= KEEPALIVE_S:
                    last_write = now
                    if not await self._send(conn, b": keepalive\n\n"):
                        return
                changed = self._changed
                assert changed is not None
                # the wait for a change is this pass's own: cancelled when the pass ends
                # another way (a timeout, a hang-up), so no waiter outlives its stream (one
                # left pending at the loop's close was "Task was destroyed but it is pending")
                waiter = asyncio.ensure_future(changed.wait())
                try:
                    done, _ = await asyncio.wait(
                        [closed, waiter],
                        timeout=STREAM_FULL_S,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    waiter.cancel()
                if closed in done:
                    return
        finally:
            closed.cancel()
            budget.give(request.address)
            self._kinds[stream.kind] -= 1
            if not self._kinds[stream.kind]:
                self._frames.pop(stream.kind, None)
