"""Log lines for journald or for a terminal, for both services (table-controller run,
jackpot-controller).

Under systemd, stderr is a stream into journald, which reads a ``<N>`` prefix on each line as
that line's syslog priority (sd-daemon(3); ``SyslogLevelPrefix=yes``, the default) and stamps
the time itself. So there every line starts with its priority and carries no timestamp of its
own, and ``journalctl -p warning`` shows the alarms, faults and wrong passwords. On a terminal
(or a file) the line starts with the local time instead.

The journal is recognised as systemd says to (systemd.exec(5), ``$JOURNAL_STREAM``): the
variable names the device and inode of the stream, and only a stderr that *is* that stream
gets prefixes (a child whose stderr was redirected elsewhere inherits the variable but not the
stream).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import IO

#: syslog priorities (sd-daemon(3) SD_CRIT .. SD_DEBUG) by the lowest logging level they take.
PRIORITIES = (
    (logging.CRITICAL, 2),
    (logging.ERROR, 3),
    (logging.WARNING, 4),
    (logging.INFO, 6),
)
DEBUG_PRIORITY = 7

JOURNAL_FORMAT = "%(name)s %(levelname)s: %(message)s"
TERMINAL_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def priority(levelno: int) -> int:
    """The syslog priority of a logging level: CRITICAL 2, ERROR 3, WARNING 4, INFO 6,
    DEBUG 7; a level between two takes the lower one's (a custom 25 is INFO's 6).

    >>> [priority(n) for n in (50, 40, 30, 25, 20, 10, 0)]
    [2, 3, 4, 6, 6, 7, 7]
    """
    for level, prio in PRIORITIES:
        if levelno >= level:
            return prio
    return DEBUG_PRIORITY


class JournalFormatter(logging.Formatter):
    """``<N>name LEVEL: message``, every line of a record (a traceback too) with its ``<N>``:
    journald makes each line an entry of its own."""

    def __init__(self) -> None:
        super().__init__(JOURNAL_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).split("\n"))


def journal_stream(stream: IO[str], environ: Mapping[str, str] | None = None) -> bool:
    """True when ``stream`` is the journald stream ``$JOURNAL_STREAM`` names
    (``DEVICE:INODE``, decimal)."""
    value = (os.environ if environ is None else environ).get("JOURNAL_STREAM", "")
    device, _, inode = value.partition(":")
    try:
        st = os.fstat(stream.fileno())
        return (st.st_dev, st.st_ino) == (int(device), int(inode))
    except (ValueError, OSError, AttributeError):  # unset, malformed, or not a real file
        return False


def setup(
    level: int | str, stream: IO[str] | None = None, environ: Mapping[str, str] | None = None
) -> logging.Handler:
    """Send every log record at ``level`` and above to ``stream`` (default stderr): with its
    syslog priority and no time under journald, with the local time otherwise. Replaces the
    root logger's handlers; returns the new one."""
    stream = sys.stderr if stream is None else stream
    handler = logging.StreamHandler(stream)
    if journal_stream(stream, environ):
        handler.setFormatter(JournalFormatter())
    else:
        handler.setFormatter(logging.Formatter(TERMINAL_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    return handler
