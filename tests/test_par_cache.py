"""The par figures shared by the daemons of one machine ($TABLE_CONTROLLER_PAR_CACHE,
controller/runtime/history.py): a recorder over a new history store (another data_dir, a
demo's work folder) reads the side bets' par and the main game's edge another computed for
the same rules, and computes them itself when none was shared, or the file is broken."""

from __future__ import annotations

import json

import pytest

import controller.parsheet
import controller.rules.ev
from controller.games import load_game
from controller.runtime.history import PAR_CACHE_ENV, HistoryRecorder, HistoryStore


class Library:
    def last_rounds(self, n):
        return []

    def rounds_after(self, number, limit):
        return []


def recorder(folder, rules) -> tuple[HistoryRecorder, HistoryStore]:
    folder.mkdir(parents=True)
    store = HistoryStore(folder / "history.sqlite")
    return HistoryRecorder(store, Library(), dict, rules=rules), store


def test_a_new_store_reads_what_another_daemon_computed_for_the_same_rules(tmp_path, monkeypatch):
    monkeypatch.setenv(PAR_CACHE_ENV, str(tmp_path / "shared"))
    rules = load_game("pa-standard")
    monkeypatch.setattr(controller.rules.ev, "basic_strategy_edge", lambda _rules: 0.0042)
    first, store = recorder(tmp_path / "table-a", rules)
    first._compute_par()
    first._compute_main_edge()
    store.close()
    assert first.par["lucky_ladies"]["title"] == "Lucky Ladies" and first.main_edge == 0.0042
    assert len(list((tmp_path / "shared").glob("*.json"))) == 2

    def not_again(_rules):
        raise AssertionError("computed again")

    monkeypatch.setattr(controller.parsheet, "compute_par_sheet", not_again)
    monkeypatch.setattr(controller.rules.ev, "basic_strategy_edge", not_again)
    second, store = recorder(tmp_path / "table-b", rules)  # a new data_dir
    try:
        second._compute_par()
        second._compute_main_edge()
        assert second.par == first.par and second.par_problem is None
        assert second.main_edge == 0.0042 and second.main_edge_problem is None
        other = HistoryRecorder(store, Library(), dict, rules=rules.with_decks(2))
        other._compute_par()  # other rules: not shared, so computed (here it cannot be)
        assert other.par is None and "computed again" in other.par_problem
    finally:
        store.close()


@pytest.mark.parametrize("shared", [None, "broken"])
def test_without_a_folder_or_with_a_broken_file_the_figures_are_computed(
    tmp_path, monkeypatch, shared
):
    rules = load_game("pa-standard")
    calls = []

    def edge(given):
        calls.append(given)
        return 0.0042

    monkeypatch.setattr(controller.rules.ev, "basic_strategy_edge", edge)
    if shared is None:
        monkeypatch.delenv(PAR_CACHE_ENV, raising=False)
    else:
        monkeypatch.setenv(PAR_CACHE_ENV, str(tmp_path / "shared"))
    for n in (1, 2):
        if shared:  # every file there cut short, as by a disk that filled
            for path in (tmp_path / "shared").glob("*.json"):
                path.write_text('{"edge": 0.00')
        one, store = recorder(tmp_path / f"table-{n}", rules)
        try:
            one._compute_main_edge()
            assert one.main_edge == 0.0042 and one.main_edge_problem is None
        finally:
            store.close()
    assert calls == [rules, rules]
    if shared:
        (kept,) = (tmp_path / "shared").glob("main-*.json")
        assert json.loads(kept.read_text()) == {"edge": 0.0042}
