"""The replay's shortcuts of issue 32 item 3, fifth round, against the forms they replace.

A table whose methods are the forms before this round (:class:`Before`, below) and the table
as it is now replay the same seeded rounds side by side, on every profile: every step (its
acceptance and effects) and the state after it are equal.

- :meth:`Table.handle` looks up one plan per event class (its handler and traits, made at the
  class's first event), returns a refused step and an empty one without the accepted path's
  checks, and asks whether an event enters the round's recall log from its traits alone
  (accepted or refused): ``Before.handle`` is the form it replaces, copied.
- The search for the next hand in action starts at the spot in action by its place in the
  spots' order, without stepping over the spots before it (``Before._advance``).
- A player's card of the initial deal before its last goes to its hand without ``_route``'s
  and ``_deal_to``'s calls (``Before._on_card``).
- The dealer's hand is counted once for whether it draws, its prompt and the round's
  settlement (``Before._dealer_continue`` asks ``_dealer_needs_card`` and counts it again,
  ``Before._settle_round`` counts it itself).
- The search for the hand in action steps over a hand that stood, settled, surrendered or
  doubled up without counting it (``Before._advance`` counts it first).
- A hand with its main wager alone (the first at its spot, never split, surrendered or
  doubled) settles through ``settle_main_wager``, without its ``PlayerHand``
  (``Before._hand_lines`` makes it for every hand); ``settle_main_wager`` itself answers as
  ``settle_hand`` does, lines and errors, over every count of two to four cards against
  dealers' hands finished and not, on every profile.
- The naturals counted after the deal are the blackjacks paid at once against 2-9, not asked
  of each hand again (``Before._after_initial_deal``, ``Before._pay_blackjacks``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from controller.errors import EventError, ProcedureError
from controller.games import available_games, load_game
from controller.rules.cards import Card, Rank, Suit, parse_cards
from controller.rules.hand import HandTotal, hand_total, is_blackjack
from controller.rules.settlement import PlayerHand, settle_hand, settle_main_wager
from controller.rules.sidebets import ez_bust
from controller.table import Table, TableSettings, significant
from controller.table import events as ev
from controller.table.effects import Alarm, Effect, Publish, Refused, Step
from controller.table.events import CardDrawn, EndRound
from controller.table.machine import (
    _BLOCKED_BY_PENDING,
    _NOT_IN_ROUND_LOG,
    _NOT_RECALLED,
    _NOTHING,
    _NOTHING_TICK,
    _PLAIN_EFFECTS,
    REFUSALS,
)
from controller.table.part import RefusedWithAlarm
from controller.table.players import _ACTION, _action
from controller.table.state import IN_PROGRESS, Phase

GAMES = sorted(available_games())
BENCH = Path(__file__).resolve().parent.parent / "bench" / "replay_rounds.py"


def _bench():
    spec = importlib.util.spec_from_file_location("replay_rounds_structure", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _old_traits(kind: type) -> tuple[bool, bool, bool, bool]:
    return (
        issubclass(kind, _BLOCKED_BY_PENDING),
        issubclass(kind, significant.WATCHED),
        not issubclass(kind, _NOT_IN_ROUND_LOG),
        issubclass(kind, ev.Tick),
    )


class Before(Table):
    """The table with the forms this round replaced (copied from ``main`` before it)."""

    def handle(self, event: ev.Event) -> Step:
        """Apply one event; return whether it was accepted and its effects."""
        kind = type(event)
        handler = self._handlers.get(kind)
        if handler is None:
            raise EventError(f"not a table event: {event!r}")
        blocked, watched, for_recall, is_tick = _old_traits(kind)
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
            accepted = plain = False
        else:
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
            accepted = True
            if out:
                step = Step(True, tuple(out))
                plain = True
                for effect in step.effects:
                    if type(effect) in _PLAIN_EFFECTS:  # most of them: nothing to remember
                        continue
                    plain = False
                    if isinstance(effect, Alarm):
                        self._register_alarms((effect,), round_number)
                    elif isinstance(effect, Publish):
                        self._remember_claims((effect,))
            else:  # nothing to carry out (a card of the initial deal, most bets): shared
                step = _NOTHING_TICK if is_tick else _NOTHING
                plain = True
        self._event = None
        self._out = []
        if for_recall and step.journal and not (accepted and kind is EndRound):
            state.log.append(event)
            effects = step.effects
            if plain:  # accepted, and no effect a round's recall leaves out
                if effects:
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

    def _advance(self, counted: HandTotal | None = None) -> None:
        """Put the first unfinished hand in action, or start the dealer's turn. It runs after
        every card and decision of the players' turn, so the hand in action is prompted each
        time with its total as it is now and only the choices the rules allow now.

        Each hand it reads is counted once, here, and the count passed on to the checks and
        the prompt; ``counted`` is the ``hand_total`` of the hand in action as it is now,
        where the caller counted it already (the hand that just took a card)."""
        rnd = self.state.round
        previous = rnd.in_action
        # Hands before the one in action are done, and stay done (cards go only to the hand
        # in action; a split starts the search afresh): the search starts at it.
        start_spot, start_index = previous if previous is not None else (None, 0)
        if previous is None:
            counted = None
        for spot in rnd.spots.values():
            if start_spot is not None:
                if spot.number != start_spot:
                    continue
                start_spot = None
                first = start_index
            else:
                first = 0
            hands = spot.hands
            for index in range(first, len(hands)):
                hand = hands[index]
                count, counted = counted, None  # the caller's count: the first hand's only
                if count is None and len(hand.cards) >= 2 and not hand.double_down:
                    count = hand_total(hand.cards)  # counted once: done, then its prompt
                if self._hand_done(hand, count):
                    continue
                number = spot.number
                rnd.in_action = (number, index)
                # The action lights as _light sets them, each spot's name and effects made
                # once (_ACTION): the spot that was in action off, this one on.
                lights, out = self.state.lights, self._out
                if previous and previous[0] != number:
                    self._action_off(previous[0])
                name, on, _off = _ACTION.get(number) or _action(number)
                if lights.get(name) != "on":
                    lights[name] = "on"
                    out.append(on)
                out.append(self._hand_prompt(spot, index, count))
                return
        if previous:
            self._action_off(previous[0])
        rnd.in_action = None
        self._dealer_turn()

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

    def _after_initial_deal(self) -> None:
        rules, rnd = self.rules, self.state.round
        up = rnd.dealer[0]
        can_have_blackjack = up.value in (1, 10)
        for spot in rnd.spots.values():
            spot.first_two = tuple(spot.hands[0].cards)
        for spot in rnd.spots.values():
            self._settle_card_bets(spot, up, can_have_blackjack)
        if not can_have_blackjack:
            rnd.dealer_checked = True
            if rules.blackjack.paid_at_once_against_2_to_9:
                self._pay_blackjacks("Blackjack against {up}: pay 3 to 2 now and remove the cards")
        naturals = [s.number for s in rnd.spots.values() if is_blackjack(s.hands[0].cards)]
        if up.value == 1 and (rules.insurance.offered or (rules.blackjack.even_money and naturals)):
            self.state.phase = Phase.INSURANCE
            if rules.insurance.offered:
                self._prompt("insurance_open", "Insurance open: dealer shows an ace")
            if rules.blackjack.even_money and naturals:
                spots = ", ".join(map(str, naturals))
                self._prompt("even_money_offered", f"Even money offered to spots {spots}")
            return
        if rules.side_bets.ez_bust is not None and ez_bust.is_offered(up):
            self.state.phase = Phase.EZ_BUST
            spots = ", ".join(str(n) for n in rnd.spots)
            self._prompt("ez_bust_open", f"EZ Bust offered to spots {spots}")
            return
        self._check_dealer_blackjack()

    def _pay_blackjacks(self, why: str) -> None:
        rnd = self.state.round
        up = rnd.dealer[0]
        for spot in rnd.spots.values():
            hand = spot.hands[0]
            if len(spot.hands) == 1 and not hand.settled and is_blackjack(hand.cards):
                self._prompt("blackjack", f"Spot {spot.number}: " + why.format(up=up), spot.number)
                hand.settled = True
                line = settle_hand(
                    PlayerHand(tuple(hand.cards), hand.wager), rnd.dealer, self.rules
                )
                for item in line:
                    self._settle(spot.number, item, 0)

    def _dealer_continue(self) -> None:
        rnd = self.state.round
        if self._dealer_needs_card():
            if len(rnd.dealer) < 2:
                self._prompt("dealer_draws", "Deal the dealer's second card")
            else:
                self._prompt("dealer_draws", f"Dealer draws on {hand_total(rnd.dealer).total}")
            return
        if len(rnd.dealer) >= 2 and rnd.dealer_plays:
            total = hand_total(rnd.dealer)
            self._prompt(
                "dealer_stands",
                f"Dealer breaks with {total.total}"
                if total.total > 21
                else f"Dealer stands on {total.total}",
            )
        self._settle_round()

    def _settle_round(self, counted=None) -> None:
        super()._settle_round()  # counts the dealer's hand itself

    def _hand_lines(self, hand, index, dealer, counted=None):
        player = self._player_hand(hand, index)  # every hand through its PlayerHand
        return settle_hand(player, dealer, self.rules, dealer_count=counted)


def _same(now: Table, before: Table, events) -> None:
    for event in events:
        mine, theirs = now.handle(event), before.handle(event)
        assert mine == theirs, event
        assert now.state == before.state, event
        assert now.state.now == before.state.now, event  # not compared by ==
    assert now.snapshot() == before.snapshot()


@pytest.mark.parametrize("game", GAMES)
def test_the_table_steps_as_the_forms_it_replaces(game):
    rules = load_game(game)
    events = _bench().generate(rules, 150, 11).events
    _same(Table(rules, TableSettings(spots=7)), Before(rules, TableSettings(spots=7)), events)


def test_refusals_ticks_alarms_and_significant_events_step_as_before():
    """What the bench's rounds never do: refused presses (with and without an alarm), a card
    waiting for a decision, ticks, late bets, faults, the shoe's door and acknowledgements."""
    rules = load_game("pa-standard")
    events = [
        ev.Tick(t=1),
        ev.Next(t=2),  # refused: no round
        ev.BetSensor(1, "main", True, t=3),
        ev.BetSensor(2, "lucky_ladies", True, t=4),  # a side bet without a main wager
        ev.ShoeEvent("new_shoe", t=5),
        ev.CardDrawn(ev.parse_event({"type": "card", "card": "2C"}).card, t=6),  # burn card
        ev.Lockout(t=7),
        ev.BetSensor(3, "main", True, t=8),  # late bet: an alarm
        ev.ShoeEvent("door_open", t=9),
        ev.Tick(t=10),
        ev.ShoeEvent("door_closed", t=11),
        ev.TableFault("camera", "no frames", t=12),
        ev.Lockout(t=13),  # refused
        ev.ClearFaults(by="tech", t=14),
        ev.AcknowledgeAlarm(1, by="tech", t=15),
        ev.AcknowledgeAlarm(99, by="tech", t=16),  # refused
        ev.EndRound(t=17),  # refused: the round is not settled
    ]
    for card in ("10H", "5D", "9S", "6C", "KH", "KH", "KH", "KH", "KH", "KH", "KH"):
        events.append(ev.parse_event({"type": "card", "card": card, "t": 20}))
    events += [ev.Next(t=30), ev.Burn(t=31), ev.Next(t=32), ev.SupervisorKey(True, t=33)]
    events += [ev.Misdeal(t=34), ev.EndRound(t=35), ev.EndRound(t=36), ev.Tick(t=37)]
    _same(Table(rules, TableSettings(spots=3)), Before(rules, TableSettings(spots=3)), events)


def test_an_unknown_event_is_refused_as_before():
    table = Table(load_game("pa-standard"))
    with pytest.raises(EventError, match="not a table event: 'lockout'"):
        table.handle("lockout")  # type: ignore[arg-type]


_RANKS = [Rank.ACE, Rank.TWO, Rank.FIVE, Rank.SIX, Rank.SEVEN, Rank.NINE, Rank.TEN, Rank.KING]
_DEALERS = ["10S,7C", "10S,6C", "AS,KC", "6S,AC", "9S,7C,5D", "10S,6C,9D", "5S,6C,10D", "10S"]


def _answer(make, *args, **kwargs):
    try:
        return ("lines", [(type(line), line) for line in make(*args, **kwargs)])
    except Exception as exc:
        return ("error", type(exc), str(exc))


def _general(cards, wager, dealer, rules, dealer_count=None):
    return settle_hand(PlayerHand(tuple(cards), wager), dealer, rules, dealer_count=dealer_count)


@pytest.mark.parametrize("game", GAMES)
def test_settle_main_wager_answers_as_settle_hand(game):
    rules = load_game(game)
    hands = [
        [Card(a, Suit.SPADES), Card(b, Suit.HEARTS), *extra]
        for a in _RANKS
        for b in _RANKS
        for extra in ((), (Card(Rank.SIX, Suit.CLUBS),), (Card(Rank.TWO, Suit.CLUBS),) * 2)
    ]
    checked = 0
    for cards in hands:
        for wager in (1000, 2500, 1):
            for dealer_text in _DEALERS:
                dealer = parse_cards(dealer_text)
                counts = [None]
                if len(dealer) >= 2:
                    counts.append((hand_total(dealer), is_blackjack(dealer)))
                for counted in counts:
                    args = (cards, wager, dealer, rules)
                    mine = _answer(settle_main_wager, *args, dealer_count=counted)
                    assert mine == _answer(_general, *args, dealer_count=counted), args
                    checked += 1
    assert checked > 8_000


@pytest.mark.parametrize("wager", [0, -100, True, 10.5, "1000"])
def test_settle_main_wager_refuses_what_player_hand_refuses(wager):
    rules = load_game("pa-standard")
    cards, dealer = parse_cards("10S,7C"), parse_cards("10D,8C")
    mine = _answer(settle_main_wager, cards, wager, dealer, rules)
    assert mine == _answer(_general, cards, wager, dealer, rules)
    assert mine[0] == "error"
    strays = [cards[0], "7C"]
    mine = _answer(settle_main_wager, strays, 1000, dealer, rules)
    assert mine == _answer(_general, strays, 1000, dealer, rules)
    assert mine[0] == "error"
