"""The dealer's prompts that are computed from the state: the hand in action's total and the
choices the rules allow it now, and the one thing the dealer must do now (the display's
headline). A part of :class:`controller.table.machine.Table`."""

from __future__ import annotations

from controller.rules import actions
from controller.rules.actions import HandState
from controller.rules.hand import HandTotal, hand_total, is_blackjack
from controller.rules.pays import format_cents
from controller.rules.profile import HouseRules
from controller.table.effects import Prompt
from controller.table.part import TablePart
from controller.table.state import DEALER, HandInPlay, Phase, RoundState, SpotInPlay
from controller.table.view import pool_name

HAND_PROMPTS_KEPT = 4096
"""Prompts of the hand in action a table remembers (:meth:`Prompts._hand_prompt`)."""


def settled_words(rnd: RoundState) -> str:
    """The prompt of a settled round (void: every wager goes back)."""
    if rnd.void:
        return f"Round {rnd.number} void: return every wager, then press end round"
    return f"Round {rnd.number} settled: pay and collect, then press end round"


def hand_words(spot: int, hand: int, spot_hands: int) -> str:
    """A hand as the dealer's words name it: ``spot 3``, or ``spot 3 hand 2`` after a split."""
    return f"spot {spot}" + (f" hand {hand + 1}" if spot_hands > 1 else "")


def allowed_choices(
    rules: HouseRules, hand: HandState, hands_at_spot: int, dealer_checked: bool
) -> list[str]:
    """The decisions the rules allow ``hand`` (its own wager for a double or Double Up), in
    the console's order: hit, stand, double, split, surrender, Double Up. Asked without
    raising (:mod:`controller.rules.actions`, ``*_refusal``)."""
    wager = hand.wager
    out = []
    if actions.hit_refusal(hand, rules) is None:
        out.append("hit")
    if actions.double_refusal(hand, wager, rules) is None:
        out.append("double")
    if actions.split_refusal(hand, hands_at_spot, rules) is None:
        out.append("split")
    if actions.surrender_refusal(hand, rules, dealer_checked=dealer_checked) is None:
        out.append("surrender")
    if actions.double_up_refusal(hand, wager, rules) is None:
        out.append("Double Up")
    out.insert(1 if out and out[0] == "hit" else 0, "stand")
    return out


def choices_key(
    hand: HandInPlay,
    total: int,
    hands_at_spot: int,
    dealer_checked: bool,
    spot: int = 0,
    index: int = 0,
    soft: bool = False,
) -> tuple[object, ...] | None:
    """What :func:`allowed_choices` reads of a hand in play (at one table: the rules are
    fixed), as a key for remembering its answer; None where it is not to be remembered.
    It is also the hand in action's prompt's key (:meth:`Prompts._hand_prompt`): ``spot``,
    ``index`` and ``soft`` (whether its count is soft) come first, and the choices are
    remembered by ``key[3:]`` (:data:`CHOICES`), which they do not depend on.

    Its own wager is what a double and a Double Up are asked for, so the amount is
    refused only when it is not a whole number of cents above zero: the key says which.
    The cards count through their ranks (values, pairs, naturals, a pair by rank), never
    their suits; in a hand of other than two cards only its ``total`` is read (every
    choice but hit needs exactly two cards, hit reads the total). ``total`` is
    ``hand_total(hand.cards).total``.
    """
    wager = hand.wager
    if type(wager) is not int:
        return None
    cards = hand.cards
    return (
        spot,
        index,
        soft,
        (cards[0].rank, cards[1].rank) if len(cards) == 2 else (len(cards) == 1, total),
        wager > 0,
        hand.from_split,
        hand.split_aces,
        not hand.double_down,  # no double down: a bool without bool()'s call
        not hand.double_up,
        hands_at_spot,
        dealer_checked,
    )


CHOICES = slice(3, None)
"""The part of a :func:`choices_key` the choices are remembered by (all but the spot, the
hand and whether its count is soft)."""


class Prompts(TablePart):
    """What the dealer must do, from the state."""

    def _hand_prompt(self, spot: SpotInPlay, index: int, count: HandTotal | None = None) -> Prompt:
        """What the hand in action needs: its next card, or a decision on its total as it is
        now (``soft 17`` as the rule cards write it) among the choices the rules allow now.
        ``count`` is the hand's ``hand_total`` where the caller counted it already."""
        hand = spot.hands[index]
        if len(hand.cards) < 2:
            where = hand_words(spot.number, index, len(spot.hands))
            return Prompt("deal_card", f"Deal {where} its second card", spot.number)
        if hand.double_down:
            where = hand_words(spot.number, index, len(spot.hands))
            return Prompt("deal_card", f"Deal {where} its double-down card", spot.number)
        total = count if count is not None else hand_total(hand.cards)
        hands = len(spot.hands)
        # The same prompts come again and again: each is made once per table and shared,
        # remembered by what its words are made of (at most HAND_PROMPTS_KEPT, then
        # forgotten at once): choices_key with the spot, the hand and whether its count is
        # soft in front.
        made = self._hand_prompts
        dealer_checked = self.state.round.dealer_checked
        key = choices_key(hand, total.total, hands, dealer_checked, spot.number, index, total.soft)
        if key is not None:
            seen = made.get(key)
            if seen is not None:
                return seen
        choices = self._choices_for(spot, hand, key, dealer_checked)
        on = f"soft {total.total}" if total.soft else str(total.total)
        where = hand_words(spot.number, index, hands)
        prompt = Prompt("action", f"{where.capitalize()} to act on {on}: {choices}", spot.number)
        if key is not None:
            if len(made) >= HAND_PROMPTS_KEPT:
                made.clear()
            made[key] = prompt
        return prompt

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
        return Prompt("round_settled", settled_words(rnd))

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

    def _choices(self, spot: SpotInPlay, hand: HandInPlay, total: int) -> str:
        """The decisions the rules allow ``hand`` (whose count is ``total``) now, as the
        prompt lists them (:meth:`_choices_for` its :func:`choices_key`)."""
        dealer_checked = self.state.round.dealer_checked
        key = choices_key(hand, total, len(spot.hands), dealer_checked)
        return self._choices_for(spot, hand, key, dealer_checked)

    def _choices_for(
        self,
        spot: SpotInPlay,
        hand: HandInPlay,
        key: tuple[object, ...] | None,
        dealer_checked: bool,
    ) -> str:
        """:meth:`_choices` with the hand's :func:`choices_key` made already: looked up in
        the table's memo by ``key`` (None: not remembered), asked of the rules
        (:func:`allowed_choices`) the first time."""
        memo = self._choices_memo
        if key is not None:
            key = key[CHOICES]
        words = memo.get(key) if key is not None else None
        if words is None:
            words = ", ".join(
                allowed_choices(self.rules, self._hand_state(hand), len(spot.hands), dealer_checked)
            )
            if key is not None:
                memo[key] = words
        return words
