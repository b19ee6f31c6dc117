"""Effects out: what the table state machine asks the adapters to do.

Effects are data. Lights go to the GPIO driver, prompts and alarms to the
dealer display, publish requests to the jackpot link's outbox, records to the
journal. None of them ever carries the hole card before the dealer's turn.
Amounts are integer cents.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, ClassVar

LIGHT_STATES = ("on", "off", "blink")


@functools.cache
def field_names(cls: type) -> tuple[str, ...]:
    """The field names of a dataclass, in order (looked up once per class: ``to_dict``
    runs for every effect and event of a round's recall record)."""
    return tuple(field.name for field in dataclasses.fields(cls))


@dataclass(frozen=True, slots=True)
class Effect:
    KIND: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"effect": self.KIND}
        for name in field_names(type(self)):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class Light(Effect):
    """Set a light: ``spot3.lucky_ladies`` (a bet circle), ``spot3.action``
    (the spot in action), ``lockout`` (no more bets) or ``alarm`` (tower)."""

    KIND: ClassVar[str] = "light"
    name: str
    state: str


@dataclass(frozen=True, slots=True)
class Prompt(Effect):
    """Tell the dealer what to do next, in casino words."""

    KIND: ClassVar[str] = "prompt"
    code: str
    text: str
    spot: int | None = None


@dataclass(frozen=True, slots=True)
class Alarm(Effect):
    """A procedure violation or device problem; ``action`` says what the dealer must do."""

    KIND: ClassVar[str] = "alarm"
    code: str
    text: str
    action: str
    spot: int | None = None


@dataclass(frozen=True, slots=True)
class Refused(Effect):
    """An event the procedure does not allow now; nothing changed."""

    KIND: ClassVar[str] = "refused"
    event: str
    reason: str


@dataclass(frozen=True, slots=True)
class Settled(Effect):
    """One wager settled: ``net = paid + returned - stake`` for the player.

    ``hand`` is the hand index at the spot for hand wagers, None for side bets
    and insurance. ``meter`` is the share of a meter awarded by the jackpot
    controller (the amount is not known at the table).
    """

    KIND: ClassVar[str] = "settled"
    spot: int
    wager: str
    stake: int
    outcome: str
    paid: int
    returned: int
    reason: str
    hand: int | None = None
    pays: str | None = None
    meter: str | None = None
    pool: str | None = None

    @property
    def net(self) -> int:
        return self.paid + self.returned - self.stake


@dataclass(frozen=True, slots=True)
class Publish(Effect):
    """A message for the jackpot controller: ``contribution``, ``round_result``,
    ``hit_claim`` or ``award_confirm``; ``key`` is unique per table and message (deduplication)."""

    KIND: ClassVar[str] = "publish"
    topic: str
    key: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Record(Effect):
    """A journal record: ``round`` carries a finished round for game recall."""

    KIND: ClassVar[str] = "record"
    record: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Step:
    """What one event did: ``accepted`` (False: refused, nothing changed) and its effects.

    ``journal`` is False only for a tick that changed nothing; every other
    event goes to the journal, refused ones included, so a replay repeats the
    dealer's refused presses too.
    """

    accepted: bool
    effects: tuple[Effect, ...]
    journal: bool = True

    @property
    def reason(self) -> str | None:
        for effect in self.effects:
            if isinstance(effect, Refused):
                return effect.reason
        return None
