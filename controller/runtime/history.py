"""The table's history for the diagnostics page's charts: a small time-series store on disk.

The daemon keeps ``data_dir/history.sqlite`` beside the journal (:data:`HISTORY_NAME`),
opened like the journal: WAL, ``synchronous = FULL``, so a sample is on disk when its
commit returns and a restart (or a power cut) keeps the history. A
:class:`HistoryRecorder` thread adds one **sample** a minute (:data:`EVERY_S`), and one
soon after a round settles (at most every :data:`AFTER_ROUND_S`), so a short run still
draws, and one when the jackpot link goes down or comes back (a short outage shows);
samples older than :data:`KEEP_HOURS` are deleted in the same transaction, so the
file stays small (a day of one sample a minute is about 1,440 rows).

A sample holds **cumulative** counts since the store began (rounds, cards, shoe errors and
reconnects, and per side bet the wagers, hits, stakes, the players' net and the sum of the
squared stakes), and **gauges** as they were at that moment (jackpot link up, broker
connection, outbox depth, progressive meters when the table knows them). Rates (cards and
rounds per hour) and the side bets' hit frequency and hold are differences and ratios of
those, so any sample can be dropped when a long period is drawn with few points
(:func:`series`), and none is lost by a restart.

The rounds are read from the journal (:class:`~controller.journal.library.JournalLibrary`,
read-only, its own connections) by round number: each settled round is counted once, in
the same transaction that records the last round counted, however the daemon stops. A new
store starts counting at the journal's last settled round (no backfill of old rounds).

Side bets and the main game are compared with their par (the exact par sheet, computed
once on the recorder's thread, :func:`par_figures`); the bands and the lines a page
draws from the samples (:func:`series`) are pure, in
:mod:`controller.runtime.history_series`, and re-exported here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from controller.runtime.history_series import (
    MAIN_NOTE,
    MAX_POINTS,
    Z95,
    _bet_lines,
    _inside,
    _rate,
    _steps,
    _thin,
    _title,
    main_lines,
    par_band,
    par_figures,
    series,
    wilson,
)

# The pure lines and bands moved to history_series; every name is still importable here.
__all__ = [
    "MAIN_NOTE",
    "MAX_POINTS",
    "Z95",
    "_bet_lines",
    "_inside",
    "_rate",
    "_steps",
    "_thin",
    "_title",
    "main_lines",
    "par_band",
    "par_figures",
    "series",
    "wilson",
]

log = logging.getLogger("table-controller.history")

HISTORY_NAME = "history.sqlite"
"""The store's file, in the table's ``data_dir`` beside the journal."""
EVERY_S = 60.0
"""One sample this often, round or not."""
PAR_AFTER_S = 120.0
"""Seconds after the start when the par sheet is computed if no page asked for it first."""
AFTER_ROUND_S = 5.0
"""A sample soon after a round settles, but not more often than this."""
KEEP_HOURS = 72.0
"""Samples older than this are deleted (three days: a weekend's shifts)."""
LINK_CHANGE_S = 1.0
"""A sample when the jackpot link goes down or comes back, at most this often."""
CATCH_UP_ROUNDS = 2000
"""At most this many journal rounds are counted in one sample (the rest at the next)."""
SCHEMA = 1
NOT_SIDE_BETS = frozenset({"main", "double_down", "double_up", "insurance", "even_money"})
PAR_CACHE_ENV = "TABLE_CONTROLLER_PAR_CACHE"
"""A folder of par figures shared by every daemon on the machine (:func:`shared_par`): a
new ``data_dir`` (a demo's, a history moved aside) reads them instead of computing them."""


# -- the store ---------------------------------------------------------------------------


class HistoryError(Exception):
    """The history file cannot be opened or written (the table plays on without it)."""


def _connect(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.absolute()))}?mode=rwc"
    try:
        db = sqlite3.connect(
            uri, uri=True, isolation_level=None, timeout=5.0, check_same_thread=False
        )
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        db.execute("PRAGMA synchronous = FULL")
    except sqlite3.Error as exc:
        raise HistoryError(
            f"cannot open the history {path}: {exc}; check that data_dir is writable"
        ) from None
    if str(mode).lower() != "wal":
        db.close()
        raise HistoryError(f"history {path}: the file system does not support WAL mode")
    return db


class HistoryStore:
    """The samples on disk. Any thread (one connection behind a lock); :meth:`add` writes a
    sample and the running totals in one transaction and deletes what is older than
    ``keep_hours``."""

    def __init__(self, path: str | Path, *, keep_hours: float = KEEP_HOURS):
        self.path = Path(path)
        self.keep_ms = int(keep_hours * 3_600_000)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = _connect(self.path)
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA:
                raise HistoryError(
                    f"history {self.path} was written by newer software (schema {version}); "
                    "move it aside to start a new one"
                )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS samples (utc_ms INTEGER PRIMARY KEY, data TEXT "
                "NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 1), "
                "data TEXT NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS par (key TEXT PRIMARY KEY, data TEXT NOT NULL)"
            )
            self._db.execute(f"PRAGMA user_version = {SCHEMA}")
        except sqlite3.Error as exc:
            self.close()
            raise HistoryError(f"history {self.path} cannot be read: {exc}") from None
        except HistoryError:
            self.close()
            raise

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise HistoryError(f"history {self.path} is closed")
        return self._db

    def totals(self) -> dict[str, Any] | None:
        """The running totals of the last sample (None: a new store)."""
        with self._lock:
            row = self.db.execute("SELECT data FROM totals WHERE id = 1").fetchone()
        return json.loads(row[0]) if row else None

    def add(self, utc_ms: int, sample: dict[str, Any]) -> None:
        """Write ``sample`` (cumulative counts and gauges) at ``utc_ms``: on disk when this
        returns. A second sample in the same millisecond replaces the first."""
        text = json.dumps(sample, separators=(",", ":"), sort_keys=True)
        with self._lock:
            db = self.db
            try:
                db.execute("BEGIN IMMEDIATE")
                db.execute("INSERT OR REPLACE INTO samples VALUES (?, ?)", (int(utc_ms), text))
                db.execute("INSERT OR REPLACE INTO totals VALUES (1, ?)", (text,))
                db.execute("DELETE FROM samples WHERE utc_ms < ?", (int(utc_ms) - self.keep_ms,))
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise HistoryError(f"history {self.path} not written: {exc}") from None

    def samples(self, since_ms: int | None = None) -> list[tuple[int, dict[str, Any]]]:
        """The samples from ``since_ms`` (UTC ms; None: all kept), oldest first."""
        with self._lock:
            rows = self.db.execute(
                "SELECT utc_ms, data FROM samples WHERE utc_ms >= ? ORDER BY utc_ms",
                (since_ms or 0,),
            ).fetchall()
        return [(int(t), json.loads(data)) for t, data in rows]

    def par(self, key: str) -> dict[str, Any] | None:
        """The par figures kept for the game whose rules hash to ``key`` (None: none)."""
        with self._lock:
            row = self.db.execute("SELECT data FROM par WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def keep_par(self, key: str, figures: dict[str, Any]) -> None:
        """Keep the par figures of a game (computing them takes seconds of CPU on a Pi),
        replacing those of another game: one kept per kind, a key ``kind:...`` (the main
        game's edge: ``main:``) replacing only keys of its kind, a key without one (the
        side bets' par sheet) only keys without one."""
        kind, colon, _rest = key.partition(":")
        with self._lock:
            if colon:
                self.db.execute(
                    "DELETE FROM par WHERE substr(key, 1, ?) = ?", (len(kind) + 1, kind + ":")
                )
            else:
                self.db.execute("DELETE FROM par WHERE instr(key, ':') = 0")
            self.db.execute("INSERT INTO par VALUES (?, ?)", (key, json.dumps(figures)))

    def count(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT count(*) FROM samples").fetchone()[0])

    def close(self) -> None:
        """Safe twice."""
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            db.close()


def shared_par(key: str) -> dict[str, Any] | None:
    """The figures of ``key`` (a :meth:`HistoryStore.keep_par` key) in the folder
    ``$TABLE_CONTROLLER_PAR_CACHE`` names, one ``<key>.json`` per rules' SHA-256 (None: no
    folder, no file, or one that does not read as a JSON object: computed again)."""
    folder = os.environ.get(PAR_CACHE_ENV)
    if not folder:
        return None
    try:
        figures = json.loads((Path(folder) / f"{key.replace(':', '-')}.json").read_text())
    except (OSError, ValueError):
        return None
    return figures if isinstance(figures, dict) else None


def share_par(key: str, figures: dict[str, Any]) -> None:
    """Write ``figures`` where :func:`shared_par` reads them, whole or not at all (a file
    renamed into place); a folder that cannot be written is logged, and only costs time."""
    folder = os.environ.get(PAR_CACHE_ENV)
    if not folder:
        return
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".par-")
        with os.fdopen(fd, "w") as out:
            json.dump(figures, out)
        os.replace(tmp, Path(folder) / f"{key.replace(':', '-')}.json")
    except OSError as exc:
        log.warning("history: par figures not shared in %s: %s", folder, exc)


def kept_par(
    store: HistoryStore, key: str, compute: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """The figures of ``key``: from the store, else the shared folder (:func:`shared_par`),
    else ``compute()`` (then shared); kept in the store either way."""
    kept = store.par(key)
    if kept is None:
        kept = shared_par(key)
        if kept is None:
            kept = compute()
            share_par(key, kept)
        store.keep_par(key, kept)
    return kept


# -- counting rounds -------------------------------------------------------------------------


def new_totals(last_round: int = 0) -> dict[str, Any]:
    """The running totals of a new store that starts counting after ``last_round``."""
    return {
        "round": last_round,
        "rounds": 0,
        "cards": 0,
        "shoe_errors": 0,
        "shoe_reconnects": 0,
        "bets": {},
        "pools": {},
        "main": new_main_tally(),
    }


def new_main_tally() -> dict[str, int]:
    """The main game's running tally: ``n`` initial wagers, their ``stake`` (cents), the
    players' ``net`` over the main game's wagers (cents) and ``s2``, the sum of the squared
    initial stakes (for the band's effective number of wagers)."""
    return {"n": 0, "stake": 0, "net": 0, "s2": 0}


def side_bet_of(wager: str) -> str | None:
    """The side bet a settled wager belongs to (None: the main game's wagers)."""
    if wager in NOT_SIDE_BETS:
        return None
    return wager.split(".", 1)[0]


def count_round(totals: dict[str, Any], record: dict[str, Any]) -> None:
    """Add a settled round's record (the journal's) to ``totals``, in place: the round,
    its cards, the main game's initial wagers and net (:func:`controller.report.main_game_of`,
    as the day's report counts them), each side bet's wagers (hits: won; stakes; the
    players' net; squared stakes) and the stakes each progressive pool was fed (the
    round's contributions)."""
    from controller.report import main_game_of

    totals["round"] = max(int(totals.get("round") or 0), int(record["round"]))
    if record.get("void"):
        return
    totals["rounds"] += 1
    _hands, initial, net = main_game_of(record)
    main = totals.setdefault("main", new_main_tally())  # a store from before it was counted
    main["n"] += len(initial)
    main["stake"] += sum(initial.values())
    main["net"] += net
    main["s2"] += sum(stake * stake for stake in initial.values())
    events = record.get("events") or []
    totals["cards"] += sum(1 for e in events if isinstance(e, dict) and e.get("type") == "card")
    bets = totals["bets"]
    for line in (record.get("result") or {}).get("settlements") or []:
        bet = side_bet_of(str(line.get("wager")))
        stake = int(line.get("stake") or 0)
        if bet is None or stake <= 0:
            continue
        tally = bets.setdefault(bet, {"n": 0, "hits": 0, "stake": 0, "net": 0, "s2": 0})
        tally["n"] += 1
        tally["hits"] += line.get("outcome") == "win"
        tally["stake"] += stake
        tally["net"] += int(line.get("paid") or 0) + int(line.get("returned") or 0) - stake
        tally["s2"] += stake * stake
    pools = totals["pools"]
    for effect in record.get("effects") or []:
        if effect.get("effect") != "publish" or effect.get("topic") != "contribution":
            continue
        payload = effect.get("payload") or {}
        stake = int(payload.get("stake") or 0)
        for pool in [payload.get("pool"), "mystery" if payload.get("mystery") else None]:
            if pool:
                pools[pool] = pools.get(pool, 0) + stake


# -- the recorder ------------------------------------------------------------------------


class HistoryRecorder:
    """Adds samples to ``store`` on its own thread until :meth:`close`.

    ``now()`` gives the gauges and live counters at this moment: ``round`` (the table's
    round number) and ``phase``, ``link_up``, ``connected``, ``outbox``, ``shoe`` (the
    shoe's health or None) and ``meters`` (pool -> cents, when known). ``library`` reads
    the settled rounds; ``rules``: the game, for its par sheet; ``utc()``: UTC ms."""

    def __init__(
        self,
        store: HistoryStore,
        library: Any,
        now: Callable[[], dict[str, Any]],
        *,
        rules: Any = None,
        utc: Callable[[], int] | None = None,
        every_s: float = EVERY_S,
        after_round_s: float = AFTER_ROUND_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.store = store
        self.library = library
        self._now = now
        self._rules = rules
        self._utc = utc or (lambda: time.time_ns() // 1_000_000)
        self.every_s = every_s
        self.after_round_s = after_round_s
        self._clock = clock
        self.par: dict[str, dict[str, Any]] | None = None
        self.par_problem: str | None = None
        self.main_edge: float | None = None
        self.main_edge_problem: str | None = None
        self._main_done = threading.Event()  # the main game's edge computed, read or failed
        self._main_thread: threading.Thread | None = None  # when no recorder thread runs
        self._par_wanted = threading.Event()  # a page asked for the charts
        self._par_done = threading.Event()  # computed, read from the store, or failed
        self.problem: str | None = None
        self.samples_written = 0
        self._seen_shoe = (0, 0)  # this process's shoe errors and reconnects counted so far
        self._last_sample: float | None = None
        self._last_round_key: tuple[Any, Any] | None = None
        self._round_pending = False
        self._last_link: tuple[int | None, int | None] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="history", daemon=True)

    def start(self) -> HistoryRecorder:
        """The first sample now, on the caller's thread (a new store starts counting at the
        round the journal holds now, before the table plays another), then the thread."""
        self.poll()
        self._thread.start()
        return self

    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread (after a last sample). Safe twice."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    # -- the thread --------------------------------------------------------------------

    def want_par(self, timeout: float) -> bool:
        """Ask for the par figures (the charts need them) and wait up to ``timeout`` s for
        them; True once they are known (or known to be missing: ``par_problem``)."""
        self._par_wanted.set()
        if not self._thread.is_alive():
            if not self._main_done.is_set() and self._main_thread is None:
                # the main game's edge never on the asker's path: a thread of its own
                self._main_thread = threading.Thread(
                    target=self._compute_main_edge, name="history-main-edge", daemon=True
                )
                self._main_thread.start()
            if not self._par_done.is_set():
                self._compute_par()  # no thread to do it (stopped, or never started): here
        return self._par_done.wait(timeout)

    def wait_main_edge(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the main game's basic-strategy edge (tests and
        tools; a page never waits: it says the reference is being computed)."""
        return self._main_done.wait(timeout)

    def _run(self) -> None:
        started = self._clock()
        while not self._stop.is_set():
            self.poll()
            # the par sheet takes seconds of CPU (more on a Pi): not at every start beside
            # the table's loop, but when a page first asks, or once the table has run a while
            if not self._par_done.is_set() and (
                self._par_wanted.is_set() or self._clock() - started >= PAR_AFTER_S
            ):
                self._compute_par()
            # then the main game's basic-strategy edge (2-5 s of CPU here), on this thread:
            # the page asking for the charts gets them at once, the reference line later
            elif self._par_done.is_set() and not self._main_done.is_set():
                self._compute_main_edge()
            asked = self._par_wanted.is_set() and not self._main_done.is_set()
            self._stop.wait(0.05 if asked else 0.5)
        self.sample()  # what the last minute saw

    def _compute_par(self) -> None:
        """The game's par figures: kept in the store for the rules they were computed for
        (a restart does not compute them again: seconds of CPU beside the table's loop)."""
        if self._rules is None:
            self._par_done.set()
            return
        try:
            import hashlib

            from controller.parsheet import compute_par_sheet

            key = hashlib.sha256(repr(self._rules).encode()).hexdigest()
            self.par = kept_par(
                self.store, key, lambda: par_figures(compute_par_sheet(self._rules))
            )
        except Exception as exc:  # the charts then show what was seen, without par
            self.par_problem = f"no par sheet: {exc}"
            log.exception("history: the par sheet could not be computed")
        finally:
            self._par_done.set()

    def _compute_main_edge(self) -> None:
        """The main game's basic-strategy house edge (:func:`controller.rules.ev.
        basic_strategy_edge`): the reference line of its hold, kept in the store for the
        rules it was computed for, so a restart does not compute it again."""
        if self._rules is None:
            self._main_done.set()
            return
        try:
            import hashlib

            from controller.rules.ev import basic_strategy_edge

            key = "main:" + hashlib.sha256(repr(self._rules).encode()).hexdigest()
            kept = kept_par(
                self.store, key, lambda: {"edge": float(basic_strategy_edge(self._rules))}
            )
            self.main_edge = float(kept["edge"])
        except Exception as exc:  # the chart then shows the hold seen, without a reference
            self.main_edge_problem = f"basic-strategy edge not computed: {exc}"
            log.exception("history: the main game's basic-strategy edge could not be computed")
        finally:
            self._main_done.set()

    def poll(self) -> bool:
        """Take a sample if one is due (a minute since the last, or a round settled and
        :attr:`after_round_s` passed); True if one was written."""
        now = self._clock()
        try:
            live = self._now()
        except Exception:
            log.exception("history: the table's figures could not be read")
            return False
        key = (live.get("round"), live.get("phase"))
        if key != self._last_round_key:
            if self._last_round_key is not None:
                self._round_pending = True
            self._last_round_key = key
        since = None if self._last_sample is None else now - self._last_sample
        due = since is None or since >= self.every_s
        due = due or (self._round_pending and since >= self.after_round_s)
        # the link going down or coming back is a point of its own: an outage shorter than
        # a minute still shows (at most one such point a second)
        link = (_flag(live.get("link_up")), _flag(live.get("connected")))
        due = due or (link != self._last_link and since >= LINK_CHANGE_S)
        return self.sample(live) if due else False

    def sample(self, live: dict[str, Any] | None = None) -> bool:
        """Count the rounds settled since the last sample and write one now; True if
        written (a problem is logged once, kept in :attr:`problem`, and tried again)."""
        self._last_sample = self._clock()
        self._round_pending = False
        try:
            live = live if live is not None else self._now()
            totals = self.store.totals()
            if totals is None:
                last = self.library.last_rounds(1)
                totals = new_totals(last[0].number if last else 0)
            for found in self.library.rounds_after(int(totals["round"]), CATCH_UP_ROUNDS):
                count_round(totals, found.record)
            shoe = live.get("shoe") or {}
            errors = sum(int(v) for v in (shoe.get("errors") or {}).values())
            reconnects = int(shoe.get("reconnects") or 0)
            seen_errors, seen_reconnects = self._seen_shoe
            totals["shoe_errors"] += errors - seen_errors if errors >= seen_errors else errors
            totals["shoe_reconnects"] += (
                reconnects - seen_reconnects if reconnects >= seen_reconnects else reconnects
            )
            sample = {
                **totals,
                "link_up": _flag(live.get("link_up")),
                "connected": _flag(live.get("connected")),
                "outbox": live.get("outbox"),
                "meters": dict(live.get("meters") or {}),
            }
            self.store.add(self._utc(), sample)
            self._seen_shoe = (errors, reconnects)
            self._last_link = (sample["link_up"], sample["connected"])
        except Exception as exc:
            text = str(exc) or type(exc).__name__
            if text != self.problem:
                log.error("history: sample not recorded: %s (the table plays on)", text)
            self.problem = text
            return False
        if self.problem is not None:
            log.info("history: samples recorded again")
        self.problem = None
        self.samples_written += 1
        return True

    def state(self) -> dict[str, Any]:
        return {
            "file": str(self.store.path),
            "every_s": self.every_s,
            "keep_hours": self.store.keep_ms / 3_600_000,
            "samples_written": self.samples_written,
            "problem": self.problem,
            "par_problem": self.par_problem,
            "main_edge_problem": self.main_edge_problem,
        }


def _flag(value: Any) -> int | None:
    return None if value is None else int(bool(value))
