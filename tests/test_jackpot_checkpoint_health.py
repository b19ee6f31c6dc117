"""The service's ``health()["checkpoints"]``: an SQLite ledger's WAL checkpoints this run
(jackpot/store/sqlite.py ``Checkpointer``: ``runs``, ``failures``); None on PostgreSQL,
which has no checkpointer of the controller's."""

from __future__ import annotations

import time

from link_keys import controller_signer, jackpot_config
from mqtt_broker import CONTROLLER, broker  # noqa: F401
from pg_server import ledger_at, pg_server  # noqa: F401

from jackpot.service import JackpotService


def test_health_counts_the_sqlite_checkpoints_and_says_none_on_postgresql(ledger_at, broker):  # noqa: F811
    location = ledger_at()
    svc = JackpotService(jackpot_config(), location, broker.host, broker.port, CONTROLLER,
                         broker.passwords[CONTROLLER], signer=controller_signer(),
                         backoff=(0.05, 0.5))  # fmt: skip
    try:
        assert svc.wait_online(10)
        health = svc.health()
        assert "checkpoints" in health
        if svc._ledger.dialect == "postgresql":
            assert health["checkpoints"] is None
            return
        assert set(health["checkpoints"]) == {"runs", "failures"}
        svc._checkpointer.wake()  # as a commit does: one checkpoint within every_s
        deadline = time.monotonic() + 10
        while svc.health()["checkpoints"]["runs"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        counts = svc.health()["checkpoints"]
        assert counts["runs"] >= 1 and counts["failures"] == 0
    finally:
        svc.close()
