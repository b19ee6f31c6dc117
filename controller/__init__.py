"""Blackjack table controller.

``controller.rules`` is the pure rules library (cards, hands, house-rule
profiles, settlement, side bets); it imports no hardware, network or clock.
"""

__version__ = "0.1.0"
