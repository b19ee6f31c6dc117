"""Cards from the shoe or the camera: counted, checked, routed to the hand that waits for one, or
held for the dealer's decision (burn, assign, misdeal). A part of
:class:`controller.table.machine.Table`."""

from __future__ import annotations

from controller.errors import ProcedureError
from controller.rules.cards import Card
from controller.table import events as ev
from controller.table.events import Assign, Burn, CardDrawn
from controller.table.part import TablePart
from controller.table.state import DEALER, Phase

_UNEXPECTED_WHEN = {
    Phase.BETTING: "while bets are placed",
    Phase.DEALER: "after the dealer's hand is complete",
    Phase.SETTLED: "after the round was settled",
}
"""When a card came that nobody expected, in the dealer's words."""


class CardFlow(TablePart):
    """Each card to its hand, or held for a decision."""

    def _on_card(self, event: CardDrawn) -> None:
        state = self.state
        card = event.card
        if event.source != self._deals_from:  # "both" (None), or the other reader
            self._other_reader(event)
            if event.source == "camera":
                return
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
        if state.shoe_fault and event.source == "shoe":  # the shoe deals no card in a fault
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
        phase = state.phase
        if state.burn_expected and phase is Phase.BETTING:
            state.burn_expected -= 1
            state.discarded += 1
            self._prompt("burn", f"Burn card {card}")
            return
        if phase is Phase.DEALING:
            # _route's _deal_to for a player's card before the deal's last: to the first
            # hand of the spot first in the queue, and nothing else
            rnd = state.round
            queue = rnd.deal_queue
            recipient = queue[0]
            if recipient != DEALER and len(queue) > 1:
                del queue[0]  # = queue.remove(recipient): its first place
                rnd.spots[recipient].hands[0].cards.append(card)
                return
        elif phase is Phase.PLAYERS:  # _route's, without its call
            rnd = state.round
            spot_no, index = rnd.in_action  # type: ignore[misc]
            if self._takes_card(rnd.spots[spot_no].hands[index]):  # self._hand(...)
                self._give(spot_no, index, card)
            else:
                self._unexpected(card, f"for spot {spot_no}, which can take no card")
            return
        self._route(card)

    def _other_reader(self, event: CardDrawn) -> None:
        """A card from a reader other than the one the table deals from: refused, or (with
        ``card_source = both``) checked against the other reader's; a camera card then goes
        no further (the shoe's card is the one dealt)."""
        state, mode, card = self.state, self.settings.card_source, event.card
        if mode != "both":
            raise ProcedureError(
                f"{event.source} card refused: this table deals from the {mode} "
                f"(card_source = {mode})"
            )
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
            self._deal_to(self.state.round.deal_queue[0], card)
        elif phase is Phase.INSURANCE:
            self._close_insurance()
            self._route(card)
        elif phase is Phase.EZ_BUST:
            self._close_ez_bust()
            self._route(card)
        elif phase is Phase.PLAYERS:
            rnd = self.state.round
            assert rnd.in_action is not None
            spot_no, index = rnd.in_action
            if self._takes_card(rnd.spots[spot_no].hands[index]):  # self._hand(...)
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
