"""The players' turn prompt remembers the choices it lists (issue 32 item 3): each answer the
memo gives is the one the rules give (:func:`controller.table.prompts.allowed_choices`), for
every two-card hand by rank and suit, the hand flags, spots with one to four hands, before and
after the dealer checked, hands of three and four cards, and wagers of any amount."""

from __future__ import annotations

import itertools

import pytest

from controller.games import available_games, load_game
from controller.rules.cards import Card, Rank, Suit
from controller.rules.hand import hand_total
from controller.table import Table, TableSettings
from controller.table.prompts import allowed_choices
from controller.table.state import HandInPlay, RoundState, SpotInPlay

FLAGS = list(itertools.product((False, True), (False, True), (0, 1000), (0, 1000)))


def _hands():
    for first, second in itertools.product(Rank, Rank):
        for suits in ((Suit.SPADES, Suit.HEARTS), (Suit.CLUBS, Suit.CLUBS)):
            cards = [Card(first, suits[0]), Card(second, suits[1])]
            for from_split, split_aces, double_down, double_up in FLAGS:
                yield HandInPlay(cards, 1000, double_down, double_up, from_split, split_aces)
    for ranks in itertools.product(list(Rank)[:7], repeat=3):
        cards = [Card(rank, Suit.DIAMONDS) for rank in ranks]
        yield HandInPlay(cards, 1000)
        yield HandInPlay(cards, 1000, double_down=1000)
        yield HandInPlay([*cards, Card(Rank.TWO, Suit.SPADES)], 1000, from_split=True)
    pair = [Card(Rank.EIGHT, Suit.SPADES), Card(Rank.EIGHT, Suit.HEARTS)]
    for wager in (0, -500, 1, 2500):
        yield HandInPlay(list(pair), wager)


@pytest.mark.parametrize("game", sorted(available_games()))
def test_the_memo_answers_as_the_rules_do(game: str) -> None:
    rules = load_game(game)
    table = Table(rules, TableSettings(spots=1))
    asked = 0
    for hand in _hands():
        for hands_at_spot, dealer_checked in itertools.product((1, 2, 3, 4), (False, True)):
            spot = SpotInPlay(1, {"main": hand.wager}, [hand] * hands_at_spot)
            table.state.round = RoundState(1, {1: spot}, dealer_checked=dealer_checked)
            expected = ", ".join(
                allowed_choices(rules, table._hand_state(hand), hands_at_spot, dealer_checked)
            )
            total = hand_total(hand.cards).total
            assert table._choices(spot, hand, total) == expected, (hand, hands_at_spot)
            asked += 1
    assert len(table._choices_memo) < asked / 2  # answers were remembered and reused
