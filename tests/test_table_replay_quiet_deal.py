"""``Table.handle``'s card of the initial deal on a quiet table (issue 32 item 3, sixth round)
against the forms it bypasses: a player's card before the deal's last, with no card waiting,
no alarm, fault or open door and the alarm light off, is counted and put on its hand without
``_on_card``'s and the accepted path's checks. Every way a table is not quiet steps as the
forms before (``Before`` of tests/test_table_replay_structure.py: every step, the state and
the snapshot equal)."""

from __future__ import annotations

import pytest

from controller.games import load_game
from controller.rules.cards import parse_card
from controller.table import Table, TableSettings
from controller.table import events as ev
from tests.test_table_replay_structure import Before, _same

RULES = load_game("pa-standard")


def _card(text: str, t: int, source: str = "shoe") -> ev.CardDrawn:
    return ev.CardDrawn(parse_card(text), source=source, t=t)


def _start(spots: int = 3) -> list[ev.Event]:
    events: list[ev.Event] = [ev.ShoeEvent("new_shoe", t=1), _card("2C", 2)]
    events += [ev.BetSensor(n, "main", True, t=10 + n) for n in range(1, spots + 1)]
    return [*events, ev.Lockout(t=20)]


def _both(events, spots=3, **settings) -> None:
    table = TableSettings(spots=spots, **settings)
    _same(Table(RULES, table), Before(RULES, table), events)


def test_a_quiet_deal_steps_as_before():
    deal = ["5H", "6D", "7S", "9C", "8H", "KD", "4S", "TS"]
    _both([*_start(), *(_card(c, 30 + i) for i, c in enumerate(deal)), ev.Next(t=50)])


@pytest.mark.parametrize(
    "interruption",
    [
        [ev.ShoeEvent("door_open", t=31)],  # the alarm light blinks
        [ev.ShoeEvent("door_open", t=31), ev.ShoeEvent("door_closed", t=32)],  # light off
        [ev.BetSensor(3, "lucky_ladies", True, t=31)],  # a late bet: an open alarm
        [ev.TableFault("camera", "no frames", t=31)],
        [ev.ShoeEvent("fault", detail="jam", t=31)],
        [ev.OutOfOrderCard(parse_card("3H"), frame=9, last=4, t=31)],  # a card waits
    ],
)
def test_a_deal_that_is_not_quiet_steps_as_before(interruption):
    events = [*_start(), _card("5H", 30), *interruption]
    events += [_card(c, 40 + i) for i, c in enumerate(["6D", "7S", "9C", "8H", "KD", "4S"])]
    _both([*events, ev.Burn(t=60), ev.Next(t=61), ev.EndRound(t=62)])


def test_a_foreign_card_and_other_readers_step_as_before():
    # a 6-deck shoe: the seventh 5H (a player's card of the deal, spot 7's first) is foreign
    assert RULES.shoe.decks == 6
    events = [*_start(7), *(_card("5H", 30 + i) for i in range(6))]
    events += [_card("9S", 36), _card("5H", 37), _card("6D", 38), ev.Burn(t=39), _card("6D", 40)]
    _both(events, spots=7)
    for source in ("camera", "both"):
        events = [*_start(), _card("5H", 30, source), _card("6D", 31, "shoe")]
        events += [_card("6D", 32, "camera"), _card("7S", 33, source), _card("8S", 34, source)]
        _both(events, card_source=source)
