"""The control socket: a local unix socket speaking JSON Lines (one request, one answer).

It is how the dealer console's keypad enters wager amounts, how ``table-controller status``
and the demo read the table, and (only with ``[gpio] pin_factory = "mock"``) how a
simulation presses buttons and places chips. It never reaches a driver or the table
directly: requests become events submitted to the runtime, or reads of its status.

Requests (``{"op": ...}``) and answers (``{"ok": true, ...}`` or ``{"ok": false, "error":
"what was wrong and what to do"}``):

- ``status``: the runtime's status (snapshot with the hole card hidden, faults, link,
  counters), ``feed`` (the last prompts, alarms, refusals and settlements) and ``health``;
- ``wager`` ``spot`` ``circle`` ``amount`` (cents): a wager amount keyed at the console; the
  answer says whether the table ``accepted`` it and gives its ``effects``;
- ``input`` ``name`` ``active``: simulation only, set a mock input (``sensors.1.main``,
  ``console.next``); ``press`` ``name``: simulation only, press and release a button.
- ``rotate-journal`` ``by`` (who asks): start a new gaming-day journal file now, or, while a
  round is in progress, as soon as it is settled (``docs/journal.md``). The answer has
  ``rotated`` (true when an archive was written), ``archive`` (its file name), ``first_event``,
  ``last_event``, ``events``, ``gaming_day`` and a ``message``; or ``deferred`` ("deferred:
  round N in progress, rotates when it is settled"); or ``ok: false`` and the ``error``.

The socket file is created mode 0660 (the service's group): anyone who can write to it can
key wagers, so it lives in the service's runtime directory, never on the network.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import socketserver
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("table-controller")

MAX_REQUEST = 64 * 1024
"""Bytes in one request line; a longer line is refused and the connection closed."""

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class ControlServer:
    """Serves ``handler`` on the unix socket ``path`` from its own threads."""

    def __init__(self, path: str | os.PathLike[str], handler: Handler):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if self.path.is_socket():
                self.path.unlink()  # left by a process that was killed
        handle = handler

        class _Request(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                while True:
                    line = self.rfile.readline(MAX_REQUEST + 1)
                    if not line:
                        return
                    try:
                        if len(line) > MAX_REQUEST:
                            error = f"request longer than {MAX_REQUEST} B"
                            self._send({"ok": False, "error": error})
                            return
                        self._send(answer(handle, line))
                    except (BrokenPipeError, ConnectionResetError):
                        return  # the client left before its answer: nobody to tell

            def _send(self, data: dict[str, Any]) -> None:
                self.wfile.write(json.dumps(data, separators=(",", ":")).encode() + b"\n")
                self.wfile.flush()

        class _Server(socketserver.ThreadingUnixStreamServer):
            daemon_threads = True

        old = os.umask(0o117)
        try:
            self._server = _Server(str(self.path), _Request)
        finally:
            os.umask(old)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="control", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving and remove the socket file. Safe twice."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(2)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def answer(handler: Handler, line: bytes) -> dict[str, Any]:
    """One request line to its answer; malformed requests are answered, never raised."""
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        return {"ok": False, "error": f"not JSON ({exc}); send one JSON object per line"}
    if not isinstance(request, dict) or not isinstance(request.get("op"), str):
        return {"ok": False, "error": 'a request is a JSON object with "op", e.g. {"op":"status"}'}
    try:
        return handler(request)
    except Exception as exc:  # the answer names it; the server keeps serving
        log.warning("control request %s failed: %s", request.get("op"), exc)
        return {"ok": False, "error": str(exc)}


class ControlClient:
    """A client for the control socket (the demo, ``table-controller status``, tests)."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = 5.0):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(str(path))
        self._file = self._sock.makefile("rwb")

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        self._file.write(json.dumps({"op": op, **fields}).encode() + b"\n")
        self._file.flush()
        line = self._file.readline()
        if not line:
            raise ConnectionError("the table controller closed the control socket")
        return json.loads(line)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
