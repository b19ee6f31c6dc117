"""A randomized fault run of the jackpot link; prints ``sent=N applied=N lost=N duplicated=N``.

Real processes: a Mosquitto (tests/mqtt_broker.py, persistence on), a TCP proxy in front of it
(tests/tcp_proxy.py), the jackpot controller as a child process, and one child process per
table that plays a seeded Blazing 7's session into its journal (``JournaledTable``, whose
outbox rows are written in the journal's transactions) while its ``TablePublisher`` sends
them through the proxy. At random moments (seeded): ``kill -9`` the broker (restarted on the
same port from what it had saved), the controller, a table process (restarted: it recovers
its journal and goes on), a cut of every connection, or a network outage (the proxy refuses
connections for a while). Once quiet, :meth:`FaultRun.check` compares the tables' journals
(every publish their steps made, replayed from the journal) with the ledger. Every message is
signed end to end as in production: the controller and each table have their own Ed25519 key,
made in the work folder (bench/_link_keys.py); the jackpot config lists the tables' keys.

    .venv/bin/python bench/jackpot_faults.py [--quick] [--seed N] [--faults N] [--rounds N]
    .venv/bin/python bench/jackpot_faults.py --quick --ha

``--ha`` (:class:`HaFaultRun`): the PostgreSQL ledger (a server of its own, tests/pg_server.py)
and two ``jackpot-controller`` processes (users ``jackpot-controller`` and
``jackpot-controller-b``, ``[ha]`` names ``a`` and ``b``) electing the active one through it
(jackpot/leader.py); the faults are ``kill -9`` of the active controller (restarted as a
standby), a pause of it (SIGSTOP for twice the lease, then SIGCONT: it wakes fenced), the loss
of every controller's database connection (``pg_terminate_backend``), the broker and a table.
The last line adds ``failovers=`` (takeovers by another controller) and ``max_failover_ms=``
(from the fault until the new leader's first commit, its boot counter, by the database).

Exit 1 if anything was lost or counted twice, or an invariant failed. The test
tests/test_jackpot_faults.py runs the same machinery at CI size.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import random
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
for _p in (str(ROOT), str(TESTS)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _journal_feeder import SETTINGS, consumed, session_events  # noqa: E402
from _link_keys import CONTROLLER_KID, BenchKeys, make_keys, table_kid  # noqa: E402
from mqtt_broker import CONTROLLER, TABLES, MosquittoBroker  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

from controller.errors import JournalError  # noqa: E402
from controller.games import load_game  # noqa: E402
from controller.journal import Journal, JournaledTable  # noqa: E402
from controller.journal.outbox import Outbox  # noqa: E402
from controller.table import Table  # noqa: E402
from controller.table.effects import Publish  # noqa: E402
from jackpot.ledger import Ledger  # noqa: E402
from jackpot.pools import contribution, load_config  # noqa: E402

GAME = "pa-standard"
EXAMPLE = ROOT / "config" / "jackpot.example.toml"
FAULTS = ("broker", "service", "table", "cut", "outage")
#: --ha: kill -9 and pause the active controller, cut the database, the broker, a table.
HA_FAULTS = ("kill", "pause", "db", "broker", "table")
HA_USERS = {"a": CONTROLLER, "b": "jackpot-controller-b"}
BACKOFF = (0.05, 0.5)


# -- the child processes ----------------------------------------------------------------------


def _stop_on_sigterm() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


def table_child(journal: str, table: str, port: int, pwfile: str, seed: int, rounds: int,
                pace_ms: float, keyfile: str, controller_key: str) -> int:  # fmt: skip
    """Play the session into ``journal`` (recovering what an earlier run journaled) while a
    TablePublisher sends the outbox, signed with ``keyfile``, trusting ``controller_key`` (the
    controller's public key); write ``journal.done`` when fed; stop on SIGTERM."""
    from controller.link.publisher import TablePublisher
    from controller.link.signing import Signer, Verifier, load_signing_key, parse_public_key

    stop = _stop_on_sigterm()
    password = Path(pwfile).read_text(encoding="utf-8").strip()
    signer = Signer(table_kid(table), load_signing_key(keyfile))
    verifier = Verifier({CONTROLLER_KID: parse_public_key(controller_key)})
    events = session_events(GAME, seed, rounds)
    with JournaledTable(journal, load_game(GAME), SETTINGS) as t:
        start = consumed(events, GAME, t.recovered)
        pub = TablePublisher(journal, table, "127.0.0.1", port, table, password, signer=signer,
                             verifier=verifier, backoff=BACKOFF, window=20)  # fmt: skip
        try:
            for event in events[start:]:
                if stop.is_set():
                    return 0
                t.handle(event)
                if pace_ms:
                    time.sleep(pace_ms / 1000)
            Path(journal + ".done").write_text("done\n", encoding="utf-8")
            while not stop.wait(0.2):
                pass
        finally:
            pub.close()
    return 0


def service_child(config: str, ledger: str, port: int, pwfile: str, keyfile: str) -> int:
    """The jackpot controller (as ``jackpot-controller`` runs it, with a short backoff),
    signing with ``keyfile``."""
    from controller.link.signing import Signer, load_signing_key
    from jackpot.service import JackpotService

    stop = _stop_on_sigterm()
    password = Path(pwfile).read_text(encoding="utf-8").strip()
    signer = Signer(CONTROLLER_KID, load_signing_key(keyfile))
    svc = JackpotService(load_config(config), ledger, "127.0.0.1", port, CONTROLLER, password,
                         signer=signer, backoff=BACKOFF, meter_rate=4,
                         freeze_heap=True)  # fmt: skip
    try:
        while not stop.wait(0.2):
            pass
    finally:
        svc.close()
    return 0


# -- the run ------------------------------------------------------------------------------------


@dataclass
class Figures:
    sent: int = 0
    applied: int = 0
    lost: int = 0
    duplicated: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    failovers: int | None = None  # --ha only
    failover_ms: list[int] = field(default_factory=list)

    def line(self) -> str:
        line = (
            f"sent={self.sent} applied={self.applied} lost={self.lost} duplicated={self.duplicated}"
        )
        if self.failovers is not None:
            worst = max(self.failover_ms, default=0)
            line += f" failovers={self.failovers} max_failover_ms={worst}"
        return line


def write_config(path: Path, tables: tuple[str, ...], keys: BenchKeys) -> Path:
    """The example config with the test broker's tables all listed under their property, each
    with its public key."""
    text = EXAMPLE.read_text(encoding="utf-8")
    extra = [t for t in tables if f'"{t}"' not in text]
    if extra:
        listed = ", ".join(f'"{t}"' for t in extra)
        text = text.replace('"hcm-bj-07"]', f'"hcm-bj-07", {listed}]', 1)
    path.write_text(text + keys.jackpot_tables(), encoding="utf-8")
    return path


class FaultRun:
    """Broker + proxy + controller child + table children under ``workdir``."""

    def __init__(self, workdir: Path, seed: int, *, tables: int = 2, rounds: int = 20,
                 pace_ms: float = 10, log=None) -> None:  # fmt: skip
        self.workdir = workdir
        self.rng = random.Random(seed)
        self.seed = seed
        self.tables = TABLES[:tables]
        self.rounds = rounds
        self.pace_ms = pace_ms
        self.log = log or (lambda text: None)
        self.keys = make_keys(workdir / "keys", self.tables)
        # the key sealing the Mystery triggers (jackpot/draws.py), for this run's processes
        os.environ.setdefault("JACKPOT_TRIGGER_KEY", str(workdir / "keys" / "mystery-trigger.key"))
        self.config_path = write_config(workdir / "jackpot.toml", self.tables, self.keys)
        self.config = load_config(self.config_path)
        self.ledger = workdir / "ledger.db"
        self.ledger_location: Path | str = self.ledger
        self.broker = MosquittoBroker(workdir / "broker")
        self.proxy: TcpProxy | None = None
        self.service: subprocess.Popen | None = None
        self.children: dict[str, subprocess.Popen] = {}
        self.faults: dict[str, int] = {}
        self.triggers: dict[tuple[str, int], int] = {}  # (pool, cycle) -> trigger, via SQL
        self.problems: list[str] = []

    # processes
    def journal(self, table: str) -> Path:
        return self.workdir / f"{table}.journal"

    def _pwfile(self, user: str) -> Path:
        path = self.workdir / f"{user}.pw"
        path.write_text(self.broker.passwords[user] + "\n", encoding="utf-8")
        path.chmod(0o600)
        return path

    def _spawn(self, *args: object) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), *map(str, args)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=open(self.workdir / "children.log", "ab"),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    def start_service(self, port: int | None = None) -> None:
        """The controller child, through the proxy (or straight to ``port``)."""
        pw = self._pwfile(CONTROLLER)
        port = self.proxy.port if port is None else port
        self.service = self._spawn(
            "--child-service", self.config_path, self.ledger, port, pw, self.keys.controller_file
        )

    def _start_table(self, table: str, index: int) -> None:
        pw = self._pwfile(table)
        self.children[table] = self._spawn(
            "--child-table", self.journal(table), table, self.proxy.port, pw,
            self.seed * 100 + index, self.rounds, self.pace_ms, self.keys.table_file(table),
            self.keys.public["controller"],
        )  # fmt: skip

    def start(self) -> None:
        self.broker.start()
        self.proxy = TcpProxy(self.broker.host, self.broker.port)
        self.start_service()
        for i, table in enumerate(self.tables):
            self._start_table(table, i)

    def close(self) -> None:
        for proc in [self.service, *self.children.values()]:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in [self.service, *self.children.values()]:
            if proc is not None:
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self.proxy is not None:
            self.proxy.close()
        self.broker.kill()

    # faults
    def _trigger_rows(self) -> list[tuple[str, int, int]]:
        if not self.ledger.exists():
            return []
        db = sqlite3.connect(self.ledger, timeout=30)
        try:
            return db.execute("SELECT pool, commitment, cycle FROM draws").fetchall()
        finally:
            db.close()

    def read_triggers(self) -> None:
        """Record (pool, cycle) -> the trigger's commitment (SHA-256 of the trigger and its salt,
        jackpot/draws.py) by direct SQL; a cycle's trigger must never change."""
        rows = self._trigger_rows()
        for pool, trigger, cycle in rows:
            seen = self.triggers.setdefault((pool, cycle), trigger)
            if seen != trigger:
                self.problems.append(f"{pool} cycle {cycle}: trigger changed")

    def fault(self, kind: str) -> None:
        rng = self.rng
        self.faults[kind] = self.faults.get(kind, 0) + 1
        self.log(f"fault {kind}")
        if kind == "broker":
            self.broker.kill()
            time.sleep(rng.uniform(0, 0.5))
            self.broker.start()
        elif kind == "service":
            self.service.kill()
            self.service.wait()
            self.read_triggers()
            time.sleep(rng.uniform(0, 0.3))
            self.start_service()
            self.read_triggers()
        elif kind == "table":
            index = rng.randrange(len(self.tables))
            table = self.tables[index]
            self.children[table].kill()
            self.children[table].wait()
            time.sleep(rng.uniform(0, 0.3))
            self._start_table(table, index)
        elif kind == "cut":
            self.proxy.cut()
        elif kind == "outage":
            self.proxy.refuse()
            time.sleep(rng.uniform(0.1, 1.0))
            self.proxy.resume()
        else:
            raise ValueError(kind)

    def run_faults(self, count: int, gap: tuple[float, float] = (0.2, 1.0)) -> None:
        for _ in range(count):
            time.sleep(self.rng.uniform(*gap))
            self.fault(self.rng.choice(FAULTS))

    def _state(self, table: str) -> tuple[bool, int, int, int]:
        """(fed, outbox depth, last written, last acknowledged); (False, -1, -1, -1) if the
        journal is not there yet (the table process is starting)."""
        try:
            box = Outbox(self.journal(table))
        except JournalError:
            return (False, -1, -1, -1)
        try:
            return (
                Path(str(self.journal(table)) + ".done").exists(),
                box.depth(),
                box.last_written(),
                box.last_acknowledged(),
            )
        finally:
            box.close()

    def processes(self) -> list[subprocess.Popen]:
        return [self.service, *self.children.values()]

    def quiesce(self, timeout: float = 60.0) -> bool:
        """Wait until every table has fed its session and its outbox is acknowledged."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.processes():
                if proc.poll() is not None:
                    self.problems.append(
                        f"a child exited by itself: {proc.args[2]} {proc.returncode}"
                    )
                    return False
            states = [self._state(t) for t in self.tables]
            if all(
                done and depth == 0 and written == acked for done, depth, written, acked in states
            ):
                return True
            time.sleep(0.1)
        self.problems.append(f"not quiet after {timeout}s: {self.states()}")
        return False

    def states(self) -> dict[str, tuple]:
        return {t: self._state(t) for t in self.tables}

    # the check
    def publishes(self, table: str) -> list[Publish]:
        """Every publish the table's journaled steps made, in outbox order."""
        out: list[Publish] = []
        t = Table(load_game(GAME), SETTINGS)
        journal = Journal(self.journal(table))
        try:
            for event in journal.events():
                out += [e for e in t.handle(event).effects if isinstance(e, Publish)]
        finally:
            journal.close()
        return out

    def expected(self, publishes: list[Publish]) -> dict[str, Fraction]:
        out: dict[str, Fraction] = {}
        for p in publishes:
            if p.topic != "contribution":
                continue
            body = p.payload
            pools = [self.config.progressive_for(body["wager"])]
            if body["mystery"]:
                pools.append(self.config.mystery_for(body["wager"]))
            for pool in pools:
                out[pool.name] = out.get(pool.name, Fraction(0)) + contribution(pool, body["stake"])
        return out

    def check(self) -> Figures:
        """Journals vs ledger: sent, applied, lost, duplicated; problems for the rest."""
        fig = Figures(faults=dict(self.faults), problems=self.problems)
        self.read_triggers()
        with Ledger(self.ledger_location, self.config) as led:
            applied = led.applied()
            expected: dict[str, Fraction] = {}
            for table in self.tables:
                pubs = self.publishes(table)
                _fed, depth, written, acked = self._state(table)
                if written != len(pubs):
                    fig.problems.append(
                        f"{table}: outbox wrote {written}, journal made {len(pubs)}"
                    )
                if depth or acked != written or led.ack(table) != written:
                    fig.problems.append(
                        f"{table}: depth {depth} acked {acked} ledger {led.ack(table)} of {written}"
                    )
                mine = [(seq, kind) for t, seq, kind, *_ in applied if t == table]
                seqs = [s for s, _ in mine]
                fig.sent += len(pubs)
                fig.applied += len(set(seqs))
                fig.duplicated += len(seqs) - len(set(seqs))
                fig.lost += len(set(range(1, len(pubs) + 1)) - set(seqs))
                if seqs != sorted(seqs):
                    fig.problems.append(f"{table}: applied out of order")
                kinds = {s: k for s, k in mine}
                wrong = [n for n, p in enumerate(pubs, 1) if kinds.get(n, p.topic) != p.topic]
                if wrong:
                    fig.problems.append(f"{table}: seq {wrong[:5]} applied as another kind")
                for pool, amount in self.expected(pubs).items():
                    expected[pool] = expected.get(pool, Fraction(0)) + amount
            for pool in self.config.pools:
                moves = led.totals(pool)
                if moves.get("contribution", Fraction(0)) != expected.get(pool, Fraction(0)):
                    fig.problems.append(
                        f"{pool}: ledger contributions {moves.get('contribution')} != "
                        f"tables' {expected.get(pool)}"
                    )
                # "excess" rows are information (the part of a Mystery hit's contribution past
                # its trigger, already in the meter): meter = contributions + seeds + awards
                if led.meter(pool) != sum(v for k, v in moves.items() if k != "excess"):
                    fig.problems.append(f"{pool}: meter != the sum of its movements")
            hits = {}
            for award in led.awards():
                if award.pool in self.config.pools and award.state != "refused":
                    hits[award.pool] = hits.get(award.pool, 0) + 1
        cycles: dict[str, int] = {}
        for pool, cycle in self.triggers:
            cycles[pool] = max(cycles.get(pool, 0), cycle)
        for pool, cycle in cycles.items():
            if cycle > 1 + hits.get(pool, 0):
                fig.problems.append(f"{pool}: {cycle} trigger draws for {hits.get(pool, 0)} hits")
        return fig


class HaFaultRun(FaultRun):
    """Two ``jackpot-controller`` processes with ``[ha]`` on the PostgreSQL ledger ``dsn``
    (the tables as in :class:`FaultRun`); ``lease_ms``: their lease. A monitor thread reads
    the lease and the boot counter every 20 ms, so each failover is timed by the database."""

    def __init__(self, workdir: Path, seed: int, dsn: str, *, lease_ms: int = 3000,
                 **kwargs) -> None:  # fmt: skip
        super().__init__(workdir, seed, **kwargs)
        self.dsn = dsn
        self.ledger_location = dsn
        self.lease_ms = lease_ms
        for user in HA_USERS.values():  # the second controller's broker user
            self.broker.passwords.setdefault(user, secrets.token_urlsafe(12))
        self.broker._write_passwords()
        self.controllers: dict[str, subprocess.Popen | None] = dict.fromkeys(HA_USERS)
        self.configs = {}
        base = self.config_path.read_text(encoding="utf-8")
        for name in HA_USERS:
            path = workdir / f"jackpot-{name}.toml"
            path.write_text(
                base + f'\n[ha]\nname = "{name}"\nlease_ms = {lease_ms}\n\n[metrics]\nport = 0\n',
                encoding="utf-8",
            )
            self.configs[name] = path
        self.watch: list[tuple[float, int, str, int]] = []  # (t, epoch, holder, boot) changes
        self.failover_ms: list[int] = []
        self._watching = threading.Event()
        self._watcher: threading.Thread | None = None

    # processes
    def start_controller(self, name: str) -> None:
        user = HA_USERS[name]
        self.controllers[name] = subprocess.Popen(
            [sys.executable, "-m", "jackpot.cli", "--config", self.configs[name],
             "--ledger", self.dsn, "--host", "127.0.0.1", "--port", str(self.proxy.port),
             "--username", user, "--password-file", self._pwfile(user),
             *self.keys.controller_args(), "--log-level", "INFO"],
            cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=open(self.workdir / f"controller-{name}.log", "ab"),  # noqa: SIM115
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip

    def start_service(self, port: int | None = None) -> None:
        for name in HA_USERS:
            self.start_controller(name)

    def processes(self) -> list[subprocess.Popen]:
        return [p for p in self.controllers.values() if p is not None] + list(
            self.children.values()
        )

    def start(self) -> None:
        super().start()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        self.wait_leader(30)

    def close(self) -> None:
        self._watching.set()
        for proc in self.controllers.values():
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
        for proc in self.controllers.values():
            if proc is not None:
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.service = None
        super().close()
        if self._watcher is not None:
            self._watcher.join(5)

    # the database
    def _sql(self, sql: str, params: tuple = ()) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as db:
            return db.execute(sql, params).fetchall()

    def _trigger_rows(self) -> list[tuple[str, int, int]]:
        try:
            return self._sql("SELECT pool, commitment, cycle FROM draws")
        except Exception:  # not created yet
            return []

    def lease(self) -> tuple[int, str, int]:
        """(epoch, holder, boot) as the database has them; (0, "", 0) before an election."""
        try:
            ((epoch, holder),) = self._sql("SELECT epoch, holder FROM jackpot_lease")
        except Exception:
            return (0, "", 0)
        try:
            rows = self._sql("SELECT value FROM meta WHERE key = 'controller_boot'")
        except Exception:
            rows = []
        return (epoch, holder, int(rows[0][0]) if rows else 0)

    def _watch(self) -> None:
        last = None
        while not self._watching.wait(0.02):
            now = self.lease()
            if now != last:
                self.watch.append((time.monotonic(), *now))
                last = now

    def wait_leader(self, timeout: float, after: tuple[float, int] | None = None) -> str:
        """The holder once a leader has committed its boot (after the fault at time ``t`` with
        epoch ``e`` when ``after=(t, e)``: a new epoch); records the failover's time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, epoch, holder, boot in list(self.watch):
                if after is None and epoch > 0 and boot > 0:
                    return holder
                if after is not None and t >= after[0] and epoch > after[1]:
                    # the new term's boot: the first boot after the epoch moved
                    first = next(
                        (w for w in self.watch if w[1] == epoch and w[3] > self._boot_at(after)),
                        None,
                    )
                    if first is not None:
                        self.failover_ms.append(int((first[0] - after[0]) * 1000))
                        return holder
            time.sleep(0.02)
        self.problems.append(f"no new leader within {timeout}s of the fault: {self.watch[-3:]}")
        return ""

    def _boot_at(self, after: tuple[float, int]) -> int:
        boots = [w[3] for w in self.watch if w[0] <= after[0]]
        return boots[-1] if boots else 0

    def active(self) -> str:
        return self.lease()[1]

    # faults
    def fault(self, kind: str) -> None:
        if kind in FAULTS and kind != "service":
            return super().fault(kind)
        rng = self.rng
        self.faults[kind] = self.faults.get(kind, 0) + 1
        epoch, name, _ = self.lease()
        self.log(f"fault {kind} (active: {name}, epoch {epoch})")
        at = (time.monotonic(), epoch)
        if kind == "kill":
            proc = self.controllers[name]
            proc.kill()
            proc.wait()
            self.wait_leader(self.lease_ms / 1000 + 10, after=at)
            time.sleep(rng.uniform(0, 0.3))
            self.start_controller(name)  # back as a standby
        elif kind == "pause":
            proc = self.controllers[name]
            proc.send_signal(signal.SIGSTOP)
            try:
                self.wait_leader(self.lease_ms / 1000 + 10, after=at)
                time.sleep(rng.uniform(0, self.lease_ms / 1000))
            finally:
                proc.send_signal(signal.SIGCONT)  # it wakes as a stale leader: fenced
        elif kind == "db":
            self._sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name LIKE 'jackpot%%' AND pid <> pg_backend_pid()"
            )
        else:
            raise ValueError(kind)

    def run_faults(self, count: int, gap: tuple[float, float] = (0.3, 1.0)) -> None:
        """``count`` faults: each kind once first in a seeded order (two kills and a pause of
        the active controller: the failovers the goal counts), then seeded random ones."""
        kinds = ["kill", "pause", "kill", "db", "broker"]
        self.rng.shuffle(kinds)
        kinds = kinds[:count] + [self.rng.choice(HA_FAULTS) for _ in range(count - len(kinds))]
        for kind in kinds:
            time.sleep(self.rng.uniform(*gap))
            self.fault(kind)

    def check(self) -> Figures:
        fig = super().check()
        terms = dict.fromkeys((epoch, holder) for _, epoch, holder, _ in self.watch if epoch)
        holders = [holder for _, holder in terms]
        fig.failovers = sum(1 for a, b in itertools.pairwise(holders) if a != b)
        fig.failover_ms = list(self.failover_ms)
        return fig


def run(workdir: Path, seed: int, faults: int, rounds: int, tables: int = 2, pace_ms: float = 10,
        log=None, quiet_timeout: float = 60.0) -> Figures:  # fmt: skip
    fr = FaultRun(workdir, seed, tables=tables, rounds=rounds, pace_ms=pace_ms, log=log)
    try:
        fr.start()
        fr.run_faults(faults)
        fr.quiesce(quiet_timeout)
    finally:
        fr.close()
    return fr.check()


def run_ha(workdir: Path, seed: int, faults: int, rounds: int, dsn: str, *, lease_ms: int = 3000,
           tables: int = 2, pace_ms: float = 10, log=None,
           quiet_timeout: float = 90.0) -> Figures:  # fmt: skip
    fr = HaFaultRun(workdir, seed, dsn, lease_ms=lease_ms, tables=tables, rounds=rounds,
                    pace_ms=pace_ms, log=log)  # fmt: skip
    try:
        fr.start()
        fr.run_faults(faults)
        fr.quiesce(quiet_timeout)
    finally:
        fr.close()
    return fr.check()


def main_ha(args: argparse.Namespace) -> int:
    import tempfile

    seed = random.SystemRandom().randrange(1 << 30) if args.seed is None else args.seed
    faults = args.faults or (6 if args.quick else 20)
    rounds = args.rounds or (30 if args.quick else 120)
    print(f"seed={seed} faults={faults} rounds={rounds} tables={args.tables} ha "
          f"lease_ms={args.lease_ms}", flush=True)  # fmt: skip
    t0 = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="jackpot-faults-ha-") as tmp,
        contextlib.ExitStack() as stack,
    ):

        def log(text: str) -> None:
            print(f"{time.monotonic() - t0:6.1f}s {text}", flush=True)

        dsn = args.dsn
        if dsn is None:  # a folder of its own: as root it belongs to the postgres user
            from pg_server import PgServer

            server = PgServer()
            stack.callback(server.close)
            server.start()
            dsn = server.create_database()
        fig = run_ha(Path(tmp), seed, faults, rounds, dsn, lease_ms=args.lease_ms,
                     tables=args.tables, log=log)  # fmt: skip
        if fig.problems:  # what the controllers said, for the report
            for name in HA_USERS:
                lines = (Path(tmp) / f"controller-{name}.log").read_text().splitlines()
                print(f"--- controller {name}, last lines:", *lines[-15:], sep="\n")
    took = time.monotonic() - t0
    print(f"faults: {fig.faults}  failover ms: {fig.failover_ms}  time: {took:.1f}s")
    for problem in fig.problems:
        print(f"PROBLEM: {problem}")
    print(fig.line())
    bad = fig.lost or fig.duplicated or fig.problems
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child-table":
        j, table, port, pw, seed, rounds, pace, key, controller_key = argv[1:10]
        return table_child(j, table, int(port), pw, int(seed), int(rounds), float(pace), key,
                           controller_key)  # fmt: skip
    if argv and argv[0] == "--child-service":
        config, ledger, port, pw, key = argv[1:6]
        return service_child(config, ledger, int(port), pw, key)
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a short run (under a minute)")
    p.add_argument("--seed", type=int, default=None, help="the run's seed (default: random)")
    p.add_argument("--faults", type=int, default=None, help="faults injected (default 40)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per table (default 120)")
    p.add_argument("--tables", type=int, default=2, choices=(1, 2))
    p.add_argument("--ha", action="store_true", help="PostgreSQL and two controllers")
    p.add_argument("--dsn", help="--ha: an empty database to use (default: a server of its own)")
    p.add_argument("--lease-ms", type=int, default=3000, help="--ha: the lease (default 3000)")
    args = p.parse_args(argv)
    if args.ha:
        return main_ha(args)
    seed = random.SystemRandom().randrange(1 << 30) if args.seed is None else args.seed
    faults = args.faults or (12 if args.quick else 40)
    rounds = args.rounds or (30 if args.quick else 120)
    print(f"seed={seed} faults={faults} rounds={rounds} tables={args.tables}", flush=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jackpot-faults-") as tmp:

        def log(text: str) -> None:
            print(f"{time.monotonic() - t0:6.1f}s {text}", flush=True)

        fig = run(Path(tmp), seed, faults, rounds, args.tables, log=log)
    print(f"faults: {fig.faults}  time: {time.monotonic() - t0:.1f}s")
    for problem in fig.problems:
        print(f"PROBLEM: {problem}")
    print(fig.line())
    return 1 if fig.lost or fig.duplicated or fig.problems else 0


if __name__ == "__main__":
    sys.exit(main())
