"""The jackpot controller's alarm log: every refused message a technician must see, kept in the
ledger (its SQLite file or its PostgreSQL database) until someone acknowledges it.

One row per open alarm of a kind from a table (``signature`` from ``hcm-bj-07``): a repeat
while it is open adds to its ``count`` and updates ``last_t``, ``seq`` and ``detail``, so a
flood of forged messages is one row, not a full disk. A repeat is written at most every
:attr:`AlarmLog.flush_s` seconds (the first of a kind at once), so a flood costs no fsync per
message. ``jackpot-controller alarms`` lists them and ``jackpot-controller ack-alarm``
acknowledges them with a name; acknowledged rows stay as the history.

The log file is spared the same way: :class:`LineLimiter` lets the service log the first few
alarms of a kind from a source each minute and then one line that counts the rest (issue 26:
500 forged messages in half a second were 500 log lines).

Its own connection to the ledger's database (:func:`jackpot.store.open_store`: an SQLite file
with WAL and ``synchronous=FULL``, or PostgreSQL), in its own table: a ledger transaction never
waits for an alarm, and an alarm never rolls back with a refused message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import TableControllerError
from jackpot.store import Location, Session, ledger_location, open_store

DETAIL_MAX = 500


class AlarmLogError(TableControllerError, OSError):
    """The alarm log could not be read or written; the message names the file."""


class LineLimiter:
    """At most ``burst`` log lines per key (an alarm's kind and source) in each window of
    ``window_s`` seconds from the key's first line; the rest are held back and counted, and
    :meth:`ended` gives each window that ended with lines held back, for one summary line.
    ``clock()``: monotonic seconds. The keys must be few (kinds times configured tables): a
    source an attacker chooses (a table id not in the config) belongs under one key."""

    def __init__(
        self, burst: int = 5, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if burst < 1 or window_s <= 0:
            raise ValueError(f"burst {burst} and window_s {window_s}: at least 1 line, > 0 s")
        self.burst, self.window_s, self.clock = burst, window_s, clock
        self._windows: dict[Hashable, list[float]] = {}  # key -> [start, shown, held]
        self._ended: list[tuple[Hashable, int, float]] = []

    def allow(self, key: Hashable) -> bool:
        """True: log this line; False: it is held back (and counted)."""
        now = self.clock()
        window = self._windows.get(key)
        if window is not None and now - window[0] >= self.window_s:
            self._end(key, now)
            window = None
        if window is None:
            window = self._windows[key] = [now, 0, 0]
        if window[1] < self.burst:
            window[1] += 1
            return True
        window[2] += 1
        return False

    def ended(self, *, all_windows: bool = False) -> list[tuple[Hashable, int, float]]:
        """``(key, lines held back, seconds of its window)`` for each window that ended since
        the last call with lines held back (``all_windows``: end every window now, when the
        service stops); a window that held nothing back ends quietly."""
        now = self.clock()
        for key, window in list(self._windows.items()):
            if all_windows or now - window[0] >= self.window_s:
                self._end(key, now)
        out, self._ended = self._ended, []
        return out

    def _end(self, key: Hashable, now: float) -> None:
        start, _, held = self._windows.pop(key)
        if held:
            self._ended.append((key, int(held), now - start))


@dataclass(frozen=True)
class AlarmRow:
    """One alarm as a technician reads it; ``t`` values are ms since the epoch."""

    id: int
    kind: str
    table: str | None
    first_t: int
    last_t: int
    count: int
    seq: int | None
    detail: str
    acked_by: str | None = None
    acked_t: int | None = None
    first_seq: int | None = None  # the first occurrence's, kept while repeats update the rest
    first_detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


class AlarmLog:
    """The alarms in the ledger at ``path`` (a file, or a ``postgresql://`` URL). ``clock()``
    gives ms since the epoch; ``session``: the PostgreSQL connection's name and bounds (a hot
    standby's term, as its ledger's: jackpot/leader.py)."""

    def __init__(
        self,
        path: Location,
        *,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
        flush_s: float = 2.0,
        session: Session | None = None,
    ) -> None:
        self.path: str | Path = ledger_location(path)
        self.clock = clock
        self.flush_s = flush_s
        self._pending: dict[int, tuple[int, int, Any, str]] = {}  # id -> (count+, t, seq, detail)
        self._open: dict[tuple[str, str | None], int] = {}  # (kind, table) -> id
        self._flushed = time.monotonic()
        self.opened = 0  # alarms this log opened (a repeat of an open one opens none)
        self._db = None
        self._db = open_store(path, error=AlarmLogError, session=session)
        try:
            self._db.open_alarms()
        except AlarmLogError as exc:
            self._db.close()
            raise AlarmLogError(f"cannot open the alarm log: {exc}") from None

    def close(self) -> None:
        if self._db is not None:
            self.flush()
            self._db.close()
            self._db = None

    def __enter__(self) -> AlarmLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- raising -------------------------------------------------------------------------

    def raise_alarm(self, kind: str, table: str | None, seq: Any, detail: str) -> int:
        """Record one occurrence; returns the alarm's id. A new alarm is written at once; a
        repeat of an open one is added to it at the next :meth:`flush` (due after
        ``flush_s``, and on close)."""
        now, detail = self.clock(), str(detail)[:DETAIL_MAX]
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq < 2**63:
            seq = None  # what a 64-bit integer column holds; the detail says the rest
        alarm_id = self._open.get((kind, table))
        if alarm_id is None:
            row = self._db.execute(
                "SELECT id FROM alarms WHERE acked_t IS NULL AND kind=? AND "
                + self._db.is_("table_id"),
                (kind, table),
            ).fetchone()
            alarm_id = row[0] if row else None
        if alarm_id is None:
            (alarm_id,) = self._db.execute(
                "INSERT INTO alarms (kind, table_id, first_t, last_t, count, seq, detail,"
                " first_seq, first_detail) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?) RETURNING id",
                (kind, table, now, now, seq, detail, seq, detail),
            ).fetchone()
            self.opened += 1
        else:
            count = self._pending.get(alarm_id, (0,))[0] + 1
            self._pending[alarm_id] = (count, now, seq, detail)
        self._open[(kind, table)] = alarm_id
        if time.monotonic() - self._flushed >= self.flush_s:
            self.flush()
        return alarm_id

    def flush(self) -> None:
        """Write the repeats counted since the last flush (one transaction)."""
        self._flushed = time.monotonic()
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        db = self._db
        db.begin_write()
        try:
            for alarm_id, (count, t, seq, detail) in pending.items():
                cur = db.execute(
                    "UPDATE alarms SET count=count+?, last_t=?, seq=?, detail=?"
                    " WHERE id=? AND acked_t IS NULL",
                    (count, t, seq, detail, alarm_id),
                )
                if cur.rowcount == 0:  # acknowledged meanwhile: the repeats are a new alarm
                    kind, table = db.execute(
                        "SELECT kind, table_id FROM alarms WHERE id=?", (alarm_id,)
                    ).fetchone()
                    db.execute(
                        "INSERT INTO alarms (kind, table_id, first_t, last_t, count, seq, detail,"
                        " first_seq, first_detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (kind, table, t, t, count, seq, detail, seq, detail),
                    )
                    self._open.pop((kind, table), None)
            db.commit()
        except BaseException:
            db.rollback()
            raise

    # -- reading and acknowledging -------------------------------------------------------

    def rows(self, *, include_acked: bool = False, limit: int = 200) -> list[AlarmRow]:
        """Open alarms (and with ``include_acked`` the history), newest first."""
        where = "" if include_acked else " WHERE acked_t IS NULL"
        sql = f"SELECT * FROM alarms{where} ORDER BY last_t DESC, id DESC LIMIT ?"
        return [AlarmRow(*row) for row in self._db.execute(sql, (limit,)).fetchall()]

    def open_count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM alarms WHERE acked_t IS NULL").fetchone()[0]

    def acknowledge(self, alarm_id: int, by: str) -> int:
        """Acknowledge alarm ``alarm_id`` (0: every open one) for ``by``; returns how many.
        AlarmLogError if ``by`` is empty or no such open alarm exists."""
        by = by.strip()
        if not by:
            raise AlarmLogError("say who acknowledges: --by NAME (a name or badge)")
        self.flush()
        now = self.clock()
        if alarm_id == 0:
            cur = self._db.execute(
                "UPDATE alarms SET acked_by=?, acked_t=? WHERE acked_t IS NULL", (by[:100], now)
            )
        else:
            cur = self._db.execute(
                "UPDATE alarms SET acked_by=?, acked_t=? WHERE id=? AND acked_t IS NULL",
                (by[:100], now, alarm_id),
            )
            if cur.rowcount == 0:
                raise AlarmLogError(
                    f"no open alarm {alarm_id}: list them with jackpot-controller alarms"
                )
        self._open.clear()
        return cur.rowcount
