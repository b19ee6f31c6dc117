"""The daily table report: one gaming day's play from the journal, against par.

:func:`day_report` reads the settled round records of a gaming day (as the journal keeps
them, :meth:`~controller.journal.Journal.rounds_between`) and gives the day's rounds,
hands, rounds per hour, and for the main game (main, double down and Double Up wagers)
and each side bet the wagers, the amount staked (for the main game: the initial wagers),
the house's net and its hold, with the par figure and its 95% band for that many wagers.
Money is integer cents; a hold is a ratio (the house's net over the stakes).

The main game's par is the basic-strategy house edge
(:func:`controller.rules.ev.basic_strategy_edge`): a reference line, not an alarm, since
players do not all play basic strategy (and take insurance, reported on its own line).
Pure: records in, dicts out; ``table-controller report day`` reads the journal.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from typing import Any

MAIN_WAGERS = frozenset({"main", "double_down", "double_up"})
MAIN_HOLD_SD = 1.15
"""Standard deviation of a hand's net per initial wager in blackjack under basic strategy:
about 1.15 (Wizard of Odds, "Variance in blackjack", wizardofodds.com/games/blackjack/
appendix/4/: variance 1.27-1.35 per hand over its rule sets, sd 1.13-1.16). Used for the
main game's band only (a reference line); hands dealt together against one dealer hand are
correlated (covariance about 0.48 there), which this band, counting initial wagers as
independent, leaves out: with several spots playing the true spread is wider."""

COLUMNS = (
    "gaming_day",
    "line",
    "rounds",
    "hands",
    "rounds_per_hour",
    "wagers",
    "staked_cents",
    "house_net_cents",
    "hold",
    "par_hold",
    "band_low",
    "band_high",
)


def _band(par: float | None, sd: float | None, n: float) -> tuple[float | None, float | None]:
    if par is None or sd is None or n <= 0:
        return None, None
    half = 1.96 * sd / math.sqrt(n)
    return par - half, par + half


def main_game_of(record: Mapping[str, Any]) -> tuple[int, dict[Any, int], int]:
    """A settled round's main game from its record: the hands played (main wagers settled,
    split hands included), the initial main wager of each spot (spot -> cents: the stake
    of its first hand), and the players' net over the main game's wagers (main, double
    down and Double Up; cents, paid + returned - staked; the house's net is its negative).
    A voided round has none. Shared by the day's report and the history's charts."""
    if record.get("void"):
        return 0, {}, 0
    hands = net = 0
    initial: dict[Any, int] = {}
    for line in (record.get("result") or {}).get("settlements") or []:
        wager = str(line.get("wager"))
        if wager not in MAIN_WAGERS:
            continue
        stake = int(line.get("stake") or 0)
        net += int(line.get("paid") or 0) + int(line.get("returned") or 0) - stake
        if wager == "main":
            hands += 1
            if not line.get("hand"):  # the spot's first hand: the initial wager
                initial[line.get("spot")] = stake
    return hands, initial, net


def day_report(
    day: str,
    records: Iterable[Mapping[str, Any]],
    *,
    main_par: float | None,
    side_par: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The report of gaming day ``day`` from its settled round ``records``.

    ``main_par``: the main game's basic-strategy edge; ``side_par``: per side bet its par
    ``hold`` and ``hold_sd`` per unit staked (:func:`controller.runtime.history.par_figures`).
    """
    side_par = side_par or {}
    rounds = hands = 0
    first = last = None
    main = {"wagers": 0, "staked": 0, "net": 0, "s2": 0}
    lines: dict[str, dict[str, int]] = {}
    for record in records:
        if record.get("void"):
            continue
        rounds += 1
        for moment in (record.get("started_utc_ms"), record.get("settled_utc_ms")):
            if moment is not None:
                first = moment if first is None else min(first, moment)
                last = moment if last is None else max(last, moment)
        round_hands, initial, round_net = main_game_of(record)
        hands += round_hands
        for line in (record.get("result") or {}).get("settlements") or []:
            wager = str(line.get("wager"))
            if wager in MAIN_WAGERS:
                continue
            stake = int(line.get("stake") or 0)
            net = int(line.get("paid") or 0) + int(line.get("returned") or 0) - stake
            name = wager.split(".", 1)[0] if wager != "insurance" else "insurance"
            tally = lines.setdefault(name, {"wagers": 0, "staked": 0, "net": 0, "s2": 0})
            tally["wagers"] += 1
            tally["staked"] += stake
            tally["net"] += net
            tally["s2"] += stake * stake
        main["wagers"] += len(initial)
        main["staked"] += sum(initial.values())
        main["s2"] += sum(s * s for s in initial.values())
        main["net"] += round_net
    hours = (last - first) / 3_600_000 if first is not None and last is not None else 0.0
    report_lines = [_line("main", main, main_par, MAIN_HOLD_SD if main_par is not None else None)]
    for name in sorted(lines):
        par = side_par.get(name) or {}
        report_lines.append(_line(name, lines[name], par.get("hold"), par.get("hold_sd")))
    return {
        "gaming_day": day,
        "rounds": rounds,
        "hands": hands,
        "hours": round(hours, 4),
        "rounds_per_hour": round(rounds / hours, 2) if hours > 0 else None,
        "lines": report_lines,
        "main_par_note": "the main game's par is the basic-strategy house edge at a full "
        "shoe: a reference line, not an alarm (players do not all play basic strategy)",
    }


def _line(name: str, tally: Mapping[str, int], par: float | None, sd: float | None) -> dict:
    staked, house = tally["staked"], -tally["net"]
    effective = staked * staked / tally["s2"] if tally["s2"] else 0
    low, high = _band(par, sd, effective)
    return {
        "line": name,
        "wagers": tally["wagers"],
        "staked_cents": staked,
        "house_net_cents": house,
        "hold": house / staked if staked else None,
        "par_hold": par,
        "band_low": low,
        "band_high": high,
    }


def report_csv(report: Mapping[str, Any]) -> str:
    """The report as CSV, one row per line (main game, each side bet, insurance), with the
    day's rounds, hands and rounds per hour on every row; stable column names."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for line in report["lines"]:
        row = {
            "gaming_day": report["gaming_day"],
            "rounds": report["rounds"],
            "hands": report["hands"],
            "rounds_per_hour": report["rounds_per_hour"],
            **line,
        }
        writer.writerow(["" if row.get(c) is None else _cell(row[c]) for c in COLUMNS])
    return out.getvalue()


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6f}"
    return str(value)
