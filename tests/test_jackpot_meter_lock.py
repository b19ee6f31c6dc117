"""The meters' lock is defined once (jackpot/store ``meters_for_update``): the PostgreSQL
store's ``lock_money`` and a batch's start take the meter rows with the same statement, in
the same order (by pool), which is what keeps two writers from deadlocking."""

from __future__ import annotations

from jackpot import ledger
from jackpot.store import meters_for_update, postgres


def test_both_writers_lock_the_meters_in_pool_order() -> None:
    assert postgres._LOCK_METERS == "SELECT pool FROM meters ORDER BY pool FOR UPDATE"
    assert ledger._METERS_HELD == ("SELECT pool, value, hits FROM meters ORDER BY pool FOR UPDATE")
    assert meters_for_update("pool") == postgres._LOCK_METERS
