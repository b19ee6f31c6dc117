"""The replay's hot path (issue 32 item 3) changes how the table computes, never what.

Each shortcut is checked against the slower form it replaces: the rule checks that answer
without raising against the ones that raise, the ``to_dict`` written out for the commonest
effects and events against the generic one (values and key order: the journal writes them),
the settings' JSON against :func:`dataclasses.asdict`, and enums hashed by identity.
"""

from __future__ import annotations

import dataclasses
import itertools
import pickle

import pytest

from controller.errors import RuleViolation
from controller.games import available_games, load_game
from controller.rules import actions
from controller.rules.actions import HandState
from controller.rules.cards import ALL_CARDS, Card, Rank, Suit
from controller.rules.hand import hand_total, is_blackjack
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Effect, Light, Prompt, Record, Settled
from controller.table.events import Event
from controller.table.state import IN_PROGRESS, Phase

GAMES = sorted(available_games())

# One card of each rank (suits do not change a rule check), and the hand flags that do.
RANKS = [Card(rank, Suit.SPADES) for rank in Rank]
FLAGS = list(itertools.product((False, True), (False, True), (0, 1000), (0, 1000)))


def _refused(check) -> str | None:
    try:
        check()
    except RuleViolation as exc:
        return str(exc)
    return None


def _hands():
    for first, second in itertools.product(RANKS, RANKS):
        for from_split, split_aces, double_down, double_up in FLAGS:
            yield HandState((first, second), 1000, from_split, split_aces, double_down, double_up)
    for cards in itertools.product(RANKS[:6], repeat=3):  # three-card hands, soft and hard
        yield HandState(cards, 1000)


@pytest.mark.parametrize("game", GAMES)
def test_each_refusal_is_the_check_s_own_words(game):
    rules = load_game(game)
    checked = 0
    for hand in _hands():
        for amount in (1000, 500, 1500, 0):
            assert actions.double_refusal(hand, amount, rules) == _refused(
                lambda h=hand, a=amount: actions.check_double(h, a, rules)
            ), (hand, amount)
            assert actions.double_up_refusal(hand, amount, rules) == _refused(
                lambda h=hand, a=amount: actions.check_double_up(h, a, rules)
            ), (hand, amount)
        assert actions.hit_refusal(hand, rules) == _refused(
            lambda h=hand: actions.check_hit(h, rules)
        )
        for at_spot in (1, 2, 3, 4):
            assert actions.split_refusal(hand, at_spot, rules) == _refused(
                lambda h=hand, n=at_spot: actions.check_split(h, n, rules)
            )
        for checked_bj in (False, True):
            assert actions.surrender_refusal(hand, rules, dealer_checked=checked_bj) == _refused(
                lambda h=hand, c=checked_bj: actions.check_surrender(h, rules, dealer_checked=c)
            )
        checked += 1
    assert checked > 2000


def test_a_refused_check_raises_the_refusal_s_words():
    rules = load_game("pa-standard")
    hand = HandState((Card(Rank.TEN, Suit.HEARTS), Card(Rank.ACE, Suit.CLUBS)), 1000)
    assert actions.double_refusal(hand, 1000, rules) == "a blackjack cannot double down"
    with pytest.raises(RuleViolation, match=r"^a blackjack cannot double down$"):
        actions.check_double(hand, 1000, rules)
    assert actions.hit_refusal(hand, rules) == "the hand counts 21: no hit"


def _same_dict(written: dict, generic: dict) -> None:
    assert written == generic
    assert list(written) == list(generic)  # the journal writes the keys in this order


@pytest.mark.parametrize(
    "effect",
    [
        Light("spot3.main", "on"),
        Light("alarm", "blink"),
        Prompt("deal", "Deal spot 1"),
        Prompt("action", "Spot 2 to act on 12: hit, stand", 2),
        Prompt("pay", "Pay", 0),
        Settled(1, "main", 1000, "win", 1000, 1000, "17 beats 16"),
        Settled(2, "main", 1000, "lose", 0, 0, "bust", 0),
        Settled(3, "blazing_7s", 500, "win", 0, 500, "7-7-7 suited", None, None, "100%", "b7"),
        Settled(4, "lucky_ladies", 500, "win", 12500, 500, "queen pair", None, "25 to 1"),
    ],
)
def test_effects_written_out_are_the_generic_dict(effect):
    _same_dict(effect.to_dict(), Effect.to_dict(effect))


@pytest.mark.parametrize(
    "event",
    [
        ev.BetSensor(1, "main", True),
        ev.BetSensor(7, "blackjack_tie.tie_17", False, t=12345),
        ev.Next(),
        ev.Next(t=0),
        ev.Next(t=99),
        ev.CardDrawn(ALL_CARDS[0]),
        ev.CardDrawn(ALL_CARDS[51], "camera", t=5),
    ],
)
def test_events_written_out_are_the_generic_dict(event):
    _same_dict(event.to_dict(), Event.to_dict(event))
    assert ev.parse_event(event.to_dict()) == event


def test_rounds_effects_and_events_are_the_generic_dicts():
    """Every effect and event of a few rounds played out (split hands, doubles and stands
    as the cards come), through the generic path too."""
    rules = load_game("pa-standard")
    table = Table(rules, TableSettings(spots=7))
    shoe = iter([card for _ in range(4) for card in ALL_CARDS])
    kinds: set[type] = set()

    def feed(event: Event) -> None:
        step = table.handle(event)
        assert step.accepted, step.reason
        _same_dict(event.to_dict(), Event.to_dict(event))
        for effect in step.effects:
            _same_dict(effect.to_dict(), Effect.to_dict(effect))
            kinds.add(type(effect))

    feed(ev.ShoeEvent("new_shoe"))
    if table.state.burn_expected:
        feed(ev.CardDrawn(next(shoe)))
    for number in range(1, 8):
        feed(ev.BetSensor(number, "main", True, t=number))
    for _round in range(6):
        feed(ev.Lockout(t=100))
        while table.state.phase is not Phase.SETTLED:
            phase, rnd = table.state.phase, table.state.round
            if phase in (Phase.INSURANCE, Phase.EZ_BUST):
                feed(ev.Next())
            elif phase is Phase.PLAYERS:
                hand = table._hand(*rnd.in_action)
                if len(hand.cards) < 2 or hand.double_down or hand_total(hand.cards).total < 12:
                    feed(ev.CardDrawn(next(shoe)))
                else:
                    feed(ev.Next(t=200))
            else:
                feed(ev.CardDrawn(next(shoe), t=150))
        feed(ev.EndRound(t=300))
    assert {Light, Prompt, Settled, Record} <= kinds


@pytest.mark.parametrize(
    "settings",
    [
        TableSettings(),
        TableSettings(spots=3, main_minimum=500, side_maximum=2000, card_source="both"),
    ],
)
def test_settings_json_is_asdict(settings):
    _same_dict(settings.to_dict(), dataclasses.asdict(settings))


def test_enums_hashed_by_identity_still_find_themselves():
    assert Phase.DEALING in IN_PROGRESS and Phase.SETTLED not in IN_PROGRESS
    assert {Phase(p.value) for p in Phase} == set(Phase)
    assert pickle.loads(pickle.dumps(Suit.HEARTS)) is Suit.HEARTS
    seen = {card: 1 for card in ALL_CARDS}
    assert all(seen[Card(c.rank, Suit(c.suit.value))] == 1 for c in ALL_CARDS)
    assert len(seen) == 52


def test_blackjack_is_an_ace_and_a_ten_value_card_in_either_order():
    for first, second in itertools.product(ALL_CARDS, repeat=2):
        expected = {first.value, second.value} == {1, 10}  # the definition, with sets
        assert is_blackjack((first, second)) is expected
        assert is_blackjack((first, second), from_split=True) is False
