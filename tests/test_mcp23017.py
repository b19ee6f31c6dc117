"""MCP23017 I/O expanders: the simulated chip at register level, the gpiozero pin factory over
its bus, and the GPIO driver on expander lines (chips placed and removed, bounces, a bus
error, a missed interrupt recovered by a read, a chip reset by a power dip).

The chip is :class:`drivers.mcp23017_sim.SimulatedMCP23017` behind :class:`SimulatedBus`, the same
smbus2-shaped interface the factory drives on a Pi; its interrupt output drives a gpiozero
MockPin (the Pi's input) through an open-drain :class:`InterruptLine`. The factory's worker
thread services the interrupts, so a test waits with ``factory.sync()``. The same tests on a
real expander: ``tests/hardware/test_expander_real.py``.
"""

from __future__ import annotations

import time

import pytest
from gpiozero import LED, Button, DigitalInputDevice
from gpiozero.exc import PinInvalidPin, PinInvalidPull
from gpiozero.pins.mock import MockFactory

from controller.table import events as ev
from controller.table.effects import Light
from drivers.gpio import GpioDriver
from drivers.gpio_pins import PinMapError, parse_pin_map
from drivers.mcp23017 import MCP23017Factory
from drivers.mcp23017_chip import (
    DEFVAL,
    GPINTEN,
    GPIO,
    GPPU,
    INTCAP,
    INTCON,
    INTF,
    IOCON,
    IOCON_MIRROR,
    IOCON_ODR,
    IODIR,
    IPOL,
    OLAT,
    ExpanderSpec,
    transfer_seconds,
)
from drivers.mcp23017_sim import InterruptLine, SimulatedBus, SimulatedMCP23017, simulated_bus

# -- the simulated chip, register by register ---------------------------------------------------


def test_power_on_every_line_is_an_input_and_nothing_interrupts():
    chip = SimulatedMCP23017()
    assert chip.read_block(IODIR, 2) == [0xFF, 0xFF]
    assert chip.read_block(GPPU, 2) == [0, 0] and chip.read(GPINTEN) == 0
    assert chip.read(IOCON) == 0 and not chip.int_low
    assert [chip.output(n) for n in range(16)] == [None] * 16


def test_inputs_read_through_gpio_with_pull_ups_and_ipol():
    chip = SimulatedMCP23017()
    assert chip.read(GPIO) == 0  # released lines without a pull-up read low in this model
    chip.write(GPPU, 0xFF)
    assert chip.read(GPIO) == 0xFF
    chip.set_input(2, False)  # a sensor pulls GPA2 low
    assert chip.read(GPIO) == 0xFB
    chip.write(IPOL, 0x04)
    assert chip.read(GPIO) == 0xFF  # inverted
    chip.set_input(9, True)
    assert chip.read(GPIO + 1) == 0x02


def test_outputs_follow_olat_and_a_write_to_gpio_writes_olat():
    chip = SimulatedMCP23017()
    chip.write(OLAT + 1, 0x01)  # latch first: the lamp comes up on
    assert chip.output(8) is None  # still an input
    chip.write(IODIR + 1, 0xFE)
    assert chip.output(8) is True and chip.output(9) is None
    chip.write(GPIO + 1, 0x00)
    assert chip.read(OLAT + 1) == 0 and chip.output(8) is False
    assert chip.read(GPIO + 1) & 1 == 0  # an output line reads its latch


def test_interrupt_on_change_captures_the_port_and_waits_for_a_read():
    chip = SimulatedMCP23017()
    chip.write(IOCON, IOCON_MIRROR | IOCON_ODR)
    chip.write_block(GPPU, [0xFF, 0xFF])
    chip.write_block(GPINTEN, [0xFF, 0xFF])
    chip.set_input(3, False)
    assert chip.int_low
    assert chip.read_block(INTF, 2) == [0x08, 0x00]
    chip.set_input(3, None)  # back while the interrupt is pending: no new capture
    chip.set_input(4, False)
    assert chip.read(INTF) == 0x08
    block = chip.read_block(INTCAP, 4)  # INTCAPA, INTCAPB, GPIOA, GPIOB
    assert block == [0xF7, 0x00, 0xEF, 0xFF]  # port B never captured
    assert not chip.int_low and chip.read(INTF) == 0
    chip.set_input(12, False)  # port B on its own
    assert chip.int_low and chip.read_block(INTF, 2) == [0, 0x10]
    assert chip.read(GPIO + 1) == 0xEF and not chip.int_low


def test_interrupt_against_defval_fires_again_while_the_level_differs():
    chip = SimulatedMCP23017()
    chip.write(GPPU, 0xFF)
    chip.write(DEFVAL, 0xFF)
    chip.write(INTCON, 0x01)
    chip.write(GPINTEN, 0x01)
    chip.set_input(0, False)
    assert chip.int_low
    chip.read(INTCAP)
    assert chip.int_low, "still unlike DEFVAL: the interrupt is raised again"
    chip.set_input(0, None)
    chip.read(GPIO)
    assert not chip.int_low


def test_a_sequential_read_wraps_and_an_unknown_address_does_not_answer():
    bus = SimulatedBus()
    chip = bus.add(0x21)
    chip.write(OLAT + 1, 0x5A)
    assert bus.read_i2c_block_data(0x21, 0x15, 2) == [0x5A, 0xFF]  # OLATB, then IODIRA
    with pytest.raises(OSError) as caught:
        bus.read_byte_data(0x22, GPIO)
    assert caught.value.errno == 121
    chip.answering = False
    with pytest.raises(OSError):
        bus.write_byte_data(0x21, OLAT, 1)
    assert bus.transfers == 3


def test_transfer_times_at_400_khz():
    assert transfer_seconds(6, read=True) == pytest.approx(84 / 400_000)
    assert transfer_seconds(1, read=False) == pytest.approx(29 / 400_000)


# -- gpiozero's own devices on an expander ---------------------------------------------------


@pytest.fixture
def expander():
    """Two chips on one bus, their interrupt outputs wired together to the Pi's GPIO 17."""
    pi = MockFactory()
    specs = [ExpanderSpec("a", 0x20, 17), ExpanderSpec("b", 0x21, 17)]
    bus = simulated_bus(specs, pi)
    faults: list[tuple[str, str | None]] = []
    factory = MCP23017Factory(
        bus, specs, pi_factory=pi, on_fault=lambda n, d: faults.append((n, d)), reconcile_ms=0
    )
    yield factory, bus, pi, faults
    factory.close()
    pi.close()


def test_gpiozero_button_and_led_work_unchanged_on_expander_pins(expander):
    factory, bus, _pi, _faults = expander
    button = Button("a.GPA3", pin_factory=factory)  # pull-up, active low
    led = LED("b.GPB0", pin_factory=factory)
    presses: list[str] = []
    button.when_pressed = lambda: presses.append("pressed")
    button.when_released = lambda: presses.append("released")
    assert bus.chips[0x20].read(GPPU) & 0x08 and bus.chips[0x20].read(GPINTEN) & 0x08
    bus.chips[0x20].set_input(3, False)
    assert factory.sync()
    assert button.is_pressed and presses == ["pressed"]
    bus.chips[0x20].set_input(3, None)
    factory.sync()
    assert not button.is_pressed and presses == ["pressed", "released"]
    assert bus.chips[0x21].output(8) is False
    led.on()
    assert bus.chips[0x21].output(8) is True and led.is_lit
    led.off()
    assert bus.chips[0x21].output(8) is False
    button.close()
    led.close()
    assert bus.chips[0x21].output(8) is None  # released: an input again
    assert bus.chips[0x20].read(GPINTEN) == 0 and bus.chips[0x20].read(GPPU) == 0


def test_a_pin_that_is_not_there_or_a_pull_down_is_refused_saying_why(expander):
    factory, *_ = expander
    with pytest.raises(
        PinInvalidPin, match=r"use NAME.GPA0-NAME.GPB7 .*expanders on I2C bus 1: a, b"
    ):
        DigitalInputDevice("c.GPA0", pin_factory=factory)
    with pytest.raises(PinInvalidPin):
        DigitalInputDevice("a.16", pin_factory=factory)
    with pytest.raises(PinInvalidPull, match="pull-ups only"):
        DigitalInputDevice("a.0", pull_up=False, pin_factory=factory)
    same = DigitalInputDevice("a.GPB1", pin_factory=factory, pull_up=True)
    with pytest.raises(Exception, match="in use"):
        DigitalInputDevice("a.9", pin_factory=factory)  # GPB1 by its number
    same.close()


def test_two_changes_while_an_interrupt_is_pending_fire_both_edges_in_order(expander):
    """The line changed back before the Pi read the chip: INTCAP holds the first level and GPIO
    the second, so the device hears both (the driver's debounce decides what they mean)."""
    factory, bus, pi, _faults = expander
    device = DigitalInputDevice("a.GPA0", pull_up=True, pin_factory=factory)
    seen: list[bool] = []
    device.when_activated = lambda: seen.append(True)
    device.when_deactivated = lambda: seen.append(False)
    bus.lines[17].connected = False  # hold off the Pi while the chip changes twice
    chip = bus.chips[0x20]
    chip.set_input(0, False)
    chip.set_input(0, None)
    assert chip.int_low and seen == []
    bus.lines[17].connected = True
    bus.lines[17].update()
    factory.sync()
    assert seen == [True, False]
    assert not chip.int_low and pi.pin(17).state == 1
    device.close()


def test_one_read_per_chip_per_interrupt_and_the_shared_line_serves_both(expander):
    factory, bus, _pi, _faults = expander
    a = DigitalInputDevice("a.GPA1", pull_up=True, pin_factory=factory)
    b = DigitalInputDevice("b.GPB7", pull_up=True, pin_factory=factory)
    before = bus.transfers
    bus.chips[0x21].set_input(15, False)
    factory.sync()
    assert b.is_active and not a.is_active
    assert bus.transfers - before == 2  # one 6-byte read of each chip on the line
    health = factory.health()
    assert health["b"]["interrupts"] == 1 and health["a"]["missed_interrupts"] == 0
    a.close()
    b.close()


# -- the GPIO driver on expander lines ----------------------------------------------------------

PA = ("main", "lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s")
MAP = {
    "sensor_debounce_ms": 100,
    "button_debounce_ms": 20,
    "expanders": {"spot1": {"address": 0x20, "interrupt": 16}},
    "sensors": {
        "1.main": {"expander": "spot1", "line": "GPA0"},
        "1.lucky_ladies": {"expander": "spot1", "line": 1},
    },
    "console": {"lockout": 7, "insurance.1": {"expander": "spot1", "line": "GPA4"}},
    "lights": {
        "1.main": {"expander": "spot1", "line": "GPB0"},
        "1.action": {"expander": "spot1", "line": "GPB4"},
        "lockout": {"expander": "spot1", "line": "GPB7"},
        "alarm": 23,
    },
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def table():
    """A GpioDriver on a spot board (simulated under MockFactory) and the Pi's pins."""
    pi = MockFactory()
    clock = Clock()
    events: list[ev.Event] = []
    driver = GpioDriver(
        parse_pin_map(MAP, circles=PA, spots=1), events.append, clock=clock, pin_factory=pi
    )
    factory = driver._expanders[1]
    chip = factory.bus.chips[0x20]
    yield driver, factory, chip, clock, events
    driver.close()
    pi.close()


def settle(driver, factory, clock, at):
    factory.sync()
    clock.now = at
    driver.poll()


def test_chips_placed_and_removed_on_an_expander_circle(table):
    driver, factory, chip, clock, events = table
    chip.set_input(0, False)  # chips on the main circle
    settle(driver, factory, clock, 1050)
    assert events == []  # not yet held for the debounce time
    settle(driver, factory, clock, 1100)
    assert events == [ev.BetSensor(1, "main", True, t=1100)]
    clock.now = 2000
    chip.set_input(0, None)  # taken off
    settle(driver, factory, clock, 2100)
    assert events[-1] == ev.BetSensor(1, "main", False, t=2100)
    assert driver.health()["inputs"]["sensors.1.main"]["pin"] == "spot1.GPA0"


def test_bounces_on_an_expander_line_make_one_wager(table):
    driver, factory, chip, clock, events = table
    for t, level in ((1000, False), (1010, None), (1020, False), (1035, None), (1050, False)):
        clock.now = t
        chip.set_input(1, level)
        factory.sync()
    settle(driver, factory, clock, 1149)
    assert events == []
    settle(driver, factory, clock, 1150)
    assert events == [ev.BetSensor(1, "lucky_ladies", True, t=1150)]
    assert driver.health()["inputs"]["sensors.1.lucky_ladies"]["rejected"] >= 2


def test_a_per_spot_button_and_lamps_on_the_board(table):
    driver, factory, chip, clock, events = table
    chip.set_input(4, False)
    settle(driver, factory, clock, 1020)
    assert events == [ev.Insurance(1, t=1020)]
    assert driver.apply(Light("spot1.main", "on"))
    assert chip.output(8) is True and chip.output(12) is False
    driver.fault("test")  # safe state: spot lamps off, the lockout lamp on
    assert chip.output(8) is False and chip.output(15) is True


def test_a_chip_that_stops_answering_is_a_gpio_fault_and_its_return_is_told(table):
    driver, factory, chip, clock, events = table
    driver.apply(Light("spot1.main", "on"))
    chip.answering = False
    factory.reconcile()
    fault = events[-1]
    assert isinstance(fault, ev.TableFault) and fault.kind == "gpio" and fault.active
    assert "expander spot1 (0x20) on I2C bus 1 is not answering (errno 121" in fault.detail
    assert "check its power, its address straps" in fault.detail
    health = driver.health()
    assert health["connected"] is False and health["expanders"]["spot1"]["answering"] is False
    assert health["errors"]["expander_down"] == 1
    factory.reconcile()
    assert sum(isinstance(e, ev.TableFault) for e in events) == 1, "told once"
    chip.power_on_reset()  # it comes back as a power cycle leaves it: all inputs
    chip.answering = True
    factory.reconcile()
    assert events[-1] == ev.TableFault(
        "gpio", "every expander answers and interrupts again", active=False, t=clock.now
    )
    assert chip.output(8) is True, "the lamp the table asked for is shown again"
    assert chip.read(GPINTEN) == 0x13 and driver.health()["connected"] is True


def test_a_missed_interrupt_is_recovered_by_the_reconcile_read(table):
    driver, factory, chip, clock, events = table
    factory.bus.lines[16].connected = False  # the Pi never sees the falling edge
    chip.set_input(0, False)
    settle(driver, factory, clock, 1200)
    assert events == []
    assert chip.int_low, "the chip holds its interrupt until it is read"
    clock.now = 1300
    factory.reconcile()
    settle(driver, factory, clock, 1400)
    assert events == [ev.BetSensor(1, "main", True, t=1400)]
    assert factory.health()["spot1"]["missed_interrupts"] == 1
    assert not chip.int_low


def test_the_periodic_reconcile_runs_by_itself():
    pi = MockFactory()
    events: list[ev.Event] = []
    driver = GpioDriver(
        parse_pin_map({**MAP, "sensor_debounce_ms": 0}, circles=PA, spots=1),
        events.append,
        pin_factory=pi,
        reconcile_ms=20,
    )
    try:
        factory = driver._expanders[1]
        factory.bus.lines[16].connected = False
        factory.bus.chips[0x20].set_input(0, False)
        deadline = time.monotonic() + 15
        while not events and time.monotonic() < deadline:
            time.sleep(0.01)
            driver.poll()
        assert [type(e) for e in events] == [ev.BetSensor]
    finally:
        driver.close()
        pi.close()


def test_a_chip_reset_by_a_power_dip_is_configured_again(table):
    driver, factory, chip, clock, events = table
    driver.apply(Light("spot1.action", "on"))
    chip.power_on_reset()
    assert chip.output(12) is None
    for _ in range(factory.check_every):
        factory.reconcile()
    assert chip.output(12) is True and chip.read(GPPU) == 0x13
    assert factory.health()["spot1"]["resets"] == 1
    chip.set_input(0, False)
    settle(driver, factory, clock, 1100)
    assert events == [ev.BetSensor(1, "main", True, t=1100)], "interrupts work again"


def test_a_chip_missing_at_start_is_a_fault_not_a_crash():
    pi = MockFactory()
    events: list[ev.Event] = []
    bus = SimulatedBus()  # nothing at 0x20
    pin_map = parse_pin_map(MAP, circles=PA, spots=1)
    driver = GpioDriver(pin_map, events.append, pin_factory=pi, buses={1: bus}, reconcile_ms=0)
    try:
        assert [e.kind for e in events if isinstance(e, ev.TableFault)] == ["gpio"]
        assert driver.health()["connected"] is False
        assert driver.apply(Light("spot1.main", "on"))  # kept for when it answers
    finally:
        driver.close()
        pi.close()


def test_interrupt_line_is_open_drain():
    pi = MockFactory()
    pin = pi.pin(5)
    pin.function = "input"
    a, b = SimulatedMCP23017(0x20), SimulatedMCP23017(0x21)
    line = InterruptLine(pin, [a, b])
    for chip in (a, b):
        chip.write(IOCON, IOCON_MIRROR | IOCON_ODR)
        chip.write(GPPU, 0xFF)
        chip.write(GPINTEN, 0xFF)
    a.set_input(0, False)
    b.set_input(0, False)
    assert pin.state == 0
    a.read(GPIO)
    assert pin.state == 0, "b still pulls the line low"
    b.read(GPIO)
    assert pin.state == 1
    assert line.chips == [a, b]


# -- the pin map ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "section", "key", "words"),
    [
        (
            {
                "expanders": {
                    "spot1": {"address": 0x20, "interrupt": 16},
                    "x": {"address": 0x20, "interrupt": 16},
                }
            },
            "gpio.expanders",
            "x",
            "address 0x20 on I2C bus 1 is already expander spot1's",
        ),
        (
            {"sensors": {"1.main": {"expander": "spot1", "line": 16}}},
            "gpio.sensors",
            "1.main",
            "line 16 is beyond expander spot1's 16 lines",
        ),
        (
            {"sensors": {"1.main": {"expander": "spot1", "line": "GPA4"}}},
            "gpio.console",
            "insurance.1",
            "line 4 (GPA4) is already used by [gpio.sensors] '1.main'",
        ),
        (
            {"sensors": {"1.main": {"expander": "spot9", "line": 0}}},
            "gpio.sensors",
            "1.main",
            "no expander 'spot9'; expanders are: spot1",
        ),
        (
            {"sensors": {"1.main": 2}},
            "gpio.sensors",
            "1.main",
            "GPIO 2 is already used by I2C bus 1 SDA",
        ),
        (
            {"expanders": {"spot1": {"address": 0x28, "interrupt": 16}}},
            "gpio.expanders",
            "spot1",
            "'address' must be the MCP23017's I2C address 0x20 to 0x27",
        ),
        (
            {"expanders": {"spot1": {"address": 0x20, "interrupt": 16, "bus": 3}}},
            "gpio.expanders",
            "spot1",
            "I2C bus 3 is not declared",
        ),
        (
            {"sensors": {"1.main": {"expander": "spot1", "line": 0, "pull_up": False}}},
            "gpio.sensors",
            "1.main",
            "an MCP23017 has pull-ups only",
        ),
        (
            {"console": {"lockout": 16}},
            "gpio.console",
            "lockout",
            "GPIO 16 is already used by [gpio.expanders] 'spot1'",
        ),
    ],
)
def test_the_pin_map_refuses_expander_mistakes_naming_the_key(change, section, key, words):
    raw = {**MAP, **change}
    if "console" not in change:
        raw["console"] = MAP["console"]
    with pytest.raises(PinMapError) as caught:
        parse_pin_map(raw, circles=PA, spots=1)
    assert (caught.value.section, caught.value.key) == (section, key), str(caught.value)
    assert words in caught.value.problem


def test_a_second_bus_and_a_shared_interrupt():
    raw = {
        "i2c": {"3": {"sda": 5, "scl": 6}},
        "expanders": {
            "a": {"address": 0x20, "interrupt": 4, "bus": 3},
            "b": {"address": 0x20, "interrupt": 4},  # same address, another bus
            "c": {"address": 0x21, "interrupt": 4},
        },
        "sensors": {"1.main": {"expander": "b", "line": 0}},
    }
    with pytest.raises(PinMapError, match="share an interrupt pin only on the same bus"):
        parse_pin_map(raw, circles=PA, spots=1)
    raw["expanders"]["a"]["interrupt"] = 17
    pin_map = parse_pin_map(raw, circles=PA, spots=1)
    assert [(e.name, e.bus, e.address) for e in pin_map.expanders] == [
        ("a", 3, 0x20),
        ("b", 1, 0x20),
        ("c", 1, 0x21),
    ]
    assert pin_map.pins()[5] == "[gpio.i2c] 3 sda" and pin_map.pins()[2] == "I2C bus 1 SDA"


# -- the table latches safe -----------------------------------------------------------------------


def test_an_expander_lost_latches_the_tables_safe_state_until_the_key_clears_it(tmp_path):
    """The real journaled table and runtime: the fault is journaled, every lamp goes to its
    safe state and stays there after the chip is back, until the supervisor key."""
    from controller.games import load_game
    from controller.journal import JournaledTable
    from controller.runtime.loop import RuntimeClock, TableRuntime
    from controller.table.settings import TableSettings

    pi = MockFactory()
    rules = load_game("pa-standard")
    table = JournaledTable(tmp_path / "journal.sqlite", rules, TableSettings(spots=1))
    clock = RuntimeClock(table.state.now)
    box: list[TableRuntime] = []
    raw = {**MAP, "console": {**MAP["console"], "supervisor_key": 24}}
    gpio = GpioDriver(
        parse_pin_map(raw, circles=PA, spots=1),
        lambda e: box[0].submit(e),
        clock=clock,
        pin_factory=pi,
        reconcile_ms=0,
    )

    def safe_state(reason):
        gpio.clear_fault() if reason is None else gpio.fault(reason)

    runtime = TableRuntime(
        table, clock=clock, tick_ms=10, lights=gpio.apply, safe_state=safe_state, polls=(gpio.poll,)
    )
    box.append(runtime)

    def pump(until, timeout=15.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runtime.run_once(max_wait_s=0.01)
            if until():
                return
        raise AssertionError("the runtime did not get there")

    try:
        factory = gpio._expanders[1]
        chip = factory.bus.chips[0x20]
        chip.set_input(0, False)  # chips on the main circle, then no more bets: its lamp is lit
        pump(lambda: table.state.sensors.get((1, "main")))
        gpio.simulate("console.lockout", True)
        pump(lambda: table.state.lights.get("spot1.main") == "on")
        assert chip.output(8) is True and chip.output(15) is True
        chip.answering = False
        factory.reconcile()
        pump(lambda: gpio.faulted is not None)
        assert "gpio" in table.state.faults and "not answering" in gpio.faulted
        assert any(type(e) is ev.TableFault for e in table.journal.events())
        chip.answering = True
        factory.reconcile()
        pump(lambda: table.state.faults.get("gpio", ("", True))[1] is False)
        assert gpio.faulted is not None, "latched until the key"
        assert chip.output(15) is True and chip.output(8) is False  # lockout on, spot lamp off
        gpio.simulate("console.supervisor_key", True)
        pump(lambda: gpio.faulted is None)
        assert chip.output(8) is True, "the lamp the table asked for is back"
    finally:
        gpio.close()
        table.close()
        pi.close()


def test_the_sensor_latency_bench_prints_both_p99s_last():
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parent.parent / "bench" / "sensor_latency.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--samples", "20", "--gap-ms", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    *_, p50s, last = done.stdout.strip().splitlines()
    keys = [item.split("=")[0] for item in last.split()]
    assert keys == ["pi_p99_ms", "expander_p99_ms"]
    assert all(float(item.split("=")[1]) > 0 for item in last.split())
    assert "pi_samples=20 expander_samples=20" in p50s


def test_a_bus_that_cannot_be_opened_says_what_to_do():
    from drivers.mcp23017_chip import open_bus

    with pytest.raises(OSError) as caught:
        open_bus(99)  # no /dev/i2c-99 here, as on a Pi with I2C off
    assert "cannot open /dev/i2c-99" in str(caught.value)
    assert "raspi-config nonint do_i2c 0" in str(caught.value) and "group i2c" in str(caught.value)


def test_after_a_restart_the_table_hears_its_gpio_fault_is_gone():
    """The journal says the table holds an active gpio fault; every expander answers now."""
    pi = MockFactory()
    events: list[ev.Event] = []
    driver = GpioDriver(
        parse_pin_map(MAP, circles=PA, spots=1), events.append, pin_factory=pi, fault_reported=True
    )
    try:
        faults = [e for e in events if isinstance(e, ev.TableFault)]
        assert [(f.kind, f.active) for f in faults] == [("gpio", False)]
    finally:
        driver.close()
        pi.close()


def test_an_interrupt_line_lost_for_three_changes_is_a_gpio_fault_until_one_comes(table):
    driver, factory, chip, clock, events = table
    line = factory.bus.lines[16]
    line.connected = False  # the INTA wire broke
    for level in (False, None, False):
        chip.set_input(1, level)
        factory.reconcile()
    faults = [e for e in events if isinstance(e, ev.TableFault)]
    assert [(f.kind, f.active) for f in faults] == [("gpio", True)]
    assert "its interrupt line GPIO 16 did not fall for the last 3 changes" in faults[0].detail
    assert driver.health()["errors"]["interrupt_lost"] == 1
    line.connected = True  # mended
    chip.set_input(1, None)
    line.update()
    factory.sync()
    assert events[-1] == ev.TableFault(
        "gpio", "every expander answers and interrupts again", active=False, t=clock.now
    )
