"""The table state machine: events in, effects out; no I/O, no clock, no threads.

>>> from controller.games import load_game
>>> table = Table(load_game("pa-standard"), TableSettings(spots=1))
>>> table.handle(BetSensor(1, "main", True)).accepted
True
>>> [e.text for e in table.handle(Lockout()).effects if e.KIND == "prompt"]
['No more bets: deal spot 1 first']
>>> table.handle(Next()).reason
'nothing to stand or close now: the initial deal is in progress'

Every handler checks before it changes anything: a refused event (``Step.accepted``
False, one :class:`Refused` effect naming the reason) leaves the state untouched.

Every :class:`Alarm` of an accepted step enters the alarm register (``state.alarms``) with an
id, until a technician acknowledges it (:class:`~controller.table.events.AcknowledgeAlarm`);
one whose cause is over is marked cleared on the way (:class:`AlarmCleared`, docs/table.md):

>>> table.handle(BetSensor(1, "lucky_ladies", True)).accepted  # after no more bets
True
>>> [(a.id, a.code, a.round) for a in table.state.alarms.values()]
[(1, 'late_bet', 1)]
>>> table.handle(ev.AcknowledgeAlarm(1, by="tech 42")).accepted, table.state.alarms
(True, {})
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from controller.errors import EventError, ProcedureError, RuleViolation, WagerError
from controller.rules.profile import HouseRules
from controller.rules.sidebets import blackjack_tie
from controller.table import events as ev
from controller.table import significant
from controller.table.alarm_register import MAX_OPEN_ALARMS, AlarmRegister
from controller.table.awards import Awards
from controller.table.betting import Betting
from controller.table.card_flow import CardFlow
from controller.table.console import Console
from controller.table.dealer_turn import DealerTurn
from controller.table.effects import (
    Alarm,
    AlarmCleared,
    Effect,
    Light,
    Prompt,
    Publish,
    Record,
    Refused,
    Settled,
    Step,
)
from controller.table.events import (
    Assign,
    BetSensor,
    Burn,
    CardDrawn,
    EndRound,
    Lockout,
    Misdeal,
    Next,
    ShoeEvent,
    SupervisorKey,
    Tick,
    VoidRound,
    WagerAmount,
)
from controller.table.faults import Faults
from controller.table.part import RefusedWithAlarm
from controller.table.players import PlayersTurn
from controller.table.procedure import Procedure
from controller.table.prompts import Prompts
from controller.table.settings import TableSettings
from controller.table.shoe import ShoeReports
from controller.table.state import IN_PROGRESS, Claim, Phase, TableState
from controller.table.view import snapshot

REFUSALS = (ProcedureError, RuleViolation, WagerError)

# Events the dealer cannot use while a card waits for a decision (burn, assign, misdeal).
_BLOCKED_BY_PENDING = (
    Lockout,
    Next,
    ev.SpotAction,
    EndRound,
)


# Events that are not part of the round's recall record: a technician's acknowledgement and a
# link alarm act on the alarm register, which a recalled round replayed alone does not have.
_NOT_IN_ROUND_LOG = (ev.AcknowledgeAlarm, ev.LinkAlarm, ev.PowerLoss, ev.JournalChange)
# Effects not in the round's recall record: the journal's own records, and alarms clearing
# by themselves (they act on the register, like an acknowledgement).
_NOT_RECALLED = (Record, AlarmCleared)


MAX_CLAIMS = 1000
"""The table remembers at most this many unanswered hit claims, and as many Mystery-eligible
contributions, for the awards that answer them; beyond it the oldest is forgotten (an award
for it is then refused). Nothing is added while the link is down (no progressive wager is
taken), so a claim waiting in the outbox is not pushed out by newer ones; at 7 spots a
contribution is remembered for at least 142 rounds."""

MYSTERY_LINE = "100% of meter"
"""The line of every Must-Hit-By Mystery award: the whole trigger the meter reached."""

_PLAIN_EFFECTS = frozenset({Light, Prompt, Settled, Refused})
"""Effects that neither enter the alarm register nor make a claim, and are recalled."""

_DEALING = Phase.DEALING

_NOTHING = Step(True, ())
"""The step of an accepted event that did nothing to carry out (shared: steps are
immutable)."""
_NOTHING_TICK = Step(True, (), False)
"""The step of a tick that changed nothing: not journaled."""


def _traits(kind: type) -> tuple[bool, bool, bool, bool, bool]:
    """What :meth:`Table.handle` must know of an event class: whether a pending card blocks
    it, whether it may make a significant event, whether it enters the round's recall log
    when accepted and when refused (an accepted end round does not: the next round's log
    starts after it), and whether it is a tick."""
    recalled = not issubclass(kind, _NOT_IN_ROUND_LOG)
    return (
        issubclass(kind, _BLOCKED_BY_PENDING),
        issubclass(kind, significant.WATCHED),
        recalled and kind is not EndRound,
        recalled,
        issubclass(kind, Tick),
    )


def table_circles(rules: HouseRules) -> tuple[str, ...]:
    """The bet circles a layout for ``rules`` has sensors for: ``main`` and each side bet
    placed before lockout (EZ Bust is placed after the deal, at the dealer's console)."""
    circles = ["main"]
    for name in rules.side_bets.offered():
        if name == "ez_bust":
            continue
        if name == blackjack_tie.BET:
            circles.extend(f"{name}.{bonus}" for bonus in blackjack_tie.LABELS)
        else:
            circles.append(name)
    return tuple(circles)


class Table(
    Betting,
    CardFlow,
    Procedure,
    PlayersTurn,
    DealerTurn,
    Prompts,
    Console,
    ShoeReports,
    Faults,
    Awards,
    AlarmRegister,
):
    """One blackjack table: the dealing procedure of ``rules`` at up to 7 spots.

    :meth:`handle` takes one event and returns a :class:`Step`; :meth:`snapshot`
    is the public view (hole card hidden until the dealer's turn). The handlers live in the
    parts it is made of, one concern each: betting and lockout (:mod:`.betting`), cards
    (:mod:`.card_flow`), the initial deal and its windows (:mod:`.procedure`), the players'
    turn (:mod:`.players`), the dealer's turn and settlement (:mod:`.dealer_turn`), the
    prompts computed from the state (:mod:`.prompts`), the console's round buttons and doors
    (:mod:`.console`), the shoe's reports (:mod:`.shoe`), faults (:mod:`.faults`), jackpot
    awards (:mod:`.awards`) and the alarm register (:mod:`.alarm_register`).
    """

    def __init__(self, rules: HouseRules, settings: TableSettings | None = None):
        self.rules = rules
        self.settings = settings or TableSettings()
        self.state = TableState()
        self.circles = table_circles(rules)
        self._out: list[Effect] = []
        self._event: ev.Event | None = None
        self._choices_memo: dict[tuple[object, ...], str] = {}  # prompts.choices_key
        self._hand_prompts: dict[tuple[object, ...], Prompt] = {}  # prompts._hand_prompt
        self._side_lost: dict[tuple[object, ...], tuple[Effect, ...]] = {}  # procedure
        self._carried_made: dict[tuple[Any, ...], ev.Event] = {}  # console._on_end_round
        self._fixed_amounts: dict[str, int | None] = {}  # betting._fixed_amount
        self._settled_made: dict[tuple[Any, ...], tuple[Effect, Effect]] = {}  # _settle
        self._plans: dict[type, tuple[Any, bool, bool, bool, bool, bool]] = {}  # handle
        # handle's card of the initial deal: the one source it takes (none for "both": the
        # readers are compared), and the copies of a card the shoe holds
        source = self.settings.card_source
        self._deals_from = source if source != "both" else None
        self._decks = rules.shoe.decks
        self._handlers: dict[type, Callable[[Any], None]] = {
            BetSensor: self._on_bet,
            WagerAmount: self._on_wager,
            Lockout: self._on_lockout,
            CardDrawn: self._on_card,
            ev.OutOfOrderCard: self._on_out_of_order_card,
            Next: self._on_next,
            ev.Double: self._on_double,
            ev.Split: self._on_split,
            ev.Surrender: self._on_surrender,
            ev.Insurance: self._on_insurance,
            ev.EvenMoney: self._on_even_money,
            ev.EzBust: self._on_ez_bust,
            ev.DoubleUp: self._on_double_up,
            EndRound: self._on_end_round,
            VoidRound: self._on_void,
            Misdeal: self._on_void,
            SupervisorKey: self._on_key,
            Burn: self._on_burn,
            Assign: self._on_assign,
            ShoeEvent: self._on_shoe,
            Tick: lambda event: None,
            ev.JackpotAward: self._on_award,
            ev.ConfirmAward: self._on_confirm_award,
            ev.JackpotPaid: self._on_jackpot_paid,
            ev.EnclosureDoor: self._on_enclosure,
            ev.PowerLoss: self._on_power_loss,
            ev.JournalChange: self._on_journal_change,
            ev.TableFault: self._on_fault,
            ev.ClearFaults: self._on_clear_faults,
            ev.JackpotLink: self._on_link,
            ev.AcknowledgeAlarm: self._on_acknowledge_alarm,
            ev.LinkAlarm: self._on_link_alarm,
        }

    # -- the one entry point ----------------------------------------------------

    def handle(self, event: ev.Event) -> Step:
        """Apply one event; return whether it was accepted and its effects."""
        kind = type(event)
        state = self.state
        if kind is CardDrawn and state.phase is _DEALING:
            # A player's card of the initial deal before its last, on a quiet table (no card
            # waiting, no alarm, fault or open door, the alarm light off): counted and put on
            # its hand, nothing to carry out. What _on_card and the steps below do for it,
            # without their checks and calls (15 of a round's 40 events at 7 spots).
            queue = state.round.deal_queue  # type: ignore[union-attr]
            recipient = queue[0]
            if (
                recipient  # not the dealer (DEALER is 0)
                and len(queue) > 1
                and event.source == self._deals_from
                and not (
                    state.pending
                    or state.alarms
                    or state.shoe_fault
                    or state.faults
                    or state.door_open
                    or "alarm" in state.lights
                )
            ):
                card = event.card  # type: ignore[attr-defined]
                seen = state.seen
                count = seen.get(card, 0) + 1
                if count <= self._decks:  # not a foreign card
                    t = event.t
                    if t is not None:
                        now = state.now
                        if now is None or t > now:
                            state.now = t
                    seen[card] = count
                    state.dealt += 1
                    del queue[0]
                    state.round.spots[recipient].hands[0].cards.append(card)  # type: ignore[union-attr]
                    state.log.append(event)
                    return _NOTHING
        plan = self._plans.get(kind)
        if plan is None:
            plan = self._plan(kind, event)
        handler, blocked, watched, recall_accepted, recall_refused, is_tick = plan
        round_number = state.round_number
        t = event.t
        if t is not None:
            now = state.now
            if now is None or t > now:
                state.now = t
        # The step's effects: a list of its own each event (the last one stays in _out after
        # the step, which holds a copy of it).
        out: list[Effect] = []
        self._out = out
        self._event = event
        try:
            if blocked and state.pending:
                raise ProcedureError(
                    f"{event.TYPE.replace('_', ' ')} refused: {self._pending_text()} waits for a "
                    "decision: burn it, assign it, or call a misdeal (supervisor key)"
                )
            if watched:
                before = significant.watch(state)
                handler(event)
                self._significant(event, before)
            else:
                handler(event)
        except REFUSALS as exc:
            refused = Refused(event.TYPE, str(exc))
            if isinstance(exc, RefusedWithAlarm):
                step = Step(False, (refused, exc.alarm))
                self._register_alarms(step.effects, round_number)
            else:
                step = Step(False, (refused,))
            self._event = None
            if recall_refused:
                state.log.append(event)
                state.round_effects.extend(step.effects)  # a Refused and its Alarm: recalled
            return step
        if state.alarms:
            self._clear_alarms_whose_cause_is_over()
        # The alarm light blinks while a card waits, the shoe or the table is faulted or
        # the door is open in a round; the table's lights hold no "off".
        if (
            state.pending
            or state.shoe_fault
            or state.faults
            or (state.door_open and state.phase in IN_PROGRESS)
        ):
            if state.lights.get("alarm") != "blink":
                self._light("alarm", "blink")
        elif "alarm" in state.lights:
            self._light("alarm", "off")
        self._event = None
        if not out:  # nothing to carry out (a card of the initial deal, most bets): shared
            if is_tick:
                return _NOTHING_TICK
            if recall_accepted:
                state.log.append(event)
            return _NOTHING
        effects = tuple(out)
        step = Step(True, effects)
        plain = True  # no effect a round's recall leaves out
        for effect in effects:
            if type(effect) in _PLAIN_EFFECTS:  # most of them: nothing to remember
                continue
            if isinstance(effect, Alarm):
                self._register_alarms((effect,), round_number)
                continue  # recalled
            if isinstance(effect, Publish):
                self._remember_claims((effect,))
                if effect.topic != significant.KIND:
                    continue  # a contribution, a result, a claim: recalled
            plain = False  # a record, an alarm cleared, a significant event: left out
        if recall_accepted:
            state.log.append(event)
            if plain:
                state.round_effects.extend(effects)
            else:
                state.round_effects.extend(
                    [
                        e
                        for e in effects
                        if type(e) in _PLAIN_EFFECTS  # most of them, asked first
                        or not (
                            isinstance(e, _NOT_RECALLED)
                            or (isinstance(e, Publish) and e.topic == significant.KIND)
                        )
                    ]
                )
        return step

    def _plan(self, kind: type, event: ev.Event) -> tuple[Any, bool, bool, bool, bool, bool]:
        """:meth:`handle`'s plan for an event class, made at its first event: its handler
        (from ``_handlers``, as it is then) and its :func:`_traits`."""
        handler = self._handlers.get(kind)
        if handler is None:
            raise EventError(f"not a table event: {event!r}")
        plan = self._plans[kind] = (handler, *_traits(kind))
        return plan

    def _remember_claims(self, effects: tuple[Effect, ...]) -> None:
        """Remember each hit claim and Mystery-eligible contribution an accepted step
        publishes: the messages a jackpot award may answer (wherever the procedure emits
        them)."""
        state = self.state
        for effect in effects:
            if not isinstance(effect, Publish):
                continue
            topic = effect.topic  # asked first: a round's result is built only when read
            if topic == "hit_claim":
                p = effect.payload
                memory = state.claims
                claim = Claim(effect.key, p["round"], p["spot"], p["pool"], p["meter"])
            elif topic == "contribution" and effect.payload.get("mystery"):
                p = effect.payload
                memory = state.mystery_claims
                claim = Claim(effect.key, p["round"], p["spot"], p["pool"], MYSTERY_LINE, True)
            else:
                continue
            memory.pop(effect.key, None)
            memory[effect.key] = claim
            if len(memory) > MAX_CLAIMS:
                del memory[next(iter(memory))]

    def run(self, events: Iterable[ev.Event]) -> list[Step]:
        """Apply events in order (a replay); return every step."""
        return [self.handle(event) for event in events]

    def snapshot(self) -> dict[str, Any]:
        """The public view of the table (JSON-safe; no hole card before the dealer's turn),
        with ``prompt`` (:meth:`prompt_now`: what the dealer must do now), ``table`` (its
        spots, bet circles and limits) and ``bet_amounts``: each bet with the ``amount`` it
        would be latched at (keyed, fixed or the table's minimum)."""
        out = snapshot(self.state, self.rules.name)
        prompt = self.prompt_now()
        out["prompt"] = {"code": prompt.code, "text": prompt.text, "spot": prompt.spot}
        settings = self.settings
        out["table"] = {
            "spots": settings.spots,
            "circles": list(self.circles),
            "main_minimum": settings.main_minimum,
            "main_maximum": settings.main_maximum,
            "side_minimum": settings.side_minimum,
            "side_maximum": settings.side_maximum,
        }
        out["bet_amounts"] = [
            {**bet, "amount": self._wager_amount(bet["spot"], bet["circle"])} for bet in out["bets"]
        ]
        return out

    @property
    def round_in_progress(self) -> bool:
        return self.state.phase in IN_PROGRESS


__all__ = [
    "MAX_CLAIMS",
    "MAX_OPEN_ALARMS",
    "MYSTERY_LINE",
    "RefusedWithAlarm",
    "Table",
    "table_circles",
]
