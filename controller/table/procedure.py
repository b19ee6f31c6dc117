"""The dealing procedure after lockout: the initial deal, the peek, the insurance and EZ Bust
windows. A part of :class:`controller.table.machine.Table`; the players' turn is in
:mod:`.players`, the dealer's turn and settlement in :mod:`.dealer_turn`, the prompts in
:mod:`.prompts`.

It reads ``self.rules`` and ``self.state`` and appends effects to ``self._out``. Handlers check
everything before they change anything, so a refused event leaves the state as it was.
"""

from __future__ import annotations

from controller.errors import ProcedureError, WagerError
from controller.rules import actions
from controller.rules.cards import Card
from controller.rules.hand import is_blackjack
from controller.rules.pays import format_cents
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
    BetResult,
    SideBetResult,
    blazing_7s,
    ez_bust,
    lucky_ladies,
    xtreme,
)
from controller.table import events as ev
from controller.table.effects import Later, Prompt, Settled
from controller.table.part import TablePart
from controller.table.state import DEALER, Phase, SpotInPlay
from controller.table.view import bet_name, settlement_prompt

SETTLED_KEPT = 4096
"""Settlement lines a table remembers with their prompts (:meth:`Procedure._settle`): a
replay of 1,000 seeded rounds makes 14,944 lines, 4,215 of them different."""


SIDE_LOST_KEPT = 1024
"""Losing side-bet lines a table remembers with their prompts
(:meth:`Procedure._settle_side_bet`)."""


class Procedure(TablePart):
    """The initial deal and the windows that follow it."""

    def _settle(
        self, spot: int, line: Settlement, hand: int | None = None, wager: str = ""
    ) -> None:
        """Emit one settled wager and the dealer's instruction for it.

        The same lines come again and again (a side bet lost at the same spot for the same
        stake, a main wager won 1 to 1): the two effects are made once and shared (they are
        immutable values), remembered by everything they are made of (at most
        :data:`SETTLED_KEPT` lines, then forgotten all at once)."""
        outcome = line.outcome._value_  # = .value, read without the enum's Python property
        key = (
            spot,
            wager or line.wager,
            line.stake,
            outcome,
            line.paid,
            line.returned,
            line.reason,
            hand,
            line.pays,
            line.meter,
            line.meter_pool,
        )
        made = self._settled_made
        pair = made.get(key)
        if pair is None:
            settled = Settled(
                spot,
                key[1],
                line.stake,
                outcome,
                line.paid,
                line.returned,
                line.reason,
                hand,
                str(line.pays) if line.pays is not None else None,
                str(line.meter) if line.meter is not None else None,
                line.meter_pool,
            )
            if len(made) >= SETTLED_KEPT:
                made.clear()
            # Its words are written when first read (a replay reads none of them).
            words = Later(settlement_prompt, settled)
            pair = made[key] = (settled, Prompt("pay", words, spot))  # type: ignore[arg-type]
        self._out.extend(pair)

    def _settle_side_bet(
        self, spot: int, stake: int, result: SideBetResult, wager: str = ""
    ) -> None:
        """Settle a side bet's ``result`` on the terms of the rules
        (:func:`~controller.rules.settlement.settle_offered_side_bet`) with :meth:`_settle`.

        Most side bets lose: a losing line's effects are remembered per table by everything
        they are made of (the spot, the wager, the bet, a plain int stake and the result's
        words; at most :data:`SIDE_LOST_KEPT`, then forgotten at once) and shared."""
        if result.result is not BetResult.LOSE or type(stake) is not int:
            self._settle(spot, settle_offered_side_bet(stake, result, self.rules), wager=wager)
            return
        key = (spot, wager, result.bet, stake, result.outcome, result.label)
        made = self._side_lost
        effects = made.get(key)
        if effects is None:
            out = self._out
            start = len(out)
            self._settle(spot, settle_offered_side_bet(stake, result, self.rules), wager=wager)
            if len(made) >= SIDE_LOST_KEPT:
                made.clear()
            made[key] = tuple(out[start:])
        else:
            self._out.extend(effects)

    def _deal_to(self, recipient: int, card: Card) -> None:
        rnd = self.state.round
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
        rules, rnd = self.rules, self.state.round
        up = rnd.dealer[0]
        can_have_blackjack = up.value in (1, 10)
        for spot in rnd.spots.values():
            spot.first_two = tuple(spot.hands[0].cards)
        for spot in rnd.spots.values():
            if len(spot.wagers) > 1:  # a main wager alone has no side bet to settle
                self._settle_card_bets(spot, up, can_have_blackjack)
        naturals = []  # [s.number for s in rnd.spots.values() if is_blackjack(s.hands[0].cards)]
        for spot in rnd.spots.values():
            first, second = spot.hands[0].cards  # two cards each, the deal just ended
            a, b = first.points, second.points
            if (a == 1 and b == 10) or (a == 10 and b == 1):  # is_blackjack, without its call
                naturals.append(spot.number)
        if not can_have_blackjack:
            rnd.dealer_checked = True
            if rules.blackjack.paid_at_once_against_2_to_9:
                self._pay_blackjacks(
                    "Blackjack against {up}: pay 3 to 2 now and remove the cards", naturals
                )
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
            self._settle_side_bet(spot.number, stake, result)

    def _pay_blackjacks(self, why: str, naturals: list[int] | None = None) -> None:
        """Pay each unsplit, unsettled natural. ``naturals``: the spots whose first hand is a
        natural, where the caller has just asked (right after the deal, before any
        decision), else each hand is asked here."""
        rnd = self.state.round
        up = rnd.dealer[0]
        if naturals is not None and not naturals:
            return
        for spot in rnd.spots.values():
            hand = spot.hands[0]
            if (
                len(spot.hands) == 1
                and not hand.settled
                and (spot.number in naturals if naturals is not None else is_blackjack(hand.cards))
            ):
                self._prompt("blackjack", f"Spot {spot.number}: " + why.format(up=up), spot.number)
                hand.settled = True
                line = settle_hand(
                    PlayerHand(tuple(hand.cards), hand.wager), rnd.dealer, self.rules
                )
                for item in line:
                    self._settle(spot.number, item, 0)

    def _check_dealer_blackjack(self) -> None:
        """The peek (where the profile has one), then the players' turn."""
        rnd, rules = self.state.round, self.rules
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
        for spot in self.state.round.spots.values():
            if spot.insurance and not spot.insurance_settled:
                spot.insurance_settled = True
                self._settle(
                    spot.number, settle_insurance(spot.insurance, dealer_blackjack, self.rules)
                )

    def _settle_lucky_ladies(self, dealer_blackjack: bool) -> None:
        section = self.rules.side_bets.lucky_ladies
        for spot in self.state.round.spots.values():
            stake = spot.wagers.get(lucky_ladies.BET)
            if section is not None and stake and lucky_ladies.BET not in spot.side_settled:
                spot.side_settled.add(lucky_ladies.BET)
                result = lucky_ladies.evaluate(spot.first_two, dealer_blackjack, section)
                self._settle_side_bet(spot.number, stake, result)

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
        spot = self.state.round.spots.get(event.spot)
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
        actions.check_even_money(hand.cards, self.state.round.dealer[0], self.rules)
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
