"""Exact par sheets for the card-determined side bets of a house-rule profile.

Every figure is counted, not simulated: the cards are enumerated from a
finite shoe with integer weights (the number of ways each deal can happen),
and each deal is settled by the same evaluator and settlement code the table
uses (``controller.rules.sidebets.<bet>.evaluate``,
``controller.rules.settlement.settle_offered_side_bet``); the dealer draws by
``controller.rules.hand.dealer_must_hit``. Probabilities are
:class:`~fractions.Fraction` until the sheet is written out as floats.

Units: a probability is per hand dealt; a house edge or a contribution is per
unit staked (0.05 is 5%), the player's expected loss, stake included.

Dealer hands are enumerated by point value (ace, 2 .. 9, ten-value), one
representative card per value: the dealer's play and the dealer-only
evaluators read only card values. ``tests/test_parsheet.py`` checks this
against a brute force over actual cards.

The module is pure (no I/O); ``table-controller par-sheet`` prints its result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import perm
from types import ModuleType
from typing import Any

from controller.rules.cards import ALL_CARDS, Card, Rank, ShoeComposition, Suit
from controller.rules.hand import dealer_must_hit, is_blackjack
from controller.rules.pays import MeterShare, Odds, Pay, format_cents
from controller.rules.profile import HouseRules
from controller.rules.settlement import settle_offered_side_bet
from controller.rules.sidebets import (
    TITLES,
    BetResult,
    SideBetResult,
    blazing_7s,
    bonus_16,
    ez_bust,
    lucky_ladies,
    xtreme,
)

POINT_CARDS: tuple[Card, ...] = tuple(Card(Rank(points), Suit.SPADES) for points in range(1, 11))
"""One card per point value, ace (1) to ten-value (10), standing for every card of that value."""

BET_TITLES = TITLES

NOT_CARD_DETERMINED = {
    "blackjack_tie": "the tie depends on how the player plays the hand (hit, stand, double, "
    "split, surrender), not on the cards alone: no par sheet without a playing strategy",
}


@dataclass(frozen=True)
class OutcomeOdds:
    """One way a side bet ends and its exact probability.

    ``result`` is the evaluator's result for one deal that ends this way (its
    ``outcome`` is the paytable line, or ``"lose"``/``"push"``);
    ``by_cards_dealt`` splits ``probability`` by how many cards were dealt
    from the shoe (for dealer hands: hole card and draws).
    """

    result: SideBetResult
    probability: Fraction
    by_cards_dealt: Mapping[int, Fraction]


class _Tally:
    """Integer ways of each evaluator result, by result kind, paytable line and cards dealt."""

    def __init__(self) -> None:
        self._ways: dict[tuple[BetResult, str], dict[int, int]] = {}
        self._samples: dict[tuple[BetResult, str], SideBetResult] = {}

    def add(self, result: SideBetResult, ways: int, dealt: int) -> None:
        if not ways:
            return
        key = (result.result, result.outcome)
        by_dealt = self._ways.get(key)
        if by_dealt is None:
            by_dealt = self._ways[key] = {}
            self._samples[key] = result
        by_dealt[dealt] = by_dealt.get(dealt, 0) + ways

    def odds(self, shoe_total: int) -> list[OutcomeOdds]:
        """Exact probabilities: ways over the ordered deals of as many cards from ``shoe_total``."""
        odds = []
        for key, by_dealt in self._ways.items():
            split = {
                dealt: Fraction(ways, perm(shoe_total, dealt)) for dealt, ways in by_dealt.items()
            }
            odds.append(OutcomeOdds(self._samples[key], sum(split.values(), Fraction(0)), split))
        return odds


# --- enumerations ------------------------------------------------------------------------------


def first_three_cards_odds(
    shoe: ShoeComposition, settle: Callable[[tuple[Card, Card], Card], SideBetResult]
) -> list[OutcomeOdds]:
    """Odds of a bet settled on the player's first two cards and the dealer's up card.

    Every ordered deal of three cards from ``shoe`` is weighted by its number
    of ways (integer counts of each of the 52 cards), then divided once by the
    number of ordered three-card deals.
    """
    tally = _Tally()
    stocked = [(card, shoe[card]) for card in ALL_CARDS if shoe[card]]
    for i, (first, n_first) in enumerate(stocked):
        for j, (second, n_second) in enumerate(stocked):
            ways_two = n_first * (n_second - (i == j))
            if ways_two <= 0:
                continue
            first_two = (first, second)
            for k, (up_card, n_up) in enumerate(stocked):
                left = n_up - (k == i) - (k == j)
                if left > 0:
                    tally.add(settle(first_two, up_card), ways_two * left, 3)
    return tally.odds(shoe.total)


def lucky_ladies_odds(
    shoe: ShoeComposition, rules: lucky_ladies.LuckyLadiesRules
) -> list[OutcomeOdds]:
    """Odds of Lucky Ladies on the player's first two cards from ``shoe``.

    Where the result depends on the dealer's blackjack (the Queen of Hearts
    pair), the dealer's two cards are dealt from the shoe less the player's two
    and weighted by whether they make a blackjack. Every deal counts the
    dealer's two cards, so all ways share one denominator (ordered deals of 4).
    """
    tally = _Tally()
    stocked = [(card, shoe[card]) for card in ALL_CARDS if shoe[card]]
    dealer_pairs = perm(shoe.total - 2, 2)
    for i, (first, n_first) in enumerate(stocked):
        for j, (second, n_second) in enumerate(stocked):
            ways = n_first * (n_second - (i == j))
            if ways <= 0:
                continue
            first_two = (first, second)
            no_blackjack = lucky_ladies.evaluate(first_two, False, rules)
            with_blackjack = lucky_ladies.evaluate(first_two, True, rules)
            if with_blackjack == no_blackjack:
                tally.add(no_blackjack, ways * dealer_pairs, 4)
                continue
            blackjacks = _dealer_blackjacks(shoe.without(first_two))
            tally.add(with_blackjack, ways * blackjacks, 4)
            tally.add(no_blackjack, ways * (dealer_pairs - blackjacks), 4)
    return tally.odds(shoe.total)


def _dealer_blackjacks(shoe: ShoeComposition) -> int:
    """Ordered two-card dealer hands from ``shoe`` that are a blackjack."""
    stocked = [(card, shoe[card]) for card in ALL_CARDS if shoe[card]]
    return sum(
        n_up * (n_hole - (i == j))
        for i, (up, n_up) in enumerate(stocked)
        for j, (hole, n_hole) in enumerate(stocked)
        if is_blackjack((up, hole))
    )


DealerHand = tuple[tuple[Card, ...], int, int]
"""A final dealer hand: the cards (representatives), its ways, and the cards dealt from the shoe."""


def dealer_hands(
    shoe: ShoeComposition, start: Sequence[Card], *, hit_soft_17: bool, stop_on_16: bool
) -> list[DealerHand]:
    """Every final dealer hand from ``start`` (cards already in the hand, removed from ``shoe``).

    The dealer draws from what ``shoe`` holds less ``start`` while
    :func:`dealer_must_hit` says so; a hand of fewer than two cards always
    draws. Cards are the :data:`POINT_CARDS` representatives; ``ways`` counts
    the ordered draws of actual cards giving that hand.
    """
    left = [shoe.count_points(points) for points in range(1, 11)]
    for card in start:
        left[card.value - 1] -= 1
        if left[card.value - 1] < 0:
            raise ValueError(f"the shoe holds no more cards worth {card.value} for {card}")
    start_hand = tuple(POINT_CARDS[card.value - 1] for card in start)
    final: list[DealerHand] = []

    def deal(hand: tuple[Card, ...], ways: int, dealt: int) -> None:
        if not dealer_must_hit(hand, hit_soft_17=hit_soft_17, stop_on_16=stop_on_16):
            final.append((hand, ways, dealt))
            return
        for index, card in enumerate(POINT_CARDS):
            count = left[index]
            if count:
                left[index] = count - 1
                deal((*hand, card), ways * count, dealt + 1)
                left[index] = count

    deal(start_hand, 1, 0)
    return final


def dealer_hand_odds(
    hands: Iterable[DealerHand],
    shoe_total: int,
    settle: Callable[[tuple[Card, ...]], SideBetResult],
) -> list[OutcomeOdds]:
    """Odds of a dealer-only bet: ``settle`` each final hand of :func:`dealer_hands`.

    ``shoe_total`` is the number of cards the draws came from (the shoe less
    the starting cards).
    """
    tally = _Tally()
    for hand, ways, dealt in hands:
        tally.add(settle(hand), ways, dealt)
    return tally.odds(shoe_total)


# --- money ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    """An outcome's money per unit staked: ``net`` excludes meter awards; ``meter_share`` is the
    share of the meter paid (0 for fixed lines)."""

    net: Fraction
    meter_share: Fraction


def _line_money(result: SideBetResult, rules: HouseRules) -> _Line:
    """Settle ``result`` on the profile's terms and express it per unit staked."""
    section = getattr(rules.side_bets, result.bet)
    pays = result.pays
    stake = getattr(section, "wager", None)
    if stake is None:
        stake = 100 * (pays.per if isinstance(pays, Odds) else 1)  # whole cents, no breakage
    settlement = settle_offered_side_bet(stake, result, rules)
    share = pays.percent / 100 if isinstance(pays, MeterShare) else Fraction(0)
    return _Line(Fraction(settlement.net, stake), share)


def _bet_figures(
    odds: list[OutcomeOdds], lines: Mapping[str, Pay], rules: HouseRules, labels: Mapping[str, str]
) -> tuple[dict, Fraction, Fraction]:
    """The paying outcomes in paytable order and the house edge, as JSON-ready data; also the
    exact expected net per unit staked (meter excluded) and the meter share won per unit."""
    by_outcome = {o.result.outcome: o for o in odds if o.result.result is BetResult.WIN}
    outcomes = []
    expected = Fraction(0)
    meter_rate = Fraction(0)
    meter_possible = False
    for name in [*lines, *(n for n in by_outcome if n not in lines)]:
        found = by_outcome.get(name)
        probability = found.probability if found else Fraction(0)
        pays = found.result.pays if found else lines[name]
        money = _line_money(found.result, rules) if found else None
        entry = {
            "name": name,
            "label": found.result.label if found else labels.get(name, name),
            "pays": str(pays),
            "probability": float(probability),
            "probability_exact": str(probability),
            "one_in": _one_in(probability),
        }
        if money is None:
            entry["contribution"] = 0.0
        elif money.meter_share:
            entry["contribution"] = None
            entry["meter_share"] = float(money.meter_share)
            meter_possible = True
            meter_rate += probability * money.meter_share
        else:
            entry["contribution"] = float(probability * money.net)
        if money is not None:
            expected += probability * money.net
        outcomes.append(entry)
    losing = sum((o.probability for o in odds if o.result.result is BetResult.LOSE), Fraction(0))
    pushing = sum((o.probability for o in odds if o.result.result is BetResult.PUSH), Fraction(0))
    expected -= losing
    figures = {
        "house_edge": None if meter_possible else float(-expected),
        "hit_frequency": float(1 - losing - pushing),
        "lose_probability": float(losing),
        "outcomes": outcomes,
    }
    if pushing:
        figures["push_probability"] = float(pushing)
    return figures, expected, meter_rate


def _one_in(probability: Fraction) -> float | None:
    """``1 in N`` odds of an outcome (None when it cannot happen)."""
    return float(1 / probability) if probability else None


# --- the bets ------------------------------------------------------------------------------------


def _lucky_ladies(rules: HouseRules, shoe: ShoeComposition) -> dict:
    section = rules.side_bets.lucky_ladies
    odds = lucky_ladies_odds(shoe, section)
    figures, _, _ = _bet_figures(odds, section.pays, rules, lucky_ladies.LABELS)
    return {
        "title": BET_TITLES["lucky_ladies"],
        **figures,
        "card_removal": "the player's first two cards; for the Queen of Hearts pair lines also "
        "the dealer's two cards, dealt from the shoe less the player's two (dealer blackjack "
        "weighted exactly)",
        "assumption": "settled on the player's first two cards; an ace and a nine counts as 20: "
        + ("yes" if section.soft_20_qualifies else "no"),
    }


def _three_card_bet(
    rules: HouseRules, shoe: ShoeComposition, bet: str, module: ModuleType, section: Any
) -> tuple[dict, Fraction, Fraction]:
    odds = first_three_cards_odds(
        shoe, lambda first_two, up_card: module.evaluate(first_two, up_card, section)
    )
    figures, expected, meter_rate = _bet_figures(odds, section.pays, rules, module.LABELS)
    figures = {
        "title": BET_TITLES[bet],
        **figures,
        "card_removal": "the player's first two cards and the dealer's up card, dealt from a "
        "full shoe; no other cards removed",
    }
    return figures, expected, meter_rate


def _xtreme(rules: HouseRules, shoe: ShoeComposition) -> dict:
    section = rules.side_bets.twenty_one_plus_three_xtreme
    figures, _, _ = _three_card_bet(rules, shoe, "twenty_one_plus_three_xtreme", xtreme, section)
    figures["assumption"] = (
        "three-card poker hand of the player's first two cards and the dealer's up card; "
        "3-2-A is a straight; Q-K-A is a straight: "
        + ("yes" if section.queen_king_ace_straight else "no")
        + "; a suited three of a kind pays as three of a kind"
    )
    return figures


def _blazing_7s(rules: HouseRules, shoe: ShoeComposition) -> dict:
    section = rules.side_bets.blazing_7s
    figures, expected, meter_rate = _three_card_bet(rules, shoe, "blazing_7s", blazing_7s, section)
    wager_dollars = Fraction(section.wager, 100)
    per_meter_dollar = meter_rate / wager_dollars
    figures["wager"] = format_cents(section.wager, whole=True)
    figures["stake_returned"] = section.STAKE_RETURNED
    figures["return_excluding_meter"] = float(expected)
    figures["return_per_meter_dollar"] = float(per_meter_dollar)
    figures["break_even_meter_dollars"] = (
        float(-expected / per_meter_dollar) if per_meter_dollar else None
    )
    figures["assumption"] = (
        f"fixed {figures['wager']} wager, not returned on a win: a fixed award nets the award "
        "less the wager; the meter lines pay a share of the linked meter, unknown here, so the "
        "house edge is undefined while they can hit. return_excluding_meter is the expected "
        "fixed awards less the wager, per $ wagered; each $1 on the meter adds "
        "return_per_meter_dollar; break_even_meter_dollars is the meter at which the bet is fair"
    )
    return figures


def _ez_bust(rules: HouseRules, shoe: ShoeComposition) -> dict:
    section = rules.side_bets.ez_bust
    by_up_card = {}
    for up_card in POINT_CARDS:
        if not ez_bust.is_offered(up_card):
            continue
        hands = dealer_hands(
            shoe,
            (up_card,),
            hit_soft_17=rules.dealer.hit_soft_17,
            stop_on_16=rules.dealer.ends_on_16,
        )
        odds = dealer_hand_odds(
            hands,
            shoe.total - 1,
            lambda cards: ez_bust.evaluate(cards, all_player_hands_busted=False, rules=section),
        )
        by_result = {kind: Fraction(0) for kind in BetResult}
        expected = Fraction(0)
        for o in odds:
            by_result[o.result.result] += o.probability
            if o.result.result is BetResult.WIN:
                expected += o.probability * _line_money(o.result, rules).net
        expected -= by_result[BetResult.LOSE]
        stood = sum((o.by_cards_dealt.get(1, Fraction(0)) for o in odds), Fraction(0))
        by_up_card[str(up_card.value)] = {
            "win": float(by_result[BetResult.WIN]),
            "lose": float(by_result[BetResult.LOSE]),
            "push": float(by_result[BetResult.PUSH]),
            "house_edge": float(-expected),
            "stands_without_drawing": float(stood),
        }
    return {
        "title": BET_TITLES["ez_bust"],
        "pays": str(section.pays["dealer_busts"]),
        "no_draw": section.no_draw,
        "dealer_plays_out": section.dealer_plays_out,
        "by_up_card": by_up_card,
        "card_removal": "the dealer's cards only: the up card, then the hole card and draws from "
        "the shoe less the up card",
        "assumption": "wager made after the deal against the up card shown; the dealer plays "
        "out the hand (dealer "
        + ("hits" if rules.dealer.hit_soft_17 else "stands on")
        + " soft 17"
        + ("; a total of 16 ends the hand" if rules.dealer.ends_on_16 else "")
        + "); standing without drawing (6 up, ace in the hole) settles as no_draw = "
        f"'{section.no_draw}'. The 'all players' hands busted' push is a table event, not "
        "card-determined: it is left out (all_player_hands_busted=False); dealer_plays_out = "
        f"'{section.dealer_plays_out}' says which hands keep the dealer playing ("
        + _PLAYS_OUT[section.dealer_plays_out]
        + "), which moves only that push, so no figure here",
    }


_PLAYS_OUT = {
    "unless_all_bust": "any hand not busted, a paid blackjack or a surrender too",
    "unless_all_bust_or_surrendered": "any hand neither busted nor surrendered",
    "for_open_hands": "a hand not yet settled",
}


def _bonus_16(rules: HouseRules, shoe: ShoeComposition) -> dict:
    section = rules.side_bets.bonus_16
    hands = dealer_hands(
        shoe, (), hit_soft_17=rules.dealer.hit_soft_17, stop_on_16=rules.dealer.ends_on_16
    )
    tables = {}
    for name, table in section.paytables.items():
        odds = dealer_hand_odds(
            hands, shoe.total, lambda cards, name=name: bonus_16.evaluate(cards, section, name)
        )
        figures, _, _ = _bet_figures(odds, table, rules, {})
        tables[name] = {"paytable": name, **figures}
    in_force = tables.pop(section.paytable)
    return {
        "title": BET_TITLES["bonus_16"],
        **in_force,
        "other_paytables": tables,
        "card_removal": "the dealer's cards only, from a full shoe; no player cards removed",
        "assumption": "the dealer's hand is played out per the profile (dealer "
        + ("hits" if rules.dealer.hit_soft_17 else "stands on")
        + " soft 17"
        + ("; a soft or hard 16 ends the hand" if rules.dealer.ends_on_16 else "")
        + "), even when every player has busted; a dealer natural stands; paid by the cards "
        "in the hand when it first totals 16",
    }


_CALCULATORS: dict[str, Callable[[HouseRules, ShoeComposition], dict]] = {
    "lucky_ladies": _lucky_ladies,
    "twenty_one_plus_three_xtreme": _xtreme,
    "blazing_7s": _blazing_7s,
    "ez_bust": _ez_bust,
    "bonus_16": _bonus_16,
}


def compute_par_sheet(rules: HouseRules) -> dict:
    """The par sheet of every card-determined side bet ``rules`` offers (JSON-serialisable).

    ``{"game", "title", "decks", "bets": {bet: figures}, "not_computed": {bet: why}}``;
    a bet's figures give probabilities per hand and the house edge per unit staked.
    """
    shoe = ShoeComposition.of_decks(rules.shoe.decks)
    bets = {}
    skipped = {}
    for bet in rules.side_bets.offered():
        calculator = _CALCULATORS.get(bet)
        if calculator is None:
            skipped[bet] = NOT_CARD_DETERMINED.get(bet, "no par-sheet calculator for this bet")
        else:
            bets[bet] = calculator(rules, shoe)
    sheet = {"game": rules.name, "title": rules.game.title, "decks": rules.shoe.decks, "bets": bets}
    if skipped:
        sheet["not_computed"] = skipped
    return sheet


# --- text ----------------------------------------------------------------------------------------


def format_par_sheet(sheet: dict) -> str:
    """A readable table of a :func:`compute_par_sheet` result (ends with a newline)."""
    heading = f"Par sheet: {sheet.get('title') or sheet['game']} ({sheet['game']})"
    lines = [
        heading,
        "=" * len(heading),
        f"Shoe: {sheet['decks']} deck{'s' if sheet['decks'] != 1 else ''}",
        "",
    ]
    if not sheet["bets"]:
        lines += ["This game offers no card-determined side bet.", ""]
    for bet, figures in sheet["bets"].items():
        title = f"{figures.get('title', bet)} ({bet})"
        lines += [title, "-" * len(title)]
        if "by_up_card" in figures:
            lines += _format_ez_bust(figures)
        else:
            lines += _format_outcomes(figures)
            for name, other in figures.get("other_paytables", {}).items():
                lines += ["", f"Paytable {name!r} (not in force):", *_format_outcomes(other)]
        lines += [f"Card removal: {figures['card_removal']}."]
        if figures.get("assumption"):
            lines += [f"Assumption: {figures['assumption']}."]
        lines.append("")
    for bet, why in sheet.get("not_computed", {}).items():
        lines += [f"{BET_TITLES.get(bet, bet)} ({bet}): not computed: {why}.", ""]
    return "\n".join(lines)


def _format_outcomes(figures: dict) -> list[str]:
    rows = [("Outcome", "Pays", "Probability", "1 in", "Contribution")]
    for o in figures["outcomes"]:
        one_in = "never" if o["one_in"] is None else f"{o['one_in']:,.1f}"
        contribution = "meter" if o["contribution"] is None else f"{o['contribution']:+.6f}"
        rows.append((o["label"], o["pays"], f"{o['probability']:.8f}", one_in, contribution))
    rows.append(("Lose", "", f"{figures['lose_probability']:.8f}", "", ""))
    if "paytable" in figures:
        rows[0] = ("Cards to 16", *rows[0][1:])
    lines = _table(rows)
    edge = figures["house_edge"]
    if edge is not None:
        lines.append(f"House edge: {edge:.4%} of each unit wagered")
    else:
        lines.append("House edge: depends on the meter (see below)")
    if "return_excluding_meter" in figures:
        per_10k = figures["return_per_meter_dollar"] * 10_000
        lines.append(
            f"Wager {figures['wager']}, not returned. Return excluding the meter lines: "
            f"{figures['return_excluding_meter']:+.4%} per $ wagered; each $10,000 on the meter "
            f"adds {per_10k:.4%}"
        )
        if figures["break_even_meter_dollars"] is not None:
            lines.append(f"Break-even meter: ${figures['break_even_meter_dollars']:,.2f}")
    return lines


def _format_ez_bust(figures: dict) -> list[str]:
    rows = [("Up card", "Win (bust)", "Lose", "Push", "No draw", "House edge")]
    for up_card, f in figures["by_up_card"].items():
        rows.append(
            (
                up_card,
                f"{f['win']:.6f}",
                f"{f['lose']:.6f}",
                f"{f['push']:.6f}",
                f"{f['stands_without_drawing']:.6f}",
                f"{f['house_edge']:.4%}",
            )
        )
    return [
        *_table(rows),
        f"Pays {figures['pays']}; no draw settles as '{figures['no_draw']}'; the dealer plays "
        f"out as '{figures['dealer_plays_out']}'",
    ]


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    out = []
    for index, row in enumerate(rows):
        cells = [
            cell.ljust(w) if col < 2 else cell.rjust(w)
            for col, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  " + "  ".join(cells).rstrip())
        if index == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    return out


__all__ = [
    "POINT_CARDS",
    "OutcomeOdds",
    "compute_par_sheet",
    "dealer_hand_odds",
    "dealer_hands",
    "first_three_cards_odds",
    "format_par_sheet",
    "lucky_ladies_odds",
]
