"""``bench/web_pages.py`` at its smallest size runs end to end and prints its figures as JSON.

Only the shape and sanity of the result are checked (every figure is there and finite, the
latencies positive and ordered, requests answered): speed is what the bench reports, never
what a test asserts.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mqtt_broker import find_mosquitto

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "web_pages.py"
PERCENTILES = ("p50_ms", "p95_ms", "p99_ms", "max_ms")


def positive(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.mark.skipif(find_mosquitto() is None, reason="mosquitto is not installed")
def test_smallest_run_prints_sane_figures_as_json():
    proc = subprocess.Popen(
        [sys.executable, str(BENCH), "--cards", "10", "--seconds", "1", "--idle-s", "2", "--json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the bench stops its daemon, controller and broker
        out, _ = proc.communicate(timeout=30)
        pytest.fail(f"the bench did not finish:\n{out}")
    assert proc.returncode == 0, out
    result = json.loads(out)

    cards = result["cards"]
    assert cards["rounds"] == 2  # 6 measured cards a round
    assert cards["measured"] == 12
    assert cards["frames"] == 15  # + the hole cards and the burn card
    for name in ("dealer_stream", "diag_stream", "frame_to_commit"):
        figures = result["live"][name]
        assert figures["n"] == cards["measured"], (name, figures)
        values = [figures[key] for key in PERCENTILES]
        assert all(positive(v) for v in values), (name, figures)
        assert values == sorted(values), (name, figures)
    # the pages show a card only after the table journaled it
    assert result["live"]["dealer_stream"]["p50_ms"] > result["live"]["frame_to_commit"]["p50_ms"]

    runs = result["throughput"]
    assert {(r["path"], r["clients"], r["connection"]) for r in runs} == {
        (path, clients, connection)
        for path in ("/api/status", "/api/dealer")
        for clients in (1, 8)
        for connection in ("keep-alive", "new")
    }
    for run in runs:
        assert run["requests"] > 0 and positive(run["rps"]), run
        assert positive(run["p50_ms"]) and run["p99_ms"] >= run["p50_ms"], run
        assert run["daemon_cpu_pct"] >= 0, run

    login = result["login"]
    assert login["n"] == 10 and login["scrypt_n"] == 2**14
    assert positive(login["median_ms"]) and login["min_ms"] <= login["median_ms"] <= login["max_ms"]
    assert positive(login["scrypt_here_median_ms"])

    daemon = result["daemon"]
    assert positive(daemon["rss_mb_no_streams"]) and positive(daemon["rss_mb_8_streams"])
    assert daemon["idle_cpu_pct_8_streams"] >= 0  # may be under one clock tick in 2 s
    assert positive(daemon["stream_updates_per_s"])  # 8 pages, each a full update a second
    assert result["machine"]["nproc"] >= 1
