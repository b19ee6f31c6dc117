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
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LINK = "bench/jackpot_throughput.py"
LINK_SIZES = ("--rounds", "2000", "--raw", "5000", "--live", "40")
"""Given, not left to each commit's defaults (a065f08's backlog was 400 rounds)."""
LINK_QUICK = ("--rounds", "100", "--raw", "500", "--live", "5")

BENCHES: dict[str, tuple[str, ...]] = {
    "replay": ("bench/replay_rounds.py", "--rounds", "2000", "--repeat", "5"),
    "prompt": ("bench/table_latency.py",),
    "sqlite": (LINK, *LINK_SIZES),
    "postgresql": (LINK, "--ledger", "postgresql", *LINK_SIZES),
}
QUICK: dict[str, tuple[str, ...]] = {  # after the above: the later option wins
    "replay": ("--rounds", "200", "--repeat", "1"),
    "prompt": ("--quick",),
    "sqlite": LINK_QUICK,
    "postgresql": LINK_QUICK,
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
    run: int = 0

    def derived(self) -> dict[str, float]:
        """The figures the goals are stated in: ``rounds_per_s``; ``prompt_p50_ms`` and
        ``prompt_p99_ms``; ``<ledger>_share`` (contributions over raw QoS 1, a fraction) and
        ``<ledger>_live_p99_ms``."""
        f = self.figures
        try:
            if self.bench == "replay":
                return {"rounds_per_s": f["rounds_per_s"]}
            if self.bench == "prompt":
                return {"prompt_p50_ms": f["prompt_p50_ms"], "prompt_p99_ms": f["prompt_p99_ms"]}
            return {
                f"{self.bench}_share": f["contributions_per_s"] / f["broker_qos1_per_s"],
                f"{self.bench}_live_p99_ms": f["p99_ms"],
            }
        except KeyError as exc:
            raise BenchError(f"no {exc.args[0]} among its figures") from None
        except ZeroDivisionError:
            raise BenchError("broker_qos1_per_s=0") from None


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
        replays: dict[tuple[str, int], float] = {}
        for r in results:
            for key, value in r.derived().items():
                summary.values.setdefault(r.tree, {}).setdefault(key, []).append(value)
            if r.bench == "replay":
                replays[(r.tree, r.run)] = r.figures["rounds_per_s"]
        if len(trees) > 1:  # run by run, where both trees' replays of the run are there
            runs = sorted({run for _tree, run in replays})
            pairs = [(replays.get((trees[0], n)), replays.get((trees[1], n))) for n in runs]
            summary.ratios = [a / b for a, b in pairs if a is not None and b]
        return summary

    def last_line(self) -> str:
        """This checkout's worst of each figure (the goals are floors and ceilings)."""
        mine = self.values.get(self.trees[0], {})
        parts = [f"runs={max((len(v) for v in mine.values()), default=0)}"]

        def add(name: str, key: str, worst: Callable[[list[float]], float], fmt: str) -> None:
            if key in mine:
                parts.append(f"{name}={format(worst(mine[key]), fmt)}")

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


def interpreter(python: str) -> str:
    """``python`` (a path or a name on ``PATH``) as the real file it runs."""
    found = shutil.which(python)
    if found is None:
        raise BenchError(f"no interpreter {python!r}: give a path (--python /usr/bin/python3)")
    return os.path.realpath(found)


def tree_name(commit: str, python: str) -> str:
    """The folder of ``commit``'s worktree for the interpreter at ``python`` (a real path):
    two interpreters of one name (Debian's and pyenv's ``python3.11``) get a folder each.

    >>> tree_name("a065f085e69e0000", "/usr/bin/python3.11")
    'a065f085e69e-python3.11-ca3ed7'
    """
    digest = hashlib.sha256(python.encode()).hexdigest()[:6]
    return f"{commit[:12]}-{Path(python).name}-{digest}"


def venv_home(venv: Path) -> str:
    """The folder of the interpreter a venv was made from (``home`` in its ``pyvenv.cfg``)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return os.path.realpath(value.strip())
    return ""


def tree_of(rev: str, work: Path, python: str) -> Path:
    """A worktree of ``rev`` under ``work`` with its own ``.venv`` on ``python`` (a real
    path), set up by the commit's own ``scripts/setup.sh`` (run each time: it does nothing
    more where the venv is complete, and finishes one an earlier run left half made)."""
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = work / tree_name(commit, python)
    if not (path / ".git").exists():
        work.mkdir(parents=True, exist_ok=True)
        _git("worktree", "prune")  # a tree's folder removed by hand is still registered
        _git("worktree", "add", "--detach", str(path), commit)
    print(f"setting up {path}/.venv with {python} (minutes the first time)", flush=True)
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
    home = venv_home(path / ".venv")
    if home != os.path.dirname(python):
        raise BenchError(
            f"{path}/.venv was made from {home or '?'}, not {python}: remove the folder "
            "(git worktree remove --force) and run again"
        )
    return path


def run_bench(path: Path, tree: str, bench: str, quick: bool, run: int = 0) -> Result:
    """One benchmark on one tree; :class:`BenchError` if it failed or printed no figures."""
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
        result = Result(tree, bench, figures_of(done.stdout), at, load, run)
        result.derived()  # the figures the summary needs are there
    except BenchError as exc:
        raise BenchError(f"{tree}: {' '.join(args)}: {exc}") from None
    return result


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
    base = venv_home(ROOT / ".venv")
    base = os.path.join(base, "python3") if base else str(here)
    failed: list[str] = []
    results: list[Result] = []
    try:
        python = interpreter(args.python or base)
        # this checkout as it is: its commit, and "+changes" where it differs from it
        changed = "+changes" if _git("status", "--porcelain", "--untracked-files=no") else ""
        trees = [("HEAD " + _git("rev-parse", "--short", "HEAD") + changed, ROOT)]
        for rev in args.baseline:
            trees.append((rev, tree_of(rev, args.work, python)))
    except BenchError as exc:
        print(f"alternate: {exc}", file=sys.stderr)
        return 1
    for run in range(1, args.runs + 1):
        for name, path in trees:
            for bench in benches:
                try:
                    r = run_bench(path, name, bench, args.quick, run)
                except BenchError as exc:  # reported, and the others go on
                    failed.append(f"run {run} {name} {bench}")
                    print(f"alternate: run {run}: {exc}", file=sys.stderr, flush=True)
                    continue
                results.append(r)
                shown = " ".join(f"{k}={_show(k, v)}" for k, v in r.derived().items())
                print(
                    f"{r.at} load {r.load:.2f} run {run} {name:16} {bench:10} {shown}",
                    flush=True,
                )
    summary = Summary.of([name for name, _ in trees], results)
    print(f"baselines on {python}; this checkout on {interpreter(base)}")
    print(*summary.table(), sep="\n")
    if failed:
        print(f"failed ({len(failed)}): " + "; ".join(failed))
    print(summary.last_line())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
