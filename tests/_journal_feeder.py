"""A deterministic table session for the journal tests, and the crash test's child process.

:func:`session_events` plays ``rounds`` full rounds of a game from a seeded
:class:`random.Random`: 3 to 7 players bet (main wager and side bets), a shuffled
shoe deals, and a small basic-strategy-ish player splits pairs, doubles 10 and 11,
surrenders 16 against a ten, takes insurance, even money, EZ Bust and Double Up.
It drives a real :class:`~controller.table.Table` to know what the procedure expects,
so the events are legal except for a few deliberate refused presses, late bets,
unexpected cards, voided rounds and ticks, as a real dealer's session has.

Run as a program (the crash test's child)::

    python tests/_journal_feeder.py JOURNAL GAME SEED ROUNDS [PACE_MS]

it opens ``JOURNAL`` (a :class:`~controller.journal.JournaledTable`, recovering what
an earlier run journaled), prints ``repub KEY`` for the publish requests of the last
recovered step (a crash may have lost them) and ``recovered K``, and feeds the rest
of the session. For each event it prints ``pub KEY`` for each publish request and,
once the step is journaled, ``ok J I`` (J events journaled so far, I events of the
session handled), flushing after every journaled step. ``PACE_MS`` (default 0) is a
pause after each event, as a dealer's pace has: the crash test's kill then lands at
any point of an event (handling, the commit, printing) on fast and slow disks alike.

Environment (all optional):

- ``FEEDER_CHECKPOINT_EVERY=N``: checkpoints at each round's end and every N events;
- ``FEEDER_ROTATE_EVERY_ROUNDS=K``: gaming-day files: each K rounds are one gaming day
  (:func:`gaming_day_ms`, a clock that follows the rounds, not the wall), and the feeder
  rotates the journal (:func:`controller.journal.rotation.rotate`) as soon as one is over and
  no round is in progress: at start-up (a rotation a kill interrupted is done again) and after
  each journaled event. It prints ``rot STEP`` at each step of a rotation (before the step)
  and ``rotated FIRST LAST DAY`` when one is done; it removes what a killed rotation left
  half-written at start-up, as the daemon does;
- ``FEEDER_ROTATION_PAUSE_MS=P``: a pause at each step of a rotation, after its ``rot`` line,
  so that a kill lands inside a rotation;
- ``FEEDER_KEEP_DAYS=D``: the rotation's retention (default: keep every archive);
- ``FEEDER_HOLD=LINE[,LINE...]``: after printing the first line that :func:`holds_at`
  ``LINE`` (``rot archive``, ``rotated``; ``ok 57``: the first ``ok`` of event 57 or later),
  wait for a line on stdin before going on; then the same for the next ``LINE``. The crash
  tests kill the child at the first, or answer and kill it a moment later, at the latest at
  the second: where a kill lands then depends on where the child waits, not on how soon
  the parent reads.

The parent must read what the child printed through the file object it iterated
(:func:`killed`), not with :meth:`subprocess.Popen.communicate`: that reads the pipe
itself and loses the lines Python had already read ahead into ``child.stdout``'s buffer.
On a loaded machine the child is several lines ahead, and those lost ``ok`` lines made
the crash tests count 2-12 journaled events as never reported (issue 26).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from datetime import time as dt_time
from pathlib import Path

if __name__ == "__main__":  # run as a script from anywhere: the repository on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.games import load_game
from controller.rules.cards import Card, Rank, Suit
from controller.rules.hand import hand_total
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Publish, Step
from controller.table.state import Phase

SETTINGS = TableSettings(spots=7)


class _Dealer:
    """Feeds events to a table and keeps them, with a clock and a shoe."""

    def __init__(self, game: str, seed: int, clock: int = 1_770_000_000_000):
        self.rules = load_game(game)
        self.table = Table(self.rules, SETTINGS)
        self.rng = random.Random(seed)
        self.events: list[ev.Event] = []
        self.clock = clock  # ms, a date in 2026
        self.shoe: list[Card] = []
        self.cut = 0

    def feed(self, make, *args, **kwargs) -> Step:
        rng = self.rng
        self.clock += rng.randint(150, 4000)
        if rng.random() < 0.08:  # an event the driver did not stamp
            event = make(*args, **kwargs)
        else:
            event = make(*args, **kwargs, t=self.clock)
        if rng.random() < 0.1:
            self.events.append(ev.Tick(t=self.clock - 50))
            self.table.handle(self.events[-1])
        self.events.append(event)
        return self.table.handle(event)

    def shuffle(self, kind: str) -> None:
        decks = self.rules.shoe.decks
        self.shoe = [Card(rank, suit) for rank in Rank for suit in Suit] * decks
        self.rng.shuffle(self.shoe)
        self.cut = 52 if decks > 1 else 15
        self.feed(ev.ShoeEvent, kind)
        if self.table.state.burn_expected:  # the profile's burn_after_shuffle
            self.card()  # the burn card

    def card(self) -> Step:
        card = self.shoe.pop()
        step = self.feed(ev.CardDrawn, card)
        if len(self.shoe) == self.cut:
            self.feed(ev.ShoeEvent, "cut_card")
        return step


def _play_round(d: _Dealer) -> None:
    table, rng, rules = d.table, d.rng, d.rules
    state = table.state
    players = sorted(rng.sample(range(1, SETTINGS.spots + 1), rng.randint(3, 7)))
    sides = [c for c in table.circles if c != "main"]
    for spot in range(1, SETTINGS.spots + 1):
        on = spot in players
        if state.sensors.get((spot, "main"), False) != on:
            d.feed(ev.BetSensor, spot, "main", on)
        if on and rng.random() < 0.5:
            d.feed(ev.WagerAmount, spot, "main", rng.choice((1000, 2500, 5000, 10000)))
        for circle in sides:
            want = on and rng.random() < 0.3
            if state.sensors.get((spot, circle), False) != want:
                d.feed(ev.BetSensor, spot, circle, want)
    if rng.random() < 0.05:
        d.feed(ev.Insurance, players[0])  # refused: no window open
    while not d.feed(ev.Lockout).accepted:  # e.g. Blackjack Tie bonuses above the wager
        for (spot, circle), on in sorted(state.sensors.items()):
            if on and circle != "main":
                d.feed(ev.BetSensor, spot, circle, False)
                break
    late = rng.random() < 0.05
    void = rng.random() < 0.03
    for _ in range(400):
        phase = state.phase
        rnd = state.round
        if state.pending:
            d.feed(ev.Burn)
        elif phase is Phase.SETTLED:
            break
        elif phase is Phase.DEALING or phase is Phase.DEALER:
            d.card()
        elif phase is Phase.INSURANCE:
            for spot in rnd.spots.values():
                hand = spot.hands[0]
                if spot.insurance or spot.even_money or rng.random() < 0.5:
                    continue
                if hand_total(hand.cards).total == 21 and rules.blackjack.even_money:
                    d.feed(ev.EvenMoney, spot.number)
                elif rules.insurance.offered:
                    d.feed(ev.Insurance, spot.number)
            d.feed(ev.Next) if rng.random() < 0.8 else d.card()
        elif phase is Phase.EZ_BUST:
            for spot in rnd.spots.values():
                if not spot.ez_bust and rng.random() < 0.4:
                    d.feed(ev.EzBust, spot.number, rng.choice((None, 500)))
            d.feed(ev.Next) if rng.random() < 0.8 else d.card()
        elif phase is Phase.PLAYERS:
            if late:
                late = False
                empty = [s for s in range(1, SETTINGS.spots + 1) if s not in rnd.spots]
                if empty:
                    d.feed(ev.BetSensor, empty[0], "main", True)  # late bet: an alarm
                    d.feed(ev.BetSensor, empty[0], "main", False)
            if void:
                d.feed(ev.SupervisorKey, True)
                d.feed(ev.VoidRound, "dealer error")
                d.feed(ev.SupervisorKey, False)
                break
            _player_acts(d)
    else:  # pragma: no cover - a generator bug
        raise AssertionError(f"round {state.round_number} did not settle: {table.snapshot()}")
    if rng.random() < 0.04:
        d.card()  # a card nobody expects: alarm, then the dealer burns it
        d.feed(ev.Burn)
    d.feed(ev.EndRound)
    if len(d.shoe) <= d.cut:
        d.shuffle("shuffle")


def _player_acts(d: _Dealer) -> None:
    rnd, rng, rules = d.table.state.round, d.rng, d.rules
    spot_no, index = rnd.in_action
    spot = rnd.spots[spot_no]
    hand = spot.hands[index]
    if len(hand.cards) < 2 or hand.double_down:
        d.card()
        return
    up = rnd.dealer[0].value
    count = hand_total(hand.cards)
    first, second = hand.cards[0], hand.cards[-1]
    tried: Step | None = None
    if len(hand.cards) == 2 and first.value == second.value and first.value in (1, 8, 9, 2, 3):
        tried = d.feed(ev.Split, spot_no)
    elif len(hand.cards) == 2 and not count.soft and count.total in (10, 11) and up < 10:
        tried = d.feed(ev.Double, spot_no)
    elif count.total == 16 and up == 10 and rng.random() < 0.6:
        tried = d.feed(ev.Surrender, spot_no)
    elif rules.double_up.offered and count.total in (17, 18) and rng.random() < 0.3:
        tried = d.feed(ev.DoubleUp, spot_no)
    if tried is not None and tried.accepted:
        return
    stand_on = 18 if count.soft else (12 if 2 <= up <= 6 else 17)
    # a split ace takes one card, then stands or makes its Double Up (issue 31): no hit
    if count.total < stand_on and d.table._takes_card(hand):
        d.card()
    else:
        d.feed(ev.Next)


def session_events(
    game: str, seed: int, rounds: int, *, clock: int = 1_770_000_000_000
) -> list[ev.Event]:
    """``rounds`` rounds of ``game`` at a 7-spot table, as the events a dealer's session
    sends (starting with a new shoe); ``clock``: the table's clock (ms) before the first."""
    d = _Dealer(game, seed, clock)
    d.shuffle("new_shoe")
    for _ in range(rounds):
        _play_round(d)
    return d.events


def consumed(events: list[ev.Event], game: str, journaled: int) -> int:
    """How many of ``events`` a table has taken when ``journaled`` of them were journaled
    (the ticks after the last one that changed nothing are not counted)."""
    table = Table(load_game(game), SETTINGS)
    if journaled == 0:
        return 0
    count = 0
    for number, event in enumerate(events, 1):
        count += table.handle(event).journal
        if count == journaled:
            return number
    raise ValueError(f"the session journals only {count} events, not {journaled}")


FIRST_GAMING_DAY_MS = 1_767_268_800_000
"""Noon UTC on 2026-01-01: the feeder's first gaming day (days start at 06:00 UTC)."""

DAY_MS = 86_400_000


def gaming_day_ms(round_number: int, every_rounds: int) -> int:
    """The feeder's clock for rotation: noon UTC of round ``round_number``'s gaming day,
    each ``every_rounds`` rounds one day from 2026-01-01."""
    return FIRST_GAMING_DAY_MS + (round_number - 1) // every_rounds * DAY_MS


def holds_at(line: str, hold: str) -> bool:
    """Whether the output ``line`` (without its newline) is where ``FEEDER_HOLD``'s ``hold``
    makes the child wait."""
    if hold.startswith("ok "):
        return line.startswith("ok ") and int(line.split()[1]) >= int(hold.split()[1])
    return line == hold or line.startswith(hold + " ")


class _Out:
    """The child's stdout; see ``FEEDER_HOLD`` in the module docstring."""

    def __init__(self, stream, hold: str | None):
        self.stream = stream
        self.holds = hold.split(",") if hold else []

    def put(self, text: str) -> None:
        """A line, flushed with the next :meth:`line`."""
        self.stream.write(text + "\n")

    def line(self, text: str) -> None:
        """A line, flushed; waits for the parent if it is the line to hold at."""
        self.put(text)
        self.stream.flush()
        if self.holds and holds_at(text, self.holds[0]):
            del self.holds[0]
            sys.stdin.readline()  # the parent's go (or the kill)


def killed(child: subprocess.Popen[str], timeout: float = 60) -> tuple[str, str]:
    """SIGKILL ``child`` (started with text pipes) and return the rest of its stdout and
    its stderr, read through ``child.stdout`` itself, read-ahead buffer included (see the
    module docstring)."""
    child.send_signal(signal.SIGKILL)
    child.wait(timeout)
    assert child.stdout is not None and child.stderr is not None
    rest, errors = child.stdout.read(), child.stderr.read()
    for pipe in (child.stdin, child.stdout, child.stderr):
        if pipe is not None:
            with contextlib.suppress(BrokenPipeError):  # a go still buffered for the dead child
                pipe.close()
    return rest, errors


class _Rotator:
    """Rotates the journal of a table when the feeder's gaming day is over."""

    def __init__(self, out, every_rounds: int, pause: float, keep_days: int | None):
        from controller.journal.rotation import GamingDay

        self.out = out
        self.every = every_rounds
        self.pause = pause
        self.keep_days = keep_days
        self.day = GamingDay(dt_time(6, 0), "UTC")

    def hook(self, step: str) -> None:
        self.out.line(f"rot {step}")
        if self.pause:
            time.sleep(self.pause)

    def __call__(self, table) -> None:
        from controller.journal.rotation import due, rotate

        if table.round_in_progress:
            return
        utc_ms = gaming_day_ms(table.state.round_number, self.every)
        new_day = due(table.journal, self.day, utc_ms)
        if new_day is None:
            return
        done = rotate(table, new_day, keep_days=self.keep_days, utc_ms=utc_ms, hook=self.hook)
        self.out.line(f"rotated {done.first_event} {done.last_event} {done.gaming_day}")


def main(argv: list[str]) -> int:
    from controller.journal import JournaledTable
    from controller.journal.rotation import remove_partials

    path, game, seed, rounds = argv[0], argv[1], int(argv[2]), int(argv[3])
    pace = float(argv[4]) / 1000 if len(argv) > 4 else 0.0
    events = session_events(game, seed, rounds)
    out = _Out(sys.stdout, os.environ.get("FEEDER_HOLD"))
    every = os.environ.get("FEEDER_CHECKPOINT_EVERY")  # checkpoints as the daemon writes them
    checkpoint_every = int(every) if every else None
    rotate_every = int(os.environ.get("FEEDER_ROTATE_EVERY_ROUNDS") or 0)
    pause_ms = float(os.environ.get("FEEDER_ROTATION_PAUSE_MS") or 0)
    keep = os.environ.get("FEEDER_KEEP_DAYS")
    rotator = _Rotator(out, rotate_every, pause_ms / 1000, int(keep) if keep else None)
    with JournaledTable(
        path, load_game(game), SETTINGS, checkpoint_every=checkpoint_every
    ) as table:
        if rotate_every:
            remove_partials(path)
        journaled = table.recovered
        last = table.recovery.last_step
        for effect in last.effects if last is not None else ():
            if isinstance(effect, Publish):  # the crash may have lost these: offer again
                out.put(f"repub {effect.key}")
        out.line(f"recovered {journaled}")
        if rotate_every:
            rotator(table)  # a gaming day a kill left unrotated
        start = consumed(events, game, journaled)
        for number, event in enumerate(events[start:], start + 1):
            step = table.handle(event)
            for effect in step.effects:
                if isinstance(effect, Publish):
                    out.put(f"pub {effect.key}")
            if step.journal:
                journaled += 1
                out.line(f"ok {journaled} {number}")
                if rotate_every:
                    rotator(table)
            if pace:
                time.sleep(pace)
    out.line("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
