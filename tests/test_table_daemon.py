"""The real ``table-controller run`` process, end to end (issue 6).

Real parts only: a Mosquitto on a free loopback port (tests/mqtt_broker.py), the real
``jackpot-controller`` process with its SQLite ledger, ``shoe-sim`` on a pseudo-terminal
dealing a known card order, and the daemon with gpiozero's mock pins, driven the way the
hardware would: chips placed and buttons pressed through the control socket's simulated
inputs, cards drawn from the simulated shoe.

The crash test deals two rounds, starts a third, kills the daemon with SIGKILL after three
cards, restarts it and checks that the round resumes exactly (the same snapshot, the next
card goes where it should, the same settlement) and that every contribution reached the
ledger exactly once, and that the table's last word (its retained offline status) carries its
own link signature.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest
from link_keys import table_kid, table_verifier
from mqtt_broker import OBSERVER, BrokerClient, broker  # noqa: F401
from table_rig import ROUND_CARDS, TABLE, Rig  # noqa: F401

from controller.games import load_game
from controller.journal import Journal
from controller.table.effects import Publish
from controller.table.machine import Table


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    r = Rig(tmp_path, broker)
    try:
        yield r
    finally:
        r.stop()


def journal_link(path: Path) -> tuple[int, int, int]:
    """(written, acknowledged, pending) of the journal's outbox (acknowledged rows go)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        written, acked = db.execute("SELECT written, acked FROM link").fetchone()
        (pending,) = db.execute("SELECT count(*) FROM outbox").fetchone()
        return written, acked, pending
    finally:
        db.close()


def ledger_applied(path: Path) -> list[tuple[int, str, str]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT seq, kind, key FROM applied WHERE table_id = ? ORDER BY seq", (TABLE,)
        ).fetchall()
    finally:
        db.close()


def test_kill_9_mid_round_resumes_exactly_and_loses_nothing(rig):
    rig.start_table()
    first = rig.status()
    assert first["table"] == TABLE and first["status"]["snapshot"]["round"] == 1
    rig.bets()
    for _ in range(2):
        rig.play_round()
    # round 3: the chips stay on the layout (carried); lock and deal three cards, then crash
    rig.act("press", name="console.lockout")
    for _ in range(3):
        rig.deal()
    before = rig.status()["status"]
    assert before["snapshot"]["round"] == 3 and before["snapshot"]["phase"] == "dealing"
    journaled = before["journal_events"]
    rig.table.send_signal(signal.SIGKILL)
    rig.table.wait(10)
    rig.control.close()
    os.unlink(rig.tmp / "control.sock")  # as systemd's RuntimeDirectory would be cleaned
    journal_path = rig.tmp / "data" / "journal.sqlite"
    with Journal(journal_path) as journal:
        on_disk = [(e.seq, e.event) for e in journal.entries()]
    # everything the table had reported journaled is on disk (a tick or link event may have
    # followed between the status read and the kill: the machine was loaded)
    assert len(on_disk) >= journaled
    game_events = {"bet", "wager", "lockout", "card", "next", "end_round", "burn", "assign"}
    assert not [e for _s, e in on_disk[journaled:] if e["type"] in game_events], on_disk[journaled:]

    rig.start_table()
    after = rig.status()["status"]
    with Journal(journal_path) as journal:
        now = [(e.seq, e.event) for e in journal.entries()]
    assert now[: len(on_disk)] == on_disk  # nothing lost, nothing replayed twice or changed
    started = [e["type"] for _s, e in now[len(on_disk) :]]
    assert not set(started) & game_events, started  # the restart itself made no game event
    assert after["snapshot"]["round"] == 3 and after["snapshot"]["phase"] == "dealing"
    for key in ("spots", "dealer", "bets", "in_action", "lights"):
        assert after["snapshot"][key] == before["snapshot"][key], key  # resumes exactly
    for _ in range(3):  # spot 1's second card, spot 2's, the hole card
        rig.deal()
    snap = rig.status()["status"]["snapshot"]
    assert [h["cards"] for s in snap["spots"] for h in s["hands"]] == [["10H", "7S"], ["9C", "8H"]]
    assert snap["dealer"]["cards"] == ["6D", "back"]  # the hole card is still not shown
    rig.stand_both()
    rig.deal()
    settled = rig.wait(lambda a: a["status"]["snapshot"]["phase"] == "settled", "settled")
    nets = [i for i in settled["feed"] if i["kind"] == "settled" and i["wager"] == "main"]
    assert {(i["spot"], i["outcome"], i["paid"]) for i in nets[-2:]} == {
        (1, "win", 2500),
        (2, "win", 1000),
    }
    rig.act("press", name="console.end_round")

    # every outbox message acknowledged, then the ledger holds each exactly once
    rig.wait(lambda a: a["health"]["link"]["depth"] == 0, "the outbox to drain", timeout=30)
    written, acked, pending = journal_link(journal_path)
    assert (acked, pending) == (written, 0)
    applied = ledger_applied(rig.ledger)
    assert [seq for seq, _k, _key in applied] == list(range(1, written + 1))  # no gap, once
    assert len({key for _s, _k, key in applied}) == written  # no message made twice
    contributions = [key for _s, kind, key in applied if kind == "contribution"]
    assert contributions == [f"round-{n}/spot-1/blazing_7s/contribution" for n in (1, 2, 3)]
    with Journal(journal_path) as journal:  # the journal's events, replayed on a pure table
        replayed = Table(load_game("pa-standard"), journal.settings).run(journal.events())
    made = [e.key for step in replayed for e in step.effects if isinstance(e, Publish)]
    assert [key for _s, _k, key in applied] == made
    with Journal(journal_path) as journal:
        assert journal.round_count()[0] == 3

    # a clean stop: SIGTERM, exit 0, the retained status says offline and clean
    rig.table.send_signal(signal.SIGTERM)
    assert rig.table.wait(15) == 0, rig.log("table")
    watcher = BrokerClient(rig.broker, OBSERVER, OBSERVER)  # the rig's controller runs
    try:
        watcher.subscribe(f"bj/v1/table/{TABLE}/status")
        got = watcher.get(timeout=15)
        status = json.loads(got.payload)
        assert status["state"] == "offline" and status["clean"] is True
        assert table_verifier(TABLE).verify(got.topic, status) == table_kid(TABLE)  # signed
    finally:
        watcher.close()


def test_link_down_refuses_progressive_wagers_and_the_table_carries_on(rig):
    rig.start_table()
    rig.wait(lambda a: a["health"]["link"]["connected"], "the link to connect")
    rig.broker.kill()
    rig.wait(lambda a: not a["status"]["jackpot_link"], "the table to hear the link is down")
    rig.bets()
    rig.act("press", name="console.lockout")
    status = rig.status()
    spots = status["status"]["snapshot"]["spots"]
    assert spots[0]["wagers"] == {"main": 2500}  # Blazing 7's not taken
    codes = [i.get("code") for i in status["feed"] if i["kind"] == "alarm"]
    assert "jackpot_link_down" in codes and "progressive_refused" in codes
    rig.broker.start()
    rig.wait(lambda a: a["status"]["jackpot_link"], "the link back up", timeout=40)
