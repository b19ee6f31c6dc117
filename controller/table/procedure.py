"""The dealing procedure after lockout: initial deal, peek, insurance and EZ Bust
windows, player actions, the dealer's turn and settlement.

A mixin of :class:`controller.table.machine.Table`; it reads ``self.rules`` and
``self.state`` and appends effects to ``self._out``. Handlers check everything
before they change anything, so a refused event leaves the state as it was.
"""

from __future__ import annotations

from typing import Any

from controller.errors import ProcedureError, WagerError
from controller.rules import actions
from controller.rules.actions import HandState
from controller.rules.cards import Card
from controller.rules.hand import dealer_must_hit, hand_total, is_blackjack
from controller.rules.pays import format_cents
from controller.rules.profile import HouseRules
from controller.rules.settlement import (
    PlayerHand,
    Settlement,
    check_insurance,
    insurance_limit,
    settle_even_money,
    settle_hand,
    settle_insurance,
    settle_offered_side_bet,
)
from controller.rules.sidebets import (
    blackjack_tie,
    blazing_7s,
    bonus_16,
    ez_bust,
    lucky_ladies,
    xtreme,
)
from controller.table import events as ev
from controller.table.effects import (
    Alarm,
    AlarmCleared,
    Effect,
    Light,
    Prompt,
    Publish,
    Record,
    Settled,
)
from controller.table.settings import TableSettings
from controller.table.state import (
    DEALER,
    IN_ACTION,
    HandInPlay,
    Phase,
    RoundState,
    SpotInPlay,
    TableState,
)
from controller.table.view import bet_name, pool_name, settlement_prompt

_UNRECALLED = (Record, AlarmCleared)
"""Effects a round's recall record leaves out: the journal's own records, and alarms clearing
by themselves."""


def _settled_words(rnd: RoundState) -> str:
    """The prompt of a settled round (void: every wager goes back)."""
    if rnd.void:
        return f"Round {rnd.number} void: return every wager, then press end round"
    return f"Round {rnd.number} settled: pay and collect, then press end round"


def _where(spot: int, hand: int, spot_hands: int) -> str:
    return f"spot {spot}" + (f" hand {hand + 1}" if spot_hands > 1 else "")


class Procedure:
    rules: HouseRules
    settings: TableSettings
    state: TableState
    _out: list[Effect]
    _event: ev.Event | None

    # -- small helpers ------------------------------------------------------

    @property
    def _round(self) -> RoundState:
        rnd = self.state.round
        assert rnd is not None
        return rnd

    def _prompt(self, code: str, text: str, spot: int | None = None) -> None:
        self._out.append(Prompt(code, text, spot))

    def _alarm(
        self, code: str, text: str, action: str, spot: int | None = None, about: str | None = None
    ) -> None:
        self._out.append(Alarm(code, text, action, spot, about))

    def _light(self, name: str, state: str) -> None:
        lights = self.state.lights
        if lights.get(name, "off") != state:
            if state == "off":
                lights.pop(name, None)
            else:
                lights[name] = state
            self._out.append(Light(name, state))

    def _hand(self, spot: int, hand: int) -> HandInPlay:
        return self._round.spots[spot].hands[hand]

    def _hand_state(self, hand: HandInPlay) -> HandState:
        return HandState(
            tuple(hand.cards),
            hand.wager,
            hand.from_split,
            hand.split_aces,
            hand.double_down,
            hand.double_up,
        )

    def _settle(
        self, spot: int, line: Settlement, hand: int | None = None, wager: str = ""
    ) -> None:
        """Emit one settled wager and the dealer's instruction for it."""
        settled = Settled(
            spot,
            wager or line.wager,
            line.stake,
            line.outcome.value,
            line.paid,
            line.returned,
            line.reason,
            hand,
            str(line.pays) if line.pays is not None else None,
            str(line.meter) if line.meter is not None else None,
            line.meter_pool,
        )
        self._out.append(settled)
        self._prompt("pay", settlement_prompt(settled), spot)

    # -- the initial deal ---------------------------------------------------

    def _deal_to(self, recipient: int, card: Card) -> None:
        rnd = self._round
        rnd.deal_queue.remove(recipient)
        if recipient == DEALER:
            rnd.dealer.append(card)
            if len(rnd.dealer) == 2:
                self._prompt("hole_card", "Hole card dealt face down")
        else:
            rnd.spots[recipient].hands[0].cards.append(card)
        if not rnd.deal_queue:
            self._after_initial_deal()

    def _after_initial_deal(self) -> None:
        rules, rnd = self.rules, self._round
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

    def _settle_card_bets(self, spot: SpotInPlay, up: Card, can_have_blackjack: bool) -> None:
        """Side bets decided by the first two cards and the up card, settled after the deal."""
        bets = self.rules.side_bets
        for wager, stake in spot.wagers.items():
            if wager == xtreme.BET and bets.twenty_one_plus_three_xtreme is not None:
                result = xtreme.evaluate(spot.first_two, up, bets.twenty_one_plus_three_xtreme)
            elif wager == blazing_7s.BET and bets.blazing_7s is not None:
                result = blazing_7s.evaluate(spot.first_two, up, bets.blazing_7s)
            elif wager == lucky_ladies.BET and bets.lucky_ladies and not can_have_blackjack:
                result = lucky_ladies.evaluate(spot.first_two, False, bets.lucky_ladies)
            else:
                continue
            spot.side_settled.add(wager)
            self._settle(spot.number, settle_offered_side_bet(stake, result, self.rules))

    def _pay_blackjacks(self, why: str) -> None:
        rnd = self._round
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

    def _check_dealer_blackjack(self) -> None:
        """The peek (where the profile has one), then the players' turn."""
        rnd, rules = self._round, self.rules
        up = rnd.dealer[0]
        if up.value in (1, 10) and rules.dealer.peek == "electronic" and len(rnd.dealer) == 2:
            if is_blackjack(rnd.dealer):
                self._prompt("dealer_blackjack", "Dealer has blackjack")
                self._reveal()
                rnd.players_live = False
                self._settle_round()
                return
            rnd.dealer_checked = True
            self._prompt("dealer_checked", "Dealer does not have blackjack")
            self._settle_insurance(dealer_blackjack=False)
            self._pay_blackjacks("Blackjack: pay 3 to 2 and remove the cards")
            self._settle_lucky_ladies(dealer_blackjack=False)
        self._start_players()

    def _settle_insurance(self, dealer_blackjack: bool) -> None:
        for spot in self._round.spots.values():
            if spot.insurance and not spot.insurance_settled:
                spot.insurance_settled = True
                self._settle(
                    spot.number, settle_insurance(spot.insurance, dealer_blackjack, self.rules)
                )

    def _settle_lucky_ladies(self, dealer_blackjack: bool) -> None:
        section = self.rules.side_bets.lucky_ladies
        for spot in self._round.spots.values():
            stake = spot.wagers.get(lucky_ladies.BET)
            if section is not None and stake and lucky_ladies.BET not in spot.side_settled:
                spot.side_settled.add(lucky_ladies.BET)
                result = lucky_ladies.evaluate(spot.first_two, dealer_blackjack, section)
                self._settle(spot.number, settle_offered_side_bet(stake, result, self.rules))

    # -- windows: insurance, even money, EZ Bust -----------------------------

    def _close_insurance(self) -> None:
        self._prompt("insurance_closed", "Insurance closed")
        self._check_dealer_blackjack()

    def _close_ez_bust(self) -> None:
        self._prompt("ez_bust_closed", "EZ Bust closed")
        self._start_players()

    def _window_spot(self, event: ev.SpotAction, phase: Phase, what: str) -> SpotInPlay:
        state = self.state
        if state.phase is not phase:
            if phase is Phase.INSURANCE:
                raise ProcedureError(
                    f"{what} refused: the insurance window is not open (it opens only when the "
                    "dealer shows an ace, after the initial deal, and closes at the next card)"
                )
            raise ProcedureError(
                f"{what} refused: the EZ Bust offer is not open (it opens only when the dealer "
                "shows 2-6, after the initial deal, and closes at the first player card)"
            )
        spot = self._round.spots.get(event.spot)
        if spot is None:
            raise ProcedureError(f"{what} refused: spot {event.spot} has no main wager this round")
        return spot

    def _on_insurance(self, event: ev.Insurance) -> None:
        spot = self._window_spot(event, Phase.INSURANCE, "insurance")
        if not self.rules.insurance.offered:
            raise ProcedureError("insurance refused: this game offers no insurance")
        if spot.insurance or spot.even_money:
            raise ProcedureError(
                f"insurance refused: spot {spot.number} already has insurance or even money"
            )
        wager = spot.hands[0].wager
        amount = event.amount if event.amount is not None else insurance_limit(wager, self.rules)
        check_insurance(wager, amount, self.rules)
        spot.insurance = amount
        self._prompt("insurance", f"Spot {spot.number} insures {format_cents(amount)}", spot.number)

    def _on_even_money(self, event: ev.EvenMoney) -> None:
        spot = self._window_spot(event, Phase.INSURANCE, "even money")
        if spot.insurance or spot.even_money:
            raise ProcedureError(
                f"even money refused: spot {spot.number} already has insurance or even money"
            )
        hand = spot.hands[0]
        actions.check_even_money(hand.cards, self._round.dealer[0], self.rules)
        spot.even_money = True
        hand.settled = True
        self._settle(spot.number, settle_even_money(hand.wager), 0)

    def _on_ez_bust(self, event: ev.EzBust) -> None:
        section = self.rules.side_bets.ez_bust
        if section is None:
            raise ProcedureError("EZ Bust refused: this game offers no EZ Bust wager")
        spot = self._window_spot(event, Phase.EZ_BUST, "EZ Bust")
        if spot.ez_bust:
            raise ProcedureError(
                f"EZ Bust refused: spot {spot.number} already has an EZ Bust wager"
            )
        amount = event.amount if event.amount is not None else self.settings.side_minimum
        self._check_side_amount("ez_bust", amount)
        spot.ez_bust = amount
        self._prompt("ez_bust", f"Spot {spot.number} EZ Bust {format_cents(amount)}", spot.number)

    def _check_side_amount(self, circle: str, amount: int) -> None:
        low, high = self.settings.side_minimum, self.settings.side_maximum
        if not low <= amount <= high:
            raise WagerError(
                f"{bet_name(circle)} of {format_cents(amount)} is outside the table's side-bet "
                f"limits {format_cents(low)} to {format_cents(high)}"
            )

    # -- the players' turn ------------------------------------------------------

    def _start_players(self) -> None:
        self.state.phase = Phase.PLAYERS
        self._advance()

    def _hand_done(self, hand: HandInPlay) -> bool:
        if hand.settled or hand.surrendered or hand.stood or hand.double_up:
            return True
        if len(hand.cards) < 2:
            return False
        if hand.double_down:
            return len(hand.cards) >= 3
        count = hand_total(hand.cards)
        if count.is_bust:
            return True
        if count.total == 21:
            # a split hand's two-card 21 is no natural: it stays open for its Double Up
            # (seed 003 rule 4, "on any 2-card hand, including split hands")
            return not self._double_up_open(hand)
        if hand.split_aces and self.rules.split.split_aces_one_card:
            du = self.rules.double_up
            return not (du.offered and du.after_split_aces)
        return False

    def _double_up_open(self, hand: HandInPlay) -> bool:
        """Whether ``hand`` may still make its Double Up wager (of its own wager's size)."""
        return actions.double_up_refusal(self._hand_state(hand), hand.wager, self.rules) is None

    def _advance(self) -> None:
        """Put the first unfinished hand in action, or start the dealer's turn. It runs after
        every card and decision of the players' turn, so the hand in action is prompted each
        time with its total as it is now and only the choices the rules allow now."""
        rnd = self._round
        previous = rnd.in_action
        # Hands before the one in action are done, and stay done (cards go only to the hand
        # in action; a split starts the search afresh): the search starts at it.
        start_spot, start_index = previous if previous is not None else (None, 0)
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
                if self._hand_done(hand):
                    continue
                rnd.in_action = (spot.number, index)
                if previous and previous[0] != spot.number:
                    self._light(f"spot{previous[0]}.action", "off")
                self._light(f"spot{spot.number}.action", "on")
                self._out.append(self._hand_prompt(spot, index))
                return
        if previous:
            self._light(f"spot{previous[0]}.action", "off")
        rnd.in_action = None
        self._dealer_turn()

    def _hand_prompt(self, spot: SpotInPlay, index: int) -> Prompt:
        """What the hand in action needs: its next card, or a decision on its total as it is
        now (``soft 17`` as the rule cards write it) among the choices the rules allow now."""
        hand = spot.hands[index]
        where = _where(spot.number, index, len(spot.hands))
        if len(hand.cards) < 2:
            return Prompt("deal_card", f"Deal {where} its second card", spot.number)
        if hand.double_down:
            return Prompt("deal_card", f"Deal {where} its double-down card", spot.number)
        choices = ", ".join(self._choices(spot, hand))
        total = hand_total(hand.cards)
        count = f"soft {total.total}" if total.soft else str(total.total)
        return Prompt("action", f"{where.capitalize()} to act on {count}: {choices}", spot.number)

    def prompt_now(self) -> Prompt:
        """The one thing the dealer must do now, from the state alone (the dealer display's
        headline: it never goes stale, whatever event came last). It names no card that
        could be the hole card."""
        state, rnd = self.state, self.state.round
        if state.pending:
            return Prompt(
                "decide",
                f"{self._pending_sentence()} waits for a decision: burn it, "
                "assign it, or call a misdeal (supervisor key)",
            )
        phase = state.phase
        between = phase is Phase.BETTING or rnd is None or phase is Phase.SETTLED
        if state.awards and between:  # a jackpot hand pay waits (issue 28 item 2)
            return self._award_prompt()
        if phase is Phase.BETTING or rnd is None:
            if state.cut_card_out or state.shuffle_pending:
                return Prompt("shuffle_now", "The cut card is out: shuffle before the next round")
            if state.burn_expected:
                return Prompt("shuffled", "Shoe shuffled: burn one card")
            return Prompt("place_bets", f"Place your bets: round {state.round_number}")
        if phase is Phase.DEALING:
            who = rnd.deal_queue[0]
            if who == DEALER:
                card = "up card" if not rnd.dealer else "hole card, face down"
                return Prompt("deal", f"Deal the dealer's {card}")
            if not rnd.dealer and not any(s.hands[0].cards for s in rnd.spots.values()):
                return Prompt("deal", f"No more bets: deal spot {who} first", who)
            nth = "first" if not rnd.spots[who].hands[0].cards else "second"
            return Prompt("deal", f"Deal spot {who} its {nth} card", who)
        if phase is Phase.INSURANCE:
            offers = ["insurance"] if self.rules.insurance.offered else []
            if self.rules.blackjack.even_money and any(
                is_blackjack(spot.hands[0].cards) and not spot.even_money
                for spot in rnd.spots.values()
            ):
                offers.append("even money")
            what = " and ".join(offers) or "no bets"
            return Prompt("insurance_open", f"Dealer shows an ace: take {what}, then press next")
        if phase is Phase.EZ_BUST:
            return Prompt(
                "ez_bust_open",
                f"Dealer shows {rnd.dealer[0]}: take EZ Bust bets, then press next",
            )
        if phase is Phase.PLAYERS and rnd.in_action is not None:
            spot_no, index = rnd.in_action
            return self._hand_prompt(rnd.spots[spot_no], index)
        if phase is Phase.DEALER:
            if len(rnd.dealer) < 2:
                return Prompt("dealer_draws", "Deal the dealer's second card")
            return Prompt("dealer_draws", f"Dealer draws on {hand_total(rnd.dealer).total}")
        return Prompt("round_settled", _settled_words(rnd))

    def _award_prompt(self) -> Prompt:
        """The oldest award waiting for its hand pay: what the JACKPOT PAID button confirms
        once the supervisor key is on."""
        state = self.state
        award = next(iter(state.awards.values()))
        what = (
            f"award {award.award_id}: spot {award.spot} {pool_name(award.pool)} "
            f"{format_cents(award.amount)} hand pay"
        )
        more = len(state.awards) - 1
        after = f" ({more} more waiting after it)" if more else ""
        if state.supervisor_key:
            return Prompt("jackpot_paid_ready", f"JACKPOT PAID confirms {what}{after}", award.spot)
        return Prompt(
            "jackpot_hand_pay",
            f"Jackpot {what} waits{after}: call the supervisor (key on, then JACKPOT PAID)",
            award.spot,
        )

    def _choices(self, spot: SpotInPlay, hand: HandInPlay) -> list[str]:
        """The decisions the rules allow ``hand`` now, in the console's order (stand after
        hit): asked without raising, as every prompt of the players' turn lists them."""
        rules, state, wager = self.rules, self._hand_state(hand), hand.wager
        out = []
        if actions.hit_refusal(state, rules) is None:
            out.append("hit")
        if actions.double_refusal(state, wager, rules) is None:
            out.append("double")
        if actions.split_refusal(state, len(spot.hands), rules) is None:
            out.append("split")
        if (
            actions.surrender_refusal(state, rules, dealer_checked=self._round.dealer_checked)
            is None
        ):
            out.append("surrender")
        if actions.double_up_refusal(state, wager, rules) is None:
            out.append("Double Up")
        out.insert(1 if out and out[0] == "hit" else 0, "stand")
        return out

    def _takes_card(self, hand: HandInPlay) -> bool:
        if len(hand.cards) < 2 or (hand.double_down and len(hand.cards) == 2):
            return True
        return actions.hit_refusal(self._hand_state(hand), self.rules) is None

    def _give(self, spot_no: int, index: int, card: Card) -> None:
        """A card to a player's hand in action (second card of a split hand, hit or double)."""
        spot = self._round.spots[spot_no]
        hand = spot.hands[index]
        hand.cards.append(card)
        count = hand_total(hand.cards)
        if count.is_bust:
            where = _where(spot_no, index, len(spot.hands))
            self._prompt("bust", f"{where.capitalize()} breaks with {count.total}", spot_no)
            hand.settled = True
            for line in settle_hand(self._player_hand(hand, index), self._round.dealer, self.rules):
                self._settle(spot_no, line, index)
        self._advance()

    def _player_hand(self, hand: HandInPlay, index: int) -> PlayerHand:
        return PlayerHand(
            tuple(hand.cards),
            hand.wager,
            hand.double_down,
            hand.double_up,
            hand.from_split,
            index,
            hand.surrendered,
        )

    def _acting(self, event: ev.SpotAction, what: str) -> tuple[SpotInPlay, int, HandInPlay]:
        phase = self.state.phase
        if phase is Phase.INSURANCE:
            raise ProcedureError(f"{what} refused: insurance is open; press next to close it first")
        if phase is Phase.EZ_BUST:
            raise ProcedureError(
                f"{what} refused: the EZ Bust offer is open; press next to close it first"
            )
        if phase is not Phase.PLAYERS:
            raise ProcedureError(
                f"{what} refused: no player is in action now ({phase.value.replace('_', ' ')})"
            )
        rnd = self._round
        assert rnd.in_action is not None
        spot_no, index = rnd.in_action
        if event.spot not in (spot_no, IN_ACTION):
            raise ProcedureError(
                f"{what} refused: spot {event.spot} is not in action; spot {spot_no} is"
            )
        spot = rnd.spots[spot_no]
        return spot, index, spot.hands[index]

    def _on_double(self, event: ev.Double) -> None:
        spot, index, hand = self._acting(event, "double down")
        amount = event.amount if event.amount is not None else hand.wager
        actions.check_double(self._hand_state(hand), amount, self.rules)
        hand.double_down = amount
        where = _where(spot.number, index, len(spot.hands))
        self._prompt(
            "double",
            f"{where.capitalize()} doubles for {format_cents(amount)}: deal one card",
            spot.number,
        )

    def _on_double_up(self, event: ev.DoubleUp) -> None:
        spot, index, hand = self._acting(event, "Double Up")
        amount = event.amount if event.amount is not None else hand.wager
        actions.check_double_up(self._hand_state(hand), amount, self.rules)
        hand.double_up = amount
        where = _where(spot.number, index, len(spot.hands))
        self._prompt(
            "double_up",
            f"{where.capitalize()} Double Up {format_cents(amount)}: the hand stands",
            spot.number,
        )
        self._advance()

    def _on_split(self, event: ev.Split) -> None:
        spot, index, hand = self._acting(event, "split")
        actions.check_split(self._hand_state(hand), len(spot.hands), self.rules)
        first, second = hand.cards
        aces = first.value == 1
        hand.cards = [first]
        hand.from_split = True
        hand.split_aces = aces
        spot.hands.insert(
            index + 1, HandInPlay([second], hand.wager, from_split=True, split_aces=aces)
        )
        self._prompt(
            "split",
            f"Spot {spot.number} splits {first} {second} into {len(spot.hands)} hands: "
            f"{format_cents(hand.wager)} on the new hand",
            spot.number,
        )
        self._round.in_action = None  # the prompt for the first hand's second card follows
        self._advance()

    def _on_surrender(self, event: ev.Surrender) -> None:
        spot, index, hand = self._acting(event, "surrender")
        actions.check_surrender(
            self._hand_state(hand), self.rules, dealer_checked=self._round.dealer_checked
        )
        hand.surrendered = True
        hand.settled = True
        for line in settle_hand(self._player_hand(hand, index), self._round.dealer, self.rules):
            self._settle(spot.number, line, index)
        self._advance()

    def _stand(self) -> None:
        rnd = self._round
        assert rnd.in_action is not None
        spot_no, index = rnd.in_action
        hand = self._hand(spot_no, index)
        if len(hand.cards) < 2 or hand.double_down:
            raise ProcedureError(
                f"stand refused: spot {spot_no} is waiting for a card "
                f"({'double down' if hand.double_down else 'split hand'})"
            )
        hand.stood = True
        where = _where(spot_no, index, len(rnd.spots[spot_no].hands))
        self._prompt("stand", f"{where.capitalize()} stands on {hand.total}", spot_no)
        self._advance()

    # -- the dealer's turn and settlement ----------------------------------------

    def _reveal(self) -> None:
        rnd = self._round
        rnd.hole_revealed = True
        total = hand_total(rnd.dealer)
        cards = " ".join(map(str, rnd.dealer))
        self._prompt("dealer_reveals", f"Dealer turns the hole card: {cards}, {total.total}")

    def _dealer_turn(self) -> None:
        state, rnd = self.state, self._round
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
            if any(w not in spot.side_settled for w in spot.wagers if w != "main"):
                unsettled = True
        rnd.players_live = live
        plays = live or any(bonus_16.BET in s.wagers for s in rnd.spots.values())
        if any(spot.ez_bust for spot in rnd.spots.values()) and not self._ez_bust_push():
            plays = True  # EZ Bust is decided by the dealer's hand played out
        rnd.dealer_plays = plays
        rnd.dealer_needs_second = unsettled or plays
        if len(rnd.dealer) >= 2:
            self._reveal()
        self._dealer_continue()

    def _ez_bust_push(self) -> bool:
        """Whether "all players' hands bust" (seed 000), so the dealer does not play on for EZ
        Bust and its wagers push; ``[side_bets.ez_bust] dealer_plays_out`` says which hands
        count. A blackjack already paid is never a bust."""
        section = self.rules.side_bets.ez_bust
        reading = section.dealer_plays_out if section is not None else "for_open_hands"
        rnd = self._round
        if reading == "for_open_hands":
            return not rnd.players_live
        hands = [hand for spot in rnd.spots.values() for hand in spot.hands]
        if reading == "unless_all_bust_or_surrendered":
            return all(hand.busted or hand.surrendered for hand in hands)
        return all(hand.busted for hand in hands)

    def _dealer_needs_card(self) -> bool:
        rnd = self._round
        if len(rnd.dealer) < 2:
            return rnd.dealer_needs_second
        return rnd.dealer_plays and dealer_must_hit(
            rnd.dealer,
            hit_soft_17=self.rules.dealer.hit_soft_17,
            stop_on_16=self.rules.dealer.ends_on_16,
        )

    def _dealer_card(self, card: Card) -> None:
        rnd = self._round
        rnd.dealer.append(card)
        if len(rnd.dealer) == 2 and not rnd.hole_revealed:
            self._reveal()
        self._dealer_continue()

    def _dealer_continue(self) -> None:
        rnd = self._round
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
                if total.is_bust
                else f"Dealer stands on {total.total}",
            )
        self._settle_round()

    def _settle_round(self) -> None:
        _state, rnd, rules = self.state, self._round, self.rules
        dealer = tuple(rnd.dealer)
        dealer_bj = len(dealer) >= 2 and is_blackjack(dealer)
        bets = rules.side_bets
        self._settle_insurance(dealer_bj)
        for spot in rnd.spots.values():
            for index, hand in enumerate(spot.hands):
                if not hand.settled:
                    hand.settled = True
                    for line in settle_hand(self._player_hand(hand, index), dealer, rules):
                        self._settle(spot.number, line, index)
            for wager, stake in spot.wagers.items():
                if wager == "main" or wager in spot.side_settled:
                    continue
                spot.side_settled.add(wager)
                if wager == lucky_ladies.BET and bets.lucky_ladies is not None:
                    result = lucky_ladies.evaluate(spot.first_two, dealer_bj, bets.lucky_ladies)
                elif wager == bonus_16.BET and bets.bonus_16 is not None:
                    result = bonus_16.evaluate(dealer, bets.bonus_16)
                elif wager.startswith(blackjack_tie.BET + ".") and bets.blackjack_tie is not None:
                    first = spot.hands[0]
                    result = blackjack_tie.evaluate(
                        wager.split(".", 1)[1],
                        first.cards,
                        dealer,
                        bets.blackjack_tie,
                        player_from_split=first.from_split,
                        surrendered=first.surrendered,
                    )
                else:  # pragma: no cover - lockout latches only offered circles
                    raise WagerError(f"no settlement for {wager}")
                self._settle(
                    spot.number, settle_offered_side_bet(stake, result, rules), wager=wager
                )
            if spot.ez_bust and bets.ez_bust is not None:
                result = ez_bust.evaluate(
                    dealer, all_player_hands_busted=self._ez_bust_push(), rules=bets.ez_bust
                )
                self._settle(spot.number, settle_offered_side_bet(spot.ez_bust, result, rules))
        self._finish_round()

    def _hit_claim(self, line: dict[str, Any]) -> Publish:
        """The claim of one settled meter line (``Settled.to_dict()``)."""
        rnd = self._round
        spot = line["spot"]
        return Publish(
            "hit_claim",
            f"round-{rnd.number}/spot-{spot}/{line['wager']}/claim",
            {
                "round": rnd.number,
                "game": self.rules.name,
                "spot": spot,
                "wager": line["wager"],
                "pool": line["pool"],
                "stake": line["stake"],
                "line": line["reason"],
                "meter": line["meter"],
                "cards": [str(c) for c in rnd.spots[spot].first_two],
                "up_card": str(rnd.dealer[0]),
            },
        )

    def _finish_round(self) -> None:
        """Round settled (or void): publish the result, write the recall record."""
        state, rnd = self.state, self._round
        state.phase = Phase.SETTLED
        rnd.in_action = None
        rnd.settled_t = state.now
        recalled = [
            e for e in (*state.round_effects, *self._out) if not isinstance(e, _UNRECALLED)
        ]
        written = [e.to_dict() for e in recalled]  # once each: the lines and the record share
        lines = [d for e, d in zip(recalled, written, strict=True) if isinstance(e, Settled)]
        so_far = len(self._out)
        result = {
            "round": rnd.number,
            "game": self.rules.name,
            "void": rnd.void or None,
            "dealer": [str(c) for c in rnd.dealer],
            "spots": [
                {
                    "spot": spot.number,
                    "first_two": [str(c) for c in spot.first_two],
                    "hands": [[str(c) for c in hand.cards] for hand in spot.hands],
                }
                for spot in rnd.spots.values()
            ],
            "settlements": lines,
            "stake": sum(line["stake"] for line in lines),
            "paid": sum(line["paid"] for line in lines),
            "returned": sum(line["returned"] for line in lines),
        }
        self._out.append(Publish("round_result", f"round-{rnd.number}/result", result))
        # The meter lines are claimed after the result that holds their cards: the jackpot
        # controller checks a claim's cards against the round's reported result.
        for line in lines:
            if line.get("meter") is not None:
                self._out.append(self._hit_claim(line))
        self._prompt("round_settled", _settled_words(rnd))
        events = [*state.carried, *state.log]
        if self._event is not None:
            events.append(self._event)
        record: dict[str, Any] = {
            "round": rnd.number,
            "game": self.rules.name,
            "table": self.settings.to_dict(),
            "started_t": rnd.started_t,
            "settled_t": rnd.settled_t,
            "void": rnd.void or None,
            "dealer": result["dealer"],
            "events": [e.to_dict() for e in events],
            "effects": written
            + [e.to_dict() for e in self._out[so_far:] if not isinstance(e, _UNRECALLED)],
            "result": result,
        }
        self._out.append(Record("round", record))
