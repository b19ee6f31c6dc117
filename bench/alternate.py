"""Issue 32's four figures, this checkout beside earlier commits, run alternately.

Run from the repository root: ``python3 bench/alternate.py --baseline a065f08``. Not a test.

Figures of this project's machines are comparable only when taken in the same minutes: the
same code ran twice as fast on one day as on another (docs/runtime.md "Benchmarks"). This
runs the four benchmarks of issue 32 on this checkout and on each ``--baseline`` commit in
turn, ``--runs`` times, nothing of its own in between, so each run of a baseline sits beside
one of this checkout:

- ``bench/replay_rounds.py --rounds 2000 --repeat 5``: ``rounds_per_s``;
- ``bench/table_latency.py``: ``prompt_p50_ms``, ``prompt_p99_ms``;
- ``bench/jackpot_throughput.py`` and ``--ledger postgresql``: ``contributions_per_s`` over
  ``broker_qos1_per_s`` (the share of raw QoS 1) and the live ``p99_ms``.

A baseline is checked out as a git worktree under ``--work`` (default ``.bench-trees/``,
ignored by git) with a venv of its own made by its own ``scripts/setup.sh`` on the same
interpreter as this checkout's ``.venv`` unless ``--python`` names another (pyenv's, say, to
stand beside figures of another interpreter). A run prints its figures as it goes, a line a
benchmark; at the end, each figure's range for each tree and, as the last line, this
checkout's worst figure of each kind and its lowest replay ratio to the first baseline:
``runs=... rounds_per_s_min=... replay_ratio_min=... prompt_p99_ms_max=...
sqlite_share_min=... postgresql_share_min=... live_p99_ms_max=...``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BENCHES: dict[str, tuple[str, ...]] = {
    "replay": ("bench/replay_rounds.py", "--rounds", "2000", "--repeat", "5"),
    "prompt": ("bench/table_latency.py",),
    "sqlite": ("bench/jackpot_throughput.py",),
    "postgresql": ("bench/jackpot_throughput.py", "--ledger", "postgresql"),
}
QUICK: dict[str, tuple[str, ...]] = {
    "replay": ("--rounds", "200", "--repeat", "1"),
    "prompt": ("--quick",),
    "sqlite": ("--rounds", "100", "--raw", "500", "--live", "5"),
    "postgresql": ("--rounds", "100", "--raw", "500", "--live", "5"),
}


class BenchError(Exception):
    """A benchmark that failed or printed no figures, or a tree that could not be made."""


def figures_of(output: str) -> dict[str, float]:
    """The ``key=value`` pairs of a benchmark's last non-empty line, as numbers.

    >>> figures_of("replay 1: ...\\nrounds_per_s=5767 events_per_s=233144 game=pa-standard\\n")
    {'rounds_per_s': 5767.0, 'events_per_s': 233144.0}
    """
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        raise BenchError("printed nothing")
    out: dict[str, float] = {}
    for pair in lines[-1].split():
        key, sep, value = pair.partition("=")
        if not sep:
            continue
        try:
            out[key] = float(value)
        except ValueError:
            continue  # a name (game=...), not a figure
    if not out:
        raise BenchError(f"no key=value figures on its last line: {lines[-1]!r}")
    return out


@dataclass
class Result:
    """One benchmark's run on one tree: its figures, when (UTC) and the 1-minute load
    before it."""

    tree: str
    bench: str
    figures: dict[str, float]
    at: str = ""
    load: float = 0.0

    def derived(self) -> dict[str, float]:
        """The figures the goals are stated in: ``rounds_per_s``; ``prompt_p50_ms`` and
        ``prompt_p99_ms``; ``<ledger>_share`` (contributions over raw QoS 1, a fraction) and
        ``<ledger>_live_p99_ms``."""
        f = self.figures
        if self.bench == "replay":
            return {"rounds_per_s": f["rounds_per_s"]}
        if self.bench == "prompt":
            return {"prompt_p50_ms": f["prompt_p50_ms"], "prompt_p99_ms": f["prompt_p99_ms"]}
        return {
            f"{self.bench}_share": f["contributions_per_s"] / f["broker_qos1_per_s"],
            f"{self.bench}_live_p99_ms": f["p99_ms"],
        }


@dataclass
class Summary:
    """Each tree's figures, in the order they were taken."""

    trees: list[str]
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    ratios: list[float] = field(default_factory=list)
    """This checkout's replay over the first baseline's in the same run (run by run)."""

    @classmethod
    def of(cls, trees: list[str], results: list[Result]) -> Summary:
        summary = cls(trees)
        replays: dict[str, list[float]] = {}
        for r in results:
            for key, value in r.derived().items():
                summary.values.setdefault(r.tree, {}).setdefault(key, []).append(value)
            if r.bench == "replay":
                replays.setdefault(r.tree, []).append(r.figures["rounds_per_s"])
        if len(trees) > 1:
            ours, theirs = replays.get(trees[0], []), replays.get(trees[1], [])
            summary.ratios = [a / b for a, b in zip(ours, theirs, strict=False) if b > 0]
        return summary

    def last_line(self) -> str:
        """This checkout's worst of each figure (the goals are floors and ceilings)."""
        mine = self.values.get(self.trees[0], {})
        parts = [f"runs={max((len(v) for v in mine.values()), default=0)}"]

        def add(name: str, key: str, worst: object, fmt: str) -> None:
            if key in mine:
                parts.append(f"{name}={format(worst(mine[key]), fmt)}")  # type: ignore[operator]

        add("rounds_per_s_min", "rounds_per_s", min, ".0f")
        if self.ratios:
            parts.append(f"replay_ratio_min={min(self.ratios):.2f}")
        add("prompt_p99_ms_max", "prompt_p99_ms", max, ".3f")
        add("sqlite_share_min", "sqlite_share", min, ".3f")
        add("postgresql_share_min", "postgresql_share", min, ".3f")
        live = mine.get("sqlite_live_p99_ms", []) + mine.get("postgresql_live_p99_ms", [])
        if live:
            parts.append(f"live_p99_ms_max={max(live):.1f}")
        return " ".join(parts)

    def table(self) -> list[str]:
        """A line a figure and tree: its values in order."""
        lines = []
        width = max(len(t) for t in self.trees)
        keys = sorted({k for per in self.values.values() for k in per})
        for key in keys:
            for tree in self.trees:
                got = self.values.get(tree, {}).get(key)
                if got:
                    shown = ", ".join(_show(key, v) for v in got)
                    lines.append(f"{key:26} {tree:{width}} {shown}")
        if self.ratios:
            shown = ", ".join(f"{r:.2f}" for r in self.ratios)
            first = self.trees[0]
            lines.append(f"{'replay_ratio':26} {first:{width}} {shown} (to {self.trees[1]})")
        return lines


def _show(key: str, value: float) -> str:
    if key.endswith("_share"):
        return f"{100 * value:.1f}%"
    if key == "rounds_per_s":
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise BenchError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def tree_of(rev: str, work: Path, python: str) -> Path:
    """A worktree of ``rev`` under ``work`` with its own ``.venv`` (made once)."""
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = work / f"{commit[:12]}-{Path(python).name}"
    if not (path / ".git").exists():
        work.mkdir(parents=True, exist_ok=True)
        _git("worktree", "add", "--detach", str(path), commit)
    if not (path / ".venv" / "bin" / "python").exists():
        print(f"making {path}/.venv with {python} (a few minutes the first time)", flush=True)
        done = subprocess.run(
            ["bash", "scripts/setup.sh"],
            cwd=path,
            env={**os.environ, "PYTHON": python},
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise BenchError(f"scripts/setup.sh in {path} failed:\n{done.stderr[-2000:]}")
    return path


def run_bench(path: Path, tree: str, bench: str, quick: bool) -> Result:
    args = BENCHES[bench] + (QUICK[bench] if quick else ())
    load = os.getloadavg()[0]
    at = time.strftime("%H:%M:%S", time.gmtime())
    done = subprocess.run(
        [str(path / ".venv" / "bin" / "python"), *args],
        cwd=path,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        tail = (done.stdout + done.stderr)[-1500:]
        raise BenchError(f"{tree}: {' '.join(args)} exited {done.returncode}:\n{tail}")
    try:
        figures = figures_of(done.stdout)
    except BenchError as exc:
        raise BenchError(f"{tree}: {' '.join(args)} {exc}") from None
    return Result(tree, bench, figures, at, load)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="REV",
        help="a commit to run beside this checkout (repeatable; the first is the replay ratio's)",
    )
    p.add_argument("--runs", type=int, default=3, help="rounds of all trees (default 3)")
    p.add_argument(
        "--benches",
        default=",".join(BENCHES),
        help=f"which, comma-separated (default {','.join(BENCHES)})",
    )
    p.add_argument("--python", help="the baselines' interpreter (default: this .venv's)")
    p.add_argument(
        "--work",
        type=Path,
        default=ROOT / ".bench-trees",
        help="where the baselines' worktrees go (default .bench-trees/)",
    )
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    args = p.parse_args(argv)
    benches = [b.strip() for b in args.benches.split(",") if b.strip()]
    unknown = [b for b in benches if b not in BENCHES]
    if unknown or not benches or args.runs < 1:
        p.error(f"--benches takes {', '.join(BENCHES)}; --runs at least 1 (got {unknown})")
    here = ROOT / ".venv" / "bin" / "python"
    if not here.exists():
        p.error("no .venv here: run `bash scripts/setup.sh` first")
    ask = "import sys; print(getattr(sys, '_base_executable', sys.executable))"
    made_from = subprocess.run([str(here), "-c", ask], capture_output=True, text=True, check=True)
    base = os.path.realpath(made_from.stdout.strip())
    python = args.python or base
    try:
        # this checkout as it is: its commit, and "+changes" where it differs from it
        changed = "+changes" if _git("status", "--porcelain", "--untracked-files=no") else ""
        trees = [("HEAD " + _git("rev-parse", "--short", "HEAD") + changed, ROOT)]
        for rev in args.baseline:
            trees.append((rev, tree_of(rev, args.work, python)))
        results: list[Result] = []
        for run in range(1, args.runs + 1):
            for name, path in trees:
                for bench in benches:
                    r = run_bench(path, name, bench, args.quick)
                    results.append(r)
                    shown = " ".join(f"{k}={_show(k, v)}" for k, v in r.derived().items())
                    print(
                        f"{r.at} load {r.load:.2f} run {run} {name:16} {bench:10} {shown}",
                        flush=True,
                    )
    except BenchError as exc:
        print(f"alternate: {exc}", file=sys.stderr)
        return 1
    summary = Summary.of([name for name, _ in trees], results)
    print(f"baselines on {python}; this checkout on {base}")
    print(*summary.table(), sep="\n")
    print(summary.last_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
