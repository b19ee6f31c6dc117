"""The GPIO pin map: which BCM pin is which bet sensor, console button and light.

The map is the ``[gpio]`` table of the table's config file (see
``config/gpio.example.toml`` and ``hardware/gpio.md``)::

    [gpio]
    button_debounce_ms = 30      # a console button must stay pressed this long
    sensor_debounce_ms = 150     # chips must stay on (or off) a circle this long
    blink_ms = 500               # a blinking light: on this long, then off this long

    [gpio.sensors]               # bet-present sensors: "SPOT.CIRCLE" = BCM pin
    "1.main" = 4
    "1.lucky_ladies" = { pin = 5, pull_up = false }

    [gpio.console]               # dealer console buttons and the supervisor key switch
    lockout = 7
    "insurance.1" = 14
    supervisor_key = 24

    [gpio.lights]                # "SPOT.CIRCLE", "SPOT.action", lockout, alarm (tower)
    "1.main" = 16
    alarm = { pin = 23, active_high = false, safe = "blink" }

A seven-spot table needs more lines than the Pi has: MCP23017 I/O expanders on I2C
(``drivers/mcp23017.py``) give 16 lines each, declared in ``[gpio.expanders]``; an
input or light on one is ``{ expander = "NAME", line = 0-15 }`` (or ``line = "GPA3"``)::

    [gpio.expanders]             # NAME = { address = 0x20-0x27, interrupt = BCM pin, bus = 1 }
    e1 = { address = 0x20, interrupt = 17 }
    e2 = { address = 0x21, interrupt = 17 }   # INTA of both on one pin (open drain)

    [gpio.i2c]                   # buses other than bus 1 (GPIO 2/3): "N" = { sda, scl }
    "3" = { sda = 5, scl = 6 }

An input is a bare BCM number (internal pull-up, the contact or sensor output
pulls the pin to ground when active) or a table with ``pin`` and either
``pull_up`` (``true``: pull-up, active low; ``false``: pull-down, active high)
or ``active_high`` (no internal resistor: the board drives the pin), and an
optional ``debounce_ms``. A light is a bare number (active high) or a table with
``pin``, ``active_high`` and ``safe`` (its state on a fault: on, off, blink).

:func:`parse_pin_map` checks everything at start-up: an unknown key, a pin or an
expander line used twice, a pin outside 2-27, an expander address used twice on a bus, a
line beyond an expander's 16, a circle the game has no sensor for, a wrong type. The
error names the section and key and says what is allowed. :func:`wiring_gaps` lists what
a complete table lacks (``check-config`` refuses a spot left unwired).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import TableControllerError
from controller.table.effects import LIGHT_STATES
from controller.table.events import CONSOLE_BUTTONS, SPOT_BUTTONS

PIN_MIN, PIN_MAX = 2, 27
"""BCM GPIO numbers on the 40-pin header (0 and 1 are the HAT ID EEPROM's)."""

FIXED_PULL_UP = (2, 3)
"""GPIO 2 and 3 (I2C) have 1.8 kOhm pull-ups fitted on every Pi."""

BUTTONS = CONSOLE_BUTTONS  # the console buttons with no spot; SPOT_BUTTONS one per spot

SWITCHES = ("supervisor_key", "enclosure_door")
"""Console switches: the supervisor key; ``enclosure_door`` (optional), the table base's or
the Pi's enclosure: a contact closed while the door is shut (active = shut), so a cut wire
reads open (issue 28 item 5)."""
"""Console switches: an event when turned on and when turned off."""

TABLE_LIGHTS = ("lockout", "alarm")
"""Lights that belong to the table, not to a spot (``alarm`` is the tower light)."""

SAFE_DEFAULTS = {"lockout": "on", "alarm": "blink"}
"""Safe state of the table lights; every spot light is off in the safe state."""

DEFAULTS = {"button_debounce_ms": 30, "sensor_debounce_ms": 150, "blink_ms": 500}
LIMITS = {"button_debounce_ms": (0, 2000), "sensor_debounce_ms": (0, 5000), "blink_ms": (10, 5000)}
SECTIONS = ("expanders", "i2c", "sensors", "console", "lights")
OPTIONS = ("game",)
"""``game``: the profile a pin map is wired for (``check-config`` checks it is complete)."""

INPUT_OPTIONS = ("pin", "expander", "line", "pull_up", "active_high", "debounce_ms")
LIGHT_OPTIONS = ("pin", "expander", "line", "active_high", "safe")
EXPANDER_OPTIONS = ("address", "interrupt", "bus")

EXPANDER_ADDRESSES = (0x20, 0x27)
"""MCP23017 addresses: 0x20 plus its A2-A0 straps."""

EXPANDER_LINES = 16
"""GPA0-GPA7 are lines 0-7, GPB0-GPB7 lines 8-15."""

BUS1_PINS = {2: "SDA", 3: "SCL"}
"""I2C bus 1, the Pi's own (``dtparam=i2c_arm=on``)."""

BUS_MAX = 31
EXPANDER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,15}$")


class PinMapError(TableControllerError, ValueError):
    """A ``[gpio]`` pin map with a wrong key or value; names source, section and key."""

    def __init__(self, source: str, section: str, key: str | None, problem: str):
        self.source = source
        self.section = section
        self.key = key
        self.problem = problem
        where = f"[{section}]" + (f" key '{key}'" if key is not None else "")
        super().__init__(f"{source}: {where}: {problem}")


def line_label(line: int) -> str:
    """``GPA0``-``GPB7`` for line 0-15, as printed on MCP23017 boards.

    >>> line_label(3), line_label(12)
    ('GPA3', 'GPB4')
    """
    return f"GP{'AB'[line // 8]}{line % 8}"


@dataclass(frozen=True, slots=True)
class Expander:
    """An MCP23017 of ``[gpio.expanders]``: its I2C ``bus`` and ``address``, and the BCM
    pin its (mirrored, open-drain) interrupt output goes to."""

    name: str
    address: int
    interrupt: int
    bus: int = 1


@dataclass(frozen=True, slots=True)
class InputPin:
    """One input. ``kind``: ``sensor`` (``spot``, ``circle``), ``button`` (``name``,
    ``spot`` for per-spot buttons else 0) or ``switch`` (``name``).

    ``pull_up`` is gpiozero's: True (internal pull-up, active low), False
    (pull-down, active high) or None (no internal resistor; ``active_high`` says
    which level is active). On an expander (``expander``, ``line``) ``pin`` is -1.
    """

    section: str
    key: str
    pin: int
    kind: str
    pull_up: bool | None
    active_high: bool
    debounce_ms: int
    name: str = ""
    spot: int = 0
    circle: str = ""
    expander: str = ""
    line: int = -1

    @property
    def where(self) -> str:
        """``GPIO4`` or ``e1.GPA3``: the gpiozero pin name on its factory."""
        return f"{self.expander}.{line_label(self.line)}" if self.expander else f"GPIO{self.pin}"


@dataclass(frozen=True, slots=True)
class LightPin:
    """One light output. ``light`` is the table's name for it (``spot3.main``,
    ``spot3.action``, ``lockout``, ``alarm``); ``safe`` its state on a fault."""

    key: str
    light: str
    pin: int
    active_high: bool
    safe: str
    expander: str = ""
    line: int = -1

    @property
    def where(self) -> str:
        return f"{self.expander}.{line_label(self.line)}" if self.expander else f"GPIO{self.pin}"


@dataclass(frozen=True, slots=True)
class PinMap:
    inputs: tuple[InputPin, ...]
    lights: tuple[LightPin, ...]
    button_debounce_ms: int = DEFAULTS["button_debounce_ms"]
    sensor_debounce_ms: int = DEFAULTS["sensor_debounce_ms"]
    blink_ms: int = DEFAULTS["blink_ms"]
    source: str = "config"
    expanders: tuple[Expander, ...] = ()
    buses: tuple[tuple[int, int, int], ...] = ()  # (bus, sda, scl) other than bus 1
    game: str = ""

    def pins(self) -> dict[int, str]:
        """BCM pin -> ``[gpio.section] key``, for wiring checks and the diagnostics page
        (the I2C and interrupt pins of the expanders too)."""
        out = {p.pin: f"[gpio.{p.section}] {p.key}" for p in self.inputs if not p.expander}
        out.update({p.pin: f"[gpio.lights] {p.key}" for p in self.lights if not p.expander})
        if any(e.bus == 1 for e in self.expanders):
            out.update({pin: f"I2C bus 1 {what}" for pin, what in BUS1_PINS.items()})
        for bus, sda, scl in self.buses:
            out.update({sda: f"[gpio.i2c] {bus} sda", scl: f"[gpio.i2c] {bus} scl"})
        for e in self.expanders:
            out.setdefault(e.interrupt, f"[gpio.expanders] {e.name} interrupt")
        return dict(sorted(out.items()))

    def expander_lines(self) -> dict[str, str]:
        """``e1.GPA3`` -> ``[gpio.section] key`` for every expander line used."""
        out = {p.where: f"[gpio.{p.section}] {p.key}" for p in self.inputs if p.expander}
        out.update({p.where: f"[gpio.lights] {p.key}" for p in self.lights if p.expander})
        return out

    def describe(self) -> str:
        """One line: how many pins and lines on what.

        >>> PinMap((), ()).describe()
        '0 GPIO pins'
        """
        text = f"{len(self.pins())} GPIO pins"
        if self.expanders:
            buses = sorted({e.bus for e in self.expanders})
            text += (
                f" and {len(self.expander_lines())} lines on {len(self.expanders)} MCP23017 "
                f"expander{'s' if len(self.expanders) > 1 else ''} "
                f"(I2C bus{'es' if len(buses) > 1 else ''} {', '.join(map(str, buses))})"
            )
        return text


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _quote_hint(value: Any) -> str:
    """Unquoted, TOML reads ``1.main = 4`` as a table ``1`` holding ``main``: say so."""
    if isinstance(value, Mapping) and not set(value) <= {*INPUT_OPTIONS, *LIGHT_OPTIONS}:
        return ' (put dotted keys in quotes: "1.main" = 4; unquoted, TOML reads a nested table)'
    return ""


class _Reader:
    """Reads one ``[gpio]`` table; every error names where it is."""

    def __init__(self, source: str, circles: tuple[str, ...], spots: int):
        self.source = source
        self.circles = circles
        self.spots = spots
        self.used: dict[int, str] = {}
        self.expanders: dict[str, Expander] = {}
        self.lines_used: dict[tuple[str, int], str] = {}
        self.buses: dict[int, tuple[int, int]] = {}
        self.shared_interrupts: dict[int, tuple[int, str]] = {}  # pin -> (bus, first key)

    def error(self, section: str, key: str | None, problem: str) -> PinMapError:
        return PinMapError(self.source, section, key, problem)

    def table(self, raw: Any, section: str) -> Mapping[str, Any]:
        if not isinstance(raw, Mapping):
            raise self.error(section, None, f"must be a table, got {raw!r}")
        return raw

    def spot(self, section: str, key: str, text: str) -> int:
        spots = f"spots are 1 to {self.spots}"
        if not text.isdigit():
            raise self.error(section, key, f"'{text}' is not a spot number: {spots}")
        spot = int(text)
        if not 1 <= spot <= self.spots:
            raise self.error(section, key, f"spot {spot} is not a spot at this table: {spots}")
        return spot

    def circle(self, section: str, key: str, text: str, extra: tuple[str, ...] = ()) -> str:
        allowed = (*self.circles, *extra)
        if text not in allowed:
            raise self.error(
                section,
                key,
                f"'{text}' is no bet circle of this game; use one of: {', '.join(allowed)}",
            )
        return text

    def options(self, section: str, key: str, raw: Any, allowed: tuple[str, ...]) -> dict:
        """A bare pin number or an inline table of ``allowed`` options: ``pin``, or
        ``expander`` and ``line``."""
        if _is_int(raw):
            return {"pin": raw}
        if not isinstance(raw, Mapping):
            raise self.error(
                section,
                key,
                f"must be a BCM GPIO number ({PIN_MIN} to {PIN_MAX}) or a table "
                f"{{ {', '.join(f'{o} = ...' for o in allowed)} }}, got {raw!r}",
            )
        unknown = sorted(set(raw) - set(allowed))
        if unknown:
            raise self.error(
                section,
                key,
                f"unknown option(s) {', '.join(unknown)}; options are: {', '.join(allowed)}",
            )
        on_expander = "expander" in raw or "line" in raw
        if on_expander and "pin" in raw:
            raise self.error(
                section,
                key,
                "give 'pin' (a Pi GPIO) or 'expander' and 'line' (an MCP23017 line), not both",
            )
        if on_expander and not ("expander" in raw and "line" in raw):
            raise self.error(
                section, key, "an expander line needs both 'expander' (its name) and 'line'"
            )
        if not on_expander and "pin" not in raw:
            raise self.error(
                section,
                key,
                "needs 'pin', the BCM GPIO number (or 'expander' and 'line' for a line of an "
                "MCP23017 in [gpio.expanders])",
            )
        return dict(raw)

    def place(self, section: str, key: str, opts: Mapping[str, Any]) -> tuple[int, str, int]:
        """(pin, expander, line) of an input or light: a Pi pin (expander "") or a line of
        an expander (pin -1); each used once."""
        if "pin" in opts:
            return self.pin(section, key, opts["pin"]), "", -1
        name = opts["expander"]
        if not isinstance(name, str) or name not in self.expanders:
            known = ", ".join(self.expanders) or "none: declare them in [gpio.expanders]"
            raise self.error(section, key, f"no expander {name!r}; expanders are: {known}")
        line = opts["line"]
        labels = [line_label(n) for n in range(EXPANDER_LINES)]
        if isinstance(line, str) and line.upper() in labels:
            line = labels.index(line.upper())
        if not _is_int(line):
            raise self.error(
                section,
                key,
                f"line must be a number 0 to {EXPANDER_LINES - 1} or GPA0-GPB7, got {line!r}",
            )
        if not 0 <= line < EXPANDER_LINES:
            raise self.error(
                section,
                key,
                f"line {line} is beyond expander {name}'s {EXPANDER_LINES} lines: use 0 to "
                f"{EXPANDER_LINES - 1} (GPA0-GPA7 are 0-7, GPB0-GPB7 are 8-15)",
            )
        here = f"[{section}] '{key}'"
        if (name, line) in self.lines_used:
            raise self.error(
                section,
                key,
                f"expander {name} line {line} ({line_label(line)}) is already used by "
                f"{self.lines_used[(name, line)]}: each line serves one input or one light",
            )
        self.lines_used[(name, line)] = here
        return -1, name, line

    def expander(self, key: str, raw: Any) -> Expander:
        section = "gpio.expanders"
        if not EXPANDER_NAME.match(key):
            raise self.error(
                section,
                key,
                "an expander's name is a lower-case letter then letters, digits or _ "
                '(at most 16), e.g. e1 or "spots_1_2"',
            )
        if not isinstance(raw, Mapping):
            raise self.error(
                section,
                key,
                f"must be a table {{ address = 0x20, interrupt = BCM pin, bus = 1 }}, got {raw!r}",
            )
        unknown = sorted(set(raw) - set(EXPANDER_OPTIONS))
        if unknown:
            raise self.error(
                section,
                key,
                f"unknown option(s) {', '.join(unknown)}; options are: "
                f"{', '.join(EXPANDER_OPTIONS)}",
            )
        low, high = EXPANDER_ADDRESSES
        address = raw.get("address")
        if not _is_int(address) or not low <= address <= high:
            raise self.error(
                section,
                key,
                f"'address' must be the MCP23017's I2C address 0x{low:02x} to 0x{high:02x} "
                f"(0x20 + its A2 A1 A0 straps; write it as hex, 0x21), got {address!r}",
            )
        bus = raw.get("bus", 1)
        if not _is_int(bus) or not 0 <= bus <= BUS_MAX:
            raise self.error(section, key, f"'bus' must be an I2C bus number, got {bus!r}")
        if bus != 1 and bus not in self.buses:
            raise self.error(
                section,
                key,
                f"I2C bus {bus} is not declared: bus 1 is the Pi's (GPIO 2/3); another bus "
                f'needs [gpio.i2c] "{bus}" = {{ sda = PIN, scl = PIN }} (hardware/gpio.md)',
            )
        for other in self.expanders.values():
            if other.bus == bus and other.address == address:
                raise self.error(
                    section,
                    key,
                    f"address 0x{address:02x} on I2C bus {bus} is already expander "
                    f"{other.name}'s: each chip on a bus needs its own A2 A1 A0 straps",
                )
        if "interrupt" not in raw:
            raise self.error(
                section,
                key,
                "needs 'interrupt': the BCM pin its INTA/INTB output is wired to (expanders "
                "on one bus may share one)",
            )
        interrupt = raw["interrupt"]
        shared = self.shared_interrupts.get(interrupt) if _is_int(interrupt) else None
        if shared is not None:
            shared_bus, first = shared
            if shared_bus != bus:
                raise self.error(
                    section,
                    key,
                    f"interrupt GPIO {interrupt} is already {first}'s on I2C bus {shared_bus}: "
                    "expanders may share an interrupt pin only on the same bus",
                )
        else:
            interrupt = self.pin(section, key, interrupt)
            self.shared_interrupts[interrupt] = (bus, f"[{section}] '{key}'")
        return Expander(key, address, interrupt, bus)

    def bus(self, key: str, raw: Any) -> tuple[int, int, int]:
        section = "gpio.i2c"
        if not key.isdigit() or not 0 <= int(key) <= BUS_MAX:
            raise self.error(section, key, f'a key is an I2C bus number, e.g. "3" (0-{BUS_MAX})')
        number = int(key)
        if number == 1:
            raise self.error(
                section,
                key,
                "bus 1 is the Pi's own I2C bus on GPIO 2 (SDA) and 3 (SCL): nothing to declare",
            )
        if not isinstance(raw, Mapping) or set(raw) != {"sda", "scl"}:
            raise self.error(
                section,
                key,
                f"must be a table {{ sda = BCM pin, scl = BCM pin }} (the pins its "
                f"dtoverlay puts the bus on, hardware/gpio.md), got {raw!r}",
            )
        sda = self.pin(section, key, raw["sda"])
        scl = self.pin(section, key, raw["scl"])
        self.buses[number] = (sda, scl)
        return number, sda, scl

    def pin(self, section: str, key: str | None, value: Any, what: str = "") -> int:
        if not _is_int(value):
            raise self.error(
                section, key, f"pin must be a BCM GPIO number {PIN_MIN} to {PIN_MAX}, got {value!r}"
            )
        if not PIN_MIN <= value <= PIN_MAX:
            raise self.error(
                section,
                key,
                f"GPIO {value} is outside {PIN_MIN}-{PIN_MAX}: use a BCM GPIO number from "
                f"{PIN_MIN} to {PIN_MAX} (GPIO 0 and 1 belong to the HAT ID EEPROM)",
            )
        here = what or f"[{section}] '{key}'"
        if value in self.used:
            raise self.error(
                section,
                key,
                f"GPIO {value} is already used by {self.used[value]}: each pin serves one "
                "input or one light",
            )
        self.used[value] = here
        return value

    def flag(self, section: str, key: str, opts: Mapping[str, Any], name: str) -> bool | None:
        if name not in opts:
            return None
        value = opts[name]
        if not isinstance(value, bool):
            raise self.error(section, key, f"'{name}' must be true or false, got {value!r}")
        return value

    def ms(self, section: str, key: str, value: Any, low: int, high: int) -> int:
        if not _is_int(value) or not low <= value <= high:
            raise self.error(
                section, key, f"must be a whole number of ms from {low} to {high}, got {value!r}"
            )
        return value

    def input(self, section: str, key: str, raw: Any, debounce_ms: int, **what: Any) -> InputPin:
        opts = self.options(section, key, raw, INPUT_OPTIONS)
        pin, expander, line = self.place(section, key, opts)
        pull_up = self.flag(section, key, opts, "pull_up")
        active_high = self.flag(section, key, opts, "active_high")
        if pull_up is not None and active_high is not None:
            raise self.error(
                section,
                key,
                "give 'pull_up' (internal resistor: true = pull-up, active low; false = "
                "pull-down, active high) or 'active_high' (no internal resistor), not both",
            )
        if pull_up is None and active_high is None:
            pull_up = True
        if expander and pull_up is False:
            raise self.error(
                section,
                key,
                "an MCP23017 has pull-ups only: for a sensor that drives its line high when "
                "active, fit a pull-down resistor and write active_high = true",
            )
        if pin in FIXED_PULL_UP and pull_up is not True:
            raise self.error(
                section,
                key,
                f"GPIO {pin} has a pull-up resistor fitted on the Pi: an input there must be "
                "active low with pull_up = true (or use another pin)",
            )
        if "debounce_ms" in opts:
            debounce_ms = self.ms(section, key, opts["debounce_ms"], 0, 5000)
        return InputPin(
            section=section.removeprefix("gpio."),
            key=key,
            pin=pin,
            pull_up=pull_up,
            active_high=(not pull_up) if pull_up is not None else bool(active_high),
            debounce_ms=debounce_ms,
            expander=expander,
            line=line,
            **what,
        )

    def light(self, key: str, raw: Any, light: str, safe: str) -> LightPin:
        section = "gpio.lights"
        opts = self.options(section, key, raw, LIGHT_OPTIONS)
        pin, expander, line = self.place(section, key, opts)
        active_high = self.flag(section, key, opts, "active_high")
        if "safe" in opts:
            safe = opts["safe"]
            if safe not in LIGHT_STATES:
                raise self.error(
                    section, key, f"'safe' must be one of {', '.join(LIGHT_STATES)}, got {safe!r}"
                )
        active = True if active_high is None else active_high
        return LightPin(key, light, pin, active, safe, expander, line)


def parse_pin_map(
    raw: Any, *, circles: Iterable[str], spots: int = 7, source: str = "config"
) -> PinMap:
    """Check and read a ``[gpio]`` table (as parsed from TOML).

    ``circles`` are the game's bet circles (:func:`controller.table.table_circles`):
    a sensor or light for any other circle is an error. ``spots`` is the table's
    number of spots (1 to 7).
    """
    reader = _Reader(source, tuple(circles), spots)
    gpio = reader.table(raw, "gpio")
    allowed = (*OPTIONS, *DEFAULTS, *SECTIONS)
    unknown = sorted(set(gpio) - set(allowed))
    if unknown:
        raise reader.error(
            "gpio", unknown[0], f"unknown key; keys of [gpio] are: {', '.join(allowed)}"
        )
    numbers = {}
    for name, default in DEFAULTS.items():
        low, high = LIMITS[name]
        numbers[name] = reader.ms("gpio", name, gpio.get(name, default), low, high)
    game = gpio.get("game", "")
    if not isinstance(game, str):
        raise reader.error("gpio", "game", f"must be a game profile's name, got {game!r}")

    buses = [reader.bus(k, v) for k, v in reader.table(gpio.get("i2c", {}), "gpio.i2c").items()]
    expanders = reader.table(gpio.get("expanders", {}), "gpio.expanders")
    if any(reader.table(v, "gpio.expanders").get("bus", 1) == 1 for v in expanders.values()):
        for pin, what in BUS1_PINS.items():  # an expander on bus 1: GPIO 2/3 are the bus
            reader.pin("gpio.expanders", None, pin, f"I2C bus 1 {what} (the expanders' bus)")
    for key, value in expanders.items():
        reader.expanders[key] = reader.expander(key, value)

    inputs: list[InputPin] = []
    section = "gpio.sensors"
    for key, value in reader.table(gpio.get("sensors", {}), section).items():
        spot_text, dot, circle = key.partition(".")
        if not dot or not circle:
            raise reader.error(
                section,
                key,
                'a sensor key is SPOT.CIRCLE, e.g. "1.main" or "3.lucky_ladies"'
                + _quote_hint(value),
            )
        spot = reader.spot(section, key, spot_text)
        circle = reader.circle(section, key, circle)
        debounce = numbers["sensor_debounce_ms"]
        inputs.append(
            reader.input(section, key, value, debounce, kind="sensor", spot=spot, circle=circle)
        )

    section = "gpio.console"
    console_keys = (*BUTTONS, *(f"{b}.N" for b in SPOT_BUTTONS), *SWITCHES)
    for key, value in reader.table(gpio.get("console", {}), section).items():
        name, dot, spot_text = key.partition(".")
        debounce = numbers["button_debounce_ms"]
        if key in BUTTONS:
            inputs.append(reader.input(section, key, value, debounce, kind="button", name=key))
        elif key in SWITCHES:
            inputs.append(reader.input(section, key, value, debounce, kind="switch", name=key))
        elif name in SPOT_BUTTONS and dot:
            spot = reader.spot(section, key, spot_text)
            inputs.append(
                reader.input(section, key, value, debounce, kind="button", name=name, spot=spot)
            )
        else:
            hint = f' ({name} is one per spot: "{name}.1")' if name in SPOT_BUTTONS else ""
            raise reader.error(
                section,
                key,
                f"unknown console input{hint}; use one of: {', '.join(console_keys)} "
                f"(N a spot, 1 to {spots})" + _quote_hint(value),
            )

    lights: list[LightPin] = []
    section = "gpio.lights"
    for key, value in reader.table(gpio.get("lights", {}), section).items():
        if key in TABLE_LIGHTS:
            lights.append(reader.light(key, value, key, SAFE_DEFAULTS[key]))
            continue
        spot_text, dot, circle = key.partition(".")
        if not dot or not circle:
            raise reader.error(
                section,
                key,
                f'a light is {", ".join(TABLE_LIGHTS)}, SPOT.CIRCLE ("1.main") or '
                'SPOT.action ("1.action")' + _quote_hint(value),
            )
        spot = reader.spot(section, key, spot_text)
        circle = reader.circle(section, key, circle, extra=("action",))
        lights.append(reader.light(key, value, f"spot{spot}.{circle}", "off"))

    return PinMap(
        tuple(inputs),
        tuple(lights),
        **numbers,
        source=source,
        expanders=tuple(reader.expanders.values()),
        buses=tuple(buses),
        game=game,
    )


def wiring_gaps(pin_map: PinMap, circles: Iterable[str], spots: int) -> list[tuple[str, str, str]]:
    """What a complete table lacks, as (section, key, problem): every spot 1 to ``spots``
    needs a sensor and a light for each of ``circles`` and its action light.
    ``check-config`` refuses a pin map with any (a spot left unwired); the daemon runs
    one, e.g. a test bench, and lists unwired lights in health."""
    sensors = {(p.spot, p.circle) for p in pin_map.inputs if p.kind == "sensor"}
    lights = {p.light for p in pin_map.lights}
    gaps = []
    for spot in range(1, spots + 1):
        no_sensor = [c for c in circles if (spot, c) not in sensors]
        no_light = [c for c in (*circles, "action") if f"spot{spot}.{c}" not in lights]
        for section, missing, what in (
            ("gpio.sensors", no_sensor, "sensor"),
            ("gpio.lights", no_light, "light"),
        ):
            if missing:
                keys = ", ".join(f'"{spot}.{c}"' for c in missing)
                gaps.append(
                    (
                        section,
                        f"{spot}.{missing[0]}",
                        f"missing: spot {spot} is left unwired, it has no {what} for "
                        f"{', '.join(missing)} (add {keys}; every circle of the game at every "
                        "spot needs a sensor and a light, and each spot its action light)",
                    )
                )
    return gaps


def load_pin_map(path: str | Path, *, circles: Iterable[str], spots: int = 7) -> PinMap:
    """Read the ``[gpio]`` table of the TOML file ``path``."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PinMapError(str(path), "gpio", None, f"cannot read the file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PinMapError(str(path), "gpio", None, f"not valid TOML: {exc}") from None
    if "gpio" not in data:
        raise PinMapError(str(path), "gpio", None, "the file has no [gpio] table")
    return parse_pin_map(data["gpio"], circles=circles, spots=spots, source=str(path))
