"""The table's web pages under load: live-page latency, request throughput, login, footprint.

The rig is bench/table_latency.py's (imported): a Mosquitto on a free loopback port, the
``jackpot-controller`` process, ``table-controller run`` on gpiozero's mock pins with the shipped
``tick_ms`` and ``TABLE_CONTROLLER_TRACE``, and the bench itself as the shoe on a raw pty
(``time.monotonic_ns()`` read just before each card frame's ``os.write``). The daemon's config
gets a ``[web]`` section on a free port whose ``password_hash`` has the production scrypt cost
(``hash_password(..., n=2**14)``). All HTTP goes over loopback from this process.

- live pages: the dealer display's ``/api/dealer/stream`` and the technicians' ``/api/stream``
  (after ``POST /login``) are read on raw sockets in threads; each ``event: update`` frame is
  stamped when its last byte arrives. A card's latency is card frame written -> the first
  frame whose layout holds that card at its place (round, spot or dealer, index). The rounds
  are table_latency's (2 spots, 10H 9C 6D 7S 8H 10C 9S, both stand, the dealer draws 9S); the
  hole card (shown as ``back`` until the dealer's turn) and the burn card after each shuffle
  are dealt but not measured, so a round measures 6 cards. The next card goes out once both
  streams showed the last one, after a random 0-100 ms (the streams poll the table every
  100 ms: without it the sends would lock to their phase). ``frame -> commit`` (the trace)
  is there to tell the table's share from the pages'.
- throughput: ``GET /api/status`` (logged in) and ``GET /api/dealer`` from 1 and from 8
  client threads, each on one keep-alive connection (as a browser) and on a new connection
  per request, ``--seconds`` each (8 runs): requests/s, p50/p99 of each request's round trip
  (connect included), the daemon's CPU over the window. On keep-alive a reply whose headers
  and body go out in two writes waits for the client's delayed ACK (Nagle: ~40 ms on Linux).
- login: round trip of ``POST /login`` with the right password (scrypt check), median of 10;
  and the same scrypt check in this process for comparison.
- footprint: the daemon's VmRSS with no stream open and with 8 open (4 dealer displays,
  4 diagnostics pages), and its utime+stime over ``--idle-s`` seconds (default 10) idle with
  those 8 streams open, as % of one core.

    .venv/bin/python bench/web_pages.py [--cards N] [--seconds S] [--idle-s S] [--json]

Prints the figures (``--json``: one JSON object instead); exit 1 if the rig does not come up,
a card never shows on a page, a request fails or a stream is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import math
import os
import random
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
import table_latency as tl  # noqa: E402
from mqtt_broker import free_port  # noqa: E402

from controller.rules.cards import parse_card  # noqa: E402
from controller.web.auth import hash_password, parse_hash  # noqa: E402

PASSWORD = "bench-felt-green-42"
USER = "Bench 0001"
HIDDEN = "back"
# where each card of a round lands (deal order: spot 1, spot 2, dealer up, spot 1, spot 2, hole;
# then the dealer's draw): (spot or "dealer", index in the hand); the hole card is not measured
PLACES = [(1, 0), (2, 0), ("dealer", 0), (1, 1), (2, 1), None, ("dealer", 2)]
MEASURED_PER_ROUND = sum(p is not None for p in PLACES)
STREAM_POLL_S = 0.1  # controller/web/front.py STREAM_POLL_S
SHOW_TIMEOUT_S = 5.0


class BenchError(RuntimeError):
    pass


def stats(values: list[float]) -> dict:
    s = sorted(values)
    if not s:
        return {"n": 0}
    return {
        "n": len(s),
        "p50_ms": round(tl.percentile(s, 50), 3),
        "p95_ms": round(tl.percentile(s, 95), 3),
        "p99_ms": round(tl.percentile(s, 99), 3),
        "max_ms": round(s[-1], 3),
    }


def layout(view: dict) -> set[tuple]:
    """(round, spot or "dealer", index, card) of every card a page's view shows."""
    snap = (view.get("status") or {}).get("snapshot") if "status" in view else view
    snap = snap or {}
    rnd = snap.get("round")
    out = set()
    for i, card in enumerate((snap.get("dealer") or {}).get("cards") or []):
        out.add((rnd, "dealer", i, card))
    for spot in snap.get("spots") or []:
        for card_index, card in enumerate((spot.get("hands") or [{}])[0].get("cards") or []):
            out.add((rnd, spot["spot"], card_index, card))
    return out


class Stream:
    """One server-sent-events page on a raw socket; a thread stamps and parses its frames."""

    def __init__(self, port: int, path: str, cookie: str | None, keep: bool = True) -> None:
        self.path = path
        self.keep = keep
        self.frames: list[tuple[int, set[tuple]]] = []  # (arrival ns, layout) when keep
        self.updates = 0
        self.bytes = 0
        self.status: int | None = None
        self.error: str | None = None
        self.cond = threading.Condition()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.settimeout(None)
        headers = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
        if cookie:
            headers += f"Cookie: tc_session={cookie}\r\n"
        self.sock.sendall((headers + "\r\n").encode())
        self.thread = threading.Thread(target=self._run, name=f"sse {path}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        buf = b""
        head = True
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                break
            arrived = time.monotonic_ns()
            if not chunk:
                break
            self.bytes += len(chunk)
            buf += chunk
            if head:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    continue
                self.status = int(buf.split(b" ", 2)[1])
                buf = buf[end + 4 :]
                head = False
                if self.status != 200:
                    self.error = f"{self.path}: HTTP {self.status} {buf[:300]!r}"
                    break
            while (end := buf.find(b"\n\n")) >= 0:
                frame, buf = buf[:end], buf[end + 2 :]
                event, data = "message", []
                for line in frame.split(b"\n"):
                    if line.startswith(b"event:"):
                        event = line[6:].strip().decode()
                    elif line.startswith(b"data:"):
                        data.append(line[5:].strip())
                if event != "update":
                    continue
                self.updates += 1
                if self.keep:
                    seen = layout(json.loads(b"\n".join(data)))
                    with self.cond:
                        self.frames.append((arrived, seen))
                        self.cond.notify_all()
        with self.cond:
            if self.error is None:
                self.error = f"{self.path}: the stream ended"
            self.cond.notify_all()

    def first_showing(self, key: tuple, since_ns: int, timeout: float) -> int:
        """Arrival time of the first frame after ``since_ns`` that holds ``key``."""
        deadline = time.monotonic() + timeout
        start = 0
        with self.cond:
            while True:
                for arrived, seen in self.frames[start:]:
                    if arrived >= since_ns and key in seen:
                        return arrived
                start = len(self.frames)
                if self.error is not None:
                    raise BenchError(self.error)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(f"{self.path}: {key} not shown within {timeout:g} s")
                self.cond.wait(left)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()
        self.thread.join(2)


class WebRig(tl.Rig):
    """table_latency's rig whose daemon config has a ``[web]`` section."""

    def __init__(self, tmp: Path, tick_ms: int, web: str) -> None:
        super().__init__(tmp, tick_ms)
        self.web = web

    def _start(self, name, argv, env=None):
        if name == "table":
            config = Path(argv[argv.index("--config") + 1])
            config.write_text(config.read_text() + f"\n[web]\n{self.web}\n", encoding="utf-8")
        return super()._start(name, argv, env)


def request(port: int, method: str, path: str, body: dict | None = None, cookie: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Cookie": f"tc_session={cookie}"} if cookie else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.getheader("Set-Cookie") or "", resp.read()
    finally:
        conn.close()


def login(port: int) -> str:
    status, cookie, body = request(port, "POST", "/login", {"name": USER, "password": PASSWORD})
    if status != 200 or "tc_session=" not in cookie:
        raise BenchError(f"login: HTTP {status} {body[:300]!r}")
    return cookie.split("tc_session=", 1)[1].split(";", 1)[0]


def wait_web(rig: WebRig, port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            request(port, "GET", "/healthz")
            return
        except OSError:
            if rig.table.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"no web server on port {port}:\n{rig.log('table')}") from None
            time.sleep(0.05)


def metric(port: int, name: str) -> float:
    status, _, body = request(port, "GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(f"table_controller_{name} "):
            return float(line.split()[1])
    raise BenchError(f"/metrics has no {name} (HTTP {status})")


def wait_streams(port: int, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (now := metric(port, "web_streams")) != n:
        if time.monotonic() > deadline:
            raise BenchError(f"the server counts {now:g} live streams, not {n}")
        time.sleep(0.1)


# -- (a) live pages ---------------------------------------------------------------------------


def live_latency(rig: WebRig, streams: list[Stream], rounds: int) -> dict:
    """Deal ``rounds`` rounds; per stream, card frame written -> first frame showing it."""
    cards = [parse_card(c) for c in tl.ROUND_CARDS]
    lat: dict[str, list[float]] = {s.path: [] for s in streams}
    commit: list[float] = []
    sent: list[int] = []
    rng = random.Random(7)

    def deal(card, key: tuple | None) -> None:
        time.sleep(rng.uniform(0, STREAM_POLL_S))
        t = rig.shoe.send("card", card=card)
        sent.append(t)
        rig.trace.wait_cards(len(sent))
        if key is None:
            return
        commit.append((rig.trace.cards[len(sent) - 1]["committed_ns"] - t) / 1e6)
        for s in streams:
            lat[s.path].append((s.first_showing(key, t, SHOW_TIMEOUT_S) - t) / 1e6)

    rig.act("input", name="sensors.1.main", active=True)
    rig.act("wager", spot=1, circle="main", amount=2500)
    rig.act("input", name="sensors.1.blazing_7s", active=True)
    rig.act("input", name="sensors.2.main", active=True)
    for n in range(rounds):
        if n % tl.ROUNDS_PER_SHOE == 0:  # the shoe shuffles; the dealer burns one card
            rig.trace.read()
            shoe_events = rig.trace.by_type.get("shoe", 0)
            rig.shoe.send("shuffle_start")
            rig.shoe.send("shuffle_end")
            rig.trace.wait_type("shoe", shoe_events + 1)
            deal(parse_card(tl.BURN), None)
        rig.act("press", name="console.lockout")
        number = rig.status()["status"]["snapshot"]["round"]
        for i, card in enumerate(cards):
            if i == tl.INITIAL:
                for _ in range(3):  # EZ Bust closed, spot 1 stands, spot 2 stands
                    rig.act("press", name="console.next")
            place = PLACES[i]
            deal(card, None if place is None else (number, *place, str(card)))
        rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", f"round {n + 1} settled")
        rig.act("press", name="console.end_round")
    refused = rig.status()["status"]["events_refused"]
    if refused:
        raise BenchError(f"the table refused {refused} events of the fixed rounds")
    return {"frames": len(sent), "commit": commit, **lat}


# -- (b) throughput ---------------------------------------------------------------------------


def hammer(
    port: int, pid: int, path: str, cookie: str | None, clients: int, keep: bool, seconds: float
) -> dict:
    """``clients`` threads GET ``path`` back to back, on one keep-alive connection each
    (``keep``) or on a new connection for every request (the connect is in its time)."""
    per: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    start = threading.Barrier(clients + 1)
    stop = threading.Event()
    headers = {"Cookie": f"tc_session={cookie}"} if cookie else {}

    def client(out: list[float]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            if keep:
                conn.connect()
            start.wait()
            while not stop.is_set():
                t0 = time.perf_counter_ns()
                conn.request("GET", path, headers=headers)
                resp = conn.getresponse()
                body = resp.read()
                if not keep:
                    conn.close()
                out.append((time.perf_counter_ns() - t0) / 1e6)
                if resp.status != 200:
                    errors.append(f"HTTP {resp.status} {body[:200]!r}")
                    return
        except (OSError, http.client.HTTPException) as exc:
            errors.append(repr(exc))
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(out,), daemon=True) for out in per]
    for t in threads:
        t.start()
    start.wait()
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0 = time.monotonic(), tl.cpu_ticks(pid)
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(15)
    t1, c1 = time.monotonic(), tl.cpu_ticks(pid)
    if errors:
        raise BenchError(f"GET {path} x{clients} keep={keep}: {errors[0]}")
    lat = sorted(x for out in per for x in out)
    if not lat:
        raise BenchError(f"GET {path} x{clients}: no request answered")
    return {
        "path": path,
        "clients": clients,
        "connection": "keep-alive" if keep else "new",
        "requests": len(lat),
        "rps": round(len(lat) / (t1 - t0), 1),
        "p50_ms": round(tl.percentile(lat, 50), 3),
        "p99_ms": round(tl.percentile(lat, 99), 3),
        "daemon_cpu_pct": round((c1 - c0) / hz / (t1 - t0) * 100, 1),
    }


# -- (c) login ----------------------------------------------------------------------------------


def login_cost(port: int, stored: str, n: int = 10) -> dict:
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        login(port)
        times.append((time.perf_counter_ns() - t0) / 1e6)
    h = parse_hash(stored)
    local = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        hashlib.scrypt(
            PASSWORD.encode(), salt=h.salt, n=h.n, r=h.r, p=h.p, dklen=len(h.key), maxmem=2**27
        )
        local.append((time.perf_counter_ns() - t0) / 1e6)
    return {
        "n": n,
        "scrypt_n": h.n,
        "median_ms": round(statistics.median(times), 3),
        "min_ms": round(min(times), 3),
        "max_ms": round(max(times), 3),
        "scrypt_here_median_ms": round(statistics.median(local), 3),
    }


# -- (d) footprint ------------------------------------------------------------------------------


def footprint(port: int, pid: int, cookie: str, idle_s: float) -> dict:
    wait_streams(port, 0)
    rss_none = tl.rss_mb(pid)
    streams = [Stream(port, "/api/dealer/stream", None, keep=False) for _ in range(4)]
    streams += [Stream(port, "/api/stream", cookie, keep=False) for _ in range(4)]
    try:
        wait_streams(port, 8)
        time.sleep(1.0)
        rss_open = tl.rss_mb(pid)
        updates0 = sum(s.updates for s in streams)
        bytes0 = sum(s.bytes for s in streams)
        hz = os.sysconf("SC_CLK_TCK")
        t0, c0 = time.monotonic(), tl.cpu_ticks(pid)
        time.sleep(idle_s)
        t1, c1 = time.monotonic(), tl.cpu_ticks(pid)
        rss_after = tl.rss_mb(pid)
        for s in streams:
            if s.error is not None:
                raise BenchError(s.error)
        updates = sum(s.updates for s in streams) - updates0
        sent = sum(s.bytes for s in streams) - bytes0
    finally:
        for s in streams:
            s.close()
    return {
        "rss_mb_no_streams": round(rss_none, 1),
        "rss_mb_8_streams": round(max(rss_open, rss_after), 1),
        "idle_s": round(t1 - t0, 2),
        "idle_cpu_pct_8_streams": round((c1 - c0) / hz / (t1 - t0) * 100, 2),
        "stream_updates_per_s": round(updates / (t1 - t0), 1),
        "stream_kb_per_s": round(sent / 1024 / (t1 - t0), 1),
    }


# -- the run ------------------------------------------------------------------------------------


def run(args: argparse.Namespace, rounds: int) -> dict:
    started = time.monotonic()
    stored = hash_password(PASSWORD, n=2**14)
    port = free_port()
    web = f'bind = "127.0.0.1"\nport = {port}\npassword_hash = "{stored}"'
    result: dict = {
        "machine": {"nproc": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()]},
    }
    with tempfile.TemporaryDirectory(prefix="web-pages-") as tmp_name:
        rig = WebRig(Path(tmp_name), args.tick_ms, web)
        streams: list[Stream] = []
        try:
            rig.start()
            wait_web(rig, port)
            pid = rig.table.pid
            cookie = login(port)
            streams = [
                Stream(port, "/api/dealer/stream", None),
                Stream(port, "/api/stream", cookie),
            ]
            wait_streams(port, 2)
            live = live_latency(rig, streams, rounds)
            for s in streams:
                s.close()
            streams = []
            wait_streams(port, 0)  # the server's stream threads have seen them go
            result["cards"] = {
                "rounds": rounds,
                "frames": live["frames"],
                "measured": len(live["commit"]),
            }
            result["live"] = {
                "dealer_stream": stats(live["/api/dealer/stream"]),
                "diag_stream": stats(live["/api/stream"]),
                "frame_to_commit": stats(live["commit"]),
            }
            result["login"] = login_cost(port, stored)
            result["throughput"] = [
                hammer(port, pid, path, auth, clients, keep, args.seconds)
                for path, auth in (("/api/status", cookie), ("/api/dealer", None))
                for keep in (True, False)
                for clients in (1, 8)
            ]
            result["daemon"] = footprint(port, pid, cookie, args.idle_s)
        finally:
            for s in streams:
                s.close()
            rig.stop()
    result["wall_s"] = round(time.monotonic() - started, 1)
    return result


def report(r: dict) -> None:
    m, c = r["machine"], r["cards"]
    print(
        f"machine: {m['nproc']} CPUs, load average {' '.join(map(str, m['loadavg']))} at start; "
        f"run {r['wall_s']} s"
    )
    print(
        f"(a) live pages: {c['rounds']} rounds, {c['frames']} card frames, {c['measured']} "
        f"measured (hole and burn cards not shown, not measured)"
    )
    for name, label in (
        ("dealer_stream", "card -> /api/dealer/stream"),
        ("diag_stream", "card -> /api/stream"),
        ("frame_to_commit", "  card -> journal commit"),
    ):
        s = r["live"][name]
        print(
            f"  {label:<28} n={s['n']:<4} p50 {s['p50_ms']:8.3f}  p95 {s['p95_ms']:8.3f}  "
            f"p99 {s['p99_ms']:8.3f}  max {s['max_ms']:8.3f} ms"
        )
    print("(b) throughput (requests back to back; keep-alive connection or a new one each):")
    for t in r["throughput"]:
        print(
            f"  GET {t['path']:<12} x{t['clients']:<2} {t['connection']:<10} {t['rps']:7.1f} "
            f"req/s ({t['requests']:>5})  p50 {t['p50_ms']:7.3f} ms  p99 {t['p99_ms']:7.3f} ms"
            f"  daemon CPU {t['daemon_cpu_pct']:.0f}%"
        )
    lg = r["login"]
    print(
        f"(c) POST /login (scrypt N={lg['scrypt_n']}): median {lg['median_ms']:.1f} ms of "
        f"{lg['n']} (min {lg['min_ms']:.1f}, max {lg['max_ms']:.1f}); the same scrypt check "
        f"in the bench process {lg['scrypt_here_median_ms']:.1f} ms"
    )
    d = r["daemon"]
    print(
        f"(d) daemon VmRSS {d['rss_mb_no_streams']:.1f} MB no stream, "
        f"{d['rss_mb_8_streams']:.1f} MB with 8 streams; idle {d['idle_s']:.1f} s with 8 "
        f"streams: {d['idle_cpu_pct_8_streams']:.2f}% of one core "
        f"({d['stream_updates_per_s']:.1f} updates/s, {d['stream_kb_per_s']:.1f} KiB/s)"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--cards",
        type=int,
        default=100,
        help=f"cards to measure (rounds of {MEASURED_PER_ROUND}; default 100)",
    )
    p.add_argument(
        "--seconds", type=float, default=2.0, help="each throughput run (8 runs; default 2)"
    )
    p.add_argument(
        "--idle-s",
        type=float,
        default=10.0,
        help="idle CPU window with 8 streams open (default 10)",
    )
    p.add_argument("--tick-ms", type=int, default=100, help="the table's tick_ms (as shipped)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.cards < 1 or args.seconds <= 0 or args.idle_s <= 0:
        p.error("--cards must be >= 1, --seconds and --idle-s > 0")
    rounds = math.ceil(args.cards / MEASURED_PER_ROUND)
    # a SIGTERM (a test's timeout) stops the children too, through run()'s finally
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        result = run(args, rounds)
    except RuntimeError as exc:  # BenchError, and the rig's own RuntimeErrors
        print(f"FAILED: {exc}")
        return 1
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
