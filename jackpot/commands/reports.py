"""``jackpot-controller report liability|contributions|awards|changes|events --ledger L``.

``--day YYYY-MM-DD`` or ``--from``/``--to`` (gaming days; default: every day the ledger
has), ``--pool NAME`` (not for ``events``: they belong to no pool), ``--format csv|json``
(default csv, a header row). Exit 2 with one line for a bad day, an unknown pool, an empty
or unreadable ledger. jackpot/reports.py computes them; docs/jackpot/audit.md and
docs/jackpot/controller.md ("Table events") say what they mean.
"""

from __future__ import annotations

import argparse
import sys

from jackpot import reports
from jackpot.commands import bad
from jackpot.gaming_day import GamingDayError, parse_day


def report_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="jackpot-controller report",
        description="Reports computed from the ledger alone, for accounting and the auditor "
        "(docs/jackpot/audit.md).",
    )
    p.add_argument("kind", choices=reports.KINDS)
    p.add_argument("--ledger", required=True, help="the ledger file (or a copy) or a URL")
    p.add_argument("--day", help="one gaming day, YYYY-MM-DD")
    p.add_argument("--from", dest="first", metavar="DAY", help="the first gaming day")
    p.add_argument("--to", dest="last", metavar="DAY", help="the last gaming day")
    p.add_argument("--pool", help="one pool only")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    args = p.parse_args(argv)
    prog = f"jackpot-controller report {args.kind}"
    if args.kind == "events" and args.pool:
        return bad(prog, "a table's events belong to no pool: leave out --pool")
    if args.day and (args.first or args.last):
        return bad(prog, "give --day, or --from and --to, not both")
    first, last = (args.day, args.day) if args.day else (args.first, args.last)
    try:
        for day in (first, last):
            if day is not None:
                parse_day(day)
    except GamingDayError as exc:
        return bad(prog, f"{exc}: give gaming days as --day 2026-03-01")
    if first and last and first > last:
        return bad(prog, f"--from {first} is after --to {last}")
    try:
        with reports.open_reader(args.ledger) as reader:
            reports.check_pool(reader, args.pool)
            known = reports.span(reader)
            if args.kind == "liability" or first or last:
                if known is None:
                    return bad(
                        prog,
                        f"{args.ledger}: no gaming day in the ledger yet (every "
                        "row is from before schema 3): ask for a report without days",
                    )
                if (last and last < known[0]) or (first and first > known[1]):
                    given = (("--day", args.day), ("--from", args.first), ("--to", args.last))
                    asked = " ".join(f"{o} {d}" for o, d in given if d)
                    return bad(prog, f"{asked} is outside the ledger: its gaming days run from "
                               f"{known[0]} to {known[1]}")  # fmt: skip
                first, last = first or known[0], last or max(known[1], first or known[1])
            report = getattr(reports, args.kind)(reader, first, last, args.pool)
    except reports.ReportError as exc:
        return bad(prog, str(exc))
    if args.format == "json":
        text = report.json(ledger=args.ledger, first_day=first, last_day=last, pool=args.pool)
        print(text)
    else:
        sys.stdout.write(report.csv())
    return 0
