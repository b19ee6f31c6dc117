"""The demo's hands: the autopilot's actions carried out on a running table.

:class:`Director` reads the table over its control socket, asks the
:class:`~controller.demo.autopilot.Autopilot` for the next action and performs it the way a
dealer and players would: chips on a circle are a simulated bet sensor (``input``) and the
amount keyed at the console (``wager``), a button is a simulated press, a card is ``deal`` on
the shoe simulator's command line. After each action it waits until the table took it, then
asks again. Every settled round gives one progress line; refusals and alarms are printed.

Besides the autopilot it does three things a dealer does and a robot must be told:

- the cut card: the shoe simulator never sends it by itself, so the director sends ``cut``
  once three quarters of the shoe are dealt (the autopilot shuffles at the next round);
- a resumed table: the simulator is a fresh shoe, but the journal still counts the cards of
  the old one, so the shoe is shuffled at the first round boundary (betting or settled);
- a foreign card (one more of a kind than the shoe holds, possible in a round resumed with a
  fresh shoe): it is burned, as the alarm tells the dealer to.

Nothing here starts or stops a process: :mod:`controller.demo.stage` does.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from controller.demo.autopilot import Action, Autopilot, Deal, PlaceBet, Press, RemoveBet, Shuffle
from controller.rules.pays import format_cents
from controller.runtime.control import ControlClient

PENETRATION = 0.75
"""The cut card comes out after this share of the shoe."""
POLL_S = 0.02
"""Between two status reads while waiting."""
TAKEN_TIMEOUT_S = 5.0
"""An action the table shows no trace of after this long is forgotten (and counted) ..."""
LOST_LIMIT = 3
"""... and the demo fails when this many are lost in a row."""


class DemoError(RuntimeError):
    """The demo cannot go on: a process failed, the table is stuck or refused an action."""


class Stopped(Exception):
    """A stop was requested (Ctrl-C, SIGTERM) while waiting."""


# -- the shoe simulator's command line -------------------------------------------------------


class ShoeLine:
    """The shoe simulator's stdin and stdout: one command, its answer lines.

    ``log`` gets every line the simulator printed (its stdout is ours to read).
    """

    def __init__(self, stdin: Any, stdout: Any, log: Callable[[str], None]):
        self._in = stdin
        self._fd = stdout.fileno()
        self._buffer = b""
        self._log = log

    def readline(self, timeout: float) -> str | None:
        """The next line, or None after ``timeout`` seconds (or at end of output)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._fd], [], [], left)
            if not ready:
                return None
            data = os.read(self._fd, 4096)
            if not data:
                return None
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        text = line.decode("utf-8", "replace")
        self._log(text)
        return text

    def command(self, text: str, expect: str, timeout: float = 5.0) -> str:
        """Send ``text``; return its answer, the first line starting with ``expect`` (other
        lines, like the version the shoe sends at start, are logged only). An ``error:``
        answer or none in time is a :class:`DemoError`."""
        self._log(f"> {text}")
        try:
            self._in.write(text.encode() + b"\n")
            self._in.flush()
        except OSError as exc:
            raise DemoError(f"the shoe simulator took no command ({exc})") from None
        deadline = time.monotonic() + timeout
        while True:
            line = self.readline(max(0.0, deadline - time.monotonic()))
            if line is None:
                raise DemoError(f"the shoe simulator did not answer {text!r} in {timeout:g} s")
            if line.startswith("error:"):
                raise DemoError(f"the shoe simulator refused {text!r}: {line}")
            if line.startswith(expect):
                return line


# -- what the sign shows ---------------------------------------------------------------------


def sign_meters(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """The last complete screen in the sign's output ``text``: ``("live" | "OFFLINE: why",
    [(pool name, amount), ...])``, or None if there is none yet.

    >>> screen = "JACKPOT METERS  x\\n====\\nBlazing 7's     $10,000.75   seq 3\\n====\\nlive\\n"
    >>> sign_meters("noise\\n" + screen)
    ('live', [("Blazing 7's", '$10,000.75')])
    """
    end = len(text)
    while True:
        start = text.rfind("JACKPOT METERS", 0, end)
        if start < 0:
            return None
        lines = text[start:end].splitlines()
        for n, line in enumerate(lines):
            if n and (line == "live" or line.startswith("OFFLINE")) and lines[n - 1][:1] == "=":
                meters = []
                for body in lines[2 : n - 1]:
                    if body.startswith(" ") or ("$" not in body and "OFFLINE" not in body):
                        continue
                    words = body.split("  ")
                    name = words[0].strip()
                    amount = next((w.strip() for w in words[1:] if w.strip()), "")
                    meters.append((name, amount))
                return line, meters
        end = start


def read_tail(path: Path, size: int = 16384) -> str:
    """The last ``size`` bytes of ``path`` as text ("" if it does not exist)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


# -- the feed ---------------------------------------------------------------------------------


def new_items(before: list[dict[str, Any]], now: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of the feed ``now`` that were not in ``before`` (the feed keeps only its
    last items: the new ones are what follows the longest overlap).

    >>> new_items([{"a": 1}, {"a": 2}], [{"a": 2}, {"a": 3}])
    [{'a': 3}]
    """
    for k in range(min(len(before), len(now)), 0, -1):
        if before[len(before) - k :] == now[:k]:
            return now[k:]
    return list(now)


def signed(cents: int) -> str:
    """``1500`` -> ``'+$15.00'``, ``-500`` -> ``'-$5.00'``."""
    return ("+" if cents >= 0 else "-") + format_cents(abs(cents))


# -- the director ------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the director saw: rounds, refusals, alarms, actions the table did not show."""

    rounds: int = 0
    first_round: int | None = None
    last_round: int | None = None
    actions: int = 0
    refusals: list[str] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)
    lost_actions: int = 0
    started: float = field(default_factory=time.monotonic)


class Director:
    """Plays rounds on the table behind ``control`` with ``pilot`` until ``rounds`` rounds
    settle (None: until ``stop`` is set). ``fixed``: circle -> the stake the game fixes
    (no amount is keyed for it); ``decks``: the shoe's; ``sign_log``: the sign's output,
    for the meters; ``check``: called between actions, raises :class:`DemoError` when a
    process died; ``out``: the progress lines."""

    def __init__(
        self,
        control: ControlClient,
        shoe: ShoeLine,
        pilot: Autopilot,
        *,
        fixed: dict[str, int],
        decks: int,
        sign_log: Path,
        stop: threading.Event,
        out: TextIO,
        check: Callable[[], None] = lambda: None,
        stuck_after_s: float = 10.0,
    ):
        self.control = control
        self.shoe = shoe
        self.pilot = pilot
        self.fixed = fixed
        self.cut_at = int(decks * 52 * PENETRATION)
        self.sign_log = sign_log
        self.stop = stop
        self.out = out
        self.check = check
        self.stuck_after_s = stuck_after_s
        self.tally = Tally()
        self._feed: list[dict[str, Any]] = []
        self._prompt: dict[str, Any] | None = None
        self._last_alarm: dict[str, Any] | None = None
        self._round_nets: dict[int, int] = {}
        self._round_alarms: list[str] = []
        self._settled_round: int | None = None
        self._drawn = 0  # cards from the simulator since it was started or shuffled
        self._cut_sent = False
        self._resume_shuffle = False
        self._lost_in_a_row = 0
        self.status: dict[str, Any] = {}

    # -- reading the table ------------------------------------------------------------------

    def poll(self) -> dict[str, Any]:
        """Read the status, take in the new feed items; returns the snapshot."""
        try:
            answer = self.control.request("status")
        except (OSError, ValueError) as exc:
            self.check()
            raise DemoError(f"the table's control socket failed: {exc}") from None
        if not answer.get("ok"):
            raise DemoError(f"the table refused a status request: {answer.get('error')}")
        self.status = answer
        feed = answer.get("feed") or []
        for item in new_items(self._feed, feed):
            self._take(item)
        self._feed = feed
        return answer["status"]["snapshot"]

    def _take(self, item: dict[str, Any]) -> None:
        kind = item.get("kind")
        if kind == "prompt":
            self._prompt = item
        elif kind == "settled":
            spot = int(item["spot"])
            net = item["paid"] + item["returned"] - item["stake"]
            self._round_nets[spot] = self._round_nets.get(spot, 0) + net
        elif kind == "refused":
            text = f"{item.get('event')}: {item.get('reason')}"
            self.tally.refusals.append(text)
            self._say(f"REFUSED {text}")
        elif kind == "alarm":
            self._last_alarm = item
            text = f"{item.get('code')}: {item.get('text')}"
            self.tally.alarms.append(text)
            self._round_alarms.append(str(item.get("code")))
            self._say(f"alarm {text}; {item.get('action')}")

    def _say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    # -- the loop ---------------------------------------------------------------------------

    def play(self, rounds: int | None) -> Tally:
        """Play until ``rounds`` rounds have settled or ``stop`` is set."""
        snap = self.poll()
        if snap["phase"] == "settled":
            self._settled_round = snap["round"]  # settled (and counted) before this run
        self._resume_shuffle = snap["shoe"]["dealt"] > 0
        idle_since: float | None = None
        while not self.stop.is_set():
            self.check()
            if self._round_settled(snap) and rounds is not None and self.tally.rounds >= rounds:
                return self.tally
            action = self._extra(snap) or self.pilot.next_action(snap, self._prompt)
            if action is None:
                now = time.monotonic()
                idle_since = idle_since or now
                if now - idle_since > self.stuck_after_s:
                    raise DemoError(self._stuck_report(snap))
                time.sleep(POLL_S)
                snap = self.poll()
                continue
            idle_since = None
            snap = self.perform(action, snap)
        return self.tally

    def _round_settled(self, snap: dict[str, Any]) -> bool:
        if snap["phase"] != "settled" or snap["round"] == self._settled_round:
            return False
        self._settled_round = number = snap["round"]
        tally = self.tally
        tally.rounds += 1
        tally.last_round = number
        if tally.first_round is None:
            tally.first_round = number
        self._say(self._progress(number))
        self._round_nets.clear()
        self._round_alarms.clear()
        return True

    def _progress(self, number: int) -> str:
        nets = "  ".join(
            f"spot {spot} {signed(net)}" for spot, net in sorted(self._round_nets.items())
        )
        parts = [f"round {number:>4}", nets or "no wagers"]
        screen = sign_meters(read_tail(self.sign_log))
        if screen is None:
            parts.append("sign: no screen yet")
        elif screen[0] == "live":
            parts.append("  ".join(f"{name} {amount}" for name, amount in screen[1]))
        else:
            parts.append(f"sign {screen[0]}")
        status = self.status.get("status", {})
        link = (self.status.get("health") or {}).get("link") or {}
        state = "up" if status.get("jackpot_link") and link.get("connected") else "DOWN"
        depth = link.get("depth") or 0
        parts.append(f"link {state}" + (f" ({depth} unacked)" if depth else ""))
        if self._round_alarms:
            parts.append("alarms: " + ", ".join(self._round_alarms))
        return " | ".join(parts)

    def _stuck_report(self, snap: dict[str, Any], why: str = "") -> str:
        feed = "\n".join(json.dumps(item) for item in self._feed[-10:])
        why = why or f"the autopilot has had nothing to do for {self.stuck_after_s:g} s"
        return f"stuck: {why}\nsnapshot: {json.dumps(snap, indent=1)}\nlast feed items:\n{feed}"

    def _extra(self, snap: dict[str, Any]) -> Action | None:
        """What the director does before asking the autopilot (module docstring)."""
        if snap["pending_cards"]:
            alarm = self._last_alarm or {}
            if alarm.get("code") == "foreign_card":
                self._last_alarm = None
                return Press("burn")
            return None
        if self._resume_shuffle and snap["phase"] in ("betting", "settled"):
            self._resume_shuffle = False
            if not snap["shoe"]["cut_card_out"]:
                return Shuffle()
        return None

    # -- carrying out -----------------------------------------------------------------------

    def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        try:
            answer = self.control.request(op, **fields)
        except (OSError, ValueError) as exc:
            self.check()
            raise DemoError(f"the table's control socket failed on {op}: {exc}") from None
        if not answer.get("ok"):
            raise DemoError(f"the table answered {op} {fields} with: {answer.get('error')}")
        return answer

    def perform(self, action: Action, snap: dict[str, Any]) -> dict[str, Any]:
        """Carry out ``action``; return the snapshot once the table took it."""
        self.tally.actions += 1
        handled = self.status["status"]["events_handled"]
        if isinstance(action, PlaceBet):
            self._request("input", name=f"sensors.{action.spot}.{action.circle}", active=True)
            wanted = {"spot": action.spot, "circle": action.circle}
            snap = self._wait(lambda s: wanted in s["bets"], f"the chips on {wanted}")
            if snap is None:
                return self.poll()
            if action.circle not in self.fixed:
                self._wager(action)
            return self.poll()
        if isinstance(action, RemoveBet):
            name = f"sensors.{action.spot}.{action.circle}"
            if self._confirmed(name) is False:
                # chips the journal remembers on a circle whose (new) pin never had them: the
                # GPIO driver reports no inactive sensor at start, so put them on, then off
                self._request("input", name=name, active=True)
                if self._wait(lambda _s: self._confirmed(name) is True, f"{name} on") is None:
                    return self.poll()
            self._request("input", name=name, active=False)
        elif isinstance(action, Press):
            name = f"console.{action.button}" + (f".{action.spot}" if action.spot else "")
            self._request("press", name=name)
        elif isinstance(action, Deal):
            self.shoe.command("deal", "sent card")
            self._drawn += 1
            if self._drawn >= self.cut_at and not self._cut_sent:
                self._cut_sent = True
                self.shoe.command("cut", "sent cut")
        elif isinstance(action, Shuffle):
            self.shoe.command("shuffle", "sent shuffle end")
            self._drawn, self._cut_sent = 0, False
        else:  # pragma: no cover - the autopilot's actions are the five above
            raise DemoError(f"unknown action {action!r}")
        taken = self._wait(
            lambda s: s != snap or self.status["status"]["events_handled"] != handled,
            repr(action),
        )
        return taken if taken is not None else self.poll()

    def _confirmed(self, name: str) -> bool | None:
        """The GPIO driver's confirmed level of input ``name`` (from the last status)."""
        inputs = ((self.status.get("health") or {}).get("gpio") or {}).get("inputs") or {}
        return (inputs.get(name) or {}).get("confirmed")

    def _wager(self, bet: PlaceBet) -> None:
        answer = self._request("wager", spot=bet.spot, circle=bet.circle, amount=bet.amount)
        if not answer.get("accepted"):
            reasons = [e.get("reason", "") for e in answer.get("effects", [])]
            text = (
                f"wager spot {bet.spot} {bet.circle} {format_cents(bet.amount)}: "
                f"{'; '.join(r for r in reasons if r) or 'not accepted'}"
            )
            self.tally.refusals.append(text)
            self._say(f"REFUSED {text}")

    def _wait(self, done: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any] | None:
        """Poll until ``done(snapshot)``; None (and the autopilot forgets its action) after
        :data:`TAKEN_TIMEOUT_S`."""
        deadline = time.monotonic() + TAKEN_TIMEOUT_S
        while True:
            snap = self.poll()
            if done(snap):
                self._lost_in_a_row = 0
                return snap
            if self.stop.is_set():
                raise Stopped()
            if time.monotonic() > deadline:
                self.tally.lost_actions += 1
                self._lost_in_a_row += 1
                if self._lost_in_a_row >= LOST_LIMIT:
                    raise DemoError(self._stuck_report(snap, f"{what} was lost {LOST_LIMIT} times"))
                self._say(f"warning: the table showed no trace of {what} in {TAKEN_TIMEOUT_S} s")
                self.pilot.forget()
                return None
            time.sleep(POLL_S)

    def drain_outbox(self, timeout: float) -> int:
        """Wait until the jackpot controller acknowledged every message of the table's
        outbox (or ``timeout``); returns the messages still unacknowledged."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(DemoError):
                self.poll()
            link = (self.status.get("health") or {}).get("link") or {}
            depth = int(link.get("depth") or 0)
            if depth == 0 or time.monotonic() > deadline:
                return depth
            time.sleep(0.05)
