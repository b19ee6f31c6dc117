"""Card frame to dealer prompt and to outbox commit, through the running table controller.

The real ``table-controller run`` process with everything real around it: a Mosquitto on a
free loopback port (tests/mqtt_broker.py), the ``jackpot-controller`` process with its ledger,
the jackpot link signed end to end (keys made in the work folder, bench/_link_keys.py),
GPIO on gpiozero's mock pins (chips and buttons through the control socket's simulated
inputs). The bench itself is the shoe: it opens a raw pty (``drivers.shoe_sim.open_pty``),
points the table's ``[shoe] url`` symlink at it, sends the version frame and a heartbeat every
second, and writes every card frame into the master, reading ``time.monotonic_ns()`` just
before the ``os.write``. The daemon runs with ``TABLE_CONTROLLER_TRACE``: for each journaled
event it appends the monotonic time its journal commit returned (the outbox rows are written
in that same transaction) and the time its effects were carried out. CLOCK_MONOTONIC is one
clock for the whole machine, so:

- ``outbox``: card frame written -> journal commit returned, over every card;
- ``prompt``: card frame written -> effects carried out, over the cards whose step made a
  dealer prompt (the hole card, the dealer's draw, the burn card).

Rounds are fixed (2 spots: spot 1 $25 + Blazing 7's $5, spot 2 $10; cards 10H 9C 6D 7S 8H 10C
9S; EZ Bust closed and both spots stand with ``console.next``; the dealer draws 9S and busts;
``console.end_round``). A 6-deck shoe holds 6 of each card, so before round 1, 7, 13... the
shoe shuffles and the dealer burns a card (2C, a card frame with a prompt like the others).
Cards are paced like a fast dealer: ``--pace-ms`` after the previous frame and never before
the previous card's trace line is written, so none queues behind another. Then, the table
idle between rounds (heartbeats still arriving), the daemon's ``/proc/PID/stat`` utime+stime
over ``--idle-s`` seconds -> ``idle_cpu_pct`` (of one core), and ``VmRSS`` -> ``rss_mb``.
Beside the wall times, figures a loaded machine does not change much: the loop thread's CPU
per prompt card, the daemon's CPU and context switches (``/proc/PID/task/*/status``, every
thread) per journaled event while dealing, and its context switches a second while idle.

    .venv/bin/python bench/table_latency.py [--quick] [--rounds N] [--pace-ms MS] [--idle-s S]
        [--save FILE]

The last line is ``prompt_p50_ms=... prompt_p99_ms=... outbox_p50_ms=... outbox_p99_ms=...
rss_mb=... idle_cpu_pct=...``; exit 1 if a card is missing from the trace, an event is refused
or a round does not settle.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from _link_keys import BenchKeys, make_keys  # noqa: E402
from _machine import describe  # noqa: E402
from mqtt_broker import CONTROLLER, SIGN, BrokerClient, MosquittoBroker  # noqa: E402

from controller.rules.cards import parse_card  # noqa: E402
from controller.runtime.control import ControlClient  # noqa: E402
from drivers.shoe_protocol import SEQ_MODULO, Message, encode_frame, encode_message  # noqa: E402
from drivers.shoe_sim import open_pty, point_link  # noqa: E402

TABLE = "hcm-bj-07"
ROUND_CARDS = ["10H", "9C", "6D", "7S", "8H", "10C", "9S"]
INITIAL = 6  # two to each spot and two to the dealer; then the dealer's draw
ROUNDS_PER_SHOE = 6  # a 6-deck shoe holds 6 of each card: shuffle (and burn) before a 7th
BURN = "2C"
HEARTBEAT_S = 1.0


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest rank, as bench/shoe_latency.py."""
    index = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def table_config(tmp: Path, port: int, password_file: Path, tick_ms: int, keys: BenchKeys) -> Path:
    path = tmp / "table.toml"
    path.write_text(
        f"""
[table]
id = "{TABLE}"
property = "hcm"
game = "pa-standard"
spots = 2
main_minimum = "$10"
main_maximum = "$500"
data_dir = "{tmp / "data"}"
tick_ms = {tick_ms}

[shoe]
url = "{tmp / "shoe"}"
heartbeat_timeout_ms = 3000
fault_after_s = 30

[gpio]
pin_factory = "mock"
button_debounce_ms = 30
sensor_debounce_ms = 30

[gpio.sensors]
"1.main" = 4
"1.blazing_7s" = 5
"2.main" = 6

[gpio.console]
lockout = 7
next = 8
end_round = 12
supervisor_key = 24

[gpio.lights]
lockout = 22
alarm = 23
"1.action" = 19
"2.action" = 20

[mqtt]
host = "127.0.0.1"
port = {port}
password_file = "{password_file}"
ack_timeout_s = 30
{keys.table_mqtt_lines(TABLE)}
[control]
socket = "{tmp / "control.sock"}"
""",
        encoding="utf-8",
    )
    return path


class Shoe:
    """The bench's shoe on a pty: numbered frames, a heartbeat thread, one writer at a time."""

    def __init__(self, link: Path) -> None:
        self.master, self.slave, self.path = open_pty()
        os.set_blocking(self.master, True)  # never lose a frame; the reader drains the pty
        point_link(str(link), self.path)
        self.link = link
        self.last_seq: int | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="bench-heartbeat", daemon=True)

    def send(self, kind: str, **fields) -> int:
        """Write the next numbered message; returns ``time.monotonic_ns()`` read just before."""
        with self._lock:
            seq = 0 if self.last_seq is None else (self.last_seq + 1) % SEQ_MODULO
            frame = encode_message(Message(seq, kind, **fields))
            self.last_seq = seq
            t = time.monotonic_ns()
            os.write(self.master, frame)
            return t

    def start_heartbeats(self) -> None:
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with self._lock:
                os.write(self.master, encode_frame(self.last_seq or 0, "HB"))

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
        with contextlib.suppress(OSError):
            os.unlink(self.link)
        for fd in (self.master, self.slave):
            with contextlib.suppress(OSError):
                os.close(fd)


class Trace:
    """Follows the daemon's trace file; keeps the card records in order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self.cards: list[dict] = []
        self.events = 0
        self.by_type: dict[str, int] = {}

    def read(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            record = json.loads(line)
            self.events += 1
            self.by_type[record["event"]] = self.by_type.get(record["event"], 0) + 1
            if record["event"] == "card":
                self.cards.append(record)

    def wait_cards(self, n: int, timeout: float = 10.0) -> None:
        self.wait_type("card", n, timeout)

    def wait_type(self, event: str, n: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.read()
            if self.by_type.get(event, 0) >= n:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.by_type.get(event, 0)} of {n} {event} events traced")
            time.sleep(0.0005)


class Rig:
    """The processes: broker, jackpot controller, table daemon; and the ways to drive them."""

    def __init__(self, tmp: Path, tick_ms: int, profile: Path | None = None) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        self.logs: list = []
        self.broker = MosquittoBroker(tmp / "broker")
        self.control: ControlClient | None = None
        self.table: subprocess.Popen | None = None
        self.shoe: Shoe | None = None
        self.trace = Trace(tmp / "trace.jsonl")
        self.tick_ms = tick_ms
        self.profile = profile

    def _start(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop()
        self.logs.append(log)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def start(self) -> None:
        self.broker.start()
        table_pw = self.tmp / "table.pw"
        table_pw.write_text(self.broker.passwords[TABLE] + "\n")
        ctl_pw = self.tmp / "controller.pw"
        ctl_pw.write_text(self.broker.passwords[CONTROLLER] + "\n")
        for secret in (table_pw, ctl_pw):
            secret.chmod(0o600)  # others may not read it (issue 26)
        keys = make_keys(self.tmp / "keys", [TABLE])
        config = table_config(self.tmp, self.broker.port, table_pw, self.tick_ms, keys)
        jackpot = self.tmp / "jackpot.toml"
        example = (ROOT / "config" / "jackpot.example.toml").read_text(encoding="utf-8")
        jackpot.write_text(example + keys.jackpot_tables(), encoding="utf-8")
        self._start(
            "jackpot",
            [sys.executable, "-m", "jackpot.cli",
             "--config", str(jackpot),
             "--ledger", str(self.tmp / "ledger.sqlite"),
             "--host", "127.0.0.1", "--port", str(self.broker.port),
             "--username", CONTROLLER, "--password-file", str(ctl_pw),
             *keys.controller_args()],
        )  # fmt: skip
        self.wait_jackpot_online()
        self.shoe = Shoe(self.tmp / "shoe")
        env = {**os.environ, "TABLE_CONTROLLER_TRACE": str(self.trace.path)}
        self.table = self._start(
            "table",
            [
                sys.executable,
                *(["-m", "cProfile", "-o", str(self.profile)] if self.profile else []),
                *("-m", "controller.cli", "run", "--config", str(config)),
            ],
            env=env,
        )
        deadline = time.monotonic() + 20
        while True:  # the shoe is opened (and flushed) before the control socket listens
            if self.table.poll() is not None:
                raise RuntimeError(f"table-controller run exited:\n{self.log('table')}")
            try:
                self.control = ControlClient(self.tmp / "control.sock")
                self.control.request("status")
                break
            except OSError:
                if self.control is not None:
                    self.control.close()
                    self.control = None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no control socket:\n{self.log('table')}") from None
                time.sleep(0.05)
        self.shoe.send("version", text="BENCH 1.0")
        self.shoe.start_heartbeats()
        self.wait(lambda a: (a["health"]["shoe"] or {}).get("state") == "online", "shoe online")
        self.wait(
            lambda a: a["health"]["link"]["connected"] and a["status"]["jackpot_link"],
            "the jackpot link",
            timeout=30,
        )

    def wait_jackpot_online(self, timeout: float = 20.0) -> None:
        sign = BrokerClient(self.broker, SIGN, client_id="bench-sign")
        try:
            sign.subscribe("bj/v1/jackpot/status")
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                m = sign.get(0.5)
                if m is not None and json.loads(m.payload).get("state") == "online":
                    return
            raise RuntimeError(
                f"the jackpot controller did not come online:\n{self.log('jackpot')}"
            )
        finally:
            sign.close()

    def status(self) -> dict:
        answer = self.control.request("status")
        if not answer.get("ok"):
            raise RuntimeError(f"status refused: {answer}")
        return answer

    def wait(self, predicate, what: str, timeout: float = 15.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            answer = self.status()
            if predicate(answer):
                return answer
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}: {json.dumps(answer)[:2000]}")
            time.sleep(0.02)

    def act(self, op: str, **fields) -> None:
        """A control request, then wait until the event it makes is journaled."""
        before = self.status()["status"]["journal_events"]
        answer = self.control.request(op, **fields)
        if not answer.get("ok") or (op == "wager" and not answer.get("accepted")):
            raise RuntimeError(f"{op} {fields}: {answer}")
        self.wait(lambda a: a["status"]["journal_events"] > before, f"{op} {fields} journaled")

    def stop(self) -> None:
        if self.control is not None:
            self.control.close()
        for proc in reversed(self.procs):  # the table first, then the jackpot controller
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.broker.stop()
        if self.shoe is not None:
            self.shoe.close()
        for log in self.logs:
            log.close()


def cpu_ticks(pid: int) -> int:
    """utime + stime of every thread of ``pid``, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)


def switches(pid: int) -> int:
    """Context switches (voluntary + involuntary) of every thread of ``pid`` so far: each a
    thread that slept and was woken, or was preempted (a GIL hand-off is at least one)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/status") as f:
            for line in f:
                if "ctxt_switches:" in line:
                    total += int(line.split()[1])
    return total


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def play(rig: Rig, rounds: int, pace_ms: float) -> tuple[list[int], int]:
    """Deal ``rounds`` rounds; returns the write time of each card frame and the pacing waits."""
    cards = [parse_card(c) for c in ROUND_CARDS]
    sent: list[int] = []
    late = 0  # cards held back because the previous one was not yet traced at the pace

    def deal(card) -> None:
        nonlocal late
        if sent:
            delay = sent[-1] / 1e9 + pace_ms / 1000 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            rig.trace.read()
            if len(rig.trace.cards) < len(sent):
                late += 1
                rig.trace.wait_cards(len(sent))
        sent.append(rig.shoe.send("card", card=card))

    rig.act("input", name="sensors.1.main", active=True)
    rig.act("wager", spot=1, circle="main", amount=2500)
    rig.act("input", name="sensors.1.blazing_7s", active=True)
    rig.act("input", name="sensors.2.main", active=True)
    for n in range(rounds):
        if n % ROUNDS_PER_SHOE == 0:  # the shoe shuffles; the dealer burns one card
            rig.trace.read()
            shoe_events = rig.trace.by_type.get("shoe", 0)
            rig.shoe.send("shuffle_start")
            rig.shoe.send("shuffle_end")
            rig.trace.wait_type("shoe", shoe_events + 1)
            deal(parse_card(BURN))
            rig.trace.wait_cards(len(sent))
        rig.act("press", name="console.lockout")
        for card in cards[:INITIAL]:
            deal(card)
        rig.trace.wait_cards(len(sent))
        for _ in range(3):  # EZ Bust closed (the dealer shows 6), spot 1 stands, spot 2 stands
            rig.act("press", name="console.next")
        deal(cards[INITIAL])
        rig.trace.wait_cards(len(sent))
        rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", f"round {n + 1} settled")
        rig.act("press", name="console.end_round")
    return sent, late


def tail_table(records: list[dict], sent: list[int], stages, slowest: int = 3) -> str:
    """The slowest ``slowest`` prompt cards stage by stage beside the median one (ms): where
    the tail's time went (a p99 over 65 prompt cards is the second-slowest)."""
    cards = sorted(
        ((r["carried_out_ns"] - t, r, t) for r, t in zip(records, sent, strict=True)
         if r["prompts"]),
        key=lambda c: c[0],
    )  # fmt: skip
    picked = [("median", cards[len(cards) // 2])] + [
        (f"#{len(cards) - i}", cards[len(cards) - 1 - i]) for i in range(min(slowest, len(cards)))
    ]
    rows = [f"  {'stage (ms)':<26}" + "".join(f"{name:>9}" for name, _ in picked)]
    for name, start, end in stages:
        cells = []
        for _, (_, r, t) in picked:
            begin = t if start == "sent" else r.get(start)
            cells.append(f"{(r[end] - begin) / 1e6:9.3f}" if begin and r.get(end) else f"{'-':>9}")
        rows.append(f"  {name:<26}" + "".join(cells))
    rows.append(f"  {'frame -> prompt':<26}" + "".join(f"{c[0] / 1e6:9.3f}" for _, c in picked))
    rows.append(
        f"  {'loop thread CPU':<26}"
        + "".join(f"{c[1].get('loop_cpu_ns', 0) / 1e6:9.3f}" for _, c in picked)
    )
    return "the median prompt card and the slowest, stage by stage:\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="6 rounds, 3 s idle (a smoke run)")
    p.add_argument("--rounds", type=int, help="rounds of 7 cards (default 30; --quick 6)")
    p.add_argument("--pace-ms", type=float, default=20, help="at least this between card frames")
    p.add_argument("--idle-s", type=float, help="idle CPU window (default 10; --quick 3)")
    p.add_argument(
        "--tick-ms", type=int, default=100, help="the table's tick_ms (default 100, as shipped)"
    )
    p.add_argument(
        "--profile", type=Path, help="run the daemon under cProfile (its loop's thread) into FILE"
    )
    p.add_argument(
        "--save",
        type=Path,
        help="write each card's trace record, with its frame's sent_ns, "
        "to FILE (JSON lines: to line the tail up with perf sched or strace, -k monotonic)",
    )
    args = p.parse_args(argv)
    ran_on = describe()  # the load before this run's own
    rounds = args.rounds or (6 if args.quick else 30)
    idle_s = args.idle_s or (3.0 if args.quick else 10.0)
    if rounds < 1 or idle_s <= 0 or args.pace_ms < 0:
        p.error("--rounds must be >= 1, --idle-s > 0, --pace-ms >= 0")
    # a SIGTERM (a test's timeout) stops the children too, through the finally below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    with tempfile.TemporaryDirectory(prefix="table-latency-") as tmp_name:
        rig = Rig(Path(tmp_name), args.tick_ms, args.profile and args.profile.absolute())
        try:
            rig.start()
            hz = os.sysconf("SC_CLK_TCK")
            c_play, s_play = cpu_ticks(rig.table.pid), switches(rig.table.pid)
            sent, late = play(rig, rounds, args.pace_ms)
            play_cpu_ms = (cpu_ticks(rig.table.pid) - c_play) / hz * 1000
            play_switches = switches(rig.table.pid) - s_play
            rig.trace.read()
            refused = rig.status()["status"]["events_refused"]
            time.sleep(0.5)  # the last round's link traffic settles; the table is idle
            pid = rig.table.pid
            hz = os.sysconf("SC_CLK_TCK")
            t0, c0, s0 = time.monotonic(), cpu_ticks(pid), switches(pid)
            time.sleep(idle_s)
            t1, c1, s1 = time.monotonic(), cpu_ticks(pid), switches(pid)
            idle_cpu = (c1 - c0) / hz / (t1 - t0) * 100
            rss = rss_mb(pid)
            traced_events = rig.trace.events
        except RuntimeError as exc:
            print(f"FAILED: {exc}")
            return 1
        finally:
            rig.stop()

    if refused:
        print(f"FAILED: the table refused {refused} events of the fixed rounds")
        return 1
    records = rig.trace.cards
    if len(records) != len(sent):
        print(f"FAILED: {len(sent)} card frames written, {len(records)} card events traced")
        return 1
    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            for r, t in zip(records, sent, strict=True):
                f.write(json.dumps({**r, "sent_ns": t}) + "\n")
    outbox = sorted((r["committed_ns"] - t) / 1e6 for r, t in zip(records, sent, strict=True))
    carried = sorted((r["carried_out_ns"] - t) / 1e6 for r, t in zip(records, sent, strict=True))
    prompt = sorted(
        (r["carried_out_ns"] - t) / 1e6 for r, t in zip(records, sent, strict=True) if r["prompts"]
    )
    spent = sorted((r["carried_out_ns"] - r["committed_ns"]) / 1e6 for r in records if r["prompts"])
    if not prompt:
        print("FAILED: no card made a dealer prompt")
        return 1

    def line(name: str, values: list[float]) -> str:
        return (f"{name:<26} n={len(values):<4} p50 {percentile(values, 50):7.3f} ms  "
                f"p99 {percentile(values, 99):7.3f} ms  max {values[-1]:7.3f} ms")  # fmt: skip

    print(
        f"{rounds} rounds, {len(sent)} card frames ({traced_events} journaled events), tick_ms "
        f"{args.tick_ms}; pacing: >= {args.pace_ms:g} ms between frames and never before the "
        f"previous card was journaled ({late} held back); refused events {refused}"
    )
    print(line("frame -> outbox commit", outbox))
    print(line("frame -> effects done", carried))
    print(line("frame -> dealer prompt", prompt))
    print(line("  of which commit -> done", spent))
    print("stages of the prompt cards (each from the one before; the daemon's trace points):")
    stages = (
        ("frame written -> read", "sent", "read_ns"),
        ("read -> queued", "read_ns", "queued_ns"),
        ("queued -> loop picked up", "queued_ns", "picked_ns"),
        ("picked -> table handled", "picked_ns", "handled_ns"),
        ("handled -> rows encoded", "handled_ns", "encoded_ns"),
        ("encoded -> rows written", "encoded_ns", "commit_ns"),
        ("COMMIT (fsync)", "commit_ns", "committed_ns"),
        ("committed -> effects done", "committed_ns", "carried_out_ns"),
    )
    parts = (  # rows written, in two: the write lock (BEGIN IMMEDIATE's wait), the statements
        ("  of which BEGIN (lock)", "encoded_ns", "begun_ns"),
        ("  of which statements", "begun_ns", "commit_ns"),
    )
    for name, start, end in stages[:6] + parts + stages[6:]:
        values = sorted(
            ((r[end] - (t if start == "sent" else r[start])) / 1e6)
            for r, t in zip(records, sent, strict=True)
            if r["prompts"] and r.get(end) and (start == "sent" or r.get(start))
        )
        if values:
            print(line(f"  {name}", values))
    print(tail_table(records, sent, stages))
    gcs = [r["gc_ns"] / 1e6 for r in records if r["prompts"] and r.get("gc_ns")]
    if any("gc_ns" in r for r in records):  # the trace says (this daemon's code does)
        print(
            f"garbage collections inside a prompt card's path: {len(gcs)} of {len(prompt)} "
            f"cards" + (f", {sum(gcs):.3f} ms in all, the longest {max(gcs):.3f} ms" if gcs else "")
        )
    cpu = sorted(r["loop_cpu_ns"] / 1e6 for r in records if r["prompts"] and "loop_cpu_ns" in r)
    if cpu:
        print(line("loop thread CPU, picked -> effects done", cpu))
    print(
        f"daemon CPU (all threads, /proc utime+stime) while dealing: {play_cpu_ms:.0f} ms, "
        f"{play_cpu_ms / max(1, traced_events):.3f} ms a journaled event"
    )
    print(
        f"daemon context switches (all threads, /proc) while dealing: {play_switches}, "
        f"{play_switches / max(1, traced_events):.1f} a journaled event"
    )
    print(f"idle {t1 - t0:.1f} s (heartbeat every {HEARTBEAT_S:g} s): "
          f"{idle_cpu:.2f}% of one core, {(s1 - s0) / (t1 - t0):.0f} context switches a "
          f"second, VmRSS {rss:.1f} MB")  # fmt: skip
    print(ran_on)
    print(
        f"prompt_p50_ms={percentile(prompt, 50):.3f} prompt_p99_ms={percentile(prompt, 99):.3f} "
        f"outbox_p50_ms={percentile(outbox, 50):.3f} outbox_p99_ms={percentile(outbox, 99):.3f} "
        f"rss_mb={rss:.1f} idle_cpu_pct={idle_cpu:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
