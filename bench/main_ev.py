"""Seconds to compute the main game's expected value, per profile and deck count, one core.

Run from the repository root: ``python3 bench/main_ev.py [--games A,B] [--decks 1,6,8]``.
Not a test. Each figure is the CPU time of ``controller.rules.ev.analyse`` (basic strategy
chart and its expected value, the optimal strategy, the dealer's distribution and, for
Double Up Blackjack, the optimal figure with Double Up on split aces flipped for the note),
in a fresh process state (the dealer tables are cached per game, so each run starts cold).

The last line is ``key=value`` pairs: ``max_s=... mean_s=...`` and ``GAME_dDECKS_s=...``
for each run.
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
from controller.rules.ev import analyse, engine  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default=",".join(available_games()))
    parser.add_argument("--decks", default="1,2,6,8")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    for name in args.games.split(","):
        for decks in (int(d) for d in args.decks.split(",")):
            engine._CACHE.clear()
            rules = load_game(name).with_decks(decks)
            start = time.process_time()
            result = analyse(rules)
            seconds = time.process_time() - start
            figures[f"{name}_d{decks}_s"] = round(seconds, 2)
            print(
                f"{name:<14} {decks} deck{'s' if decks > 1 else ' '}  {seconds:6.2f} s CPU  "
                f"basic {result['basic']['house_edge']:.5%}  "
                f"optimal {result['optimal']['house_edge']:.5%}",
                flush=True,
            )
    values = list(figures.values())
    summary = {"max_s": max(values), "mean_s": round(sum(values) / len(values), 2), **figures}
    print(" ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
