"""``table-controller``: the command line.

Subcommands so far:

- ``par-sheet --game PROFILE [--decks N] [--json] [--strategy] [--no-main]``: the exact
  game-math document: the main game's expected value under basic and optimal strategy
  (``controller.rules.ev``) and every card-determined side bet; ``--strategy`` prints the
  basic strategy chart;
- ``profile-keys``: the reference of every house-rule profile key (Markdown),
  as kept in ``docs/profiles.md``;
- ``games``: the profiles found and where;
- ``camera-watch SOURCE [--count N]``: each card the camera reads, as a JSON line;
- ``replay FILE [--game PROFILE] [--json]``: run an event script through the
  table state machine and print every effect and the final settlement
  (``docs/scenarios/README.md`` documents the format).
- ``recall JOURNAL|--config FILE [--round N | --at TIME [--to TIME]] [--zone ZONE]
  [--last N] [--script] [--json]``: game recall from a table's journal and its retained
  gaming-day files, with local times; ``journal-export JOURNAL``: the journal as an event
  script; ``journal-set-aside --config FILE``: the way out when new software cannot
  recover the journal (table stopped; ``docs/journal.md``).
- ``shoe-watch URL [--count N] [--heartbeat-timeout-ms MS]``: a technician's
  view of the card-reading shoe: one JSON line per decoded event and per
  error (``hardware/shoe-protocol.md``).
- ``check-config FILE [FILE...] [--kind table|jackpot|gpio|game] [--no-files]``:
  check config files (a table's, a pin map, a game profile) and print every error, one per
  line (``docs/config.md``); a jackpot controller's config is referred to
  ``jackpot-controller check-config``, the product that reads it.
- ``run --config FILE``: the daemon: the running table (``controller/runtime``);
- ``status [--config FILE | --socket PATH] [--json]``: the running table's status,
  read over its control socket;
- ``hash-password [--stdin]``: the ``[web] password_hash`` for a password (``docs/web.md``);
- ``link-key --config FILE | --out PATH --key-id ID``: a new Ed25519 key that signs this
  table's jackpot link messages (0600), and the public key line for the controller's config;
- ``backup --config FILE [--to DIR] [--keep N]``: a checked copy of the running table's
  journal; ``restore --config FILE BACKUP``: put one back under a stopped table
  (``docs/journal.md``, "Backups");
- ``report day --config FILE --day YYYY-MM-DD [--format csv|json]``: a gaming day's rounds,
  hands, rounds per hour, and per main game and side bet the wagers, stakes, house net and
  hold against par, from the journal (``controller/report.py``);
- ``demo [--rounds N]``: the whole table in simulation (``docs/demo.md``).

The commands on the journal are in ``cli_journal``, those that watch a device in
``cli_devices``, those that make credentials in ``cli_keys``, the reports in ``cli_report``
and the users' audit in ``cli_users``; this module is the parser and the small ones.

Errors the user can fix print one line naming what was wrong and exit 2.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import sys
from collections.abc import Sequence

from controller import build, cli_devices, cli_journal, cli_keys
from controller.errors import TableControllerError


def _cmd_par_sheet(args: argparse.Namespace) -> int:
    from controller.games import load_game
    from controller.parsheet import compute_par_sheet, format_par_sheet
    from controller.parsheet_main import (
        format_main_game,
        format_strategy,
        main_game_sheet,
        strategy_sheet,
    )

    rules = load_game(args.game)
    if args.decks is not None:
        rules = rules.with_decks(args.decks)
    if args.strategy:
        data, text = strategy_sheet(rules)
        if args.json:
            print(json.dumps({"game": rules.name, "decks": rules.shoe.decks, **data}, indent=2))
        else:
            print(format_strategy(text, rules), end="")
        return 0
    main_game = None if args.no_main else main_game_sheet(rules)
    sheet = compute_par_sheet(rules)
    if main_game is not None:
        sheet["main"] = main_game
    if args.json:
        print(json.dumps(sheet, indent=2))
    else:
        text = format_par_sheet(sheet)
        if main_game is not None:
            head, _, rest = text.partition("\n\n")
            text = f"{head}\n\n{format_main_game(main_game)}\n{rest}"
        print(text, end="")
    return 0


def _cmd_report_day(args: argparse.Namespace) -> int:
    from controller.cli_report import report_day

    return report_day(args)


def _cmd_profile_keys(_args: argparse.Namespace) -> int:
    from controller.rules.profile import profile_keys_markdown

    print(profile_keys_markdown(), end="")
    return 0


def _cmd_games(_args: argparse.Namespace) -> int:
    from controller.games import available_games, find_game, load_game

    for name in available_games():
        rules = load_game(name)
        print(f"{name:<16} {rules.game.title}  ({find_game(name)})")
    return 0


def _cmd_check_config(args: argparse.Namespace) -> int:
    from controller.config import check_config

    failed = False
    for name in args.files:
        check = check_config(name, args.kind, files=not args.no_files)
        if check.errors:
            failed = True
            for error in check.errors:
                print(error, file=sys.stderr, flush=True)
        else:
            print(f"{name}: ok ({check.summary})", flush=True)
    return 2 if failed else 0


def _yes_no(value: object) -> str:
    return "unknown" if value is None else "yes" if value else "no"


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="table-controller", description="Blackjack table controller."
    )
    parser.add_argument("--version", action=build.VersionAction)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    par = commands.add_parser(
        "par-sheet",
        help="exact house edge of the main game (basic and optimal strategy) and of every "
        "card-determined side bet",
    )
    par.add_argument(
        "--game",
        default="pa-standard",
        help="a shipped profile (controller/profiles) or a path to a .toml file; "
        "default: pa-standard",
    )
    par.add_argument("--decks", type=int, help="override the profile's number of decks (1-8)")
    par.add_argument("--json", action="store_true", help="print JSON instead of a table")
    par.add_argument(
        "--strategy",
        action="store_true",
        help="print the main game's total-dependent basic strategy chart only",
    )
    par.add_argument(
        "--no-main",
        action="store_true",
        help="side bets only: leave out the main game's expected value (a few seconds)",
    )
    par.set_defaults(run=_cmd_par_sheet)

    keys = commands.add_parser("profile-keys", help="print the reference of every profile key")
    keys.set_defaults(run=_cmd_profile_keys)

    games = commands.add_parser("games", help="list the game profiles found")
    games.set_defaults(run=_cmd_games)

    rep = commands.add_parser(
        "replay", help="run an event script (JSON Lines) and print every effect and settlement"
    )
    rep.add_argument("file", help="event script (JSON Lines; '-' reads stdin)")
    rep.add_argument("--game", help="game profile (default: the script header's game)")
    rep.add_argument("--json", action="store_true", help="print JSON")
    rep.set_defaults(run=cli_journal.cmd_replay)

    report = commands.add_parser("report", help="reports computed from the journal")
    kinds = report.add_subparsers(dest="report", required=True, metavar="REPORT")
    day_parser = kinds.add_parser(
        "day",
        help="one gaming day: rounds, hands, rounds per hour, initial wagers, net and hold of "
        "the main game and of each side bet, against par",
    )
    day_parser.add_argument("--config", required=True, help="the table's config file")
    day_parser.add_argument("--day", required=True, help="the gaming day, YYYY-MM-DD")
    day_parser.add_argument("--format", choices=("csv", "json"), default="csv")
    day_parser.set_defaults(run=_cmd_report_day)

    recall = commands.add_parser(
        "recall",
        help="game recall: rounds of a table's journal and its retained gaming-day files",
    )
    recall.add_argument(
        "journal", nargs="?", help="the table's live journal file (SQLite); or give --config"
    )
    recall.add_argument("--config", help="the table config: its journal and gaming-day zone")
    recall.add_argument("--round", type=int, help="this round only, from whichever file holds it")
    recall.add_argument(
        "--at",
        metavar="'YYYY-MM-DD HH:MM'",
        help="the rounds played nearest this local date and time (with --to: a range)",
    )
    recall.add_argument(
        "--to", metavar="'YYYY-MM-DD HH:MM'", help="with --at: the rounds settled up to this time"
    )
    recall.add_argument(
        "--zone",
        help="the time zone of --at, --to and the times shown (IANA name, e.g. "
        "America/New_York; default: the config's gaming-day zone, else the system's)",
    )
    recall.add_argument(
        "--count",
        type=_positive_int,
        help="with --at: how many rounds (default 5 nearest, 50 in a range)",
    )
    recall.add_argument(
        "--last", type=int, default=10, help="how many rounds, newest first (default 10)"
    )
    recall.add_argument(
        "--script",
        action="store_true",
        help="print the round's event script (the last round without --round) for replay",
    )
    recall.add_argument("--json", action="store_true", help="print the round records as JSON")
    recall.set_defaults(run=cli_journal.cmd_recall)

    aside = commands.add_parser(
        "journal-set-aside",
        help="keep the journal as a read-only archive and start a new one (table stopped)",
    )
    aside.add_argument("--config", required=True, help="the table config: its data_dir and game")
    aside.set_defaults(run=cli_journal.cmd_journal_set_aside)

    export = commands.add_parser(
        "journal-export",
        help="print a journal as an event script (header and every event, for replay)",
    )
    export.add_argument("journal", help="the table's journal file (SQLite)")
    export.add_argument(
        "--open-round",
        action="store_true",
        help="include the events after the last settled round (the round in progress and its "
        "hole card); default: stop at the last settled round",
    )
    export.set_defaults(run=cli_journal.cmd_journal_export)

    watch = commands.add_parser(
        "shoe-watch",
        help="print the card-reading shoe's events and errors as JSON lines, or in words with "
        "--text (technician's tool); exits 1 if the port is missing",
    )
    watch.add_argument(
        "url", help="the shoe's port: /dev/serial/by-id/..., socket://HOST:PORT, spy://...?file="
    )
    watch.add_argument("--count", type=_positive_int, help="stop after N events (default: Ctrl-C)")
    watch.add_argument(
        "--heartbeat-timeout-ms",
        type=_positive_int,
        default=3000,
        help="report the shoe offline after this long without a message (default 3000)",
    )
    watch.add_argument(
        "--baud", type=_positive_int, default=115200, help="serial speed (default 115200)"
    )
    watch.add_argument(
        "--text",
        action="store_true",
        help="one line of plain words per event and error, with the time of day (default: "
        "JSON lines)",
    )
    watch.set_defaults(run=cli_devices.cmd_shoe_watch)

    cam = commands.add_parser(
        "camera-watch",
        help="print each card the camera reads as a JSON line (technician's tool)",
    )
    cam.add_argument(
        "source", help="device index or /dev/videoN, a stream URL, a video file or image folder"
    )
    cam.add_argument("--count", type=_positive_int, help="stop after N cards (default: Ctrl-C)")
    cam.set_defaults(run=cli_devices.cmd_camera_watch)

    check = commands.add_parser(
        "check-config",
        help="check config files (table, pin map, game profile); every error, one a line "
        "(a jackpot config: jackpot-controller check-config)",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="a config file (TOML)")
    check.add_argument(
        "--kind",
        choices=("table", "jackpot", "gpio", "game"),
        help="the kind of every FILE (default: told by its sections)",
    )
    check.add_argument(
        "--no-files",
        action="store_true",
        help="do not check the files a table config names (password file, CA, data_dir): "
        "for checking a config away from its machine",
    )
    check.set_defaults(run=_cmd_check_config)

    run = commands.add_parser("run", help="the daemon: run the table from its config")
    run.add_argument("--config", required=True, help="the table config (config/table.example.toml)")
    run.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="default INFO (prompts, alarms, faults)",
    )
    run.set_defaults(run=_cmd_run)

    hashpw = commands.add_parser(
        "hash-password",
        help="print the [web] password_hash line for a technicians' password (asked twice)",
    )
    hashpw.add_argument(
        "--stdin",
        action="store_true",
        help="read the password from the first line of standard input (scripts), not the terminal",
    )
    hashpw.set_defaults(run=cli_keys.cmd_hash_password)

    linkkey = commands.add_parser(
        "link-key",
        help="make this table's link signing key (0600) and print its public key",
    )
    source = linkkey.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", help="the table config: its [mqtt] signing_key and key_id")
    source.add_argument("--out", help="where to write the key (with --key-id)")
    linkkey.add_argument("--key-id", help="the key id (default with --config: its key_id)")
    linkkey.add_argument("--owner", help="give the file to this user (as root): table-controller")
    linkkey.set_defaults(run=cli_keys.cmd_link_key)

    status = commands.add_parser("status", help="the running table's status (control socket)")
    where = status.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", help="the table config: its [control] socket")
    where.add_argument("--socket", help="the control socket's path")
    status.add_argument("--json", action="store_true", help="the whole status as JSON")
    status.set_defaults(run=_cmd_status)

    from controller import verify

    verify_cmd = commands.add_parser(
        "verify", help="check every installed file against the signed release manifest"
    )
    verify.add_arguments(verify_cmd)
    verify_cmd.set_defaults(run=lambda args: verify.run(args, "table"))

    backup = commands.add_parser(
        "backup", help="a checked copy of the table's journal (also while the table runs)"
    )
    backup.add_argument("--config", required=True, help="the table config: its data_dir")
    backup.add_argument("--to", help="the backup folder (default: DATA_DIR/backups)")
    backup.add_argument(
        "--keep", type=_positive_int, default=14, help="copies kept, newest (default 14)"
    )
    backup.set_defaults(run=cli_journal.cmd_backup)

    restore = commands.add_parser(
        "restore", help="put a journal backup in place of the journal (table stopped)"
    )
    restore.add_argument("--config", required=True, help="the table config: its data_dir")
    restore.add_argument("backup", help="the backup file (journal-...sqlite)")
    restore.set_defaults(run=cli_journal.cmd_restore)

    from controller.cli_users import add_user_parser

    add_user_parser(commands)

    try:
        from controller.demo import stage
    except ImportError:  # the demo ships with the package; tolerate a partial checkout
        stage = None
    if stage is not None:
        demo = commands.add_parser(
            "demo", help="the whole table in simulation: broker, jackpot controller, shoe, pins"
        )
        stage.add_arguments(demo)
        demo.set_defaults(run=stage.main)
    return parser


def _cmd_run(args: argparse.Namespace) -> int:
    from controller import logs
    from controller.config import load_table_config
    from controller.runtime.daemon import run_table

    logs.setup(args.log_level)  # journald: each line's priority; a terminal: the time
    # a fatal fault (SIGSEGV, SIGABRT, ...) leaves every thread's Python stack in the log
    faulthandler.enable(all_threads=True)
    config = load_table_config(args.config)
    return run_table(config)


def _cmd_status(args: argparse.Namespace) -> int:
    from controller.runtime.control import ControlClient

    path = args.socket
    if args.config:
        from controller.config import load_table_config

        path = str(load_table_config(args.config).control.socket)
    try:
        with ControlClient(path) as client:
            answer = client.request("status")
    except OSError as exc:
        raise TableControllerError(
            f"cannot reach the table controller at {path} ({exc}); is it running? "
            "(systemctl status table-controller)"
        ) from None
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    st = answer["status"]
    snap = st["snapshot"]
    link = answer["health"]["link"] or {}
    print(
        f"table {answer['table']} (software {answer.get('build') or answer['version']}, "
        f"config {answer['config_checksum'][:12]})"
    )
    phase = str(snap["phase"]).replace("_", " ")
    print(f"round {snap['round']}, {phase}; {st['events_handled']} events journaled")
    faults = (
        ", ".join(
            f"{k}: {v['detail'] or 'present'}" + ("" if v["active"] else " (gone, latched)")
            for k, v in st["faults"].items()
        )
        or "none"
    )
    print(f"faults: {faults}; journal: {st['journal_fault'] or 'ok'}")
    waiting = link.get("depth")
    print(
        f"jackpot link: {'up' if st['jackpot_link'] else 'DOWN'}; broker connected: "
        f"{_yes_no(link.get('connected'))}; messages waiting: "
        f"{'unknown' if waiting is None else waiting}; last acknowledged: "
        f"{link.get('last_ack') if link.get('last_ack') is not None else 'none yet'}"
    )
    shoe = answer["health"].get("shoe")
    if shoe:
        print(
            f"shoe: connected: {_yes_no(shoe.get('connected'))}; "
            f"{str(shoe.get('state') or 'unknown').replace('_', ' ')}; shuffling: "
            f"{_yes_no(shoe.get('shuffling'))}"
        )
    for item in answer["feed"][-5:]:
        text = item.get("text") or item.get("reason") or ""
        print(f"  {item['kind']}: {text}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except TableControllerError as exc:
        print(f"table-controller: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
