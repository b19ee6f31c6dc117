"""Is this machine's clock synchronised? (issue 28 item 6)

Every record's time (the journal's UTC stamps, the gaming day, the ledger's receive time)
depends on the system clock. Both services ask at start and every minute, from what the
time daemon says:

- chrony: ``chronyc -c tracking`` (CSV: the reference, stratum, the system clock's offset in
  seconds, ..., the leap status, ``Not synchronised`` when it is not);
- systemd-timesyncd: ``timedatectl show -p NTPSynchronized --value`` (``yes``/``no``) and
  ``timedatectl timesync-status`` (``Server:`` and ``Offset: +1.234ms``).

A clock the daemon calls unsynchronised, or whose offset is past ``max_offset_ms``, is a
problem (:func:`judge`). When neither program answers (a container, a PC without systemd)
the state is *unknown*: shown and logged, not taken for unsynchronised. The parsers are pure
(tested on the programs' own output); :func:`read_clock` runs the programs found on ``PATH``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

RUN_TIMEOUT_S = 5.0
_SERVICE_ONLY = ("NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC", "LISTEN_FDS", "LISTEN_PID")


@dataclass(frozen=True, slots=True)
class ClockState:
    """``synchronised``: True, False, or None when nothing could tell; ``source``: the time
    daemon and its server (``chrony ntp1.example``); ``offset_ms``: how far the system clock
    is from the server's time (absolute), None if not known."""

    synchronised: bool | None
    source: str
    offset_ms: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "synchronised": self.synchronised,
            "source": self.source,
            "offset_ms": None if self.offset_ms is None else round(self.offset_ms, 3),
        }


def parse_chrony(text: str) -> ClockState | None:
    """``chronyc -c tracking``'s one CSV line; None if it is not one."""
    fields = text.strip().splitlines()[-1].split(",") if text.strip() else []
    if len(fields) < 14:
        return None
    try:
        stratum = int(fields[2])
        offset_ms = abs(float(fields[4])) * 1000
    except ValueError:
        return None
    leap = fields[-1].strip()
    synced = leap != "Not synchronised" and 0 < stratum < 16
    server = fields[1] or fields[0]
    return ClockState(synced, f"chrony {server}", offset_ms)


_OFFSET = re.compile(r"^\s*Offset:\s*([+-]?[\d.]+)\s*(ns|us|µs|ms|s|min)\s*$", re.M)
_SERVER = re.compile(r"^\s*Server:\s*(.+?)\s*$", re.M)
_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1000.0, "min": 60_000.0}


def parse_timesyncd(synchronized: str, status: str) -> ClockState | None:
    """``timedatectl show -p NTPSynchronized --value`` and ``timedatectl timesync-status``;
    None if the first is not ``yes`` or ``no``."""
    flag = synchronized.strip().lower()
    if flag not in ("yes", "no"):
        return None
    server = _SERVER.search(status)
    offset = _OFFSET.search(status)
    offset_ms = abs(float(offset[1])) * _UNIT_MS[offset[2]] if offset else None
    where = f" {server[1]}" if server else ""
    return ClockState(flag == "yes", f"systemd-timesyncd{where}", offset_ms)


Runner = Callable[[Sequence[str]], str | None]


def run_program(argv: Sequence[str]) -> str | None:
    """The program's standard output, or None when it is missing, fails or hangs."""
    # not the service's systemd socket: a systemd tool that found NOTIFY_SOCKET would speak
    # for the service (NotifyAccess=main refuses it, and a test saw its message first)
    env = {k: v for k, v in os.environ.items() if k not in _SERVICE_ONLY}
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
            env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def read_clock(run: Runner = run_program) -> ClockState:
    """Ask chrony, then systemd-timesyncd; unknown when neither answers."""
    chrony = run(["chronyc", "-c", "tracking"])
    if chrony is not None and (state := parse_chrony(chrony)) is not None:
        return state
    flag = run(["timedatectl", "show", "-p", "NTPSynchronized", "--value"])
    if flag is not None:
        status = run(["timedatectl", "timesync-status"]) or ""
        if (state := parse_timesyncd(flag, status)) is not None:
            return state
    return ClockState(None, "unknown: neither chronyc nor timedatectl answered")


def judge(state: ClockState, max_offset_ms: float) -> str | None:
    """Why the clock cannot be trusted, in fixed words, or None (unknown: None too)."""
    if state.synchronised is False:
        return f"the clock is not synchronised ({state.source})"
    if state.offset_ms is not None and state.offset_ms > max_offset_ms:
        return (
            f"the clock is {state.offset_ms:,.0f} ms off its time server ({state.source}), "
            f"past the limit of {max_offset_ms:,.0f} ms"
        )
    return None
