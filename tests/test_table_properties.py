"""Properties of the table state machine under random legal and illegal event sequences.

1. A hypothesis state machine (:class:`TableMachine`) deals from a real, finite shoe
   (decks per profile, occasionally a foreign extra copy) on all four profiles, three house
   variants (no peek, no hole card until the players are done, a one-deck shoe) and 1-7
   spots, mixing a dealer who follows the procedure with random sensors, wagers, console
   buttons, dealer decisions, supervisor key and shoe events. :class:`Audit` checks every
   step: no exception; a refusal changes nothing (but the journal) and names a reason;
   every card is in exactly one place or was discarded and counted; only an extra copy is
   a foreign card; money per settled wager is bounded by its stake; every latched wager
   settles exactly once; contributions and round results are published exactly once with
   keys that never repeat; the public snapshot is JSON and hides the hole card. At the end
   the same events replayed on a fresh table give the same steps and state.
2. Hole-card non-interference: a round replayed with a different hole card of the same
   blackjack status (any card, without a peek) gives identical effects and snapshots
   until the dealer's turn.

Run longer with ``TABLE_SOAK=1``.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from conftest import edit_profile
from hypothesis import event as hypothesis_event
from hypothesis import given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from controller.games import load_game
from controller.rules.cards import ALL_CARDS, Card, Rank, parse_cards
from controller.rules.profile import HouseRules
from controller.table import Table, TableSettings, table_circles
from controller.table import events as ev
from controller.table.effects import Alarm, Prompt, Publish, Refused, Settled, Step
from controller.table.events import SHOE_EVENTS
from controller.table.state import Phase, TableState

PROFILES = ("pa-standard", "double-up", "online-6deck", "blackjack-tie")
RULES = {name: load_game(name) for name in PROFILES}
# house variants without a peek: a hole card nobody reads, and no hole card until the
# players are done (where a dealer blackjack takes only the original wager)
RULES["pa-no-peek"] = edit_profile("pa-standard", ('peek = "electronic"', 'peek = "none"'))
RULES["double-up-after-players"] = edit_profile(
    "double-up",
    ('hole_card = "face_down"', 'hole_card = "after_players"'),
    ('peek = "electronic"', 'peek = "none"\nblackjack_takes = "original_wager"'),
)
# a one-deck shoe: foreign cards (a second copy) turn up in the middle of a deal
RULES["pa-one-deck"] = edit_profile("pa-standard", ("decks = 6", "decks = 1"))
VARIANTS = tuple(RULES)
FACE_DOWN = tuple(name for name in VARIANTS if RULES[name].dealer.hole_card == "face_down")
ALL_CIRCLES = tuple(sorted({c for rules in RULES.values() for c in table_circles(rules)}))
SPOT_ACTIONS = (ev.Double, ev.Split, ev.Surrender, ev.Insurance, ev.EvenMoney, ev.EzBust)
SPOT_ACTIONS += (ev.DoubleUp,)
SOAK = bool(os.environ.get("TABLE_SOAK"))
ACES = tuple(c for c in ALL_CARDS if c.value == 1)
TENS = tuple(c for c in ALL_CARDS if c.value == 10)

Draw = Callable[[st.SearchStrategy[Any]], Any]
_amounts = st.sampled_from([0, 1, 99, 100, 250, 500, 1000, 2500, 10000, 10001, 100000, 100001])
_spots = st.integers(0, 8)


# -- what the table holds ------------------------------------------------------------------


def cards_in_play(state: TableState) -> Counter[Card]:
    """Every card the table holds: pending, the dealer's and every player hand's."""
    held = Counter(state.pending)
    if state.round is not None:
        held.update(state.round.dealer)
        for spot in state.round.spots.values():
            for hand in spot.hands:
                held.update(hand.cards)
    return held


def codes(step: Step, kind: type) -> list[str]:
    return [e.code for e in step.effects if isinstance(e, kind)]


def expected_settlements(state: TableState) -> Counter[tuple[int, str, int | None]]:
    """(spot, wager, hand) of every wager of the round: each must settle exactly once."""
    rnd = state.round
    assert rnd is not None
    out: Counter[tuple[int, str, int | None]] = Counter()
    for spot in rnd.spots.values():
        for index, hand in enumerate(spot.hands):
            out[(spot.number, "main", index)] += 1
            if hand.double_down:
                out[(spot.number, "double_down", index)] += 1
            if hand.double_up:
                out[(spot.number, "double_up", index)] += 1
        for wager in spot.wagers:
            if wager != "main":
                out[(spot.number, wager, None)] += 1
        if spot.insurance:
            out[(spot.number, "insurance", None)] += 1
        if spot.ez_bust:
            out[(spot.number, "ez_bust", None)] += 1
    return out


class Audit:
    """Drives a table one event at a time and checks every step."""

    def __init__(self, table: Table):
        self.table = table
        self.keys: set[str] = set()
        self.round_lines: list[Settled] = []
        self.results: Counter[int] = Counter()
        self.steps = 0
        self.refused = 0
        self.events: list[ev.Event] = []
        self.log: list[Step] = []

    def counted(self, event: ev.Event, step: Step) -> bool:
        """Whether the table took ``event`` as a card drawn from the shoe."""
        if not isinstance(event, ev.CardDrawn) or not step.accepted:
            return False
        mode = self.table.settings.card_source
        return event.source == ("shoe" if mode == "both" else mode)

    def apply(self, event: ev.Event, *, foreign: bool = False) -> Step:
        table = self.table
        before = copy.deepcopy(table.state)
        step = table.handle(event)  # never raises: a bad event is a refused step
        after = table.state
        self.steps += 1
        self.events.append(event)
        self.log.append(step)
        note(f"{event.to_dict()} -> {'ok' if step.accepted else step.reason}")

        # JSON: what leaves the core
        json.dumps([e.to_dict() for e in step.effects])
        snap = table.snapshot()
        json.dumps(snap)

        refusals = [e for e in step.effects if isinstance(e, Refused)]
        if not step.accepted:
            self.refused += 1
            assert len(step.effects) == 1 and len(refusals) == 1, step
            assert refusals[0].event == event.TYPE
            assert refusals[0].reason.strip(), "a refusal names its reason"
            assert step.journal, "refused presses are journaled"
            # nothing changed but the journal of the round
            before.log.append(event)
            before.round_effects.extend(step.effects)
            assert after == before, f"refused {event} changed the state"
            return step
        assert not refusals
        hypothesis_event(f"accepted {event.TYPE} in {before.phase.value}")
        for code in codes(step, Alarm):
            hypothesis_event(f"alarm {code}")
        assert step.journal or isinstance(event, ev.Tick)
        assert (after.round is None) == (after.phase is Phase.BETTING)
        assert len(after.pending) == len(after.pending_foreign)

        self._check_cards(event, step, before, after, foreign)
        self._check_money(event, step, before, after)
        self._check_hole_card(after, snap)
        if after.pending:
            assert after.lights.get("alarm") == "blink", "a waiting card blinks the tower"
        return step

    def _check_cards(
        self, event: ev.Event, step: Step, before: TableState, after: TableState, foreign: bool
    ) -> None:
        counted = self.counted(event, step)
        supply = cards_in_play(before)
        if counted:
            assert isinstance(event, ev.CardDrawn)
            supply[event.card] += 1
            # shoe integrity: only the extra copy is a foreign card
            assert ("foreign_card" in codes(step, Alarm)) == foreign, event
        held = cards_in_play(after)
        appeared = held - supply
        assert not appeared, f"cards out of nowhere: {appeared}"
        left = supply - held
        shuffled = "shuffled" in codes(step, Prompt)
        if left:
            assert isinstance(event, (ev.Burn, ev.EndRound, ev.VoidRound, ev.Misdeal, ev.CardDrawn))
            if isinstance(event, ev.CardDrawn):  # the burn card after a shuffle
                assert "burn" in codes(step, Prompt)
        if not shuffled:
            assert after.discarded - before.discarded == left.total(), "a discard not counted"
            assert after.dealt - before.dealt == int(counted)
        assert after.dealt == after.discarded + held.total()

    def _check_money(
        self, event: ev.Event, step: Step, before: TableState, after: TableState
    ) -> None:
        lines = [e for e in step.effects if isinstance(e, Settled)]
        for line in lines:
            assert line.stake > 0 and line.paid >= 0, line
            assert 0 <= line.returned <= line.stake, line
            assert line.net >= -line.stake
            if line.outcome == "void":
                assert line.paid == 0 and line.returned == line.stake, line
        if isinstance(event, ev.Lockout):
            self.round_lines = []
        if lines:
            assert after.round is not None
        self.round_lines.extend(lines)

        publishes = [e for e in step.effects if isinstance(e, Publish)]
        for pub in publishes:
            assert pub.key not in self.keys, f"publish key repeated: {pub.key}"
            self.keys.add(pub.key)
            assert pub.topic in ("contribution", "round_result", "hit_claim", "event")
            json.dumps(pub.payload)
        # significant events (issue 28): numbered one after the other, as the state counts them
        events = [p.key for p in publishes if p.topic == "event"]
        first = after.event_seq - len(events) + 1
        assert events == [f"event/{n}" for n in range(first, after.event_seq + 1)], events
        contributions = [p for p in publishes if p.topic == "contribution"]
        if isinstance(event, ev.Lockout):
            assert after.round is not None
            locked = {
                s.number: s.wagers["blazing_7s"]
                for s in after.round.spots.values()
                if "blazing_7s" in s.wagers
            }
            assert {p.payload["spot"]: p.payload["stake"] for p in contributions} == locked
            assert len(contributions) == len(locked)
        else:
            assert not contributions, "contributions only at lockout"
        for pub in publishes:
            if pub.topic != "round_result":
                continue
            number = pub.payload["round"]
            self.results[number] += 1
            assert self.results[number] == 1, f"round {number} published twice"
            assert after.phase is Phase.SETTLED and after.round is not None
            assert number == after.round.number
            got = Counter((line.spot, line.wager, line.hand) for line in self.round_lines)
            assert got == expected_settlements(after), "every wager settles exactly once"
            for total in ("stake", "paid", "returned"):
                assert pub.payload[total] == sum(getattr(x, total) for x in self.round_lines)
        if isinstance(event, ev.EndRound):
            assert before.round is not None
            assert self.results[before.round.number] == 1, "each round has one round_result"

    def _check_hole_card(self, after: TableState, snap: dict[str, Any]) -> None:
        rnd = after.round
        if rnd is None or len(rnd.dealer) < 2 or rnd.hole_revealed:
            return
        assert snap["dealer"]["cards"][1] == "back"
        assert "total" not in snap["dealer"]
        assert after.phase is not Phase.SETTLED


# -- a dealer who follows the procedure (mostly) -------------------------------------------


def dealer_move(table: Table, draw: Draw, deal: Callable[[], ev.Event]) -> ev.Event:
    """An event a dealer following the procedure might send next; some are refused."""
    state, settings_ = table.state, table.settings
    spots = list(range(1, settings_.spots + 1))
    rnd = state.round
    if state.pending:
        kind = draw(st.sampled_from(["burn", "assign", "assign", "card"]))
        if kind == "card":  # the dealer has not looked at the alarm yet
            return deal()
        if kind == "burn" or rnd is None:
            return ev.Burn()
        if state.phase is Phase.DEALING and rnd.deal_queue:
            return ev.Assign(rnd.deal_queue[0])
        if state.phase is Phase.PLAYERS and rnd.in_action:
            return ev.Assign(*rnd.in_action)
        return ev.Assign(0)
    phase = state.phase
    if phase is Phase.BETTING:
        if state.shoe_fault:
            return ev.ShoeEvent("fault_cleared")
        if state.door_open:
            return ev.ShoeEvent("door_closed")
        if state.cut_card_out:
            return ev.ShoeEvent("shuffle")
        has_main = any(state.sensors.get((s, "main")) for s in spots)
        kinds = ["main", "side", "amount"] + ["lockout"] * (3 if has_main else 0)
        kind = draw(st.sampled_from(kinds))
        spot = draw(st.sampled_from(spots))
        if kind == "main":
            return ev.BetSensor(spot, "main", True)
        if kind == "side" and len(table.circles) > 1:
            return ev.BetSensor(spot, draw(st.sampled_from(table.circles[1:])), True)
        if kind == "amount":
            low, high = settings_.main_minimum, settings_.main_maximum
            return ev.WagerAmount(spot, "main", draw(st.integers(low // 100, high // 100)) * 100)
        return ev.Lockout()
    assert rnd is not None
    if phase is Phase.SETTLED:
        return ev.EndRound()
    if phase in (Phase.DEALING, Phase.DEALER):
        return deal()
    if phase is Phase.INSURANCE:
        kind = draw(st.sampled_from(["next", "next", "card", "insurance", "even_money"]))
        if kind == "insurance":
            return ev.Insurance(draw(st.sampled_from(list(rnd.spots))), draw(st.none() | _amounts))
        if kind == "even_money":
            return ev.EvenMoney(draw(st.sampled_from(list(rnd.spots))))
        return ev.Next() if kind == "next" else deal()
    if phase is Phase.EZ_BUST:
        kind = draw(st.sampled_from(["next", "card", "ez_bust", "ez_bust"]))
        if kind == "ez_bust":
            return ev.EzBust(draw(st.sampled_from(list(rnd.spots))))
        return ev.Next() if kind == "next" else deal()
    assert phase is Phase.PLAYERS and rnd.in_action is not None
    spot = rnd.in_action[0]
    kind = draw(st.sampled_from(["hit", "hit", "stand", "stand", *SPOT_ACTIONS[:3], ev.DoubleUp]))
    if kind == "hit":
        return deal()
    if kind == "stand":
        return ev.Next()
    return kind(spot, draw(st.none() | st.none() | _amounts))


def wanted_pair(table: Table) -> Rank | None:
    """The rank that would pair the hand the next card goes to, if it holds one card."""
    state, rnd = table.state, table.state.round
    if rnd is None:
        return None
    hand = None
    if state.phase is Phase.DEALING and rnd.deal_queue and rnd.deal_queue[0]:
        hand = rnd.spots[rnd.deal_queue[0]].hands[0]
    elif state.phase is Phase.PLAYERS and rnd.in_action is not None:
        hand = rnd.spots[rnd.in_action[0]].hands[rnd.in_action[1]]
    if hand is None or len(hand.cards) != 1:
        return None
    return hand.cards[0].rank


# -- 1. the stateful test ------------------------------------------------------------------


class TableMachine(RuleBasedStateMachine):
    """A table dealt from a real shoe by a dealer who mostly follows the procedure."""

    @initialize(
        profile=st.sampled_from(VARIANTS),
        spots=st.integers(1, 7),
        source=st.sampled_from(["shoe", "shoe", "camera", "both"]),
    )
    def setup(self, profile: str, spots: int, source: str) -> None:
        self.rules = RULES[profile]
        self.table = Table(self.rules, TableSettings(spots=spots, card_source=source))
        self.audit = Audit(self.table)
        self.source = "camera" if source == "camera" else "shoe"
        self.t = 0
        self.new_shoe()

    def new_shoe(self) -> None:
        self.shoe = [card for card in ALL_CARDS for _ in range(self.rules.shoe.decks)]

    def do(self, event: ev.Event, *, foreign: bool = False) -> Step:
        step = self.audit.apply(event, foreign=foreign)
        if "shuffled" in codes(step, Prompt):
            self.new_shoe()  # the table counts a fresh shoe from here: so do we
        return step

    def draw_card(self, draw: Draw) -> ev.Event:
        """The next card out of the shoe; now and then one that makes a pair, an ace or a
        ten-value card, so that splits, insurance and blackjacks come up."""
        if not self.shoe:  # past the cut card mid-round: nothing left to deal
            return ev.ShoeEvent("cut_card")
        want = draw(st.sampled_from(["any", "any", "any", "pair", "ace", "ten"]))
        pair = wanted_pair(self.table)
        wanted = {
            "pair": lambda c: pair is not None and c.rank == pair,
            "ace": lambda c: c.value == 1,
            "ten": lambda c: c.value == 10,
        }.get(want)
        places = [i for i, c in enumerate(self.shoe) if wanted(c)] if wanted else []
        if not places:
            places = range(len(self.shoe))
        return ev.CardDrawn(self.shoe.pop(draw(st.sampled_from(places))), self.source)

    @rule(data=st.data())
    def deal_from_the_shoe(self, data: st.DataObject) -> None:
        event = self.draw_card(data.draw)
        self.do(event)
        both = self.table.settings.card_source == "both"
        if both and isinstance(event, ev.CardDrawn) and data.draw(st.booleans()):
            # the camera confirms it (or misreads it)
            seen = data.draw(st.sampled_from([event.card, event.card, *ALL_CARDS[:4]]))
            self.do(ev.CardDrawn(seen, "camera"))

    @rule(data=st.data(), moves=st.integers(1, 30))
    def dealer_follows_the_procedure(self, data: st.DataObject, moves: int) -> None:
        for _ in range(moves):
            if len(self.shoe) < self.rules.shoe.decks * 13 and not self.table.state.cut_card_out:
                self.do(ev.ShoeEvent("cut_card"))  # three quarters dealt
            self.do(dealer_move(self.table, data.draw, lambda: self.draw_card(data.draw)))

    @rule(data=st.data(), moves=st.integers(1, 30))
    def dealer_follows_the_procedure_again(self, data: st.DataObject, moves: int) -> None:
        self.dealer_follows_the_procedure(data, moves)  # twice the weight of other rules

    @rule(data=st.data())
    def foreign_card(self, data: st.DataObject) -> None:
        # a copy of a card whose every copy is out already (or, failing that, every copy
        # the shoe holds comes out first, then one more): only the extra one is foreign
        gone = [card for card in ALL_CARDS if card not in self.shoe]
        card = data.draw(st.sampled_from(gone or ALL_CARDS))
        while card in self.shoe:
            self.shoe.remove(card)
            self.do(ev.CardDrawn(card, self.source))
        self.do(ev.CardDrawn(card, self.source), foreign=True)

    def card_waits_mid_round(self) -> bool:
        return bool(self.table.state.pending) and self.table.round_in_progress

    @precondition(card_waits_mid_round)
    @rule(data=st.data())
    def deal_on_while_a_card_waits(self, data: st.DataObject) -> None:
        self.do(self.draw_card(data.draw))  # queues behind the waiting card

    @precondition(card_waits_mid_round)
    @rule()
    def decide_on_the_waiting_card(self) -> None:
        state, rnd = self.table.state, self.table.state.round
        assert rnd is not None
        if state.pending_foreign[0]:
            self.do(ev.Burn())
        elif state.phase is Phase.DEALING:
            self.do(ev.Assign(rnd.deal_queue[0]))
        elif state.phase is Phase.PLAYERS and rnd.in_action is not None:
            self.do(ev.Assign(*rnd.in_action))
        else:
            self.do(ev.Assign(0))

    @rule(card=st.sampled_from(ALL_CARDS))
    def other_reader(self, card: Card) -> None:
        # the reader this table does not deal from (in "both" mode: the camera, not counted)
        self.do(ev.CardDrawn(card, "camera" if self.source == "shoe" else "shoe"))

    @rule(spot=_spots, circle=st.sampled_from((*ALL_CIRCLES, "bogus")), on=st.booleans())
    def bet_sensor(self, spot: int, circle: str, on: bool) -> None:
        self.do(ev.BetSensor(spot, circle, on))

    @rule(spot=_spots, circle=st.sampled_from(ALL_CIRCLES), amount=_amounts | st.integers(0, 10**6))
    def wager_amount(self, spot: int, circle: str, amount: int) -> None:
        self.do(ev.WagerAmount(spot, circle, amount))

    @rule()
    def lockout(self) -> None:
        self.do(ev.Lockout())

    @rule()
    def next_button(self) -> None:
        self.do(ev.Next())

    @rule(action=st.sampled_from(SPOT_ACTIONS), data=st.data(), amount=st.none() | _amounts)
    def spot_button(self, action: type[ev.SpotAction], data: st.DataObject, amount: int | None):
        rnd = self.table.state.round
        in_action = [rnd.in_action[0]] if rnd is not None and rnd.in_action else []
        spot = data.draw(st.sampled_from([*in_action, *in_action, *range(9)]))
        self.do(action(spot, amount))

    @rule()
    def end_round(self) -> None:
        self.do(ev.EndRound())

    @rule(misdeal=st.booleans(), key=st.booleans(), reason=st.sampled_from(["", "camera"]))
    def void(self, misdeal: bool, key: bool, reason: str) -> None:
        if key:
            self.do(ev.SupervisorKey(True))
        self.do(ev.Misdeal() if misdeal else ev.VoidRound(reason))

    @rule(on=st.booleans())
    def supervisor_key(self, on: bool) -> None:
        self.do(ev.SupervisorKey(on))

    @rule()
    def burn(self) -> None:
        self.do(ev.Burn())

    @rule(spot=_spots, hand=st.integers(0, 3))
    def assign(self, spot: int, hand: int) -> None:
        self.do(ev.Assign(spot, hand))

    @rule(kind=st.sampled_from(SHOE_EVENTS), detail=st.sampled_from(["", "jam"]))
    def shoe_event(self, kind: str, detail: str) -> None:
        self.do(ev.ShoeEvent(kind, detail))

    @rule(dt=st.integers(0, 5000))
    def tick(self, dt: int) -> None:
        self.t += dt
        self.do(ev.Tick(t=self.t))

    def teardown(self) -> None:
        if not hasattr(self, "audit"):
            return
        note(f"steps={self.audit.steps} refused={self.audit.refused}")
        # replayable: the same events on a fresh table give the same steps and state
        again = Table(self.rules, self.table.settings)
        assert again.run(self.audit.events) == self.audit.log
        assert again.state == self.table.state
        assert again.snapshot() == self.table.snapshot()


TestTableMachine = TableMachine.TestCase
TestTableMachine.settings = settings(
    max_examples=600 if SOAK else 100,
    stateful_step_count=120 if SOAK else 50,
    deadline=None,
)


# -- 2. the hole card does not interfere with anything before the dealer's turn ------------

DEALERS_TURN = ("dealer_reveals", "dealer_blackjack", "round_settled")


def same_status(rules: HouseRules, up: Card, hole: Card, other: Card) -> bool:
    """Whether ``other`` as the hole card gives the dealer the same blackjack status, as
    far as the procedure may reveal it before the dealer's turn (nothing without a peek)."""
    if rules.dealer.peek == "none":
        return True
    if up.value == 1:
        return (hole.value == 10) == (other.value == 10)
    if up.value == 10:
        return (hole.value == 1) == (other.value == 1)
    return True


def turn_index(step: Step) -> int | None:
    """Index of the effect that starts the dealer's turn (or settles the round), if any."""
    for i, effect in enumerate(step.effects):
        if isinstance(effect, Prompt) and effect.code in DEALERS_TURN:
            return i
        if isinstance(effect, Publish) and effect.topic == "round_result":
            return i
    return None


def play_round(
    rules_name: str, spots: int, draw: Draw
) -> tuple[list[ev.Event], int | None, list[Step]]:
    """Deal one round by the procedure; returns the events, the index of the hole card's
    event and every step."""
    rules = RULES[rules_name]
    table = Table(rules, TableSettings(spots=spots))
    events: list[ev.Event] = []
    steps: list[Step] = []
    hole_at: int | None = None
    seen: Counter[Card] = Counter()

    def deal() -> ev.Event:
        rnd = table.state.round
        dealer_next = rnd is not None and rnd.deal_queue[:1] == [0]
        any_card = st.sampled_from(ALL_CARDS)
        if dealer_next:  # the dealer's up and hole cards: aces and tens often
            card = draw(any_card | st.sampled_from(ACES) | st.sampled_from(TENS))
        else:
            card = draw(any_card)
        while seen[card] >= rules.shoe.decks:  # a real shoe: no seventh copy
            card = ALL_CARDS[(ALL_CARDS.index(card) + 1) % len(ALL_CARDS)]
        seen[card] += 1
        return ev.CardDrawn(card)

    for _ in range(80):
        if table.state.phase is Phase.SETTLED:
            break
        event = dealer_move(table, draw, deal)
        rnd = table.state.round
        dealing_hole = (
            isinstance(event, ev.CardDrawn)
            and table.state.phase is Phase.DEALING
            and rnd is not None
            and len(rnd.dealer) == 1
            and rnd.deal_queue == [0]
        )
        steps.append(table.handle(event))
        if dealing_hole:
            assert len(rnd.dealer) == 2, "the last card of the initial deal is the hole card"
            hole_at = len(events)
        events.append(event)
    return events, hole_at, steps


def card_named(card: Card, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(str(card))}(?![A-Za-z0-9])", text) is not None


@settings(max_examples=2000 if SOAK else 200, deadline=None)
@given(
    profile=st.sampled_from(FACE_DOWN),
    spots=st.integers(1, 7),
    data=st.data(),
)
def test_hole_card_does_not_interfere_before_the_dealers_turn(profile, spots, data):
    rules = RULES[profile]
    assert rules.dealer.hole_card == "face_down"
    events, hole_at, first_steps = play_round(profile, spots, data.draw)
    if hole_at is None:
        return  # the round never got to its hole card
    hole = events[hole_at]
    assert isinstance(hole, ev.CardDrawn)
    replay = Table(rules, TableSettings(spots=spots))
    replay.run(events[:hole_at])
    assert replay.state.round is not None
    up = replay.state.round.dealer[0]
    used = {e.card for e in events if isinstance(e, ev.CardDrawn)}
    others = [c for c in ALL_CARDS if c not in used and same_status(rules, up, hole.card, c)]
    if not others:
        return
    other = data.draw(st.sampled_from(others))
    note(f"up {up}, hole {hole.card} -> {other}")
    hypothesis_event(f"up card {'ace' if up.value == 1 else 'ten' if up.value == 10 else 'other'}")
    swapped = [*events[:hole_at], ev.CardDrawn(other), *events[hole_at + 1 :]]

    table_a = Table(rules, TableSettings(spots=spots))
    table_b = Table(rules, TableSettings(spots=spots))
    for i, (event_a, event_b) in enumerate(zip(events, swapped, strict=True)):
        step_a, step_b = table_a.handle(event_a), table_b.handle(event_b)
        assert step_a == first_steps[i], "the table is deterministic"
        effects_a = [json.dumps(e.to_dict(), sort_keys=True) for e in step_a.effects]
        effects_b = [json.dumps(e.to_dict(), sort_keys=True) for e in step_b.effects]
        cut = turn_index(step_a)
        assert cut == turn_index(step_b), f"step {i}: {event_a}"
        if cut is not None:
            hypothesis_event(f"compared up to {step_a.effects[cut].to_dict().get('code')}")
            assert effects_a[:cut] == effects_b[:cut], f"step {i}: {event_a}"
            break
        assert effects_a == effects_b, f"step {i}: {event_a}"
        snap_a, snap_b = table_a.snapshot(), table_b.snapshot()
        assert snap_a == snap_b, f"step {i}: {event_a}"
        if i >= hole_at:
            assert snap_b["dealer"]["cards"][1] == "back"
            text = json.dumps(snap_b) + "".join(effects_b)
            assert not card_named(other, text), "the hole card is named before the dealer's turn"


# -- the card counter across a shuffle -----------------------------------------------------

# state.py promises dealt == discarded + pending + cards on the layout. A shuffle reported
# while a settled round's cards are still out waits for end round; a card waiting for a
# decision stays counted across the shuffle.


def counter_holds(table: Table) -> bool:
    state = table.state
    return state.dealt == state.discarded + cards_in_play(state).total()


def test_card_count_survives_a_shuffle_with_cards_out():
    table = Table(RULES["online-6deck"], TableSettings(spots=1))
    deal = [ev.CardDrawn(c) for c in parse_cards("10H 9S KD 2C")]
    table.run([ev.BetSensor(1, "main", True), ev.Lockout(), *deal, ev.Next()])
    table.handle(ev.CardDrawn(parse_cards("8H")[0]))  # dealer 19
    assert table.state.phase is Phase.SETTLED and counter_holds(table)
    # the shoe reports its shuffle before the dealer presses end round
    table.handle(ev.ShoeEvent("shuffle"))
    assert counter_holds(table)
    table.handle(ev.EndRound())
    assert counter_holds(table)


def test_card_count_survives_a_shuffle_with_a_card_waiting():
    table = Table(RULES["online-6deck"], TableSettings(spots=1))
    table.handle(ev.CardDrawn(parse_cards("5H")[0]))  # unexpected: waits for a decision
    table.handle(ev.ShoeEvent("shuffle"))
    assert counter_holds(table)
    table.handle(ev.Burn())
    assert counter_holds(table)
