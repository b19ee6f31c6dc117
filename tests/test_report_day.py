"""``table-controller report day``: a gaming day's play from the journal, against par."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events

from controller.cli import main as table_cli
from controller.games import load_game
from controller.journal import Journal, JournaledTable
from controller.report import COLUMNS, day_report, report_csv

ROOT = Path(__file__).resolve().parent.parent
ZONE = "America/New_York"


def _line(spot, wager, stake, paid, returned, hand=None):
    line = {"spot": spot, "wager": wager, "stake": stake, "paid": paid, "returned": returned}
    if hand is not None:
        line["hand"] = hand
    return line


RECORDS = [
    {  # spot 1 splits 8s (one hand wins, one loses), spot 2 doubles and wins, Lucky Ladies loses
        "round": 1,
        "started_utc_ms": 0,
        "settled_utc_ms": 60_000,
        "result": {
            "settlements": [
                _line(1, "main", 1000, 1000, 1000, hand=0),
                _line(1, "main", 1000, 0, 0, hand=1),
                _line(2, "main", 2500, 2500, 2500, hand=0),
                _line(2, "double_down", 2500, 2500, 2500, hand=0),
                _line(2, "lucky_ladies", 500, 0, 0),
            ]
        },
    },
    {"round": 2, "void": True, "result": {"settlements": [_line(1, "main", 1000, 0, 0, 0)]}},
    {  # spot 1 surrenders; insurance lost
        "round": 3,
        "started_utc_ms": 3_000_000,
        "settled_utc_ms": 3_600_000,
        "result": {
            "settlements": [
                _line(1, "main", 1000, 0, 500, hand=0),
                _line(1, "insurance", 500, 0, 0),
            ]
        },
    },
]


def test_day_report_counts_rounds_hands_initial_wagers_and_hold():
    report = day_report(
        "2026-02-01",
        RECORDS,
        main_par=0.005,
        side_par={"lucky_ladies": {"hold": 0.17, "hold_sd": 2.0}},
    )
    assert (report["rounds"], report["hands"]) == (2, 4)  # the void round is not counted
    assert report["rounds_per_hour"] == pytest.approx(2.0)  # 2 rounds in one hour
    main, insurance, ladies = report["lines"]
    assert main["line"] == "main"
    assert main["wagers"] == 3  # initial wagers: spot 1, spot 2, spot 1
    assert main["staked_cents"] == 1000 + 2500 + 1000
    assert main["house_net_cents"] == -1000 + 1000 - 5000 + 500  # split evens, double wins
    assert main["hold"] == pytest.approx(-4500 / 4500)
    assert main["band_low"] < 0.005 < main["band_high"]
    assert (insurance["line"], insurance["house_net_cents"], insurance["par_hold"]) == (
        "insurance",
        500,
        None,
    )
    assert (ladies["staked_cents"], ladies["house_net_cents"], ladies["hold"]) == (500, 500, 1.0)
    rows = list(csv.DictReader(io.StringIO(report_csv(report))))
    assert tuple(rows[0]) == COLUMNS
    assert [r["line"] for r in rows] == ["main", "insurance", "lucky_ladies"]
    assert {r["gaming_day"] for r in rows} == {"2026-02-01"}
    assert all(
        isinstance(v, int)
        for line in report["lines"]
        for k, v in line.items()
        if k.endswith("_cents")
    )


def table_config(tmp_path: Path) -> Path:
    text = (ROOT / "config" / "table.example.toml").read_text()
    text = text.replace('"/var/lib/table-controller"', f'"{tmp_path / "data"}"')
    text = text.replace("spots = 3 ", "spots = 7 ")  # the feeder's table
    text = text.replace('timezone = ""', f'timezone = "{ZONE}"')
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path


class WallClock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def test_report_day_from_a_journal_ties_back_to_its_settlements(tmp_path, capsys):
    config = table_config(tmp_path)
    (tmp_path / "data").mkdir()
    live = tmp_path / "data" / "journal.sqlite"
    rules = load_game("pa-standard")
    evening = dt.datetime.combine(dt.date(2026, 2, 1), dt.time(20, 0), dt.UTC)
    base = int(evening.timestamp() * 1000) + 5 * 3_600_000  # 8 pm New York
    wall = WallClock()
    with JournaledTable(live, rules, SETTINGS, wall_clock=wall) as table:
        t0 = None
        for event in session_events("pa-standard", 11, 6):
            if event.t is not None:
                t0 = event.t if t0 is None else t0
                wall.ms = base + (event.t - t0)
            table.handle(event)
    with Journal(live) as journal:
        records = journal.rounds_between(0, 2**62, 1000)
    settled = [r for r in records if not r.get("void")]
    lines = [line for r in settled for line in r["result"]["settlements"]]
    assert (
        table_cli(
            ["report", "day", "--config", str(config), "--day", "2026-02-01", "--format", "json"]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["rounds"] == len(settled) > 0
    assert report["hands"] == sum(1 for line in lines if line["wager"] == "main")
    house = sum(line["stake"] - line["paid"] - line["returned"] for line in lines)
    assert sum(line["house_net_cents"] for line in report["lines"]) == house  # ties back
    main = report["lines"][0]
    assert main["line"] == "main" and 0.0 < main["par_hold"] < 0.01
    assert table_cli(["report", "day", "--config", str(config), "--day", "2026-02-02"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[0]["rounds"] == "0"  # nothing played that gaming day


def test_report_day_refuses_a_day_that_is_no_date(tmp_path, capsys):
    config = table_config(tmp_path)
    assert table_cli(["report", "day", "--config", str(config), "--day", "Feb 1"]) == 2
    assert "write it as YYYY-MM-DD" in capsys.readouterr().err
