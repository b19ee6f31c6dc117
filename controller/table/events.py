"""Events in: what drivers and the dealer console tell the table state machine.

Every event is a small frozen dataclass with a ``TYPE`` (its ``"type"`` in an
event script) and an optional ``t``: the runtime's clock in integer
milliseconds. The state machine never reads a clock; time reaches it here.

:func:`parse_event` turns one JSON object (a line of an event script or of a
journal export) into an event and names the field that is wrong;
:meth:`Event.to_dict` is its inverse.

>>> parse_event({"type": "card", "card": "qh"})
CardDrawn(card=Card(rank=<Rank.QUEEN: 12>, suit=<Suit.HEARTS: 'H'>), source='shoe', t=None)
>>> parse_event({"type": "card", "card": "QH"}).to_dict()
{'type': 'card', 'card': 'QH', 'source': 'shoe'}
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from controller.errors import CardError, EventError
from controller.rules.cards import Card, parse_card
from controller.table.effects import field_values

CARD_SOURCES = ("shoe", "camera")
SHOE_EVENTS = (
    "shuffle",
    "new_shoe",
    "cut_card",
    "door_open",
    "door_closed",
    "fault",
    "fault_cleared",
    "offline",
    "online",
    "missed_frames",
    "out_of_order",
)
"""``offline``/``online``: the shoe driver lost / regained the shoe (heartbeat timeout,
unplugged); ``missed_frames``: a gap in the shoe's frame numbers, a card may be missing;
``out_of_order``: a message (not a card) whose frame number was behind the shoe's count, so
it was ignored (hardware/shoe-protocol.md)."""
CONSOLE_BUTTONS = (
    "lockout",
    "next",
    "double",
    "split",
    "surrender",
    "double_up",
    "end_round",
    "burn",
    "void_round",
    "misdeal",
    "jackpot_paid",
    "recall_last",
)
"""The dealer console's buttons with no spot (double ... double_up act on the spot in action);
the GPIO pin map (``drivers/gpio_pins.py``) and the demo's autopilot use these names.
``recall_last`` is the dealer display's, not the table's: the runtime takes its press
(``controller/runtime/recall.py``), no table event is made of it."""
SPOT_BUTTONS = ("insurance", "even_money", "ez_bust")
"""Console buttons, one per spot (``insurance.3`` in a pin map)."""
FAULT_KINDS = ("shoe", "camera", "gpio", "journal", "link", "software")
"""What a :class:`TableFault` is about: a driver lost (shoe, camera, GPIO), the journal
that could not be written, the jackpot controller's link down past its time limit, or the
installed software not the signed build (issue 29 item 4; N.J.A.C. 13:69E-1.28H)."""
AWARD_STATES = ("offered", "committed", "refused")
"""A jackpot award's ``state`` as the controller sends it (link schema award.json)."""
LINK_ALARM_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")
"""What a :class:`LinkAlarm`'s ``kind`` looks like: the publisher's alarm kinds
(``ack_refused``, ``award_malformed``, ``signature``, ``puback`` ...;
``controller.link.publisher.Alarm``)."""


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event; ``t`` is the runtime clock in ms, or None."""

    TYPE: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.TYPE}
        for name, value in field_values(self):
            if value is None:
                continue
            out[name] = str(value) if isinstance(value, Card) else value
        return out


@dataclass(frozen=True, slots=True)
class BetSensor(Event):
    """A bet-present sensor under a bet circle changed: chips ``on`` or off.

    ``circle`` is ``main`` or a side bet's name (``lucky_ladies``,
    ``blazing_7s``, ``blackjack_tie.tie_17`` ...).
    """

    TYPE: ClassVar[str] = "bet"
    spot: int
    circle: str
    on: bool
    t: int | None = None

    def to_dict(self) -> dict[str, Any]:  # the generic one, written out: the most common
        out: dict[str, Any] = {"type": "bet", "spot": self.spot, "circle": self.circle}
        out["on"] = self.on
        if self.t is not None:
            out["t"] = self.t
        return out


@dataclass(frozen=True, slots=True)
class WagerAmount(Event):
    """The dealer keyed the amount (cents) of the chips on a circle."""

    TYPE: ClassVar[str] = "wager"
    spot: int
    circle: str
    amount: int
    t: int | None = None


@dataclass(frozen=True, slots=True)
class Lockout(Event):
    """ "No more bets": wagers latch, the deal may start."""

    TYPE: ClassVar[str] = "lockout"
    t: int | None = None


@dataclass(frozen=True, slots=True)
class CardDrawn(Event):
    """A card came out of the shoe (or passed the camera)."""

    TYPE: ClassVar[str] = "card"
    card: Card
    source: str = "shoe"
    t: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.TYPE, "card": str(self.card), "source": self.source}
        if self.t is not None:
            out["t"] = self.t
        return out


@dataclass(frozen=True, slots=True)
class OutOfOrderCard(Event):
    """The shoe's reader got a card in a frame whose number ``frame`` was behind its count
    (the count's last number ``last``; both 0-255): an old frame sent again (``again``: the
    very frame it had received under that number) or one out of order. Not a card drawn:
    the table holds it for the dealer's decision and never deals it (docs/table.md)."""

    TYPE: ClassVar[str] = "out_of_order_card"
    card: Card
    frame: int
    last: int
    again: bool = False
    t: int | None = None


@dataclass(frozen=True, slots=True)
class Next(Event):
    """The stand/next button: stand the hand in action, or close the open window."""

    TYPE: ClassVar[str] = "next"
    t: int | None = None

    def to_dict(self) -> dict[str, Any]:  # the generic one, written out
        return {"type": "next"} if self.t is None else {"type": "next", "t": self.t}


@dataclass(frozen=True, slots=True)
class SpotAction(Event):
    """Base of the per-spot console buttons; ``amount`` (cents) where one is keyed.

    For double, split, surrender and Double Up, ``spot`` 0 means the spot in action
    (a console with one button per action); insurance, even money and EZ Bust name
    their spot."""

    spot: int
    amount: int | None = None
    t: int | None = None


@dataclass(frozen=True, slots=True)
class Double(SpotAction):
    TYPE: ClassVar[str] = "double"


@dataclass(frozen=True, slots=True)
class Split(SpotAction):
    TYPE: ClassVar[str] = "split"


@dataclass(frozen=True, slots=True)
class Surrender(SpotAction):
    TYPE: ClassVar[str] = "surrender"


@dataclass(frozen=True, slots=True)
class Insurance(SpotAction):
    TYPE: ClassVar[str] = "insurance"


@dataclass(frozen=True, slots=True)
class EvenMoney(SpotAction):
    TYPE: ClassVar[str] = "even_money"


@dataclass(frozen=True, slots=True)
class EzBust(SpotAction):
    TYPE: ClassVar[str] = "ez_bust"


@dataclass(frozen=True, slots=True)
class DoubleUp(SpotAction):
    TYPE: ClassVar[str] = "double_up"


@dataclass(frozen=True, slots=True)
class EndRound(Event):
    """The dealer has paid and collected: clear the layout, open betting."""

    TYPE: ClassVar[str] = "end_round"
    t: int | None = None


@dataclass(frozen=True, slots=True)
class VoidRound(Event):
    """Void the round in progress (supervisor key): every wager is returned."""

    TYPE: ClassVar[str] = "void_round"
    reason: str = ""
    t: int | None = None


@dataclass(frozen=True, slots=True)
class Misdeal(Event):
    """Call a misdeal (supervisor key): the round is void, every wager returned."""

    TYPE: ClassVar[str] = "misdeal"
    t: int | None = None


@dataclass(frozen=True, slots=True)
class EnclosureDoor(Event):
    """The table base's or the Pi's enclosure (GLI-11's logic door) is ``open`` or shut
    (``[gpio.console] enclosure_door``); ``at_start``: its state when the daemon started,
    journaled at every start (issue 28 item 5)."""

    TYPE: ClassVar[str] = "enclosure_door"
    open: bool
    at_start: bool = False
    t: int | None = None


@dataclass(frozen=True, slots=True)
class PowerLoss(Event):
    """The last stop was not clean (no clean-stop marker: a power cut, a kill, a crash):
    journaled at the next start with the last event the journal had (``last_event``) and
    its UTC time (``last_utc_ms``, 0 if unknown; ``last_utc`` the same as text,
    ``2026-11-26 17:30:05 UTC``, for the alarm) (issue 28 item 5)."""

    TYPE: ClassVar[str] = "power_loss"
    last_event: int
    last_utc_ms: int = 0
    last_utc: str = ""
    t: int | None = None


#: What a technician did to the journal (``JournalChange.action``).
JOURNAL_ACTIONS = ("set_aside", "restore")


@dataclass(frozen=True, slots=True)
class JournalChange(Event):
    """The journal was set aside (a new file carries on from a fresh table) or restored from
    a backup, with the table controller stopped: the first event the new or restored file
    holds, written by the command itself (``table-controller journal-set-aside``,
    ``restore``). ``by`` names the account, ``detail`` the file (issue 28 item 4)."""

    TYPE: ClassVar[str] = "journal_change"
    action: str
    by: str = ""
    detail: str = ""
    t: int | None = None


@dataclass(frozen=True, slots=True)
class SupervisorKey(Event):
    """The supervisor key switch turned ``on`` or off."""

    TYPE: ClassVar[str] = "supervisor_key"
    on: bool
    t: int | None = None


@dataclass(frozen=True, slots=True)
class Burn(Event):
    """The dealer's decision on a card the procedure did not expect: burn it."""

    TYPE: ClassVar[str] = "burn"
    t: int | None = None


@dataclass(frozen=True, slots=True)
class Assign(Event):
    """The dealer's decision on an unexpected card: it belongs to ``spot`` (hand
    ``hand``, 0 first) or, with ``spot`` 0, to the dealer."""

    TYPE: ClassVar[str] = "assign"
    spot: int
    hand: int = 0
    t: int | None = None


@dataclass(frozen=True, slots=True)
class ShoeEvent(Event):
    """Something the shoe reported: one of :data:`SHOE_EVENTS`."""

    TYPE: ClassVar[str] = "shoe"
    event: str
    detail: str = ""
    t: int | None = None


@dataclass(frozen=True, slots=True)
class Tick(Event):
    """Time passes (the runtime's clock, ms)."""

    TYPE: ClassVar[str] = "tick"
    t: int | None = None


@dataclass(frozen=True, slots=True)
class JackpotAward(Event):
    """The jackpot link: the controller's award for a verified hit claim or a Must-Hit-By
    Mystery hit (controller/link/schemas/award.json). ``line`` is the meter share
    (``100% of meter``), ``amount`` the cents to hand pay, ``state`` one of
    :data:`AWARD_STATES`; ``round`` is the table's round the hit belongs to.
    ``claim_key``: the key of the table's ``hit_claim`` (or Mystery ``contribution``) the
    award answers; ``meter_before``: the whole cents the meter held when the award was
    taken. Both are None only in journals written before the table checked awards (0.1.0)."""

    TYPE: ClassVar[str] = "jackpot_award"
    award_id: str
    round: int
    spot: int
    pool: str
    amount: int
    line: str
    state: str = "offered"
    t: int | None = None
    claim_key: str | None = None
    meter_before: int | None = None


@dataclass(frozen=True, slots=True)
class ConfirmAward(Event):
    """The dealer hand paid the pending award ``award_id``. ``by`` None: confirmed with the
    supervisor key on (journals before issue 28). ``by``: a supervisor account on the
    diagnostics page (``"supervisor mlopez"``; the page checked the role), carried to the
    jackpot controller as ``confirmed_by``; ``amount``: the cents the supervisor typed again,
    which must be the award's."""

    TYPE: ClassVar[str] = "confirm_award"
    award_id: str
    t: int | None = None
    by: str | None = None
    amount: int | None = None


@dataclass(frozen=True, slots=True)
class JackpotPaid(Event):
    """The console's ``jackpot_paid`` button, supervisor key on: the oldest award waiting at
    the table was hand paid (issue 28 item 2); ``confirmed_by`` says the supervisor key."""

    TYPE: ClassVar[str] = "jackpot_paid"
    t: int | None = None


@dataclass(frozen=True, slots=True)
class TableFault(Event):
    """The runtime saw a fault of ``kind`` (one of :data:`FAULT_KINDS`). ``active``: the
    condition is present; ``active=False`` says it is gone (the latch stays until the
    supervisor key or a technician clears it)."""

    TYPE: ClassVar[str] = "table_fault"
    kind: str
    detail: str = ""
    active: bool = True
    t: int | None = None


@dataclass(frozen=True, slots=True)
class ClearFaults(Event):
    """A technician clears the latched faults (the diagnostics page); ``by`` names who.
    Turning the supervisor key on clears them too."""

    TYPE: ClassVar[str] = "clear_faults"
    by: str = "technician"
    t: int | None = None


#: Why the jackpot link is down (``JackpotLink.why``), in the fixed words the table shows.
LINK_WHY = {
    "not_connected": "not connected to the broker",
    "no_ack": "no acknowledgement from the jackpot controller",
    "controller_silent": "the jackpot controller is not answering",
    "controller_offline": "the jackpot controller is not answering (it said offline)",
    "clock_unsynchronised": "the table's clock is not synchronised",
}


@dataclass(frozen=True, slots=True)
class JackpotLink(Event):
    """The link to the jackpot controller is ``up`` (connected, acknowledging, its heartbeat
    fresh) or down. While it is down the table takes no progressive wagers. ``why``: a key of
    :data:`LINK_WHY` (None: not said; journals before issue 28)."""

    TYPE: ClassVar[str] = "jackpot_link"
    up: bool
    why: str | None = None
    t: int | None = None


@dataclass(frozen=True, slots=True)
class AcknowledgeAlarm(Event):
    """A technician acknowledged open alarm ``alarm`` (its id in the snapshot's ``alarms``),
    or every open alarm with ``alarm`` 0, on the diagnostics page; ``by`` names who. Accepted
    in any phase, also while a card waits for a decision."""

    TYPE: ClassVar[str] = "acknowledge_alarm"
    alarm: int
    by: str = "technician"
    t: int | None = None


@dataclass(frozen=True, slots=True)
class LinkAlarm(Event):
    """The jackpot link's publisher raised an alarm of ``kind`` (an acknowledgement refused,
    a malformed or badly signed message, a broker refusal ...; :data:`LINK_ALARM_KIND`), with
    its ``detail``. It enters the alarm register for a technician."""

    TYPE: ClassVar[str] = "link_alarm"
    kind: str
    detail: str = ""
    t: int | None = None


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        BetSensor,
        WagerAmount,
        Lockout,
        CardDrawn,
        OutOfOrderCard,
        Next,
        Double,
        Split,
        Surrender,
        Insurance,
        EvenMoney,
        EzBust,
        DoubleUp,
        EndRound,
        VoidRound,
        Misdeal,
        SupervisorKey,
        EnclosureDoor,
        PowerLoss,
        JournalChange,
        Burn,
        Assign,
        ShoeEvent,
        Tick,
        JackpotAward,
        ConfirmAward,
        JackpotPaid,
        TableFault,
        ClearFaults,
        JackpotLink,
        AcknowledgeAlarm,
        LinkAlarm,
    )
}


_UNITS = {"amount": " (cents)", "t": " (ms)", "alarm": " (an alarm's id, 0 for every open alarm)"}


def _field_value(event_type: str, name: str, kind: Any, value: Any) -> Any:
    kind = str(kind)
    where = f"'{event_type}' event: field '{name}'"
    if name == "card":
        if not isinstance(value, str):
            raise EventError(f'{where} must be card text such as "QH", got {value!r}')
        try:
            return parse_card(value)
        except CardError as exc:
            raise EventError(f"{where}: {exc}") from None
    if kind.startswith("bool"):
        if not isinstance(value, bool):
            raise EventError(f"{where} must be true or false, got {value!r}")
        return value
    if kind.startswith("int"):
        if isinstance(value, bool) or not isinstance(value, int):
            unit = _UNITS.get(name, "")
            raise EventError(f"{where} must be a whole number{unit}, got {value!r}")
        if value < 0:
            unit = _UNITS["alarm"] if name == "alarm" else ""
            raise EventError(f"{where} must not be negative{unit}, got {value}")
        return value
    if not isinstance(value, str):
        raise EventError(f"{where} must be text, got {value!r}")
    return value


def parse_event(obj: Any) -> Event:
    """Build an event from its JSON object; unknown types and fields are errors."""
    if not isinstance(obj, dict):
        raise EventError(f"an event must be a JSON object, got {obj!r}")
    event_type = obj.get("type")
    cls = EVENT_TYPES.get(event_type) if isinstance(event_type, str) else None
    if cls is None:
        known = ", ".join(sorted(EVENT_TYPES))
        raise EventError(f"unknown event type {event_type!r}; use one of: {known}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(obj) - set(fields) - {"type"})
    if unknown:
        raise EventError(
            f"'{event_type}' event: unknown field(s) {', '.join(unknown)}; "
            f"fields are: {', '.join(fields)}"
        )
    values: dict[str, Any] = {}
    for name, field in fields.items():
        if name in obj:
            if obj[name] is None and field.default is None:
                continue
            values[name] = _field_value(event_type, name, field.type, obj[name])
        elif field.default is dataclasses.MISSING:
            raise EventError(f"'{event_type}' event: field '{name}' is required")
    event = cls(**values)
    if isinstance(event, CardDrawn) and event.source not in CARD_SOURCES:
        raise EventError(f"'card' event: source must be one of {', '.join(CARD_SOURCES)}")
    if isinstance(event, OutOfOrderCard):
        for name in ("frame", "last"):
            if getattr(event, name) > 255:
                raise EventError(
                    f"'{event_type}' event: field '{name}' is a frame number 0-255, "
                    f"got {getattr(event, name)}"
                )
    if isinstance(event, ShoeEvent) and event.event not in SHOE_EVENTS:
        raise EventError(f"'shoe' event: event must be one of {', '.join(SHOE_EVENTS)}")
    if isinstance(event, JournalChange) and event.action not in JOURNAL_ACTIONS:
        raise EventError(
            f"'journal_change' event: action must be one of {', '.join(JOURNAL_ACTIONS)}"
        )
    if isinstance(event, TableFault) and event.kind not in FAULT_KINDS:
        raise EventError(f"'table_fault' event: kind must be one of {', '.join(FAULT_KINDS)}")
    if isinstance(event, JackpotAward) and event.state not in AWARD_STATES:
        raise EventError(f"'jackpot_award' event: state must be one of {', '.join(AWARD_STATES)}")
    if isinstance(event, LinkAlarm) and not LINK_ALARM_KIND.fullmatch(event.kind):
        raise EventError(
            "'link_alarm' event: kind must be the publisher's alarm kind, lower-case letters, "
            f"digits and _ (up to 40), such as ack_refused; got {event.kind!r}"
        )
    return event
