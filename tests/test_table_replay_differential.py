"""The replay's shortcuts (issue 32 item 3, fifth round) against the forms they replaced, on
events the bench's legal scripts never make: a property-based differential test.

:class:`BeforeAll` is the table with every form the ten commits before the merge of
``replay4`` replaced (``36f32af..4f38e90``): those :class:`Before` of
``tests/test_table_replay_structure.py`` holds, and the rest of them, copied from ``36f32af``
(a bet sensor's circle check, lockout's wager amounts, the dealer's turn asking each open hand
whether it is a natural, a hand done through ``_counted_done``, the action lights through
``_light``, an end round's lights off through ``shared_light``, and ``_settle_hand`` with its
stakes loop for every hand). Random event sequences, mostly a legal round as the bench plays it
but with any table event (plausible fields and implausible ones, from any phase) put in at
random, are fed to both; every step (accepted, effects, or the exception it raised) and the
state and snapshot after it must be equal.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.errors import ProcedureError, WagerError
from controller.games import available_games, load_game
from controller.rules import actions
from controller.rules.cards import ALL_CARDS, Card
from controller.rules.hand import HandTotal, hand_total, is_blackjack
from controller.rules.profile import PROGRESSIVE_WAGERS, HouseRules
from controller.rules.settlement import (
    EVEN,
    Outcome,
    PlayerHand,
    Settlement,
    _lose,
    _push,
    _win,
    settle_hand,
    settle_main_wager,
)
from controller.rules.sidebets import blackjack_tie, bonus_16
from controller.table import Table, TableSettings, table_circles
from controller.table import events as ev
from controller.table.betting import _CIRCLE_ON, _LAYOUTS, _circle_on, _layout
from controller.table.effects import Publish
from controller.table.part import shared_light
from controller.table.players import action_light
from controller.table.state import DEALER, IN_ACTION, HandInPlay, Phase, RoundState, SpotInPlay
from controller.table.view import bet_name
from tests.test_table_replay_structure import Before

GAMES = sorted(available_games())


# -- the forms replaced, copied from 36f32af -----------------------------------------


def _old_settle_hand(
    hand: PlayerHand,
    dealer: tuple[Card, ...],
    rules: HouseRules,
    dealer_count: tuple[HandTotal, bool] | None = None,
) -> list[Settlement]:
    # Wagers of 0 make no line (settle_hand drops them): none is made for them at all.
    stakes = {"main": hand.wager}
    if hand.double_down:
        stakes["double_down"] = hand.double_down
    if hand.double_up:
        stakes["double_up"] = hand.double_up
    player = hand_total(hand.cards)
    if dealer_count is None:
        dealer_total = hand_total(dealer)
        dealer_bj = is_blackjack(dealer)
    else:
        dealer_total, dealer_bj = dealer_count

    if hand.surrendered:
        # "giving up half their bet": half comes back, rounded down to the cent
        line = Settlement(
            "main",
            hand.wager,
            Outcome.SURRENDER,
            0,
            hand.wager // 2,
            None,
            "surrender: half the wager returned",
        )
        return [line]
    if is_blackjack(hand.cards, from_split=hand.from_split):  # hand.is_blackjack, no property
        if len(dealer) < 2 and (not dealer or dealer[0].value in (1, 10)):
            raise WagerError("the dealer's second card decides this blackjack: settle after it")
        if dealer_bj:
            return [_push("main", hand.wager, "blackjack against dealer blackjack: push")]
        odds = rules.blackjack.pays
        return [_win("main", hand.wager, odds, f"blackjack pays {odds}", Outcome.BLACKJACK)]
    if player.total > 21:  # bust (read without the property: a hot path)
        return [
            _lose(name, stake, f"player breaks with {player.total}")
            for name, stake in stakes.items()
        ]
    # dealer_must_hit(dealer, ...), from the total and natural counted above (a hot path)
    house = rules.dealer
    if len(dealer) < 2:
        unfinished = True
    elif dealer_bj or (dealer_total.total == 16 and house.ends_on_16):
        unfinished = False
    else:
        unfinished = dealer_total.total < 17 or (
            dealer_total.total == 17 and dealer_total.soft and house.hit_soft_17
        )
    if unfinished:
        raise WagerError(
            "the dealer's hand is not finished: settle after the dealer stands or breaks"
        )
    if dealer_bj:
        reason = "dealer blackjack beats every hand but a blackjack"
        if rules.dealer.peek == "none" and rules.dealer.blackjack_takes == "original_wager":
            lines = [
                _push(name, stake, "dealer blackjack takes the original wager only")
                for name, stake in stakes.items()
                if name != "main"
            ]
            if hand.split_index == 0:
                return [_lose("main", hand.wager, reason), *lines]
            return [
                _push("main", hand.wager, "dealer blackjack takes the original wager only"),
                *lines,
            ]
        return [_lose(name, stake, reason) for name, stake in stakes.items()]
    if rules.dealer.ends_on_16 and len(dealer) >= 2 and dealer_total.total == 16:
        if player.total == 21:
            return [
                _win(name, stake, EVEN, "dealer ends on 16, player 21 paid even money")
                for name, stake in stakes.items()
            ]
        return [
            _push(name, stake, "dealer ends on 16: every wager pushes")
            for name, stake in stakes.items()
        ]
    dealer_bust = dealer_total.total > 21
    if dealer_bust or player.total > dealer_total.total:
        why = "dealer breaks" if dealer_bust else f"{player.total} beats {dealer_total.total}"
        return [_win(name, stake, EVEN, why) for name, stake in stakes.items()]
    if player.total < dealer_total.total:
        why = f"{dealer_total.total} beats {player.total}"
        return [_lose(name, stake, why) for name, stake in stakes.items()]
    if (
        player.total == 21
        and len(hand.cards) == 2
        and len(dealer) > 2
        and rules.split.two_card_21_beats_dealer_21
    ):
        # seed 000: "If you achieve a score of 21 in two cards and a dealer achieves a score
        # of 21 in more than two cards, you win." A split hand's two-card 21 is no blackjack:
        # it is paid 1 to 1.
        why = f"21 in two cards beats the dealer's 21 in {len(dealer)} cards"
        return [_win(name, stake, EVEN, why) for name, stake in stakes.items()]
    why = f"standoff at {player.total}"
    lines = [_push("main", hand.wager, why), _push("double_down", hand.double_down, why)]
    lines.append(_lose("double_up", hand.double_up, f"{why}: a tie loses the Double Up wager"))
    return lines


def _old_settle(hand, dealer_cards, rules, *, dealer_count=None) -> list[Settlement]:
    """``settle_hand`` as it was: through the old ``_settle_hand``."""
    lines = _old_settle_hand(hand, tuple(dealer_cards), rules, dealer_count)
    for line in lines:
        if line.stake <= 0:
            return [line for line in lines if line.stake > 0]
    return lines


class BeforeAll(Before):
    """:class:`Before` with the rest of the forms the shortcuts replaced."""

    def _on_bet(self, event: ev.BetSensor) -> None:
        self._check_circle(event.spot, event.circle, "bet sensor")
        Table._on_bet(self, event)  # the rest as it is now: its own check passes

    def _on_lockout(self, event: ev.Lockout) -> None:
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
        layout = (self.settings.spots, self.circles)
        tie, sensor_keys = _LAYOUTS.get(layout) or _layout(*layout)
        spots: dict[int, SpotInPlay] = {}
        orphans: list[tuple[int, str]] = []
        no_link: list[tuple[int, str]] = []
        sensors = state.sensors
        for number, keys in sensor_keys:
            placed = [c for c, key in keys if sensors.get(key)]  # (number, c): made once
            if not placed:
                continue
            if not state.jackpot_link and "main" in placed:
                no_link.extend((number, c) for c in placed if c in PROGRESSIVE_WAGERS)
                placed = [c for c in placed if c not in PROGRESSIVE_WAGERS]
            if "main" not in placed:
                orphans.extend((number, c) for c in placed)
                continue
            wagers = {circle: self._wager_amount(number, circle) for circle in placed}
            bonuses = tie and {
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
        lights, out = state.lights, self._out
        for spot in spots.values():
            for circle, amount in spot.wagers.items():
                # self._light(f"spot{spot.number}.{circle}", "on"), its name and Light made
                # once per spot and circle (a lockout lights every wager's circle)
                lit = _CIRCLE_ON.get((spot.number, circle))
                if lit is None:
                    lit = _circle_on(spot.number, circle)
                name, light = lit
                if lights.get(name, "off") != "on":
                    lights[name] = "on"
                    out.append(light)
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

    def _dealer_turn(self) -> None:
        state, rnd = self.state, self.state.round
        state.phase = Phase.DEALER
        live = False
        unsettled = False
        for spot in rnd.spots.values():
            for hand in spot.hands:
                if hand.settled:
                    continue
                unsettled = True
                if not is_blackjack(hand.cards, from_split=hand.from_split):
                    live = True
            if spot.insurance and not spot.insurance_settled:
                unsettled = True
            if not unsettled:  # a side bet still open (a loop: no generator to make)
                for wager in spot.wagers:
                    if wager != "main" and wager not in spot.side_settled:
                        unsettled = True
                        break
        rnd.players_live = live
        plays = live or any(bonus_16.BET in s.wagers for s in rnd.spots.values())
        if any(spot.ez_bust for spot in rnd.spots.values()) and not self._ez_bust_push():
            plays = True  # EZ Bust is decided by the dealer's hand played out
        rnd.dealer_plays = plays
        rnd.dealer_needs_second = unsettled or plays
        if len(rnd.dealer) >= 2:
            self._reveal()
        self._dealer_continue()

    def _hand_done(self, hand, count: HandTotal | None = None) -> bool:
        if hand.settled or hand.surrendered or hand.stood or hand.double_up:
            return True
        if len(hand.cards) < 2:
            return False
        if hand.double_down:
            return len(hand.cards) >= 3
        return self._counted_done(hand, count if count is not None else hand_total(hand.cards))

    def _counted_done(self, hand, count: HandTotal) -> bool:
        total = count.total
        if total > 21:  # bust (read without the property: a hot path)
            return True
        if total == 21:
            return not self._double_up_open(hand)
        if hand.split_aces and self.rules.split.split_aces_one_card:
            du = self.rules.double_up
            return not (du.offered and du.after_split_aces)
        return False

    def _advance(self, counted: HandTotal | None = None) -> None:
        rnd = self.state.round
        previous = rnd.in_action
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
                if previous and previous[0] != number:
                    self._light(action_light(previous[0]), "off")
                self._light(action_light(number), "on")
                self._out.append(self._hand_prompt(spot, index, count))
                return
        if previous:
            self._light(action_light(previous[0]), "off")
        rnd.in_action = None
        self._dealer_turn()

    def _lights_off(self) -> None:
        lights = self.state.lights
        out = self._out
        for name in list(lights):
            del lights[name]
            out.append(shared_light(name, "off"))

    def _hand_lines(self, hand, index, dealer, counted=None):
        player = self._player_hand(hand, index)  # every hand through its PlayerHand
        return _old_settle(player, dealer, self.rules, dealer_count=counted)

    def _pay_blackjacks(self, why: str) -> None:
        rnd = self.state.round
        up = rnd.dealer[0]
        for spot in rnd.spots.values():
            hand = spot.hands[0]
            if len(spot.hands) == 1 and not hand.settled and is_blackjack(hand.cards):
                self._prompt("blackjack", f"Spot {spot.number}: " + why.format(up=up), spot.number)
                hand.settled = True
                line = _old_settle(
                    PlayerHand(tuple(hand.cards), hand.wager), rnd.dealer, self.rules
                )
                for item in line:
                    self._settle(spot.number, item, 0)

    def _on_surrender(self, event: ev.Surrender) -> None:
        spot, index, hand = self._acting(event, "surrender")
        actions.check_surrender(
            self._hand_state(hand), self.rules, dealer_checked=self.state.round.dealer_checked
        )
        hand.surrendered = True
        hand.settled = True
        dealer = self.state.round.dealer
        for line in _old_settle(self._player_hand(hand, index), dealer, self.rules):
            self._settle(spot.number, line, index)
        self._advance()


# -- the event scripts: a legal round, with any event put in at random ---------------------

_SPOTS = 4
_AMOUNTS = (None, 0, 1, 100, 500, 1000, 2500, 5000, 10_000, 10**7, -500)
_WAGERS = (0, 1, 100, 500, 1000, 2500, 5000, 10**7, -100)


class Script:
    """Events for a table ``table`` (the one of the two that is read, never changed here):
    mostly what a dealer does next in a legal round (the bench's generator, with every
    choice the rules might refuse tried too), and with chance ``wild`` any table event."""

    def __init__(self, rules, table: Table, seed: int, wild: float):
        self.rules, self.table = rules, table
        self.rng = random.Random(seed)
        self.wild = wild
        self.spots = table.settings.spots
        self.source = table.settings.card_source
        self.queued: list[ev.Event] = []  # the camera's read of a card the shoe dealt
        self.circles = [*table_circles(rules), "ez_bust", "no_such_circle"]
        self.shoe: list = []
        self.t = 0

    # the shoe: mostly a real shoe's order, now and then a card already seen (foreign at 1 deck)
    def card(self) -> ev.CardDrawn:
        if not self.shoe:
            self.shoe = list(ALL_CARDS) * self.rules.shoe.decks
            self.rng.shuffle(self.shoe)
        rng = self.rng
        card = rng.choice(ALL_CARDS) if rng.random() < 0.03 else self.shoe.pop()
        if self.source == "camera":
            return ev.CardDrawn(card, "camera", t=self._t())
        if self.source == "both" and rng.random() < 0.95:  # now and then the camera misses
            seen = card if rng.random() < 0.95 else rng.choice(ALL_CARDS)
            self.queued.append(ev.CardDrawn(seen, "camera", t=self._t()))
        return ev.CardDrawn(card, t=self._t())

    def _t(self) -> int | None:
        r = self.rng.random()
        if r < 0.05:
            return None
        if r < 0.08:
            return max(0, self.t - self.rng.randint(1, 5000))  # a clock that went back
        self.t += self.rng.randint(1, 3000)
        return self.t

    def next_event(self) -> ev.Event:
        if self.queued and self.rng.random() < 0.9:
            return self.queued.pop(0)
        if self.rng.random() < self.wild:
            return self.any_event()
        return self.legal_event()

    def legal_event(self) -> ev.Event:
        state, rng = self.table.state, self.rng
        t = self._t()
        if state.pending:
            r = rng.random()
            if r < 0.15 and len(state.pending) < 3:
                return self.card()  # another card out before the decision: it waits too
            if r < 0.5:
                return ev.Burn(t=t)
            if r < 0.85:
                rnd = state.round
                spot = DEALER
                hand = 0
                if rnd is not None and rnd.spots and rng.random() < 0.8:
                    if state.phase is Phase.DEALING and rnd.deal_queue:
                        spot = rnd.deal_queue[0]
                    elif rnd.in_action is not None:
                        # the hand in action, or one after it (the hands between stand)
                        order = [
                            (s.number, i) for s in rnd.spots.values() for i in range(len(s.hands))
                        ]
                        spot, hand = rng.choice(order[order.index(rnd.in_action) :])
                return ev.Assign(spot, hand, t=t)
            if not state.supervisor_key:
                return ev.SupervisorKey(True, t=t)
            return ev.Misdeal(t=t)
        if state.awards and rng.random() < 0.3:  # a jackpot award waits for its hand pay
            award = next(iter(state.awards.values()))
            if rng.random() < 0.5:
                typed = award.amount if rng.random() < 0.8 else award.amount + 1
                return ev.ConfirmAward(award.award_id, t=t, by="sup", amount=typed)
            return ev.JackpotPaid(t=t) if state.supervisor_key else ev.SupervisorKey(True, t=t)
        if state.shoe_fault:
            return ev.ShoeEvent(rng.choice(("fault_cleared", "online")), t=t)
        if state.faults:
            active = [kind for kind, (_detail, on) in state.faults.items() if on]
            if not active or rng.random() < 0.3:
                return ev.ClearFaults(by="tech", t=t)
            if "link" in active and rng.random() < 0.5:
                return ev.JackpotLink(True, t=t)
            return ev.TableFault(rng.choice(active), "", False, t=t)
        if state.door_open:
            return ev.ShoeEvent("door_closed", t=t)
        phase = state.phase
        if phase is Phase.BETTING:
            if state.cut_card_out or (state.dealt == 0 and rng.random() < 0.5):
                self.shoe = []
                return ev.ShoeEvent(rng.choice(("shuffle", "new_shoe")), t=t)
            if state.burn_expected:
                return self.card()
            r = rng.random()
            spot = rng.randint(1, self.spots)
            if r < 0.45:
                circle = "main" if rng.random() < 0.6 else rng.choice(self.circles[:-2])
                return ev.BetSensor(spot, circle, rng.random() < 0.85, t=t)
            if r < 0.6:
                circle = "main" if rng.random() < 0.7 else rng.choice(self.circles[:-2])
                return ev.WagerAmount(spot, circle, rng.choice(_WAGERS[1:]), t=t)
            return ev.Lockout(t=t)
        if phase is Phase.DEALING or phase is Phase.DEALER:
            if rng.random() < 0.03:
                return ev.ShoeEvent("cut_card", t=t)
            return self.card()
        rnd = state.round
        if phase is Phase.INSURANCE or phase is Phase.EZ_BUST:
            r = rng.random()
            spot = rng.choice([*rnd.spots, rng.randint(0, self.spots + 1)])
            amount = rng.choice(_AMOUNTS) if rng.random() < 0.3 else None
            if r < 0.25:
                return ev.Insurance(spot, amount, t=t)
            if r < 0.45:
                naturals = [n for n, s in rnd.spots.items() if is_blackjack(s.hands[0].cards)]
                if naturals and rng.random() < 0.8:
                    spot = rng.choice(naturals)
                return ev.EvenMoney(spot, t=t)
            if r < 0.6:
                return ev.EzBust(spot, amount, t=t)
            if r < 0.7:
                return self.card()
            return ev.Next(t=t)
        if phase is Phase.PLAYERS:
            spot_no, index = rnd.in_action
            hand = rnd.spots[spot_no].hands[index]
            spot = IN_ACTION if rng.random() < 0.3 else spot_no
            amount = rng.choice(_AMOUNTS) if rng.random() < 0.2 else None
            if (len(hand.cards) < 2 or hand.double_down) and rng.random() < 0.85:
                return self.card()
            r = rng.random()
            if r < 0.12:
                return ev.Split(spot, t=t)
            if r < 0.2:
                return ev.Surrender(spot, t=t)
            if r < 0.3:
                return ev.Double(spot, amount, t=t)
            if r < 0.38:
                return ev.DoubleUp(spot, amount, t=t)
            if r < 0.65 and hand_total(hand.cards).total < 21:
                return self.card()
            return ev.Next(t=t)
        # settled: end the round, now and then something else first
        r = rng.random()
        if r < 0.05:
            return ev.VoidRound("test", t=t)
        if r < 0.1:
            return self.card()
        return ev.EndRound(t=t)

    def any_event(self) -> ev.Event:
        rng, state = self.rng, self.table.state
        t = self._t()
        spot = rng.randint(-1, self.spots + 2)
        amount = rng.choice(_AMOUNTS)
        card = rng.choice(ALL_CARDS)
        claims = list(state.claims.values()) + list(state.mystery_claims.values())
        awards = list(state.awards) + list(state.awards_closed)
        makers = [
            lambda: ev.BetSensor(spot, rng.choice(self.circles), rng.random() < 0.6, t=t),
            lambda: ev.WagerAmount(spot, rng.choice(self.circles), rng.choice(_WAGERS), t=t),
            lambda: ev.Lockout(t=t),
            lambda: ev.CardDrawn(card, rng.choice(("shoe", "camera")), t=t),
            lambda: ev.OutOfOrderCard(
                card, rng.randint(0, 255), rng.randint(0, 255), rng.random() < 0.5, t=t
            ),
            lambda: ev.Next(t=t),
            lambda: ev.Double(spot, amount, t=t),
            lambda: ev.Split(spot, amount, t=t),
            lambda: ev.Surrender(spot, amount, t=t),
            lambda: ev.Insurance(spot, amount, t=t),
            lambda: ev.EvenMoney(spot, amount, t=t),
            lambda: ev.EzBust(spot, amount, t=t),
            lambda: ev.DoubleUp(spot, amount, t=t),
            lambda: ev.EndRound(t=t),
            lambda: ev.VoidRound(rng.choice(("", "dealer error")), t=t),
            lambda: ev.Misdeal(t=t),
            lambda: ev.EnclosureDoor(rng.random() < 0.5, rng.random() < 0.3, t=t),
            lambda: ev.PowerLoss(rng.randint(0, 99), t=t),
            lambda: ev.JournalChange(rng.choice(("rotate", "restore")), by="tech", t=t),
            lambda: ev.SupervisorKey(rng.random() < 0.5, t=t),
            lambda: ev.Burn(t=t),
            lambda: ev.Assign(rng.randint(-1, self.spots + 1), rng.randint(-1, 3), t=t),
            lambda: ev.ShoeEvent(rng.choice(ev.SHOE_EVENTS), rng.choice(("", "jam")), t=t),
            lambda: ev.Tick(t=t),
            lambda: self.award(claims, t),
            lambda: ev.ConfirmAward(
                rng.choice([*awards, "A-none"]), t=t, by="sup", amount=rng.choice(_AMOUNTS)
            ),
            lambda: ev.JackpotPaid(t=t),
            lambda: ev.TableFault(rng.choice(ev.FAULT_KINDS), "x", rng.random() < 0.7, t=t),
            lambda: ev.ClearFaults(by="tech", t=t),
            lambda: ev.JackpotLink(rng.random() < 0.6, rng.choice((None, "timeout")), t=t),
            lambda: ev.AcknowledgeAlarm(rng.randint(0, state.alarm_seq + 1), by="tech", t=t),
            lambda: ev.LinkAlarm(rng.choice(("signature", "puback")), "x", t=t),
        ]
        return rng.choice(makers)()

    def award(self, claims, t) -> ev.JackpotAward:
        rng = self.rng
        state = rng.choice(ev.AWARD_STATES)
        award_id = f"A{rng.randint(1, 4)}"
        if claims and rng.random() < 0.7:
            claim = rng.choice(claims)
            return ev.JackpotAward(
                award_id,
                claim.round,
                claim.spot,
                claim.pool,
                rng.choice((1, 100, 5000)),
                claim.line,
                state,
                t=t,
                claim_key=rng.choice((claim.key, None, "bogus")),
            )
        return ev.JackpotAward(
            award_id,
            rng.randint(0, 5),
            rng.randint(0, 8),
            "bogus_pool",
            100,
            "line",
            state,
            t=t,
            claim_key=rng.choice((None, "round-1/spot-1/x/claim")),
        )


def _outcome(table: Table, event: ev.Event):
    try:
        return ("step", table.handle(event))
    except Exception as exc:  # an exception the refusals do not catch: both must raise it
        return ("raised", type(exc), str(exc))


def _differ(rules, table: TableSettings, seed: int, wild: float, events: int, seen=None) -> None:
    """Feed ``events`` events of a :class:`Script` to a table now and as it was; every step and
    the state after it equal. ``seen`` (a set) collects each phase an event arrived in and each
    kind of event accepted and refused."""
    now, before = Table(rules, table), BeforeAll(rules, table)
    script = Script(rules, now, seed, wild)
    for number in range(events):
        event = script.next_event()
        if seen is not None:
            seen.add(("phase", now.state.phase.value))
        mine, theirs = _outcome(now, event), _outcome(before, event)
        where = (number, event)
        assert mine == theirs, where
        assert now.state == before.state, where
        assert now.state.now == before.state.now, where
        assert now.snapshot() == before.snapshot(), where
        if seen is not None:
            kind = event.event if isinstance(event, ev.ShoeEvent) else event.TYPE
            accepted = mine[0] == "step" and mine[1].accepted
            seen.add((kind, "accepted" if accepted else "refused"))
        if mine[0] == "raised":
            return  # the state after an exception is no table's: the example ends here


# -- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("game", GAMES)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    wild=st.sampled_from([0.02, 0.08, 0.2, 0.5]),
    spots=st.integers(1, 7),
    source=st.sampled_from(["shoe", "shoe", "camera", "both"]),
)
def test_the_table_steps_as_the_forms_it_replaced(game, seed, wild, spots, source):
    table = TableSettings(spots=spots, card_source=source)
    _differ(load_game(game), table, seed, wild, 400)


def test_the_scripts_reach_every_phase_and_refusal():
    """How deep the scripts go: what a few fixed seeds reach, on every profile together."""
    seen: set[tuple[str, str]] = set()
    for game in GAMES:
        for seed, wild, source in (
            (1, 0.05, "shoe"),
            (2, 0.2, "both"),
            (3, 0.5, "camera"),
            (4, 0.1, "shoe"),
            (5, 0.1, "shoe"),
        ):
            table = TableSettings(spots=7, card_source=source)
            _differ(load_game(game), table, seed, wild, 800, seen)
    assert {phase.value for phase in Phase} <= {v for k, v in seen if k == "phase"}
    for kind in (
        "split",
        "double",
        "double_up",
        "surrender",
        "insurance",
        "even_money",
        "ez_bust",
        "card",
        "next",
        "lockout",
        "bet",
        "wager",
        "end_round",
        "void_round",
        "misdeal",
        "assign",
        "burn",
        "jackpot_award",
        "confirm_award",
        "jackpot_paid",
    ):
        assert (kind, "accepted") in seen, kind
        assert (kind, "refused") in seen, kind


# -- settle_hand as it was and as it is, on any hand ---------------------------------------

_CARDS = st.sampled_from(ALL_CARDS)
_RULES = {game: load_game(game) for game in GAMES}


def _answer(make, *args, **kwargs):
    try:
        return ("lines", [(type(line), line) for line in make(*args, **kwargs)])
    except Exception as exc:
        return ("error", type(exc), str(exc))


@settings(max_examples=600, deadline=None)
@given(
    game=st.sampled_from(GAMES),
    cards=st.lists(_CARDS, min_size=0, max_size=6),
    wager=st.sampled_from([1000, 2500, 1, 0, -5]),
    double_down=st.sampled_from([0, 0, 1000, 500]),
    double_up=st.sampled_from([0, 0, 1000]),
    from_split=st.booleans(),
    split_index=st.integers(0, 3),
    surrendered=st.booleans(),
    dealer=st.lists(_CARDS, min_size=0, max_size=5),
    counted=st.booleans(),
)
def test_settle_hand_answers_as_it_did(
    game,
    cards,
    wager,
    double_down,
    double_up,
    from_split,
    split_index,
    surrendered,
    dealer,
    counted,
):
    rules = _RULES[game]
    count = (hand_total(dealer), len(dealer) >= 2 and is_blackjack(dealer)) if counted else None

    def both(make):
        def settle(*args, **kwargs):
            hand = PlayerHand(
                tuple(cards), wager, double_down, double_up, from_split, split_index, surrendered
            )
            return make(hand, dealer, rules, dealer_count=count)

        return _answer(settle)

    assert both(settle_hand) == both(_old_settle)
    if not (double_down or double_up or from_split or split_index or surrendered):
        # the main wager alone: settle_main_wager, without the PlayerHand
        assert _answer(settle_main_wager, cards, wager, dealer, rules, dealer_count=count) == (
            both(_old_settle)
        )
