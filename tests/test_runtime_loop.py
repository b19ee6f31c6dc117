"""The runtime loop with real parts: a JournaledTable on real SQLite (production settings),
gpiozero's MockFactory pins behind the real GpioDriver, events submitted from other threads.

A journal that cannot be written is made real by SQLite itself: ``PRAGMA max_page_count``
at the file's current size makes the next insert fail with SQLITE_FULL ("database or disk
is full"), as a full SD card does; raising it again is the disk freed.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
from gpiozero.pins.mock import MockFactory

from controller.games import load_game
from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.rules.cards import parse_card
from controller.runtime import loop as loop_module
from controller.runtime.loop import RuntimeClock, TableRuntime
from controller.table import events as ev
from controller.table.machine import table_circles
from controller.table.settings import TableSettings
from drivers.gpio import GpioDriver
from drivers.gpio_pins import load_pin_map

ROOT = Path(__file__).resolve().parent.parent
RULES = load_game("pa-standard")
SETTINGS = TableSettings(spots=7)


@pytest.fixture
def rig(tmp_path):
    factory = MockFactory()
    pin_map = load_pin_map(
        ROOT / "config" / "gpio.example.toml", circles=table_circles(RULES), spots=7
    )
    table = JournaledTable(tmp_path / "journal.sqlite", RULES, SETTINGS)
    clock = RuntimeClock(table.state.now)
    runtime_box: list[TableRuntime] = []
    gpio = GpioDriver(pin_map, lambda e: runtime_box[0].submit(e), clock=clock, pin_factory=factory)

    def safe_state(reason):
        if reason is None:
            gpio.clear_fault()
        else:
            gpio.fault(reason)

    runtime = TableRuntime(
        table,
        clock=clock,
        tick_ms=10,
        lights=gpio.apply,
        safe_state=safe_state,
        polls=(gpio.poll,),
    )
    runtime_box.append(runtime)
    yield runtime, gpio, factory, table
    gpio.close()
    table.close()
    factory.close()


def pump(runtime: TableRuntime, until, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runtime.run_once(max_wait_s=0.01)
        if until():
            return
    raise AssertionError("the runtime did not get there")


def led(factory: MockFactory, pin: int) -> bool:
    return factory.pin(pin).state == 1


def test_events_from_threads_are_journaled_in_order_with_time_and_lights(rig):
    runtime, _gpio, factory, table = rig
    events = [ev.BetSensor(1, "main", True), ev.BetSensor(2, "main", True), ev.Lockout()]
    threads = []
    for event in events:
        th = threading.Thread(target=runtime.submit, args=(event,))
        th.start()
        th.join()
        threads.append(th)
    pump(runtime, lambda: table.journal.events_written >= 3)
    stored = list(table.journal.events())
    assert [type(e) for e in stored] == [ev.BetSensor, ev.BetSensor, ev.Lockout]
    assert all(e.t is not None for e in stored)
    assert [e.t for e in stored] == sorted(e.t for e in stored)
    # the lockout light (GPIO 22, active high) is on, as the table said
    assert table.state.lights["lockout"] == "on"
    assert led(factory, 22)
    assert runtime.status()["snapshot"]["phase"] == "dealing"


def test_console_button_on_a_mock_pin_reaches_the_table(rig):
    runtime, gpio, _factory, table = rig
    gpio.simulate("sensors.1.main", True)
    pump(runtime, lambda: table.state.sensors.get((1, "main")))
    gpio.simulate("console.lockout", True)
    pump(runtime, lambda: table.round_in_progress)
    assert any(f["kind"] == "prompt" and f["code"] == "deal" for f in runtime.recent())


def test_fault_holds_the_safe_state_until_the_supervisor_key_clears_it(rig):
    runtime, gpio, factory, table = rig
    runtime.submit(ev.TableFault("shoe", "offline for 30 s"))
    pump(runtime, lambda: gpio.faulted is not None)
    assert led(factory, 22)  # lockout light on: its safe state
    assert "shoe: offline for 30 s" in gpio.faulted
    runtime.submit(ev.TableFault("shoe", active=False))
    gpio.simulate("console.supervisor_key", True)  # the key, on its real (mock) pin
    pump(runtime, lambda: not table.state.faults and gpio.faulted is None)
    assert any(f.get("code") == "faults_cleared" for f in runtime.recent())


def test_journal_full_latches_drops_events_and_recovers(rig):
    runtime, gpio, _factory, table = rig
    db = table.journal.db
    runtime.submit(ev.BetSensor(1, "main", True))
    pump(runtime, lambda: table.journal.events_written == 1)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    # the last page has some room: wager amounts fill it until SQLite says it is full
    failed: Future | None = None
    for amount in range(1000, 100_000, 5):
        reply: Future = Future()
        runtime.submit(ev.WagerAmount(1, "main", amount), reply)
        pump(runtime, reply.done)
        if reply.exception() is not None:
            failed = reply
            break
    assert failed is not None, "the journal never filled up"
    assert "full" in runtime.journal_fault
    written = table.journal.events_written
    last_amount = table.state.amounts[(1, "main")]
    assert last_amount == amount - 5  # memory never runs ahead of disk
    assert gpio.faulted and gpio.faulted.startswith("journal")
    assert not runtime.is_healthy()  # the watchdog is no longer pinged
    runtime.submit(ev.BetSensor(3, "main", True))
    pump(runtime, lambda: runtime.dropped == 1)
    assert table.state.sensors.get((3, "main")) is None
    db.execute(f"PRAGMA max_page_count = {pages * 100}")
    pump(runtime, lambda: runtime.journal_fault is None)
    assert table.state.faults["journal"][1] is False  # recorded, gone, still latched
    assert gpio.faulted is not None  # the safe state holds until the key clears it
    stored = list(table.journal.events())
    assert len(stored) == written + 1 and isinstance(stored[-1], ev.TableFault)
    assert runtime.is_healthy()


def test_clock_continues_above_the_journal_after_a_restart():
    readings = iter([5, 6, 7])
    clock = RuntimeClock(not_before_ms=1_000, source=lambda: next(readings))
    assert clock() == 1_002  # source 6 + offset 996
    assert clock() == 1_003
    plain = RuntimeClock(not_before_ms=1, source=lambda: 50)
    assert plain() == 50


def events_in_main_file(path: Path, tmp: Path) -> int:
    """The events the journal's main file holds without its WAL (what a checkpoint copied)."""
    copy = tmp / "main-file-only.sqlite"
    copy.write_bytes(path.read_bytes())
    db = sqlite3.connect(copy)
    try:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'events'").fetchone():
            return 0  # the schema itself is still in the WAL
        return db.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        db.close()


def test_the_wal_is_copied_into_the_journal_between_rounds_never_during_one(
    rig, tmp_path, monkeypatch
):
    """Issue 32: SQLite's own WAL checkpoint lands in whichever commit crosses 1000 pages,
    a dealer's prompt among them; the loop copies the WAL between rounds instead."""
    runtime, _gpio, _factory, table = rig
    monkeypatch.setattr(loop_module, "WAL_CHECKPOINT_EVENTS", 5)
    journal = table.journal
    path = journal.path
    cards = [parse_card(c) for c in ("10H", "9C", "6D", "7S", "8H", "10C", "9S")]
    round_start = [
        ev.BetSensor(1, "main", True),
        ev.WagerAmount(1, "main", 2500),
        ev.BetSensor(1, "blazing_7s", True),
        ev.BetSensor(2, "main", True),
        ev.Lockout(),
        *(ev.CardDrawn(card) for card in cards[:6]),
    ]
    for event in round_start:
        runtime.submit(event)
    pump(runtime, lambda: journal.events_written >= len(round_start))
    assert runtime.refused == 0 and table.round_in_progress
    ticks = runtime.clock() + 5 * runtime.tick_ms  # several ticks with the round in play
    pump(runtime, lambda: runtime.clock() > ticks)
    assert journal.wal_events >= 5 and journal.wal_checkpoints == 0
    assert events_in_main_file(path, tmp_path) < journal.events_written  # still in the WAL

    for event in (ev.Next(), ev.Next(), ev.Next(), ev.CardDrawn(cards[6]), ev.EndRound()):
        runtime.submit(event)
    pump(runtime, lambda: journal.wal_checkpoints == 1)
    assert runtime.refused == 0 and not table.round_in_progress
    assert journal.wal_events == 0
    assert events_in_main_file(path, tmp_path) == journal.events_written


def test_the_link_is_woken_after_the_events_that_wrote_outbox_rows_only(tmp_path):
    """Issue 32: the link's thread looks at the outbox when the loop says it wrote rows
    (``on_outbox``, once the event's effects are carried out), instead of every 5 ms; an
    event that wrote none does not wake it."""
    table = JournaledTable(tmp_path / "journal.sqlite", RULES, SETTINGS)
    woken: list[int] = []
    runtime = TableRuntime(
        table,
        clock=RuntimeClock(table.state.now),
        tick_ms=3_600_000,  # one tick, at the first run_once
        on_outbox=lambda: woken.append(table.journal.events_written),
    )
    cards = [parse_card(c) for c in ("10H", "9C", "6D", "7S", "8H", "10C", "9S")]
    events = [
        ev.BetSensor(1, "main", True),
        ev.WagerAmount(1, "main", 2500),
        ev.BetSensor(1, "blazing_7s", True),
        ev.BetSensor(2, "main", True),
        ev.Lockout(),
        *(ev.CardDrawn(card) for card in cards[:6]),
        ev.Next(),
        ev.Next(),
        ev.Next(),
        ev.CardDrawn(cards[6]),
        ev.EndRound(),
    ]
    wrote_rows = 0
    try:
        with Outbox(table.journal.path) as box:
            for event in events:
                rows, calls = box.last_written(), len(woken)
                journaled = table.journal.events_written
                runtime.submit(event)
                runtime.run_once(max_wait_s=5.0)
                assert table.journal.events_written == journaled + 1, event
                wrote = box.last_written() > rows
                wrote_rows += wrote
                assert woken[calls:] == ([journaled + 1] if wrote else []), event
        assert runtime.refused == 0
        assert 0 < wrote_rows < len(events)  # both kinds of event were seen
    finally:
        table.close()


def test_the_loop_collects_the_garbage_itself_and_gives_the_collector_back(tmp_path):
    """Issue 32 item 4: with ``collect_garbage`` (the daemon) the collector runs on the
    loop's thread between events, not in whichever allocation crosses CPython's threshold
    (a dealer's prompt among them); stopped, the loop gives the collector back."""
    import gc

    table = JournaledTable(tmp_path / "journal.sqlite", RULES, SETTINGS)
    runtime = TableRuntime(
        table, clock=RuntimeClock(table.state.now), tick_ms=10, collect_garbage=True
    )
    stop = threading.Event()
    seen: dict[str, bool] = {}

    def dealer() -> None:  # another thread, as the drivers are
        try:
            deadline = time.monotonic() + 15
            while gc.isenabled() and time.monotonic() < deadline:
                time.sleep(0.01)
            seen["held"] = not gc.isenabled()  # the loop holds the collector
            for on in (True, False, True, False, True):  # cycles only a collection frees
                for _ in range(loop_module.GC_EVERY * 2):
                    cycle: list = []
                    cycle.append(cycle)
                runtime.submit(ev.BetSensor(1, "main", on))
            while runtime.collections < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            stop.set()

    assert gc.isenabled()
    thread = threading.Thread(target=dealer)
    thread.start()
    try:
        runtime.run(stop)  # the journal's thread, as in the daemon
    finally:
        thread.join(15)
        table.close()
    assert seen["held"]
    assert runtime.collections >= 1 and runtime.refused == 0
    assert table.journal.events_written == 5
    assert gc.isenabled()  # given back
