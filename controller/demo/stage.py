"""``table-controller demo [--rounds N]``: a whole table in simulation, from one command.

The stage sets up a work folder (``--dir``, or a new temporary one removed at exit unless
``--keep``) and starts, each with this same Python and its output in ``DIR/<name>.log``:

1. ``mosquitto``: a generated config (``DIR/broker/mosquitto.conf``): one loopback listener on
   a free port, persistence in ``DIR/broker/``, passwords made with ``mosquitto_passwd``, the
   repo's ACL (``config/mosquitto/acl``); the production limits and client-id binding are
   copied from ``config/mosquitto/mosquitto.conf``;
2. ``jackpot-controller``: ``DIR/jackpot.toml`` (``config/jackpot.example.toml`` with the demo
   table's public key under ``[tables.hcm-bj-07]``), ledger ``DIR/ledger.sqlite``, its link
   signing key ``DIR/keys/jackpot-controller.key``;
3. ``jackpot-sign``: the reference sign as ``sign-lobby``, trusting the controller's public key;
   its screens go to ``DIR/sign.log``;
4. ``shoe-sim``: a seeded shoe on a pseudo-terminal, linked at ``DIR/shoe``;
5. ``table-controller run --config DIR/table.toml``: the table ``hcm-bj-07`` (7 spots,
   ``pa-standard``, the full table's pin map ``config/gpio.example.toml`` on mock GPIO pins
   and simulated MCP23017 expanders, the demo broker, control socket ``DIR/control.sock``,
   journal in ``DIR/table/``, link signing key ``DIR/keys/hcm-bj-07.key``, the controller's
   public key in ``[mqtt] controller_keys``).

Then :class:`~controller.demo.play.Director` plays rounds with the autopilot and prints one
line per settled round. ``--rounds N`` stops after N rounds; Ctrl-C or SIGTERM stops at
once. Either way every process started is stopped: the table first (SIGTERM: it writes its
death message and closes its journal), then the sign, the jackpot controller, the shoe and
the broker (only if this run started it; ``--keep-broker`` leaves it running for the next
run in the same ``--dir``, which reuses it). Children run in their own sessions, so Ctrl-C
reaches only the stage, and die with it (``PR_SET_PDEATHSIG``) if it is killed.

A second run in the same ``--dir`` resumes: the journal, the ledger and the broker's
persistence are kept, the passwords too (``DIR/secrets/``), and the link signing keys
(``DIR/keys/``: made at the first start, mode 0600; every message on the jackpot link is
signed end to end, controller/link/signing.py). ``DIR/pids.json`` lists the
processes of the last run. See ``docs/demo.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from controller.demo.files import (
    ACL_FILE,
    CIRCLES,
    CONFIG,
    CONTROLLER_KEY_ID,
    CONTROLLER_USER,
    GAME,
    HOST,
    JACKPOT_CONFIG,
    PRODUCTION_CONF,
    SIGN_USER,
    SPOTS,
    TABLE_ID,
    USERS,
    WEB_PORT,
    broker_config,
    cmdline,
    console_buttons,
    find_mosquitto,
    free_port,
    jackpot_config,
    link_keys,
    pid_alive,
    pin_map,
    port_answers,
    table_config,
    write_private,
)
from controller.demo.play import DemoError, Director, ShoeLine, Stopped, read_tail, sign_meters

STOP_TIMEOUT_S = 10.0
STACKS_WAIT_S = 2.0  # a hung child's SIGABRT: time to write its threads' stacks
READY_TIMEOUT_S = 20.0


# -- processes -------------------------------------------------------------------------------


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Child:
    """One process the stage started."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    stop_signal: int = signal.SIGTERM
    expected_exit: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid


@dataclass
class Stage:
    """The work folder and the processes started in it (see the module docstring)."""

    workdir: Path
    seed: int
    keep_broker: bool = False
    out: IO[str] = sys.stdout
    children: list[Child] = field(default_factory=list)
    broker_pid: int | None = None
    broker_started: bool = False
    port: int = 0
    shoe_log: IO[str] | None = None
    web_port: int | None = None
    """The web pages' port: WEB_PORT when free, else any free one; None: no web pages."""

    def say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    # -- starting ------------------------------------------------------------------------

    def spawn(
        self,
        name: str,
        argv: list[str],
        *,
        pipes: bool = False,
        stdout: Path | None = None,
        die_with_parent: bool = True,
        stop_signal: int = signal.SIGTERM,
    ) -> Child:
        log = self.workdir / f"{name}.log"
        with log.open("ab") as f:
            f.write(f"\n== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
        err = log.open("ab")
        out = stdout.open("ab") if stdout is not None else err
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                stdout=subprocess.PIPE if pipes else out,
                stderr=err,
                cwd=self.workdir,
                env=env,
                start_new_session=True,  # Ctrl-C reaches the stage only; it stops them in order
                preexec_fn=_die_with_parent if die_with_parent else None,
            )
        finally:
            err.close()
            if out is not err:
                out.close()
        child = Child(name, popen, log, stop_signal)
        self.children.append(child)
        self._write_pids()
        return child

    def _write_pids(self) -> None:
        pids = {c.name: c.pid for c in self.children}
        if self.broker_pid is not None:
            pids["mosquitto"] = self.broker_pid
        data = {"pids": pids, "broker_started_here": self.broker_started, "port": self.port}
        (self.workdir / "pids.json").write_text(json.dumps(data, indent=1) + "\n")

    def failed(self, child: Child, what: str) -> DemoError:
        tail = "\n".join(read_tail(child.log, 3000).splitlines()[-15:])
        return DemoError(f"{child.name} {what}; see {child.log}:\n{tail}")

    def check(self) -> None:
        """Raise :class:`DemoError` if a process the stage started has exited."""
        for child in self.children:
            code = child.popen.poll()
            if code is not None and not child.expected_exit:
                raise self.failed(child, f"exited unexpectedly (status {code})")
        broker = self.broker_pid
        if broker is not None and not self.broker_started and not pid_alive(broker):
            raise DemoError(f"the broker (pid {self.broker_pid}) is gone")

    def wait_for(self, child: Child, what: str, ready: Any, stop: threading.Event) -> Any:
        """Poll ``ready()`` until it returns something true (returned); a :class:`DemoError`
        naming ``child``'s log if it exits or is not ``what`` in time."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if stop.is_set():
                raise Stopped()
            self.check()
            result = ready()
            if result:
                return result
            if time.monotonic() > deadline:
                raise self.failed(child, f"was not {what} after {READY_TIMEOUT_S:g} s")
            time.sleep(0.05)

    def passwords(self) -> dict[str, Path]:
        """One password file per broker user in ``DIR/secrets`` (made once, then kept)."""
        out = {}
        for user in USERS:
            path = self.workdir / "secrets" / user
            if not path.exists():
                write_private(path, secrets.token_urlsafe(16) + "\n")
            out[user] = path
        return out

    def web_password(self) -> str:
        """The diagnostics page's demo password, in ``DIR/secrets/web`` (made once)."""
        path = self.workdir / "secrets" / "web"
        if not path.exists():
            write_private(path, secrets.token_urlsafe(12) + "\n")
        return path.read_text(encoding="utf-8").strip()

    def start_broker(self, stop: threading.Event) -> None:
        broker = self.workdir / "broker"
        broker.mkdir(exist_ok=True)
        state_file = broker / "broker.json"
        conf = broker / "mosquitto.conf"
        saved: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            saved = json.loads(state_file.read_text())
        pid, port = saved.get("pid"), saved.get("port")
        if (
            isinstance(pid, int)
            and isinstance(port, int)
            and pid_alive(pid)
            and str(conf) in cmdline(pid)
            and port_answers(port)
        ):
            self.broker_pid, self.port = pid, port
            self.say(f"reusing the broker started earlier: pid {pid}, port {port}")
            return
        exe = find_mosquitto()
        if exe is None:
            raise DemoError("mosquitto is not installed: sudo apt-get install mosquitto")
        tool = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
        if not os.access(tool, os.X_OK):
            raise DemoError("mosquitto_passwd is not installed: sudo apt-get install mosquitto")
        if not isinstance(port, int) or port_answers(port):
            port = free_port()  # first run, or the old port is someone else's now
        self.port = port
        passwd = broker / "passwd"
        write_private(passwd, "")
        for user, path in self.passwords().items():
            password = path.read_text(encoding="utf-8").strip()
            done = subprocess.run(
                [tool, "-b", str(passwd), user, password],
                capture_output=True,
                text=True,
                timeout=10,
            )
            if done.returncode != 0:
                raise DemoError(f"mosquitto_passwd failed for {user}: {done.stderr.strip()}")
        conf.write_text(broker_config(self.workdir, port), encoding="utf-8")
        child = self.spawn(
            "mosquitto", [exe, "-c", str(conf)], die_with_parent=not self.keep_broker
        )
        self.broker_pid, self.broker_started = child.pid, True
        state_file.write_text(json.dumps({"pid": child.pid, "port": port}) + "\n")
        self._write_pids()
        self.wait_for(child, f"listening on port {port}", lambda: port_answers(port), stop)

    def start(self, stop: threading.Event) -> tuple[ShoeLine, Child]:
        """Start everything; returns the shoe simulator's command line and the table."""
        from jackpot.pools import load_config

        python = sys.executable
        passwords = self.passwords()
        keys = link_keys(self.workdir)
        jackpot_path = self.workdir / "jackpot.toml"
        jackpot_path.write_text(jackpot_config(keys), encoding="utf-8")
        load_config(jackpot_path)  # a bad generated config fails here, before the controller
        self.start_broker(stop)
        link = ["--host", HOST, "--port", str(self.port)]
        self.spawn(
            "jackpot-controller",
            [
                *(python, "-m", "jackpot.cli", "--config", str(jackpot_path)),
                *("--ledger", str(self.workdir / "ledger.sqlite"), *link),
                *("--username", CONTROLLER_USER),
                *("--password-file", str(passwords[CONTROLLER_USER])),
                *("--signing-key", str(keys.controller_file), "--key-id", CONTROLLER_KEY_ID),
            ],
        )
        sign_log = self.workdir / "sign.log"
        sign = self.spawn(
            "sign",
            [
                *(python, "-m", "jackpot.sign", *link, "--username", SIGN_USER),
                *("--password-file", str(passwords[SIGN_USER])),
                *("--controller-key", keys.controller_arg),
            ],
            stdout=sign_log,
            stop_signal=signal.SIGINT,  # the sign's clean exit (it disconnects)
        )
        size = sign_log.stat().st_size

        def sign_live() -> bool:
            screen = sign_meters(read_tail(sign_log)) if sign_log.stat().st_size > size else None
            return screen is not None and screen[0] == "live"

        self.wait_for(sign, "showing live meters (is the jackpot controller up?)", sign_live, stop)
        from controller.config import load_table_config
        from controller.games import load_game

        decks = load_game(GAME).shoe.decks
        shoe = self.spawn(
            "shoe-sim",
            [
                *(python, "-m", "drivers.shoe_sim", "--decks", str(decks)),
                *("--seed", str(self.seed), "--link", str(self.workdir / "shoe")),
            ],
            pipes=True,
        )
        self.shoe_log = shoe_log = (self.workdir / "shoe-sim.log").open(
            "a", encoding="utf-8", buffering=1
        )
        line = ShoeLine(shoe.popen.stdin, shoe.popen.stdout, lambda t: shoe_log.write(t + "\n"))
        path = self.wait_for(shoe, "printing its pty path", lambda: line.readline(0.1), stop)
        self.say(f"shoe-sim on {path} (link {self.workdir / 'shoe'})")
        config_path = self.workdir / "table.toml"
        web_hash = ""
        if self.web_port is not None:
            from controller.web.auth import hash_password

            if self.web_port == WEB_PORT and port_answers(WEB_PORT):
                self.web_port = free_port()
            password = self.web_password()
            web_hash = hash_password(password)
            self.say(
                f"dealer display http://{HOST}:{self.web_port}/dealer; diagnostics "
                f"http://{HOST}:{self.web_port}/diag (any name, password {password})"
            )
        config_path.write_text(
            table_config(self.workdir, self.port, keys, web_port=self.web_port, web_hash=web_hash),
            encoding="utf-8",
        )
        load_table_config(config_path)  # a bad generated config fails here, before the daemon
        table = self.spawn(
            "table", [python, "-m", "controller", "run", "--config", str(config_path)]
        )
        return line, table

    def wait_table(self, table: Child, stop: threading.Event) -> Any:
        """Wait until the table answers on its control socket with the shoe and the jackpot
        link connected; returns a connected :class:`ControlClient`."""
        from controller.runtime.control import ControlClient

        sock = self.workdir / "control.sock"

        def ready() -> Any:
            if not sock.exists():
                return None
            try:
                client = ControlClient(sock)
                answer = client.request("status")
            except (OSError, ValueError):
                return None
            health = answer.get("health") or {}
            if (health.get("link") or {}).get("connected") and (health.get("shoe") or {}).get(
                "connected"
            ):
                return client
            client.close()
            return None

        return self.wait_for(
            table, "answering on its control socket with the shoe and the link up", ready, stop
        )

    # -- stopping ------------------------------------------------------------------------

    def stop_all(self) -> list[str]:
        """Stop every process started, table first; returns what went wrong."""
        problems: list[str] = []
        order = ["table", "sign", "jackpot-controller", "shoe-sim", "mosquitto"]
        for name in order:
            for child in [c for c in self.children if c.name == name]:
                if name == "mosquitto" and self.keep_broker:
                    self.say(f"leaving the broker running: pid {child.pid}, port {self.port}")
                    continue
                problem = self._stop(child)
                if problem:
                    problems.append(problem)
        if self.shoe_log is not None:
            self.shoe_log.close()
        return problems

    def _stop(self, child: Child) -> str | None:
        popen = child.popen
        died = popen.poll()
        if died is not None and not child.expected_exit:
            return f"{child.name} had exited by itself (status {died}); see {child.log}"
        child.expected_exit = True
        if died is not None:
            return None
        try:
            if child.name == "shoe-sim" and popen.stdin is not None:
                with contextlib.suppress(OSError):
                    popen.stdin.write(b"quit\n")
                    popen.stdin.close()
                try:
                    popen.wait(2)
                    return None
                except subprocess.TimeoutExpired:
                    pass
            os.killpg(popen.pid, child.stop_signal)
            popen.wait(STOP_TIMEOUT_S)
        except ProcessLookupError:
            popen.wait()
        except subprocess.TimeoutExpired:
            # SIGABRT first: a table (faulthandler) writes where each of its threads hung
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(STACKS_WAIT_S)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
            return (
                f"{child.name} did not stop within {STOP_TIMEOUT_S:g} s: killed; the end of "
                f"{child.log}:\n{read_tail(child.log, 6000)}"
            )
        finally:
            for pipe in (popen.stdin, popen.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        code = popen.returncode
        if code not in (0, -child.stop_signal):
            return f"{child.name} stopped with status {code}; see {child.log}"
        return None


# -- the command -----------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options, for ``table-controller demo`` and ``python -m``."""
    parser.add_argument(
        "--rounds", type=int, metavar="N", help="stop after N rounds settle (default: Ctrl-C)"
    )
    parser.add_argument("--dir", type=Path, help="work folder (default: a new temporary one)")
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary work folder at exit"
    )
    parser.add_argument(
        "--keep-broker",
        action="store_true",
        help="leave the broker running at exit, for the next run in the same --dir",
    )
    parser.add_argument(
        "--seed", type=int, help="seed for the shoe and the players (default: random)"
    )
    parser.add_argument(
        "--side-bets", type=float, default=0.3, help="chance of each side bet (default 0.3)"
    )
    parser.add_argument(
        "--web-port",
        type=int,
        default=WEB_PORT,
        metavar="PORT",
        help=f"the web pages' port on {HOST} (default {WEB_PORT}, or a free one if taken; "
        "0: no web pages)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="table-controller demo",
        description="A whole table in simulation: broker, jackpot controller, sign, shoe "
        "simulator, mock pins and an autopilot dealer (docs/demo.md).",
    )
    add_arguments(parser)
    return parser


def main(args: argparse.Namespace | Sequence[str] | None = None) -> int:
    """Run the demo; returns the exit status (0: every round played, nothing refused)."""
    if not isinstance(args, argparse.Namespace):
        args = build_parser().parse_args(args)
    if args.rounds is not None and args.rounds < 1:
        print("table-controller demo: --rounds must be at least 1", file=sys.stderr)
        return 2
    if not 0 <= args.web_port <= 65535:
        print("table-controller demo: --web-port must be 0 (no pages) to 65535", file=sys.stderr)
        return 2
    if not 0.0 <= args.side_bets <= 1.0:
        print("table-controller demo: --side-bets must be between 0 and 1", file=sys.stderr)
        return 2
    if not all(path.is_file() for path in (ACL_FILE, PRODUCTION_CONF, JACKPOT_CONFIG)):
        print(
            f"table-controller demo: no checkout around this package ({CONFIG} is missing): the "
            "demo runs from a clone of the repository, with its config/mosquitto and "
            "config/jackpot.example.toml; there: bash scripts/table.sh demo",
            file=sys.stderr,
        )
        return 2
    stop = threading.Event()
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, lambda *_: stop.set())
    temporary = args.dir is None
    workdir = Path(tempfile.mkdtemp(prefix="table-demo-")) if temporary else args.dir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    stage = Stage(workdir, seed, keep_broker=args.keep_broker)
    stage.web_port = args.web_port or None
    stage.say(f"demo in {workdir} (seed {seed}); logs: {workdir}/*.log; Ctrl-C stops")
    try:
        return _run(stage, args, stop)
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)
        if temporary and not args.keep and not args.keep_broker:
            shutil.rmtree(workdir, ignore_errors=True)
        elif temporary:
            stage.say(f"kept {workdir}")


def _run(stage: Stage, args: argparse.Namespace, stop: threading.Event) -> int:
    from controller.config import load_table_config
    from controller.demo.autopilot import Autopilot

    problems: list[str] = []
    director: Director | None = None
    control = None
    started = time.monotonic()
    try:
        line, table = stage.start(stop)
        control = stage.wait_table(table, stop)
        config = load_table_config(stage.workdir / "table.toml")
        snap = control.request("status")["status"]["snapshot"]
        stage.say(
            f"table {TABLE_ID} ({GAME}, {SPOTS} spots) at round {snap['round']}, phase "
            f"{snap['phase']}; broker port {stage.port}; pids "
            + ", ".join(f"{c.name} {c.pid}" for c in stage.children)
            + (f", mosquitto {stage.broker_pid} (reused)" if not stage.broker_started else "")
        )
        rules = config.rules
        fixed = {
            circle: wager
            for circle in CIRCLES
            if isinstance(
                wager := getattr(getattr(rules.side_bets, circle, None), "wager", None), int
            )
        }
        pilot = Autopilot(
            rules,
            config.settings,
            random.Random(f"{stage.seed}:{snap['round']}"),
            circles=CIRCLES,
            buttons=console_buttons(pin_map()),
            side_bet_chance=args.side_bets,
        )
        director = Director(
            control,
            line,
            pilot,
            fixed=fixed,
            decks=rules.shoe.decks,
            sign_log=stage.workdir / "sign.log",
            stop=stop,
            out=stage.out,
            check=stage.check,
        )
        played_from = time.monotonic()
        with contextlib.suppress(Stopped):
            director.play(args.rounds)
        tally = director.tally
        if stop.is_set():
            stage.say("stopping (signal)")
        unacked = director.drain_outbox(10.0 if not stop.is_set() else 2.0)
        if unacked:
            stage.say(f"{unacked} jackpot messages not yet acknowledged (sent at the next run)")
        minutes = (time.monotonic() - played_from) / 60
        played = f"played {tally.rounds} round{'s' if tally.rounds != 1 else ''}"
        if tally.rounds:
            played += f" ({tally.first_round}-{tally.last_round}, {tally.rounds / minutes:.1f}/min)"
        stage.say(
            f"{played}, {tally.actions} actions; {len(tally.refusals)} refusals, "
            f"{len(tally.alarms)} alarms"
        )
        problems += [f"refused: {r}" for r in tally.refusals]
    except Stopped:
        stage.say("stopping (signal) before the table was ready")
    except DemoError as exc:
        problems.append(str(exc))
    except Exception as exc:  # config errors and the like: say it, then stop everything
        problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        if control is not None:
            control.close()
        problems += stage.stop_all()
    for problem in problems:
        print(f"table-controller demo: {problem}", file=sys.stderr)
    stage.say(f"stopped everything after {time.monotonic() - started:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
