"""The demo: a whole table in simulation. :mod:`controller.demo.autopilot` is its pure
decision part (the dealer and the players by the procedure); :mod:`controller.demo.strategy`
the players' basic strategy."""

from controller.demo.autopilot import (
    Action,
    Autopilot,
    Deal,
    PlaceBet,
    Press,
    RemoveBet,
    Shuffle,
)
from controller.demo.strategy import basic_strategy

__all__ = [
    "Action",
    "Autopilot",
    "Deal",
    "PlaceBet",
    "Press",
    "RemoveBet",
    "Shuffle",
    "basic_strategy",
]
