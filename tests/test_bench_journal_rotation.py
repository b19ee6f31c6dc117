"""``bench/journal_rotation.py`` runs end to end on a small day and prints its figures.

Only the shape of the result is checked (the keys, positive finite numbers, an archive
written): speed is what the bench reports, never what a test asserts.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "journal_rotation.py"


def test_a_small_day_prints_its_figures_as_the_last_line():
    out = subprocess.run(
        [sys.executable, str(BENCH), "--rounds", "30", "--runs", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    figures = dict(pair.split("=", 1) for pair in lines[-1].split())
    assert tuple(figures) == ("rotation_ms", "archive_mb", "recovery_after_ms"), lines[-1]
    for key, text in figures.items():
        value = float(text)
        assert math.isfinite(value) and value > 0, (key, lines[-1])
    assert "run 1: 30 rounds" in out.stdout
