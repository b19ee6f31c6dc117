"""The demo's autopilot: the dealer and the players of a simulated table, by the procedure.

Pure decisions: the table's public snapshot (and the last dealer prompt) in, the one thing the
dealer or a player does next out. No I/O, clock or thread; the only randomness is the injected
``random.Random`` (which spots play, wager amounts, side bets). The caller performs the action
(bet sensors and keyed amounts, a console button, a card from the shoe, a shuffle), waits until
the table has taken it and asks again.

How it knows what to do, phase by phase (``snapshot["phase"]``):

- ``betting``: clear chips left on the layout; shuffle if the cut card is out; burn one card
  when the table expects one (``shoe.burn_expected``: after a shuffle, where the profile's
  ``burn_after_shuffle`` is on); place this round's bets (drawn once per round); then lockout.
- ``dealing``: deal; the table routes each card of the initial deal itself.
- ``insurance``, ``ez_bust``: decline (next closes the window).
- ``players``: the hand ``in_action``: a split hand's second card or a double-down card is
  dealt; otherwise basic strategy (:mod:`controller.demo.strategy`), each action checked first
  with :mod:`controller.rules.actions` exactly as the table checks it, and only with its button
  wired; hit = deal, stand = next.
- ``dealer``: deal. The table stays in this phase only while the dealer must draw; it settles
  the moment the dealer stands.
- ``settled``: take the chips off every circle, then end round.

It returns None (and does nothing) while its last action is not yet on the snapshot, and for
what a dealer must decide and a robot must not guess: a card waiting for burn/assign/misdeal, a
shoe fault or open door, an unknown phase.

>>> import random
>>> from controller.games import load_game
>>> from controller.table.machine import Table
>>> rules = load_game("online-6deck")
>>> table = Table(rules, TableSettings(spots=1))
>>> pilot = Autopilot(rules, TableSettings(spots=1), random.Random(1), spots_played=1.0)
>>> pilot.next_action(table.snapshot(), None)
PlaceBet(spot=1, circle='main', amount=4000)
>>> pilot.next_action(table.snapshot(), None) is None  # not on the layout yet
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from controller.demo.strategy import basic_strategy, double_up_advised
from controller.errors import RuleViolation, WagerError
from controller.rules import actions
from controller.rules.actions import HandState
from controller.rules.cards import parse_card
from controller.rules.profile import HouseRules
from controller.rules.sidebets import blackjack_tie
from controller.table.events import CONSOLE_BUTTONS, SPOT_BUTTONS
from controller.table.machine import table_circles
from controller.table.settings import TableSettings


class Rng(Protocol):
    """What the autopilot uses of an injected ``random.Random`` (it imports no ``random``)."""

    def random(self) -> float: ...
    def randint(self, a: int, b: int) -> int: ...
    def randrange(self, start: int, stop: int, step: int = 1) -> int: ...


@dataclass(frozen=True)
class PlaceBet:
    """Chips on ``circle`` of ``spot``; ``amount`` (cents) is what the dealer keys for them."""

    spot: int
    circle: str
    amount: int


@dataclass(frozen=True)
class RemoveBet:
    """Chips taken off ``circle`` of ``spot`` (after settlement, to clear the layout)."""

    spot: int
    circle: str


@dataclass(frozen=True)
class Press:
    """A console button; ``spot`` names the spot of a per-spot button (insurance, even money,
    EZ Bust), 0 otherwise (double, split, surrender and Double Up act on the spot in action)."""

    button: str
    spot: int = 0


@dataclass(frozen=True)
class Deal:
    """Draw one card from the shoe."""


@dataclass(frozen=True)
class Shuffle:
    """Shuffle the shoe (the cut card came out)."""


Action = PlaceBet | RemoveBet | Press | Deal | Shuffle

BUTTONS = CONSOLE_BUTTONS  # as drivers/gpio_pins.py names them; SPOT_BUTTONS one per spot
REQUIRED_BUTTONS = ("lockout", "next", "end_round")
"""Without these no round can be played."""

MAIN_STEP = 500
"""Main wagers are multiples of $5."""
SIDE_STEP = 100
"""Side bets whose amount is not fixed are multiples of $1 ..."""
SIDE_CAP = 2500
"""... up to $25 (or the table's side maximum, if lower)."""


def _progress(snapshot: dict[str, Any]) -> str:
    """The parts of the snapshot the autopilot's actions change (not lights, awards, key)."""
    return repr(
        [
            snapshot.get(name)
            for name in (
                "phase",
                "round",
                "bets",
                "shoe",
                "pending_cards",
                "dealer",
                "in_action",
                "spots",
            )
        ]
    )


def _allowed(check: Callable[[], None]) -> bool:
    try:
        check()
    except (RuleViolation, WagerError):
        return False
    return True


@dataclass
class _Issued:
    """The last action, with what the snapshot showed when it was returned."""

    action: Action
    progress: str
    phase_round: tuple[Any, Any]
    dealt: int


class Autopilot:
    """The dealer and the players of one simulated table (see the module docstring).

    ``circles``: the bet circles with sensors (default every circle of the profile);
    ``buttons``: the console buttons wired (default all; ``insurance.3`` wires one spot's);
    ``side_bet_chance``: the chance of each side bet circle at a played spot;
    ``spots_played``: the chance of each spot being played in a round (at least one is).
    """

    def __init__(
        self,
        rules: HouseRules,
        settings: TableSettings,
        rng: Rng,
        *,
        circles: Iterable[str] | None = None,
        buttons: Iterable[str] | None = None,
        side_bet_chance: float = 0.3,
        spots_played: float = 0.8,
    ):
        for name, chance in (("side_bet_chance", side_bet_chance), ("spots_played", spots_played)):
            if not 0.0 <= chance <= 1.0:
                raise ValueError(f"autopilot: {name} must be between 0 and 1, got {chance!r}")
        self.rules = rules
        self.settings = settings
        self.rng = rng
        self.side_bet_chance = side_bet_chance
        self.spots_played = spots_played
        layout = table_circles(rules)
        wanted = set(layout if circles is None else circles)
        unknown = sorted(wanted - set(layout))
        if unknown:
            raise ValueError(
                f"autopilot: {', '.join(unknown)} is no bet circle of {rules.name}; circles: "
                f"{', '.join(layout)}"
            )
        if "main" not in wanted:
            raise ValueError("autopilot: the main circle needs a sensor to play at all")
        self.circles = tuple(c for c in layout if c in wanted)
        self._wired = self._read_buttons(buttons)
        self._issued: _Issued | None = None
        self._plan_round: int | None = None
        self._plan: list[PlaceBet] = []
        self._cleared_round: int | None = None

    def _read_buttons(self, buttons: Iterable[str] | None) -> set[tuple[str, int]]:
        names = [*BUTTONS, *SPOT_BUTTONS] if buttons is None else list(buttons)
        wired: set[tuple[str, int]] = set()
        for name in names:
            button, dot, spot = name.partition(".")
            if button in BUTTONS and not dot:
                wired.add((button, 0))
            elif button in SPOT_BUTTONS and not dot:
                wired.update((button, n) for n in range(1, self.settings.spots + 1))
            elif button in SPOT_BUTTONS and spot.isdigit():
                wired.add((button, int(spot)))
            else:
                raise ValueError(
                    f"autopilot: no console button {name!r}; buttons: {', '.join(BUTTONS)}, "
                    f"and per spot {', '.join(SPOT_BUTTONS)} (or e.g. insurance.3)"
                )
        missing = [b for b in REQUIRED_BUTTONS if (b, 0) not in wired]
        if missing:
            raise ValueError(f"autopilot: a table needs the {', '.join(missing)} button(s) wired")
        return wired

    def wired(self, button: str, spot: int = 0) -> bool:
        """Whether ``button`` (for ``spot``, if a per-spot button) is on the console."""
        return (button, spot) in self._wired

    def forget(self) -> None:
        """Forget the last action, so the next call decides afresh even if the snapshot shows
        no trace of it (the caller's timeout passed and the action was lost or refused)."""
        self._issued = None

    # -- the one entry point ----------------------------------------------------------------

    def next_action(self, snapshot: dict[str, Any], prompt: dict[str, Any] | None) -> Action | None:
        """The one next thing the dealer or a player does, or None (nothing to do: wait).

        ``snapshot`` is ``Table.snapshot()``; ``prompt`` the last ``Prompt`` effect as a dict
        (not needed today: everything the autopilot reads is on the snapshot).
        """
        if self._issued is not None:
            if not self._taken(snapshot):
                return None
            self._issued = None
        action = self._decide(snapshot)
        if action is not None:
            self._issued = _Issued(
                action,
                _progress(snapshot),
                (snapshot.get("phase"), snapshot.get("round")),
                snapshot["shoe"]["dealt"],
            )
        return action

    def _taken(self, snapshot: dict[str, Any]) -> bool:
        issued = self._issued
        assert issued is not None
        if (snapshot.get("phase"), snapshot.get("round")) != issued.phase_round:
            return True
        action = issued.action
        if isinstance(action, Deal):
            return snapshot["shoe"]["dealt"] != issued.dealt
        if isinstance(action, PlaceBet | RemoveBet):
            present = {"spot": action.spot, "circle": action.circle} in snapshot["bets"]
            return present == isinstance(action, PlaceBet)
        return _progress(snapshot) != issued.progress

    def _decide(self, snapshot: dict[str, Any]) -> Action | None:
        shoe = snapshot["shoe"]
        if snapshot["pending_cards"] or shoe["fault"] or shoe["door_open"]:
            return None  # the dealer's (or a technician's) decision, not the robot's
        phase = snapshot["phase"]
        if phase == "betting":
            return self._betting(snapshot)
        if phase in ("dealing", "dealer"):
            return Deal()
        if phase in ("insurance", "ez_bust"):
            return self._press("next")  # insurance, even money and EZ Bust declined
        if phase == "players":
            return self._players(snapshot)
        if phase == "settled":
            if snapshot["bets"]:
                return RemoveBet(snapshot["bets"][0]["spot"], snapshot["bets"][0]["circle"])
            return self._press("end_round")
        return None

    def _press(self, button: str, spot: int = 0) -> Press | None:
        return Press(button, spot) if self.wired(button, spot) else None

    # -- between rounds ------------------------------------------------------------------------

    def _betting(self, snapshot: dict[str, Any]) -> Action | None:
        number = snapshot["round"]
        bets = {(b["spot"], b["circle"]) for b in snapshot["bets"]}
        if self._cleared_round != number:
            if bets:  # chips of unknown amount from before: clear the layout first
                return RemoveBet(*min(bets))
            self._cleared_round = number
        if snapshot["shoe"]["cut_card_out"]:
            return Shuffle()
        if snapshot["shoe"].get("burn_expected"):
            return Deal()  # the burn card after a shuffle (profile key burn_after_shuffle)
        plan = self._bets_for(number)
        for bet in plan:
            if (bet.spot, bet.circle) not in bets:
                return bet
        stray = bets - {(bet.spot, bet.circle) for bet in plan}
        if stray:
            return RemoveBet(*min(stray))
        return self._press("lockout")

    def _bets_for(self, number: int) -> list[PlaceBet]:
        """This round's bets, drawn once per round."""
        if self._plan_round == number:
            return self._plan
        rng, spots = self.rng, self.settings.spots
        played = [n for n in range(1, spots + 1) if rng.random() < self.spots_played]
        if not played:
            played = [rng.randint(1, spots)]
        plan = []
        for spot in played:
            main = self._amount(
                self.settings.main_minimum, self.settings.main_maximum, 4, MAIN_STEP
            )
            plan.append(PlaceBet(spot, "main", main))
            tie_budget = main  # Blackjack Tie: the bonus wagers together at most the main wager
            for circle in self.circles:
                if circle == "main" or rng.random() >= self.side_bet_chance:
                    continue
                fixed = getattr(getattr(self.rules.side_bets, circle, None), "wager", None)
                if isinstance(fixed, int):
                    plan.append(PlaceBet(spot, circle, fixed))
                    continue
                high = min(self.settings.side_maximum, max(self.settings.side_minimum, SIDE_CAP))
                tie = circle.startswith(blackjack_tie.BET + ".")
                if tie:
                    high = min(high, tie_budget)
                if high < self.settings.side_minimum:
                    continue
                amount = self._amount(self.settings.side_minimum, high, None, SIDE_STEP)
                if tie:
                    tie_budget -= amount
                plan.append(PlaceBet(spot, circle, amount))
        self._plan_round, self._plan = number, plan
        return plan

    def _amount(self, low: int, high: int, times_low: int | None, step: int) -> int:
        """A random multiple of ``step`` between ``low`` and ``high`` (and ``times_low`` x
        ``low``); ``low`` when no multiple fits."""
        if times_low is not None:
            high = min(high, times_low * low)
        first = math.ceil(low / step) * step
        if first > high:
            return low
        return self.rng.randrange(first, high + 1, step)

    # -- the players ---------------------------------------------------------------------------

    def _players(self, snapshot: dict[str, Any]) -> Action | None:
        in_action = snapshot.get("in_action")
        if not in_action:
            return None
        spot = next((s for s in snapshot["spots"] if s["spot"] == in_action["spot"]), None)
        if spot is None or in_action["hand"] >= len(spot["hands"]):
            return None
        hand = spot["hands"][in_action["hand"]]
        cards = tuple(parse_card(c) for c in hand["cards"])
        if len(cards) < 2 or (hand["double_down"] and len(cards) == 2):
            return Deal()  # a split hand's second card, or the double-down card
        rules, dealer = self.rules, snapshot["dealer"]
        up = parse_card(dealer["cards"][0])
        from_split = len(spot["hands"]) > 1  # every hand of a split spot comes from the split
        state = HandState(
            cards,
            hand["wager"],
            from_split,
            from_split and cards[0].value == 1,
            hand["double_down"],
            hand["double_up"],
        )
        wager = hand["wager"]
        can_hit = _allowed(lambda: actions.check_hit(state, rules))
        decision = basic_strategy(
            cards,
            up,
            can_double=self.wired("double")
            and _allowed(lambda: actions.check_double(state, wager, rules)),
            can_split=self.wired("split")
            and _allowed(lambda: actions.check_split(state, len(spot["hands"]), rules)),
            can_surrender=self.wired("surrender")
            and _allowed(
                lambda: actions.check_surrender(
                    state, rules, dealer_checked=bool(dealer.get("checked_no_blackjack"))
                )
            ),
            rules=rules,
        )
        if decision == "hit" and can_hit:
            return Deal()
        if decision in ("double", "split", "surrender"):
            return Press(decision)
        if (
            self.wired("double_up")
            and double_up_advised(cards, up)
            and _allowed(lambda: actions.check_double_up(state, wager, rules))
        ):
            return Press("double_up")
        return Press("next")
