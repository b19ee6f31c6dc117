"""``table-controller`` commands that read or change a table's journal: ``replay`` (an event
script through the table), ``recall``, ``journal-set-aside``, ``journal-export``, ``backup``
and ``restore`` (``docs/journal.md``). The parser is ``controller.cli``'s."""

from __future__ import annotations

import argparse
import json
import sys

from controller.errors import TableControllerError


def cmd_replay(args: argparse.Namespace) -> int:
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


def cmd_recall(args: argparse.Namespace) -> int:
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


def cmd_journal_set_aside(args: argparse.Namespace) -> int:
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


def cmd_journal_export(args: argparse.Namespace) -> int:
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


def cmd_backup(args: argparse.Namespace) -> int:
    from pathlib import Path

    from controller.backup import backup_journal
    from controller.config import load_table_config

    config = load_table_config(args.config)
    folder = Path(args.to) if args.to else config.data_dir / "backups"
    done = backup_journal(config.journal_path, folder, keep=args.keep)
    print(done.report())
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
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


def _signed_money(cents: int) -> str:
    """``-5700`` -> ``-$57.00``; ``0`` -> ``$0.00``; ``250`` -> ``+$2.50``."""
    from controller.rules.pays import format_cents

    sign = "-" if cents < 0 else "+" if cents > 0 else ""
    return sign + format_cents(abs(cents))


def _net_by_spot(settlements: list[dict]) -> dict[str, int]:
    nets: dict[str, int] = {}
    for line in settlements:
        key = str(line["spot"])
        nets[key] = nets.get(key, 0) + line["paid"] + line["returned"] - line["stake"]
    return dict(sorted(nets.items(), key=lambda item: int(item[0])))
