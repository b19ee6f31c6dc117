"""``bench/alternate.py``: what it reads off each benchmark and what it reports as the worst.

The benchmarks themselves run for minutes and are not tests; here their printed last lines
(as each prints them) go through the reading and the summary the closing figures rely on.
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "alternate.py"


def load():
    spec = importlib.util.spec_from_file_location("bench_alternate", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


alt = load()

# last lines as the four benchmarks print them (bench/replay_rounds.py, table_latency.py,
# jackpot_throughput.py)
REPLAY = "ran on: python 3.11.2 ...\nrounds_per_s={} events_per_s=1 rounds=2000 spots=7 game=pa\n"
PROMPT = "prompt_p50_ms={} prompt_p99_ms={} outbox_p50_ms=0.6 outbox_p99_ms=1.0 rss_mb=66.7\n"
LINK = "contributions_per_s={} broker_qos1_per_s={} p99_ms={}\n"


def results(tree: str, replay: float, p99: float, sqlite: tuple, postgresql: tuple, run=1):
    return [
        alt.Result(tree, "replay", alt.figures_of(REPLAY.format(replay)), run=run),
        alt.Result(tree, "prompt", alt.figures_of(PROMPT.format(p99 / 2, p99)), run=run),
        alt.Result(tree, "sqlite", alt.figures_of(LINK.format(*sqlite)), run=run),
        alt.Result(tree, "postgresql", alt.figures_of(LINK.format(*postgresql)), run=run),
    ]


def test_the_figures_are_the_last_lines_numbers_and_names_are_left_out():
    assert doctest.testmod(alt).failed == 0
    got = alt.figures_of(REPLAY.format(5767) + "\n\n")
    assert got == {"rounds_per_s": 5767.0, "events_per_s": 1.0, "rounds": 2000.0, "spots": 7.0}
    for bad in ("", "a line without figures\n", "rounds_per_s=fast\n"):
        with pytest.raises(alt.BenchError):
            alt.figures_of(bad)


def test_the_last_line_is_this_checkouts_worst_of_each_figure_and_its_lowest_ratio():
    taken = [
        *results("HEAD", 6000, 1.2, (8000, 10000, 3.0), (6000, 10000, 6.1)),
        *results("a065f08", 2500, 1.8, (2500, 10000, 41.0), (1400, 10000, 44.0)),
        *results("HEAD", 5300, 1.6, (7000, 10000, 9.7), (5000, 10000, 4.0), run=2),
        *results("a065f08", 2800, 1.5, (2400, 10000, 40.0), (1300, 10000, 9.5), run=2),
    ]
    summary = alt.Summary.of(["HEAD", "a065f08"], taken)
    line = summary.last_line()
    figures = dict(pair.split("=") for pair in line.split())
    assert figures == {
        "runs": "2",
        "rounds_per_s_min": "5300",
        "replay_ratio_min": f"{5300 / 2800:.2f}",  # run by run: 2.40 and 1.89
        "prompt_p99_ms_max": "1.600",
        "sqlite_share_min": "0.700",
        "postgresql_share_min": "0.500",
        "live_p99_ms_max": "9.7",  # the worse backend's (the baseline's 44 is not ours)
    }
    assert alt.figures_of(line)["replay_ratio_min"] == round(5300 / 2800, 2)
    table = "\n".join(summary.table())
    assert "postgresql_share" in table and "60.0%, 50.0%" in table and "14.0%, 13.0%" in table
    assert "2.40, 1.89 (to a065f08)" in table


def test_a_run_without_a_baseline_has_no_ratio():
    summary = alt.Summary.of(["HEAD"], results("HEAD", 5000, 1.0, (1, 2, 3.0), (1, 4, 5.0)))
    assert "replay_ratio_min" not in summary.last_line()
    assert "postgresql_share_min=0.250" in summary.last_line()


def test_an_unknown_benchmark_is_refused_with_the_ones_it_takes():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--benches", "replay,speed"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert "replay, prompt, sqlite, postgresql" in done.stderr and "speed" in done.stderr


def test_a_ratio_is_of_the_same_runs_replays_and_a_run_whose_replay_failed_has_none():
    taken = [
        *results("HEAD", 6000, 1.2, (8, 10, 3.0), (6, 10, 6.1), run=1),
        # run 1's baseline replay failed (not in the results), its other benches did not
        *results("a065f08", 2500, 1.8, (2, 10, 41.0), (1, 10, 44.0), run=1)[1:],
        *results("HEAD", 5000, 1.6, (7, 10, 9.7), (5, 10, 4.0), run=2),
        *results("a065f08", 2000, 1.5, (2, 10, 40.0), (1, 10, 9.5), run=2),
    ]
    summary = alt.Summary.of(["HEAD", "a065f08"], taken)
    assert summary.ratios == [2.5]  # not 6000 / 2000 (run 1's replay beside run 2's)


def test_a_benchmark_without_the_figures_the_summary_needs_is_an_error_not_a_traceback():
    older = alt.Result("old", "sqlite", alt.figures_of("contributions_per_s=5 p99_ms=3\n"))
    with pytest.raises(alt.BenchError, match="broker_qos1_per_s"):
        older.derived()
    silent = alt.Result("old", "postgresql", alt.figures_of(LINK.format(5, 0, 3.0)))
    with pytest.raises(alt.BenchError, match="broker_qos1_per_s=0"):
        silent.derived()


def test_two_interpreters_of_one_name_get_a_worktree_each(tmp_path):
    debian, pyenv = "/usr/bin/python3.11", "/root/.pyenv/versions/3.11.7/bin/python3.11"
    assert alt.tree_name("a" * 40, debian) != alt.tree_name("a" * 40, pyenv)
    assert alt.tree_name("a" * 40, debian) == alt.tree_name("a" * 40, debian)
    # and a venv made from another one is found out by its pyvenv.cfg
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2\n")
    assert alt.venv_home(tmp_path) == os.path.realpath("/usr/bin")
    assert alt.venv_home(tmp_path / "none") == ""
