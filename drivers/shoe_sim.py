"""``shoe-sim``: a card-reading shoe on a pseudo-terminal, scriptable, with every fault.

The reader (:mod:`drivers.shoe`) plugs into it exactly as into a real shoe: the
first line on stdout is the pseudo-terminal's path. Commands arrive on stdin,
one per line; each is answered on stdout (``sent card QH seq 0C``), so a test or
the demo autopilot can follow. ``hardware/shoe-protocol.md`` documents the
commands; ``help`` lists them.

Run ``shoe-sim --decks 6 --seed 7`` or ``python -m drivers.shoe_sim --cards QH,7D,AS``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import select
import sys
import time
import tty
from collections.abc import Callable, Sequence

from controller.errors import CardError
from controller.rules.cards import ALL_CARDS, Card, parse_cards
from drivers.shoe_protocol import SEQ_MODULO, Message, encode_frame, encode_message

FIRMWARE = "SIM 1.0"
COMMANDS = """\
deal [N]            draw N cards (default 1)
shuffle             shuffle start, refill and shuffle the shoe, shuffle end
new-shoe            a fresh shoe (refilled and shuffled), reported as new shoe
cut                 the cut card came out
door open|closed    the shoe's door
fault TEXT          a jam or fault, e.g. fault JAM feed roller
clear               the fault is cleared
version             send the firmware version
restart             power-cycle: the count starts again, VER numbered 00 first
heartbeat           send a heartbeat now
garbage [N]         N random bytes on the line (default 16)
bad-checksum        the next frame goes out with a wrong checksum
drop                the next frame is not sent (its sequence number is used up)
dup                 the next frame is sent twice
replay SEQ          send again the frame last sent with number SEQ (hex, as on the wire)
silence MS          no bytes at all for MS ms, heartbeats included (frames wait)
hangup [MS]         close the pty, reopen a new one after MS ms (default 1000)
status              sequence number, cards left, faults armed
help                this list
quit                close the pty and exit"""
"""The command interface (also in hardware/shoe-protocol.md). Faults armed by
``bad-checksum``, ``drop`` and ``dup`` apply to the next frame that is not a
heartbeat."""


def open_pty() -> tuple[int, int, str]:
    """A raw pseudo-terminal: ``(master_fd, slave_fd, slave_path)``; the master does
    not block (a full pty loses bytes, as a serial line with nobody listening does)."""
    master, slave = os.openpty()
    tty.setraw(slave)
    os.set_blocking(master, False)
    return master, slave, os.ttyname(slave)


def point_link(link: str, target: str) -> None:
    """Make ``link`` a symlink to ``target``, replacing it atomically (as udev does)."""
    tmp = f"{link}.tmp{os.getpid()}"
    os.symlink(target, tmp)
    os.replace(tmp, link)


class SimShoe:
    """The simulated shoe: its cards, sequence numbers, armed faults and pty.

    ``say`` receives every answer line. Time (``now``, in seconds) is passed in by
    the command loop, so heartbeats, silence and reopening follow it.
    """

    def __init__(
        self,
        *,
        cards: Sequence[Card] | None = None,
        decks: int = 6,
        seed: int | None = None,
        heartbeat_ms: int = 1000,
        firmware: str = FIRMWARE,
        link: str | None = None,
        say: Callable[[str], None] = print,
        verbose: bool = False,
    ):
        self.rng = random.Random(seed)
        self.given = list(cards) if cards is not None else None
        self.decks = decks
        self.heartbeat_s = heartbeat_ms / 1000
        self.firmware = firmware
        self.link = link
        self.say = say
        self.verbose = verbose
        self.last_seq: int | None = None
        self.armed: set[str] = set()
        self.held: list[bytes] = []
        self.sent: dict[int, tuple[str, bytes]] = {}  # the last frame made under each number
        self.master: int | None = None
        self.slave: int | None = None
        self.path = ""
        self.silent_until = 0.0
        self.reopen_at: float | None = None
        self.next_heartbeat = 0.0
        self.full = False
        self.shoe: list[Card] = []
        self.refill()

    # -- the pty -----------------------------------------------------------------------------

    def open(self, now: float) -> str:
        self.master, self.slave, self.path = open_pty()
        if self.link:
            point_link(self.link, self.path)
        self.next_heartbeat = now + self.heartbeat_s
        return self.path

    def hang_up(self, now: float, ms: int) -> None:
        self._unlink()  # first, as udev removes a by-id link: nobody opens the dead pty by it
        for fd in (self.master, self.slave):
            if fd is not None:
                os.close(fd)
        self.master = self.slave = None
        self.reopen_at = now + ms / 1000
        self.held.clear()

    def close(self) -> None:
        for fd in (self.master, self.slave):
            if fd is not None:
                os.close(fd)
        self.master = self.slave = None
        self._unlink()

    def _unlink(self) -> None:
        if self.link and os.path.islink(self.link) and os.readlink(self.link) == self.path:
            os.unlink(self.link)

    def deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (seconds), or None."""
        times = [self.reopen_at] if self.reopen_at is not None else []
        if self.master is not None:
            if self.heartbeat_s > 0:
                times.append(max(self.next_heartbeat, self.silent_until))
            if self.held:
                times.append(self.silent_until)
        return min(times) if times else None

    def tick(self, now: float) -> None:
        """Reopen after a hang-up, end a silence, send a heartbeat when due."""
        if self.reopen_at is not None and now >= self.reopen_at:
            self.reopen_at = None
            self.say(f"reopened {self.open(now)}")
        if self.master is None or now < self.silent_until:
            return
        if self.held:
            held, self.held = self.held, []
            for data in held:
                self.write(data)
            self.say("silence over")
        if self.heartbeat_s > 0 and now >= self.next_heartbeat:
            self.heartbeat()
            self.next_heartbeat = now + self.heartbeat_s

    def write(self, data: bytes) -> bool:
        if self.master is None:
            return False
        try:
            os.write(self.master, data)
        except BlockingIOError:
            if not self.full:
                self.full = True
                self.say("lost bytes: the pty is full (nobody is reading the shoe)")
            return False
        self.full = False
        return True

    # -- frames ------------------------------------------------------------------------------

    def refill(self) -> None:
        if self.given is not None:
            self.shoe = list(reversed(self.given))
        else:
            self.shoe = [card for card in ALL_CARDS for _ in range(self.decks)]
            self.rng.shuffle(self.shoe)

    def send(self, now: float, kind: str, label: str, *, card: Card | None = None, text=""):
        seq = 0 if self.last_seq is None else (self.last_seq + 1) % SEQ_MODULO
        self.last_seq = seq
        corrupt, drop, dup = (
            "bad-checksum" in self.armed,
            "drop" in self.armed,
            "dup" in self.armed,
        )
        self.armed.clear()
        frame = encode_message(Message(seq, kind, card, text), corrupt=corrupt)
        self.sent[seq] = (label, encode_message(Message(seq, kind, card, text)))
        what = f"{label} seq {seq:02X}"
        if drop:
            self.say(f"dropped {what}")
        elif self.master is None:
            self.say(f"lost {what} (hung up)")
        elif now < self.silent_until:
            self.held += [frame, frame] if dup else [frame]
            self.say(f"held {what} (silent)")
        else:
            self.write(frame + frame if dup else frame)
            suffix = " with bad checksum" if corrupt else " twice" if dup else ""
            self.say(f"sent {what}{suffix}")

    def heartbeat(self) -> None:
        seq = 0 if self.last_seq is None else self.last_seq
        if self.write(encode_frame(seq, "HB")) and self.verbose:
            self.say(f"sent heartbeat seq {seq:02X}")

    # -- commands ----------------------------------------------------------------------------

    def command(self, line: str, now: float) -> bool:
        """Carry out one command line; False when it was ``quit``."""
        words = line.split()
        if not words or words[0].startswith("#"):
            return True
        name, args = words[0].lower(), words[1:]
        try:
            if name == "quit":
                return False
            handler = getattr(self, "_cmd_" + name.replace("-", "_"), None)
            if handler is None:
                raise ValueError(f"unknown command {name!r}; send 'help' for the list")
            handler(now, args)
        except ValueError as exc:
            self.say(f"error: {exc}")
        return True

    def _number(self, args: list[str], default: int, what: str, low: int = 1) -> int:
        if not args:
            return default
        if len(args) > 1 or not args[0].isdigit() or int(args[0]) < low:
            raise ValueError(f"{what} must be one whole number >= {low}, got {' '.join(args)!r}")
        return int(args[0])

    def _cmd_deal(self, now: float, args: list[str]) -> None:
        for _ in range(self._number(args, 1, "deal N")):
            if not self.shoe:
                raise ValueError("the shoe is empty: send shuffle or new-shoe")
            card = self.shoe.pop()
            self.send(now, "card", f"card {card}", card=card)

    def _cmd_shuffle(self, now: float, args: list[str]) -> None:
        self._no_args("shuffle", args)
        self.send(now, "shuffle_start", "shuffle start")
        self.refill()
        self.send(now, "shuffle_end", "shuffle end")

    def _cmd_new_shoe(self, now: float, args: list[str]) -> None:
        self._no_args("new-shoe", args)
        self.refill()
        decks = "" if self.given is not None else str(self.decks)
        self.send(now, "new_shoe", f"new-shoe {decks}".strip(), text=decks)

    def _cmd_cut(self, now: float, args: list[str]) -> None:
        self._no_args("cut", args)
        self.send(now, "cut_card", "cut")

    def _cmd_door(self, now: float, args: list[str]) -> None:
        if args not in (["open"], ["closed"]):
            raise ValueError("door takes open or closed, e.g. 'door open'")
        self.send(now, f"door_{args[0]}", f"door {args[0]}")

    def _cmd_fault(self, now: float, args: list[str]) -> None:
        text = " ".join(args)
        if not text or len(text) > 40 or "$" in text or "*" in text or not text.isascii():
            raise ValueError("fault needs a text of 1-40 ASCII characters without $ or *")
        self.send(now, "fault", f"fault {text}", text=text)

    def _cmd_clear(self, now: float, args: list[str]) -> None:
        self._no_args("clear", args)
        self.send(now, "fault_cleared", "clear")

    def _cmd_version(self, now: float, args: list[str]) -> None:
        self._no_args("version", args)
        self.send(now, "version", f"version {self.firmware}", text=self.firmware)

    def _cmd_restart(self, now: float, args: list[str]) -> None:
        self._no_args("restart", args)
        self.last_seq = None
        self.sent.clear()
        self.send(now, "version", f"version {self.firmware}", text=self.firmware)

    def _cmd_heartbeat(self, now: float, args: list[str]) -> None:
        self._no_args("heartbeat", args)
        if now < self.silent_until or self.master is None:
            raise ValueError("no heartbeat now: the shoe is silent or hung up")
        self.heartbeat()
        self.say(f"sent heartbeat seq {(self.last_seq or 0):02X}")

    def _cmd_garbage(self, now: float, args: list[str]) -> None:
        n = self._number(args, 16, "garbage N")
        if self.write(bytes(self.rng.randrange(256) for _ in range(n))):
            self.say(f"sent garbage {n} bytes")
        else:
            self.say(f"lost garbage {n} bytes")

    def _arm(self, fault: str, args: list[str]) -> None:
        self._no_args(fault, args)
        self.armed.add(fault)
        self.say(f"armed {fault} for the next frame")

    def _cmd_bad_checksum(self, now: float, args: list[str]) -> None:
        self._arm("bad-checksum", args)

    def _cmd_drop(self, now: float, args: list[str]) -> None:
        self._arm("drop", args)

    def _cmd_dup(self, now: float, args: list[str]) -> None:
        self._arm("dup", args)

    def _cmd_replay(self, now: float, args: list[str]) -> None:
        """An old frame again, unchanged (a bridge resending its buffer, a replay): the
        reader must never deal its card."""
        if (
            len(args) != 1
            or len(args[0]) > 2
            or not all(c in "0123456789abcdefABCDEF" for c in args[0])
        ):
            raise ValueError("replay needs one sequence number in hex, e.g. 'replay 0C'")
        seq = int(args[0], 16)
        if seq not in self.sent:
            raise ValueError(f"no frame was made with number {seq:02X} yet; see status")
        label, frame = self.sent[seq]
        if self.master is None or now < self.silent_until:
            raise ValueError("no replay now: the shoe is silent or hung up")
        self.write(frame)
        self.say(f"replayed {label} seq {seq:02X}")

    def _cmd_silence(self, now: float, args: list[str]) -> None:
        if not args:
            raise ValueError("silence needs a duration in ms, e.g. 'silence 5000'")
        ms = self._number(args, 0, "silence MS")
        self.silent_until = now + ms / 1000
        self.say(f"silent for {ms} ms")

    def _cmd_hangup(self, now: float, args: list[str]) -> None:
        ms = self._number(args, 1000, "hangup MS", low=0)
        if self.master is None:
            raise ValueError("already hung up; the pty reopens by itself")
        self.hang_up(now, ms)
        self.say(f"hung up for {ms} ms")

    def _cmd_status(self, now: float, args: list[str]) -> None:
        seq = "none" if self.last_seq is None else f"{self.last_seq:02X}"
        armed = ",".join(sorted(self.armed)) or "none"
        self.say(
            f"status path {self.path or 'closed'} seq {seq} left {len(self.shoe)} armed {armed}"
        )

    def _cmd_help(self, now: float, args: list[str]) -> None:
        for line in COMMANDS.splitlines():
            self.say(line)

    @staticmethod
    def _no_args(name: str, args: list[str]) -> None:
        if args:
            raise ValueError(f"{name} takes no arguments, got {' '.join(args)!r}")


def _whole(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shoe-sim",
        description="A simulated card-reading shoe on a pseudo-terminal. Prints the pty's path "
        "as its first line, then takes commands on stdin (send 'help').",
        epilog="Commands:\n" + COMMANDS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--decks", type=_whole, default=6, help="decks in the shoe (1-8)")
    parser.add_argument("--seed", type=int, help="seed for the shuffles and garbage bytes")
    parser.add_argument("--cards", help="deal this list in order instead, e.g. QH,7D,AS")
    parser.add_argument(
        "--heartbeat-ms", type=_whole, default=1000, help="heartbeat period (0: none)"
    )
    parser.add_argument("--link", help="keep a symlink here to the current pty (like by-id)")
    parser.add_argument("--firmware", default=FIRMWARE, help="firmware version text it reports")
    parser.add_argument("--verbose", action="store_true", help="answer heartbeats too")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 1 <= args.decks <= 8:
        parser.error(f"--decks must be 1-8, got {args.decks}")
    cards = None
    if args.cards is not None:
        try:
            cards = parse_cards(args.cards)
        except CardError as exc:
            parser.error(f"--cards: {exc}")
        if not cards:
            parser.error("--cards: give at least one card, e.g. --cards QH,7D")
    if len(args.firmware) > 40 or "$" in args.firmware or "*" in args.firmware:
        parser.error("--firmware: at most 40 characters, without $ or *")

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    sim = SimShoe(
        cards=cards,
        decks=args.decks,
        seed=args.seed,
        heartbeat_ms=args.heartbeat_ms,
        firmware=args.firmware,
        link=args.link,
        say=say,
        verbose=args.verbose,
    )
    say(sim.open(time.monotonic()))
    sim.send(time.monotonic(), "version", f"version {sim.firmware}", text=sim.firmware)
    try:
        run(sim, sys.stdin.fileno())
    except KeyboardInterrupt:
        pass
    finally:
        sim.close()
    return 0


def run(sim: SimShoe, stdin_fd: int) -> None:
    """The command loop: stdin lines, heartbeats and timers until ``quit`` or end of input."""
    pending = b""
    while True:
        now = time.monotonic()
        deadline = sim.deadline()
        timeout = None if deadline is None else max(0.0, deadline - now)
        fds = [stdin_fd] + ([sim.master] if sim.master is not None else [])
        readable, _, _ = select.select(fds, [], [], timeout)
        if sim.master is not None and sim.master in readable:
            with contextlib.suppress(OSError):  # the reader never writes; discard what comes
                os.read(sim.master, 4096)
        if stdin_fd in readable:
            data = os.read(stdin_fd, 4096)
            if not data:
                return
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not sim.command(line.decode("utf-8", "replace"), time.monotonic()):
                    return
        sim.tick(time.monotonic())


if __name__ == "__main__":
    sys.exit(main())
