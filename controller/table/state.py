"""The table's state: plain data the state machine mutates and nothing else reads raw.

Adapters and pages read :func:`controller.table.view.snapshot`, which hides the
hole card; this module's objects hold it, so they never leave the core.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from controller.rules.cards import Card
from controller.rules.hand import hand_total
from controller.table.effects import Effect
from controller.table.events import Event, JackpotAward


class Phase(enum.Enum):
    """Where the round is, in the order of the procedure."""

    BETTING = "betting"
    DEALING = "dealing"
    INSURANCE = "insurance"
    EZ_BUST = "ez_bust"
    PLAYERS = "players"
    DEALER = "dealer"
    SETTLED = "settled"

    # Members are singletons equal only to themselves: hash them by identity, in C (the
    # default hashes the name in Python, on every ``phase in IN_PROGRESS``).
    __hash__ = object.__hash__


IN_PROGRESS = frozenset(
    {Phase.DEALING, Phase.INSURANCE, Phase.EZ_BUST, Phase.PLAYERS, Phase.DEALER}
)
"""Phases between lockout and settlement: a round is being dealt or played."""

DEALER = 0
"""The dealer's place in the deal order (spots are 1..7)."""

IN_ACTION = 0
"""As the ``spot`` of double, split, surrender and Double Up: the spot in action (a
dealer console with one button for each action, not one per spot)."""


@dataclass(slots=True)
class HandInPlay:
    """A player's hand; amounts in cents."""

    cards: list[Card]
    wager: int
    double_down: int = 0
    double_up: int = 0
    from_split: bool = False
    split_aces: bool = False
    surrendered: bool = False
    stood: bool = False
    settled: bool = False

    @property
    def total(self) -> int:
        return hand_total(self.cards).total

    @property
    def busted(self) -> bool:
        return hand_total(self.cards).is_bust


@dataclass(slots=True)
class SpotInPlay:
    """A spot with a main wager in this round. ``wagers``: circle -> cents, as
    latched at lockout (``main`` and side bets); ``first_two``: the spot's first two
    cards, which side bets judge even after a split."""

    number: int
    wagers: dict[str, int]
    hands: list[HandInPlay]
    first_two: tuple[Card, ...] = ()
    insurance: int = 0
    insurance_settled: bool = False
    even_money: bool = False
    ez_bust: int = 0
    side_settled: set[str] = field(default_factory=set)


@dataclass(slots=True)
class RoundState:
    """One round, from lockout to settlement."""

    number: int
    spots: dict[int, SpotInPlay]
    dealer: list[Card] = field(default_factory=list)
    deal_queue: list[int] = field(default_factory=list)
    hole_revealed: bool = False
    dealer_checked: bool = False
    dealer_plays: bool = False
    dealer_needs_second: bool = False
    players_live: bool = True
    in_action: tuple[int, int] | None = None
    void: str = ""
    started_t: int | None = None
    settled_t: int | None = None


@dataclass(frozen=True, slots=True)
class OpenAlarm:
    """An alarm in the register, not yet acknowledged: the :class:`~controller.table.effects.Alarm`
    effect's ``code``, ``text``, ``action``, ``spot`` and ``about``, with the ``id`` the table
    gave it (1, 2, 3 ... never reused), the ``round`` it was raised in and the table's clock
    ``t`` (ms, or None) when it was raised. ``cleared`` says why its cause is over (empty while
    it lasts) and ``cleared_t`` when: a cleared alarm leaves the dealer display at once and
    the register when a technician acknowledges it, like any other."""

    id: int
    code: str
    text: str
    action: str
    spot: int | None
    round: int
    t: int | None
    about: str = ""
    cleared: str = ""
    cleared_t: int | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """A message the table published that a jackpot award may answer: a ``hit_claim``
    (``mystery`` False: the award names the same ``pool`` and ``line``) or a Must-Hit-By
    Mystery eligible ``contribution`` (``mystery`` True: ``pool`` is the progressive pool the
    stake fed; the award names another pool, the Mystery meter, and the line
    ``100% of meter``). ``key`` is the message's key (the award's ``claim_key``)."""

    key: str
    round: int
    spot: int
    pool: str
    line: str
    mystery: bool = False


@dataclass(slots=True)
class TableState:
    """Everything the table knows. ``seen`` counts each card drawn since the last
    shuffle (shoe integrity), ``dealt`` all of them and ``discarded`` those burned,
    voided or cleared with a finished round, so ``dealt == discarded + pending +
    cards on the layout``; ``pending`` holds cards waiting for the dealer's
    decision (``pending_foreign``: each may not be assigned; ``pending_held``: why the shoe's
    card was held instead of dealt, "" if it was not); ``log``/``round_effects`` collect the
    round for game recall.
    ``awards`` are the jackpot awards offered and not yet confirmed (arrival order);
    ``awards_closed`` remembers what became of the others (``confirmed``, ``committed``,
    ``refused``), so an award the controller repeats is not shown twice.
    ``faults`` are the latched faults, kind -> (detail, condition still present);
    ``jackpot_link``: whether the jackpot controller's link is up (the runtime says).
    ``alarms`` is the alarm register: id -> every alarm raised and not yet acknowledged, in
    raising order; ``alarm_seq`` the ids handed out so far; ``alarms_dropped`` how many open
    alarms were dropped unacknowledged because the register was full.
    ``claims`` are the hit claims and ``mystery_claims`` the Mystery-eligible contributions
    this table published, by key, that no closed award has answered yet (oldest first, each
    bounded): a jackpot award is prompted only if it answers one of them.
    ``event_seq``: the significant events sent to the center so far (their keys
    ``event/1``, ``event/2`` ...; controller/table/significant.py)."""

    round_number: int = 1
    phase: Phase = Phase.BETTING
    round: RoundState | None = None
    sensors: dict[tuple[int, str], bool] = field(default_factory=dict)
    amounts: dict[tuple[int, str], int] = field(default_factory=dict)
    seen: dict[Card, int] = field(default_factory=dict)
    dealt: int = 0
    discarded: int = 0
    pending: list[Card] = field(default_factory=list)
    pending_foreign: list[bool] = field(default_factory=list)
    pending_held: list[str] = field(default_factory=list)
    camera_ahead: list[Card] = field(default_factory=list)
    unconfirmed: list[Card] = field(default_factory=list)
    burn_expected: int = 0
    cut_card_out: bool = False
    shuffle_pending: bool = False
    door_open: bool = False
    shoe_fault: str = ""
    supervisor_key: bool = False
    faults: dict[str, tuple[str, bool]] = field(default_factory=dict)
    jackpot_link: bool = True
    alarms: dict[int, OpenAlarm] = field(default_factory=dict)
    alarm_seq: int = 0
    alarms_dropped: int = 0
    awards: dict[str, JackpotAward] = field(default_factory=dict)
    awards_closed: dict[str, str] = field(default_factory=dict)
    claims: dict[str, Claim] = field(default_factory=dict)
    mystery_claims: dict[str, Claim] = field(default_factory=dict)
    lights: dict[str, str] = field(default_factory=dict)
    event_seq: int = 0
    carried: list[Event] = field(default_factory=list)
    log: list[Event] = field(default_factory=list)
    round_effects: list[Effect] = field(default_factory=list)
    now: int | None = field(default=None, compare=False)
