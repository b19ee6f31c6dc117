"""The main game's part of the par sheet: its house edge under basic and optimal strategy.

:func:`main_game_sheet` turns :func:`controller.rules.ev.analyse` into JSON-ready data
(the ``main`` key of ``table-controller par-sheet --json``); :func:`format_main_game`
writes it as text, :func:`chart_data` and :func:`format_strategy` the basic strategy
chart (``par-sheet --strategy``). Pure, like :mod:`controller.parsheet`.
"""

from __future__ import annotations

from controller.rules.ev import analyse, format_chart, game_of
from controller.rules.ev.chart import UP_ORDER, Chart, build_chart
from controller.rules.profile import HouseRules

COLUMNS = tuple("A" if v == 0 else "T" if v == 9 else str(v + 1) for v in UP_ORDER)


def chart_data(chart: Chart) -> dict:
    """The chart as JSON: rows of tokens in :data:`COLUMNS` order (2 .. T, A)."""
    hard = {str(t): [chart.cell(False, t, up) for up in UP_ORDER] for t in range(4, 21)}
    soft = {str(t): [chart.cell(True, t, up) for up in UP_ORDER] for t in range(12, 22)}
    pairs = {
        ("A" if p == 0 else "T" if p == 9 else str(p + 1)): [
            "P" if chart.pairs.get(p, [False] * 10)[up] else "-" for up in UP_ORDER
        ]
        for p in range(10)
    }
    return {"columns": list(COLUMNS), "hard": hard, "soft": soft, "pairs": pairs}


def main_game_sheet(rules: HouseRules) -> dict:
    """The main game's figures: ``basic`` and ``optimal`` (each with ``ev`` per initial wager,
    player's view, and ``house_edge``), the dealer's final hands per up card, the basic
    strategy chart, assumptions and notes."""
    result = analyse(rules)
    chart = result.pop("chart")
    result.pop("chart_text")
    result["strategy_chart"] = chart_data(chart)
    return result


def strategy_sheet(rules: HouseRules) -> tuple[dict, str]:
    """The basic strategy chart of ``rules``: JSON-ready and as text."""
    game = game_of(rules)
    chart = build_chart(game)
    return chart_data(chart), format_chart(chart, game)


def format_main_game(main: dict) -> str:
    """The main game's section of the text par sheet (ends with a newline)."""
    title = "Main game (one player, full shoe, insurance never taken, side bets excluded)"
    lines = [title, "-" * len(title)]
    rows = [("Strategy", "EV per initial wager", "House edge")]
    for name, label in (("basic", "basic (total-dependent)"), ("optimal", "optimal (composition)")):
        figures = main[name]
        rows.append((label, f"{figures['ev']:+.5%}", f"{figures['house_edge']:.5%}"))
    lines += _table(rows)
    outcomes = main["basic"].get("outcomes")
    if outcomes:
        lines.append(
            "Basic strategy, per hand played (split hands each count): "
            f"win {outcomes['win']:.5f}, push {outcomes['push']:.5f}, "
            f"loss {outcomes['loss']:.5f}; blackjack {outcomes['blackjack']:.5f} per round; "
            f"{outcomes['hands_per_round']:.5f} hands per round"
        )
    lines += ["", "Dealer's final hand per up card (full shoe, blackjack included):"]
    names = list(next(iter(main["dealer"].values())))
    rows = [("Up", *names)]
    for up, dist in main["dealer"].items():
        rows.append((up, *(f"{dist[n]:.6f}" for n in names)))
    lines += _table(rows)
    lines += ["", "Assumptions:"]
    lines += [f"  - {text}" for text in main["assumptions"]]
    for note in main.get("notes", []):
        lines += [f"Note: {note['text']}."]
    lines.append("")
    return "\n".join(lines)


def format_strategy(text: str, rules: HouseRules) -> str:
    heading = f"Basic strategy: {rules.game.title or rules.name} ({rules.name}), "
    heading += f"{rules.shoe.decks} deck{'s' if rules.shoe.decks != 1 else ''}"
    return f"{heading}\n{'=' * len(heading)}\n{text}"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    out = []
    for index, row in enumerate(rows):
        cells = [
            cell.ljust(w) if col == 0 else cell.rjust(w)
            for col, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  " + "  ".join(cells).rstrip())
        if index == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    return out
