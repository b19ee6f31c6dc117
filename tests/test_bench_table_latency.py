"""``bench/table_latency.py --quick`` runs end to end and prints its figures.

Only the shape of the result is checked (the keys are there, the values are finite numbers,
each p99 is at least its p50): speed is what the bench reports, never what a test asserts.
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
BENCH = ROOT / "bench" / "table_latency.py"
KEYS = ("prompt_p50_ms", "prompt_p99_ms", "outbox_p50_ms", "outbox_p99_ms", "rss_mb",
        "idle_cpu_pct")  # fmt: skip


@pytest.mark.skipif(find_mosquitto() is None, reason="mosquitto is not installed")
def test_quick_run_prints_its_figures_as_the_last_line(tmp_path):
    saved = tmp_path / "cards.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(BENCH), "--quick", "--save", str(saved)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out, _ = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the bench stops its daemon, controller and broker
        out, _ = proc.communicate(timeout=30)
        pytest.fail(f"the bench did not finish:\n{out}")
    assert proc.returncode == 0, out
    last = out.strip().splitlines()[-1]
    # what ran it, before the figures: a figure of another interpreter is not comparable
    ran_on = out.strip().splitlines()[-2]
    assert ran_on.startswith(f"ran on: python {sys.version.split()[0]} "), ran_on
    assert " CPUs (" in ran_on and ", load " in ran_on, ran_on
    figures = dict(pair.split("=", 1) for pair in last.split())
    assert set(KEYS) <= set(figures), last
    values = {key: float(figures[key]) for key in KEYS}
    for key, value in values.items():
        assert math.isfinite(value), (key, last)
        # an idle daemon may use less CPU than one clock tick measures in the quick window
        assert value >= 0 if key == "idle_cpu_pct" else value > 0, (key, last)
    assert values["prompt_p99_ms"] >= values["prompt_p50_ms"]
    assert values["outbox_p99_ms"] >= values["outbox_p50_ms"]
    assert "the median prompt card and the slowest, stage by stage:" in out
    cards = [json.loads(line) for line in saved.read_text().splitlines()]
    frames = int(out.split(" card frames")[0].rsplit(" ", 1)[1])
    assert len(cards) == frames  # --save: every card's record, with its frame's write time
    assert all(c["carried_out_ns"] > c["committed_ns"] > c["sent_ns"] > 0 for c in cards)
