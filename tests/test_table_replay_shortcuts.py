"""The replay's shortcuts of issue 32 item 3, third round, against the forms they replace.

- :func:`controller.fast_init.fast_init`: every class it sped up is made with the same
  parameters, defaults, field values, equality, repr and ``__post_init__`` checks as with the
  dataclass's own ``__init__``, and stays frozen.
- A round's result message (``Publish.later``) is built when first read: it equals the eager
  message, and the round's recall record holds the very payload the message carries.
- The hand in action's prompt, remembered per table: every prompt a replay shows equals the
  prompt computed afresh from the same state with an empty memo, on every profile.
- ``settle_hand`` asks whether the dealer must still draw without ``dealer_must_hit``.
- Losing side-bet lines, remembered per table, equal the lines settled afresh.
- A settlement line's prompt, written when first read, has the words written at once.
- The prompt of a hand that stands, remembered, equals the prompt made afresh.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import itertools
import pickle
from pathlib import Path

import pytest

from controller.errors import WagerError
from controller.fast_init import PATCHED, fast_init
from controller.games import available_games, load_game
from controller.rules import sidebets
from controller.rules.cards import Card, Rank, Suit, parse_cards
from controller.rules.hand import dealer_must_hit
from controller.rules.settlement import PlayerHand, settle_hand, settle_offered_side_bet
from controller.table import Table, TableSettings, console, players
from controller.table.effects import Prompt, Publish, Record, Settled, Step
from controller.table.state import Phase
from controller.table.view import settlement_prompt

GAMES = sorted(available_games())
BENCH = Path(__file__).resolve().parent.parent / "bench" / "replay_rounds.py"


def _bench():
    spec = importlib.util.spec_from_file_location("replay_rounds_shortcuts", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sample(cls: type) -> tuple[object, ...]:
    """A value for each field of ``cls`` (valid where ``__post_init__`` checks them)."""
    if cls is PlayerHand:
        return (parse_cards("10S,7D"), 1000, 1000, 0, True, 1, False)
    return tuple(f"{field.name}-value" for field in dataclasses.fields(cls))


def test_the_hot_classes_use_fast_init():
    names = {cls.__name__ for cls in PATCHED}
    assert {"Step", "Prompt", "Settled", "Publish", "Settlement", "PlayerHand"} <= names


@pytest.mark.parametrize("cls", list(PATCHED), ids=lambda cls: cls.__name__)
def test_fast_init_makes_what_the_dataclass_made(cls):
    own = PATCHED[cls]
    ours, theirs = inspect.signature(cls.__init__), inspect.signature(own)
    assert [(p.name, p.default, p.kind) for p in ours.parameters.values()] == [
        (p.name, p.default, p.kind) for p in theirs.parameters.values()
    ]
    values = _sample(cls)
    fields = [field.name for field in dataclasses.fields(cls)]
    expected = object.__new__(cls)
    own(expected, *values)
    for made in (cls(*values), cls(**dict(zip(fields, values, strict=True)))):
        assert type(made) is cls
        assert made == expected and repr(made) == repr(expected)
        assert [getattr(made, name) for name in fields] == list(values)
        assert pickle.loads(pickle.dumps(made)) == made
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, fields[0], None)
    required = [f for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    if len(required) < len(fields):  # the defaults are the dataclass's
        short = values[: len(required)]
        expected = object.__new__(cls)
        own(expected, *short)
        assert cls(*short) == expected


def test_fast_init_runs_post_init():
    with pytest.raises(WagerError, match="needs a main wager above"):
        PlayerHand(parse_cards("10S,7D"), 0)


def test_fast_init_refuses_what_it_does_not_support():
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    for cls in (NoSlots, Factory):
        with pytest.raises(TypeError):
            fast_init(cls)


def test_step_and_prompt_keep_their_defaults():
    assert Step(True, ()).journal is True
    assert Prompt("deal", "Deal spot 1").spot is None


@pytest.mark.parametrize("game", GAMES)
def test_round_result_and_record_built_when_read(game):
    """The lazily built result equals one built at once from the same round (a copy of the
    table replayed to the same point, whose result is read at once), and the record carries
    the message's own payload."""
    rules = load_game(game)
    events = _bench().generate(rules, 12, 5).events
    lazy = Table(rules, TableSettings(spots=7))
    eager = Table(rules, TableSettings(spots=7))
    results = 0
    for event in events:
        lazy_step = lazy.handle(event)
        eager_step = eager.handle(event)
        for effect in eager_step.effects:  # read at once, as the journal does
            if isinstance(effect, Publish | Record):
                _ = effect.payload if isinstance(effect, Publish) else effect.data
        messages = [e for e in lazy_step.effects if isinstance(e, Publish)]
        for mine in messages:
            if mine.topic == "round_result":
                results += 1
                records = [e for e in lazy_step.effects if isinstance(e, Record)]
                assert records[-1].data["result"] is mine.payload
        assert lazy_step == eager_step
    assert results == sum(1 for e in events if e.TYPE == "end_round")


@pytest.mark.parametrize("game", GAMES)
def test_remembered_hand_prompts_equal_fresh_ones(game):
    rules = load_game(game)
    table = Table(rules, TableSettings(spots=7))
    checked = 0
    for event in _bench().generate(rules, 40, 9).events:
        table.handle(event)
        rnd = table.state.round
        if table.state.phase is Phase.PLAYERS and rnd is not None and rnd.in_action:
            spot_no, index = rnd.in_action
            remembered = table._hand_prompt(rnd.spots[spot_no], index)
            fresh = Table(rules, TableSettings(spots=7))
            fresh.state = table.state
            assert fresh._hand_prompt(rnd.spots[spot_no], index) == remembered
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("game", GAMES)
def test_settle_hand_refuses_an_unfinished_dealer_as_dealer_must_hit(game):
    """settle_hand asks whether the dealer must still draw from the total it counted, not
    through dealer_must_hit: the two agree on every dealer hand of two and three ranks."""
    rules = load_game(game)
    house = rules.dealer
    ranks = [Card(rank, Suit.CLUBS) for rank in Rank]
    hands = [(a, b) for a in ranks for b in ranks] + [
        (a, b, c) for a in ranks for b in ranks for c in ranks
    ]
    player = PlayerHand(parse_cards("10S,8D"), 1000)
    for dealer in hands:
        must = dealer_must_hit(dealer, hit_soft_17=house.hit_soft_17, stop_on_16=house.ends_on_16)
        try:
            settle_hand(player, dealer, rules)
        except WagerError as exc:
            assert must, (dealer, exc)
            assert "not finished" in str(exc)
        else:
            assert not must, dealer


def _settle_side_bet_directly(self, spot, stake, result, wager=""):
    self._settle(spot, settle_offered_side_bet(stake, result, self.rules), wager=wager)


@pytest.mark.parametrize("game", GAMES)
def test_remembered_losing_side_bets_equal_settling_each(game, monkeypatch):
    """Every step of a replay with the losing side-bet lines remembered equals the step of a
    replay that settles each side bet afresh, and a shared losing result equals a new one."""
    rules = load_game(game)
    events = _bench().generate(rules, 40, 3).events
    remembered = Table(rules, TableSettings(spots=7)).run(events)
    monkeypatch.setattr(Table, "_settle_side_bet", _settle_side_bet_directly)
    assert Table(rules, TableSettings(spots=7)).run(events) == remembered
    assert sidebets.lost("lucky_ladies") == sidebets.SideBetResult(
        "lucky_ladies", sidebets.BetResult.LOSE, "lose", "no qualifying hand"
    )


@pytest.mark.parametrize("game", GAMES)
def test_settlement_prompts_written_when_read_equal_the_eager_words(game):
    """Each settlement line's prompt, written when first read, has the words
    settlement_prompt gives its line (a string, equal and hashed as an eager prompt)."""
    rules = load_game(game)
    table = Table(rules, TableSettings(spots=7))
    lines = 0
    for step in table.run(_bench().generate(rules, 30, 4).events):
        effects = step.effects
        for line, prompt in itertools.pairwise(effects):
            if isinstance(line, Settled) and isinstance(prompt, Prompt):
                eager = Prompt("pay", settlement_prompt(line), line.spot)
                assert prompt == eager and hash(prompt) == hash(eager)
                assert type(prompt.text) is str and prompt.to_dict() == eager.to_dict()
                lines += 1
    assert lines > 100


class _Forgetful(dict):
    """A memo that remembers nothing: every prompt is made afresh."""

    def __setitem__(self, key, value):
        pass


@pytest.mark.parametrize("game", GAMES)
def test_remembered_stand_prompts_equal_fresh_ones(game, monkeypatch):
    rules = load_game(game)
    events = _bench().generate(rules, 40, 6).events
    remembered = Table(rules, TableSettings(spots=7)).run(events)
    monkeypatch.setattr(players, "_STANDS", _Forgetful())
    assert Table(rules, TableSettings(spots=7)).run(events) == remembered
    assert any(e.code == "stand" for s in remembered for e in s.effects if isinstance(e, Prompt))


def test_end_rounds_carried_bets_are_shared_within_a_bound(monkeypatch):
    """End round shares the bet events it carries (one per spot's bet and keyed amount), at
    most ``CARRIED_KEPT`` of them: past it they are forgotten and made again, and every step
    is what the unbounded table gave."""
    rules = load_game("pa-standard")
    events = _bench().generate(rules, 60, 5).events
    unbounded = Table(rules, TableSettings(spots=7))
    expected = unbounded.run(events)
    assert len(unbounded._carried_made) > 8  # the bench keys amounts: the bound is reached
    monkeypatch.setattr(console, "CARRIED_KEPT", 8)
    table = Table(rules, TableSettings(spots=7))
    for event, step in zip(events, expected, strict=True):
        assert table.handle(event) == step
        assert len(table._carried_made) <= 8
