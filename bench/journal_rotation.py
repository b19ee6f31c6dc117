"""How long a gaming-day rotation holds the table: a day of 7-spot rounds, then a rotation.

Run from the repository root: ``python3 bench/journal_rotation.py [--rounds N] [--runs K]``.
Not a test.

Each run builds a journal of ``--rounds`` generated rounds (default 1,000: a busy table's
gaming day) with :func:`journal_recovery.build` (the recovery bench's builder: checkpoints as
the daemon writes them, the jackpot controller's acknowledgements every 100 rounds, built
with ``synchronous = OFF`` for speed, which changes nothing in the file), opens it as the table
controller does (production settings) and times :func:`controller.journal.rotation.rotate`
on the table's thread: the online backup into the archive, its fsync, chmod and rename, and
the transaction that prunes the live file. The table takes no event meanwhile (the loop is
busy), so this is the pause a dealer could see at the gaming-day boundary. Then it times
reopening the rotated journal (recovery from the origin).

The last line is ``rotation_ms=... archive_mb=... recovery_after_ms=...``: medians over the
runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for path in (str(ROOT), str(BENCH)):
    if path not in sys.path:
        sys.path.insert(0, path)

from journal_recovery import build  # noqa: E402
from replay_rounds import SPOTS  # noqa: E402

from controller.games import load_game  # noqa: E402
from controller.journal import JournaledTable, rotation  # noqa: E402
from controller.table import TableSettings  # noqa: E402


def one_run(folder: Path, game: str, rounds: int, seed: int) -> tuple[float, float, float]:
    path = folder / "journal.sqlite"
    build(path, game, rounds, seed, "OFF", every=1000)
    rules, settings = load_game(game), TableSettings(spots=SPOTS)
    with JournaledTable(path, rules, settings, checkpoint_every=1000) as table:
        table.journal.set_meta("gaming_day", "2026-11-23")
        start = time.perf_counter()
        done = rotation.rotate(table, "2026-11-24")
        rotation_ms = (time.perf_counter() - start) * 1000
        state = table.state
    assert done.archive is not None
    archive_mb = done.archive.stat().st_size / 1e6
    start = time.perf_counter()
    with JournaledTable(path, rules, settings, checkpoint_every=1000) as table:
        recovery_ms = (time.perf_counter() - start) * 1000
        if table.state != state:
            raise SystemExit("the rotated journal does not recover the table it held")
    return rotation_ms, archive_mb, recovery_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000, help="rounds in the gaming day")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--game", default="pa-standard")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    results = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-rotation-") as tmp:
            results.append(one_run(Path(tmp), args.game, args.rounds, args.seed + run))
        ms, mb, rec = results[-1]
        print(f"run {run + 1}: {args.rounds} rounds, archive {mb:.1f} MB, rotation {ms:.0f} ms, "
              f"recovery after it {rec:.1f} ms")  # fmt: skip
    rotation_ms = statistics.median(r[0] for r in results)
    archive_mb = statistics.median(r[1] for r in results)
    recovery_ms = statistics.median(r[2] for r in results)
    print(
        f"rotation_ms={rotation_ms:.0f} archive_mb={archive_mb:.1f} "
        f"recovery_after_ms={recovery_ms:.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
