"""``jackpot-controller reconcile``, ``audit-signatures`` and ``verify-ledger``: exit 0 all
agree, 1 a difference (each named), 2 bad input (one line). jackpot/reconcile.py,
jackpot/audit.py, jackpot/chain.py; docs/jackpot/audit.md, docs/jackpot/controller.md.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from jackpot.commands import bad
from jackpot.reports import ReportError, open_reader


def reconcile_main(argv: list[str]) -> int:
    from jackpot.reconcile import find_table, meter_differences, read_journal, reconcile

    p = argparse.ArgumentParser(
        prog="jackpot-controller reconcile",
        description="Each table's journal and outbox against the ledger: every message applied "
        "once, none missing, the same content and amounts; what differs, table by table.",
    )
    p.add_argument("--ledger", required=True, help="the ledger file (or a copy) or a URL")
    p.add_argument("journals", nargs="+", metavar="[TABLE=]JOURNAL",
                   help="a table's journal file (its older files too, after a rotation); "
                   "TABLE= names its table when the ledger cannot tell")  # fmt: skip
    args = p.parse_args(argv)
    prog = "jackpot-controller reconcile"
    try:
        with open_reader(args.ledger) as reader:
            known = {t for (t,) in reader.rows("SELECT table_id FROM tables")}
            by_table = defaultdict(list)
            for given in args.journals:
                table, _, path = given.partition("=") if "=" in given else ("", "", given)
                sent = read_journal(Path(path))
                if table and table not in known:
                    return bad(prog, f"{given}: no table {table!r} in the ledger")
                by_table[table or find_table(reader, sent)].append(sent)
            checks = [reconcile(reader, t, s) for t, s in sorted(by_table.items())]
            meters = meter_differences(reader)
    except ReportError as exc:
        return bad(prog, str(exc))
    for check in checks:
        print("\n".join(check.lines()))
    print(
        f"ledger: {len(meters)} DIFFERENCES"
        if meters
        else "ledger: every meter is the sum of its movements: ok"
    )
    for line in meters:
        print(f"ledger: {line}")
    return 1 if meters or any(c.differences for c in checks) else 0


def audit_main(argv: list[str]) -> int:
    from jackpot.audit import audit

    p = argparse.ArgumentParser(
        prog="jackpot-controller audit-signatures",
        description="Verify every stored message's signature with the key its table had when "
        "it arrived (the ledger's key history, retired keys included), and every revealed "
        "Mystery draw against its commitment.",
    )
    p.add_argument("--ledger", required=True, help="the ledger file (or a copy) or a URL")
    args = p.parse_args(argv)
    try:
        with open_reader(args.ledger) as reader:
            result = audit(reader)
    except ReportError as exc:
        return bad("jackpot-controller audit-signatures", str(exc))
    print("\n".join(result.lines()))
    return 1 if result.failures else 0


def verify_main(argv: list[str]) -> int:
    from jackpot import chain

    p = argparse.ArgumentParser(
        prog="jackpot-controller verify-ledger",
        description="Check the hash chains of the ledger's applied messages, meter movements "
        "and awards (issue 29): name the first row of each that was changed after it was "
        "written.",
    )
    p.add_argument("--ledger", required=True, help="the ledger file (or a copy) or a URL")
    args = p.parse_args(argv)
    try:
        with open_reader(args.ledger) as reader:
            order = "n" if reader._pg is not None else "rowid"
            ((since,),) = reader.rows(
                "SELECT coalesce(max(value), '') FROM meta WHERE key='chain_since'"
            )
            checked = chain.verify(reader.rows, order, chain.since_of(since or None))
    except ReportError as exc:
        return bad("jackpot-controller verify-ledger", str(exc))
    print("\n".join(c.line() for c in checked))
    return 1 if any(c.broken for c in checked) else 0
