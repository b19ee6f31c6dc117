"""``jackpot-controller parameters|pool|trigger-key``: the ledger's terms and audited movements.

Every change names two different people (``--by``, ``--approved-by``) and a reason, and is
one transaction of the ledger (jackpot/changes.py); bad input changes nothing, exit 2 with
one line. docs/jackpot/controller.md ("Parameters", "Corrections, transfers, retirement").
"""

from __future__ import annotations

import argparse
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from jackpot import changes
from jackpot.commands import bad
from jackpot.draws import TriggerKey, TriggerKeyError, key_path
from jackpot.money import dollars
from jackpot.parameters import ChangeRefused, show
from jackpot.pools import JackpotConfig, JackpotConfigError, load_config
from jackpot.store import LedgerError, is_dsn, ledger_location

_AMOUNT = re.compile(r"^\s*(-?)\s*\$\s*(-?)\s*([\d,]+(?:\.\d+)?)\s*$")


def parse_amount(text: str) -> Fraction:
    """``"$12.34"``, ``"-$12.34"`` -> exact cents (a fraction of a cent allowed)."""
    match = _AMOUNT.match(text or "")
    if not match or (match[1] and match[2]):
        raise ValueError(f"--amount {text!r}: write dollars like '$12.34' or '-$12.34'")
    whole, _, frac = match[3].replace(",", "").partition(".")
    cents = Fraction(int(whole) * 100) + (Fraction(int(frac) * 100, 10 ** len(frac)) if frac else 0)
    return -cents if (match[1] or match[2]) else cents


def _people(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", required=True, help="who makes the change (name or badge)")
    p.add_argument("--approved-by", required=True, help="who approved it: another person")
    p.add_argument("--reason", required=True, help="why, in words the report will show")


def _where(p: argparse.ArgumentParser, config_positional: bool = False) -> None:
    if not config_positional:
        p.add_argument("--config", required=True, help="the controller's config (in force)")
    p.add_argument("--ledger", help="the ledger (default: the config's [ledger] dsn)")
    p.add_argument(
        "--trigger-key",
        help="the Mystery trigger key file (default: as the "
        "controller finds it: [ledger] trigger_key, beside [link] signing_key)",
    )


def _open(prog: str, args: argparse.Namespace, check_terms: bool = True) -> Any:
    """The ledger for ``args`` (a Ledger), or the exit status 2 after saying why."""
    from jackpot.ledger import Ledger

    try:
        config: JackpotConfig = load_config(args.config)
    except JackpotConfigError as exc:
        return bad(prog, f"bad config: {exc}")
    where = args.ledger or config.ledger_dsn
    if where is None:
        return bad(prog, f"say where the ledger is: --ledger FILE|URL, or [ledger] dsn in "
                         f"{args.config}")  # fmt: skip
    location = ledger_location(where)
    if not is_dsn(location) and not Path(location).is_file():
        return bad(prog, f"no ledger file {location}: the controller makes it at its first start")
    try:
        return Ledger(location, config, check_terms=check_terms,
                      trigger_key=args.trigger_key or key_path(config))  # fmt: skip
    except LedgerError as exc:
        return bad(prog, str(exc).replace("\n", "\n  ") if check_terms else str(exc))


#: The alarm each audited command raises (the alarm log, ``jackpot-controller alarms``): a
#: technician acknowledges it; the change itself is in ``report changes``.
ALARMS = {"parameters": "parameters_changed", "correct": "meter_corrected",
          "transfer": "meter_transferred", "retire": "pool_retired"}  # fmt: skip


def _alarm(location: Any, what: str, n: int, detail: str) -> None:
    """Raise the change's alarm; the change is committed whatever the alarm log does."""
    import sys

    from jackpot.alarms import AlarmLog, AlarmLogError

    try:
        with AlarmLog(location) as alarm_log:
            alarm_log.raise_alarm(ALARMS[what], None, n, f"change #{n}: {detail}")
    except AlarmLogError as exc:
        print(f"jackpot-controller: change #{n} is recorded; its alarm is not: {exc}",
              file=sys.stderr)  # fmt: skip


def parameters_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="jackpot-controller parameters",
        description="The ledger's terms: apply a config's (two people, a reason), or show them.",
    )
    sub = p.add_subparsers(dest="what", required=True)
    apply = sub.add_parser("apply", help="make CONFIG's terms the ledger's, audited")
    apply.add_argument("config", metavar="CONFIG", help="the config to apply")
    _where(apply, config_positional=True)
    _people(apply)
    shown = sub.add_parser("show", help="the terms in force, each with the change that set it")
    shown.add_argument("--ledger", required=True, help="the ledger file or postgresql:// URL")
    args = p.parse_args(argv)
    prog = f"jackpot-controller parameters {args.what}"
    if args.what == "show":
        return _show(prog, args.ledger)
    ledger = _open(prog, args, check_terms=False)
    if isinstance(ledger, int):
        return ledger
    with ledger:
        try:
            n, done = changes.apply_config(ledger, args.by, args.approved_by, args.reason)
        except (ChangeRefused, TriggerKeyError) as exc:
            return bad(prog, f"{exc}; nothing was changed")
        except LedgerError as exc:
            return bad(prog, f"{exc}; nothing was changed")
    said = (f"{len(done)} terms of {args.config}, by {args.by.strip()}, approved by "
            f"{args.approved_by.strip()}")  # fmt: skip
    _alarm(ledger.location, "parameters", n, f"{said}: {args.reason.strip()}")
    print(f"applied change #{n}: {said}")
    for change in done:
        print(f"  {change.line()}")
    return 0


def _show(prog: str, location: str) -> int:
    from jackpot.reports import ReportError, open_reader

    try:
        reader = open_reader(location)
    except ReportError as exc:
        return bad(prog, str(exc))
    with reader:
        rows = reader.rows("SELECT subject, term, value, change_n FROM parameters"
                           " ORDER BY subject, term")  # fmt: skip
    for subject, term, value, n in rows:
        print(f"{subject} {term} = {show(term, value)}  (change #{n})")
    return 0


def pool_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="jackpot-controller pool",
        description="Audited movements of a pool's meter: a correction, a transfer between "
        "pools, the retirement of a pool (two people, a reason; docs/jackpot/audit.md).",
    )
    sub = p.add_subparsers(dest="what", required=True)
    correct = sub.add_parser("correct", help="add to (or take from) a pool's meter")
    correct.add_argument("pool")
    correct.add_argument("--amount", required=True, help="dollars: '$12.34' adds, '-$12.34' takes")
    transfer = sub.add_parser("transfer", help="move money from one pool's meter to another's")
    transfer.add_argument("source", metavar="FROM")
    transfer.add_argument("target", metavar="TO")
    transfer.add_argument("--amount", help="dollars, e.g. '$500' (default: the whole meter)")
    retire = sub.add_parser("retire", help="stop a pool; its meter stays owed until moved")
    retire.add_argument("pool")
    for each in (correct, transfer, retire):
        _where(each)
        _people(each)
    args = p.parse_args(argv)
    prog = f"jackpot-controller pool {args.what}"
    amount = None
    if getattr(args, "amount", None) is not None:
        try:
            amount = parse_amount(args.amount)
        except ValueError as exc:
            return bad(prog, str(exc))
    ledger = _open(prog, args)
    if isinstance(ledger, int):
        return ledger
    people = (args.by, args.approved_by, args.reason)
    with ledger:
        try:
            if args.what == "correct":
                n = changes.correct(ledger, args.pool, amount, *people)
                said = f"{args.pool} corrected by {dollars(amount)}"
            elif args.what == "transfer":
                n, moved = changes.transfer(ledger, args.source, args.target, amount, *people)
                said = f"{dollars(moved)} moved from {args.source} to {args.target}"
            else:
                n = changes.retire(ledger, args.pool, *people)
                said = (f"{args.pool} retired: remove it from the config; its meter stays owed "
                        "(report liability) until moved to $0.00")  # fmt: skip
        except (ChangeRefused, LedgerError) as exc:
            return bad(prog, f"{exc}; nothing was changed")
    _alarm(ledger.location, args.what, n, f"{said}, by {args.by.strip()}, approved by "
           f"{args.approved_by.strip()}: {args.reason.strip()}")  # fmt: skip
    print(f"change #{n}: {said}")
    return 0


def trigger_key_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="jackpot-controller trigger-key",
        description="Make the key file that seals the live Mystery triggers (mode 0600). The "
        "controller makes one by itself at its first start if it may write there; copy it to "
        "a hot standby and keep it out of the ledger's backups.",
    )
    p.add_argument("--out", required=True, help="e.g. /etc/jackpot-controller/mystery-trigger.key")
    p.add_argument("--owner", help="give the file to this user (as root): jackpot-controller")
    args = p.parse_args(argv)
    try:
        key = TriggerKey.create(args.out)
        if args.owner:
            import os
            import pwd

            entry = pwd.getpwnam(args.owner)
            os.chown(args.out, entry.pw_uid, entry.pw_gid)
    except (TriggerKeyError, KeyError, OSError) as exc:
        return bad("jackpot-controller trigger-key", str(exc))
    print(f"wrote the Mystery trigger key {args.out} (mode 0600, fingerprint {key.fingerprint})")
    return 0
