"""Issue 32 item 3, seventh round: ``hand_total`` remembers its counts by the hand's cards.

The memo is held to the count it replaces (``hand._count``, the loop as it was) over random
hands of every length, with the memo empty, warm and full; anything that cannot be hashed is
counted, not remembered. (A shortcut tried beside it, ``Table.handle`` asking in C whether a
step's effects are all plain before its scan, cost more instructions and was dropped; the
alarm test below stays: a step with an alarm still reaches the register.)"""

from __future__ import annotations

import random

import pytest

from controller.games import load_game
from controller.rules import hand as hand_module
from controller.rules.cards import ALL_CARDS, parse_cards
from controller.rules.hand import HandTotal, hand_total
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Alarm


def _old(cards) -> HandTotal:
    """``hand_total`` as it was before the memo."""
    hard = 0
    has_ace = False
    for card in cards:
        value = card.points
        hard += value
        if value == 1:
            has_ace = True
    if has_ace and hard <= 11:
        return HandTotal(hard + 10, True)
    return HandTotal(hard, False)


def _hands(seed: int, n: int):
    rng = random.Random(seed)
    for _ in range(n):
        yield [rng.choice(ALL_CARDS) for _ in range(rng.randint(0, 12))]


@pytest.mark.parametrize("seed", range(3))
def test_a_remembered_count_is_the_count(seed, monkeypatch):
    monkeypatch.setattr(hand_module, "_COUNTED", {})
    hands = list(_hands(seed, 3000))
    for cards in hands + hands:  # first counted, then remembered
        got = hand_total(cards)
        assert got == _old(cards) and type(got) is HandTotal
        assert hand_total(tuple(cards)) == got  # a tuple of the same cards: the same key
    assert hand_module._COUNTED  # something remembered


def test_a_full_memo_counts_without_remembering(monkeypatch):
    monkeypatch.setattr(hand_module, "_COUNTED", {})
    monkeypatch.setattr(hand_module, "_COUNTED_MAX", 10)
    for cards in _hands(9, 500):
        assert hand_total(cards) == _old(cards)
    assert len(hand_module._COUNTED) == 10


def test_a_hand_is_counted_as_it_is_now():
    cards = list(parse_cards("AS,6D"))
    assert hand_total(cards) == HandTotal(17, True)
    cards.append(parse_cards("TC")[0])
    assert hand_total(cards) == HandTotal(17, False)
    cards.pop()
    assert hand_total(cards) == HandTotal(17, True)
    assert hand_total([]) == HandTotal(0, False)


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, points: int):
        self.points = points


def test_cards_that_cannot_be_hashed_are_counted():
    cards = [_Unhashable(1), _Unhashable(9)]
    assert hand_total(cards) == HandTotal(20, True)  # type: ignore[arg-type]
    assert hand_total([*cards, _Unhashable(5)]) == HandTotal(15, False)  # type: ignore[arg-type]


def test_a_step_with_an_alarm_still_registers_it():
    table = Table(load_game("pa-standard"), TableSettings(spots=3))
    table.handle(ev.ShoeEvent("new_shoe", t=1))
    assert table.handle(ev.CardDrawn(parse_cards("2C")[0], source="shoe", t=1)).accepted  # burn
    table.handle(ev.BetSensor(1, "lucky_ladies", True, t=2))  # a side bet alone
    table.handle(ev.BetSensor(2, "main", True, t=3))
    step = table.handle(ev.Lockout(t=4))
    alarms = [e for e in step.effects if isinstance(e, Alarm)]
    assert step.accepted and alarms
    assert table.state.alarms  # registered, not passed over as plain
