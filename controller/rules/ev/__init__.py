"""The main game's expected value per profile: combinatorial analysis, not simulation.

For one player at a full shoe (the first round after a shuffle), insurance and
even money never taken, side bets excluded: the expected value per initial main
wager under

- **basic**: the total-dependent basic strategy of :mod:`controller.rules.ev.chart`
  (one action per hard or soft total, pair and up card), and
- **optimal**: every decision the best for the cards of the hand and the up card,
  resplits included (:mod:`controller.rules.ev.engine`).

Every rule key of the profile enters or is refused by name
(:mod:`controller.rules.ev.game`). Floats are fine here: these are probabilities
and expected values, not money. The module is pure (no I/O, no clock).

>>> from controller.games import load_game
>>> edge = basic_strategy_edge(load_game("online-6deck").with_decks(1))
>>> round(edge, 4)
-0.0002
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from controller.rules.ev.chart import Chart, ChartPolicy, build_chart, format_chart
from controller.rules.ev.dealer import OUTCOME_NAMES, dealer_outcomes
from controller.rules.ev.engine import MEASURES, expected_value, shoe_counts, up_card_weights
from controller.rules.ev.game import Game, assumptions, game_of
from controller.rules.profile import HouseRules

UP_NAMES = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "T")


def basic_strategy_edge(rules: HouseRules) -> float:
    """The house edge (per initial wager, 0.005 is 0.5%) of the profile's main game under
    its total-dependent basic strategy, at the profile's deck count: the reference line
    for the main game's observed hold."""
    game = game_of(rules)
    chart = build_chart(game)
    return -expected_value(game, ChartPolicy(chart))[0]


def dealer_distribution(game: Game) -> dict[str, dict[str, float]]:
    """The dealer's final hand per up card from a full shoe (blackjack included)."""
    table = {}
    for up in range(10):
        shoe = shoe_counts(game)
        shoe[up] -= 1
        row = dealer_outcomes(
            tuple(shoe),
            up,
            np.zeros((1, 10), dtype=np.int64),
            hit_soft_17=game.hit_soft_17,
            stop_on_16=game.ends_on_16,
            peek=False,
        )[0]
        table[UP_NAMES[up]] = {
            name: float(p)
            for name, p in zip(OUTCOME_NAMES, row, strict=True)
            if name != "16" or game.ends_on_16
        }
    return table


def _strategy(ev: float, by_up: list[float], game: Game) -> dict:
    return {
        "ev": ev,
        "house_edge": -ev,
        "by_up_card": {UP_NAMES[up]: value for up, value in enumerate(by_up)},
        "up_card_weights": dict(zip(UP_NAMES, up_card_weights(game), strict=True)),
    }


def analyse(rules: HouseRules, *, chart_only: bool = False) -> dict:
    """The main game's figures for ``rules`` (JSON-ready), with the basic strategy's chart
    under ``"chart"`` (a :class:`Chart`, removed before writing JSON)."""
    game = game_of(rules)
    chart = build_chart(game)
    policy = ChartPolicy(chart)
    basic_ev, basic_by_up = expected_value(game, policy)
    result: dict = {
        "decks": game.decks,
        "basic": _strategy(basic_ev, basic_by_up, game),
        "chart": chart,
        "chart_text": format_chart(chart, game),
        "assumptions": assumptions(game),
    }
    if chart_only:
        return result
    counted = {m: expected_value(game, policy, m)[0] for m in MEASURES}
    hands = sum(counted.values())
    shoe = shoe_counts(game)
    total = sum(shoe)
    result["basic"]["outcomes"] = {
        **{m: counted[m] / hands for m in MEASURES},
        "hands_per_round": hands,
        "blackjack": 2 * shoe[0] * shoe[9] / (total * (total - 1)),
        "counted": "per hand played (each split hand counts), by its main wager: a "
        "surrender is a loss, a natural a win; blackjack: a player natural per round",
    }
    optimal_ev, optimal_by_up = expected_value(game)
    result["optimal"] = _strategy(optimal_ev, optimal_by_up, game)
    result["dealer"] = dealer_distribution(game)
    notes = []
    if game.double_up and game.double_up_after_split and game.split_limit_aces >= 2:
        flipped = replace(game, double_up_after_split_aces=not game.double_up_after_split_aces)
        other_ev, _ = expected_value(flipped)
        notes.append(
            {
                "key": "[double_up] after_split_aces",
                "value": game.double_up_after_split_aces,
                "house_edge_optimal": -optimal_ev,
                "house_edge_optimal_if_flipped": -other_ev,
                "text": (
                    "Double Up on split aces "
                    + ("allowed" if game.double_up_after_split_aces else "closed")
                    + f" (the profile): optimal house edge {-optimal_ev:.4%}; "
                    + ("closed" if game.double_up_after_split_aces else "allowed")
                    + f": {-other_ev:.4%} ({(optimal_ev - other_ev):+.4%} for the player "
                    "as the profile reads the card)"
                ),
            }
        )
    result["notes"] = notes
    return result


__all__ = [
    "Chart",
    "Game",
    "analyse",
    "basic_strategy_edge",
    "dealer_distribution",
    "format_chart",
    "game_of",
]
