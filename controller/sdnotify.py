"""systemd's notify protocol with the standard library alone (no python-systemd).

A service with ``Type=notify`` tells systemd it has started (``READY=1``), that it is
alive (``WATCHDOG=1``, while ``WatchdogSec=`` is set), that it is stopping
(``STOPPING=1``) and what it is doing (``STATUS=...``, shown by ``systemctl status``).
Each message is one datagram of ``KEY=VALUE`` lines sent to the AF_UNIX socket named by
``$NOTIFY_SOCKET``; a name starting with ``@`` is in the abstract namespace (the ``@``
stands for a leading NUL byte). See sd_notify(3).

Outside systemd (no ``$NOTIFY_SOCKET``: a terminal, a test) every call is a no-op that
returns False, so the runtime calls these unconditionally.

>>> notify("READY=1", env={})
False
>>> watchdog_interval_ms({"WATCHDOG_USEC": "30000000"}, pid=1)  # WatchdogSec=30
30000
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Mapping

log = logging.getLogger("controller.sdnotify")

__all__ = ["Notifier", "notify", "watchdog_interval_ms"]


def socket_address(env: Mapping[str, str] | None = None) -> str | None:
    """The address of ``$NOTIFY_SOCKET`` as ``socket.sendto`` takes it, or None when unset.

    ``@name`` becomes ``"\\0name"`` (the abstract namespace); a path is kept as it is.
    Other forms (systemd 254's ``vsock:``) are not supported: None, and a warning.
    """
    env = os.environ if env is None else env
    raw = env.get("NOTIFY_SOCKET", "")
    if not raw:
        return None
    if raw.startswith("@"):
        return "\0" + raw[1:]
    if raw.startswith("/"):
        return raw
    log.warning("NOTIFY_SOCKET=%r: only a path or @abstract name is supported; ignored", raw)
    return None


def _datagram(lines: tuple[str, ...]) -> bytes:
    """The lines as one message. A newline inside a line becomes a space, so a STATUS made
    from an error text can never smuggle in a READY=1 or WATCHDOG=1 line of its own."""
    if not lines:
        raise ValueError("notify needs at least one KEY=VALUE line")
    clean = []
    for line in lines:
        if "=" not in line:
            raise ValueError(f"notify line {line!r}: not KEY=VALUE")
        clean.append(line.replace("\r", " ").replace("\n", " "))
    return "\n".join(clean).encode("utf-8", "replace")


class Notifier:
    """A connection-less sender to one notify socket (``address``: as :func:`socket_address`
    gives it; default: read from ``env``, itself ``os.environ`` by default).

    :meth:`notify` never blocks (``MSG_DONTWAIT``) and never raises for a socket that is
    missing, refusing or full: it returns False and logs a warning once until a send
    succeeds again. Safe to call from several threads; :meth:`close` is safe twice.
    """

    def __init__(self, address: str | None = None, *, env: Mapping[str, str] | None = None) -> None:
        self.address = address if address is not None else socket_address(env)
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._failing = False

    @property
    def enabled(self) -> bool:
        """True when running under systemd with a notify socket."""
        return self.address is not None

    def notify(self, *lines: str) -> bool:
        """Send ``lines`` (``"READY=1"``, ``"STATUS=..."``) as one datagram; True if sent."""
        data = _datagram(lines)
        if self.address is None:
            return False
        with self._lock:
            try:
                if self._sock is None:
                    self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sock.sendto(data, socket.MSG_DONTWAIT, self.address)
            except OSError as exc:
                if not self._failing:
                    self._failing = True
                    shown = self.address.replace("\0", "@", 1)
                    log.warning("cannot notify systemd at %s: %s (repeats: debug)", shown, exc)
                else:
                    log.debug("cannot notify systemd: %s", exc)
                return False
            if self._failing:
                self._failing = False
                log.info("notifying systemd works again")
            return True

    def close(self) -> None:
        """Close the socket (a later :meth:`notify` opens a new one)."""
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def __enter__(self) -> Notifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_default: Notifier | None = None
_default_lock = threading.Lock()


def notify(*lines: str, env: Mapping[str, str] | None = None) -> bool:
    """Send ``lines`` to ``$NOTIFY_SOCKET`` as one datagram: ``notify("READY=1",
    "STATUS=table open")``. False when not under systemd or the send failed (logged once);
    never raises for the socket. ``env`` (default ``os.environ``) is read on every call."""
    global _default
    address = socket_address(env)
    with _default_lock:
        if _default is None or _default.address != address:
            if _default is not None:
                _default.close()
            _default = Notifier(address)
        notifier = _default
    return notifier.notify(*lines)


def _positive_int(env: Mapping[str, str], key: str) -> int | None:
    raw = env.get(key)
    if raw is None:
        return None
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        log.warning("%s=%r is not a number; ignored", key, raw)
        return None
    if value <= 0:
        log.warning("%s=%r is not positive; ignored", key, raw)
        return None
    return value


def watchdog_interval_ms(
    env: Mapping[str, str] | None = None, pid: int | None = None
) -> int | None:
    """The watchdog interval (the unit's ``WatchdogSec=``) in milliseconds, from
    ``$WATCHDOG_USEC`` (microseconds), or None: no watchdog, a bad value, or ``$WATCHDOG_PID``
    naming a process other than ``pid`` (default: this process). Like sd_watchdog_enabled(3).
    Send ``WATCHDOG=1`` at least every half of it: systemd kills the service when a whole
    interval passes without one."""
    env = os.environ if env is None else env
    usec = _positive_int(env, "WATCHDOG_USEC")
    if usec is None:
        return None
    if "WATCHDOG_PID" in env:
        owner = _positive_int(env, "WATCHDOG_PID")
        if owner is None or owner != (os.getpid() if pid is None else pid):
            return None
    return max(1, usec // 1000)
