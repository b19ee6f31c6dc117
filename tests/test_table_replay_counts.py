"""The replay's shortcuts of issue 32 item 3, fourth round, against the forms they replace.

A table whose methods are the forms before this round (:class:`Before`, below) and the table
as it is now replay the same seeded rounds side by side, on every profile: every step (its
acceptance and effects) and the state after it are equal.

- The players' turn counts each hand once per event and passes the count on
  (``_advance(counted)``, ``_hand_done(hand, count)``, ``_hand_prompt(spot, index,
  count)``): before, the card, the search for the hand in action, its prompt and its checks
  each counted it again. The action lights it sets are set without ``_light``'s calls (each
  spot's name and Light effects made once): ``Before._advance`` sets them with ``_light``.
- The rules share their common settlement lines (``settlement._win`` at even money, ``_lose``,
  ``_push``, remembered by what they are made of): every line equals, field for field and
  type for type, the line made afresh.
- End round sorts the bets it carries by their keys alone (not the items): the events carried
  are those of the items sorted, in order.
- Lockout reads a layout's Blackjack Tie circles and sensor keys made once per layout
  (``betting._LAYOUTS``): the circles placed equal those asked of the sensors one by one.
- Lockout lights each wager's circle with its name and :class:`Light` made once per spot and
  circle (no ``_light`` call, no f-string): the lights equal ``_light``'s, in order.
- Whether the hand in action takes a card is asked of its count where none of
  ``hit_refusal``'s other rules can close it (no split aces, Double Up or double down).
- The round's settlement counts the dealer's hand once and passes the count to
  ``settle_hand`` (``dealer_count``) for every hand: the lines equal those settled without it.
- 21+3 Xtreme's paytable line remembered by the three ranks, whether the suits are one and
  the Q-K-A rule; Blazing 7's sevens counted without a generator: every result equals the
  evaluation before (copied below), over every two cards and up card of two suits.
- The hand in action's prompt is remembered by one flat key (no ``choices_key`` call, no
  nested tuple): it tells hands apart exactly as the nested key did.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
from pathlib import Path

import pytest

from controller.errors import CardError
from controller.games import available_games, load_game
from controller.rules import actions, settlement, sidebets
from controller.rules.cards import Card, Rank, Suit
from controller.rules.hand import hand_total, is_blackjack
from controller.rules.settlement import PlayerHand, settle_hand
from controller.rules.sidebets import blazing_7s, xtreme
from controller.table import Table, TableSettings, betting, table_circles
from controller.table.effects import Light
from controller.table.players import action_light
from controller.table.prompts import choices_key, hand_words
from controller.table.state import HandInPlay

GAMES = sorted(available_games())
BENCH = Path(__file__).resolve().parent.parent / "bench" / "replay_rounds.py"


def _bench():
    spec = importlib.util.spec_from_file_location("replay_rounds_counts", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Before(Table):
    """The table with the forms this round replaced (copied from ``main`` before it)."""

    def _hand_done(self, hand: HandInPlay, count=None) -> bool:
        if hand.settled or hand.surrendered or hand.stood or hand.double_up:
            return True
        if len(hand.cards) < 2:
            return False
        if hand.double_down:
            return len(hand.cards) >= 3
        count = hand_total(hand.cards)
        if count.total > 21:
            return True
        if count.total == 21:
            return not self._double_up_open(hand)
        if hand.split_aces and self.rules.split.split_aces_one_card:
            du = self.rules.double_up
            return not (du.offered and du.after_split_aces)
        return False

    def _advance(self, counted=None) -> None:
        rnd = self.state.round
        previous = rnd.in_action
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
                    self._light(action_light(previous[0]), "off")
                light = action_light(spot.number)
                if self.state.lights.get(light) != "on":
                    self._light(light, "on")
                self._out.append(self._hand_prompt(spot, index))
                return
        if previous:
            self._light(action_light(previous[0]), "off")
        rnd.in_action = None
        self._dealer_turn()

    def _give(self, spot_no: int, index: int, card: Card) -> None:
        spot = self.state.round.spots[spot_no]
        hand = spot.hands[index]
        hand.cards.append(card)
        count = hand_total(hand.cards)
        if count.total > 21:
            where = hand_words(spot_no, index, len(spot.hands))
            self._prompt("bust", f"{where.capitalize()} breaks with {count.total}", spot_no)
            hand.settled = True
            dealer = self.state.round.dealer
            for line in settle_hand(self._player_hand(hand, index), dealer, self.rules):
                self._settle(spot_no, line, index)
        self._advance()

    def _takes_card(self, hand: HandInPlay) -> bool:
        if len(hand.cards) < 2 or (hand.double_down and len(hand.cards) == 2):
            return True
        return actions.hit_refusal(hand, self.rules) is None

    def _hand_prompt(self, spot, index, count=None):
        return super()._hand_prompt(spot, index)  # counts the hand itself


@pytest.mark.parametrize("game", GAMES)
def test_the_table_steps_as_the_forms_it_replaces(game):
    rules = load_game(game)
    events = _bench().generate(rules, 150, 11).events
    now, before = Table(rules, TableSettings(spots=7)), Before(rules, TableSettings(spots=7))
    for event in events:
        mine, theirs = now.handle(event), before.handle(event)
        assert mine == theirs, event
        assert now.state == before.state, event
    assert now.snapshot() == before.snapshot()


def test_a_count_passed_on_is_the_count_of_the_hand_as_it_is_now():
    """Every hand of every players' turn: _hand_done and _hand_prompt given its count answer
    as they do counting it themselves."""
    rules = load_game("pa-standard")
    table = Table(rules, TableSettings(spots=7))
    checked = 0
    for event in _bench().generate(rules, 60, 5).events:
        table.handle(event)
        rnd = table.state.round
        if rnd is None or rnd.in_action is None:
            continue
        for spot in rnd.spots.values():
            for index, hand in enumerate(spot.hands):
                count = hand_total(hand.cards)
                assert table._hand_done(hand, count) == table._hand_done(hand)
                if len(hand.cards) >= 2 and not hand.double_down:
                    assert table._hand_prompt(spot, index, count) == table._hand_prompt(spot, index)
                    checked += 1
    assert checked > 500


class _Forgets(dict):
    """A memo that remembers nothing: every line is made afresh."""

    def get(self, key, default=None):
        return default


def _fields(line):
    return [(type(v), v) for v in (getattr(line, f.name) for f in dataclasses.fields(line))]


@pytest.mark.parametrize("game", GAMES)
def test_shared_settlement_lines_equal_lines_made_afresh(game, monkeypatch):
    rules = load_game(game)
    ranks = [Rank.ACE, Rank.TWO, Rank.FIVE, Rank.SIX, Rank.SEVEN, Rank.NINE, Rank.TEN, Rank.KING]

    def card(rank, suit=Suit.SPADES):
        return Card(rank, suit)

    hands = [
        PlayerHand((card(a), card(b, Suit.HEARTS), *extra), 1000, dd, du, split, split, surr)
        for a in ranks
        for b in ranks
        for extra in ((), (card(Rank.SIX, Suit.CLUBS),))
        for dd, du, surr in ((0, 0, False), (1000, 0, False), (0, 500, False), (0, 0, True))
        for split in (False, True)
        if not (du and not extra and {a, b} & {Rank.ACE} and {a, b} & {Rank.TEN, Rank.KING})
        and not (surr and (dd or du))
    ]
    dealer_ranks = [Rank.ACE, Rank.TWO, Rank.SIX, Rank.SEVEN, Rank.TEN]
    dealers = [
        (card(a, Suit.DIAMONDS), card(b, Suit.CLUBS), *extra)
        for a in dealer_ranks
        for b in dealer_ranks
        for extra in ((), (card(Rank.FIVE, Suit.CLUBS),), (card(Rank.TEN, Suit.CLUBS),))
    ]

    def settle_all():
        out = []
        for dealer in dealers:
            for hand in hands:
                try:
                    out.append(settle_hand(hand, dealer, rules))
                except Exception as exc:  # an unfinished dealer: the same refusal either way
                    out.append(repr(exc))
        return out

    counted = []
    for dealer in dealers:
        count = (hand_total(dealer), is_blackjack(dealer))
        for hand in hands:
            try:
                mine = settle_hand(hand, dealer, rules, dealer_count=count)
            except Exception as exc:
                mine = repr(exc)
            counted.append(mine)
    settlement._LINES.clear()
    shared = settle_all()
    assert counted == shared
    again = settle_all()  # now from the memo
    monkeypatch.setattr(settlement, "_LINES", _Forgets())
    fresh = settle_all()
    assert shared == fresh == again
    for a, b in zip(again, fresh, strict=True):
        if isinstance(a, list):
            assert [_fields(x) for x in a] == [_fields(y) for y in b]


def test_a_shared_line_keeps_its_stake_s_type():
    settlement._LINES.clear()
    assert settlement._lose("main", 1, "r").stake == 1
    line = settlement._lose("main", True, "r")  # True == 1, but not the same stake
    assert type(line.stake) is bool
    assert type(settlement._push("main", 1.0, "r").stake) is float
    assert type(settlement._win("main", 1, settlement.EVEN, "r").stake) is int


@pytest.mark.parametrize("game", GAMES)
def test_lockout_lights_the_circles_as_light_does(game):
    rules = load_game(game)
    table = Table(rules, TableSettings(spots=7))
    locked = 0
    for event in _bench().generate(rules, 40, 3).events:
        lit_before = dict(table.state.lights)
        step = table.handle(event)
        if event.TYPE != "lockout" or not step.accepted:
            continue
        locked += 1
        expected = []
        for spot in table.state.round.spots.values():
            for circle in spot.wagers:
                name = f"spot{spot.number}.{circle}"
                if lit_before.get(name, "off") != "on":
                    lit_before[name] = "on"
                    expected.append(Light(name, "on"))
        mine = [e for e in step.effects if type(e) is Light and e.name != "lockout"]
        assert mine == expected
        for light in mine:
            assert table.state.lights[light.name] == "on"
    assert locked == 40


@pytest.mark.parametrize("game", GAMES)
def test_takes_card_answers_as_hit_refusal(game):
    rules = load_game(game)
    table = Before(rules, TableSettings(spots=1))
    now = Table(rules, TableSettings(spots=1))
    ranks = [Rank.ACE, Rank.TWO, Rank.FIVE, Rank.SIX, Rank.NINE, Rank.TEN]
    for a in ranks:
        for b in ranks:
            for extra in ((), (Card(Rank.FIVE, Suit.CLUBS),), (Card(Rank.KING, Suit.CLUBS),)):
                for dd, du, split_aces in itertools.product((0, 500), (0, 500), (False, True)):
                    cards = [Card(a, Suit.SPADES), Card(b, Suit.HEARTS), *extra]
                    for n in range(len(cards) + 1):
                        hand = HandInPlay(cards[:n], 1000, dd, du, split_aces, split_aces)
                        assert now._takes_card(hand) == table._takes_card(hand)


@pytest.mark.parametrize("game", GAMES)
def test_the_flat_prompt_key_tells_hands_apart_as_the_nested_one(game):
    rules = load_game(game)
    table = Table(rules, TableSettings(spots=7))
    pairs = set()
    for event in _bench().generate(rules, 80, 13).events:
        table.handle(event)
        rnd = table.state.round
        if rnd is None or rnd.in_action is None:
            continue
        spot_no, index = rnd.in_action
        spot = rnd.spots[spot_no]
        hand = spot.hands[index]
        if len(hand.cards) < 2 or hand.double_down:
            continue
        count = hand_total(hand.cards)
        nested = (
            spot_no,
            index,
            count.total,
            count.soft,
            choices_key(hand, count.total, len(spot.hands), rnd.dealer_checked),
        )
        table._hand_prompts.clear()
        prompt = table._hand_prompt(spot, index, count)
        (flat,) = table._hand_prompts
        assert table._hand_prompts[flat] is prompt
        pairs.add((nested, flat))
    nested_keys = {n for n, _ in pairs}
    flat_keys = {f for _, f in pairs}
    assert len(pairs) == len(nested_keys) == len(flat_keys) > 20


def _xtreme_before(first_two, up_card, rules):
    sidebets.require_cards(first_two, 2, "the player's first two cards")
    sidebets.require_cards((up_card,), 1, "the dealer's up card")
    cards = (*first_two, up_card)
    flush = len({card.suit for card in cards}) == 1
    straight = xtreme.is_straight(
        [card.rank for card in cards], queen_king_ace=rules.queen_king_ace_straight
    )
    if len({card.rank for card in cards}) == 1:
        outcome = "three_of_a_kind"
    elif straight and flush:
        outcome = "straight_flush"
    elif straight:
        outcome = "straight"
    elif flush:
        outcome = "flush"
    else:
        return sidebets.lost(xtreme.BET)
    return sidebets.won(xtreme.BET, outcome, xtreme.LABELS, dict(rules.pays))


def _blazing_before(first_two, up_card, rules):
    sidebets.require_cards(first_two, 2, "the player's first two cards")
    sidebets.require_cards((up_card,), 1, "the dealer's up card")
    sevens = sum(card.rank is Rank.SEVEN for card in first_two)
    if sevens == 0:
        return sidebets.lost(blazing_7s.BET)
    pays = dict(rules.pays)
    if sevens == 1:
        return sidebets.won(blazing_7s.BET, "one_seven", blazing_7s.LABELS, pays)
    return blazing_7s.evaluate(first_two, up_card, rules)  # two sevens: the code unchanged


def test_card_side_bets_evaluate_as_before():
    cards = [Card(rank, suit) for rank in Rank for suit in (Suit.SPADES, Suit.HEARTS)]
    xtreme_rules = [xtreme.XtremeRules(), xtreme.XtremeRules(queen_king_ace_straight=False)]
    blazing = blazing_7s.Blazing7sRules()
    xtreme._OUTCOMES.clear()
    for _ in range(2):  # the first pass fills the memo, the second reads it
        for first, second, up in itertools.product(cards, cards, cards):
            for rules in xtreme_rules:
                assert xtreme.evaluate((first, second), up, rules) == _xtreme_before(
                    (first, second), up, rules
                )
            if up.suit is Suit.SPADES:
                assert blazing_7s.evaluate([first, second], up, blazing) == _blazing_before(
                    [first, second], up, blazing
                )
    with pytest.raises(CardError):
        xtreme.evaluate((cards[0],), cards[1], xtreme_rules[0])


@pytest.mark.parametrize("game", GAMES)
def test_lockout_reads_the_layout_as_made_afresh(game):
    rules = load_game(game)
    circles = table_circles(rules)
    for spots in (1, 3, 7):
        betting._LAYOUTS.clear()
        tie, keys = betting._layout(spots, circles)
        assert betting._LAYOUTS[(spots, circles)] == (tie, keys)
        assert tie == any(c.startswith("blackjack_tie.") for c in circles)
        assert [n for n, _ in keys] == list(range(1, spots + 1))
        for bits in range(64):
            sensors = {
                (n, c): bool(bits >> ((n + i) % 6) & 1)
                for n in range(1, spots + 1)
                for i, c in enumerate(circles)
            }
            for number, spot_keys in keys:
                assert [c for c, key in spot_keys if sensors.get(key)] == [
                    c for c in circles if sensors.get((number, c))
                ]


@pytest.mark.parametrize("game", GAMES)
def test_end_round_carries_the_bets_in_the_items_order(game):
    rules = load_game(game)
    table = Table(rules, TableSettings(spots=7))
    ended = 0
    for event in _bench().generate(rules, 60, 17).events:
        if event.TYPE == "end_round":
            sensors, amounts = dict(table.state.sensors), dict(table.state.amounts)
        step = table.handle(event)
        if event.TYPE != "end_round" or not step.accepted:
            continue
        ended += 1
        expected = [(k[0], k[1], True) for k, on in sorted(sensors.items()) if on]
        expected += [(s, c, a) for (s, c), a in sorted(amounts.items())]
        carried = table.state.carried
        assert [(e.spot, e.circle, getattr(e, "on", None) or e.amount) for e in carried] == [
            (s, c, a) for s, c, a in expected
        ]
    assert ended == 60
