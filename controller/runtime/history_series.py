"""The lines the diagnostics page's charts draw from the history's stored samples: pure.

Samples in (:meth:`controller.runtime.history.HistoryStore.samples`), lines out; no I/O,
no threads, no SQLite (the store and its recorder are :mod:`controller.runtime.history`,
which re-exports every name here). A sample's counts are cumulative: rates (cards and
rounds per hour) and the side bets' hit frequency and hold are differences and ratios of
those, so any sample can be dropped when a long period is drawn with few points
(:func:`series`), and none is lost by a restart.

Side bets are compared with the exact par sheet (:func:`controller.parsheet.compute_par_sheet`,
computed once on the recorder's thread): the hit frequency and the hold (the house's share
of the stakes, the meter lines left out) actually seen, with the 95% band the par predicts
for that many wagers (``par +- 1.96 sd / sqrt(n)``, :func:`par_band`; for the hold ``n`` is
the effective number of equal wagers, ``(sum of stakes)^2 / sum of squared stakes``). A
line outside its band is worth a look; a few hundred rounds are noisy, and the band says
how noisy. :func:`wilson` gives the interval of a seen frequency itself.

>>> lo, hi = wilson(10, 100)
>>> round(lo, 4), round(hi, 4)
(0.0552, 0.1744)
>>> [round(x, 4) for x in par_band(0.1, 0.3, 100)]
[0.0412, 0.1588]
"""

from __future__ import annotations

import itertools
import math
from typing import Any

MAX_POINTS = 720
"""At most this many points per line are sent to a page (older samples are thinned)."""
Z95 = 1.959963984540054
"""The normal quantile of a two-sided 95% interval."""


# -- the confidence bands ---------------------------------------------------------------


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a frequency seen ``hits`` times in ``n`` (None if
    ``n`` is 0): unlike ``p +- z sqrt(p(1-p)/n)`` it stays inside 0..1 and is not empty
    when nothing (or everything) hit."""
    if n <= 0:
        return None
    if not 0 <= hits <= n:
        raise ValueError(f"hits must be from 0 to n ({n}), got {hits}")
    p = hits / n
    z2 = z * z
    middle = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, middle - half), min(1.0, middle + half)


def par_band(par: float, sd: float, n: float, z: float = Z95) -> tuple[float, float] | None:
    """Where the average of ``n`` independent results with mean ``par`` and standard
    deviation ``sd`` falls 95 times in 100 (normal approximation); None for ``n`` 0."""
    if n <= 0:
        return None
    half = z * sd / math.sqrt(n)
    return par - half, par + half


def par_figures(sheet: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """From a par sheet (:func:`~controller.parsheet.compute_par_sheet`), per bet: its
    ``title``, the par ``hit`` frequency and its ``hit_sd``, the par ``hold`` (house edge;
    for a bet with meter lines the hold of its fixed awards, meter left out) and the
    ``hold_sd`` of one unit staked. A figure the sheet has not: None."""
    out: dict[str, dict[str, Any]] = {}
    for bet, figures in (sheet.get("bets") or {}).items():
        hit = figures.get("hit_frequency")
        hold = figures.get("house_edge")
        if hold is None and figures.get("return_excluding_meter") is not None:
            hold = -float(figures["return_excluding_meter"])
        hold_sd = None
        outcomes = figures.get("outcomes")
        if hold is not None and outcomes is not None and figures.get("lose_probability"):
            second = float(figures["lose_probability"])  # a loss nets -1 per unit
            for outcome in outcomes:
                p = float(outcome.get("probability") or 0.0)
                if not p:
                    continue
                contribution = outcome.get("contribution")
                net = -1.0 if contribution is None else float(contribution) / p
                second += p * net * net
            hold_sd = math.sqrt(max(0.0, second - hold * hold))
        out[bet] = {
            "title": figures.get("title") or bet,
            "hit": hit,
            "hit_sd": None if hit is None else math.sqrt(hit * (1 - hit)),
            "hold": hold,
            "hold_sd": hold_sd,
        }
    return out


# -- what a page draws -----------------------------------------------------------------------


def _thin(rows: list[tuple[int, dict[str, Any]]], max_points: int) -> list[dict[str, Any]]:
    """At most ``max_points`` samples: each kept one stands for a run of samples, with the
    last one's counts (cumulative), the largest outbox and the link down if it was down
    at any of them."""
    if len(rows) <= max_points:
        return [{**data, "utc_ms": t} for t, data in rows]
    size = math.ceil(len(rows) / max_points)
    out = []
    for start in range(0, len(rows), size):
        run = rows[start : start + size]
        t, last = run[-1]
        point = {**last, "utc_ms": t}
        depths = [d.get("outbox") for _t, d in run if d.get("outbox") is not None]
        point["outbox"] = max(depths) if depths else None
        ups = [d.get("link_up") for _t, d in run if d.get("link_up") is not None]
        point["link_up"] = min(ups) if ups else None
        out.append(point)
    return out


def _rate(points: list[dict[str, Any]], key: str, per_s: float = 3600.0) -> list[float | None]:
    out: list[float | None] = [None]
    for before, after in itertools.pairwise(points):
        dt = (after["utc_ms"] - before["utc_ms"]) / 1000
        dv = (after.get(key) or 0) - (before.get(key) or 0)
        out.append(None if dt <= 0 or dv < 0 else round(dv / dt * per_s, 2))
    return out


def _steps(points: list[dict[str, Any]], key: str) -> list[int | None]:
    out: list[int | None] = [None]
    for before, after in itertools.pairwise(points):
        dv = (after.get(key) or 0) - (before.get(key) or 0)
        out.append(dv if dv >= 0 else None)
    return out


def _bet_lines(
    points: list[dict[str, Any]], bet: str, par: dict[str, Any] | None
) -> dict[str, Any]:
    """A side bet's lines: the cumulative hit frequency and hold seen at each point, and
    the 95% band around par for that many wagers (around what was seen, Wilson, when the
    bet has no par figure)."""
    hit: list[float | None] = []
    hit_lo: list[float | None] = []
    hit_hi: list[float | None] = []
    hold: list[float | None] = []
    hold_lo: list[float | None] = []
    hold_hi: list[float | None] = []
    par = par or {}
    for point in points:
        tally = (point.get("bets") or {}).get(bet) or {}
        n, hits = int(tally.get("n") or 0), int(tally.get("hits") or 0)
        stake, s2 = int(tally.get("stake") or 0), int(tally.get("s2") or 0)
        hit.append(hits / n if n else None)
        if par.get("hit") is not None and n:
            band = par_band(par["hit"], par["hit_sd"], n)
            assert band is not None
            band = (max(0.0, band[0]), min(1.0, band[1]))
        else:
            band = wilson(hits, n) if n else None
        hit_lo.append(None if band is None else band[0])
        hit_hi.append(None if band is None else band[1])
        hold.append(-int(tally.get("net") or 0) / stake if stake else None)
        effective = stake * stake / s2 if s2 else 0
        band = (
            par_band(par["hold"], par["hold_sd"], effective)
            if par.get("hold") is not None and par.get("hold_sd") is not None and effective
            else None
        )
        hold_lo.append(None if band is None else band[0])
        hold_hi.append(None if band is None else band[1])
    last = (points[-1].get("bets") or {}).get(bet) or {} if points else {}
    n, hits, stake = (
        int(last.get("n") or 0),
        int(last.get("hits") or 0),
        int(last.get("stake") or 0),
    )
    seen_hold = -int(last.get("net") or 0) / stake if stake else None
    return {
        "title": par.get("title") or _title(bet),
        "par_hit": par.get("hit"),
        "par_hold": par.get("hold"),
        "hit": hit,
        "hit_lo": hit_lo,
        "hit_hi": hit_hi,
        "hold": hold,
        "hold_lo": hold_lo,
        "hold_hi": hold_hi,
        "wagers": n,
        "hits": hits,
        "stakes": stake,
        "seen_hit": hits / n if n else None,
        "seen_hit_interval": wilson(hits, n) if n else None,
        "seen_hold": seen_hold,
        "hit_in_band": _inside(hit[-1] if hit else None, hit_lo, hit_hi),
        "hold_in_band": _inside(seen_hold, hold_lo, hold_hi),
    }


MAIN_NOTE = "a reference, not an alarm: players do not all play basic strategy"
"""What the main game's reference line is, said beside it wherever it is shown."""


def main_lines(
    points: list[dict[str, Any]], edge: float | None, problem: str | None = None
) -> dict[str, Any]:
    """The main game's lines: at each point the hold seen since the store began (the
    house's net over the initial main wagers, :func:`controller.report.main_game_of`; None
    before the first wager), the basic-strategy ``edge`` as the reference line (None while
    it is being computed, or when it could not be: ``problem``) and the 95% band around it
    for that many initial wagers (``edge +- 1.96 * 1.15 / sqrt(n)``, ``n`` the effective
    number of equal wagers as for the side bets; 1.15 is blackjack's standard deviation
    per initial wager, :data:`controller.report.MAIN_HOLD_SD`, with its source). The day's
    report draws the same band. A reference, never an alarm: no verdict is given, since
    players do not all play basic strategy (:data:`MAIN_NOTE`)."""
    from controller.report import MAIN_HOLD_SD

    hold: list[float | None] = []
    hold_lo: list[float | None] = []
    hold_hi: list[float | None] = []
    for point in points:
        tally = point.get("main") or {}
        stake, s2 = int(tally.get("stake") or 0), int(tally.get("s2") or 0)
        hold.append(-int(tally.get("net") or 0) / stake if stake else None)
        effective = stake * stake / s2 if s2 else 0
        band = par_band(edge, MAIN_HOLD_SD, effective) if edge is not None and effective else None
        hold_lo.append(None if band is None else band[0])
        hold_hi.append(None if band is None else band[1])
    last = (points[-1].get("main") or {}) if points else {}
    stake, net = int(last.get("stake") or 0), int(last.get("net") or 0)
    state = "ready" if edge is not None else ("failed" if problem else "computing")
    return {
        "title": "Main game",
        "note": MAIN_NOTE,
        "edge": edge,
        "edge_state": state,
        "edge_problem": problem,
        "hold_sd": MAIN_HOLD_SD,
        "hold": hold,
        "hold_lo": hold_lo,
        "hold_hi": hold_hi,
        "wagers": int(last.get("n") or 0),
        "stakes": stake,
        "house_net": -net,
        "seen_hold": -net / stake if stake else None,
        "band": None if not hold_lo or hold_lo[-1] is None else [hold_lo[-1], hold_hi[-1]],
    }


def _inside(value: float | None, lo: list[float | None], hi: list[float | None]) -> bool | None:
    if value is None or not lo or lo[-1] is None or hi[-1] is None:
        return None
    return lo[-1] - 1e-12 <= value <= hi[-1] + 1e-12


def _title(bet: str) -> str:
    from controller.rules.sidebets import TITLES, pool_name

    return TITLES.get(bet) or pool_name(bet)


def series(
    rows: list[tuple[int, dict[str, Any]]],
    par: dict[str, dict[str, Any]] | None = None,
    *,
    max_points: int = MAX_POINTS,
    main_edge: float | None = None,
    main_problem: str | None = None,
) -> dict[str, Any]:
    """The lines a page draws from ``rows``
    (:meth:`~controller.runtime.history.HistoryStore.samples`), thinned to ``max_points``:
    ``t`` (UTC seconds), ``link_up`` (1 up, 0 down), ``connected``, ``outbox`` (messages
    waiting), ``shoe_errors`` and ``shoe_reconnects`` (since the point before),
    ``cards_per_hour``, ``rounds_per_hour``, ``meters`` and ``pools`` (pool -> line: the
    meter as the table last knew it; the stakes this table fed the pool, since the store
    began), ``bets`` (bet -> :func:`_bet_lines`) and ``main`` (the main game's hold against
    its basic-strategy edge ``main_edge``, :func:`main_lines`). A line's first point of a
    difference is None (nothing before it)."""
    from controller.rules.sidebets import pool_name

    points = _thin(rows, max(2, max_points))
    meters = sorted({p for point in points for p in (point.get("meters") or {})})
    pools = sorted({p for point in points for p in (point.get("pools") or {})})
    bets = sorted({b for point in points for b in (point.get("bets") or {})} | set(par or {}))
    return {
        "t": [point["utc_ms"] / 1000 for point in points],
        "link_up": [point.get("link_up") for point in points],
        "connected": [point.get("connected") for point in points],
        "outbox": [point.get("outbox") for point in points],
        "shoe_errors": _steps(points, "shoe_errors"),
        "shoe_reconnects": _steps(points, "shoe_reconnects"),
        "cards_per_hour": _rate(points, "cards"),
        "rounds_per_hour": _rate(points, "rounds"),
        "meters": {
            pool: {
                "title": pool_name(pool),
                "cents": [(point.get("meters") or {}).get(pool) for point in points],
            }
            for pool in meters
        },
        "pools": {
            pool: {
                "title": pool_name(pool),
                "cents": [(point.get("pools") or {}).get(pool, 0) for point in points],
            }
            for pool in pools
        },
        "bets": {bet: _bet_lines(points, bet, (par or {}).get(bet)) for bet in bets},
        "main": main_lines(points, main_edge, main_problem),
    }
