"""The dealer's turn and settlement: the hole card revealed, the dealer's draws, every wager
settled, the round's result, hit claims and recall record. A part of
:class:`controller.table.machine.Table`."""

from __future__ import annotations

import operator
from typing import Any

from controller.errors import WagerError
from controller.rules.cards import Card
from controller.rules.hand import HandTotal, dealer_must_hit, hand_total, is_blackjack
from controller.rules.sidebets import blackjack_tie, bonus_16, ez_bust, lucky_ladies
from controller.table.effects import AlarmCleared, Effect, Publish, Record, Settled
from controller.table.events import Event
from controller.table.part import TablePart
from controller.table.prompts import settled_words
from controller.table.state import Phase

_cards_of = operator.attrgetter("cards")
"""A hand's cards (read in C, for each hand of a settled round)."""

_UNRECALLED = (Record, AlarmCleared)
"""Effects a round's recall record leaves out: the journal's own records, and alarms clearing
by themselves."""


class DealerTurn(TablePart):
    """The dealer's hand played out, then every wager settled."""

    def _reveal(self) -> None:
        rnd = self.state.round
        rnd.hole_revealed = True
        total = hand_total(rnd.dealer)
        cards = " ".join(map(str, rnd.dealer))
        self._prompt("dealer_reveals", f"Dealer turns the hole card: {cards}, {total.total}")

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
                if not live and not is_blackjack(hand.cards, from_split=hand.from_split):
                    live = True  # one open hand that is no natural is enough: asked till then
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

    def _ez_bust_push(self) -> bool:
        """Whether "all players' hands bust" (seed 000), so the dealer does not play on for EZ
        Bust and its wagers push; ``[side_bets.ez_bust] dealer_plays_out`` says which hands
        count. A blackjack already paid is never a bust."""
        section = self.rules.side_bets.ez_bust
        reading = section.dealer_plays_out if section is not None else "for_open_hands"
        rnd = self.state.round
        if reading == "for_open_hands":
            return not rnd.players_live
        hands = [hand for spot in rnd.spots.values() for hand in spot.hands]
        if reading == "unless_all_bust_or_surrendered":
            return all(hand.busted or hand.surrendered for hand in hands)
        return all(hand.busted for hand in hands)

    def _dealer_needs_card(self) -> bool:
        rnd = self.state.round
        if len(rnd.dealer) < 2:
            return rnd.dealer_needs_second
        return rnd.dealer_plays and dealer_must_hit(
            rnd.dealer,
            hit_soft_17=self.rules.dealer.hit_soft_17,
            stop_on_16=self.rules.dealer.ends_on_16,
        )

    def _dealer_card(self, card: Card) -> None:
        rnd = self.state.round
        rnd.dealer.append(card)
        if len(rnd.dealer) == 2 and not rnd.hole_revealed:
            self._reveal()
        self._dealer_continue()

    def _dealer_continue(self) -> None:
        """The dealer's next card asked for, or the round settled. The dealer's hand of two
        or more cards is counted once here, for whether it draws (as ``_dealer_needs_card``
        asks ``dealer_must_hit``), its prompt and the settlement."""
        rnd = self.state.round
        dealer = rnd.dealer
        if len(dealer) < 2:
            if rnd.dealer_needs_second:
                self._prompt("dealer_draws", "Deal the dealer's second card")
                return
            self._settle_round()
            return
        count = hand_total(dealer)
        natural = is_blackjack(dealer)
        if rnd.dealer_plays:
            total, house = count.total, self.rules.dealer
            # dealer_must_hit(dealer, hit_soft_17=..., stop_on_16=...) from the count
            if (
                not natural
                and not (total == 16 and house.ends_on_16)
                and (total < 17 or (total == 17 and count.soft and house.hit_soft_17))
            ):
                self._prompt("dealer_draws", f"Dealer draws on {total}")
                return
            self._prompt(
                "dealer_stands",
                f"Dealer breaks with {total}" if total > 21 else f"Dealer stands on {total}",
            )
        self._settle_round((count, natural))

    def _settle_round(self, counted: tuple[HandTotal, bool] | None = None) -> None:
        """Settle every open wager against the dealer's hand; ``counted`` is its
        ``hand_total`` and whether it is a natural, where the caller counted a hand of two or
        more cards already."""
        _state, rnd, rules = self.state, self.state.round, self.rules
        dealer = tuple(rnd.dealer)
        if counted is None:
            dealer_bj = len(dealer) >= 2 and is_blackjack(dealer)
            counted = (hand_total(dealer), dealer_bj)  # once for every hand settled here
        else:
            dealer_bj = counted[1]
        bets = rules.side_bets
        self._settle_insurance(dealer_bj)
        for spot in rnd.spots.values():
            for index, hand in enumerate(spot.hands):
                if not hand.settled:
                    hand.settled = True
                    for line in self._hand_lines(hand, index, dealer, counted):
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
                self._settle_side_bet(spot.number, stake, result, wager)
            if spot.ez_bust and bets.ez_bust is not None:
                result = ez_bust.evaluate(
                    dealer, all_player_hands_busted=self._ez_bust_push(), rules=bets.ez_bust
                )
                self._settle_side_bet(spot.number, spot.ez_bust, result)
        self._finish_round()

    def _hit_claim(self, line: dict[str, Any]) -> Publish:
        """The claim of one settled meter line (``Settled.to_dict()``)."""
        rnd = self.state.round
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
        """Round settled (or void): publish the result, write the recall record. Both are
        built when first read (the link and the journal read them, a replay does not), from
        copies of the round's cards and its immutable effects."""
        state, rnd = self.state, self.state.round
        state.phase = Phase.SETTLED
        rnd.in_action = None
        rnd.settled_t = state.now
        out = self._out
        so_far = len(out)
        earlier = (*state.round_effects, *out)  # the round's effects so far, as they are now
        settled = [e for e in earlier if type(e) is Settled]
        void = rnd.void or None
        cards = (
            tuple(rnd.dealer),
            [
                # each hand's cards as a tuple: [tuple(hand.cards) for hand in spot.hands]
                (spot.number, spot.first_two, list(map(tuple, map(_cards_of, spot.hands))))
                for spot in rnd.spots.values()
            ],
        )
        head = {
            "round": rnd.number,
            "game": self.rules.name,
            "table": self.settings,
            "started_t": rnd.started_t,
            "settled_t": rnd.settled_t,
            "void": void,
        }
        result = Publish.later(
            "round_result",
            f"round-{rnd.number}/result",
            lambda: _round_result(head, cards, settled),
        )
        out.append(result)
        # The meter lines are claimed after the result that holds their cards: the jackpot
        # controller checks a claim's cards against the round's reported result.
        for line in settled:
            if line.meter is not None:
                out.append(self._hit_claim(line.to_dict()))
        self._prompt("round_settled", settled_words(rnd))
        events = [*state.carried, *state.log]
        if self._event is not None:
            events.append(self._event)
        later = out[so_far:]
        build = lambda: _round_record(head, events, (*earlier, *later), result)  # noqa: E731
        out.append(Record.later("round", build))


def _round_result(
    head: dict[str, Any],
    cards: tuple[tuple[Card, ...], list[tuple[int, tuple[Card, ...], list[tuple[Card, ...]]]]],
    settled: list[Settled],
) -> dict[str, Any]:
    """The ``round_result`` message's payload: the round's cards (``cards``: the dealer's, then
    each spot's number, first two and hands) and its settlement lines with their sums."""
    dealer, spots = cards
    lines = [line.to_dict() for line in settled]
    return {
        "round": head["round"],
        "game": head["game"],
        "void": head["void"],
        "dealer": [str(c) for c in dealer],
        "spots": [
            {
                "spot": number,
                "first_two": [str(c) for c in first_two],
                "hands": [[str(c) for c in hand] for hand in hands],
            }
            for number, first_two, hands in spots
        ],
        "settlements": lines,
        "stake": sum(line["stake"] for line in lines),
        "paid": sum(line["paid"] for line in lines),
        "returned": sum(line["returned"] for line in lines),
    }


def _round_record(
    head: dict[str, Any],
    events: list[Event],
    effects: tuple[Effect, ...],
    result: Publish,
) -> dict[str, Any]:
    """A round's recall record, as JSON data: ``head`` (its ``table`` the settings), the
    dealer's cards, every event and every effect but those a recall leaves out, and the
    round's result (the ``result`` message's payload, whose settlement lines are the record's
    own, the same objects). Built when the record is first read
    (:meth:`~controller.table.effects.Record.later`): everything it reads is immutable or a
    copy nobody changes."""
    payload = result.payload
    lines = iter(payload["settlements"])
    return {
        **head,
        "table": head["table"].to_dict(),
        "dealer": payload["dealer"],
        "events": [e.to_dict() for e in events],
        "effects": [
            next(lines) if isinstance(e, Settled) else e.to_dict()
            for e in effects
            if not isinstance(e, _UNRECALLED)
        ],
        "result": payload,
    }
