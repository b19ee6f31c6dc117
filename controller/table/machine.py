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

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from fractions import Fraction
from typing import Any

from controller.errors import EventError, ProcedureError, RuleViolation, WagerError
from controller.rules.cards import Card
from controller.rules.pays import MeterShare, format_cents, parse_pay
from controller.rules.profile import PROGRESSIVE_WAGERS, HouseRules
from controller.rules.sidebets import blackjack_tie
from controller.table import events as ev
from controller.table import significant
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
from controller.table.procedure import Procedure
from controller.table.settings import TableSettings
from controller.table.state import (
    DEALER,
    IN_PROGRESS,
    Claim,
    HandInPlay,
    OpenAlarm,
    Phase,
    RoundState,
    SpotInPlay,
    TableState,
)
from controller.table.view import bet_name, link_alarm_words, pool_name, snapshot

REFUSALS = (ProcedureError, RuleViolation, WagerError)

_CARD_ALARMS = ("unexpected_card", "foreign_card", "held_card")
"""Alarms of a card that waits for a decision, one per card in ``state.pending``'s order: the
oldest clear as the cards are burned, assigned or taken out of play."""
_UNEXPECTED_WHEN = {
    Phase.BETTING: "while bets are placed",
    Phase.DEALER: "after the dealer's hand is complete",
    Phase.SETTLED: "after the round was settled",
}
"""When a card came that nobody expected, in the dealer's words."""
_ROUND_ALARMS = (
    "shuffle_mid_round",
    "shoe_missed_frames",
    "shoe_out_of_order",
    "reader_disagreement",
)
"""Alarms about the round on the layout: over when it ends (the layout is cleared)."""

# Events the dealer cannot use while a card waits for a decision (burn, assign, misdeal).
_BLOCKED_BY_PENDING = (
    Lockout,
    Next,
    ev.SpotAction,
    EndRound,
)


MAX_OPEN_ALARMS = 100
"""The alarm register holds at most this many open alarms; beyond it the oldest open one is
dropped unacknowledged (and counted in ``state.alarms_dropped``)."""

MAX_CLAIMS = 1000
"""The table remembers at most this many unanswered hit claims, and as many Mystery-eligible
contributions, for the awards that answer them; beyond it the oldest is forgotten (an award
for it is then refused). Nothing is added while the link is down (no progressive wager is
taken), so a claim waiting in the outbox is not pushed out by newer ones; at 7 spots a
contribution is remembered for at least 142 rounds."""

MYSTERY_LINE = "100% of meter"
"""The line of every Must-Hit-By Mystery award: the whole trigger the meter reached."""

# Events that are not part of the round's recall record: a technician's acknowledgement and a
# link alarm act on the alarm register, which a recalled round replayed alone does not have.
_NOT_IN_ROUND_LOG = (ev.AcknowledgeAlarm, ev.LinkAlarm, ev.PowerLoss, ev.JournalChange)
# Effects not in the round's recall record: the journal's own records, and alarms clearing
# by themselves (they act on the register, like an acknowledgement).
_NOT_RECALLED = (Record, AlarmCleared)


_PLAIN_EFFECTS = frozenset({Light, Prompt, Settled, Refused})
"""Effects that neither enter the alarm register nor make a claim, and are recalled."""

_TRAITS: dict[type, tuple[bool, bool, bool, bool]] = {}
"""Per event class, looked up once (see :func:`_traits`)."""


def _traits(kind: type) -> tuple[bool, bool, bool, bool]:
    """What :meth:`Table.handle` must know of an event class: whether a pending card blocks
    it, whether it may make a significant event, whether it enters the round's recall log,
    and whether it is a tick."""
    return (
        issubclass(kind, _BLOCKED_BY_PENDING),
        issubclass(kind, significant.WATCHED),
        not issubclass(kind, _NOT_IN_ROUND_LOG),
        issubclass(kind, Tick),
    )


class RefusedWithAlarm(ProcedureError):
    """A refusal a technician must see: the event is refused (journaled as refused, nothing
    else changes) and ``alarm`` enters the alarm register."""

    def __init__(self, reason: str, alarm: Alarm):
        super().__init__(reason)
        self.alarm = alarm


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


class Table(Procedure):
    """One blackjack table: the dealing procedure of ``rules`` at up to 7 spots.

    :meth:`handle` takes one event and returns a :class:`Step`; :meth:`snapshot`
    is the public view (hole card hidden until the dealer's turn).
    """

    def __init__(self, rules: HouseRules, settings: TableSettings | None = None):
        self.rules = rules
        self.settings = settings or TableSettings()
        self.state = TableState()
        self.circles = table_circles(rules)
        self._out: list[Effect] = []
        self._event: ev.Event | None = None
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
        handler = self._handlers.get(kind)
        if handler is None:
            raise EventError(f"not a table event: {event!r}")
        traits = _TRAITS.get(kind)
        if traits is None:
            traits = _TRAITS[kind] = _traits(kind)
        blocked, watched, for_recall, is_tick = traits
        state = self.state
        round_number = state.round_number
        t = event.t
        if t is not None and (state.now is None or t > state.now):
            state.now = t
        out: list[Effect] = []
        self._out = out
        self._event = event
        try:
            if blocked and state.pending:
                raise ProcedureError(
                    f"{event.TYPE.replace('_', ' ')} refused: {self._pending_text()} waits for a "
                    "decision: burn it, assign it, or call a misdeal (supervisor key)"
                )
            before = significant.watch(state) if watched else None
            handler(event)
            if before is not None:
                self._significant(event, before)
        except REFUSALS as exc:
            refused = Refused(event.TYPE, str(exc))
            if isinstance(exc, RefusedWithAlarm):
                step = Step(False, (refused, exc.alarm))
                self._register_alarms(step.effects, round_number)
            else:
                step = Step(False, (refused,))
            accepted = False
        else:
            if state.alarms:
                self._clear_alarms_whose_cause_is_over()
            alarm = (
                "blink"
                if state.pending or state.shoe_fault or state.faults
                or (state.door_open and state.phase in IN_PROGRESS)
                else "off"
            )
            if state.lights.get("alarm", "off") != alarm:
                self._light("alarm", alarm)
            effects = tuple(out)
            step = Step(True, effects, bool(effects) or not is_tick)
            accepted = True
            for effect in effects:
                if type(effect) in _PLAIN_EFFECTS:  # most of them: nothing to remember
                    continue
                if isinstance(effect, Alarm):
                    self._register_alarms((effect,), round_number)
                elif isinstance(effect, Publish):
                    self._remember_claims((effect,))
        self._event = None
        self._out = []
        if step.journal and for_recall and not (accepted and kind is EndRound):
            state.log.append(event)
            recall = state.round_effects
            for effect in step.effects:
                if type(effect) in _PLAIN_EFFECTS or not (
                    isinstance(effect, _NOT_RECALLED)
                    or (isinstance(effect, Publish) and effect.topic == significant.KIND)
                ):
                    recall.append(effect)
        return step

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

    # -- betting --------------------------------------------------------------------

    def _check_circle(self, spot: int, circle: str, what: str) -> None:
        if not 1 <= spot <= self.settings.spots:
            raise ProcedureError(
                f"{what} refused: spot {spot} does not exist; this table has spots 1 to "
                f"{self.settings.spots}"
            )
        if circle not in self.circles:
            raise ProcedureError(
                f"{what} refused: '{circle}' is no bet circle of {self.rules.name}; circles: "
                f"{', '.join(self.circles)}"
            )

    def _on_bet(self, event: BetSensor) -> None:
        self._check_circle(event.spot, event.circle, "bet sensor")
        state = self.state
        key = (event.spot, event.circle)
        if state.sensors.get(key, False) == event.on:
            return
        if event.on:
            state.sensors[key] = True
        else:
            state.sensors.pop(key, None)
            state.amounts.pop(key, None)
        if state.phase not in IN_PROGRESS:
            return
        spot = self._round.spots.get(event.spot)
        latched = spot is not None and event.circle in spot.wagers
        where = f"spot {event.spot} {bet_name(event.circle)}"
        light = f"spot{event.spot}.{event.circle}"
        if event.on and not latched:
            self._light(light, "blink")
            self._alarm(
                "late_bet",
                f"Late bet at {where} after no more bets: it is not a wager",
                "Return the chips to the player",
                event.spot,
                event.circle,
            )
        elif event.on:
            self._light(light, "on")
        elif latched:
            self._light(light, "blink")
            self._alarm(
                "bet_removed",
                f"Chips taken from {where} after no more bets: the wager stands",
                "Stop the game and call the supervisor",
                event.spot,
                event.circle,
            )
        else:
            self._light(light, "off")

    def _wager_amount(self, spot: int, circle: str) -> int:
        fixed = self._fixed_amount(circle)
        if fixed is not None:
            return fixed
        default = self.settings.main_minimum if circle == "main" else self.settings.side_minimum
        return self.state.amounts.get((spot, circle), default)

    def _fixed_amount(self, circle: str) -> int | None:
        section = getattr(self.rules.side_bets, circle, None)
        return getattr(section, "wager", None)

    def _on_wager(self, event: WagerAmount) -> None:
        self._check_circle(event.spot, event.circle, "wager amount")
        if self.state.phase is not Phase.BETTING:
            raise ProcedureError(
                "wager amount refused: wagers are locked until the round ends; key amounts "
                "before no more bets"
            )
        amount, circle = event.amount, event.circle
        fixed = self._fixed_amount(circle)
        if fixed is not None and amount != fixed:
            raise WagerError(
                f"{bet_name(circle)} is a fixed {format_cents(fixed)} wager, not "
                f"{format_cents(amount)}"
            )
        if circle == "main":
            low, high = self.settings.main_minimum, self.settings.main_maximum
            if not low <= amount <= high:
                raise WagerError(
                    f"main wager of {format_cents(amount)} is outside the table limits "
                    f"{format_cents(low)} to {format_cents(high)}"
                )
        elif fixed is None:
            self._check_side_amount(circle, amount)
        self.state.amounts[(event.spot, circle)] = amount

    def _on_lockout(self, event: Lockout) -> None:
        state, rules = self.state, self.rules
        if state.phase is not Phase.BETTING:
            raise ProcedureError("no more bets refused: the wagers are already locked")
        if state.faults:
            raise ProcedureError(
                f"no more bets refused: the table is faulted ({self._fault_text()}); "
                f"{self._fault_advice()}"
            )
        if state.shoe_fault:
            raise ProcedureError(
                f"no more bets refused: the shoe reports a fault ({state.shoe_fault}); "
                "clear it first"
            )
        if state.door_open:
            raise ProcedureError("no more bets refused: the shoe door is open; close it")
        if state.cut_card_out:
            raise ProcedureError("no more bets refused: the cut card is out; shuffle first")
        if state.burn_expected:
            raise ProcedureError(
                "no more bets refused: no burn card has come out of the shoe since the "
                "shuffle; burn one card first"
            )
        spots: dict[int, SpotInPlay] = {}
        orphans: list[tuple[int, str]] = []
        no_link: list[tuple[int, str]] = []
        for number in range(1, self.settings.spots + 1):
            placed = [c for c in self.circles if state.sensors.get((number, c))]
            if not placed:
                continue
            if not state.jackpot_link and "main" in placed:
                no_link.extend((number, c) for c in placed if c in PROGRESSIVE_WAGERS)
                placed = [c for c in placed if c not in PROGRESSIVE_WAGERS]
            if "main" not in placed:
                orphans.extend((number, c) for c in placed)
                continue
            wagers = {c: self._wager_amount(number, c) for c in placed}
            bonuses = {
                c.split(".", 1)[1]: a for c, a in wagers.items() if c.startswith("blackjack_tie.")
            }
            if bonuses:
                try:
                    blackjack_tie.check_wagers(wagers["main"], bonuses)
                except WagerError as exc:
                    raise WagerError(f"no more bets refused: spot {number}: {exc}") from None
            spots[number] = SpotInPlay(number, wagers, [HandInPlay([], wagers["main"])])
        if not spots:
            raise ProcedureError(
                "no more bets refused: no main wager on the layout, nothing to deal"
            )
        # accepted: from here on nothing refuses
        number = state.round_number
        queue = [*spots, DEALER, *spots]
        if rules.dealer.hole_card == "face_down":
            queue.append(DEALER)
        state.round = RoundState(number, spots, deal_queue=queue, started_t=state.now)
        state.phase = Phase.DEALING
        self._light("lockout", "on")
        for spot_no, circle in orphans:
            self._light(f"spot{spot_no}.{circle}", "blink")
            self._alarm(
                "side_bet_without_main",
                f"Spot {spot_no} has a {bet_name(circle)} bet but no main wager: it is not a wager",
                "Return the chips to the player",
                spot_no,
                circle,
            )
        for spot_no, circle in no_link:
            self._light(f"spot{spot_no}.{circle}", "blink")
            self._alarm(
                "progressive_refused",
                f"Spot {spot_no}'s {bet_name(circle)} bet is not accepted: the jackpot link "
                "is down, so no progressive wager can be taken",
                "Return the chips to the player; progressive wagers resume when the link is back",
                spot_no,
                circle,
            )
        mystery = rules.mystery
        for spot in spots.values():
            for circle, amount in spot.wagers.items():
                self._light(f"spot{spot.number}.{circle}", "on")
                if circle in PROGRESSIVE_WAGERS:
                    section = getattr(rules.side_bets, circle)
                    self._out.append(
                        Publish(
                            "contribution",
                            f"round-{number}/spot-{spot.number}/{circle}/contribution",
                            {
                                "round": number,
                                "game": rules.name,
                                "spot": spot.number,
                                "wager": circle,
                                "pool": section.pool,
                                "stake": amount,
                                "mystery": mystery.offered and circle in mystery.eligible_wagers,
                            },
                        )
                    )
        first = next(iter(spots))
        self._prompt("deal", f"No more bets: deal spot {first} first")

    # -- cards --------------------------------------------------------------------------

    def _on_card(self, event: CardDrawn) -> None:
        state, mode = self.state, self.settings.card_source
        card = event.card
        if mode != "both" and event.source != mode:
            raise ProcedureError(
                f"{event.source} card refused: this table deals from the {mode} "
                f"(card_source = {mode})"
            )
        if mode == "both":
            if event.source == "camera":
                if state.unconfirmed:
                    self._compare_readers(state.unconfirmed.pop(0), card)
                elif len(state.camera_ahead) < 52:
                    state.camera_ahead.append(card)
                return
            if state.camera_ahead:
                self._compare_readers(card, state.camera_ahead.pop(0))
            elif len(state.unconfirmed) < 52:
                state.unconfirmed.append(card)
        count = state.seen.get(card, 0) + 1
        state.seen[card] = count
        state.dealt += 1
        if count > self.rules.shoe.decks:
            state.pending.append(card)
            state.pending_foreign.append(True)
            state.pending_held.append("")
            self._alarm(
                "foreign_card",
                f"Card {card} is one more than a {self.rules.shoe.decks}-deck shoe holds: "
                "a foreign card",
                "Take it out of play: burn it, or call a misdeal (supervisor key)",
            )
            return
        if event.source == "shoe" and state.shoe_fault:  # the shoe deals no card in a fault
            offline = state.shoe_fault == "offline"
            self._hold(
                card,
                "while it was offline" if offline else f"during its fault ({state.shoe_fault})",
                "sent while the shoe was offline" if offline else "sent during a shoe fault",
            )
            return
        if state.pending:
            self._unexpected(card, "while another card waits for a decision")
            return
        if state.burn_expected and state.phase is Phase.BETTING:
            state.burn_expected -= 1
            state.discarded += 1
            self._prompt("burn", f"Burn card {card}")
            return
        self._route(card)

    def _compare_readers(self, shoe: Card, camera: Card) -> None:
        if shoe != camera:
            self._alarm(
                "reader_disagreement",
                f"The shoe and the camera read card {self.state.dealt} of the shoe differently",
                "Check the card against the layout; call a technician if it repeats",
            )

    def _route(self, card: Card) -> None:
        state = self.state
        phase = state.phase
        if phase is Phase.DEALING:
            self._deal_to(self._round.deal_queue[0], card)
        elif phase is Phase.INSURANCE:
            self._close_insurance()
            self._route(card)
        elif phase is Phase.EZ_BUST:
            self._close_ez_bust()
            self._route(card)
        elif phase is Phase.PLAYERS:
            rnd = self._round
            assert rnd.in_action is not None
            spot_no, index = rnd.in_action
            if self._takes_card(self._hand(spot_no, index)):
                self._give(spot_no, index, card)
            else:
                self._unexpected(card, f"for spot {spot_no}, which can take no card")
        elif phase is Phase.DEALER and self._dealer_needs_card():
            self._dealer_card(card)
        else:
            self._unexpected(card, _UNEXPECTED_WHEN.get(phase, f"({phase.value})"))

    def _on_out_of_order_card(self, event: ev.OutOfOrderCard) -> None:
        if self.settings.card_source == "camera":
            raise ProcedureError(
                "shoe card refused: this table deals from the camera (card_source = camera)"
            )
        again = "again " if event.again else ""
        self.state.dealt += 1
        self._hold(
            event.card,
            f"{again}out of order (frame {event.frame:02X} after {event.last:02X})",
            f"sent {again}out of order",
        )

    def _hold(self, card: Card, how: str, why: str) -> None:
        """Hold a card the shoe sent that must not be dealt (out of order, or while the shoe
        reports a fault): it waits like a foreign card, to be burned or misdealt, and is not
        named while a hole card is face down (it may be the hole card's frame again). The
        caller counts it as dealt; a card sent during a fault counts against the shoe's copies
        too (the shoe says it came out), one sent out of order does not (it may be an old
        frame again)."""
        state = self.state
        state.pending.append(card)
        state.pending_foreign.append(True)
        state.pending_held.append(why)
        self._alarm(
            "held_card",
            f"The shoe sent {self._pending_text(len(state.pending) - 1)} {how}: it was not dealt",
            "Check the layout against the display: press burn to drop it (burn the card if one "
            "came out), or call a misdeal (supervisor key); call a technician if it repeats",
        )

    def _unexpected(self, card: Card, why: str) -> None:
        self.state.pending.append(card)
        self.state.pending_foreign.append(False)
        self.state.pending_held.append("")
        self._alarm(
            "unexpected_card",
            f"{self._card_sentence(card)} was not expected {why}",
            "Burn it, assign it to the hand it was dealt to, or call a misdeal (supervisor key)",
        )

    def _on_burn(self, event: Burn) -> None:
        state = self.state
        if not state.pending:
            raise ProcedureError("burn refused: no card waits for a decision")
        text = self._pending_text()
        self._take_pending()
        state.discarded += 1
        self._prompt("burn", f"Burn {text}")
        self._after_decision()

    def _on_assign(self, event: Assign) -> None:
        state = self.state
        if not state.pending:
            raise ProcedureError("assign refused: no card waits for a decision")
        if state.pending_foreign[0]:
            held = self._held_why()
            raise ProcedureError(
                f"assign refused: {self._pending_text()} was {held} and cannot be played; "
                "burn it or call a misdeal"
                if held
                else f"assign refused: card {state.pending[0]} is a foreign card and cannot be "
                "played; burn it or call a misdeal"
            )
        phase, rnd = state.phase, state.round
        target = (
            "the dealer" if event.spot == DEALER else f"spot {event.spot} hand {event.hand + 1}"
        )
        if phase is Phase.DEALING and rnd is not None:
            if event.spot not in rnd.deal_queue or event.hand != 0:
                raise ProcedureError(
                    f"assign refused: {target} is not waiting for a card of the initial deal"
                )
            card = self._take_pending()
            self._prompt("assign", f"{self._card_sentence(card)} assigned to {target}")
            self._deal_to(event.spot, card)
        elif phase is Phase.PLAYERS and rnd is not None and event.spot != DEALER:
            order = [(s.number, i) for s in rnd.spots.values() for i in range(len(s.hands))]
            want = (event.spot, event.hand)
            if (
                want not in order
                or rnd.in_action is None
                or order.index(want) < order.index(rnd.in_action)
            ):
                raise ProcedureError(
                    f"assign refused: {target} is not in action or still to act this round"
                )
            skipped = order[order.index(rnd.in_action) : order.index(want)]
            hand = self._hand(*want)
            if self._hand_done(hand) or not self._takes_card(hand):
                raise ProcedureError(f"assign refused: {target} can take no card")
            if any(
                len(self._hand(*s).cards) < 2 or self._hand(*s).double_down
                for s in skipped
                if not self._hand_done(self._hand(*s))
            ):
                raise ProcedureError(
                    f"assign refused: a hand before {target} still waits for a card"
                )
            card = self._take_pending()
            for s in skipped:
                self._hand(*s).stood = True
            rnd.in_action = want
            self._prompt("assign", f"Card {card} assigned to {target}", event.spot)
            self._give(event.spot, event.hand, card)
        elif phase is Phase.DEALER and event.spot == DEALER and self._dealer_needs_card():
            card = self._take_pending()
            self._prompt("assign", f"Card {card} assigned to the dealer")
            self._dealer_card(card)
        else:
            raise ProcedureError(f"assign refused: {target} is not waiting for a card now")
        self._after_decision()

    def _card_text(self, card: Card) -> str:
        """How alarms and prompts name a card that is not placed yet: during the initial
        deal it may still become the hole card, so it is not named then."""
        if self.state.phase is Phase.DEALING:
            return "a card"
        return f"card {card}"

    def _card_sentence(self, card: Card) -> str:
        """:meth:`_card_text` starting a sentence ("Card 5H", never "Card 5h")."""
        text = self._card_text(card)
        return text[:1].upper() + text[1:]

    def _held_why(self, index: int = 0) -> str:
        """Why pending card ``index`` is held (``sent out of order`` ...), or "" for a card
        that is not. Aligned from the end: a checkpoint from before ``pending_held`` existed
        (issue 26) has none for its older pending cards."""
        state = self.state
        i = index - (len(state.pending) - len(state.pending_held))
        return state.pending_held[i] if 0 <= i < len(state.pending_held) else ""

    def _pending_text(self, index: int = 0) -> str:
        """How alarms and prompts name pending card ``index``: a held card is not named while
        a hole card is face down (a frame sent again may be the hole card's)."""
        state, rnd = self.state, self.state.round
        hole_down = rnd is not None and len(rnd.dealer) > 1 and not rnd.hole_revealed
        if hole_down and self._held_why(index):
            return "a card"
        return self._card_text(state.pending[index])

    def _pending_sentence(self) -> str:
        """:meth:`_pending_text` of the oldest pending card, starting a sentence."""
        text = self._pending_text()
        return text[:1].upper() + text[1:]

    def _take_pending(self) -> Card:
        state = self.state
        if len(state.pending_held) == len(state.pending):
            state.pending_held.pop(0)
        state.pending_foreign.pop(0)
        return state.pending.pop(0)

    def _after_decision(self) -> None:
        if self.state.pending:
            self._prompt("decide", f"{self._pending_sentence()} still waits: burn it or assign it")

    # -- the dealer's buttons ------------------------------------------------------------

    def _on_next(self, event: Next) -> None:
        phase = self.state.phase
        if phase is Phase.INSURANCE:
            self._close_insurance()
        elif phase is Phase.EZ_BUST:
            self._close_ez_bust()
        elif phase is Phase.PLAYERS:
            self._stand()
        else:
            what = {
                Phase.BETTING: "no round is dealt",
                Phase.DEALING: "the initial deal is in progress",
                Phase.DEALER: "it is the dealer's turn",
                Phase.SETTLED: "the round is settled; press end round",
            }[phase]
            raise ProcedureError(f"nothing to stand or close now: {what}")

    def _on_end_round(self, event: EndRound) -> None:
        state = self.state
        if state.phase is not Phase.SETTLED:
            if state.phase is Phase.BETTING:
                raise ProcedureError("end round refused: no round has been dealt")
            raise ProcedureError(
                "end round refused: the round is not settled; play it out, or void it with "
                "the supervisor key"
            )
        for name in list(state.lights):
            self._light(name, "off")
        rnd = self._round
        state.discarded += len(rnd.dealer) + sum(
            len(hand.cards) for spot in rnd.spots.values() for hand in spot.hands
        )
        state.round = None
        state.round_number += 1
        state.phase = Phase.BETTING
        state.log = []
        state.round_effects = []
        carried: list[ev.Event] = [
            BetSensor(spot, circle, True)
            for (spot, circle), on in sorted(state.sensors.items())
            if on
        ]
        carried.extend(
            WagerAmount(spot, circle, amount)
            for (spot, circle), amount in sorted(state.amounts.items())
        )
        if state.supervisor_key:
            carried.append(SupervisorKey(True))
        state.carried = carried
        if state.shuffle_pending:
            self._shuffled("shuffle")
        if state.cut_card_out:
            self._prompt("shuffle_now", "The cut card is out: shuffle before the next round")
        self._prompt("place_bets", f"Place your bets: round {state.round_number}")

    def _on_void(self, event: VoidRound | Misdeal) -> None:
        state = self.state
        what = "misdeal" if isinstance(event, Misdeal) else "void round"
        if not state.supervisor_key:
            raise ProcedureError(f"{what} refused: turn the supervisor key first")
        if state.phase not in IN_PROGRESS:
            if state.pending:
                cards = " ".join(map(str, state.pending))
                state.discarded += len(state.pending)
                state.pending.clear()
                state.pending_foreign.clear()
                state.pending_held.clear()
                self._prompt("burn", f"Misdeal: take {cards} out of play")
                return
            raise ProcedureError(f"{what} refused: no round is in progress")
        rnd = self._round
        rnd.void = "misdeal" if isinstance(event, Misdeal) else (event.reason or "voided")
        state.discarded += len(state.pending)
        state.pending.clear()
        state.pending_foreign.clear()
        state.pending_held.clear()
        rnd.hole_revealed = True
        self._prompt("void", f"Round {rnd.number} void ({rnd.void}): every open wager is returned")
        for spot in rnd.spots.values():
            for index, hand in enumerate(spot.hands):
                if not hand.settled:
                    hand.settled = True
                    for name, stake in (
                        ("main", hand.wager),
                        ("double_down", hand.double_down),
                        ("double_up", hand.double_up),
                    ):
                        if stake:
                            self._void_line(spot.number, name, stake, index)
            if spot.insurance and not spot.insurance_settled:
                spot.insurance_settled = True
                self._void_line(spot.number, "insurance", spot.insurance)
            for name, stake in spot.wagers.items():
                if name != "main" and name not in spot.side_settled:
                    spot.side_settled.add(name)
                    self._void_line(spot.number, name, stake)
            if spot.ez_bust:
                self._void_line(spot.number, "ez_bust", spot.ez_bust)
        self._finish_round()

    def _void_line(self, spot: int, wager: str, stake: int, hand: int | None = None) -> None:
        from controller.table.effects import Settled
        from controller.table.view import settlement_prompt

        line = Settled(
            spot, wager, stake, "void", 0, stake, f"round void: {self._round.void}", hand
        )
        self._out.append(line)
        self._prompt("pay", settlement_prompt(line), spot)

    def _on_enclosure(self, event: ev.EnclosureDoor) -> None:
        """GLI-11's logic door: opened while a round is in progress is an alarm; otherwise a
        prompt, and the event itself is the journal's record (issue 28 item 5)."""
        state = self.state
        if event.at_start:
            self._prompt(
                "enclosure_at_start", f"Enclosure {'open' if event.open else 'shut'} at start"
            )
        elif event.open and state.phase in IN_PROGRESS:
            self._alarm(
                "enclosure_open",
                f"The table's enclosure was opened during round {state.round_number}",
                "Call a supervisor: note who opened it and why; the round goes on",
            )
        else:
            self._prompt("enclosure_door", f"Enclosure {'opened' if event.open else 'shut'}")

    def _on_power_loss(self, event: ev.PowerLoss) -> None:
        when = f" at {event.last_utc}" if event.last_utc else ""
        self._alarm(
            "power_loss",
            f"The table did not stop cleanly (power loss?): its last event was "
            f"{event.last_event}{when}",
            "Check the round in progress, if any, against the layout; call a technician if "
            "the power keeps failing",
        )

    def _on_journal_change(self, event: ev.JournalChange) -> None:
        what = "set aside" if event.action == "set_aside" else "restored from a backup"
        by = f" by {event.by}" if event.by else ""
        self._prompt("journal_change", f"The journal was {what}{by}: {event.detail or '-'}")

    def _significant(self, event: ev.Event, before: significant.Before) -> None:
        """Each significant event of an accepted step, as one sequenced ``event`` message for
        the center (controller/table/significant.py; issue 28 item 4)."""
        state = self.state
        for code, fields in significant.events_of(event, before, state, self._out):
            state.event_seq += 1
            self._out.append(
                significant.message(
                    state.event_seq, code, fields, state.round_number, state.phase in IN_PROGRESS
                )
            )

    def _on_key(self, event: SupervisorKey) -> None:
        if self.state.supervisor_key != event.on:
            self.state.supervisor_key = event.on
            self._prompt("supervisor_key", f"Supervisor key {'on' if event.on else 'off'}")
            if event.on and self.state.faults:
                self._clear_faults("the supervisor key")
            if event.on and self.state.awards:  # which award the jackpot_paid button confirms
                award = next(iter(self.state.awards.values()))
                more = len(self.state.awards) - 1
                self._prompt(
                    "jackpot_paid_ready",
                    f"JACKPOT PAID confirms award {award.award_id}: spot {award.spot} "
                    f"{pool_name(award.pool)} {format_cents(award.amount)} hand pay"
                    + (f" ({more} more waiting after it)" if more else ""),
                    award.spot,
                )

    # -- faults ------------------------------------------------------------------------------

    def _fault_text(self) -> str:
        return "; ".join(
            f"{kind}: {detail}" if detail else kind
            for kind, (detail, _active) in sorted(self.state.faults.items())
        )

    def _fault_advice(self) -> str:
        present = [k for k, (_d, active) in sorted(self.state.faults.items()) if active]
        if present:
            return f"call a technician to fix the {', '.join(present)} fault first"
        return "the fault is gone: turn the supervisor key to clear it"

    def _on_fault(self, event: ev.TableFault) -> None:
        faults = self.state.faults
        known = faults.get(event.kind)
        if event.active:
            if known == (event.detail, True):
                return
            faults[event.kind] = (event.detail, True)
            if known is None:
                self._alarm(
                    "table_fault",
                    f"Table fault ({event.kind}): {event.detail or 'lost'}",
                    "Finish or void the round in progress; no new round until a technician "
                    "fixes it and the supervisor key clears it",
                    about=event.kind,
                )
        elif known is None:  # a fault already over when reported (a journal write that failed)
            faults[event.kind] = (event.detail, False)
            self._alarm(
                "table_fault",
                f"Table fault ({event.kind}): {event.detail or 'lost'} (now gone)",
                "Check the table; turn the supervisor key to clear the fault",
                about=event.kind,
            )
        elif known[1]:
            faults[event.kind] = (known[0], False)
            self._prompt(
                "fault_gone",
                f"The {event.kind} fault is gone ({known[0] or 'lost'}): " + self._fault_advice(),
            )

    def _on_clear_faults(self, event: ev.ClearFaults) -> None:
        if not self.state.faults:
            raise ProcedureError("clear faults refused: no fault is latched")
        self._clear_faults(event.by or "a technician")

    def _clear_faults(self, by: str) -> None:
        present = [k for k, (_d, active) in sorted(self.state.faults.items()) if active]
        if present:
            if isinstance(self._event, ev.ClearFaults):
                raise ProcedureError(
                    f"clear faults refused: the {', '.join(present)} fault is still present; "
                    "fix it first"
                )
            self._alarm(
                "fault_still_present",
                f"The {', '.join(present)} fault is still present: it cannot be cleared",
                "Call a technician to fix it, then turn the supervisor key again",
            )
            return
        text = self._fault_text()
        self.state.faults.clear()
        self._prompt("faults_cleared", f"Faults cleared by {by} ({text}): the table is open")

    def _on_link(self, event: ev.JackpotLink) -> None:
        if self.state.jackpot_link == event.up:
            return
        self.state.jackpot_link = event.up
        if event.up:
            self._prompt("jackpot_link_up", "Jackpot link back: progressive wagers are open")
        elif event.why == "clock_unsynchronised":
            self._alarm(
                "jackpot_link_down",
                "The table's clock is not synchronised: no progressive wager can be taken",
                "Take no Blazing 7's bets (chips on those circles are returned at no more "
                "bets); call a technician to check the time server (NTP) and the clock",
            )
        elif event.why in ("controller_silent", "controller_offline"):
            self._alarm(
                "jackpot_link_down",
                "The jackpot controller is not answering: no progressive wager can be taken",
                "Take no Blazing 7's bets (chips on those circles are returned at no more "
                "bets); call a technician if it stays down",
            )
        else:
            self._alarm(
                "jackpot_link_down",
                "The jackpot link is down: no progressive wager can be taken",
                "Take no Blazing 7's bets (chips on those circles are returned at no more "
                "bets); call a technician if it stays down",
            )

    # -- the jackpot link ------------------------------------------------------------------

    def _on_award(self, event: ev.JackpotAward) -> None:
        # Any phase, between rounds too. Prompted only if it answers a claim this table
        # published, with an amount that is the line's share of the meter it names; anything
        # else is refused with an alarm for a technician (docs/table.md "Award proof").
        # An award without claim_key was journaled by 0.1.0, before the table checked awards
        # (the link's schema requires claim_key): it is replayed as it was then, unchecked,
        # so that journal recovers to the state it had.
        checked = event.claim_key is not None
        state, award_id = self.state, event.award_id
        closed = state.awards_closed.get(award_id)
        what = f"spot {event.spot} wins {pool_name(event.pool)} {event.line}"
        if event.state == "offered":
            if award_id in state.awards or closed is not None:
                return  # the controller repeats an award until the confirm is applied
            if checked:
                self._proven_claim(event)
            state.awards[award_id] = event
            self._prompt(
                "jackpot_award",
                f"Jackpot: {what}: {format_cents(event.amount)} hand pay; call the supervisor",
                event.spot,
            )
        elif event.state == "committed":
            if closed in ("committed", "refused"):
                return
            if checked and closed != "confirmed":
                raise self._unproven(
                    event,
                    "the dealer has not confirmed its hand pay yet"
                    if award_id in state.awards
                    else "this table was never offered that award",
                )
            state.awards.pop(award_id, None)  # a checked one left at its confirmation
            state.awards_closed[award_id] = "committed"
            self._prompt(
                "jackpot_committed",
                f"Jackpot award {award_id} committed: {what}, "
                f"{format_cents(event.amount)} hand paid",
                event.spot,
            )
        else:
            if closed is not None:
                return
            if checked:
                if award_id in state.awards:
                    raise self._unproven(
                        event,
                        "it was offered to this table and waits for its hand pay; the jackpot "
                        "controller never refuses an award it offered",
                    )
                claim = self._proven_claim(event)
                del state.claims[claim.key]
            state.awards.pop(award_id, None)
            state.awards_closed[award_id] = "refused"
            self._prompt(
                "jackpot_refused",
                f"Jackpot claim refused by the jackpot controller: spot {event.spot} "
                f"{pool_name(event.pool)} {event.line}: no hand pay; call the supervisor",
                event.spot,
            )

    def _proven_claim(self, event: ev.JackpotAward) -> Claim:
        """The claim ``event`` answers; raises :class:`RefusedWithAlarm` unless it names one
        this table made, with the same round, spot, pool and line and, when offered, an
        amount that is the line's share of ``meter_before``."""
        state, key = self.state, event.claim_key
        assert key is not None
        claim = state.claims.get(key) or state.mystery_claims.get(key)
        if claim is None:
            raise self._unproven(
                event, f"it answers no claim this table has open (claim key {key[:80]!r})"
            )
        wrong = []
        if event.round != claim.round:
            wrong.append(f"round {event.round}, not {claim.round}")
        if event.spot != claim.spot:
            wrong.append(f"spot {event.spot}, not {claim.spot}")
        if claim.mystery and event.pool == claim.pool:
            wrong.append(f"pool {event.pool} is the progressive meter, not a Mystery meter")
        elif not claim.mystery and event.pool != claim.pool:
            wrong.append(f"pool {event.pool}, not {claim.pool}")
        if event.line != claim.line:
            wrong.append(f"line {event.line!r}, not {claim.line!r}")
        if wrong:
            raise self._unproven(event, f"it does not match claim {key}: {'; '.join(wrong)}")
        if event.state == "refused":
            if claim.mystery:
                raise self._unproven(
                    event, "a Must-Hit-By Mystery contribution is never answered by a refusal"
                )
            return claim
        other = next((a.award_id for a in state.awards.values() if a.claim_key == key), None)
        if other is not None:
            raise self._unproven(event, f"claim {key} is already answered by award {other}")
        before = event.meter_before
        if before is None:
            raise self._unproven(
                event,
                "it does not say what the meter held (meter_before): its amount cannot be checked",
            )
        pay = parse_pay(claim.line)
        share = pay.percent if isinstance(pay, MeterShare) else Fraction(0)
        low = math.floor(before * share / 100)
        high = min(before, math.floor((before + 1) * share / 100))
        if not max(low, 1) <= event.amount <= high:
            meter = format_cents(before)
            if share == 100:
                expected = f"the meter's {meter}"
            else:
                share_text = claim.line.removesuffix(" of meter")
                expected = f"{share_text} of the meter's {meter} ({format_cents(low)}"
                expected += ")" if low == high else f" to {format_cents(high)})"
            raise self._unproven(
                event, f"its amount {format_cents(event.amount)} is not {expected}"
            )
        return claim

    def _unproven(self, event: ev.JackpotAward, why: str) -> RefusedWithAlarm:
        amount = f"{format_cents(event.amount)} for " if event.amount else ""
        return RefusedWithAlarm(
            f"jackpot award refused: {event.award_id} ({event.state}) {why}; call a "
            "technician; do not pay",
            Alarm(
                "award_unproven",
                f"Jackpot award {event.award_id} ({event.state}, {amount}spot {event.spot}) "
                f"refused: {why}",
                "Call a technician; do not pay: no hand pay is owed for it (the jackpot link "
                "may be forged)",
            ),
        )

    def _remember_claims(self, effects: tuple[Effect, ...]) -> None:
        """Remember each hit claim and Mystery-eligible contribution an accepted step
        publishes: the messages a jackpot award may answer (wherever the procedure emits
        them)."""
        state = self.state
        for effect in effects:
            if not isinstance(effect, Publish):
                continue
            p = effect.payload
            if effect.topic == "hit_claim":
                memory = state.claims
                claim = Claim(effect.key, p["round"], p["spot"], p["pool"], p["meter"])
            elif effect.topic == "contribution" and p.get("mystery"):
                memory = state.mystery_claims
                claim = Claim(effect.key, p["round"], p["spot"], p["pool"], MYSTERY_LINE, True)
            else:
                continue
            memory.pop(effect.key, None)
            memory[effect.key] = claim
            if len(memory) > MAX_CLAIMS:
                del memory[next(iter(memory))]

    def _forget_claim(self, key: str | None) -> None:
        if key is not None:
            self.state.claims.pop(key, None)
            self.state.mystery_claims.pop(key, None)

    def _on_jackpot_paid(self, event: ev.JackpotPaid) -> None:
        state = self.state
        if not state.supervisor_key:
            raise ProcedureError("jackpot paid refused: turn the supervisor key first")
        if not state.awards:
            raise ProcedureError("jackpot paid refused: no award waits for a hand pay")
        oldest = next(iter(state.awards))
        self._confirm(oldest, "supervisor key", None, "jackpot paid")

    def _on_confirm_award(self, event: ev.ConfirmAward) -> None:
        if event.by is None and not self.state.supervisor_key:
            raise ProcedureError("confirm award refused: turn the supervisor key first")
        self._confirm(event.award_id, event.by, event.amount, "confirm award")

    def _confirm(self, award_id: str, by: str | None, typed: int | None, what: str) -> None:
        """Confirm the hand pay of ``award_id`` (``by``: who, for ``confirmed_by``; ``typed``:
        the amount typed again, which must be the award's)."""
        state = self.state
        award = state.awards.get(award_id)
        if award is None:
            pending = ", ".join(state.awards) or "none"
            raise ProcedureError(
                f"{what} refused: no award {award_id} waits for a hand pay (pending: {pending})"
            )
        if typed is not None and typed != award.amount:
            raise ProcedureError(
                f"{what} refused: the amount typed, {format_cents(typed)}, is not award "
                f"{award_id}'s {format_cents(award.amount)}; nothing confirmed"
            )
        if state.now is None:
            raise ProcedureError(
                "confirm award refused: the confirmation carries no time (t); the console "
                "must stamp it"
            )
        del state.awards[award.award_id]
        state.awards_closed[award.award_id] = "confirmed"
        self._forget_claim(award.claim_key)
        payload: dict[str, object] = {
            "award_id": award.award_id,
            "round": award.round,
            "spot": award.spot,
            "pool": award.pool,
            "amount": award.amount,
            "confirmed_t": state.now,
        }
        if by is not None:  # a journal before issue 28 made none: its outbox stays as written
            payload["confirmed_by"] = by
        self._out.append(Publish("award_confirm", f"award/{award.award_id}/confirm", payload))
        self._prompt(
            "jackpot_confirmed",
            f"Jackpot award {award.award_id} confirmed: spot {award.spot} hand paid "
            f"{format_cents(award.amount)}" + (f" (by {by})" if by else "")
            + "; sent to the jackpot controller",
            award.spot,
        )

    # -- the shoe ----------------------------------------------------------------------------

    def _on_shoe(self, event: ShoeEvent) -> None:
        state = self.state
        kind = event.event
        detail = f" ({event.detail})" if event.detail else ""
        if kind in ("shuffle", "new_shoe"):
            if state.phase is Phase.SETTLED:
                # the round's cards are still on the layout: count afresh once they are cleared
                state.shuffle_pending = True
                self._prompt("shuffle_noted", "Shuffle noted: the count restarts at end round")
                return
            if state.phase in IN_PROGRESS:
                state.shuffle_pending = True
                self._alarm(
                    "shuffle_mid_round",
                    f"The shoe reports a {kind.replace('_', ' ')} during round "
                    f"{state.round_number}{detail}",
                    "Finish the round; the card count restarts after it",
                )
                return
            self._shuffled(kind)
        elif kind == "cut_card":
            if not state.cut_card_out:
                state.cut_card_out = True
                if state.phase in IN_PROGRESS:
                    self._prompt("cut_card", "Cut card out: finish this round, then shuffle")
                else:
                    self._prompt(
                        "shuffle_now", "The cut card is out: shuffle before the next round"
                    )
        elif kind == "door_open":
            state.door_open = True
            if state.phase in IN_PROGRESS:
                self._alarm(
                    "shoe_door_open",
                    f"The shoe door opened during round {state.round_number}",
                    "Close the shoe door; call the supervisor if cards were touched",
                )
        elif kind == "door_closed":
            state.door_open = False
        elif kind == "fault":
            state.shoe_fault = event.detail or "fault"
            self._alarm(
                "shoe_fault",
                f"The shoe reports a fault{detail}",
                "Stop dealing from the shoe and call a technician",
            )
        elif kind == "fault_cleared" and state.shoe_fault:
            state.shoe_fault = ""
            self._prompt("shoe_ok", "Shoe fault cleared")
        elif kind == "offline" and not state.shoe_fault:
            state.shoe_fault = "offline"
            self._alarm(
                "shoe_offline",
                f"The shoe is offline{detail}",
                "Check the shoe's cable and power; deal no card until it is back online",
            )
        elif kind == "online" and state.shoe_fault == "offline":
            state.shoe_fault = ""
            self._prompt("shoe_ok", "Shoe back online")
        elif kind == "out_of_order":
            self._alarm(
                "shoe_out_of_order",
                f"The shoe sent a message out of order{detail}: it was ignored",
                "Check the shoe (door, fault, shuffle) and the layout against the display; "
                "call a technician if it repeats",
            )
        elif kind == "missed_frames":
            self._alarm(
                "shoe_missed_frames",
                f"The shoe skipped messages{detail}: a card may not have been read",
                "Check every card on the layout against the display; burn, assign or call a "
                "misdeal if one is missing",
            )

    def _shuffled(self, kind: str) -> None:
        state = self.state
        # a card still waiting for a decision stays counted as dealt (it is out of the shoe),
        # but not against the new shoe's copies: the dealer shuffles it back in or burns it
        state.seen = {}
        state.dealt = len(state.pending)
        state.discarded = 0
        state.unconfirmed = []
        state.camera_ahead = []
        state.cut_card_out = False
        state.shuffle_pending = False
        what = "New shoe" if kind == "new_shoe" else "Shoe shuffled"
        if self.rules.shoe.burn_after_shuffle:
            state.burn_expected = 1
            self._prompt("shuffled", f"{what}: burn one card")
        else:
            state.burn_expected = 0
            self._prompt("shuffled", what)

    # -- the alarm register ------------------------------------------------------------------

    def _register_alarms(self, effects: tuple[Effect, ...], round_number: int) -> None:
        """Give each alarm of an accepted step an id and keep it open until acknowledged."""
        state = self.state
        for effect in effects:
            if not isinstance(effect, Alarm):
                continue
            state.alarm_seq += 1
            state.alarms[state.alarm_seq] = OpenAlarm(
                state.alarm_seq,
                effect.code,
                effect.text,
                effect.action,
                effect.spot,
                round_number,
                state.now,
                effect.about or "",
            )
            if len(state.alarms) > MAX_OPEN_ALARMS:
                del state.alarms[next(iter(state.alarms))]
                state.alarms_dropped += 1

    def _clear_alarms_whose_cause_is_over(self) -> None:
        """Mark each open alarm whose cause is over as cleared (:class:`AlarmCleared`): the
        dealer display stops showing it; the register keeps it until acknowledged, so every
        acknowledgement a journal holds is accepted on replay as it was."""
        state = self.state
        cards = [a for a in state.alarms.values() if a.code in _CARD_ALARMS and not a.cleared]
        surplus = {a.id for a in cards[: max(0, len(cards) - len(state.pending))]}
        for alarm in list(state.alarms.values()):
            if alarm.cleared:
                continue
            reason = (
                "the card was burned, assigned or taken out of play"
                if alarm.id in surplus
                else self._alarm_over(alarm)
            )
            if reason:
                state.alarms[alarm.id] = replace(alarm, cleared=reason, cleared_t=state.now)
                self._out.append(AlarmCleared(alarm.id, alarm.code, alarm.text, reason))

    def _alarm_over(self, alarm: OpenAlarm) -> str | None:
        """Why ``alarm``'s cause is over, or None while it lasts (or if only a technician
        can tell: link, award and reader alarms)."""
        state, code = self.state, alarm.code
        round_over = state.round_number > alarm.round
        if code in ("late_bet", "side_bet_without_main", "progressive_refused"):
            if round_over:
                return "the round is over"
            if alarm.about and not state.sensors.get((alarm.spot or 0, alarm.about)):
                return "the chips were taken off the circle"
        elif code == "bet_removed":
            if round_over:
                return "the round is over"
            if alarm.about and state.sensors.get((alarm.spot or 0, alarm.about)):
                return "the chips are back on the circle"
        elif code in ("shoe_fault", "shoe_offline"):
            if not state.shoe_fault:
                return "the shoe is back" if code == "shoe_offline" else "the shoe's fault cleared"
        elif code == "shoe_door_open":
            if not state.door_open:
                return "the shoe door is closed"
        elif code == "table_fault":
            latched = alarm.about in state.faults if alarm.about else bool(state.faults)
            if not latched:
                return "the fault was cleared"
        elif code == "fault_still_present":
            if not any(active for _detail, active in state.faults.values()):
                return "the fault is gone"
        elif code == "jackpot_link_down":
            if state.jackpot_link:
                return "the jackpot link is back"
        elif code in _ROUND_ALARMS and round_over:
            return "the round is over"
        return None

    def _on_acknowledge_alarm(self, event: ev.AcknowledgeAlarm) -> None:
        alarms = self.state.alarms
        if event.alarm == 0:
            if not alarms:
                raise ProcedureError(
                    "acknowledge alarm refused: no alarm is open; reload the alarm list"
                )
            alarms.clear()
            return
        if event.alarm not in alarms:
            raise ProcedureError(
                f"acknowledge alarm refused: alarm {event.alarm} is not open: it was "
                "acknowledged already or never raised; reload the alarm list"
            )
        del alarms[event.alarm]

    def _on_link_alarm(self, event: ev.LinkAlarm) -> None:
        code = f"link_{event.kind}"
        if any(alarm.code == code for alarm in self.state.alarms.values()):
            return  # one open alarm per kind: the technician acknowledges it, then the next
        text, action = link_alarm_words(event.kind, event.detail)
        self._alarm(code, text, action)

    def _alarm_light(self) -> None:
        state = self.state
        alarm = bool(state.pending or state.shoe_fault or state.faults) or (
            state.door_open and state.phase in IN_PROGRESS
        )
        self._light("alarm", "blink" if alarm else "off")
