"""The table's history (controller/runtime/history.py): the store on disk, the counting of
rounds, the confidence bands, the lines a page draws (controller/runtime/history_series.py),
and the recorder's cadence.

The store is a real SQLite file with the production settings in ``tmp_path``; the recorder
runs on the test's thread (``poll`` and ``sample`` called directly) with a clock the test
moves, and a library of round records made here (the journal's shape)."""

from __future__ import annotations

import math
import random
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import pytest

from controller.games import load_game
from controller.parsheet import compute_par_sheet
from controller.runtime.history import (
    MAX_POINTS,
    HistoryError,
    HistoryRecorder,
    HistoryStore,
    count_round,
    new_totals,
    par_band,
    par_figures,
    series,
    wilson,
)

HOUR_MS = 3_600_000
T0 = 1_770_000_000_000


@pytest.fixture(autouse=True)
def _no_shared_par(monkeypatch):
    """What the store itself keeps and computes, without the run's shared par figures
    (tests/conftest.py; tests/test_par_cache.py tests them)."""
    monkeypatch.delenv("TABLE_CONTROLLER_PAR_CACHE", raising=False)


# -- the bands ------------------------------------------------------------------------------


def test_wilson_interval_matches_the_textbook_and_stays_inside_0_1():
    lo, hi = wilson(10, 100)
    assert (round(lo, 4), round(hi, 4)) == (0.0552, 0.1744)  # Newcombe (1998), z = 1.96
    lo, hi = wilson(0, 20)
    assert lo == 0.0 and 0.15 < hi < 0.17  # nothing hit: not an empty interval
    lo, hi = wilson(20, 20)
    assert hi == 1.0 and 0.83 < lo < 0.85
    assert wilson(0, 0) is None
    with pytest.raises(ValueError, match="hits must be from 0 to n"):
        wilson(5, 4)


def test_par_band_narrows_with_the_square_root_of_n():
    lo, hi = par_band(0.1, 0.3, 100)
    assert (round(lo, 4), round(hi, 4)) == (0.0412, 0.1588)
    lo4, hi4 = par_band(0.1, 0.3, 400)
    assert hi4 - lo4 == pytest.approx((hi - lo) / 2)
    assert par_band(0.1, 0.3, 0) is None


def test_par_figures_give_the_hold_and_its_spread_from_the_outcomes():
    # a 3 to 1 bet hitting one time in four: fair (hold 0), variance 0.25*9 + 0.75*1 = 3
    sheet = {
        "bets": {
            "x": {
                "title": "X",
                "hit_frequency": 0.25,
                "house_edge": 0.0,
                "lose_probability": 0.75,
                "outcomes": [{"probability": 0.25, "contribution": 0.75}],
            }
        }
    }
    x = par_figures(sheet)["x"]
    assert x["hold"] == 0.0 and x["hold_sd"] == pytest.approx(math.sqrt(3))
    assert x["hit"] == 0.25 and x["hit_sd"] == pytest.approx(math.sqrt(0.25 * 0.75))


def test_par_figures_of_the_shipped_game_match_its_par_sheet():
    sheet = compute_par_sheet(load_game("pa-standard"))
    par = par_figures(sheet)
    ladies = sheet["bets"]["lucky_ladies"]
    assert par["lucky_ladies"]["hit"] == ladies["hit_frequency"]
    assert par["lucky_ladies"]["hold"] == ladies["house_edge"]
    assert par["lucky_ladies"]["title"] == "Lucky Ladies"
    assert par["twenty_one_plus_three_xtreme"]["title"] == "21+3 Xtreme"
    # Blazing 7's: the meter lines have no fixed figure; its hold is that of the fixed awards
    blazing = sheet["bets"]["blazing_7s"]
    assert par["blazing_7s"]["hold"] == pytest.approx(-blazing["return_excluding_meter"])
    # EZ Bust's figures depend on the up card: no single par
    assert par["ez_bust"]["hit"] is None and par["ez_bust"]["hold"] is None
    # the spread, checked by simulation: 10^9 Lucky Ladies wagers drawn from its outcomes
    import numpy as np

    rng = np.random.default_rng(7)
    paying = [o for o in ladies["outcomes"] if o["probability"] and o["contribution"] is not None]
    weights = np.array([o["probability"] for o in paying] + [ladies["lose_probability"]])
    nets = np.array([o["contribution"] / o["probability"] for o in paying] + [-1.0])
    counts = rng.multinomial(10**9, weights / weights.sum())
    mean = float((counts * nets).sum() / counts.sum())
    sd = math.sqrt(float((counts * nets * nets).sum() / counts.sum()) - mean * mean)
    assert sd == pytest.approx(par["lucky_ladies"]["hold_sd"], rel=0.01)
    assert -mean == pytest.approx(par["lucky_ladies"]["hold"], abs=5 * sd / math.sqrt(10**9))


def test_the_par_band_holds_95_in_100_simulated_tables():
    """A game that plays to par lands inside its band about 95 times in 100 (the point of
    the band: a few hundred rounds are noisy, and the band says how noisy)."""
    p, n, tables = 0.1, 300, 2000
    rng = random.Random(11)
    lo, hi = par_band(p, math.sqrt(p * (1 - p)), n)
    inside = sum(lo <= sum(rng.random() < p for _ in range(n)) / n <= hi for _ in range(tables))
    assert 0.92 <= inside / tables <= 0.975


# -- the store ------------------------------------------------------------------------------


def test_a_sample_is_on_disk_with_the_production_settings_and_survives_a_restart(tmp_path):
    path = tmp_path / "history.sqlite"
    store = HistoryStore(path)
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store.totals() is None  # a new store
    store.add(T0, {**new_totals(4), "outbox": 3})
    store.add(T0 + 60_000, {**new_totals(5), "outbox": 0})
    store.close()
    store.close()  # twice is fine
    again = HistoryStore(path)  # a restart
    try:
        assert [(t, d["round"], d["outbox"]) for t, d in again.samples()] == [
            (T0, 4, 3),
            (T0 + 60_000, 5, 0),
        ]
        assert again.totals()["round"] == 5
    finally:
        again.close()


def test_samples_older_than_the_retention_are_deleted_but_the_totals_stay(tmp_path):
    store = HistoryStore(tmp_path / "history.sqlite", keep_hours=2)
    try:
        for minute in range(0, 4 * 60, 10):  # four hours, one sample every 10 minutes
            store.add(T0 + minute * 60_000, {**new_totals(minute), "outbox": 0})
        kept = [t for t, _d in store.samples()]
        last = T0 + (4 * 60 - 10) * 60_000
        assert kept[0] == last - 2 * HOUR_MS and kept[-1] == last
        assert len(kept) == 13  # two hours of six an hour, both ends included
        assert store.totals()["round"] == 230  # the running totals are not a sample
        assert [t for t, _d in store.samples(last - 30 * 60_000)] == kept[-4:]
    finally:
        store.close()


def test_a_store_that_cannot_be_written_says_so(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    with pytest.raises(HistoryError, match="cannot open the history"):
        HistoryStore(folder / "missing-dir" / "history.sqlite")
    path = tmp_path / "newer.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(HistoryError, match="written by newer software"):
        HistoryStore(path)


# -- counting rounds --------------------------------------------------------------------------


def settled(spot: int, wager: str, stake: int, outcome: str, paid: int, returned: int) -> dict:
    return {
        "effect": "settled",
        "spot": spot,
        "wager": wager,
        "stake": stake,
        "outcome": outcome,
        "paid": paid,
        "returned": returned,
        "reason": "",
    }


def record(
    number: int,
    settlements: list[dict],
    *,
    cards: int = 5,
    void: str | None = None,
    contributions: tuple[tuple[str, int, bool], ...] = (),
) -> dict[str, Any]:
    return {
        "round": number,
        "void": void,
        "events": [{"type": "lockout"}] + [{"type": "card", "card": "2C"}] * cards,
        "effects": [
            {
                "effect": "publish",
                "topic": "contribution",
                "payload": {"pool": pool, "stake": stake, "mystery": mystery},
            }
            for pool, stake, mystery in contributions
        ],
        "result": {"settlements": settlements},
    }


def test_a_round_counts_its_cards_and_each_side_bets_wagers_hits_stakes_and_net():
    totals = new_totals()
    count_round(
        totals,
        record(
            1,
            [
                settled(1, "main", 2500, "win", 2500, 2500),  # not a side bet
                settled(1, "lucky_ladies", 1000, "win", 4000, 1000),  # 4 to 1
                settled(2, "lucky_ladies", 500, "lose", 0, 0),
                settled(2, "blazing_7s", 500, "win", 1000, 0),  # $10, the $5 not returned
                settled(3, "double_down", 1000, "lose", 0, 0),
            ],
            cards=7,
            contributions=(("blazing_7s", 500, True),),
        ),
    )
    count_round(totals, record(2, [], cards=4, void="misdeal"))  # voided: no round, no cards
    assert (totals["round"], totals["rounds"], totals["cards"]) == (2, 1, 7)
    assert totals["bets"] == {
        "lucky_ladies": {"n": 2, "hits": 1, "stake": 1500, "net": 4000 - 500, "s2": 1250000},
        "blazing_7s": {"n": 1, "hits": 1, "stake": 500, "net": 500, "s2": 250000},
    }
    assert totals["pools"] == {"blazing_7s": 500, "mystery": 500}


# -- what a page draws ----------------------------------------------------------------------


def rows_of(tallies: list[tuple[int, int, int, int]], every_ms: int = 60_000) -> list:
    """Samples of one bet's cumulative (wagers, hits, stake, net), a minute apart, with
    rounds and cards growing and the link going down at the third."""
    out = []
    for i, (n, hits, stake, net) in enumerate(tallies):
        out.append(
            (
                T0 + i * every_ms,
                {
                    **new_totals(i),
                    "rounds": i * 2,
                    "cards": i * 20,
                    "link_up": 0 if i == 2 else 1,
                    "outbox": 5 if i == 2 else 0,
                    "bets": {
                        "lucky_ladies": {
                            "n": n,
                            "hits": hits,
                            "stake": stake,
                            "net": net,
                            "s2": n * 100 * 100,
                        }
                    },
                    "pools": {"blazing_7s": i * 500},
                },
            )
        )
    return out


def test_series_gives_rates_per_hour_and_the_seen_figures_against_par():
    par = {
        "lucky_ladies": {
            "title": "Lucky Ladies",
            "hit": 0.1,
            "hit_sd": 0.3,
            "hold": 0.17,
            "hold_sd": 2.0,
        }
    }
    rows = rows_of([(0, 0, 0, 0), (10, 1, 1000, -500), (20, 2, 2000, 0), (40, 5, 4000, -2000)])
    lines = series(rows, par)
    assert lines["t"] == [(T0 + i * 60_000) / 1000 for i in range(4)]
    assert lines["rounds_per_hour"] == [None, 120.0, 120.0, 120.0]  # 2 a minute
    assert lines["cards_per_hour"] == [None, 1200.0, 1200.0, 1200.0]
    assert lines["link_up"] == [1, 1, 0, 1] and lines["outbox"] == [0, 0, 5, 0]
    assert lines["pools"]["blazing_7s"] == {"title": "Blazing 7's", "cents": [0, 500, 1000, 1500]}
    ladies = lines["bets"]["lucky_ladies"]
    assert ladies["hit"] == [None, 0.1, 0.1, 0.125]
    assert ladies["hold"] == [None, 0.5, 0.0, 0.5]  # the house's share: -net / stakes
    assert ladies["hit_lo"][0] is None
    lo, hi = par_band(0.1, 0.3, 40)
    assert (ladies["hit_lo"][-1], ladies["hit_hi"][-1]) == (pytest.approx(lo), pytest.approx(hi))
    lo, hi = par_band(0.17, 2.0, 40)  # equal stakes: the effective n is the wagers
    assert (ladies["hold_lo"][-1], ladies["hold_hi"][-1]) == (pytest.approx(lo), pytest.approx(hi))
    assert ladies["hit_in_band"] is True and ladies["hold_in_band"] is True
    assert ladies["seen_hit_interval"] == pytest.approx(wilson(5, 40))
    assert (ladies["wagers"], ladies["hits"], ladies["par_hit"]) == (40, 5, 0.1)


def test_a_hold_far_from_par_is_outside_the_band():
    par = {
        "lucky_ladies": {
            "title": "Lucky Ladies",
            "hit": 0.1,
            "hit_sd": 0.3,
            "hold": 0.17,
            "hold_sd": 0.5,
        }
    }
    # 400 wagers, the players won 60% of the stakes: far outside par +- 1.96 * 0.5 / 20
    lines = series(rows_of([(400, 40, 40000, 24000)]), par)["bets"]["lucky_ladies"]
    assert lines["hold"] == [-0.6] and lines["hold_in_band"] is False
    assert lines["hit_in_band"] is True


def test_a_long_period_is_thinned_keeping_counts_the_worst_outbox_and_any_link_down():
    rows = []
    for i in range(3000):
        data = {**new_totals(i), "rounds": i, "cards": 10 * i, "outbox": 0, "link_up": 1}
        if i == 1234:
            data.update(outbox=77, link_up=0)
        rows.append((T0 + i * 60_000, data))
    lines = series(rows, None, max_points=MAX_POINTS)
    assert len(lines["t"]) <= MAX_POINTS
    assert max(lines["outbox"]) == 77 and min(lines["link_up"]) == 0
    assert lines["t"][-1] == (T0 + 2999 * 60_000) / 1000  # the newest sample is kept
    assert {round(r) for r in lines["rounds_per_hour"][1:]} == {60}


# -- the recorder ---------------------------------------------------------------------------


@dataclass
class Found:
    record: dict[str, Any]

    @property
    def number(self) -> int:
        return self.record["round"]


class Library:
    """The journal's settled rounds, as JournalLibrary gives them."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def settle(self, n: int) -> None:
        number = len(self.records) + 1
        for i in range(n):
            self.records.append(
                record(number + i, [settled(1, "lucky_ladies", 1000, "lose", 0, 0)], cards=6)
            )

    def last_rounds(self, n: int) -> list[Found]:
        return [Found(r) for r in reversed(self.records[-n:])] if n else []

    def rounds_after(self, number: int, limit: int) -> list[Found]:
        return [Found(r) for r in self.records if r["round"] > number][:limit]


class Clock:
    def __init__(self) -> None:
        self.s = 100.0

    def __call__(self) -> float:
        return self.s


class Recorder:
    def __init__(self, tmp_path, library: Library, live: dict[str, Any], utc: int = T0):
        self.clock = Clock()
        self.utc = utc
        self.store = HistoryStore(tmp_path / "history.sqlite")
        self.history = HistoryRecorder(
            self.store,
            library,
            lambda: dict(live),
            utc=self.tick,
            clock=self.clock,
            every_s=60,
            after_round_s=5,
        )

    def tick(self) -> int:
        self.utc += 1000  # each sample a second after the one before, at least
        return self.utc

    def at(self, seconds: float) -> bool:
        self.clock.s += seconds
        self.utc += int(seconds * 1000)
        return self.history.poll()

    def close(self) -> None:
        self.store.close()


def test_the_recorder_samples_each_minute_and_soon_after_a_round(tmp_path):
    library = Library()
    library.settle(3)  # rounds played before the history began are not counted
    live = {
        "round": 4,
        "phase": "betting",
        "link_up": True,
        "connected": True,
        "outbox": 0,
        "shoe": {"errors": {}, "reconnects": 0},
    }
    rig = Recorder(tmp_path, library, live)
    try:
        assert rig.at(0)  # the first sample at once
        assert rig.store.totals()["round"] == 3 and rig.store.totals()["rounds"] == 0
        assert not rig.at(30)  # nothing settled, a minute not up
        library.settle(1)  # round 4 settles: the table moves on to round 5
        live.update(round=5, phase="betting")
        assert rig.at(1)  # soon after a round
        library.settle(1)
        live.update(round=6, phase="betting")
        assert not rig.at(2)  # but not within 5 s of the last sample
        assert rig.at(3)
        assert not rig.at(30)
        assert rig.at(30)  # the minute, round or not
        assert rig.store.count() == 4
        totals = rig.store.totals()
        assert (totals["round"], totals["rounds"], totals["cards"]) == (5, 2, 12)
        assert totals["bets"]["lucky_ladies"]["n"] == 2
    finally:
        rig.close()


def test_each_round_is_counted_once_across_a_restart_and_shoe_counters_carry_on(tmp_path):
    library = Library()
    live = {
        "round": 1,
        "phase": "betting",
        "link_up": True,
        "connected": True,
        "outbox": 0,
        "shoe": {"errors": {"bad_checksum": 2}, "reconnects": 1},
    }
    rig = Recorder(tmp_path, library, live)
    assert rig.history.sample()  # a new history: counting starts here
    library.settle(5)
    assert rig.history.sample()
    live["shoe"] = {"errors": {"bad_checksum": 2}, "reconnects": 1}
    assert rig.history.sample()  # again at once: nothing new
    totals = rig.store.totals()
    assert (totals["rounds"], totals["shoe_errors"], totals["shoe_reconnects"]) == (5, 2, 1)
    live["shoe"] = {"errors": {"bad_checksum": 3, "garbage": 1}, "reconnects": 1}
    assert rig.history.sample()
    assert rig.store.totals()["shoe_errors"] == 4
    rig.close()

    # a restart: the driver's counters start again at 0; the rounds settled meanwhile are
    # read from the journal, each once
    library.settle(2)
    live["shoe"] = {"errors": {"garbage": 1}, "reconnects": 0}
    again = Recorder(tmp_path, library, live, utc=T0 + HOUR_MS)
    try:
        assert again.history.sample()
        totals = again.store.totals()
        assert (totals["round"], totals["rounds"], totals["cards"]) == (7, 7, 42)
        assert totals["bets"]["lucky_ladies"] == {
            "n": 7,
            "hits": 0,
            "stake": 7000,
            "net": -7000,
            "s2": 7_000_000,
        }
        assert (totals["shoe_errors"], totals["shoe_reconnects"]) == (5, 1)
        assert again.store.count() == 5
    finally:
        again.close()


def test_a_sample_that_cannot_be_written_is_said_once_and_tried_again(tmp_path, caplog):
    library = Library()
    live = {"round": 1, "phase": "betting"}
    rig = Recorder(tmp_path, library, live)
    store = rig.store
    store.close()  # the file is gone from under the recorder
    assert not rig.history.sample()
    assert not rig.history.sample()
    assert rig.history.problem == f"history {store.path} is closed"
    assert caplog.text.count("history: sample not recorded") == 1
    assert rig.history.state()["problem"] == rig.history.problem


def test_the_par_figures_are_computed_once_and_kept_with_the_history(tmp_path, monkeypatch):
    import controller.parsheet

    rules = load_game("pa-standard")
    store = HistoryStore(tmp_path / "history.sqlite")
    first = HistoryRecorder(store, Library(), dict, rules=rules)
    first._compute_par()
    assert first.par is not None and first.par["lucky_ladies"]["title"] == "Lucky Ladies"
    store.close()

    def not_again(_rules):
        raise AssertionError("the par sheet was computed again")

    monkeypatch.setattr(controller.parsheet, "compute_par_sheet", not_again)
    store = HistoryStore(tmp_path / "history.sqlite")  # a restart
    try:
        again = HistoryRecorder(store, Library(), dict, rules=rules)
        again._compute_par()
        assert again.par == first.par and again.par_problem is None
        other = HistoryRecorder(store, Library(), dict, rules=rules.with_decks(2))
        other._compute_par()  # other rules: computed (here it cannot be): said, no par
        assert other.par is None and "the par sheet was computed again" in other.par_problem
    finally:
        store.close()


def test_a_link_outage_shorter_than_a_minute_has_its_own_points(tmp_path):
    live = {"round": 1, "phase": "betting", "link_up": True, "connected": True, "outbox": 0}
    rig = Recorder(tmp_path, Library(), live)
    try:
        assert rig.at(0)
        live.update(link_up=False, connected=False, outbox=3)  # the broker goes away
        assert rig.at(0.5) is False  # not twice within a second
        assert rig.at(0.5)
        assert not rig.at(20)
        live.update(link_up=True, connected=True, outbox=0)  # back 50 s later
        assert rig.at(30)
        lines = series(rig.store.samples())
        assert lines["link_up"] == [1, 0, 1] and lines["outbox"] == [0, 3, 0]
    finally:
        rig.close()


def test_metrics_say_whether_the_history_is_written():
    from controller.web.metrics import TableMetrics

    bundle = {"table": "t", "game": "g", "version": "1", "config_checksum": "c", "uptime_s": 1,
              "status": {"snapshot": {"round": 1, "alarms": []}, "faults": {}}, "health": {},
              "history": {"samples_written": 5, "problem": None}}  # fmt: skip
    text = TableMetrics(lambda: (bundle, {})).text()
    assert "table_controller_history_samples_written_total 5.0" in text
    assert "table_controller_history_ok 1.0" in text
    bundle["history"] = {"samples_written": 5, "problem": "disk full"}
    assert "table_controller_history_ok 0.0" in TableMetrics(lambda: (bundle, {})).text()


def test_the_par_sheet_waits_until_a_page_asks_for_it(tmp_path, monkeypatch):
    """Computing a par sheet takes seconds of CPU (more on a Pi): a running recorder does
    not do it at start beside the table's loop, only when the charts are first asked for
    (or two minutes in), and the asker gets them."""
    import controller.parsheet

    calls = []
    real = controller.parsheet.compute_par_sheet

    def counted(rules):
        calls.append(rules)
        return real(rules)

    monkeypatch.setattr(controller.parsheet, "compute_par_sheet", counted)
    store = HistoryStore(tmp_path / "history.sqlite")
    recorder = HistoryRecorder(store, Library(), dict, rules=load_game("pa-standard")).start()
    try:
        time.sleep(1.2)  # two turns of the thread's loop
        assert calls == [] and recorder.par is None
        assert recorder.want_par(30)
        assert len(calls) == 1 and recorder.par["lucky_ladies"]["title"] == "Lucky Ladies"
        assert recorder.want_par(0)  # known now: no wait, no second computation
        assert len(calls) == 1
    finally:
        recorder.close()
        store.close()


def test_the_par_sheet_is_given_without_a_running_recorder(tmp_path):
    """A recorder whose thread is not running (stopped, or never started) computes the par
    sheet for the page that asks, instead of making every request wait for nothing."""
    store = HistoryStore(tmp_path / "history.sqlite")
    try:
        recorder = HistoryRecorder(store, Library(), dict, rules=load_game("pa-standard"))
        # computed in the asker's call: known without waiting at all (however slow the CPU)
        assert recorder.want_par(0) and recorder.par is not None
    finally:
        store.close()


# -- the main game's hold against its basic-strategy edge (issue 31 item 4) ------------------


def main_settled(spot: int, wager: str, stake: int, paid: int, returned: int, hand: int = 0):
    return {**settled(spot, wager, stake, "", paid, returned), "hand": hand}


def test_a_round_counts_the_main_games_initial_wagers_and_net_as_the_days_report_does():
    from controller.report import day_report

    records = [
        record(
            1,
            [
                main_settled(1, "main", 1000, 1000, 1000, hand=0),  # a split: one hand wins
                main_settled(1, "main", 1000, 0, 0, hand=1),  # the other loses
                main_settled(2, "main", 2500, 2500, 2500),  # doubled and won
                main_settled(2, "double_down", 2500, 2500, 2500),
                main_settled(3, "main", 500, 750, 500),  # a blackjack, 3 to 2
                settled(3, "lucky_ladies", 500, "lose", 0, 0),  # not the main game
            ],
        ),
        record(2, [main_settled(1, "main", 1000, 0, 0)], void="misdeal"),  # not counted
        record(3, [main_settled(1, "main", 1000, 0, 500)]),  # surrendered
    ]
    totals = new_totals()
    for r in records:
        count_round(totals, r)
    # initial wagers: 1000 + 2500 + 500 and 1000; the players' net 0 + 5000 + 750 - 500
    assert totals["main"] == {
        "n": 4,
        "stake": 5000,
        "net": 5250,
        "s2": 1000**2 + 2500**2 + 500**2 + 1000**2,
    }
    report = day_report("2026-11-28", records, main_par=0.005)
    main = report["lines"][0]
    assert (main["wagers"], main["staked_cents"], main["house_net_cents"]) == (4, 5000, -5250)
    # a store written before the main game was counted carries on counting it
    old = new_totals()
    del old["main"]
    count_round(old, records[2])
    assert old["main"] == {"n": 1, "stake": 1000, "net": -500, "s2": 1_000_000}


def main_rows(tallies: list[tuple[int, int, int, int]]) -> list:
    """Samples a minute apart with the main game's cumulative (wagers, stake, net, s2)."""
    return [
        (
            T0 + i * 60_000,
            {**new_totals(i), "main": {"n": n, "stake": stake, "net": net, "s2": s2}},
        )
        for i, (n, stake, net, s2) in enumerate(tallies)
    ]


def test_the_main_games_hold_is_drawn_against_the_basic_strategy_edge_with_a_band():
    from controller.report import MAIN_HOLD_SD

    rows = main_rows(
        [
            (0, 0, 0, 0),
            (10, 10_000, -500, 10 * 1000**2),  # the house won $5 of $100
            (40, 40_000, 2000, 40 * 1000**2),  # the players are $20 up
            # unequal wagers: the effective n is stake^2 / s2 = 100^2 / (40 + 4 * 15^2)
            (44, 100_000, 1000, 40 * 1000**2 + 4 * 15_000**2),
        ]
    )
    main = series(rows, None, main_edge=0.005)["main"]
    assert main["hold"] == [None, 0.05, -0.05, -0.01]  # the house's net / initial wagers
    assert main["edge"] == 0.005 and main["edge_state"] == "ready"
    assert main["hold_sd"] == MAIN_HOLD_SD == 1.15
    assert main["hold_lo"][0] is None and main["hold_hi"][0] is None  # no wager yet
    lo, hi = par_band(0.005, 1.15, 10)
    assert (main["hold_lo"][1], main["hold_hi"][1]) == (pytest.approx(lo), pytest.approx(hi))
    lo, hi = par_band(0.005, 1.15, 100**2 / (40 + 4 * 15**2))
    assert (main["hold_lo"][-1], main["hold_hi"][-1]) == (pytest.approx(lo), pytest.approx(hi))
    assert main["band"] == [main["hold_lo"][-1], main["hold_hi"][-1]]
    assert (main["wagers"], main["stakes"], main["house_net"]) == (44, 100_000, -1000)
    assert main["seen_hold"] == -0.01
    assert "reference, not an alarm" in main["note"] and "basic strategy" in main["note"]
    # a reference, never a verdict: nothing to colour the row with
    assert not {k for k in main if "in_band" in k or "alarm" in k}
    # far outside the band is still only a line on a chart
    far = series(main_rows([(1000, 1_000_000, 500_000, 1000 * 1000**2)]), None, main_edge=0.005)
    assert far["main"]["hold"] == [-0.5] and not {k for k in far["main"] if "in_band" in k}


def test_the_main_games_reference_is_said_to_be_computing_until_it_is_there():
    rows = main_rows([(0, 0, 0, 0), (10, 10_000, -500, 10 * 1000**2)])
    computing = series(rows, None)["main"]
    assert computing["edge"] is None and computing["edge_state"] == "computing"
    assert computing["hold"] == [None, 0.05]  # what was seen is drawn meanwhile
    assert computing["hold_lo"] == [None, None] and computing["band"] is None
    failed = series(rows, None, main_problem="basic-strategy edge not computed: boom")["main"]
    assert failed["edge_state"] == "failed" and "boom" in failed["edge_problem"]
    # samples written before the main game was counted: no line, no error
    old = [(T0, {k: v for k, v in new_totals().items() if k != "main"})]
    assert series(old, None, main_edge=0.005)["main"]["hold"] == [None]


def test_the_basic_strategy_edge_is_computed_off_the_request_path_once_and_kept(
    tmp_path, monkeypatch
):
    """The charts are answered at once; the edge (seconds of CPU) comes on another thread,
    is kept in the store beside the side bets' par, and is not computed again at a
    restart."""
    import threading

    import controller.rules.ev

    rules = load_game("pa-standard")
    release = threading.Event()
    calls = []

    def slow_edge(given):
        calls.append(given)
        release.wait(30)
        return 0.0042

    monkeypatch.setattr(controller.rules.ev, "basic_strategy_edge", slow_edge)
    store = HistoryStore(tmp_path / "history.sqlite")
    try:
        recorder = HistoryRecorder(store, Library(), dict, rules=rules)
        recorder.par, recorder._par_done = {}, threading.Event()
        recorder._par_done.set()  # the side bets' par: known (not what this test is about)
        started = time.monotonic()
        assert recorder.want_par(5)  # no recorder thread: the edge on a thread of its own
        # it returns at once; a wait for the edge would take the 5 s it was given (a bound
        # under that, not a tight time a busy machine could miss)
        assert time.monotonic() - started < 4.5 and recorder.main_edge is None
        assert not recorder.wait_main_edge(0.2)
        release.set()
        assert recorder.wait_main_edge(10) and recorder.main_edge == 0.0042
        assert calls == [rules]
        store.keep_par("abc", {"lucky_ladies": {}})  # the par sheet kept: the edge stays
        assert store.par("main:" + _rules_key(rules)) == {"edge": 0.0042}
    finally:
        store.close()

    def not_again(_rules):
        raise AssertionError("the edge was computed again")

    monkeypatch.setattr(controller.rules.ev, "basic_strategy_edge", not_again)
    store = HistoryStore(tmp_path / "history.sqlite")  # a restart
    try:
        again = HistoryRecorder(store, Library(), dict, rules=rules)
        again._compute_main_edge()
        assert again.main_edge == 0.0042 and again.main_edge_problem is None
        other = HistoryRecorder(store, Library(), dict, rules=rules.with_decks(2))
        other._compute_main_edge()  # other rules: computed (here it cannot be): said
        assert other.main_edge is None and "computed again" in other.main_edge_problem
        assert "computed again" in other.state()["main_edge_problem"]
    finally:
        store.close()


def _rules_key(rules) -> str:
    import hashlib

    return hashlib.sha256(repr(rules).encode()).hexdigest()
