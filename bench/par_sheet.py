"""Seconds to compute each profile's par sheet at 1, 2, 6 and 8 decks.

Run from the repository root: ``python3 bench/par_sheet.py``. Prints a table;
not a test. Each figure is the best of ``--repeat`` runs (default 3).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.games import available_games, load_game  # noqa: E402
from controller.parsheet import compute_par_sheet  # noqa: E402

DECKS = (1, 2, 6, 8)


def best_seconds(game: str, decks: int, repeat: int) -> tuple[float, int]:
    """Best wall-clock seconds of ``repeat`` par sheets, and how many bets the sheet has."""
    rules = load_game(game).with_decks(decks)
    best = float("inf")
    bets = 0
    for _ in range(repeat):
        start = time.perf_counter()
        sheet = compute_par_sheet(rules)
        best = min(best, time.perf_counter() - start)
        bets = len(sheet["bets"])
    return best, bets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best is shown)")
    args = parser.parse_args()
    header = f"{'profile':<16}{'bets':>5}" + "".join(f"{f'{d} deck(s)':>12}" for d in DECKS)
    print(f"par sheet seconds (best of {args.repeat}), Python {sys.version.split()[0]}")
    print(header)
    print("-" * len(header))
    for game in available_games():
        cells = []
        bets = 0
        for decks in DECKS:
            seconds, bets = best_seconds(game, decks, args.repeat)
            cells.append(f"{seconds:>12.3f}")
        print(f"{game:<16}{bets:>5}" + "".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
