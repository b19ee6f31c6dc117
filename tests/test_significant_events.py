"""Significant events reach the center (issue 28 item 4; N.J.A.C. 13:69E-1.39C(b)5).

The shoe door, shoe and table faults, the enclosure, a power loss, the journal set aside or
restored and the clock unsynchronised each become one sequenced ``event`` message in the
outbox, written with the journal record of the event that made it, stamped with the UTC time
the journal recorded it at, and made again identically by a replay. The jackpot controller's
side (ledger, report, signatures) is tests/test_jackpot_events.py; the running table's is
tests/test_enclosure_power.py and tests/test_hand_pay.py's rig.
"""

from __future__ import annotations

import sqlite3

import pytest
from _journal_feeder import SETTINGS
from journal_versions import back_to_version_4
from test_outbox import publishing_events

from controller.errors import JournalError
from controller.games import load_game
from controller.journal import SCHEMA_VERSION, JournaledTable
from controller.journal.outbox import Outbox
from controller.link.messages import envelope, validate
from controller.table import Table
from controller.table import events as ev
from controller.table.checkpoint import decode, encode
from controller.table.effects import Publish
from controller.table.settings import TableSettings


@pytest.fixture(scope="module")
def pa():
    return load_game("pa-standard")


def sent(step) -> list[tuple[str, dict]]:
    return [
        (e.key, e.payload) for e in step.effects if isinstance(e, Publish) and e.topic == "event"
    ]


def codes(table: Table, events: list[ev.Event]) -> list[str]:
    return [payload["code"] for e in events for _, payload in sent(table.handle(e))]


def test_each_change_is_one_message_and_a_repeat_none(pa):
    table = Table(pa, TableSettings(spots=2))
    assert codes(
        table,
        [
            ev.ShoeEvent("door_open", t=1),
            ev.ShoeEvent("door_open", t=2),  # said twice: once
            ev.ShoeEvent("door_closed", t=3),
            ev.ShoeEvent("door_closed", t=4),
            ev.ShoeEvent("fault", "jam", t=5),
            ev.ShoeEvent("fault", "jam", t=6),
            ev.ShoeEvent("fault_cleared", t=7),
            ev.ShoeEvent("offline", t=8),
            ev.ShoeEvent("online", t=9),
            ev.TableFault("camera", "no frames", t=10),
            ev.TableFault("camera", "no frames", t=11),
            ev.TableFault("camera", active=False, t=12),
            ev.ClearFaults(by="technician ana", t=13),
            ev.TableFault("gpio", "expander", active=False, t=14),  # over when reported
            ev.SupervisorKey(True, t=15),
            ev.SupervisorKey(False, t=16),
            ev.EnclosureDoor(False, at_start=True, t=17),
            ev.EnclosureDoor(True, t=18),
            ev.EnclosureDoor(False, t=19),
            ev.PowerLoss(41, 1_764_169_200_000, "2026-11-26 15:00:00 UTC", t=20),
            ev.JackpotLink(False, why="clock_unsynchronised", t=21),
            ev.JackpotLink(False, why="clock_unsynchronised", t=22),  # still down: nothing new
            ev.LinkAlarm("clock_unsynchronised", "chrony: not synchronised", t=23),
            ev.LinkAlarm("clock_unsynchronised", "chrony: not synchronised", t=24),  # alarm open
            ev.JournalChange("restore", "ana (command line)", "backup journal-1.sqlite", t=25),
            ev.BetSensor(1, "main", True, t=26),  # play makes none
        ],
    ) == [
        "shoe_door_open",
        "shoe_door_closed",
        "shoe_fault",
        "shoe_fault_cleared",
        "shoe_offline",
        "shoe_online",
        "table_fault",
        "table_fault_gone",
        "faults_cleared",
        "table_fault",
        "table_fault_gone",
        "faults_cleared",
        "enclosure_closed",
        "enclosure_open",
        "enclosure_closed",
        "power_loss",
        "clock_unsynchronised",
        "clock_unsynchronised",
        "journal_restored",
    ]
    assert table.state.event_seq == 19


def test_the_message_says_who_what_and_whether_a_round_was_on_and_stays_out_of_recall(pa):
    table = Table(pa, TableSettings(spots=1))
    table.run([ev.BetSensor(1, "main", True, t=1), ev.Lockout(t=2)])
    step = table.handle(ev.ShoeEvent("door_open", "lid", t=3))
    [(key, payload)] = sent(step)
    assert key == "event/1"
    assert payload == {"code": "shoe_door_open", "utc_ms": 0, "round": 1, "in_round": True,
                       "detail": "lid"}  # fmt: skip
    [(key, payload)] = sent(table.handle(ev.PowerLoss(7, 1_700_000_000_000, "x", t=4)))
    assert (key, payload["last_event"], payload["last_utc_ms"]) == ("event/2", 7, 1_700_000_000_000)
    assert not sent(table.handle(ev.ClearFaults(by="ana", t=5)))  # none latched: refused
    table.run(
        [ev.TableFault("camera", "no frames", t=6), ev.TableFault("camera", active=False, t=7)]
    )
    [(key, payload)] = sent(table.handle(ev.ClearFaults(by="technician\x1b[2Jana", t=8)))
    assert (key, payload["code"], payload["by"]) == (
        "event/5",
        "faults_cleared",
        "technician?[2Jana",
    )
    assert not [
        e for e in table.state.round_effects if isinstance(e, Publish) and e.topic == "event"
    ]
    # the next one after a checkpoint carries on the numbering, never reusing a key
    again = Table(pa, TableSettings(spots=1))
    again.state = decode(encode(table.state))
    [(key, _)] = sent(again.handle(ev.ShoeEvent("door_closed", t=9)))
    assert key == "event/6"


def test_the_journal_stamps_its_utc_time_and_a_replay_makes_the_same_messages(tmp_path, pa):
    path = tmp_path / "journal.sqlite"
    clock = iter(range(1_764_169_200_000, 1_764_169_300_000, 1000))
    with JournaledTable(path, pa, SETTINGS, checkpoint_every=4,
                        wall_clock=lambda: next(clock)) as table:  # fmt: skip
        for event in [
            ev.ShoeEvent("door_open", t=1), ev.Tick(t=2), ev.ShoeEvent("door_closed", t=3),
            ev.TableFault("camera", "no frames", t=4), ev.BetSensor(1, "main", True, t=5),
            ev.EnclosureDoor(True, t=6),
        ]:  # fmt: skip
            table.handle(event)
        times = dict(table.journal.db.execute("SELECT seq, utc_ms FROM events").fetchall())
    with JournaledTable(path, pa, SETTINGS) as again, Outbox(path) as box:  # replays and checks
        rows = box.pending()
        assert again.state.event_seq == 4
    assert [(r.key, r.payload["code"]) for r in rows] == [
        ("event/1", "shoe_door_open"), ("event/2", "shoe_door_closed"),
        ("event/3", "table_fault"), ("event/4", "enclosure_open"),
    ]  # fmt: skip
    for row in rows:
        assert row.payload["utc_ms"] == times[row.event] > 0
        message = envelope("hcm-bj-07", 1, row.seq, Publish(row.kind, row.key, row.payload), 5)
        validate("event", message)  # what the publisher sends fits the contract
    # an altered stamp is found on the next start: the outbox is what the events made (the
    # last message, after the checkpoint of event 4, which holds event_seq 3)
    db = sqlite3.connect(path)
    assert db.execute("SELECT max(seq) FROM checkpoints").fetchone()[0] == 4
    db.execute("UPDATE outbox SET payload = json_set(payload, '$.utc_ms', 1) WHERE seq = 4")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match=r"message 4 \(event/4\) is not what event 5 made"):
        JournaledTable(path, pa, SETTINGS)


def test_a_version_4_journal_keeps_its_outbox_and_then_takes_event_messages(tmp_path, pa):
    path = tmp_path / "journal.sqlite"
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in publishing_events(rounds=2):
            table.handle(event)
        state = table.state
    back_to_version_4(path)
    db = sqlite3.connect(path)
    before = db.execute("SELECT * FROM outbox ORDER BY seq").fetchall()
    with pytest.raises(sqlite3.IntegrityError):  # what version 4 could not hold
        db.execute("INSERT INTO outbox VALUES (999999, 1, 'event', 'k', '{}')")
    db.close()
    assert before
    with JournaledTable(path, pa, SETTINGS) as table:
        assert table.state == state
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
        assert db.execute("SELECT * FROM outbox ORDER BY seq").fetchall() == before
        db.close()
        table.handle(ev.ShoeEvent("door_open", t=10**9))
    with Outbox(path) as box:
        assert box.pending()[-1].payload["code"] == "shoe_door_open"
