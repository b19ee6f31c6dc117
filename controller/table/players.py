"""The players' turn: the hand in action, its cards and decisions (double, split, surrender,
Double Up, stand). A part of :class:`controller.table.machine.Table`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from controller.errors import ProcedureError
from controller.rules import actions
from controller.rules.cards import Card
from controller.rules.hand import HandTotal, hand_total
from controller.rules.pays import format_cents
from controller.rules.settlement import PlayerHand, Settlement, settle_hand, settle_main_wager
from controller.table import events as ev
from controller.table.effects import Light, Prompt
from controller.table.part import TablePart, shared_light
from controller.table.prompts import hand_words
from controller.table.state import IN_ACTION, HandInPlay, Phase, SpotInPlay

_STANDS: dict[tuple[int, int, int, int], Prompt] = {}
"""The prompts of hands that stand, by spot, hand, hands at the spot and total."""

_ACTION_LIGHTS: dict[int, str] = {}

_ACTION: dict[int, tuple[str, Light, Light]] = {}
"""Each spot's action light: its name and its :class:`Light` effects on and off (made once
per spot, shared; bounded by the spots' numbers)."""


def action_light(spot: int) -> str:
    """The name of the light of ``spot`` in action, ``spot3.action`` (each made once)."""
    name = _ACTION_LIGHTS.get(spot)
    if name is None:
        name = _ACTION_LIGHTS[spot] = f"spot{spot}.action"
    return name


def _action(spot: int) -> tuple[str, Light, Light]:
    name = action_light(spot)
    made = _ACTION[spot] = (name, shared_light(name, "on"), shared_light(name, "off"))
    return made


class PlayersTurn(TablePart):
    """Hands in action in table order, each until it is done."""

    def _start_players(self) -> None:
        self.state.phase = Phase.PLAYERS
        self._advance()

    def _hand_done(self, hand: HandInPlay, count: HandTotal | None = None) -> bool:
        """Whether ``hand`` takes no more cards or decisions; ``count`` is its
        ``hand_total`` where the caller counted it already (else it is counted here, if
        needed)."""
        if hand.settled or hand.surrendered or hand.stood or hand.double_up:
            return True
        if len(hand.cards) < 2:
            return False
        if hand.double_down:
            return len(hand.cards) >= 3
        # an open hand of two or more cards, not doubled: its count decides
        total = (count if count is not None else hand_total(hand.cards)).total
        if total > 21:  # bust (read without the property: a hot path)
            return True
        if total == 21:
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
        spots = rnd.spots
        if previous is None:
            counted = None
            order: Iterable[SpotInPlay] = spots.values()
            first = 0
        else:
            # the spots from the one in action on, in table order (its number is a key)
            numbers = list(spots)
            order = map(spots.__getitem__, numbers[numbers.index(previous[0]) :])
            first = previous[1]
        for spot in order:
            hands = spot.hands
            start, first = first, 0  # the hand in action's index: its spot's only
            for index in range(start, len(hands)):
                hand = hands[index]
                count, counted = counted, None  # the caller's count: the first hand's only
                if hand.settled or hand.surrendered or hand.stood or hand.double_up:
                    continue  # done whatever it counts (_hand_done asks these first)
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

    def _action_off(self, spot: int) -> None:
        """``self._light(action_light(spot), "off")``, with the name and effect made once."""
        name, _on, off = _ACTION.get(spot) or _action(spot)
        lights = self.state.lights
        if lights.get(name, "off") != "off":
            del lights[name]
            self._out.append(off)

    def _takes_card(self, hand: HandInPlay) -> bool:
        cards = hand.cards
        if len(cards) < 2 or (hand.double_down and len(cards) == 2):
            return True
        if not (hand.split_aces or hand.double_up or hand.double_down):
            # hit_refusal's answer for a hand none of its rules closes, without its calls:
            # the count decides
            return hand_total(cards).total < 21
        return actions.hit_refusal(hand, self.rules) is None

    def _give(self, spot_no: int, index: int, card: Card) -> None:
        """A card to a player's hand in action (second card of a split hand, hit or double)."""
        spot = self.state.round.spots[spot_no]
        hand = spot.hands[index]
        hand.cards.append(card)
        count = hand_total(hand.cards)
        if count.total > 21:  # bust
            where = hand_words(spot_no, index, len(spot.hands))
            self._prompt("bust", f"{where.capitalize()} breaks with {count.total}", spot_no)
            hand.settled = True
            dealer = self.state.round.dealer
            for line in self._hand_lines(hand, index, dealer):
                self._settle(spot_no, line, index)
        self._advance(count)

    def _hand_lines(
        self,
        hand: HandInPlay,
        index: int,
        dealer: Sequence[Card],
        counted: tuple[HandTotal, bool] | None = None,
    ) -> list[Settlement]:
        """``settle_hand(self._player_hand(hand, index), dealer, self.rules, ...)``: a hand
        with its main wager alone (the first at its spot, never split, surrendered or
        doubled: most hands) settled without making its :class:`PlayerHand`
        (:func:`settle_main_wager`)."""
        if index or hand.double_down or hand.double_up or hand.from_split or hand.surrendered:
            player = self._player_hand(hand, index)
            return settle_hand(player, dealer, self.rules, dealer_count=counted)
        return settle_main_wager(hand.cards, hand.wager, dealer, self.rules, dealer_count=counted)

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
        rnd = self.state.round
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
        where = hand_words(spot.number, index, len(spot.hands))
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
        where = hand_words(spot.number, index, len(spot.hands))
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
        self.state.round.in_action = None  # the prompt for the first hand's second card follows
        self._advance()

    def _on_surrender(self, event: ev.Surrender) -> None:
        spot, index, hand = self._acting(event, "surrender")
        actions.check_surrender(
            self._hand_state(hand), self.rules, dealer_checked=self.state.round.dealer_checked
        )
        hand.surrendered = True
        hand.settled = True
        dealer = self.state.round.dealer
        for line in settle_hand(self._player_hand(hand, index), dealer, self.rules):
            self._settle(spot.number, line, index)
        self._advance()

    def _stand(self) -> None:
        rnd = self.state.round
        assert rnd.in_action is not None
        spot_no, index = rnd.in_action
        hand = rnd.spots[spot_no].hands[index]  # self._hand(spot_no, index)
        if len(hand.cards) < 2 or hand.double_down:
            raise ProcedureError(
                f"stand refused: spot {spot_no} is waiting for a card "
                f"({'double down' if hand.double_down else 'split hand'})"
            )
        hand.stood = True
        # The same few prompts (a spot, its hands, a total): each made once per table.
        key = (spot_no, index, len(rnd.spots[spot_no].hands), hand_total(hand.cards).total)
        prompt = _STANDS.get(key)
        if prompt is None:
            where = hand_words(spot_no, index, key[2])
            prompt = Prompt("stand", f"{where.capitalize()} stands on {key[3]}", spot_no)
            if len(_STANDS) >= 4096:
                _STANDS.clear()
            _STANDS[key] = prompt
        self._out.append(prompt)
        self._advance()
