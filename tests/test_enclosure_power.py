"""The enclosure door and the power (issue 28 item 5), on the running table (tests/table_rig.py:
the real daemon with gpiozero's mock pins driven through the control socket, the real broker
and jackpot controller, shoe-sim).

- ``[gpio.console] enclosure_door`` (GLI-11's logic door: the table base or the Pi's
  enclosure): its state at every start is journaled; opened while a round is in progress is an
  alarm; opened or shut between rounds a prompt. The contact is closed while the door is shut,
  so a cut wire reads open.
- A clean stop (SIGTERM) leaves a marker in ``data_dir``; a start without one, on a journal
  that has events, journals a ``power_loss`` with the last event and its UTC time and raises
  an alarm.
- Each reaches the center (issue 28 item 4): a signed, sequenced ``event`` message through the
  outbox, kept in the jackpot controller's ledger with the table's and the controller's time,
  listed by ``jackpot-controller report events``.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from mqtt_broker import broker  # noqa: F401
from table_rig import Rig

from controller.journal import Journal


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    r = Rig(tmp_path, broker, enclosure_door=True)
    try:
        yield r
    finally:
        r.stop()


def journaled(rig: Rig, kind: str) -> list[dict]:
    with Journal(rig.tmp / "data" / "journal.sqlite") as journal:
        return [e.event for e in journal.entries() if e.event["type"] == kind]


def feed_codes(answer: dict) -> list[str]:
    return [i.get("code") for i in answer["feed"] if i.get("code")]


def at_the_center(rig: Rig, count: int) -> list[dict]:
    """The first ``count`` events in the jackpot controller's ledger, as ``report events``
    lists them (waiting for the controller to apply them)."""
    deadline = time.monotonic() + 60  # a loaded machine delivers late
    while True:
        with sqlite3.connect(f"file:{rig.ledger}?mode=ro", uri=True) as db:
            try:
                (have,) = db.execute("SELECT count(*) FROM events").fetchone()
            except sqlite3.OperationalError:  # the controller has not created it yet
                have = 0
        if have >= count:
            break
        assert time.monotonic() < deadline, f"{have} events at the center:\n{rig.log('jackpot')}"
        time.sleep(0.1)
    done = subprocess.run(
        [sys.executable, "-m", "jackpot.cli", "report", "events", "--ledger", str(rig.ledger),
         "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    return rows[:count]


def test_the_enclosure_at_start_and_opened_mid_round(rig):
    rig.start_table()
    # the mock pin reads inactive: the contact is open, so the door is open at start
    rig.wait(lambda a: "enclosure_at_start" in feed_codes(a), "the door's start state")
    (start,) = journaled(rig, "enclosure_door")
    assert (start["open"], start["at_start"]) == (True, True)
    rig.act("input", name="console.enclosure_door", active=True)  # shut
    rig.wait(lambda a: "enclosure_door" in feed_codes(a), "the door shut")
    rig.bets()
    rig.act("press", name="console.lockout")
    rig.deal()
    rig.act("input", name="console.enclosure_door", active=False)  # opened mid-round
    answer = rig.wait(lambda a: "enclosure_open" in feed_codes(a), "the alarm")
    (alarm,) = [i for i in answer["feed"] if i.get("code") == "enclosure_open"]
    assert alarm["text"] == "The table's enclosure was opened during round 1"
    assert [(e["open"], e.get("at_start", False)) for e in journaled(rig, "enclosure_door")] == [
        (True, True),
        (False, False),
        (True, False),
    ]
    # the center has each, in order, with both clocks (issue 28 item 4)
    rows = at_the_center(rig, 3)
    assert [(r["table"], r["code"], r["in_round"]) for r in rows] == [
        ("hcm-bj-07", "enclosure_open", "no"),
        ("hcm-bj-07", "enclosure_closed", "no"),
        ("hcm-bj-07", "enclosure_open", "yes"),
    ]
    assert [r["at_start"] for r in rows] == ["yes", "", ""] and rows[2]["round"] == 1
    assert all(r["table_utc"] != "unknown" and r["received_utc"] for r in rows), rows


def test_a_clean_stop_leaves_a_marker_and_a_kill_is_journaled_as_a_power_loss(rig):
    marker = rig.tmp / "data" / "clean-stop"
    rig.start_table()
    rig.bets()
    rig.table.send_signal(signal.SIGTERM)
    assert rig.table.wait(30) == 0, rig.log("table")
    assert marker.exists()
    rig.control.close()
    rig.start_table()  # after a clean stop: no power loss, the marker is used up
    rig.wait(lambda a: "enclosure_at_start" in feed_codes(a), "the restart's first events")
    assert not marker.exists()
    assert journaled(rig, "power_loss") == []
    assert "power_loss" not in feed_codes(rig.status())
    rig.act("press", name="console.lockout")
    with Journal(rig.tmp / "data" / "journal.sqlite") as journal:
        last_seq, last_utc = journal.db.execute(
            "SELECT seq, utc_ms FROM events ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    rig.table.send_signal(signal.SIGKILL)  # as a power cut: no marker
    rig.table.wait(30)
    rig.control.close()
    (rig.tmp / "control.sock").unlink()
    assert not marker.exists()
    rig.start_table()
    answer = rig.wait(lambda a: "power_loss" in feed_codes(a), "the power loss alarm")
    (event,) = journaled(rig, "power_loss")
    assert event["last_event"] >= last_seq and event["last_utc_ms"] >= last_utc > 0
    (alarm,) = [i for i in answer["feed"] if i.get("code") == "power_loss"]
    (center,) = [r for r in at_the_center(rig, 4) if r["code"] == "power_loss"]
    assert (center["last_event"], center["table"]) == (event["last_event"], "hcm-bj-07")
    assert alarm["text"].startswith(
        f"The table did not stop cleanly (power loss?): its last event was {event['last_event']}"
        " at 20"
    ) and alarm["text"].endswith(" UTC")
