"""``table-controller report day``: a gaming day's report from the journal."""

from __future__ import annotations

import argparse
import json
import sys

from controller.errors import TableControllerError


def report_day(args: argparse.Namespace) -> int:
    """Print the report of ``args.day`` for the table of ``args.config`` (CSV or JSON)."""
    import datetime
    from zoneinfo import ZoneInfo

    from controller.config import load_table_config
    from controller.journal.library import JournalLibrary
    from controller.parsheet import compute_par_sheet
    from controller.report import day_report, report_csv
    from controller.rules.ev import basic_strategy_edge
    from controller.runtime.history import par_figures

    try:
        day = datetime.date.fromisoformat(args.day)
    except ValueError:
        raise TableControllerError(
            f"report day: --day {args.day!r} is not a gaming day: write it as YYYY-MM-DD"
        ) from None
    config = load_table_config(args.config)
    gaming = config.gaming_day

    def start_of(date: datetime.date) -> int:
        moment = datetime.datetime.combine(date, gaming.starts)
        aware = moment.replace(tzinfo=ZoneInfo(gaming.zone)) if gaming.zone else moment.astimezone()
        return int(aware.timestamp() * 1000)

    start, end = start_of(day), start_of(day + datetime.timedelta(days=1)) - 1
    library = JournalLibrary(config.journal_path)
    for bad in (f for f in library.files() if f.problem):
        print(
            f"table-controller: warning: journal file {bad.path} cannot be read, its rounds "
            f"are not in the report: {bad.problem}",
            file=sys.stderr,
        )
    records = [found.record for found in library.rounds_between(start, end, 10**9)]
    rules = config.rules
    report = day_report(
        day.isoformat(),
        records,
        main_par=basic_strategy_edge(rules),
        side_par=par_figures(compute_par_sheet(rules)),
    )
    report["table"] = config.table_id
    report["game"] = rules.name
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        print(report_csv(report), end="")
    return 0
