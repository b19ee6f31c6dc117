"""bench/link_signing.py at its smallest size: it runs and its last line has the figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("sign_contribution_us", "verify_contribution_us", "sign_ack_us", "verify_ack_us",
        "digest_us", "per_message_us")  # fmt: skip


def test_the_signing_bench_prints_its_figures():
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "link_signing.py"), "--n", "20", "--repeat", "1"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    figures = dict(item.split("=") for item in out.stdout.strip().splitlines()[-1].split())
    assert tuple(figures) == KEYS
    values = {k: float(v) for k, v in figures.items()}
    assert all(v > 0 for v in values.values())
    parts = sum(v for k, v in values.items() if k != "per_message_us")
    assert abs(values["per_message_us"] - parts) < 0.5
