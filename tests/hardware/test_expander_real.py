"""The MCP23017 expander on a real chip: one of its output lines wired to one of its inputs.

Skipped unless ``EXPANDER_TEST_INTERRUPT`` names the BCM pin the chip's INTA is wired to::

    EXPANDER_TEST_INTERRUPT=16 .venv/bin/python -m pytest -q tests/hardware/test_expander_real.py

The chip answers at ``EXPANDER_TEST_ADDRESS`` (default 0x20) on I2C bus ``EXPANDER_TEST_BUS``
(default 1); its line ``EXPANDER_TEST_OUTPUT`` (default 8, GPB0) is wired to line
``EXPANDER_TEST_INPUT`` (default 0, GPA0) through a 1 kOhm resistor, nothing else on either;
INTA has a 10 kOhm pull-up to 3.3 V. The output plays a sensor pulling the input low. The
tests of tests/test_mcp23017.py, on the chip: chips placed and removed, bounces, a bus error
(an address with no chip, ``EXPANDER_TEST_ABSENT``, default 0x27), and a missed interrupt
recovered by the reconcile read (the factory listening on ``EXPANDER_TEST_SPARE``, a free
Pi pin with nothing wired, instead of the real interrupt line; skipped without it).
``EXPANDER_TEST_MOCK=1`` runs the same tests on a simulated chip (to check the suite on a PC).
See tests/hardware/README.md, section "I/O expander".
"""

from __future__ import annotations

import os
import time

import pytest

from controller.table import events as ev
from drivers.gpio import GpioDriver
from drivers.gpio_pins import parse_pin_map
from drivers.mcp23017 import IODIR, OLAT
from drivers.mcp23017_sim import SimulatedBus

INTERRUPT = os.environ.get("EXPANDER_TEST_INTERRUPT")
ADDRESS = int(os.environ.get("EXPANDER_TEST_ADDRESS", "0x20"), 0)
BUS = int(os.environ.get("EXPANDER_TEST_BUS", "1"))
OUTPUT = int(os.environ.get("EXPANDER_TEST_OUTPUT", "8"))
INPUT = int(os.environ.get("EXPANDER_TEST_INPUT", "0"))
ABSENT = int(os.environ.get("EXPANDER_TEST_ABSENT", "0x27"), 0)
SPARE = os.environ.get("EXPANDER_TEST_SPARE")
MOCK = os.environ.get("EXPANDER_TEST_MOCK") == "1"

pytestmark = [
    pytest.mark.hardware,
    pytest.mark.skipif(
        not INTERRUPT,
        reason="set EXPANDER_TEST_INTERRUPT to the BCM pin of a wired MCP23017's INTA",
    ),
]

SENSOR_MS = 40
CIRCLES = ("main",)


class LoopbackBus(SimulatedBus):
    """A simulated chip whose output line is wired to its input line, like the real rig."""

    def __init__(self) -> None:
        super().__init__()
        self.add(ADDRESS)

    def _wired(self) -> None:
        chip = self.chips[ADDRESS]
        level = chip.output(OUTPUT)
        chip.set_input(INPUT, level)

    def write_byte_data(self, i2c_addr: int, register: int, value: int) -> None:
        super().write_byte_data(i2c_addr, register, value)
        if i2c_addr == ADDRESS and register in (IODIR, IODIR + 1, OLAT, OLAT + 1):
            self._wired()

    def write_i2c_block_data(self, i2c_addr, register, data) -> None:
        super().write_i2c_block_data(i2c_addr, register, data)
        if i2c_addr == ADDRESS:
            self._wired()


@pytest.fixture
def rig():
    """``rig(interrupt=..., address=...)`` -> (driver, events, factory): spot 1's main
    sensor on the input line, light ``1.main`` (active low: on = chips on) on the output."""
    made = []

    def make(interrupt: int | None = None, address: int = ADDRESS, reconcile_ms: int = 100):
        interrupt = int(INTERRUPT) if interrupt is None else interrupt
        gpio = {
            "sensor_debounce_ms": SENSOR_MS,
            "expanders": {"board": {"address": address, "interrupt": interrupt, "bus": 1}},
            "sensors": {"1.main": {"expander": "board", "line": INPUT}},
            "lights": {"1.main": {"expander": "board", "line": OUTPUT, "active_high": False}},
        }
        if BUS != 1:
            gpio["expanders"]["board"]["bus"] = BUS
            gpio["i2c"] = {str(BUS): {"sda": 5, "scl": 6}}
        pin_factory = buses = None
        if MOCK:
            from gpiozero.pins.mock import MockFactory

            pin_factory = MockFactory()
            loop = LoopbackBus()
            from drivers.mcp23017_sim import InterruptLine

            wired = int(INTERRUPT)  # the chip's INTA, whatever pin the factory listens to
            pin = pin_factory.pin(wired)
            pin.function = "input"
            line = InterruptLine(pin, loop.chips.values())
            loop.lines = {wired: line}
            buses = {BUS: loop}
        events: list[ev.Event] = []
        driver = GpioDriver(
            parse_pin_map(gpio, circles=CIRCLES, spots=1),
            events.append,
            pin_factory=pin_factory,
            buses=buses,
            reconcile_ms=reconcile_ms,
        )
        made.append((driver, pin_factory))
        return driver, events, driver._expanders[BUS]

    yield make
    for driver, pin_factory in made:
        driver.close()
        if pin_factory is not None:
            pin_factory.close()


def wait_for(driver, events, kind, timeout=2.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        driver.poll()
        found = [e for e in events if isinstance(e, kind)]
        if found:
            return found
        time.sleep(0.005)
    return []


def chips(driver, on: bool) -> None:
    """The output line plays the sensor: low (light on, active low) = chips on."""
    from controller.table.effects import Light

    driver.apply(Light("spot1.main", "on" if on else "off"))


def test_chips_placed_and_removed_after_the_debounce(rig):
    driver, events, _factory = rig()
    chips(driver, True)
    time.sleep(SENSOR_MS / 2000)
    driver.poll()
    assert not [e for e in events if isinstance(e, ev.BetSensor)], "not before the debounce"
    placed = wait_for(driver, events, ev.BetSensor)
    assert [(e.spot, e.circle, e.on) for e in placed] == [(1, "main", True)]
    events.clear()
    chips(driver, False)
    removed = wait_for(driver, events, ev.BetSensor)
    assert [(e.circle, e.on) for e in removed] == [("main", False)]
    health = driver.health()["expanders"]["board"]
    assert health["answering"] and health["interrupts"] >= 2


def test_chatter_on_the_line_is_one_wager(rig):
    driver, events, _factory = rig()
    for on in (True, False, True, False, True):
        chips(driver, on)
        time.sleep(0.003)
    placed = wait_for(driver, events, ev.BetSensor)
    time.sleep(SENSOR_MS * 3 / 1000)
    driver.poll()
    placed = [e for e in events if isinstance(e, ev.BetSensor)]
    assert [(e.circle, e.on) for e in placed] == [("main", True)]


def test_an_address_with_no_chip_is_a_gpio_fault_naming_it(rig):
    driver, events, _factory = rig(address=ABSENT)
    faults = [e for e in events if isinstance(e, ev.TableFault)]
    assert [f.kind for f in faults] == ["gpio"]
    assert f"(0x{ABSENT:02x}) on I2C bus {BUS} is not answering" in faults[0].detail
    assert driver.health()["connected"] is False


@pytest.mark.skipif(not (SPARE or MOCK), reason="set EXPANDER_TEST_SPARE to a free Pi pin")
def test_a_missed_interrupt_is_recovered_by_the_reconcile_read(rig):
    spare = int(SPARE) if SPARE else 26
    driver, events, _factory = rig(interrupt=spare, reconcile_ms=50)
    chips(driver, True)
    placed = wait_for(driver, events, ev.BetSensor, timeout=3.0)
    assert [(e.circle, e.on) for e in placed] == [("main", True)]
    assert driver.health()["expanders"]["board"]["missed_interrupts"] >= 1
