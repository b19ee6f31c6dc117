"""The ledger's reports, computed from the ledger alone (no config, no table, no clock).

``liability`` (per pool and gaming day close: meter, reset, liability, hits and wins meters),
``contributions`` (per gaming day, property, table and pool), ``awards`` (each award with its
times and who confirmed it), ``changes`` (the terms applied, corrections, transfers,
retirements) and ``events`` (each table's significant events, schema 4: issue 28 item 4).
Each is a :class:`Report`: stable column names and rows, written as CSV (a header row) or
JSON. Money is exact: cents as a decimal (``37.5``) or, for a fraction that
has no decimal, ``num/den``; dollars the same divided by 100. A row written before schema 3
kept no time: its gaming day is ``untimed``; it counts in every close (it came before) and
appears in a list only when no day is asked for. docs/jackpot/audit.md says what each
column means.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jackpot.gaming_day import UNTIMED, GamingDay, days_between, utc_text
from jackpot.money import cents_text, dollars_text
from jackpot.store import LedgerError, is_dsn, open_store

READS_SCHEMA = "5"
KINDS = ("liability", "contributions", "awards", "changes", "events")


class ReportError(ValueError):
    """A report that cannot be made: no ledger, an old schema, an empty ledger, a bad day or
    an unknown pool. The message says which and what to do."""


class Reader:
    """A read-only view of a ledger: an SQLite file opened read-only (an auditor's copy is
    never changed), or a PostgreSQL database (SELECTs only)."""

    def __init__(self, location: str | Path) -> None:
        self.location = str(location)
        self._pg = None
        self._db: sqlite3.Connection | None = None
        if is_dsn(location):
            try:
                self._pg = open_store(str(location))
            except LedgerError as exc:
                raise ReportError(str(exc)) from None
        else:
            path = Path(location)
            if not path.is_file() or path.stat().st_size == 0:
                raise ReportError(f"no ledger at {path}: name the controller's ledger file")
            self._db = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=ro", uri=True)

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        try:
            if self._pg is not None:
                return [tuple(r) for r in self._pg.execute(sql, params).fetchall()]
            return self._db.execute(sql, params).fetchall()
        except (sqlite3.Error, LedgerError) as exc:
            raise ReportError(f"{self.location}: not a jackpot ledger this software reads "
                              f"({str(exc).splitlines()[0]})") from None  # fmt: skip

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
        if self._db is not None:
            self._db.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_reader(location: str | Path) -> Reader:
    """A :class:`Reader` on a schema 4 ledger that holds something; :class:`ReportError`
    otherwise."""
    reader = Reader(location)
    try:
        (schema,) = reader.rows("SELECT value FROM meta WHERE key='schema'")[0] or (None,)
        if schema != READS_SCHEMA:
            raise ReportError(
                f"{location}: ledger schema {schema}; the reports read schema {READS_SCHEMA}: "
                "start this version's controller on it once (it migrates), or on a copy"
            )
        if not reader.rows("SELECT pool FROM meters"):
            raise ReportError(f"{location}: the ledger is empty (no pools): nothing to report")
    except (IndexError, ReportError) as exc:
        reader.close()
        if isinstance(exc, IndexError):
            raise ReportError(f"{location}: no schema in meta: not a jackpot ledger") from None
        raise
    return reader


@dataclass
class Report:
    name: str
    columns: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def csv(self) -> str:
        """CSV with a header row; a text cell a spreadsheet would run as a formula (it starts
        with ``= + - @``, a tab or a carriage return, and is not a number) is written with a
        leading ``'``, shown as text (numbers, ``-7.5`` cents included, stay numbers)."""
        out = io.StringIO()
        writer = csv.DictWriter(out, self.columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: inert(v) for k, v in row.items()} for row in self.rows)
        return out.getvalue()

    def json(self, **about: Any) -> str:
        return json.dumps({"report": self.name, **about, "columns": self.columns,
                           "rows": self.rows}, indent=1)  # fmt: skip


_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?(/[0-9]+)?")


def inert(value: Any) -> Any:
    """``value`` for a CSV cell no spreadsheet runs: ``'`` before a text starting with
    ``= + - @``, a tab or CR that is not a number (CSV formula injection)."""
    if isinstance(value, str) and value.startswith(_FORMULA) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def _money(prefix: str, cents: Fraction | int) -> dict[str, str]:
    return {f"{prefix}_cents": cents_text(cents), f"{prefix}_dollars": dollars_text(cents)}


def span(reader: Reader) -> tuple[str, str] | None:
    """The first and last gaming day any timed row of the ledger has."""
    days = [d for (d,) in reader.rows(
        "SELECT gaming_day FROM movements WHERE gaming_day IS NOT NULL UNION"
        " SELECT gaming_day FROM applied WHERE gaming_day IS NOT NULL UNION"
        " SELECT gaming_day FROM changes")]  # fmt: skip
    return (min(days), max(days)) if days else None


def pools(reader: Reader) -> list[str]:
    return [p for (p,) in reader.rows("SELECT pool FROM meters ORDER BY pool")]


def check_pool(reader: Reader, pool: str | None) -> None:
    known = pools(reader)
    if pool is not None and pool not in known:
        raise ReportError(f"no pool {pool!r} in the ledger (pools: {', '.join(known)})")


def _in(day: str | None, first: str | None, last: str | None) -> bool:
    """Is a row of ``day`` in the asked days (all days, untimed included, if none asked)?"""
    if first is None:
        return True
    return day is not None and first <= day <= last


def terms_at(reader: Reader, day: str | None) -> dict[tuple[str, str], str]:
    """The terms in force at the close of ``day`` (None: now), replayed from ``changes``."""
    terms: dict[tuple[str, str], str] = {}
    for gaming_day, detail in reader.rows("SELECT gaming_day, detail FROM changes ORDER BY n"):
        if day is not None and gaming_day > day and terms:
            break
        _apply_terms(terms, json.loads(detail))
    return terms


def _apply_terms(terms: dict[tuple[str, str], str], detail: list[dict[str, Any]]) -> None:
    """One change's entries applied to ``terms`` (its movements are not terms)."""
    for entry in detail:
        if "subject" not in entry:
            continue
        key = (entry["subject"], entry["term"])
        if entry["new"] is None:
            terms.pop(key, None)
        else:
            terms[key] = entry["new"]


def liability(reader: Reader, first: str, last: str, pool: str | None = None) -> Report:
    """Per pool and gaming day close."""
    columns = ["gaming_day", "pool", "kind", "status", "meter_cents", "meter_dollars",
               "reset_cents", "reset_dollars", "liability_cents", "liability_dollars",
               "hits_day", "wins_day_cents", "wins_day_dollars", "hits_total",
               "wins_total_cents", "wins_total_dollars"]  # fmt: skip
    report = Report("liability", columns)
    # one ordered pass: movements by gaming day (untimed first: they count in every close),
    # the changes in order, the awards summed per pool and day; running totals per day
    moves = sorted(reader.rows("SELECT pool, gaming_day, what, amount FROM movements ORDER BY n"),
                   key=lambda m: m[1] or "")  # fmt: skip
    history = [(d, json.loads(detail)) for d, detail in
               reader.rows("SELECT gaming_day, detail FROM changes ORDER BY n")]  # fmt: skip
    wins_by: dict[tuple[str, str | None], list[int]] = defaultdict(lambda: [0, 0])
    for name, when, amount in reader.rows(
        "SELECT pool, gaming_day, amount FROM awards WHERE state != 'refused'"
    ):
        wins_by[(name, when)][0] += 1
        wins_by[(name, when)][1] += amount
    wins_days = sorted(wins_by.items(), key=lambda w: w[0][1] or "")
    terms: dict[tuple[str, str], str] = {}
    meters: dict[str, Fraction] = defaultdict(Fraction)
    hits_total: dict[str, int] = defaultdict(int)
    wins_total: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    i_move = i_change = i_win = 0
    for day in days_between(first, last):
        while i_change < len(history) and (history[i_change][0] <= day or not terms):
            _apply_terms(terms, history[i_change][1])
            i_change += 1
        while i_move < len(moves) and (moves[i_move][1] is None or moves[i_move][1] <= day):
            name, _when, what, amount = moves[i_move]
            seen.add(name)
            if what != "excess":  # the part of a Mystery hit past its trigger: information
                meters[name] += Fraction(amount)
            i_move += 1
        while i_win < len(wins_days) and (wins_days[i_win][0][1] or "") <= day:
            (name, _when), (count, amount) = wins_days[i_win]
            hits_total[name] += count
            wins_total[name] += amount
            i_win += 1
        for name in sorted(seen):
            if pool is not None and name != pool:
                continue
            kind = terms.get((f"pool:{name}", "kind"), "")
            status = terms.get((f"pool:{name}", "status"), "active")
            if status == "retired" and meters[name] == 0:
                continue  # reported until it is zero
            term = "reset" if kind == "progressive" else "seed"
            reset = 0 if status == "retired" else int(terms.get((f"pool:{name}", term), 0))
            hits_day, wins_day = wins_by.get((name, day), (0, 0))
            report.rows.append({
                "gaming_day": day, "pool": name, "kind": kind, "status": status,
                **_money("meter", meters[name]), **_money("reset", reset),
                **_money("liability", meters[name] - reset),
                "hits_day": hits_day, **_money("wins_day", wins_day),
                "hits_total": hits_total[name], **_money("wins_total", wins_total[name]),
            })  # fmt: skip
    return report


def contributions(reader: Reader, first: str | None, last: str | None,
                  pool: str | None = None) -> Report:  # fmt: skip
    """Per gaming day, property, table and pool: the contributions applied."""
    columns = ["gaming_day", "property", "table", "pool", "count", "stake_cents",
               "contributed_cents", "stake_dollars", "contributed_dollars"]  # fmt: skip
    sums: dict[tuple, list] = {}
    for day, table, name, amount, message in reader.rows(
        "SELECT a.gaming_day, a.table_id, m.pool, m.amount, a.message FROM applied a"
        " JOIN movements m ON m.table_id=a.table_id AND m.seq=a.seq AND m.what='contribution'"
        " WHERE a.kind='contribution' AND a.outcome='applied' ORDER BY a.n"
    ):
        if not _in(day, first, last) or (pool is not None and name != pool):
            continue
        key = (day or UNTIMED, table.split("-", 1)[0], table, name)
        row = sums.setdefault(key, [0, 0, Fraction(0)])
        row[0] += 1
        row[1] += json.loads(message)["payload"]["stake"]
        row[2] += Fraction(amount)
    report = Report("contributions", columns)
    for (day, prop, table, name), (count, stake, added) in sorted(sums.items()):
        report.rows.append({
            "gaming_day": day, "property": prop, "table": table, "pool": name, "count": count,
            "stake_cents": cents_text(stake), "contributed_cents": cents_text(added),
            "stake_dollars": dollars_text(stake), "contributed_dollars": dollars_text(added),
        })  # fmt: skip
    return report


def awards(reader: Reader, first: str | None, last: str | None, pool: str | None = None) -> Report:
    """Each award (offered, committed, refused) with its date and time."""
    columns = ["date", "time", "gaming_day", "property", "table", "round", "spot", "pool",
               "pay_line", "meter_line", "amount_cents", "amount_dollars", "state",
               "offered_utc", "committed_utc", "confirmed_by", "award_id", "hit_order"]  # fmt: skip
    terms = terms_at(reader, None)
    report = Report("awards", columns)
    order = "n" if reader._pg is not None else "rowid"
    for (award_id, table, name, rnd, spot, meter, amount, state, hit_order, confirm_seq,
         offered, committed, day, claim, confirm) in reader.rows(
        "SELECT w.award_id, w.table_id, w.pool, w.round, w.spot, w.meter, w.amount, w.state,"
        " w.hit_order, w.confirm_seq, w.offered_utc, w.committed_utc, w.gaming_day,"
        " c.message, f.message FROM awards w"
        " LEFT JOIN applied c ON c.table_id=w.table_id AND c.seq=w.claim_seq"
        " LEFT JOIN applied f ON f.table_id=w.table_id AND f.seq=w.confirm_seq"
        f" ORDER BY w.{order}"
    ):  # fmt: skip
        if not _in(day, first, last) or (pool is not None and name != pool):
            continue
        prop = table.split("-", 1)[0]
        zone, _, start = terms.get((f"property:{prop}", "gaming_day"), "UTC 00:00").partition(" ")
        when = GamingDay(zone, start).local(offered) if offered is not None else None
        body = json.loads(claim)["payload"] if claim else {}
        line = body.get("line") or ("Must-Hit-By Mystery" if "mystery" in body else "")
        who = ""
        if confirm_seq is not None:
            sent = json.loads(confirm) if confirm else {}
            kid = sent.get("kid", "unsigned") if confirm else "?"
            who = f"{table} seq {confirm_seq} (key {kid})"
            person = (sent.get("payload") or {}).get("confirmed_by")  # issue 28: who, by name
            if person:
                who += f": {person}"
        report.rows.append({
            "date": when.strftime("%Y-%m-%d") if when else UNTIMED,
            "time": when.strftime("%H:%M:%S") if when else UNTIMED,
            "gaming_day": day or UNTIMED, "property": prop, "table": table, "round": rnd,
            "spot": spot, "pool": name, "pay_line": line, "meter_line": meter,
            **_money("amount", amount), "state": state, "offered_utc": utc_text(offered),
            "committed_utc": utc_text(committed), "confirmed_by": who, "award_id": award_id,
            "hit_order": hit_order,
        })  # fmt: skip
    return report


def changes(reader: Reader, first: str | None, last: str | None, pool: str | None = None) -> Report:
    """Every audited change, one row per term or movement it changed."""
    columns = ["change", "utc", "gaming_day", "kind", "subject", "term", "old", "new",
               "amount_cents", "amount_dollars", "by", "approved_by", "reason",
               "config_sha256"]  # fmt: skip
    report = Report("changes", columns)
    for n, t_utc, day, kind, by, approved, reason, sha, detail in reader.rows(
        "SELECT n, t_utc, gaming_day, kind, by_name, approved_by, reason, config_sha256,"
        " detail FROM changes ORDER BY n"
    ):
        if not _in(day, first, last):
            continue
        for entry in json.loads(detail):
            if "subject" in entry:
                subject, term, old, new, amount = (entry["subject"], entry["term"],
                                                   entry["old"], entry["new"], None)  # fmt: skip
            else:
                subject, term = f"pool:{entry['pool']}", "meter"  # in cents, exact
                old = cents_text(Fraction(entry["meter_before"]))
                new = cents_text(Fraction(entry["meter"]))
                amount = Fraction(entry["amount"])
            if pool is not None and subject != f"pool:{pool}":
                continue
            money = _money("amount", amount) if amount is not None else {
                "amount_cents": "", "amount_dollars": ""}  # fmt: skip
            report.rows.append({
                "change": n, "utc": utc_text(t_utc), "gaming_day": day, "kind": kind,
                "subject": subject, "term": term, "old": old or "", "new": new or "",
                **money, "by": by, "approved_by": approved or "", "reason": reason,
                "config_sha256": sha or "",
            })  # fmt: skip
    return report


def events(reader: Reader, first: str | None, last: str | None, pool: str | None = None) -> Report:
    """Each table's significant events in the order the controller received them, with its
    receive time and gaming day and the table's own time (``unknown``: the table did not know
    it); N.J.A.C. 13:69E-1.39C(b)5. They belong to no pool (``pool`` is refused before)."""
    columns = ["received_utc", "gaming_day", "table", "seq", "code", "table_utc", "round",
               "in_round", "by", "detail", "fault", "at_start", "last_event",
               "last_utc"]  # fmt: skip
    report = Report("events", columns)
    for (
        received,
        day,
        table,
        seq,
        code,
        table_utc,
        rnd,
        in_round,
        by,
        detail,
        payload,
    ) in reader.rows(
        "SELECT received_utc, gaming_day, table_id, seq, code, table_utc_ms, round,"
        " in_round, by_name, detail, payload FROM events ORDER BY n"
    ):
        if not _in(day, first, last):
            continue
        p = json.loads(payload)
        at_start = p.get("at_start")
        report.rows.append({
            "received_utc": utc_text(received), "gaming_day": day, "table": table, "seq": seq,
            "code": code, "table_utc": utc_text(table_utc or None) or "unknown", "round": rnd,
            "in_round": "yes" if in_round else "no", "by": by or "", "detail": detail or "",
            "fault": p.get("fault", ""),
            "at_start": "" if at_start is None else ("yes" if at_start else "no"),
            "last_event": p.get("last_event", ""),
            "last_utc": (utc_text(p["last_utc_ms"] or None) or "unknown")
            if "last_utc_ms" in p else "",
        })  # fmt: skip
    return report
