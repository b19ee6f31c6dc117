"""``bench/journal_recovery.py --quick`` runs end to end and prints its figures.

Only the shape of the result is checked (the three keys, positive finite numbers, and that
the journals were really built and replayed): speed is what the bench reports, never what a
test asserts.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "journal_recovery.py"
KEYS = ("recovery_ms_1k", "recovery_ms_100k", "journal_mb_100k")


def test_quick_run_prints_its_figures_as_the_last_line(tmp_path):
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    figures = dict(pair.split("=", 1) for pair in lines[-1].split())
    assert tuple(figures) == KEYS, lines[-1]
    for key, text in figures.items():
        value = float(text)
        assert math.isfinite(value) and value > 0, (key, lines[-1])
    found = re.findall(r"(\d+) events in the journal, (\d+) replayed", out.stdout)
    stored = [int(total) for total, _ in found]
    assert len(stored) == 2 and stored[1] > stored[0] > 0, out.stdout
    replayed = [int(n) for _, n in found]  # from the newest checkpoint: about one round
    assert all(0 < n < stored[0] for n in replayed), out.stdout
    assert list(tmp_path.iterdir()) == [], "without --keep the journals are removed"
