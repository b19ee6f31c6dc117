"""7-spot rounds replayed per second through the table state machine.

Run from the repository root: ``python3 bench/replay_rounds.py``. Not a test.

First (untimed) it deals ``--rounds`` rounds at a 7-spot table by driving a
:class:`~controller.table.Table` with a seeded random player: a main wager on
every spot, side bets at random (each side-bet circle of the layout, such as
Lucky Ladies, 21+3 Xtreme, Blazing 7's), keyed main-wager amounts, cards from a
shuffled shoe with the cut card, shuffle and burn card, EZ Bust and insurance or
even money now and then, and a simple basic strategy (hit, stand, double, split,
late surrender). Every event must be accepted, so the scripts are legal.

Then it replays those events, all rounds in order through one fresh table, on
one core, ``--repeat`` times, and reports the best. Only ``Table.handle`` is
timed. An untimed replay checks that every event is accepted again and that the
settlements (and the final snapshot) equal those of the generation; a timed
replay's final snapshot is checked too. Any difference exits with status 1.

The last line is ``key=value`` pairs: ``rounds_per_s=... events_per_s=...
rounds=... spots=7 game=...``.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.errors import RuleViolation, WagerError  # noqa: E402
from controller.games import load_game  # noqa: E402
from controller.rules import actions  # noqa: E402
from controller.rules.cards import ALL_CARDS, Card  # noqa: E402
from controller.rules.hand import hand_total, is_pair  # noqa: E402
from controller.rules.profile import HouseRules  # noqa: E402
from controller.table import Table, TableSettings, table_circles  # noqa: E402
from controller.table import events as ev  # noqa: E402
from controller.table.effects import Settled  # noqa: E402
from controller.table.state import HandInPlay, Phase  # noqa: E402

SPOTS = 7
SIDE_BET_CHANCE = 0.3  # each side-bet circle of each spot, each round
AMOUNT_CHANCE = 0.15  # a spot keys a new main-wager amount
INSURANCE_CHANCE = 0.15
EVEN_MONEY_CHANCE = 0.5
EZ_BUST_CHANCE = 0.25
MAIN_AMOUNTS = tuple(range(1000, 10001, 500))


class Shoe:
    """A shuffled shoe of ``rules.shoe.decks`` decks with the cut card at
    ``reshuffle_after`` of it."""

    def __init__(self, rules: HouseRules, rng: random.Random):
        self.decks = rules.shoe.decks
        self.rng = rng
        self.cut = int(len(ALL_CARDS) * self.decks * rules.shoe.reshuffle_after)
        self.cards: list[Card] = []
        self.position = 0
        self.shuffle()

    def shuffle(self) -> None:
        self.cards = list(ALL_CARDS) * self.decks
        self.rng.shuffle(self.cards)
        self.position = 0

    def draw(self) -> tuple[Card, bool]:
        """The next card, and whether the cut card came out just before it."""
        card = self.cards[self.position]
        self.position += 1
        return card, self.position == self.cut + 1


def strategy(hand: HandInPlay, up: int) -> str:
    """Basic strategy, simplified: ``split``, ``double``, ``surrender``, ``hit`` or ``stand``.

    ``up`` is the dealer's up card in points (ace 1). The caller falls back to
    hitting (or standing) where the table's rules refuse the choice.
    """
    cards = hand.cards
    up = 11 if up == 1 else up
    count = hand_total(cards)
    total = count.total
    if len(cards) == 2 and is_pair(cards[0], cards[1]):
        pair = cards[0].value
        if pair in (1, 8):
            return "split"
        if (pair in (2, 3, 6, 7) and up <= 7) or (pair == 9 and up not in (7, 10, 11)):
            return "split"
    if len(cards) == 2 and total == 16 and not count.soft and up >= 9:
        return "surrender"
    if count.soft:
        if len(cards) == 2 and (
            (13 <= total <= 18 and 5 <= up <= 6) or (17 <= total <= 18 and up in (3, 4))
        ):
            return "double"
        if total >= 19 or (total == 18 and up <= 8):
            return "stand"
        return "hit"
    if len(cards) == 2 and (
        (total == 11 and up <= 10) or (total == 10 and up <= 9) or (total == 9 and 3 <= up <= 6)
    ):
        return "double"
    if total >= 17 or (13 <= total <= 16 and up <= 6) or (total == 12 and 4 <= up <= 6):
        return "stand"
    return "hit"


def _allowed(check) -> bool:
    try:
        check()
    except (RuleViolation, WagerError):
        return False
    return True


class Generator:
    """Drives a table through rounds and records every event it fed it."""

    def __init__(self, rules: HouseRules, seed: int):
        self.rules = rules
        self.rng = random.Random(seed)
        self.table = Table(rules, TableSettings(spots=SPOTS))
        self.side_circles = [c for c in table_circles(rules) if c != "main"]
        self.shoe = Shoe(rules, self.rng)
        self.t = 0
        self.events: list[ev.Event] = []
        self.settled: list[Settled] = []

    def feed(self, make, **fields) -> None:
        self.t += self.rng.randint(200, 3000)
        event = make(**fields, t=self.t)
        step = self.table.handle(event)
        if not step.accepted:
            raise SystemExit(f"generation: {event!r} refused: {step.reason}")
        self.events.append(event)
        self.settled.extend(e for e in step.effects if isinstance(e, Settled))

    def card(self) -> None:
        card, cut_card = self.shoe.draw()
        if cut_card:
            self.feed(ev.ShoeEvent, event="cut_card")
        self.feed(ev.CardDrawn, card=card)

    def round(self) -> None:
        """One round, from placing bets to end round."""
        state, rng = self.table.state, self.rng
        if state.cut_card_out or not self.events:
            self.shoe.shuffle()
            self.feed(ev.ShoeEvent, event="shuffle" if self.events else "new_shoe")
        if state.burn_expected:
            self.card()
        for spot in range(1, SPOTS + 1):
            if not state.sensors.get((spot, "main")):
                self.feed(ev.BetSensor, spot=spot, circle="main", on=True)
            if rng.random() < AMOUNT_CHANCE:
                self.feed(ev.WagerAmount, spot=spot, circle="main", amount=rng.choice(MAIN_AMOUNTS))
            for circle in self.side_circles:
                want = rng.random() < SIDE_BET_CHANCE
                if bool(state.sensors.get((spot, circle))) != want:
                    self.feed(ev.BetSensor, spot=spot, circle=circle, on=want)
        self.feed(ev.Lockout)
        while state.phase is not Phase.SETTLED:
            phase = state.phase
            if phase is Phase.DEALING or phase is Phase.DEALER:
                self.card()
            elif phase is Phase.INSURANCE:
                self.insurance()
            elif phase is Phase.EZ_BUST:
                for spot in state.round.spots:
                    if rng.random() < EZ_BUST_CHANCE:
                        self.feed(ev.EzBust, spot=spot)
                self.feed(ev.Next)
            elif phase is Phase.PLAYERS:
                self.play()
            else:  # pragma: no cover - the table waits for nothing else
                raise SystemExit(f"generation: unexpected phase {phase}")
        self.feed(ev.EndRound)

    def insurance(self) -> None:
        table, rng = self.table, self.rng
        rnd = table.state.round
        up = rnd.dealer[0]
        for spot in rnd.spots.values():
            cards = spot.hands[0].cards
            if (
                self.rules.blackjack.even_money
                and rng.random() < EVEN_MONEY_CHANCE
                and _allowed(lambda c=cards: actions.check_even_money(c, up, self.rules))
            ):
                self.feed(ev.EvenMoney, spot=spot.number)
            elif self.rules.insurance.offered and rng.random() < INSURANCE_CHANCE:
                self.feed(ev.Insurance, spot=spot.number)
        self.feed(ev.Next)

    def play(self) -> None:
        """One decision (or card) for the hand in action."""
        table, rules = self.table, self.rules
        rnd = table.state.round
        spot_no, index = rnd.in_action
        spot = rnd.spots[spot_no]
        hand = spot.hands[index]
        if len(hand.cards) < 2 or hand.double_down:
            self.card()
            return
        choice = strategy(hand, rnd.dealer[0].value)
        held = table._hand_state(hand)
        if choice == "split" and _allowed(
            lambda: actions.check_split(held, len(spot.hands), rules)
        ):
            self.feed(ev.Split, spot=spot_no)
            return
        if choice == "surrender" and _allowed(
            lambda: actions.check_surrender(held, rules, dealer_checked=rnd.dealer_checked)
        ):
            self.feed(ev.Surrender, spot=spot_no)
            return
        if choice == "double" and _allowed(lambda: actions.check_double(held, hand.wager, rules)):
            self.feed(ev.Double, spot=spot_no)
            return
        if choice == "stand" or not table._takes_card(hand):
            self.feed(ev.Next)
        else:
            self.card()


def generate(rules: HouseRules, rounds: int, seed: int) -> Generator:
    gen = Generator(rules, seed)
    for _ in range(rounds):
        gen.round()
    return gen


def replay(rules: HouseRules, events: list[ev.Event]) -> tuple[float, float, Table]:
    """Wall-clock and CPU seconds to feed ``events`` through a fresh table (only the
    handling is timed)."""
    table = Table(rules, TableSettings(spots=SPOTS))
    handle = table.handle
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    for event in events:
        handle(event)
    return time.perf_counter() - start, time.process_time() - cpu, table


def verify(rules: HouseRules, gen: Generator) -> list[str]:
    """Replay untimed; name every difference from the generation."""
    table = Table(rules, TableSettings(spots=SPOTS))
    settled: list[Settled] = []
    problems = []
    for number, event in enumerate(gen.events):
        step = table.handle(event)
        if not step.accepted:
            problems.append(f"event {number} {event!r} refused on replay: {step.reason}")
        settled.extend(e for e in step.effects if isinstance(e, Settled))
    if settled != gen.settled:
        problems.append(f"{len(settled)} settlements on replay, {len(gen.settled)} generated")
        for mine, theirs in zip(settled, gen.settled, strict=False):
            if mine != theirs:
                problems.append(f"first difference: replay {mine} != generated {theirs}")
                break
    if table.snapshot() != gen.table.snapshot():
        problems.append("final snapshot differs from the generation's")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000, help="rounds to deal and replay")
    parser.add_argument("--game", default="pa-standard", help="house-rule profile")
    parser.add_argument("--repeat", type=int, default=3, help="timed replays (best is shown)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated rounds")
    args = parser.parse_args()
    # here, not at the top: the replay tests load this file by its path, without bench/ on
    # sys.path, and use only its generator and replay
    from _machine import describe

    ran_on = describe()  # the load before this run's own
    rules = load_game(args.game)

    start = time.perf_counter()
    gen = generate(rules, args.rounds, args.seed)
    made = time.perf_counter() - start
    events = gen.events
    wagers: dict[str, int] = {}
    for line in gen.settled:
        wagers[line.wager] = wagers.get(line.wager, 0) + 1
    print(
        f"replay of {args.rounds} rounds at {SPOTS} spots, {rules.name}, seed {args.seed}, "
        f"Python {sys.version.split()[0]}"
    )
    print(
        f"generated in {made:.2f} s: {len(events)} events, "
        f"{len(events) / args.rounds:.1f} events per round, {len(gen.settled)} settlements"
    )
    print("settled wagers: " + ", ".join(f"{k} {v}" for k, v in sorted(wagers.items())))
    kinds: dict[str, int] = {}
    for event in events:
        kind = event.event if isinstance(event, ev.ShoeEvent) else event.TYPE
        kinds[kind] = kinds.get(kind, 0) + 1
    print("events: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))

    problems = verify(rules, gen)
    if problems:
        print("REPLAY DIFFERS FROM GENERATION:", *problems, sep="\n  ")
        return 1
    print("verified: every event accepted, settlements and final snapshot equal the generation's")

    expected = gen.table.snapshot()
    # The bench's own data (the events, the generation's table) is not the table's:
    # keep the collector from walking it on every full collection of a replay.
    gc.collect()
    gc.freeze()
    best = best_cpu = float("inf")
    for run in range(1, args.repeat + 1):
        seconds, cpu, table = replay(rules, events)
        if table.snapshot() != expected:
            print(f"timed replay {run}: final snapshot differs from the generation's")
            return 1
        del table
        best, best_cpu = min(best, seconds), min(best_cpu, cpu)
        print(
            f"replay {run}: {seconds:.3f} s ({cpu:.3f} s CPU), "
            f"{args.rounds / seconds:,.0f} rounds/s"
        )
    rounds_per_s = args.rounds / best
    events_per_s = len(events) / best
    print(
        f"best of {args.repeat}: {best:.3f} s for {args.rounds} rounds, {len(events)} events "
        f"({1e6 * best / len(events):.1f} us per event; best CPU {best_cpu:.3f} s)"
    )
    print(ran_on)
    print(
        f"rounds_per_s={rounds_per_s:.0f} events_per_s={events_per_s:.0f} "
        f"rounds={args.rounds} spots={SPOTS} game={rules.name}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
