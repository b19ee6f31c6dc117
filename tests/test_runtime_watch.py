"""The fault watchers: health samples (plain numbers) in, table events out."""

from __future__ import annotations

from controller.runtime.watch import LINK_WHY, DriverWatch, LinkWatch
from controller.table.events import JackpotLink, TableFault


def test_driver_lost_latches_after_its_time_and_reports_when_back():
    w = DriverWatch("shoe", 30_000, now_ms=0)
    assert w.update(1_000, True) == []
    assert w.update(2_000, False, "offline") == []
    assert w.update(31_999, False, "offline") == []
    (fault,) = w.update(32_000, False, "offline")
    assert fault == TableFault("shoe", "offline for 30 s", True, t=32_000)
    assert w.update(40_000, False) == []  # reported once
    (back,) = w.update(41_000, True)
    assert back == TableFault("shoe", "", active=False, t=41_000)
    assert w.update(42_000, True) == []


def test_driver_back_before_its_time_is_no_fault():
    w = DriverWatch("camera", 5_000, now_ms=0)
    assert w.update(1_000, False) == []
    assert w.update(5_999, False) == []
    assert w.update(6_000, True) == []
    assert w.update(10_000, False) == []  # the clock restarts with each loss
    assert w.update(14_999, False) == []


def test_zero_fault_time_latches_at_once():
    w = DriverWatch("shoe", 0, now_ms=0)
    assert w.update(5, False) == [TableFault("shoe", "not connected for 0 s", t=5)]


def test_link_down_at_once_for_wagers_and_fault_after_its_time():
    w = LinkWatch(30_000, 300_000, now_ms=0, grace_ms=0)
    assert w.update(0, True, 0, 0) == []
    (down,) = w.update(1_000, False, 0, 0)
    assert down == JackpotLink(False, why="not_connected", t=1_000)
    assert w.update(300_999, False, 3, 0) == []
    (fault,) = w.update(301_000, False, 3, 0)
    assert fault.kind == "link" and fault.active and "not connected" in fault.detail
    up, gone = w.update(302_000, True, 3, 0)
    assert up == JackpotLink(True, t=302_000)
    assert gone == TableFault("link", "", active=False, t=302_000)


def test_unacknowledged_rows_count_as_link_down():
    w = LinkWatch(30_000, 0, now_ms=0, grace_ms=0)
    assert w.update(0, True, 2, 10) == []  # rows wait from now
    assert w.update(29_999, True, 2, 10) == []
    assert w.update(30_000, True, 2, 10) == [JackpotLink(False, why="no_ack", t=30_000)]
    # an ack moves last_ack: the controller is applying again
    assert w.update(31_000, True, 1, 11) == [JackpotLink(True, t=31_000)]
    assert w.update(100_000, True, 0, 12) == []  # nothing waiting: up however long
    assert w.update(900_000, False, 0, 12) == [JackpotLink(False, why="not_connected", t=900_000)]
    assert w.update(2_000_000, False, 0, 12) == []  # fault_after 0: never latched


def test_grace_at_start_and_a_table_that_was_down():
    w = LinkWatch(30_000, 60_000, now_ms=0, grace_ms=10_000)
    assert w.update(5_000, False, 0, 0) == []  # still connecting
    assert w.update(10_000, False, 0, 0) == [JackpotLink(False, why="not_connected", t=10_000)]
    w2 = LinkWatch(30_000, 60_000, now_ms=0, up=False, grace_ms=10_000)
    assert w2.update(1_000, True, 0, 0) == [JackpotLink(True, t=1_000)]


def test_a_silent_or_offline_controller_is_the_link_down_at_once():
    """Issue 28 item 3: connected to the broker and nothing waiting for an ack, but the
    controller's heartbeat is older than its limit (or it said offline): down at once, with
    the words the dealer sees; a fresh heartbeat brings it back."""
    w = LinkWatch(30_000, 300_000, now_ms=0, grace_ms=0, controller_timeout_ms=6_000)
    assert w.update(0, True, 0, 0, "online", 0) == []
    assert w.update(5_999, True, 0, 0, "online", 5_999) == []
    assert w.update(6_000, True, 0, 0, "online", 6_000) == [
        JackpotLink(False, why="controller_silent", t=6_000)
    ]
    assert LINK_WHY[w.why] == "the jackpot controller is not answering"
    assert w.update(7_000, True, 0, 0, "online", 100) == [JackpotLink(True, t=7_000)]
    assert w.why is None
    assert w.update(7_100, True, 0, 0, "offline", 0) == [
        JackpotLink(False, why="controller_offline", t=7_100)
    ]
    assert w.update(8_000, True, 0, 0, "online", 50) == [JackpotLink(True, t=8_000)]
    # no heartbeat ever heard: down once the start's grace is over
    w2 = LinkWatch(30_000, 60_000, now_ms=0, grace_ms=10_000, controller_timeout_ms=6_000)
    assert w2.update(9_000, True, 0, 0, None, None) == []
    assert w2.update(10_000, True, 0, 0, None, None) == [
        JackpotLink(False, why="controller_silent", t=10_000)
    ]
    (fault,) = w2.update(70_000, True, 0, 0, None, None)
    assert fault.detail == "jackpot link down (the jackpot controller is not answering) for 60 s"
