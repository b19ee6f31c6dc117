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

An input is a bare BCM number (internal pull-up, the contact or sensor output
pulls the pin to ground when active) or a table with ``pin`` and either
``pull_up`` (``true``: pull-up, active low; ``false``: pull-down, active high)
or ``active_high`` (no internal resistor: the board drives the pin), and an
optional ``debounce_ms``. A light is a bare number (active high) or a table with
``pin``, ``active_high`` and ``safe`` (its state on a fault: on, off, blink).

:func:`parse_pin_map` checks everything at start-up: an unknown key, a pin
used twice, a pin outside 2-27, a circle the game has no sensor for, a wrong
type. The error names the section and key and says what is allowed.
"""

from __future__ import annotations

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

SWITCHES = ("supervisor_key",)
"""Console switches: an event when turned on and when turned off."""

TABLE_LIGHTS = ("lockout", "alarm")
"""Lights that belong to the table, not to a spot (``alarm`` is the tower light)."""

SAFE_DEFAULTS = {"lockout": "on", "alarm": "blink"}
"""Safe state of the table lights; every spot light is off in the safe state."""

DEFAULTS = {"button_debounce_ms": 30, "sensor_debounce_ms": 150, "blink_ms": 500}
LIMITS = {"button_debounce_ms": (0, 2000), "sensor_debounce_ms": (0, 5000), "blink_ms": (10, 5000)}
SECTIONS = ("sensors", "console", "lights")

INPUT_OPTIONS = ("pin", "pull_up", "active_high", "debounce_ms")
LIGHT_OPTIONS = ("pin", "active_high", "safe")


class PinMapError(TableControllerError, ValueError):
    """A ``[gpio]`` pin map with a wrong key or value; names source, section and key."""

    def __init__(self, source: str, section: str, key: str | None, problem: str):
        self.source = source
        self.section = section
        self.key = key
        self.problem = problem
        where = f"[{section}]" + (f" key '{key}'" if key is not None else "")
        super().__init__(f"{source}: {where}: {problem}")


@dataclass(frozen=True, slots=True)
class InputPin:
    """One input. ``kind``: ``sensor`` (``spot``, ``circle``), ``button`` (``name``,
    ``spot`` for per-spot buttons else 0) or ``switch`` (``name``).

    ``pull_up`` is gpiozero's: True (internal pull-up, active low), False
    (pull-down, active high) or None (no internal resistor; ``active_high`` says
    which level is active).
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


@dataclass(frozen=True, slots=True)
class LightPin:
    """One light output. ``light`` is the table's name for it (``spot3.main``,
    ``spot3.action``, ``lockout``, ``alarm``); ``safe`` its state on a fault."""

    key: str
    light: str
    pin: int
    active_high: bool
    safe: str


@dataclass(frozen=True, slots=True)
class PinMap:
    inputs: tuple[InputPin, ...]
    lights: tuple[LightPin, ...]
    button_debounce_ms: int = DEFAULTS["button_debounce_ms"]
    sensor_debounce_ms: int = DEFAULTS["sensor_debounce_ms"]
    blink_ms: int = DEFAULTS["blink_ms"]
    source: str = "config"

    def pins(self) -> dict[int, str]:
        """BCM pin -> ``[gpio.section] key``, for wiring checks and the diagnostics page."""
        out = {p.pin: f"[gpio.{p.section}] {p.key}" for p in self.inputs}
        out.update({p.pin: f"[gpio.lights] {p.key}" for p in self.lights})
        return dict(sorted(out.items()))


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
        """A bare pin number or an inline table of ``allowed`` options (``pin`` required)."""
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
        if "pin" not in raw:
            raise self.error(section, key, "needs 'pin', the BCM GPIO number")
        return dict(raw)

    def pin(self, section: str, key: str, value: Any) -> int:
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
        here = f"[{section}] '{key}'"
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
        pin = self.pin(section, key, opts["pin"])
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
            **what,
        )

    def light(self, key: str, raw: Any, light: str, safe: str) -> LightPin:
        section = "gpio.lights"
        opts = self.options(section, key, raw, LIGHT_OPTIONS)
        pin = self.pin(section, key, opts["pin"])
        active_high = self.flag(section, key, opts, "active_high")
        if "safe" in opts:
            safe = opts["safe"]
            if safe not in LIGHT_STATES:
                raise self.error(
                    section, key, f"'safe' must be one of {', '.join(LIGHT_STATES)}, got {safe!r}"
                )
        return LightPin(key, light, pin, True if active_high is None else active_high, safe)


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
    allowed = (*DEFAULTS, *SECTIONS)
    unknown = sorted(set(gpio) - set(allowed))
    if unknown:
        raise reader.error(
            "gpio", unknown[0], f"unknown key; keys of [gpio] are: {', '.join(allowed)}"
        )
    numbers = {}
    for name, default in DEFAULTS.items():
        low, high = LIMITS[name]
        numbers[name] = reader.ms("gpio", name, gpio.get(name, default), low, high)

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

    return PinMap(tuple(inputs), tuple(lights), **numbers, source=source)


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
