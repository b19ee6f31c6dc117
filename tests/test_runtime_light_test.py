"""The light test (TableRuntime.start_light_test): each light on, then off, between rounds.

The runtime runs a real JournaledTable on SQLite in ``tmp_path``; the lamps are a recording
fake of our own ``LampTest`` protocol (``GpioDriver`` in production) and the clock is a
number the test moves. Most tests call ``TableRuntime._start_light_test`` directly on the
test's thread, which is then the loop's thread (``start_light_test`` only hands that call to
the loop and waits for it), and step the loop with ``run_once``; one test runs the loop on
its own thread and goes through the public ``start_light_test``.
"""

from __future__ import annotations

import threading

import pytest

from controller.games import load_game
from controller.journal import JournaledTable
from controller.runtime.loop import LIGHT_TEST_OFF_MS, LIGHT_TEST_ON_MS, TableRuntime
from controller.table import events as ev
from controller.table.settings import TableSettings

RULES = load_game("pa-standard")
LIGHTS = ("alarm", "lockout", "spot1.action")
T0 = 1_000_000
TICK = 10


class Clock:
    def __init__(self, ms: int = T0):
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


class Lamps:
    """Records every light it is asked to show, and when."""

    def __init__(self, names: tuple[str, ...], clock: Clock):
        self.names = names
        self.clock = clock
        self.shown: list[tuple[int, str, str]] = []
        self.ended: list[int] = []
        self.broken: set[str] = set()

    def light_names(self) -> tuple[str, ...]:
        return self.names

    def test_light(self, name: str, state: str) -> bool:
        if name in self.broken:
            return False
        self.shown.append((self.clock(), name, state))
        return True

    def end_light_test(self) -> None:
        self.ended.append(self.clock())


class Rig:
    def __init__(self, tmp_path, names: tuple[str, ...] | None = LIGHTS):
        self.clock = Clock()
        self.table = JournaledTable(tmp_path / "journal.sqlite", RULES, TableSettings(spots=3))
        self.lamps = Lamps(names, self.clock) if names is not None else None
        self.runtime = TableRuntime(
            self.table, clock=self.clock, tick_ms=TICK, lamp_test=self.lamps
        )

    def run(self, ms: int) -> None:
        """Let ``ms`` pass, one tick at a time."""
        for _ in range(ms // TICK):
            self.clock.ms += TICK
            self.runtime.run_once(max_wait_s=0)

    def events(self, *events: ev.Event) -> None:
        for event in events:
            self.runtime.submit(event)
        self.runtime.run_once(max_wait_s=0)

    def lockout(self) -> None:
        self.events(ev.BetSensor(1, "main", True), ev.Lockout())
        assert self.table.round_in_progress

    def start(self, by: str = "tech-ana") -> tuple[bool, str]:
        return self.runtime._start_light_test(by)  # on the loop's thread: this one


@pytest.fixture
def rig(tmp_path):
    r = Rig(tmp_path)
    yield r
    r.table.close()


def test_each_light_is_on_then_off_in_turn_then_the_table_gets_them_back(rig):
    assert rig.runtime.light_test_state() is None
    started, message = rig.start()
    assert started and message == "light test started: 3 lights, each on then off"
    rig.run(3 * (LIGHT_TEST_ON_MS + LIGHT_TEST_OFF_MS) + 500)
    expected = []
    for i, name in enumerate(LIGHTS):
        at = T0 + i * (LIGHT_TEST_ON_MS + LIGHT_TEST_OFF_MS)
        expected += [(at, name, "on"), (at + LIGHT_TEST_ON_MS, name, "off")]
    assert rig.lamps.shown == expected
    assert rig.lamps.ended == [T0 + 3 * (LIGHT_TEST_ON_MS + LIGHT_TEST_OFF_MS)]
    state = rig.runtime.light_test_state()
    assert state["result"].startswith("finished")
    assert state == {
        "running": False,
        "by": "tech-ana",
        "light": None,
        "lights": 3,
        "done": 3,
        "result": state["result"],
        "pending": False,
    }


def test_the_state_follows_the_test(rig):
    rig.start()
    assert rig.runtime.light_test_state() == {
        "running": True,
        "by": "tech-ana",
        "light": "alarm",
        "lights": 3,
        "done": 0,
        "result": None,
        "pending": False,
    }
    rig.run(LIGHT_TEST_ON_MS)  # alarm off: one done, the next is lockout
    state = rig.runtime.light_test_state()
    assert (state["running"], state["light"], state["done"]) == (True, "lockout", 1)
    rig.run(LIGHT_TEST_OFF_MS + LIGHT_TEST_ON_MS)
    state = rig.runtime.light_test_state()
    assert (state["running"], state["light"], state["done"]) == (True, "spot1.action", 2)


def test_a_second_test_is_refused_while_one_runs_and_allowed_after(rig):
    rig.start("tech-ana")
    rig.run(LIGHT_TEST_ON_MS)
    assert rig.start("tech-bo") == (
        False,
        "light test refused: tech-ana is running one now",
    )
    assert rig.runtime.light_test_state()["by"] == "tech-ana"
    rig.run(3 * (LIGHT_TEST_ON_MS + LIGHT_TEST_OFF_MS))
    assert rig.lamps.ended and not rig.runtime.light_test_state()["running"]
    assert rig.start("tech-bo")[0]
    assert rig.runtime.light_test_state()["by"] == "tech-bo"
    assert rig.lamps.shown[-1] == (rig.clock.ms, "alarm", "on")


def test_asked_mid_round_it_is_queued_and_runs_at_the_round_break(rig):
    rig.lockout()
    started, message = rig.start()
    assert started
    assert message == (
        "light test queued: round 1 is in progress (dealing); it runs at the round break"
    )
    assert rig.runtime.light_test_state() == {
        "running": False,
        "pending": True,
        "by": "tech-ana",
        "light": None,
        "lights": 3,
        "done": 0,
        "result": None,
        "waiting_for": "the round break",
    }
    assert rig.start("tech-bo") == (
        False,
        "light test refused: tech-ana queued one already; it runs at the round break",
    )
    rig.run(2000)  # the round goes on: no light is touched
    assert rig.lamps.shown == [] and rig.lamps.ended == []
    rig.events(ev.SupervisorKey(True), ev.Misdeal(), ev.SupervisorKey(False))  # round voided
    assert not rig.table.round_in_progress
    rig.run(TICK)
    state = rig.runtime.light_test_state()
    assert (state["running"], state["pending"], state["by"]) == (True, False, "tech-ana")
    assert rig.lamps.shown == [(rig.clock.ms, "alarm", "on")]


def test_a_queued_test_waits_for_a_fault_to_be_cleared(rig):
    rig.lockout()
    assert rig.start()[0]
    rig.events(ev.TableFault("shoe", "offline for 30 s"))
    rig.events(ev.SupervisorKey(True), ev.Misdeal(), ev.SupervisorKey(False))
    assert not rig.table.round_in_progress
    rig.run(1000)
    state = rig.runtime.light_test_state()
    assert state["pending"] and state["waiting_for"] == "the fault to be cleared"
    assert rig.lamps.shown == []


def test_refused_while_a_fault_is_latched(rig):
    rig.events(ev.TableFault("shoe", "offline for 30 s"))
    rig.events(ev.TableFault("shoe", active=False))  # gone, but the latch holds
    started, message = rig.start()
    assert not started
    assert "a fault holds the lights safe (shoe: offline for 30 s)" in message
    assert rig.lamps.shown == [] and rig.runtime.light_test_state() is None


@pytest.mark.parametrize("names", [(), None], ids=["no lights", "no lamp driver"])
def test_refused_without_lights(tmp_path, names):
    rig = Rig(tmp_path, names)
    try:
        assert rig.start() == (
            False,
            "light test refused: this table has no lights in its pin map",
        )
        assert rig.runtime.light_test_state() is None
    finally:
        rig.table.close()


def test_a_round_starting_mid_test_stops_it(rig):
    rig.start()
    rig.run(LIGHT_TEST_ON_MS + LIGHT_TEST_OFF_MS + 100)  # lockout's light is on
    assert rig.lamps.shown[-1][1:] == ("lockout", "on")
    rig.clock.ms += TICK
    rig.lockout()  # the dealer takes the table back: the lockout is accepted
    state = rig.runtime.light_test_state()
    assert state["result"] == "stopped: a round started (lights back to the table)"
    assert state["running"] is False
    assert rig.lamps.ended == [rig.clock.ms]
    shown = len(rig.lamps.shown)
    rig.run(5000)
    assert len(rig.lamps.shown) == shown and len(rig.lamps.ended) == 1


def test_a_fault_mid_test_stops_it(rig):
    rig.start()
    rig.run(100)
    rig.events(ev.TableFault("shoe", "offline for 30 s"))
    rig.run(TICK)  # the test checks at each tick
    assert rig.runtime.light_test_state()["result"] == "stopped: a fault was latched (lights safe)"
    assert len(rig.lamps.ended) == 1
    rig.run(3000)
    assert rig.lamps.shown == [(T0, "alarm", "on")]


def test_a_light_that_cannot_be_set_stops_it(rig):
    rig.lamps.broken.add("lockout")
    rig.start()
    rig.run(3000)
    assert rig.runtime.light_test_state()["result"] == "stopped: light lockout could not be set"
    assert [name for _t, name, _s in rig.lamps.shown] == ["alarm", "alarm"]
    assert len(rig.lamps.ended) == 1


def test_start_light_test_runs_on_the_loop_thread(rig):
    """The public call from another thread (the web server's), with the loop running."""
    stop = threading.Event()
    loop = threading.Thread(target=rig.runtime.run, args=(stop,), daemon=True)
    loop.start()
    try:
        started, message = rig.runtime.start_light_test("tech-ana")
        assert started, message
        assert rig.lamps.shown == [(T0, "alarm", "on")]  # the first step, before the reply
        again = rig.runtime.start_light_test("tech-bo")
        assert again == (False, "light test refused: tech-ana is running one now")
    finally:
        stop.set()
        loop.join(timeout=15)
    assert not loop.is_alive()
