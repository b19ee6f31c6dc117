"""The GPIO driver on real pins: a light output wired straight to a sensor input.

Skipped unless two environment variables name a wired loopback pair (BCM numbers)::

    GPIO_TEST_OUTPUT=20 GPIO_TEST_INPUT=21 .venv/bin/python -m pytest -q tests/hardware

Wire GPIO_TEST_OUTPUT to GPIO_TEST_INPUT through a 1 kOhm resistor (it protects both
pins if one is misconfigured); nothing else on either pin. The pin library is
gpiozero's default (lgpio on Raspberry Pi OS Bookworm), or ``GPIOZERO_PIN_FACTORY``.
``GPIO_TEST_MOCK=1`` runs the same tests on gpiozero's mock loopback pins (to check
the suite itself on a PC). See tests/hardware/README.md, section "GPIO".

Time here is the real monotonic clock; debounce times are short to keep the run
short, and generous margins keep a busy Pi from failing a test.
"""

from __future__ import annotations

import os
import time

import pytest

from controller.table.effects import Light
from controller.table.events import BetSensor, Next
from drivers.gpio import GpioDriver
from drivers.gpio_pins import parse_pin_map

OUTPUT = os.environ.get("GPIO_TEST_OUTPUT")
INPUT = os.environ.get("GPIO_TEST_INPUT")
MOCK = os.environ.get("GPIO_TEST_MOCK") == "1"

pytestmark = [
    pytest.mark.hardware,
    pytest.mark.skipif(
        not (OUTPUT and INPUT),
        reason="set GPIO_TEST_OUTPUT and GPIO_TEST_INPUT to a wired loopback pair (BCM numbers)",
    ),
]

SENSOR_MS = 40
BUTTON_MS = 20
CIRCLES = ("main",)


@pytest.fixture
def pin_factory():
    """gpiozero's default factory on a Pi; a mock loopback pair with GPIO_TEST_MOCK=1."""
    if not MOCK:
        yield None
        return
    from gpiozero.pins.mock import MockConnectedPin, MockFactory

    factory = MockFactory()
    factory.pin(int(OUTPUT), pin_class=MockConnectedPin, input_pin=factory.pin(int(INPUT)))
    yield factory
    factory.reset()


@pytest.fixture
def loopback(pin_factory):
    """``loopback(input_kind, light, **input_options)`` -> (driver, events): the output
    as light ``light``, the input as spot 1's main sensor or the console's next button."""
    drivers = []

    def make(kind="sensor", light="1.main", **options):
        section, key = ("sensors", "1.main") if kind == "sensor" else ("console", "next")
        gpio = {
            "sensor_debounce_ms": SENSOR_MS,
            "button_debounce_ms": BUTTON_MS,
            "blink_ms": 20,
            section: {key: {"pin": int(INPUT), **(options or {"pull_up": False})}},
            "lights": {light: int(OUTPUT)},
        }
        events: list = []
        driver = GpioDriver(
            parse_pin_map(gpio, circles=CIRCLES), events.append, pin_factory=pin_factory
        )
        drivers.append(driver)
        return driver, events

    yield make
    for driver in drivers:
        driver.close()


def settle(driver: GpioDriver, ms: int) -> None:
    """Let ``ms`` pass, polling as the runtime's tick would."""
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        driver.poll()
        time.sleep(0.005)
    driver.poll()


def test_light_on_the_wire_is_seen_as_chips_once_debounced(loopback):
    driver, events = loopback()
    driver.apply(Light("spot1.main", "on"))
    driver.poll()
    assert events == [], "not before the sensor debounce"
    settle(driver, SENSOR_MS * 3)
    assert [(e.spot, e.circle, e.on) for e in events] == [(1, "main", True)]
    assert driver.health()["inputs"]["sensors.1.main"]["active"] is True
    driver.apply(Light("spot1.main", "off"))
    settle(driver, SENSOR_MS * 3)
    assert [e.on for e in events] == [True, False]


def test_chatter_on_real_pins_is_one_wager(loopback):
    driver, events = loopback()
    for n in range(20):  # ~2 ms edges: far closer than the 40 ms debounce
        driver.apply(Light("spot1.main", "on" if n % 2 == 0 else "off"))
        time.sleep(0.002)
    driver.apply(Light("spot1.main", "on"))
    settle(driver, SENSOR_MS * 4)
    assert [type(e) for e in events] == [BetSensor] and events[0].on is True
    assert driver.health()["inputs"]["sensors.1.main"]["edges"] >= 2


def test_a_press_is_one_event_and_a_tap_is_none(loopback):
    driver, events = loopback("button")
    driver.apply(Light("spot1.main", "on"))  # a tap shorter than the button debounce
    time.sleep(0.002)
    driver.apply(Light("spot1.main", "off"))
    settle(driver, BUTTON_MS * 3)
    assert events == []
    driver.apply(Light("spot1.main", "on"))  # pressed ...
    settle(driver, BUTTON_MS * 3)
    driver.apply(Light("spot1.main", "off"))  # ... and released
    settle(driver, BUTTON_MS * 3)
    assert [type(e) for e in events] == [Next]


def test_pull_up_input_is_active_low(loopback):
    driver, events = loopback(pull_up=True)
    settle(driver, SENSOR_MS * 3)  # light off: the wire is low: active low reads chips on
    assert [e.on for e in events] == [True]
    driver.apply(Light("spot1.main", "on"))
    settle(driver, SENSOR_MS * 3)
    assert [e.on for e in events] == [True, False]


def test_fault_drives_the_lockout_light_to_its_safe_state(loopback):
    driver, events = loopback(light="lockout")
    driver.fault("test fault")  # lockout's safe state: on
    settle(driver, SENSOR_MS * 3)
    assert [e.on for e in events] == [True]
    driver.apply(Light("lockout", "off"))  # latched: the table's effect waits
    settle(driver, SENSOR_MS * 3)
    assert [e.on for e in events] == [True]
    driver.clear_fault()
    settle(driver, SENSOR_MS * 3)
    assert [e.on for e in events] == [True, False]


def test_background_polling_on_real_pins(loopback):
    driver, events = loopback()
    driver.start_polling(interval_ms=5)
    driver.apply(Light("spot1.main", "on"))
    deadline = time.monotonic() + 2
    while not events and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e.on for e in events] == [True]
