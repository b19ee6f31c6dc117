"""Durable contributions per second through the jackpot link, beside raw Mosquitto QoS 1.

One run, one test Mosquitto (tests/mqtt_broker.py), the jackpot controller as a child process:

1. ``broker_qos1_per_s``: a plain paho client publishes ``--raw`` QoS 1 messages (the size of a
   contribution) on a table's topic while another receives them at QoS 1; until the last one
   is received. The best of ``--raw-runs`` such runs (default 3; each is printed): on this
   VM one run of the same code gave anywhere from 3,400 to 9,100 a second, and the best is
   the stricter yardstick for the durable path.
2. ``contributions_per_s``: a table's journal holds a backlog of Blazing 7's rounds (outbox rows
   written in the journal's transactions); a ``TablePublisher`` sends it, the controller
   applies what arrived together in one ledger transaction (group commit; SQLite: WAL,
   synchronous=FULL; PostgreSQL: synchronous_commit on), acks it (the application ack of the
   highest sequence, then the MQTT PUBACKs) and the table deletes it: contributions (of all
   messages) until the outbox is empty. Every message is signed and checked end to end (each
   table's key and the controller's, made by jackpot_faults' :class:`FaultRun`). A backlog
   of 2,000 rounds by default (about 5,000 messages, 0.5-1 s to drain; 400 rounds before
   issue 32's third round: 958 messages in about 0.2 s, where one scheduling hiccup, or the
   table's connect, which the clock includes, moved the rate by a third).
   Beside the rates, the CPU each part spent per message (``/proc``: user + system time of
   the controller process, of Mosquitto, of this process, which is the raw clients or
   the table's publisher, and with ``--ledger postgresql`` of the server's processes): what
   the rate would be on cores of their own, whatever else the machine was doing.
3. ``p99_ms``: a table plays live at a dealer's pace; the latency of each contribution from
   its journal commit (``JournaledTable.handle`` returned) to its ledger commit (seen by a
   reader polling the ledger's ``applied`` table every millisecond). After each event that
   wrote rows the bench wakes the publisher, as the daemon's loop does; as that loop does
   when it starts, the bench freezes its heap first (``gc.freeze``), and the controller runs
   with ``freeze_heap`` as ``jackpot-controller`` does.

``--ledger postgresql``: the ledger in a PostgreSQL server of the bench's own (Debian's
binaries, tests/pg_server.py: a temporary cluster on a free loopback port, fsync on).

    .venv/bin/python bench/jackpot_throughput.py [--ledger sqlite|postgresql] [--rounds N]
        [--raw N] [--raw-runs N] [--live N] [--batch-rows N]

The table's publisher sends what waits in batch frames of up to ``--batch-rows`` rows (issue
32; controller/link/frames.py): a backlog goes mostly as frames, the live session mostly as
single messages (one row waits at a time).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _journal_feeder import SETTINGS, session_events
from _machine import describe
from jackpot_faults import GAME, FaultRun
from mqtt_broker import OBSERVER, SIGN, TABLES

from controller.games import load_game
from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.frames import BATCH_ROWS
from controller.link.publisher import TablePublisher
from controller.table.effects import Publish

T7, T8 = TABLES


def cpu_s(pid: int | list[int] | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (this one if None), all its threads; of
    a list of processes, those still alive (a PostgreSQL server's)."""
    if pid is None:
        return time.process_time()
    if isinstance(pid, list):
        return sum(cpu_s(p) for p in pid if Path(f"/proc/{p}").exists())
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds spent by named processes between ``start()`` and ``stop()``."""

    def __init__(self, pids: dict[str, int | list[int] | None]):
        self.pids = pids
        self.spent: dict[str, float] = {}

    def start(self) -> None:
        self._t0 = {name: cpu_s(pid) for name, pid in self.pids.items()}

    def stop(self) -> None:
        self.spent = {name: cpu_s(pid) - self._t0[name] for name, pid in self.pids.items()}

    def per_message(self, n: int) -> str:
        return " ".join(f"{name} {s / n * 1e6:.0f} us" for name, s in self.spent.items())


def raw_qos1(broker, n: int, size: int, cpu: CpuMeter | None = None) -> float:
    """Publishes per second, QoS 1 in and out, with paho's default in-flight window."""
    sub = broker.client(OBSERVER)  # not the controller's user: the service runs
    pub = broker.client(T8, client_id="raw-pub")
    try:
        topic = f"bj/v1/table/{T8}/contribution"
        assert sub.subscribe(topic).value == 1
        payload = b"x" * size
        if cpu:
            cpu.start()
        t0 = time.perf_counter()
        infos = [pub._client.publish(topic, payload, qos=1) for _ in range(n)]
        got = 0
        while got < n:
            if sub.get(10) is None:
                raise TimeoutError(f"raw: {got} of {n} received")
            got += 1
        for info in infos:
            info.wait_for_publish(10)
        rate = n / (time.perf_counter() - t0)
        if cpu:
            cpu.stop()
        return rate
    finally:
        pub.close()
        sub.close()


def wait_online(broker, timeout: float = 15.0) -> None:
    sign = broker.client(SIGN, client_id="bench-sign")
    try:
        sign.subscribe("bj/v1/jackpot/status")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = sign.get(0.5)
            if m is not None and json.loads(m.payload).get("state") == "online":
                return
        raise TimeoutError("the jackpot controller did not come online")
    finally:
        sign.close()


def depth(path: Path) -> int:
    with Outbox(path) as box:
        return box.depth()


def backlog(
    fr: FaultRun, rounds: int, cpu: CpuMeter | None = None, batch_rows: int = BATCH_ROWS
) -> tuple[int, int, float]:
    """(contributions, messages, seconds) to drain a backlog of ``rounds`` rounds."""
    path = fr.journal(T7)
    with JournaledTable(path, load_game(GAME), SETTINGS) as table:
        for event in session_events(GAME, 11, rounds):
            table.handle(event)
    with Outbox(path) as box:
        rows = box.pending()
    contributions = sum(r.kind == "contribution" for r in rows)
    pub = TablePublisher(path, T7, fr.broker.host, fr.broker.port, T7,
                         fr.broker.passwords[T7], signer=fr.keys.table_signer(T7),
                         verifier=fr.keys.controller_verifier(), batch_rows=batch_rows,
                         backoff=(0.05, 0.5))  # fmt: skip
    try:
        with Outbox(path) as box:  # one connection: opening one each look took the GIL
            if cpu:
                cpu.start()
            t0 = time.perf_counter()
            while box.depth():
                time.sleep(0.002)
                if time.perf_counter() - t0 > 300:
                    raise TimeoutError("the backlog did not drain")
            secs = time.perf_counter() - t0
            if cpu:
                cpu.stop()
            return contributions, len(rows), secs
    finally:
        pub.close()


def live(fr: FaultRun, rounds: int, pace_ms: float, batch_rows: int = BATCH_ROWS) -> list[float]:
    """Journal-commit-to-ledger-commit latencies (ms) of the contributions of a live session."""
    path = fr.workdir / "live.journal"
    committed: dict[str, float] = {}
    seen: dict[str, float] = {}
    stop = threading.Event()

    def watch() -> None:
        if isinstance(fr.ledger, str):  # a postgresql:// URL
            import psycopg

            db, mark = psycopg.connect(fr.ledger, autocommit=True), "%s"
        else:
            db, mark = sqlite3.connect(fr.ledger, timeout=30), "?"
        query = "SELECT n, key FROM applied WHERE n > ? AND table_id = ? AND kind = ?"
        query = query.replace("?", mark)
        last = db.execute("SELECT COALESCE(MAX(n), 0) FROM applied").fetchone()[0]
        while not stop.is_set():
            for n, key in db.execute(query, (last, T8, "contribution")).fetchall():
                seen[key] = time.perf_counter()
                last = max(last, n)
            time.sleep(0.001)
        db.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    # as the table daemon's loop does when it starts (controller/runtime/loop.py): the heap
    # so far (here the backlog's journaling, the fault run) frozen, never scanned again; a
    # full collection of it stopped this process's threads, the link's too, for 20-35 ms
    gc.collect()
    gc.freeze()
    with JournaledTable(path, load_game(GAME), SETTINGS) as table:
        pub = TablePublisher(path, T8, fr.broker.host, fr.broker.port, T8,
                             fr.broker.passwords[T8], signer=fr.keys.table_signer(T8),
                             verifier=fr.keys.controller_verifier(), batch_rows=batch_rows,
                             backoff=(0.05, 0.5))  # fmt: skip
        try:
            for event in session_events(GAME, 12, rounds):
                step = table.handle(event)
                now = time.perf_counter()
                for effect in step.effects:
                    if isinstance(effect, Publish) and effect.topic == "contribution":
                        committed[effect.key] = now
                if any(isinstance(effect, Publish) for effect in step.effects):
                    pub.wake()  # as the daemon's loop does once the event's effects are out
                time.sleep(pace_ms / 1000)
            deadline = time.monotonic() + 30
            while depth(path) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)
        finally:
            pub.close()
            stop.set()
            watcher.join(5)
            gc.unfreeze()
    missing = set(committed) - set(seen)
    if missing:
        raise RuntimeError(f"{len(missing)} live contributions never reached the ledger")
    return sorted((seen[k] - committed[k]) * 1000 for k in committed)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2000, help="backlog rounds (default 2000)")
    p.add_argument("--raw", type=int, default=5000, help="raw QoS 1 publishes (default 5000)")
    p.add_argument("--raw-runs", type=int, default=3,
                   help="raw runs, the best counts (default 3)")  # fmt: skip
    p.add_argument("--live", type=int, default=40, help="live rounds for latency (default 40)")
    p.add_argument("--pace-ms", type=float, default=5, help="pause after each live event")
    p.add_argument("--ledger", choices=("sqlite", "postgresql"), default="sqlite",
                   help="the controller's ledger (default sqlite)")  # fmt: skip
    p.add_argument("--batch-rows", type=int, default=BATCH_ROWS,
                   help=f"rows a batch frame carries at most (default {BATCH_ROWS}; 1: single "
                        "messages only, as before issue 32)")  # fmt: skip
    args = p.parse_args(argv)
    ran_on = describe()  # the load before this run's own
    with (
        tempfile.TemporaryDirectory(prefix="jackpot-bench-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        fr = FaultRun(Path(tmp), seed=1, tables=2, rounds=0)
        if args.ledger == "postgresql":
            from pg_server import PgServer

            server = PgServer()
            stack.callback(server.close)
            server.start()
            fr.ledger = fr.ledger_location = server.create_database()
        print(f"ledger: {args.ledger}; batch frames of up to {args.batch_rows} rows", flush=True)
        try:
            fr.broker.start()
            fr.start_service(fr.broker.port)
            wait_online(fr.broker)
            broker_pid = fr.broker._process.pid if fr.broker._process else None
            cpu = CpuMeter({"clients": None, "mosquitto": broker_pid})
            raws = []
            for _ in range(args.raw_runs):  # the best run: the stricter yardstick
                raws.append(raw_qos1(fr.broker, args.raw, 300, cpu))
                print(f"raw: {args.raw} QoS 1 messages of 300 bytes: {raws[-1]:.0f}/s; CPU per "
                      f"message: {cpu.per_message(args.raw)}", flush=True)  # fmt: skip
            raw = max(raws)
            pids: dict[str, int | list[int] | None] = {
                "controller": fr.service.pid, "table publisher": None, "mosquitto": broker_pid
            }  # fmt: skip
            if args.ledger == "postgresql":  # the server: its backends, WAL writer...
                pids["postgresql"] = server._processes()
            cpu = CpuMeter(pids)
            contribs, messages, secs = backlog(fr, args.rounds, cpu, args.batch_rows)
            per_s = contribs / secs
            print(f"backlog: {messages} messages ({contribs} contributions) in {secs:.2f}s: "
                  f"{messages / secs:.0f} messages/s; CPU per message: "
                  f"{cpu.per_message(messages)}", flush=True)  # fmt: skip
            lat = live(fr, args.live, args.pace_ms, args.batch_rows)
            p50, p99 = lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]
            print(f"live: {len(lat)} contributions, p50 {p50:.1f} ms, max {lat[-1]:.1f} ms")
        finally:
            fr.close()
    print(ran_on)
    print(f"contributions_per_s={per_s:.0f} broker_qos1_per_s={raw:.0f} p99_ms={p99:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
