"""The rules library: pure (no I/O, no clock, no hardware or network imports).

Shared by the table state machine, the jackpot controller (to verify hit
claims) and the par-sheet tool.
"""

from controller.rules.cards import (
    ALL_CARDS,
    Card,
    Rank,
    ShoeComposition,
    Suit,
    format_cards,
    parse_card,
    parse_cards,
)
from controller.rules.hand import HandTotal, dealer_must_hit, hand_total, is_blackjack, is_pair
from controller.rules.pays import FixedAward, MeterShare, Odds, Pay, format_cents, parse_pay
from controller.rules.profile import HouseRules, parse_profile

__all__ = [
    "ALL_CARDS",
    "Card",
    "FixedAward",
    "HandTotal",
    "HouseRules",
    "MeterShare",
    "Odds",
    "Pay",
    "Rank",
    "ShoeComposition",
    "Suit",
    "dealer_must_hit",
    "format_cards",
    "format_cents",
    "hand_total",
    "is_blackjack",
    "is_pair",
    "parse_card",
    "parse_cards",
    "parse_pay",
    "parse_profile",
]
