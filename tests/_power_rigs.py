"""The power-cut runs of tests/test_power_loss.py: a table, or a jackpot controller, whose
files live on tests/powercut_fs.py's disk, cut at random disk operations or moments, checked
after each restart.

Each run returns a :class:`Report`: one line per cut (what the disk lost) and the problems
found; a run stops at its first problem (everything after would follow from it).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from mqtt_broker import CONTROLLER
from powercut_fs import PowerCutMount, sqlite_sync_off
from table_rig import ROOT, TABLE, Rig

from controller.config import load_table_config
from controller.demo.autopilot import Autopilot
from controller.demo.play import DemoError, Director, ShoeLine, Stopped
from controller.journal import Journal
from controller.journal.rotation import archives
from controller.runtime.control import ControlClient
from controller.table import Table
from controller.table.effects import Publish
from controller.table.events import parse_event

sys.path.insert(0, str(ROOT / "bench"))
from jackpot_faults import FaultRun

READY_S = 60.0
"""A table or controller that has not started after this long (on a loaded machine) failed."""


@dataclass
class Report:
    """A run's ``seed``, a line per cut (how it was chosen, what the disk lost), the figures
    at the end, the problems found."""

    seed: int
    cuts: list[str] = field(default_factory=list)
    end: str = ""
    problems: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join([f"seed {self.seed}", *self.cuts, self.end, *self.problems])


def read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def as_recovered(path: Path, into: Path) -> sqlite3.Connection:
    """The database as the disk left it after a cut, opened on a copy: the file and its hot
    journal or WAL are copied into ``into`` and opened read-write there, so SQLite rolls the
    journal back (or reads the WAL) as the restarting service will, while the disk itself
    stays as the cut left it for the service's own recovery. (A ``mode=ro`` connection cannot
    roll back a hot journal: "attempt to write a readonly database".)"""
    into.mkdir(parents=True, exist_ok=True)
    for old in into.iterdir():
        old.unlink()
    for suffix in ("", "-journal", "-wal"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            (into / f"{path.name}{suffix}").write_bytes(source.read_bytes())
    return sqlite3.connect(into / path.name, timeout=30)


def query(path: Path, sql: str, *args) -> list[tuple]:
    db = read_only(path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


# -- the table --------------------------------------------------------------------------------


class TableCuts:
    """The real table daemon with its ``data_dir`` on the power-cut disk, a seeded shoe-sim,
    an autopilot dealer (controller/demo), the real jackpot controller on a normal disk.
    ``sync_off_from``: from that cycle on (the first is 1), the daemon runs with SQLite's
    ``synchronous`` forced ``OFF``."""

    def __init__(self, tmp: Path, broker, seed: int, *, sync_off_from: int = 0) -> None:
        self.tmp = tmp
        self.seed = seed
        self.rng = random.Random(seed)
        self.sync_off_from = sync_off_from
        self.report = Report(seed)
        self.rig = Rig(tmp, broker)  # the controller (ledger on tmp), keys, config
        self.rig.shoe.kill()  # its fixed card order cannot resume a cut round: a seeded one
        self.rig.shoe.communicate()
        self.rig.procs.remove(self.rig.shoe)
        text = self.rig.config.read_text(encoding="utf-8")
        assert '"2.main" = 6\n' in text
        self.rig.config.write_text(
            text.replace('"2.main" = 6\n', '"2.main" = 6\n"2.blazing_7s" = 13\n')
        )
        self.config = load_table_config(self.rig.config)
        self.disk = PowerCutMount(tmp / "disk", self.config.data_dir, tmp / "powercut.log")
        self.journal = self.config.data_dir / "journal.sqlite"
        self.table: subprocess.Popen | None = None
        self.shoe: subprocess.Popen | None = None
        self.control: ControlClient | None = None  # the test's; the autopilot has its own
        self.director_control: ControlClient | None = None
        self.director: threading.Thread | None = None
        self.director_error: list[str] = []
        self.stop = threading.Event()
        self.cutting = threading.Event()  # the autopilot's errors from now on are the cut's
        self.events_seen = 0  # the most journal events a status of the table ever reported
        self.log = open(tmp / "director.log", "a", encoding="utf-8")  # noqa: SIM115

    # processes
    def _start(self, cycle: int) -> None:
        self.shoe = subprocess.Popen(
            [sys.executable, "-m", "drivers.shoe_sim", "--seed", str(self.seed * 1000 + cycle),
             "--link", str(self.tmp / "shoe")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
        )  # fmt: skip
        self.line = ShoeLine(self.shoe.stdin, self.shoe.stdout, lambda _text: None)
        if self.line.readline(READY_S) is None:  # the pty's path: the link exists now
            raise AssertionError("shoe-sim did not start")
        argv = [sys.executable, "-m", "controller.cli", "run", "--config", str(self.rig.config)]
        with open(self.tmp / "table.log", "ab") as log:
            self.table = subprocess.Popen(
                sqlite_sync_off(argv) if 0 < self.sync_off_from <= cycle else argv,
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
            )  # fmt: skip

    def _ready(self) -> dict | None:
        """The first status of the started table, or None (a problem is reported)."""
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.table.poll() is not None:
                self.report.problems.append(f"the table exited: {self.rig.log('table')[-3000:]}")
                return None
            try:  # a probe first: a ControlClient that cannot connect leaks its socket
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.connect(str(self.tmp / "control.sock"))
                if self.control is None:
                    self.control = ControlClient(self.tmp / "control.sock", timeout=30)
                status = self._status()
                if "journal_events" in status["status"]:  # {} until the journal is open
                    return status
                time.sleep(0.05)
            except OSError:
                if self.control is not None:
                    self.control.close()
                    self.control = None
                time.sleep(0.05)
        self.report.problems.append(f"the table never answered: {self.rig.log('table')[-3000:]}")
        return None

    def _status(self) -> dict:
        answer = self.control.request("status")
        assert answer["ok"], answer
        self.events_seen = max(self.events_seen, answer["status"].get("journal_events", 0))
        return answer

    def _play(self, cycle: int) -> None:
        rules = self.config.rules
        pilot = Autopilot(rules, self.config.settings, random.Random(f"{self.seed}:{cycle}"),
                          circles=("main", "blazing_7s"), buttons=("lockout", "next", "end_round"),
                          side_bet_chance=0.6)  # fmt: skip
        fixed = {
            circle: wager
            for circle in pilot.circles
            if isinstance(
                wager := getattr(getattr(rules.side_bets, circle, None), "wager", None), int
            )
        }
        self.director_control = ControlClient(self.tmp / "control.sock", timeout=30)
        director = Director(self.director_control, self.line, pilot, fixed=fixed,
                            decks=rules.shoe.decks, sign_log=self.tmp / "no-sign.log",
                            stop=self.stop, out=self.log)  # fmt: skip
        self.stop.clear()
        self.cutting.clear()
        self.director_error = []

        def play() -> None:
            try:
                director.play(None)
            except Stopped:
                pass
            except (DemoError, OSError) as exc:
                if not self.cutting.is_set():  # else the cut ended it (table, shoe, socket)
                    self.director_error.append(f"{type(exc).__name__}: {exc}")
            finally:  # what it saw last counts as reported
                journaled = director.status.get("status", {}).get("journal_events", 0)
                self.events_seen = max(self.events_seen, journaled)

        self.director = threading.Thread(target=play, daemon=True)
        self.director.start()

    def _rotate_later(self, after_s: float) -> None:
        """Ask for a journal rotation (``rotate-journal``) in ``after_s`` seconds."""

        def rotate() -> None:
            time.sleep(after_s)
            with contextlib.suppress(OSError, ValueError):
                client = ControlClient(self.tmp / "control.sock", timeout=30)
                try:
                    answer = client.request("rotate-journal", by="power-cut test")
                    self.log.write(f"rotate-journal: {answer}\n")
                finally:
                    client.close()

        threading.Thread(target=rotate, daemon=True).start()

    def _kill(self) -> None:
        """SIGKILL the table and the shoe (a table frozen in a disk operation dies only once
        the disk is cut: :meth:`_reap` after the cut)."""
        for proc in (self.table, self.shoe):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)

    def _reap(self) -> None:
        self._kill()
        for proc in (self.table, self.shoe):
            if proc is not None:
                proc.wait(60)
        self.stop.set()  # the director first: it may be writing to the dead shoe's stdin
        if self.director is not None:
            self.director.join(60)
            self.director = None
        for proc in (self.table, self.shoe):
            if proc is not None:
                for pipe in (proc.stdin, proc.stdout):
                    if pipe is not None:
                        # a frame still buffered for the killed shoe cannot be flushed; close()
                        # closes the descriptor all the same and then raises BrokenPipeError
                        with contextlib.suppress(BrokenPipeError):
                            pipe.close()
        for client in (self.control, self.director_control):
            if client is not None:
                client.close()
        self.control = self.director_control = None

    # checks
    def _ledger_ack(self) -> int:
        rows = query(self.rig.ledger, "SELECT acked FROM tables WHERE table_id = ?", TABLE)
        return rows[0][0] if rows else 0

    def _check_restart(self, status: dict, cut: int) -> None:
        """After a cut: the journal recovered what the table had reported and what the
        controller acknowledged."""
        st = status["status"]
        if st.get("journal_fault"):
            self.report.problems.append(f"after cut {cut}: journal fault {st['journal_fault']}")
        acked = self._ledger_ack()  # first: the journal's count can only grow after it
        written = query(self.journal, "SELECT written FROM link")[0][0]
        if st["journal_events"] < self.events_seen:
            self.report.problems.append(
                f"after cut {cut}: the journal holds {st['journal_events']} events, the table "
                f"had reported {self.events_seen} journaled: events lost"
            )
        if written < acked:
            self.report.problems.append(
                f"after cut {cut}: the jackpot controller acknowledged message {acked}, the "
                f"journal has written only {written}: acknowledged messages lost"
            )

    def _events(self) -> list[dict]:
        """Every event of the live journal and its gaming-day files, by sequence number: 1 to
        N, none missing (an archive of a rotation the cut interrupted may repeat the live
        file's first events: the same ones)."""
        by_seq: dict[int, dict] = {}
        for path in [a.path for a in archives(self.journal)] + [self.journal]:
            journal = Journal(path)
            try:
                for entry in journal.entries():
                    if by_seq.setdefault(entry.seq, entry.event) != entry.event:
                        self.report.problems.append(f"event {entry.seq} differs in {path.name}")
            finally:
                journal.close()
        if sorted(by_seq) != list(range(1, len(by_seq) + 1)):
            self.report.problems.append(f"the journal's events have gaps: {len(by_seq)} events")
        return [by_seq[seq] for seq in sorted(by_seq)]

    def _final_check(self) -> None:
        """The journal's events, replayed, make exactly the messages the ledger applied."""
        table = Table(self.config.rules, self.config.settings)
        made = [e for ev in self._events() for e in table.handle(parse_event(ev)).effects
                if isinstance(e, Publish)]  # fmt: skip
        (written, acked), *_ = query(self.journal, "SELECT written, acked FROM link")
        applied = query(self.rig.ledger, "SELECT seq, kind, key, outcome, reason FROM applied"
                        " WHERE table_id = ? ORDER BY seq", TABLE)  # fmt: skip
        alarms = query(self.rig.ledger, "SELECT kind, detail FROM alarms WHERE table_id = ?", TABLE)
        problems = self.report.problems
        if not made:
            problems.append("the session made no jackpot message: nothing was checked")
        if (written, acked) != (len(made), len(made)):
            problems.append(f"the outbox wrote {written}, acked {acked}; events made {len(made)}")
        if [s for s, *_ in applied] != list(range(1, len(applied) + 1)):
            problems.append("the ledger's sequence numbers have a gap or a duplicate")
        if [(k, key) for _s, k, key, *_ in applied] != [(p.topic, p.key) for p in made]:
            problems.append(
                f"the ledger applied {len(applied)} messages, the journal makes {len(made)}; "
                "they differ (lost or counted twice)"
            )
        refused = [(s, reason) for s, _k, _key, outcome, reason in applied if outcome != "applied"]
        if refused:
            problems.append(f"the ledger refused: {refused[:5]}")
        # a cut is a power loss: the table reports it to the center, which raises it for a
        # person (issue 28 item 4); any other alarm is a problem
        alarms = [(kind, detail) for kind, detail in alarms if kind != "event_power_loss"]
        if alarms:
            problems.append(f"the controller raised alarms for the table: {alarms[:5]}")

    # the run
    def run(self, cuts: int, *, acked_before_cut: int = 0) -> Report:
        """``cuts`` power cuts, then play on until the outbox drains and check it all.
        ``acked_before_cut``: no cut before the controller acknowledged that many more
        messages in the cycle (to make a test of the tests certain)."""
        try:
            self.disk.mount()
            for cut in range(1, cuts + 1):
                if not self._cycle(cut, acked_before_cut):
                    return self.report
            self._start(cuts + 1)
            status = self._ready()
            if status is None:
                return self.report
            self._check_restart(status, cuts)
            if self.report.problems:
                return self.report
            self._play(cuts + 1)
            self._settle()
            self._final_check()
        finally:
            self._kill()
            self.disk.close()
            self._reap()
            self.rig.stop()
            self.log.close()
        return self.report

    def _cycle(self, cut: int, acked_before_cut: int) -> bool:
        """Start the table, check what the last cut left (if it answers), play, cut: at a
        random disk operation from its start (start-up, recovery), or after it answered,
        or at a random moment. False on a problem."""
        how = self.rng.choices(("start-up", "operation", "clock"), (2, 5, 3))[0]
        if acked_before_cut:
            how = "clock"
        if how == "start-up":  # at most about as many as a start-up and recovery make
            self.disk.arm(self.rng.randint(1, 100))
        self._start(cut)
        if how == "start-up":
            self.disk.wait_frozen(5.0)
        else:
            status = self._ready()
            if status is None:
                return False
            if cut > 1:
                self._check_restart(status, cut - 1)
                if self.report.problems:
                    return False
            if how == "operation":
                self.disk.arm(self.rng.randint(1, 1500))
            acked = self._ledger_ack()
            if acked_before_cut:
                # past what the journal had written when this cycle began: on restart the
                # table sends again what the last cut left unacknowledged, and an ack of one
                # of those is of a message the disk still holds (CI, 2026-11-29: the test of
                # the tests then saw only the lost events)
                began = query(self.journal, "SELECT written FROM link")[0][0]
                acked = max(acked, began) + acked_before_cut
            self._play(cut)
            if self.rng.random() < 0.5:  # a gaming-day file now, or when the round settles
                self._rotate_later(self.rng.uniform(0.0, 3.0))
            if how == "operation":
                self.disk.wait_frozen(15.0)
            else:
                time.sleep(self.rng.uniform(0.2, 5.0))
            deadline = time.monotonic() + READY_S
            while self._ledger_ack() < acked and time.monotonic() < deadline:
                time.sleep(0.05)
            if acked_before_cut and self._ledger_ack() < acked:
                self.report.problems.append(
                    f"cycle {cut}: the controller had not acknowledged message {acked} after "
                    f"{READY_S:.0f} s: the cut would test nothing"
                )
        self.cutting.set()
        self._kill()
        torn = self.rng.random() < 0.5 and not self.sync_off_from  # a test of the tests: drop
        said = self.disk.cut(torn, self.rng.randrange(1 << 30))
        frozen = self.disk.frozen
        self.report.cuts.append(f"{how}: {frozen + '; ' if frozen else ''}{said}")
        self._reap()
        if self.director_error:
            self.report.problems.append(f"the autopilot stopped: {self.director_error[0]}")
            return False
        self.disk.mount()
        return True

    def _settle(self) -> None:
        """Play on to a settled round, then let the outbox drain; stop the table cleanly."""
        deadline = time.monotonic() + 120
        settled = False
        while time.monotonic() < deadline and not self.director_error:
            status = self._status()["status"]
            settled = settled or status["snapshot"]["phase"] == "settled"
            if settled and status["snapshot"]["phase"] == "betting":
                break
            time.sleep(0.1)
        self.stop.set()
        self.director.join(30)
        if self.director_error:
            self.report.problems.append(f"the autopilot stopped: {self.director_error[0]}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            written, acked = query(self.journal, "SELECT written, acked FROM link")[0]
            if written == acked == self._ledger_ack():
                break
            time.sleep(0.1)
        self.control.close()
        self.control = None
        self.table.send_signal(signal.SIGTERM)
        self.table.wait(30)


# -- the jackpot controller -------------------------------------------------------------------


class LedgerRun(FaultRun):
    """bench/jackpot_faults.py's run with the controller's ledger at ``ledger`` (on the
    power-cut disk); ``sync_off``: the controller runs with SQLite's ``synchronous`` OFF."""

    def __init__(self, workdir: Path, seed: int, ledger: Path, **kw) -> None:
        super().__init__(workdir, seed, **kw)
        self.ledger = self.ledger_location = ledger
        self.sync_off = False

    def start_service(self, port: int | None = None) -> None:
        argv = [sys.executable, str(ROOT / "bench" / "jackpot_faults.py"), "--child-service",
                self.config_path, self.ledger, self.proxy.port if port is None else port,
                self._pwfile(CONTROLLER), self.keys.controller_file]  # fmt: skip
        argv = [str(a) for a in argv]
        with open(self.workdir / "children.log", "ab") as log:
            self.service = subprocess.Popen(
                sqlite_sync_off(argv) if self.sync_off else argv,
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )  # fmt: skip


class LedgerCuts:
    """The jackpot controller with its SQLite ledger on the power-cut disk, two table
    processes (journals on a normal disk) feeding it through Mosquitto; power cuts of the
    controller at random disk operations or moments. ``sync_off_from``: from that cycle on
    (the first is 1), the controller runs with SQLite's ``synchronous`` forced ``OFF``."""

    def __init__(self, tmp: Path, seed: int, cuts: int, *, sync_off_from: int = 0) -> None:
        self.rng = random.Random(seed)
        self.report = Report(seed)
        self.disk = PowerCutMount(tmp / "disk", tmp / "mnt", tmp / "powercut.log")
        self.cuts = cuts
        self.sync_off_from = sync_off_from
        self.run_ = LedgerRun(tmp, seed, tmp / "mnt" / "ledger.db",
                              tables=2, rounds=8 + 6 * cuts, pace_ms=10)  # fmt: skip

    def run(self, *, acked_before_cut: int = 0) -> Report:
        run, sync_off_from = self.run_, self.sync_off_from
        try:
            self.disk.mount()
            run.sync_off = sync_off_from == 1
            run.start()
            for cut in range(1, self.cuts + 1):
                self._cut(cut, acked_before_cut)
                if self.report.problems:
                    return self.report
            if not run.quiesce(READY_S * 2 + 2 * run.rounds):  # the tables feed on, then drain
                self.report.problems += run.problems
                return self.report
            run.close()
            fig = run.check()  # the tables' journals against the ledger (on the disk)
            self.report.end = f"at the end: {fig.line()}"
            if fig.problems or fig.lost or fig.duplicated or not fig.sent:
                self.report.problems += [fig.line(), *fig.problems]
        finally:
            run.close()
            self.disk.close()
        return self.report

    def _acked(self) -> dict[str, int]:
        """What each table was told the controller applied (its outbox's acknowledged)."""
        return {t: max(0, self.run_._state(t)[3]) for t in self.run_.tables}

    def _cut(self, cut: int, acked_before_cut: int) -> None:
        """Cut at a random disk operation of the controller (from its start), or at a random
        moment in its start-up, or once it applies messages again."""
        run = self.run_
        how = self.rng.choices(("operation", "start-up", "clock"), (5, 2, 3))[0]
        if acked_before_cut:
            how = "clock"
        if how == "operation":
            self.disk.arm(self.rng.randint(1, 300))
            self.disk.wait_frozen(15.0)
        elif how == "start-up":
            time.sleep(self.rng.uniform(0.0, 2.0))
        else:  # once it applies messages again (or that many more)
            wanted = sum(self._acked().values()) + max(1, acked_before_cut)
            deadline = time.monotonic() + READY_S
            while time.monotonic() < deadline and sum(self._acked().values()) < wanted:
                time.sleep(0.05)
            time.sleep(self.rng.uniform(0.0, 1.0))
        run.service.send_signal(signal.SIGKILL)
        torn = self.rng.random() < 0.5 and not self.sync_off_from  # a test of the tests: drop
        said = self.disk.cut(torn, self.rng.randrange(1 << 30))
        frozen = self.disk.frozen
        self.report.cuts.append(f"{how}: {frozen + '; ' if frozen else ''}{said}")
        run.service.wait(60)
        run.faults["power"] = run.faults.get("power", 0) + 1
        self.disk.mount()
        self._check(cut, self._acked())
        run.sync_off = 0 < self.sync_off_from <= cut + 1
        run.start_service()

    def _check(self, cut: int, told: dict[str, int]) -> None:
        """Every message a table was acknowledged is in the ledger; each meter is the sum of
        its movements."""
        problems = self.report.problems
        ledger = self.run_.ledger
        db = as_recovered(ledger, ledger.parent.parent / "after-cut") if ledger.exists() else None
        made = (
            db is not None
            and db.execute("SELECT 1 FROM sqlite_master WHERE name = 'applied'").fetchall()
        )
        if not made:  # cut before its first commit: fine if nothing was acknowledged
            if db is not None:
                db.close()
            if any(told.values()):
                problems.append(f"after cut {cut}: no ledger; the tables were told {told}")
            return
        try:
            for table, acked in told.items():
                row = db.execute("SELECT acked FROM tables WHERE table_id = ?", (table,)).fetchone()
                (applied,) = db.execute(
                    "SELECT count(DISTINCT seq) FROM applied WHERE table_id = ? AND seq <= ?",
                    (table, acked),
                ).fetchone()
                if (row[0] if row else 0) < acked or applied != acked:
                    problems.append(
                        f"after cut {cut}: {table} was acknowledged message {acked}; the ledger "
                        f"has {applied} of them (acked {row[0] if row else 0}): lost"
                    )
            moves: dict[str, Fraction] = {}
            for pool, what, amount in db.execute("SELECT pool, what, amount FROM movements"):
                if what != "excess":
                    moves[pool] = moves.get(pool, Fraction(0)) + Fraction(amount)
            for pool, value in db.execute("SELECT pool, value FROM meters"):
                if Fraction(value) != moves.get(pool, Fraction(0)):
                    problems.append(f"after cut {cut}: meter {pool} {value} != its movements")
        finally:
            db.close()
