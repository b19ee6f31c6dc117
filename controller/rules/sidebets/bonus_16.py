"""16 Bonus (Double Up Blackjack, seed 003): the dealer's hand reaches a total
of 16, paid by the number of cards in it.

"The 16 Bonus side wager wins, if the dealer's hand reaches a total of 16. The
number of cards in the dealer's hand determines the payout according to the
pay tables below." The card gives two paytables; ``paytable`` picks the one in
force. A paytable maps a card count (``"2"``) or an open-ended count
(``"6+"``, the last line) to odds.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.errors import WagerError
from controller.rules.cards import Card
from controller.rules.hand import hand_total
from controller.rules.pays import Odds, PayError, parse_pay
from controller.rules.schema import InnerKeyError, key
from controller.rules.sidebets import BetResult, SideBetResult, lost

BET = "bonus_16"

CountPaytable = Mapping[str, Odds]

PAYTABLE_1 = {"2": Odds(4), "3": Odds(5), "4": Odds(10), "5": Odds(50), "6+": Odds(100)}
PAYTABLE_2 = {
    "2": Odds(4),
    "3": Odds(5),
    "4": Odds(10),
    "5": Odds(50),
    "6": Odds(100),
    "7+": Odds(500),
}


def _read_paytables(raw: Any) -> Mapping[str, CountPaytable]:
    if not isinstance(raw, Mapping) or not raw:
        raise TypeError("paytables must be a table of named paytables")
    tables = {}
    for name, lines in raw.items():
        if not isinstance(lines, Mapping) or not lines:
            raise InnerKeyError(None, "must be a table of card count = odds", name)
        table = {}
        for count, text in lines.items():
            try:
                pay = parse_pay(text) if isinstance(text, str) else None
            except PayError as exc:
                raise InnerKeyError(
                    count, f"{text!r} is not odds like '4 to 1': {exc}", name
                ) from None
            if not isinstance(pay, Odds):
                raise InnerKeyError(count, f"{text!r} is not odds like '4 to 1'", name)
            table[count] = pay
        _check_counts(name, list(table))
        tables[name] = types.MappingProxyType(table)
    return types.MappingProxyType(tables)


def _check_counts(name: str, counts: list[str]) -> None:
    expected = 2
    for index, count in enumerate(counts):
        match = re.fullmatch(r"(\d+)(\+?)", count)
        last = index == len(counts) - 1
        if not match or int(match[1]) != expected or (bool(match[2]) != last):
            raise InnerKeyError(
                count,
                "lines must be card counts '2', '3', ... in order, the last one open-ended "
                f"like '6+'; expected '{expected}{'+' if last else ''}' here",
                name,
            )
        expected += 1


@dataclass(frozen=True)
class Bonus16Rules:
    """Profile section ``[side_bets.bonus_16]``."""

    paytable: str = key("1", "name of the paytable in force (one of [.paytables])")
    paytables: Mapping[str, CountPaytable] = key(
        {"1": PAYTABLE_1, "2": PAYTABLE_2},
        "the paytables: card count (or '6+') = odds",
        converter=_read_paytables,
        expect="tables of card count = odds, counts from '2' with the last like '6+'",
    )

    def check(self) -> tuple[str, str] | None:
        if self.paytable not in self.paytables:
            names = ", ".join(repr(name) for name in self.paytables)
            return "paytable", f"{self.paytable!r} names no paytable; choose one of {names}"
        return None

    @property
    def pays(self) -> CountPaytable:
        """The paytable in force."""
        return self.paytables[self.paytable]


def line_for(card_count: int, table: CountPaytable) -> str:
    """The paytable line for a dealer hand of ``card_count`` cards."""
    if str(card_count) in table:
        return str(card_count)
    last = next(reversed(table))
    if card_count >= int(last.rstrip("+")):
        return last
    raise ValueError(f"no 16 Bonus line for {card_count} cards")


def cards_to_16(dealer_cards: Sequence[Card]) -> int | None:
    """How many cards the dealer's hand held when it first totalled 16 (soft or hard), if ever."""
    for count in range(2, len(dealer_cards) + 1):
        if hand_total(dealer_cards[:count]).total == 16:
            return count
    return None


def evaluate(
    dealer_cards: Sequence[Card], rules: Bonus16Rules, paytable: str | None = None
) -> SideBetResult:
    """Settle the 16 Bonus on the dealer's hand; ``paytable`` overrides the one in force."""
    if paytable is not None and paytable not in rules.paytables:
        names = ", ".join(repr(name) for name in rules.paytables)
        raise WagerError(f"no 16 Bonus paytable {paytable!r}; paytables: {names}")
    table = rules.paytables[paytable] if paytable is not None else rules.pays
    count = cards_to_16(dealer_cards)
    if count is None:
        return lost(BET, "Dealer did not reach 16")
    line = line_for(count, table)
    label = f"Dealer 16 in {line} cards"
    return SideBetResult(BET, BetResult.WIN, line, label, table[line])
