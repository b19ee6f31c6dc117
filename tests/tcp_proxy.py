"""A small TCP proxy on loopback, to cut the network between MQTT clients and the broker.

    proxy = TcpProxy("127.0.0.1", broker.port)   # listens on proxy.port at once
    proxy.cut()        # every open connection is closed (both sides see a reset/EOF)
    proxy.refuse()     # cut, and new connections are accepted then closed at once
    proxy.resume()     # new connections are forwarded again
    proxy.close()      # stop listening, cut everything (safe twice)

One thread accepts; each connection gets two pump threads (client -> target, target ->
client). Nothing is buffered beyond one ``recv``: a cut loses whatever was in flight on
the wire, as a pulled cable does.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    """Forwards ``127.0.0.1:port`` (a free port) to ``target_host:target_port``."""

    host = "127.0.0.1"

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((self.host, 0))
        self._listener.listen(64)
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._refusing = False
        self._closed = threading.Event()
        self.accepted = 0
        self.cuts = 0
        self._thread = threading.Thread(target=self._accept_loop, name="tcp-proxy", daemon=True)
        self._thread.start()

    # -- controls ---------------------------------------------------------------------------

    def cut(self) -> int:
        """Close every open connection; return how many were cut."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
            self.cuts += 1
        for a, b in pairs:
            _kill(a)
            _kill(b)
        return len(pairs)

    def refuse(self) -> None:
        """Cut everything; new connections are closed as soon as accepted (until resume)."""
        self._refusing = True
        self.cut()

    def resume(self) -> None:
        self._refusing = False

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._thread.join(2)
        self._listener.close()
        self.cut()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- threads ----------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self._refusing:
                _kill(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=2)
            except OSError:  # the broker is down: the client sees the connection drop
                _kill(client)
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                if self._refusing:
                    _kill(client)
                    _kill(upstream)
                    continue
                self._pairs.append((client, upstream))
                self.accepted += 1
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        _kill(src)
        _kill(dst)
        with self._lock:
            self._pairs = [p for p in self._pairs if src not in p]


def _kill(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
