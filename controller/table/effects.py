"""Effects out: what the table state machine asks the adapters to do.

Effects are data. Lights go to the GPIO driver, prompts and alarms to the
dealer display, publish requests to the jackpot link's outbox, records to the
journal. None of them ever carries the hole card before the dealer's turn.
Amounts are integer cents.

:meth:`Effect.to_dict` writes an effect as a JSON object and :func:`parse_effect` reads it
back (a journal checkpoint holds the effects of the round in progress):

>>> parse_effect({"effect": "prompt", "code": "deal", "text": "Deal spot 1", "spot": 1})
Prompt(code='deal', text='Deal spot 1', spot=1)
>>> parse_effect(Light("lockout", "on").to_dict())
Light(name='lockout', state='on')
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from controller.errors import EventError
from controller.fast_init import fast_init

LIGHT_STATES = ("on", "off", "blink")


@functools.cache
def field_names(cls: type) -> tuple[str, ...]:
    """The field names of a dataclass, in order (looked up once per class: ``to_dict``
    runs for every effect and event of a round's recall record)."""
    return tuple(field.name for field in dataclasses.fields(cls))


_READERS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def field_values(obj: Any) -> zip[tuple[str, Any]]:
    """``(name, value)`` of each field of the dataclass ``obj``, in order: one
    :func:`operator.attrgetter` per class reads them all at once (``to_dict`` runs for every
    effect and event of a round's recall record)."""
    cls = type(obj)
    reader = _READERS.get(cls)
    if reader is None:
        names = field_names(cls)
        if len(names) == 1:
            one = operator.attrgetter(names[0])
            get: Callable[[Any], tuple[Any, ...]] = lambda o: (one(o),)  # noqa: E731
        else:
            get = operator.attrgetter(*names) if names else (lambda o: ())
        reader = _READERS[cls] = (names, get)
    names, get = reader
    return zip(names, get(obj), strict=True)


@dataclass(frozen=True, slots=True)
class Effect:
    KIND: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"effect": self.KIND}
        for name, value in field_values(self):
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

    def to_dict(self) -> dict[str, Any]:  # the generic one, written out: the most common
        return {"effect": "light", "name": self.name, "state": self.state}


@fast_init
@dataclass(frozen=True, slots=True)
class Prompt(Effect):
    """Tell the dealer what to do next, in casino words."""

    KIND: ClassVar[str] = "prompt"
    code: str
    text: str
    spot: int | None = None

    def to_dict(self) -> dict[str, Any]:  # the generic one, written out: a round has dozens
        out: dict[str, Any] = {"effect": "prompt", "code": self.code, "text": self.text}
        if self.spot is not None:
            out["spot"] = self.spot
        return out


@fast_init
@dataclass(frozen=True, slots=True)
class Alarm(Effect):
    """A procedure violation or device problem; ``action`` says what the dealer must do.
    ``about`` names what the alarm is about where the table needs it to tell when the cause
    is over: the bet circle (``blazing_7s``) of a chip alarm, the kind of a table fault."""

    KIND: ClassVar[str] = "alarm"
    code: str
    text: str
    action: str
    spot: int | None = None
    about: str | None = None


@dataclass(frozen=True, slots=True)
class AlarmCleared(Effect):
    """Open alarm ``alarm`` (its id in the register) cleared by itself: its cause is over
    (``reason``, in casino words). It stays in the register, marked cleared, until a
    technician acknowledges it; the dealer display no longer shows it."""

    KIND: ClassVar[str] = "alarm_cleared"
    alarm: int
    code: str
    text: str
    reason: str


@fast_init
@dataclass(frozen=True, slots=True)
class Refused(Effect):
    """An event the procedure does not allow now; nothing changed."""

    KIND: ClassVar[str] = "refused"
    event: str
    reason: str


@fast_init
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

    def to_dict(self) -> dict[str, Any]:  # the generic one, written out: a line per wager
        out: dict[str, Any] = {
            "effect": "settled",
            "spot": self.spot,
            "wager": self.wager,
            "stake": self.stake,
            "outcome": self.outcome,
            "paid": self.paid,
            "returned": self.returned,
            "reason": self.reason,
        }
        if self.hand is not None:
            out["hand"] = self.hand
        if self.pays is not None:
            out["pays"] = self.pays
        if self.meter is not None:
            out["meter"] = self.meter
        if self.pool is not None:
            out["pool"] = self.pool
        return out


@fast_init
@dataclass(frozen=True, slots=True)
class Publish(Effect):
    """A message for the jackpot controller: ``contribution``, ``round_result``,
    ``hit_claim`` or ``award_confirm``; ``key`` is unique per table and message (deduplication)."""

    KIND: ClassVar[str] = "publish"
    topic: str
    key: str
    payload: dict[str, Any]

    @staticmethod
    def later(topic: str, key: str, build: Callable[[], dict[str, Any]]) -> Publish:
        """A message whose ``payload`` is ``build()``, called when ``payload`` is first read
        (as :meth:`Record.later`: ``build`` reads only values that no longer change).

        >>> lazy = Publish.later("round_result", "round-1/result", lambda: {"round": 1})
        >>> lazy == Publish("round_result", "round-1/result", {"round": 1})
        True
        """
        return Publish(topic, key, Later(build))  # type: ignore[arg-type]


class Later(functools.partial):  # type: ignore[type-arg]
    """A field's value not built yet: ``Later(make, *args)`` makes it, ``make(*args)``, when
    it is first read (see :meth:`Record.later`, :meth:`Publish.later`; a settlement line's
    prompt text). A :func:`functools.partial`: one object, made in C."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Record(Effect):
    """A journal record: ``round`` carries a finished round for game recall."""

    KIND: ClassVar[str] = "record"
    record: str
    data: dict[str, Any]

    @staticmethod
    def later(record: str, build: Callable[[], dict[str, Any]]) -> Record:
        """A record whose ``data`` is ``build()``, called when ``data`` is first read.
        ``build`` must read only values that no longer change (immutable events and
        effects, copied lists), so the data is the same whenever it is read.

        >>> lazy = Record.later("round", lambda: {"round": 1})
        >>> lazy == Record("round", {"round": 1}), lazy
        (True, Record(record='round', data={'round': 1}))
        """
        return Record(record, Later(build))  # type: ignore[arg-type]


def _built_when_read(cls: type, name: str, doc: str) -> None:
    """Make field ``name`` of the slotted dataclass ``cls`` a property over its slot that
    builds a :class:`Later` value when it is first read, and keeps it; everything else
    (fields, equality, repr, hash, frozen) is the dataclass's."""
    slot = cls.__dict__[name]
    get, put = slot.__get__, slot.__set__

    def read(obj: Any) -> Any:
        value = get(obj, cls)
        if type(value) is Later:
            value = value()
            put(obj, value)
        return value

    setattr(cls, name, property(read, put, doc=doc))


# A round's recall record is every event and effect of the round as JSON data, its result
# message the round's cards and settlement lines: the journal, the link and recovery read
# them, a replay that only needs the table's state does not. Made by ``later``, they are
# built when first read (:func:`_built_when_read`).
_built_when_read(Record, "data", "The record's JSON data.")
_built_when_read(Publish, "payload", "The message's JSON data.")
# A settlement line's prompt (the words "Pay spot 3 main wager: $25.00") is written when first
# read: the display and the journal read it, a replay does not.
_built_when_read(Prompt, "text", "The prompt's words.")


EFFECT_KINDS: dict[str, type[Effect]] = {
    cls.KIND: cls for cls in (Light, Prompt, Alarm, AlarmCleared, Refused, Settled, Publish, Record)
}
"""Every effect class by its ``KIND`` (the ``"effect"`` of its JSON object)."""

_FIELD_CHECKS: dict[str, tuple[type, str]] = {
    "int": (int, "a whole number"),
    "str": (str, "text"),
    "dict": (dict, "a JSON object"),
}


def parse_effect(obj: Any) -> Effect:
    """Build an effect from its :meth:`Effect.to_dict` object; an unknown kind, an unknown or
    missing field and a value of the wrong type are :class:`~controller.errors.EventError`
    naming the field.

    >>> parse_effect({"effect": "light", "name": "lockout", "state": 1})
    Traceback (most recent call last):
    ...
    controller.errors.EventError: 'light' effect: field 'state' must be text, got 1
    """
    if not isinstance(obj, dict):
        raise EventError(f"an effect must be a JSON object, got {obj!r}")
    kind = obj.get("effect")
    cls = EFFECT_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        known = ", ".join(sorted(EFFECT_KINDS))
        raise EventError(f"unknown effect {kind!r} (field 'effect'); use one of: {known}")
    fields = {field.name: field for field in dataclasses.fields(cls)}
    unknown = sorted(set(obj) - set(fields) - {"effect"})
    if unknown:
        raise EventError(
            f"'{kind}' effect: unknown field(s) {', '.join(unknown)}; "
            f"fields are: {', '.join(fields)}"
        )
    values: dict[str, Any] = {}
    for name, field in fields.items():
        where = f"'{kind}' effect: field '{name}'"
        if name not in obj:
            if field.default is dataclasses.MISSING:
                raise EventError(f"{where} is required (fields are: {', '.join(fields)})")
            continue
        value = obj[name]
        if value is None and field.default is None:
            continue
        expected, words = _FIELD_CHECKS[str(field.type).split("[")[0].split(" ")[0]]
        if isinstance(value, bool) or not isinstance(value, expected):
            raise EventError(f"{where} must be {words}, got {value!r}")
        values[name] = value
    return cls(**values)


@fast_init
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
