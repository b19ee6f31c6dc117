"""Table settings the state machine needs: spots, limits, card sources.

These are the table's, not the game's: the same house-rule profile runs at a
$10 and at a $100 table. Amounts are integer cents. The runtime reads them
from the table config file (``[table]``); event scripts may carry them in
their header line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from controller.errors import TableControllerError
from controller.rules.pays import format_cents

CARD_SOURCE_MODES = ("shoe", "camera", "both")


class SettingsError(TableControllerError, ValueError):
    """A table setting out of range; the message names the key and what is allowed."""


@dataclass(frozen=True, slots=True)
class TableSettings:
    """``spots``: betting spots, 1 (first base) to 7; ``main_minimum``/``main_maximum``:
    limits of a main wager; ``side_minimum``/``side_maximum``: of a side bet whose
    amount is not fixed by the game; ``card_source``: which reader deals the cards
    (``both``: the shoe deals, the camera must agree)."""

    spots: int = 7
    main_minimum: int = 1000
    main_maximum: int = 100000
    side_minimum: int = 100
    side_maximum: int = 10000
    card_source: str = "shoe"

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "card_source":
                if value not in CARD_SOURCE_MODES:
                    raise SettingsError(
                        f"table setting 'card_source' must be one of "
                        f"{', '.join(CARD_SOURCE_MODES)}, got {value!r}"
                    )
            elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingsError(
                    f"table setting '{field.name}' must be a whole number of at least 1, "
                    f"got {value!r}"
                )
        if self.spots > 7:
            raise SettingsError(f"table setting 'spots' is at most 7, got {self.spots}")
        for low, high in (("main_minimum", "main_maximum"), ("side_minimum", "side_maximum")):
            if getattr(self, low) > getattr(self, high):
                raise SettingsError(
                    f"table setting '{low}' ({format_cents(getattr(self, low))}) is above "
                    f"'{high}' ({format_cents(getattr(self, high))}): lower it or raise '{high}'"
                )

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON object (every round's recall record carries them): each
        field is a number or text, so no deep copy is needed."""
        return {
            "spots": self.spots,
            "main_minimum": self.main_minimum,
            "main_maximum": self.main_maximum,
            "side_minimum": self.side_minimum,
            "side_maximum": self.side_maximum,
            "card_source": self.card_source,
        }

    @classmethod
    def from_dict(cls, data: Any) -> TableSettings:
        if not isinstance(data, dict):
            raise SettingsError(f"table settings must be a JSON/TOML table, got {data!r}")
        names = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise SettingsError(
                f"unknown table setting(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}"
            )
        return cls(**data)
