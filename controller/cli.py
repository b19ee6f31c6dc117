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

Errors the user can fix print one line naming what was wrong and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from controller import build
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


def _cmd_replay(args: argparse.Namespace) -> int:
    from pathlib import Path

    from controller.errors import EventError
    from controller.games import load_game
    from controller.table.script import parse_script, replay

    path = Path(args.file)
    try:
        text = sys.stdin.read() if args.file == "-" else path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EventError(f"cannot read event script {args.file}: {exc.strerror}") from None
    script = parse_script(text, args.file)
    game = args.game or script.header.get("game")
    if not game:
        raise EventError(f"{args.file}: no game: give --game PROFILE or a header line with game")
    result = replay(script, load_game(game))
    settlements = [s.to_dict() for s in result.settlements()]
    if args.json:
        out = {
            "game": game,
            "steps": [
                {
                    "line": item.line,
                    "event": item.event.to_dict(),
                    "accepted": step.accepted,
                    "effects": [e.to_dict() for e in step.effects],
                }
                for item, step in result.steps
            ],
            "settlements": settlements,
            "net_by_spot": _net_by_spot(settlements),
            "final": result.table.snapshot(),
            "expectations": {"checked": result.checked, "failed": result.failures},
        }
        print(json.dumps(out, indent=1))
    else:
        for item, step in result.steps:
            mark = " " if step.accepted else "!"
            print(f"{item.line:>4}{mark} {json.dumps(item.event.to_dict())}")
            for effect in step.effects:
                text = getattr(effect, "text", None) or getattr(effect, "reason", None)
                if text and effect.KIND in ("prompt", "alarm", "refused"):
                    print(f"        {effect.KIND}: {text}")
        for spot, net in _net_by_spot(settlements).items():
            print(f"spot {spot}: net {_signed_money(net)}")
        print(f"expectations: {result.checked} checked, {len(result.failures)} failed")
        for failure in result.failures:
            print(f"  FAILED {failure}")
    return 1 if result.failures else 0


def _recall_source(args: argparse.Namespace) -> tuple[str, str | None]:
    """The live journal's path and the time zone for recall: ``--config`` gives both (its
    data_dir and its gaming day's zone), else the JOURNAL argument; ``--zone`` wins."""
    zone = args.zone
    if args.config:
        if args.journal:
            raise TableControllerError("recall: give JOURNAL or --config, not both")
        from controller.config import load_table_config

        config = load_table_config(args.config)
        return str(config.journal_path), zone or config.gaming_day.zone
    if not args.journal:
        raise TableControllerError(
            "recall: give the journal file (JOURNAL) or the table config (--config FILE)"
        )
    return args.journal, zone


def _cmd_recall(args: argparse.Namespace) -> int:
    import datetime

    from controller.errors import JournalError
    from controller.journal import Journal
    from controller.journal.library import JournalLibrary, local_to_utc_ms
    from controller.journal.rotation import GamingDay
    from controller.recall import format_rounds
    from controller.table.script import round_script

    live, zone = _recall_source(args)
    GamingDay(zone=zone)  # a wrong --zone is named before anything is read
    if args.to and not args.at:
        raise TableControllerError("recall: --to needs --at (the start of the time range)")
    if args.at and args.round is not None:
        raise TableControllerError("recall: give --round or --at, not both")
    with Journal(live) as journal:  # the live file: the table's game and settings
        meta = journal.meta()
        runs = journal.runs()
    library = JournalLibrary(live)
    files = library.files()
    for bad in (f for f in files if f.problem):
        print(
            f"table-controller: warning: journal file {bad.path} cannot be read, its rounds "
            f"are not searched: {bad.problem}",
            file=sys.stderr,
        )
    if args.round is not None:
        one = library.find_round(args.round)
        if one is None:
            raise JournalError(_no_round_anywhere(live, files, args.round))
        found = [one]
        what = f"round {args.round}"
    elif args.at:
        start = local_to_utc_ms(args.at, zone)
        if args.to:
            end = local_to_utc_ms(args.to, zone)
            if end < start:
                raise TableControllerError(f"recall: --to {args.to} is before --at {args.at}")
            found = library.rounds_between(start, end, args.count or 50)
            what = f"the rounds settled from {args.at} to {args.to}, oldest first"
        else:
            found = library.nearest(start, args.count or 5)
            what = f"the {len(found)} rounds nearest {args.at}, oldest first"
        if not found:
            raise JournalError(
                f"journal {live}: no round settled {'then' if args.to else 'near that time'} "
                f"in any file ({_span(files, zone)}); rounds written before schema version "
                "4 have no time of day: find them with --round"
            )
    else:
        found = library.last_rounds(args.last)
        what = f"the last {len(found)}, newest first"
    records = [f.record for f in found]
    if args.script:
        if not records:
            raise JournalError(f"journal {live}: no round is recorded yet")
        print(round_script(records[0]), end="")
    elif args.json:
        print(json.dumps(records[0] if args.round is not None else records, indent=1))
    else:
        first = min((f.first_round for f in files if f.first_round is not None), default=None)
        last = max((f.last_round for f in files if f.last_round is not None), default=None)
        count = sum(f.rounds for f in files)
        header = (
            f"Journal {live}: game {meta['game']}, {meta['table']['spots']} spots; "
            f"{count} rounds recorded" + (f" ({first} to {last})" if count else "") + f"; {what}"
        )
        if len(files) > 1:
            header += "\nFiles: " + "; ".join(_file_line(f) for f in files)
        if runs:

            def started(run: dict) -> str:
                when = datetime.datetime.fromtimestamp(run["started_ms"] / 1000, datetime.UTC)
                return f"{when:%Y-%m-%d %H:%M} UTC"

            header += "\nSoftware: " + "; ".join(
                f"{run['software']} from event {run['first_event']} (boot {run['boot']}, "
                f"{started(run)})"
                for run in runs[-5:]
            )
        from controller.games import load_game

        print(
            format_rounds(
                records,
                header,
                load_game(meta["game"]),
                zone=zone,
                files=[f.file.name for f in found],
            ),
            end="",
        )
    return 0


def _file_line(file) -> str:
    """One journal file for recall's header: name, gaming day, rounds."""
    if file.problem:
        return f"{file.name} (cannot be read)"
    rounds = (
        f"rounds {file.first_round} to {file.last_round}"
        if file.first_round is not None
        else "no round"
    )
    day = f"gaming day {file.gaming_day}, " if file.gaming_day else ""
    return f"{file.name} ({'live, ' if file.live else ''}{day}{rounds})"


def _span(files, zone: str | None) -> str:
    from controller.recall import format_local

    times = [
        t for f in files for t in (f.first_settled_utc_ms, f.last_settled_utc_ms) if t is not None
    ]
    if not times:
        return "none has a time of day"
    since, until = format_local(min(times), zone), format_local(max(times), zone)
    return f"rounds settled from {since} to {until}"


def _no_round_anywhere(live: str, files, number: int) -> str:
    readable = [f for f in files if f.problem is None and f.first_round is not None]
    if readable:
        first = min(f.first_round for f in readable)
        last = max(f.last_round for f in readable)
        have = f"rounds {first} to {last} are recorded in {len(readable)} file(s)"
    else:
        have = "no round is recorded yet"
    return (
        f"journal {live}: no record of round {number} ({have}; a round in progress is "
        "recorded when it is settled; files older than the retention are removed)"
    )


def _cmd_journal_set_aside(args: argparse.Namespace) -> int:
    from controller.audit import command_line_account
    from controller.cli_users import audited
    from controller.config import load_table_config
    from controller.errors import JournalError
    from controller.journal import Journal
    from controller.journal.rotation import set_aside
    from controller.table import checkpoint

    config = load_table_config(args.config)
    live = config.journal_path
    _, record = audited(config, "journal_set_aside")
    if not live.is_file():
        record("refused", detail="no journal to set aside")
        raise JournalError(f"no journal at {live}: nothing to set aside (check data_dir)")
    try:
        done = set_aside(
            live, config.rules, config.settings, gaming_day=config.gaming_day,
            by=f"{command_line_account()} (command line)",
        )  # fmt: skip
    except Exception as exc:
        record("refused", detail=str(exc))
        raise
    record(object=str(done.archive), detail=f"events {done.first_event} to {done.last_event}, "
                                            f"sha256 {done.sha256[:16]}")  # fmt: skip
    with Journal(live) as journal:
        origin = journal.origin()
        written, acked, pending = journal.outbox_rows()
    next_round = checkpoint.decode(origin.state).round_number if origin else 1
    print(f"set aside journal {live}: events {done.first_event} to {done.last_event}")
    print(f"archive: {done.archive} (gaming day {done.gaming_day}, read-only)")
    print(f"sha256: {done.sha256}")
    print(f"new journal {live}: the next round is round {next_round}")
    kept = len(pending) - 1  # the last is the set-aside's own record for the center
    print(
        f"jackpot link: {kept} unacknowledged message(s) kept and the set-aside's record "
        f"(sequence {acked + 1} to {written}); they are sent when the table controller starts"
    )
    print(
        "a round in progress at the set-aside is not carried on: settle its wagers by hand "
        "(table-controller recall shows its events in the archive)"
    )
    return 0


def _cmd_journal_export(args: argparse.Namespace) -> int:
    from controller.journal import Journal

    with Journal(args.journal) as journal:
        if args.open_round:
            print(
                "table-controller: warning: the export includes the round in progress and its "
                "hole card",
                file=sys.stderr,
            )
        for line in journal.script_lines(open_round=args.open_round):
            sys.stdout.write(line + "\n")
    return 0


SHOE_WORDS = {
    "online": "shoe online",
    "offline": "shoe OFFLINE",
    "missed_frames": "frames missed (a card may be missing)",
    "shuffle": "shuffled",
    "new_shoe": "new shoe",
    "door_open": "door opened",
    "door_closed": "door closed",
    "cut_card": "cut card out",
    "fault": "shoe FAULT",
    "fault_cleared": "shoe fault cleared",
}
"""A shoe event's name in the text mode of ``shoe-watch`` (others: underscores as spaces)."""


def shoe_watch_text(line: dict) -> str:
    """One ``shoe-watch`` line (a decoded event, or an error) in words, for ``--text``.

    >>> shoe_watch_text({"type": "card", "card": "QH", "source": "shoe", "t": 5})
    'card Q\u2665 (QH)'
    >>> shoe_watch_text({"type": "error", "error": "bad_checksum", "detail": "frame discarded"})
    'ERROR bad checksum: frame discarded'
    >>> shoe_watch_text({"type": "shoe", "event": "door_open", "detail": ""})
    'door opened'
    """
    from controller.recall import card_text

    kind = line.get("type")
    detail = line.get("detail") or ""
    if kind == "card":
        return f"card {card_text(str(line.get('card')), True)} ({line.get('card')})"
    if kind == "out_of_order_card":
        from controller.recall import out_of_order_words

        return out_of_order_words(line)
    if kind == "error":
        text = f"ERROR {str(line.get('error')).replace('_', ' ')}"
    elif kind == "shoe":
        event = str(line.get("event"))
        text = SHOE_WORDS.get(event, event.replace("_", " "))
    else:
        fields = [f"{k} {v}" for k, v in line.items() if k not in ("type", "t") and v != ""]
        text = " ".join([str(kind).replace("_", " "), *fields])
        detail = ""
    return f"{text}: {detail}" if detail else text


def _shoe_port_missing(url: str) -> str | None:
    """Why a shoe ``url`` that is a device path cannot be a port (None: it may be one)."""
    import os
    import stat

    if "://" in url:
        return None  # socket://, spy://, loop://: the reader says what fails
    try:
        mode = os.stat(url).st_mode
    except FileNotFoundError:
        return (
            f"no serial port at {url}: check the shoe's cable and power, and the port's name "
            "(ls -l /dev/serial/by-id/; the udev rule makes /dev/bj-shoe)"
        )
    except OSError as exc:
        return f"cannot look at {url}: {exc.strerror}"
    if not stat.S_ISCHR(mode):
        return f"{url} is not a serial port (not a character device): give the shoe's port"
    return None


def _cmd_shoe_watch(args: argparse.Namespace) -> int:
    import queue
    import time

    from drivers.shoe import ShoeReader

    missing = _shoe_port_missing(args.url)
    if missing:
        print(f"shoe-watch: {missing}", file=sys.stderr)
        return 1
    lines: queue.Queue[tuple[bool, dict]] = queue.Queue()
    count = 0
    opened = False
    try:
        with ShoeReader(
            args.url,
            lambda event: lines.put((True, event.to_dict())),
            heartbeat_timeout_ms=args.heartbeat_timeout_ms,
            baudrate=args.baud,
            on_problem=lambda problem: lines.put((False, {"type": "error", **problem})),
        ) as reader:
            while args.count is None or count < args.count:
                opened = opened or bool(reader.health().get("connected"))
                try:
                    is_event, line = lines.get(timeout=0.2)
                except queue.Empty:
                    continue
                if not is_event and line.get("error") == "open_failed" and not opened:
                    # never opened: a port that is not there, or not ours (a watcher that
                    # retried for ever would only repeat it)
                    print(
                        f"shoe-watch: cannot open the shoe's port {args.url}: "
                        f"{line.get('detail') or 'open failed'}",
                        file=sys.stderr,
                    )
                    return 1
                if args.text:
                    stamp = time.strftime("%H:%M:%S")
                    print(f"{stamp}  {shoe_watch_text(line)}", flush=True)
                else:
                    print(json.dumps(line), flush=True)
                count += is_event
    except KeyboardInterrupt:
        pass
    return 0


def _cmd_camera_watch(args: argparse.Namespace) -> int:
    import queue

    from drivers.camera import CameraReader

    cards: queue.Queue[dict] = queue.Queue()
    count = 0
    try:
        with CameraReader(args.source, lambda event: cards.put(event.to_dict())) as camera:
            while args.count is None or count < args.count:
                try:
                    line = cards.get(timeout=0.2)
                except queue.Empty:
                    if camera.wait(0):  # a file or image folder has ended
                        break
                    continue
                print(json.dumps(line), flush=True)
                count += 1
            print(json.dumps({"type": "health", **camera.health()}), file=sys.stderr)
    except KeyboardInterrupt:
        pass
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


def _signed_money(cents: int) -> str:
    """``-5700`` -> ``-$57.00``; ``0`` -> ``$0.00``; ``250`` -> ``+$2.50``."""
    from controller.rules.pays import format_cents

    sign = "-" if cents < 0 else "+" if cents > 0 else ""
    return sign + format_cents(abs(cents))


def _yes_no(value: object) -> str:
    return "unknown" if value is None else "yes" if value else "no"


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _net_by_spot(settlements: list[dict]) -> dict[str, int]:
    nets: dict[str, int] = {}
    for line in settlements:
        key = str(line["spot"])
        nets[key] = nets.get(key, 0) + line["paid"] + line["returned"] - line["stake"]
    return dict(sorted(nets.items(), key=lambda item: int(item[0])))


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
    rep.set_defaults(run=_cmd_replay)

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
    recall.set_defaults(run=_cmd_recall)

    aside = commands.add_parser(
        "journal-set-aside",
        help="keep the journal as a read-only archive and start a new one (table stopped)",
    )
    aside.add_argument("--config", required=True, help="the table config: its data_dir and game")
    aside.set_defaults(run=_cmd_journal_set_aside)

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
    export.set_defaults(run=_cmd_journal_export)

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
    watch.set_defaults(run=_cmd_shoe_watch)

    cam = commands.add_parser(
        "camera-watch",
        help="print each card the camera reads as a JSON line (technician's tool)",
    )
    cam.add_argument(
        "source", help="device index or /dev/videoN, a stream URL, a video file or image folder"
    )
    cam.add_argument("--count", type=_positive_int, help="stop after N cards (default: Ctrl-C)")
    cam.set_defaults(run=_cmd_camera_watch)

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
    hashpw.set_defaults(run=_cmd_hash_password)

    linkkey = commands.add_parser(
        "link-key",
        help="make this table's link signing key (0600) and print its public key",
    )
    source = linkkey.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", help="the table config: its [mqtt] signing_key and key_id")
    source.add_argument("--out", help="where to write the key (with --key-id)")
    linkkey.add_argument("--key-id", help="the key id (default with --config: its key_id)")
    linkkey.add_argument("--owner", help="give the file to this user (as root): table-controller")
    linkkey.set_defaults(run=_cmd_link_key)

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
    backup.set_defaults(run=_cmd_backup)

    restore = commands.add_parser(
        "restore", help="put a journal backup in place of the journal (table stopped)"
    )
    restore.add_argument("--config", required=True, help="the table config: its data_dir")
    restore.add_argument("backup", help="the backup file (journal-...sqlite)")
    restore.set_defaults(run=_cmd_restore)

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


def _cmd_backup(args: argparse.Namespace) -> int:
    from pathlib import Path

    from controller.backup import backup_journal
    from controller.config import load_table_config

    config = load_table_config(args.config)
    folder = Path(args.to) if args.to else config.data_dir / "backups"
    done = backup_journal(config.journal_path, folder, keep=args.keep)
    print(done.report())
    return 0


def _cmd_restore(args: argparse.Namespace) -> int:
    from pathlib import Path

    from controller.audit import command_line_account
    from controller.backup import restore_journal
    from controller.cli_users import audited
    from controller.config import load_table_config
    from controller.journal.maintenance import record_change
    from controller.table.significant import printable

    config = load_table_config(args.config)
    _, record = audited(config, "restore")
    by = f"{command_line_account()} (command line)"

    def journal_the_restore(copy: Path) -> None:  # the restored file's next event says so
        detail = printable(f"backup {Path(args.backup).name}")
        record_change(copy, config.rules, config.settings, "restore", by=by, detail=detail)

    try:
        done = restore_journal(args.backup, config.journal_path, carry_on=journal_the_restore)
    except Exception as exc:
        record("refused", object=str(args.backup), detail=str(exc))
        raise
    record(object=str(args.backup), detail=done.summary)
    print(f"restored {args.backup} as {done.journal}: {done.summary}")
    if done.kept is not None:
        print(f"the journal it replaced is kept as {done.kept} (with its -wal, if any)")
    print(
        "before starting the table: the jackpot controller must not have acknowledged more "
        "than the outbox's 'written' above for this table, else see docs/journal.md, "
        '"Restoring" (the messages after the backup are gone)'
    )
    return 0


def _cmd_link_key(args: argparse.Namespace) -> int:
    from controller.link.signing import make_link_key

    table_id = None
    if args.config:
        from controller.cli_users import audited
        from controller.config import load_table_config

        config = load_table_config(args.config)
        path, key_id, table_id = config.mqtt.signing_key, config.mqtt.key_id, config.table_id
        key_id = args.key_id or key_id
        _, record = audited(config, "link_key")
        try:
            public = make_link_key(path, key_id, args.owner)
        except Exception as exc:
            record("refused", object=key_id, detail=str(exc))
            raise
        record(object=key_id, detail=f"a new signing key {path}")
        return _print_link_key(path, key_id, public, table_id)
    else:
        if not args.key_id:
            print("link-key: --out needs --key-id (e.g. hcm-bj-07-1)", file=sys.stderr)
            return 2
        path, key_id = args.out, args.key_id
    return _print_link_key(path, key_id, make_link_key(path, key_id, args.owner), table_id)


def _print_link_key(path: object, key_id: str, public: str, table_id: str | None) -> int:
    print(f"wrote the signing key {path} (mode 0600); keep it on this machine only")
    print(f"key id: {key_id}")
    print(f"public key: {public}")
    print("In the jackpot controller's config:")
    print(f"[tables.{table_id or 'TABLE-ID'}]")
    print(f'keys = {{ "{key_id}" = "{public}" }}')
    return 0


def _cmd_hash_password(args: argparse.Namespace) -> int:
    import getpass

    from controller.web.auth import MIN_PASSWORD, hash_password

    if args.stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass("Technicians' password: ")
        if getpass.getpass("Again: ") != password:
            print("hash-password: the two passwords differ; nothing printed", file=sys.stderr)
            return 2
    if len(password) < MIN_PASSWORD:
        print(
            f"hash-password: the password needs at least {MIN_PASSWORD} characters "
            f"(got {len(password)}); nothing printed",
            file=sys.stderr,
        )
        return 2
    print(f'password_hash = "{hash_password(password)}"')
    print(
        "hash-password: put this line in the [web] section of the table's config "
        "(/etc/table-controller/table.toml), then restart the table controller",
        file=sys.stderr,
    )
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from controller import logs
    from controller.config import load_table_config
    from controller.runtime.daemon import run_table

    logs.setup(args.log_level)  # journald: each line's priority; a terminal: the time
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
