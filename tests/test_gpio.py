"""GPIO driver: pin map checks, debounce from timestamps, lights and the safe state.

Every test runs on gpiozero's MockFactory: ``pin.drive_low()`` / ``drive_high()``
call the driver's edge handler at once, in the test's thread, and the test's
clock says when. MockPin has no bounce, so chatter is written out edge by edge.
The same behaviour on real pins: ``tests/hardware/test_gpio_real.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games import load_game
from controller.table import table_circles
from controller.table.effects import Light, Prompt
from controller.table.events import (
    BetSensor,
    Double,
    Insurance,
    Lockout,
    Misdeal,
    Next,
    SupervisorKey,
)
from drivers.gpio import GpioDriver, GpioError
from drivers.gpio_pins import PinMapError, load_pin_map, parse_pin_map

ROOT = Path(__file__).resolve().parent.parent
PA = table_circles(load_game("pa-standard"))
TIE = table_circles(load_game("blackjack-tie"))

# A small table: two spots, pull-up inputs (active = pin pulled low) unless said otherwise.
SMALL = {
    "sensors": {"1.main": 4, "1.lucky_ladies": 5, "2.main": 6},
    "console": {
        "lockout": 7,
        "next": 8,
        "double": 9,
        "insurance.2": 10,
        "misdeal": 11,
        "supervisor_key": 12,
    },
    "lights": {
        "1.main": 16,
        "1.lucky_ladies": 17,
        "1.action": 18,
        "lockout": 22,
        "alarm": 23,
    },
}


class Clock:
    """The runtime's monotonic ms clock, advanced by the test."""

    def __init__(self) -> None:
        self.now = 1000

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@pytest.fixture
def factory():
    """A MockFactory to inject, and a *different* one as gpiozero's global default, so
    a device created without the injected factory would not land on the test's pins."""
    saved = Device.pin_factory
    Device.pin_factory = MockFactory()
    injected = MockFactory()
    yield injected
    injected.reset()
    Device.pin_factory.reset()
    Device.pin_factory = saved


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def table(factory, clock):
    """``table(gpio_dict)`` -> (driver, events list); closed after the test."""
    drivers = []

    def make(gpio=None, circles=PA, spots=7):
        events: list = []
        pin_map = parse_pin_map(gpio if gpio is not None else SMALL, circles=circles, spots=spots)
        driver = GpioDriver(pin_map, events.append, clock=clock, pin_factory=factory)
        drivers.append(driver)
        for pin in factory.pins.values():
            pin.clear_states()  # a light's states start from its level after start-up
        return driver, events

    yield make
    for driver in drivers:
        driver.close()


def chatter(pin, clock: Clock, edges: int, every_ms: int) -> None:
    """``edges`` alternating edges ``every_ms`` apart, the first one away from the pin's
    present level (an even count ends where it started)."""
    for _ in range(edges):
        (pin.drive_low if pin.state else pin.drive_high)()
        clock.advance(every_ms)


# -- the pin map ----------------------------------------------------------------------


def test_example_pin_map_loads_and_covers_a_dealers_console():
    pin_map = load_pin_map(ROOT / "config" / "gpio.example.toml", circles=PA)
    keys = {p.key for p in pin_map.inputs}
    assert {f"{s}.{c}" for s in range(1, 8) for c in PA} <= keys
    assert {"lockout", "next", "supervisor_key", "void_round", "misdeal", "burn"} <= keys
    assert {f"{b}.{s}" for b in ("insurance", "even_money", "ez_bust") for s in range(1, 8)} <= keys
    lights = {p.light: p for p in pin_map.lights}
    assert {"spot1.main", "spot7.action", "lockout", "alarm"} <= set(lights)
    assert lights["alarm"].active_high is False and lights["alarm"].safe == "blink"
    assert lights["lockout"].safe == "on" and lights["spot1.main"].safe == "off"
    assert lights["spot3.action"].where == "spot3.GPB4"
    on_pi = [p for p in (*pin_map.inputs, *pin_map.lights) if not p.expander]
    pins = pin_map.pins()
    # the console and table lights, the I2C bus (GPIO 2/3) and one interrupt per spot board
    assert len(pins) == len(on_pi) + 2 + len(pin_map.expanders)
    assert pins[2] == "I2C bus 1 SDA" and pins[3] == "I2C bus 1 SCL"
    # and the console's JACKPOT PAID button on spot 1's board (issue 28), RECALL LAST on spot
    # 2's (issue 30)
    assert len(pin_map.expander_lines()) == 7 * (2 * len(PA) + 1 + 3) + 2
    assert pin_map.expander_lines()["spot2.GPA7"] == "[gpio.console] recall_last"


def test_bare_pin_is_a_pull_up_input_and_a_table_can_say_otherwise():
    pin_map = parse_pin_map(
        {
            "sensors": {
                "1.main": 4,
                "2.main": {"pin": 5, "pull_up": False},
                "3.main": {"pin": 6, "active_high": False, "debounce_ms": 400},
            }
        },
        circles=PA,
    )
    one, two, three = pin_map.inputs
    assert (one.pull_up, one.active_high, one.debounce_ms) == (True, False, 150)
    assert (two.pull_up, two.active_high) == (False, True)
    assert (three.pull_up, three.active_high, three.debounce_ms) == (None, False, 400)


BAD_MAPS = [
    ({"sensor": {}}, "[gpio] key 'sensor'", "keys of [gpio] are"),
    ({"sensors": {"1.main": 1}}, "key '1.main'", "outside 2-27"),
    ({"lights": {"alarm": 28}}, "[gpio.lights] key 'alarm'", "from 2 to 27"),
    ({"sensors": {"1.main": "17"}}, "key '1.main'", "BCM GPIO number"),
    ({"sensors": {"1.main": True}}, "key '1.main'", "BCM GPIO number"),
    ({"sensors": {"1.main": {"pin": 4.0}}}, "key '1.main'", "BCM GPIO number 2 to 27"),
    (
        {"sensors": {"1.main": 4}, "lights": {"1.main": 4}},
        "[gpio.lights] key '1.main'",
        "GPIO 4 is already used by [gpio.sensors] '1.main'",
    ),
    ({"sensors": {"1.lucky_lady": 4}}, "key '1.lucky_lady'", "use one of: main, lucky_ladies"),
    ({"sensors": {"1.bonus_16": 4}}, "key '1.bonus_16'", "no bet circle of this game"),
    ({"sensors": {"8.main": 4}}, "key '8.main'", "spots are 1 to 7"),
    ({"sensors": {"main": 4}}, "[gpio.sensors] key 'main'", "SPOT.CIRCLE"),
    ({"sensors": {"1": {"main": 4}}}, "key '1'", "put dotted keys in quotes"),
    ({"sensors": {"1.main": {"pin": 4, "pullup": True}}}, "key '1.main'", "options are: pin"),
    ({"sensors": {"1.main": {"pull_up": True}}}, "key '1.main'", "needs 'pin'"),
    (
        {"sensors": {"1.main": {"pin": 4, "pull_up": True, "active_high": True}}},
        "key '1.main'",
        "not both",
    ),
    ({"sensors": {"1.main": {"pin": 4, "pull_up": "yes"}}}, "key '1.main'", "true or false"),
    ({"sensors": {"1.main": {"pin": 2, "pull_up": False}}}, "key '1.main'", "pull-up resistor"),
    ({"console": {"stand": 7}}, "[gpio.console] key 'stand'", "lockout, next, double"),
    ({"console": {"insurance": 7}}, "key 'insurance'", 'one per spot: "insurance.1"'),
    ({"console": {"insurance.0": 7}}, "key 'insurance.0'", "spots are 1 to 7"),
    ({"lights": {"tower": 23}}, "[gpio.lights] key 'tower'", "lockout, alarm, SPOT.CIRCLE"),
    ({"lights": {"1.actoin": 18}}, "key '1.actoin'", "action"),
    ({"lights": {"alarm": {"pin": 23, "safe": "flash"}}}, "key 'alarm'", "on, off, blink"),
    ({"button_debounce_ms": -1}, "key 'button_debounce_ms'", "from 0 to 2000"),
    ({"blink_ms": 0}, "key 'blink_ms'", "from 10 to 5000"),
    ({"console": [7]}, "[gpio.console]", "must be a table"),
]


@pytest.mark.parametrize(("gpio", "where", "allowed"), BAD_MAPS)
def test_bad_pin_map_names_the_key_and_what_is_allowed(gpio, where, allowed):
    with pytest.raises(PinMapError) as caught:
        parse_pin_map(gpio, circles=PA, source="table.toml")
    message = str(caught.value)
    assert message.startswith("table.toml: ")
    assert where in message
    assert allowed in message
    assert isinstance(caught.value, ValueError)


def test_a_spot_past_the_tables_spots_is_refused():
    with pytest.raises(PinMapError, match=r"spot 4 is not a spot at this table: spots are 1 to 3"):
        parse_pin_map({"console": {"insurance.4": 7}}, circles=PA, spots=3)


def test_blackjack_tie_circles_are_sensor_keys():
    pin_map = parse_pin_map({"sensors": {"2.blackjack_tie.tie_18": 4}}, circles=TIE)
    assert (pin_map.inputs[0].spot, pin_map.inputs[0].circle) == (2, "blackjack_tie.tie_18")


def test_load_pin_map_names_a_file_without_gpio(tmp_path):
    path = tmp_path / "table.toml"
    path.write_text("[table]\nspots = 7\n")
    with pytest.raises(PinMapError, match=r"table.toml: \[gpio\]: the file has no \[gpio\] table"):
        load_pin_map(path, circles=PA)


# -- devices ----------------------------------------------------------------------------


def test_every_device_uses_the_injected_pin_factory(table, factory):
    driver, _events = table()
    used = {pin.info.name for pin in factory.pins.values()}
    expected = {f"GPIO{n}" for n in driver.pin_map.pins()}
    assert used == expected
    assert not Device.pin_factory.pins, "nothing may land on gpiozero's global factory"
    assert factory.pin(16).function == "output"
    assert factory.pin(4).function == "input" and factory.pin(4).pull == "up"


def test_a_pin_the_library_refuses_is_named_and_nothing_stays_reserved(factory, clock):
    from gpiozero import LED

    squatter = LED(17, pin_factory=factory)  # another program's light on GPIO 17
    pin_map = parse_pin_map(SMALL, circles=PA)
    with pytest.raises(GpioError, match=r"\[gpio.lights\] '1.lucky_ladies' on GPIO 17"):
        GpioDriver(pin_map, [].append, clock=clock, pin_factory=factory)
    squatter.close()
    with GpioDriver(pin_map, [].append, clock=clock, pin_factory=factory):
        pass  # every pin the failed driver took was released


def test_no_gpio_library_that_starts_is_one_line_naming_what_to_do(clock, monkeypatch):
    """A PC, or a Pi without lgpio, under the example's pin map with expanders and the
    default factory: BadPinFactory was a traceback and a restart loop (issue 29 item 7)."""
    monkeypatch.delenv("GPIOZERO_PIN_FACTORY", raising=False)
    monkeypatch.setattr(Device, "pin_factory", None)
    try:
        Device.ensure_pin_factory()
    except Exception:  # whatever gpiozero raises: none loads here
        Device.pin_factory = None
    else:
        Device.pin_factory.close()
        Device.pin_factory = None
        pytest.skip("a GPIO library starts on this machine")
    pin_map = load_pin_map(ROOT / "config" / "gpio.example.toml", circles=PA, spots=7)
    with pytest.raises(GpioError) as caught:
        GpioDriver(pin_map, [].append, clock=clock, pin_factory=None)
    assert str(caught.value).startswith('[gpio] pin_factory "default": no GPIO library could')
    assert 'pin_factory = "mock"' in str(caught.value) and "\n" not in str(caught.value)


# -- bet sensors ------------------------------------------------------------------------


def test_chips_count_once_they_stay_for_the_sensor_debounce(table, factory, clock):
    driver, events = table()
    sensor = factory.pin(4)
    sensor.drive_low()  # chips on spot 1's main circle (pull-up: active low)
    placed = clock.now
    clock.advance(149)
    driver.poll()
    assert events == []
    clock.advance(1)
    driver.poll()
    assert events == [BetSensor(1, "main", True, t=placed + 150)]
    clock.advance(2000)
    driver.poll()
    assert len(events) == 1, "a level is reported once"
    sensor.drive_high()
    removed = clock.now
    clock.advance(500)
    driver.poll()
    assert events[1:] == [BetSensor(1, "main", False, t=removed + 150)]


def test_chatter_on_placing_and_removing_chips_is_one_wager(table, factory, clock):
    driver, events = table()
    sensor = factory.pin(5)  # spot 1, Lucky Ladies
    chatter(sensor, clock, edges=15, every_ms=7)  # ends low: chips on, edges 7 ms apart
    driver.poll()
    assert events == [], "nothing counts while the chips are still settling"
    clock.advance(200)
    driver.poll()
    assert events == [BetSensor(1, "lucky_ladies", True, t=events[0].t)]
    chatter(sensor, clock, edges=11, every_ms=20)  # ends high: chips taken off
    clock.advance(200)
    driver.poll()
    assert [(e.circle, e.on) for e in events] == [("lucky_ladies", True), ("lucky_ladies", False)]
    health = driver.health()["inputs"]["sensors.1.lucky_ladies"]
    # every other edge fell back to the confirmed level before it held: a rejected wait
    assert (health["edges"], health["rejected"]) == (26, 7 + 5)


def test_a_glitch_shorter_than_the_debounce_is_no_wager(table, factory, clock):
    driver, events = table()
    sensor = factory.pin(6)
    sensor.drive_low()
    clock.advance(120)  # a hand passing over the circle
    sensor.drive_high()
    clock.advance(1000)
    driver.poll()
    assert events == []
    assert driver.health()["inputs"]["sensors.2.main"]["rejected"] == 1


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=30),
    polls=st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_any_edge_pattern_gives_alternating_sensor_events_true_to_the_level(gaps, polls):
    """Whatever the edges and however often the runtime polls: events alternate on/off
    (never two wagers for one placement), each is a level that held for 150 ms, and
    the last matches the chips once they settle."""
    factory, clock, events = MockFactory(), Clock(), []
    pin_map = parse_pin_map({"sensors": {"1.main": 4}}, circles=PA)
    with GpioDriver(pin_map, events.append, clock=clock, pin_factory=factory) as driver:
        sensor = factory.pin(4)
        levels = []  # (time, chips on) of each edge
        for n, gap in enumerate(gaps):
            on = n % 2 == 0
            (sensor.drive_low if on else sensor.drive_high)()
            levels.append((clock.now, on))
            clock.advance(gap)
            if polls[n]:
                driver.poll()
        clock.advance(150)
        driver.poll()
    ons = [event.on for event in events]
    assert ons == [n % 2 == 0 for n in range(len(ons))], "on, off, on ... never on twice"
    for event in events:
        start = event.t - 150
        held = [
            level
            for n, level in enumerate(levels)
            if level[0] <= start and (n + 1 == len(levels) or levels[n + 1][0] >= event.t)
        ]
        assert held and held[-1][1] == event.on, "every event is a level that held 150 ms"
    assert (ons[-1] if ons else False) == levels[-1][1]
    factory.reset()


# -- console ----------------------------------------------------------------------------


def test_a_press_is_one_event_bounce_and_release_included(table, factory, clock):
    driver, events = table()
    button = factory.pin(7)  # lockout
    chatter(button, clock, edges=5, every_ms=2)  # contact bounce, ends pressed
    clock.advance(40)
    driver.poll()
    assert events == [Lockout(t=events[0].t)]
    chatter(button, clock, edges=5, every_ms=2)  # release bounces: ends released
    clock.advance(500)
    driver.poll()
    assert len(events) == 1, "releasing the button is not a second press"
    button.drive_low()
    clock.advance(30)
    driver.poll()
    assert events[1:] == [Lockout(t=clock.now)]


def test_a_tap_shorter_than_the_button_debounce_is_nothing(table, factory, clock):
    driver, events = table()
    button = factory.pin(8)
    button.drive_low()
    clock.advance(10)
    button.drive_high()
    clock.advance(100)
    driver.poll()
    assert events == []


def test_console_buttons_send_their_events_and_the_driver_keeps_no_game_logic(
    table, factory, clock
):
    driver, events = table()
    for pin in (9, 10, 11):  # double, insurance.2, misdeal (supervisor key is off)
        factory.pin(pin).drive_low()
        clock.advance(30)
        factory.pin(pin).drive_high()
    driver.poll()
    assert events == [Double(0, t=1030), Insurance(2, t=1060), Misdeal(t=1090)]


def test_supervisor_key_reports_on_and_off(table, factory, clock):
    driver, events = table()
    key = factory.pin(12)
    key.drive_low()
    clock.advance(30)
    driver.poll()
    key.drive_high()
    clock.advance(30)
    driver.poll()
    assert events == [SupervisorKey(True, t=1030), SupervisorKey(False, t=1060)]


def test_a_level_is_confirmed_on_the_next_edge_without_a_poll(table, factory, clock):
    """Between ticks any edge confirms what is due, and events reach the sink in time order."""
    _driver, events = table()
    factory.pin(4).drive_low()  # chips on spot 1 at 1000: due at 1150
    clock.advance(100)
    factory.pin(8).drive_low()  # next pressed at 1100: due at 1130
    clock.advance(60)
    factory.pin(8).drive_high()  # this edge at 1160 confirms both
    assert events == [Next(t=1130), BetSensor(1, "main", True, t=1150)]


def test_what_is_on_at_start_up(factory, clock):
    """Chips on a circle and the key turned on are reported; a held button is not a press."""
    # inputs with their own resistors (a pulled-up MockPin would be reset by its pull)
    factory.pin(4).drive_high()  # chips already on spot 1
    factory.pin(12).drive_high()  # supervisor key already on
    factory.pin(7).drive_high()  # lockout button stuck (or leant on)
    events: list = []
    external = {"active_high": True}
    pin_map = parse_pin_map(
        {
            "sensors": {"1.main": {"pin": 4, **external}},
            "console": {
                "lockout": {"pin": 7, **external},
                "supervisor_key": {"pin": 12, **external},
            },
        },
        circles=PA,
    )
    with GpioDriver(pin_map, events.append, clock=clock, pin_factory=factory) as driver:
        clock.advance(150)
        driver.poll()
        assert events == [SupervisorKey(True, t=1030), BetSensor(1, "main", True, t=1150)]
        assert driver.health()["errors"] == {"button_held_at_start": 1}
        factory.pin(7).drive_low()
        clock.advance(30)
        factory.pin(7).drive_high()
        clock.advance(30)
        driver.poll()
        assert events[2:] == [Lockout(t=clock.now)]


def test_pull_up_pull_down_and_external_resistor_inputs(table, factory, clock):
    factory.pin(6).drive_high()  # spot 3's sensor board holds its line high: no chips
    driver, events = table(
        {
            "sensors": {
                "1.main": 4,  # pull-up: chips pull the pin low
                "2.main": {"pin": 5, "pull_up": False},  # pull-down: chips drive it high
                "3.main": {"pin": 6, "active_high": False},  # board's own resistor, active low
                "4.main": {"pin": 13, "active_high": True},  # board drives it high
            }
        }
    )
    assert factory.pin(5).pull == "down" and factory.pin(6).pull == "floating"
    for pin in (4, 5, 6, 13):
        factory.pin(pin).drive_high()
    clock.advance(200)
    driver.poll()
    assert sorted((e.spot, e.on) for e in events) == [(2, True), (4, True)]
    for pin in (4, 5, 6, 13):
        factory.pin(pin).drive_low()
    clock.advance(200)
    driver.poll()
    assert sorted((e.spot, e.on) for e in events[2:]) == [
        (1, True),
        (2, False),
        (3, True),
        (4, False),
    ]


def test_a_sink_that_raises_is_counted_and_the_other_events_still_go(factory, clock):
    got: list = []

    def sink(event):
        got.append(event)
        if isinstance(event, Next):
            raise RuntimeError("queue full")

    pin_map = parse_pin_map(SMALL, circles=PA)
    with GpioDriver(pin_map, sink, clock=clock, pin_factory=factory) as driver:
        factory.pin(10).drive_low()
        factory.pin(8).drive_low()
        clock.advance(30)
        driver.poll()
        assert got == [Next(t=1030), Insurance(2, t=1030)], "same time: pin map order"
        health = driver.health()
        assert health["errors"] == {"sink_error": 1}
        assert health["last_sink_error"] == "RuntimeError: queue full"


def test_background_polling_confirms_without_the_runtime(factory):
    events: list = []
    pin_map = parse_pin_map({"console": {"next": 8}, "button_debounce_ms": 20}, circles=PA)
    with GpioDriver(pin_map, events.append, pin_factory=factory) as driver:
        driver.start_polling(interval_ms=5)
        factory.pin(8).drive_low()
        deadline = time.monotonic() + 15
        while not events and time.monotonic() < deadline:
            time.sleep(0.005)
    assert [type(e) for e in events] == [Next]


# -- lights -----------------------------------------------------------------------------


def test_lights_follow_the_tables_light_effects(table, factory):
    driver, _events = table(
        {
            "lights": {
                "1.main": 16,
                "1.action": {"pin": 18, "active_high": False},  # on an active-low relay
            }
        }
    )
    assert driver.apply(Light("spot1.main", "on"))
    assert driver.apply(Light("spot1.main", "on"))  # the same state twice: no flicker
    assert driver.apply(Light("spot1.main", "off"))
    assert driver.apply(Light("spot1.action", "on"))
    factory.pin(16).assert_states([False, True, False])
    assert [s.state for s in factory.pin(16).states] == [False, True, False]
    assert [s.state for s in factory.pin(18).states] == [True, False], "active low: on is low"
    assert driver.health()["lights"] == {"spot1.main": "off", "spot1.action": "on"}


def test_blink_toggles_the_pin(table, factory):
    driver, _events = table({"lights": {"1.main": 16}, "blink_ms": 10})
    driver.apply(Light("spot1.main", "blink"))
    deadline = time.monotonic() + 15
    while len(factory.pin(16).states) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    driver.apply(Light("spot1.main", "off"))
    states = [s.state for s in factory.pin(16).states]
    assert states[:5] == [False, True, False, True, False]
    assert factory.pin(16).state is False


def test_unwired_lights_are_listed_bad_states_counted_neither_fatal(table, factory):
    driver, _events = table()
    assert not driver.apply(Light("spot7.main", "on"))  # no light wired for spot 7
    assert not driver.apply(Light("spot1.main", "dim"))
    assert not driver.apply(Prompt("bet", "Place your bets"))  # not a light: ignored
    assert driver.apply(Light("spot1.main", "on"))
    health = driver.health()
    assert not driver.apply(Light("spot7.main", "off"))
    health = driver.health()
    assert health["errors"] == {"bad_light_state": 1}  # a table without a lamp is no error
    assert health["unwired_lights"] == ["spot7.main"]
    assert factory.pin(16).state is True


def _lit(factory, pin: int) -> bool:
    return bool(factory.pin(pin).state)


def test_a_fault_latches_the_safe_state_until_cleared(table, factory):
    driver, _events = table()
    driver.apply(Light("spot1.main", "on"))
    driver.apply(Light("spot1.action", "on"))
    driver.fault("shoe offline")
    assert not _lit(factory, 16) and not _lit(factory, 18), "spot lights off"
    assert _lit(factory, 22), "lockout light on: no more bets"
    assert driver.health()["lights"]["alarm"] == "blink"
    assert driver.health()["faulted"] == "shoe offline"
    driver.apply(Light("spot1.lucky_ladies", "on"))  # the table goes on asking
    driver.apply(Light("spot1.action", "off"))
    assert not _lit(factory, 17), "latched: nothing lights until the fault is cleared"
    driver.clear_fault()
    assert _lit(factory, 16) and _lit(factory, 17) and not _lit(factory, 18)
    assert not _lit(factory, 22), "lockout back to what the table asked (off)"
    assert driver.health()["lights"]["alarm"] == "off"
    assert driver.faulted is None


def test_declared_safe_states_and_active_low_outputs(table, factory):
    driver, _events = table(
        {
            "lights": {
                "lockout": {"pin": 22, "safe": "off"},
                "alarm": {"pin": 23, "active_high": False, "safe": "on"},
                "1.main": {"pin": 16, "safe": "on"},
            }
        }
    )
    driver.apply(Light("lockout", "on"))
    driver.safe_state()
    assert [s.state for s in factory.pin(22).states] == [False, True, False]
    assert [s.state for s in factory.pin(23).states] == [True, False], "active low: on is low"
    assert factory.pin(16).state is True


def test_close_shows_the_safe_state_releases_the_pins_and_may_repeat(factory, clock):
    events: list = []
    pin_map = parse_pin_map(SMALL, circles=PA)
    with GpioDriver(pin_map, events.append, clock=clock, pin_factory=factory) as driver:
        driver.apply(Light("spot1.main", "on"))
        sensor = factory.pin(4)
    assert [s.state for s in factory.pin(16).states] == [False, True, False]
    assert [s.state for s in factory.pin(22).states] == [False, True], "lockout lit on close"
    assert driver.health()["connected"] is False
    driver.close()
    sensor.drive_low()
    clock.advance(500)
    driver.poll()
    assert events == [], "a closed driver sends nothing"
    assert driver.apply(Light("spot1.main", "on")) is False
    with GpioDriver(pin_map, events.append, clock=clock, pin_factory=factory):
        pass  # the pins were released


def test_start_up_reports_what_differs_from_what_the_recovered_table_believes(factory, clock):
    """After a restart the table believes chips on spot 1 and the key on (its journal); the
    pins say spot 1 is empty, spot 2 has chips and the key is on: only the differences are
    reported, once they held for their debounce time."""
    factory.pin(12).drive_high()  # the key, on its own resistor, still on
    factory.pin(6).drive_high()  # spot 2's board (active high): chips
    events: list = []
    external = {"active_high": True}
    pin_map = parse_pin_map(
        {
            "sensors": {"1.main": {"pin": 4, **external}, "2.main": {"pin": 6, **external}},
            "console": {"supervisor_key": {"pin": 12, **external}},
        },
        circles=PA,
    )
    believed = {"sensors.1.main": True, "console.supervisor_key": True}
    with GpioDriver(
        pin_map, events.append, clock=clock, pin_factory=factory, believed=believed
    ) as driver:
        clock.advance(149)
        driver.poll()
        assert events == []
        clock.advance(1)
        driver.poll()
        assert events == [BetSensor(1, "main", False, t=1150), BetSensor(2, "main", True, t=1150)]


def test_a_simulation_holds_the_believed_chips_on_its_mock_pins(factory, clock):
    events: list = []
    pin_map = parse_pin_map(SMALL, circles=PA)
    believed = {"sensors.1.main": True, "sensors.2.main": False}
    with GpioDriver(
        pin_map,
        events.append,
        clock=clock,
        pin_factory=factory,
        believed=believed,
        hold_believed=True,
    ) as driver:
        clock.advance(200)
        driver.poll()
        assert events == []  # the pins agree with the table: nothing to report
        assert driver.health()["inputs"]["sensors.1.main"]["active"] is True
