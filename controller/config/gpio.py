"""``[gpio]``: the pin map of bet sensors, console and lights (``drivers/gpio_pins.py``,
``hardware/gpio.md``), checked against the game's circles and the table's spots; and
``[control]``, the console keypad's socket (simulated pins are driven through it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from controller.config.base import ConfigError, Section
from controller.errors import ProfileError
from controller.games import available_games, load_game
from controller.table.machine import table_circles
from drivers.gpio_pins import DEFAULTS as PIN_MAP_DEFAULTS
from drivers.gpio_pins import OPTIONS as PIN_MAP_OPTIONS
from drivers.gpio_pins import SECTIONS as PIN_MAP_SECTIONS
from drivers.gpio_pins import PinMap, PinMapError, parse_pin_map

PIN_FACTORIES = ("default", "mock", "lgpio", "rpigpio", "pigpio", "native")
"""gpiozero pin factories: ``default`` leaves the choice to gpiozero
(``GPIOZERO_PIN_FACTORY``, else the first library found); ``mock`` is gpiozero's
MockFactory, for a simulation without hardware."""

GPIO_KEYS = ("pin_factory", *PIN_MAP_OPTIONS, *PIN_MAP_DEFAULTS, *PIN_MAP_SECTIONS)
CONTROL_KEYS = ("socket",)

DEFAULT_SOCKET = "/run/table-controller/control.sock"
UNIX_SOCKET_MAX = 107
"""Bytes in a unix socket path (``sun_path`` is 108 with its NUL)."""


@dataclass(frozen=True, slots=True)
class GpioConfig:
    pin_factory: str
    pin_map: PinMap


@dataclass(frozen=True, slots=True)
class ControlConfig:
    socket: Path = Path(DEFAULT_SOCKET)


def read_gpio(
    sec: Section,
    circles: tuple[str, ...],
    spots: int,
    circles_note: str,
    game: str | None = None,
) -> GpioConfig | None:
    """``game``: the [table] game's profile name (None: it did not load); a pin map's own
    ``game`` key must name it."""
    factory = sec.text("pin_factory", "default", choices=PIN_FACTORIES)
    sec.check_unknown()
    raw = {k: v for k, v in sec.raw.items() if k in GPIO_KEYS and k != "pin_factory"}
    try:
        pin_map = parse_pin_map(raw, circles=circles, spots=spots, source=sec.source)
    except PinMapError as exc:
        sec.errors.append(ConfigError(exc.source, exc.section, exc.key, exc.problem + circles_note))
        return None
    if pin_map.game and game is not None and pin_map.game != game:
        sec.error(
            "game",
            f"this pin map is wired for {pin_map.game!r} but [table] game is {game!r}: use the "
            f"pin map of {game} (config/gpio.*.toml) or remove the key",
        )
        return None
    return None if factory is None else GpioConfig(factory, pin_map)


def all_circles() -> tuple[str, ...]:
    circles: dict[str, None] = {}
    for name in available_games():
        try:
            circles.update(dict.fromkeys(table_circles(load_game(name))))
        except ProfileError:
            continue
    return tuple(circles) or ("main",)


def read_control(sec: Section, base: Path) -> ControlConfig | None:
    socket = sec.path("socket", DEFAULT_SOCKET, base, f'"{DEFAULT_SOCKET}"')
    if socket is not None and len(os.fsencode(socket)) > UNIX_SOCKET_MAX:
        sec.error(
            "socket",
            f"{str(socket)!r} is {len(os.fsencode(socket))} bytes; a unix socket path is at most "
            f"{UNIX_SOCKET_MAX}: use a shorter one",
        )
        socket = None
    sec.check_unknown()
    return None if socket is None else ControlConfig(socket)
