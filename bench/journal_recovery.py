"""Recovery time of a table's journal: a small and a large journal of 7-spot rounds.

Run from the repository root: ``python3 bench/journal_recovery.py``. Not a test.

Building. Each journal is written by a real :class:`~controller.journal.JournaledTable`
fed the seeded 7-spot rounds of ``bench/replay_rounds.py`` (its generator, streamed
round by round), with the jackpot controller's acknowledgements applied every 100
rounds through :class:`~controller.journal.outbox.Outbox` as a live link would (the outbox holds
what a connected table's holds, not months of messages). The small journal is built
with the production settings (WAL, ``synchronous = FULL``: an fsync per event) and its
build rate is reported. The large one would take hours at that rate on a loaded disk, so
by default it is built with ``PRAGMA synchronous = OFF`` set on the table's connection
after it opened the file (``--build-sync full`` to build it as in production).
``synchronous`` decides only when SQLite waits for the disk, never what it writes: the
file is the one the table would have written with FULL (byte for byte: checked at 300
rounds, 1.4 s against 3.5 s here). That bench-only switch is this
file's and nothing in ``controller/`` offers it. With ``--dir DIR --keep`` the journals
stay in DIR under a name keyed by rounds, seed, game, schema version and software version
and a later run reuses them (a ``.done`` file marks a finished build).

Measuring. Recovery is opening a ``JournaledTable`` on the existing file (production
settings: WAL, FULL; the writer's lock and boot counter; every event replayed and every
round record compared) until the constructor returns a ready table: timed in a fresh
Python process each run (``--runs``, the median is reported), so no object of the
build helps; interpreter start and imports are not timed. The OS page cache is not
dropped: the file was just written, so the runs read it from memory (a warm start, as
after a daemon crash; a power cut also pays the SD card's reads). ``--cold`` asks the
kernel to evict the file's cached pages before each run (``posix_fadvise`` DONTNEED,
no root needed; a hint it may not honour fully).

The last line is ``recovery_ms_1k=... recovery_ms_100k=... journal_mb_100k=...``: the
small and large journals' median recovery in milliseconds and the large file's size in
MB (10^6 bytes, WAL included); the keys keep their names whatever ``--rounds-small`` and
``--rounds-large`` are (the human lines above say the sizes). ``--quick``: 20 and 200
rounds, one run each, for the smoke test.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from replay_rounds import SPOTS, Generator  # noqa: E402

from controller import __version__  # noqa: E402
from controller.games import load_game  # noqa: E402
from controller.journal import SCHEMA_VERSION, JournaledTable  # noqa: E402
from controller.journal.outbox import Outbox  # noqa: E402
from controller.table import TableSettings  # noqa: E402

ACK_EVERY = 100  # rounds between the jackpot controller's acknowledgements


def journal_name(rounds: int, seed: int, game: str, every: int = 0) -> str:
    cp = f"-cp{every}" if every else "-nocp"
    return f"recovery-{rounds}r-seed{seed}-{game}-schema{SCHEMA_VERSION}{cp}-v{__version__}.journal"


def _files(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def _all_files(path: Path) -> list[Path]:
    """The journal's files and the bench's marker and the writer's lock, present or not."""
    return [path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}.done"),
            Path(f"{path}.lock")]  # fmt: skip


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in _files(path)) / 1e6


def build(
    path: Path, game: str, rounds: int, seed: int, synchronous: str, every: int = 0
) -> tuple[float, int]:
    """Journal ``rounds`` generated rounds into a new file at ``path`` (with checkpoints
    as the daemon writes them: each round's end and every ``every`` events; 0: none);
    return the seconds it took and the events journaled."""
    rules = load_game(game)
    for old in _all_files(path):
        old.unlink(missing_ok=True)
    gen = Generator(rules, seed)
    start = time.perf_counter()
    events = 0
    settings = TableSettings(spots=SPOTS)
    with (
        JournaledTable(path, rules, settings, checkpoint_every=every or None) as table,
        Outbox(path) as link,
    ):
        if synchronous != "FULL":  # bench-only: see the docstring
            table.journal.db.execute(f"PRAGMA synchronous = {synchronous}")
            link.db.execute(f"PRAGMA synchronous = {synchronous}")
        for number in range(1, rounds + 1):
            gen.round()
            new = gen.events[1:] if events else gen.events
            for event in new:
                step = table.handle(event)
                if not step.accepted:
                    raise SystemExit(f"build: {event!r} refused by the journaled table")
            events += len(new)
            del gen.events[:-1]  # keep one: the generator asks whether any event came yet
            gen.settled.clear()
            if number % ACK_EVERY == 0 or number == rounds:
                link.acknowledge(link.last_written())
    seconds = time.perf_counter() - start
    Path(f"{path}.done").write_text(f"{rounds} rounds, {events} events\n")
    return seconds, events


def evict(path: Path) -> None:
    """Ask the kernel to drop the file's pages from its cache."""
    for part in _files(path):
        fd = os.open(part, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def recover_once(path: Path, game: str) -> None:
    """The child: open the journal once, print ``ms events rounds peak_rss_mb``."""
    rules = load_game(game)
    settings = TableSettings(spots=SPOTS)
    start = time.perf_counter()
    table = JournaledTable(path, rules, settings)
    ms = 1000 * (time.perf_counter() - start)
    recovery = table.recovery
    table.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{ms:.3f} {recovery.events} {recovery.replayed} {recovery.rounds} {rss:.1f}")


def recover(path: Path, game: str, runs: int, cold: bool) -> tuple[float, list[float], str]:
    """Median recovery ms over ``runs`` fresh processes, all runs, and the last child's line."""
    times, line = [], ""
    for _ in range(runs):
        if cold:
            evict(path)
        out = subprocess.run(
            [sys.executable, __file__, "--recover-once", str(path), "--game", game],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise SystemExit(f"recovery of {path} failed:\n{out.stdout}{out.stderr}")
        line = out.stdout.strip().splitlines()[-1]
        times.append(float(line.split()[0]))
    return statistics.median(times), times, line


def measure(args, directory: Path, rounds: int, label: str, sync: str) -> tuple[float, float]:
    path = directory / journal_name(rounds, args.seed, args.game, args.checkpoint_every)
    if Path(f"{path}.done").exists() and path.exists():
        print(f"{label}: {rounds} rounds, reusing {path}")
    else:
        seconds, events = build(path, args.game, rounds, args.seed, sync, args.checkpoint_every)
        print(
            f"{label}: built {rounds} rounds, {events} events in {seconds:.1f} s "
            f"(synchronous={sync}: {events / seconds:,.0f} events/s, "
            f"{rounds / seconds:,.1f} rounds/s)"
        )
    mb = size_mb(path)
    median, times, child = recover(path, args.game, args.runs, args.cold)
    _, events, replayed, checked, rss = child.split()
    print(
        f"{label}: {mb:.1f} MB ({1e6 * mb / rounds / 1024:.1f} KiB per round); recovery "
        f"median {median:,.0f} ms of {len(times)} fresh processes "
        f"({', '.join(f'{t:,.0f}' for t in times)} ms; {'cold' if args.cold else 'warm'} "
        f"page cache): {events} events in the journal, {replayed} replayed after the newest "
        f"checkpoint, {checked} round records checked, peak RSS {float(rss):.0f} MB"
    )
    return median, mb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds-small", type=int, default=1000, help="rounds of the small one")
    parser.add_argument("--rounds-large", type=int, default=100_000, help="rounds of the large")
    parser.add_argument("--dir", type=Path, help="where the journals go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the journals (reused later)")
    parser.add_argument("--quick", action="store_true", help="20 and 200 rounds, one run each")
    parser.add_argument("--runs", type=int, default=3, help="recoveries per journal (median)")
    parser.add_argument("--cold", action="store_true", help="evict the file from the page cache")
    parser.add_argument(
        "--build-sync", choices=("off", "full"), default="off",
        help="synchronous setting while building the large journal (the small: always full)",
    )  # fmt: skip
    parser.add_argument(
        "--checkpoint-every", type=int, default=1000,
        help="journal checkpoints as the daemon writes them ([table] checkpoint_every_events, "
        "default 1000); 0: none, the journal as before checkpoints",
    )  # fmt: skip
    parser.add_argument("--game", default="pa-standard", help="house-rule profile")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated rounds")
    parser.add_argument("--recover-once", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.recover_once:
        recover_once(args.recover_once, args.game)
        return 0
    if args.quick:
        args.rounds_small, args.rounds_large, args.runs = 20, 200, 1
    if min(args.rounds_small, args.rounds_large, args.runs) < 1:
        parser.error("--rounds-small, --rounds-large and --runs must be at least 1")

    print(
        f"journal recovery, {SPOTS} spots, {args.game}, seed {args.seed}, schema "
        f"{SCHEMA_VERSION}, software {__version__}, Python {sys.version.split()[0]}, "
        f"SQLite WAL synchronous=FULL"
    )
    temporary = args.dir is None
    directory = Path(tempfile.mkdtemp(prefix="journal-recovery-")) if temporary else args.dir
    directory.mkdir(parents=True, exist_ok=True)
    try:
        small, _ = measure(args, directory, args.rounds_small, "small", "FULL")
        large, mb = measure(args, directory, args.rounds_large, "large", args.build_sync.upper())
    finally:
        if args.keep:
            print(f"journals kept in {directory}")
        elif temporary:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            for rounds in (args.rounds_small, args.rounds_large):
                path = directory / journal_name(rounds, args.seed, args.game, args.checkpoint_every)
                for part in _all_files(path):
                    part.unlink(missing_ok=True)
    print(
        f"goal: large within 1.5x of small ({large / small:.2f}x here) and under 1 s "
        f"({'met' if large <= 1.5 * small and large < 1000 else 'not met'})"
    )
    print(f"recovery_ms_1k={small:.1f} recovery_ms_100k={large:.1f} journal_mb_100k={mb:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
