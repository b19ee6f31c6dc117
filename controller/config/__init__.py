"""The table controller's config file (``config/table.example.toml``, ``docs/config.md``).

One TOML file per table, read once at start-up and checked the way Klipper's
``configfile`` checks a printer: typed getters with ranges, every error naming the
file, section and key and saying what is allowed, an unknown section or key an error
(a typo never passes silently). :func:`load_table_config` collects **every** error
it finds, across sections, and raises them together as :class:`ConfigErrors` (the
pin map is checked by :func:`drivers.gpio_pins.parse_pin_map`, which stops at its
first error: that is the ``[gpio]`` section's error).

What :func:`load_table_config` checks needs no file but the config and the game
profile: it is testable anywhere. The files the config names are checked by
:func:`check_paths` (the MQTT password file readable, not empty, and no more open than
the installer's 0640 root:table-controller, the CA certificate readable, ``data_dir`` a
writable folder or creatable): ``table-controller run`` and ``check-config`` call it after
loading; ``check-config --no-files`` skips it to check a file away from its machine.
:func:`check_config_file` checks the table side's config kinds (table, gpio pin map, game
profile); a jackpot controller's config is told apart and referred to ``jackpot-controller
check-config`` (the other product reads it).

A relative path in the file (``data_dir``, ``password_file``, ``tls_ca``, ``socket``,

The code is a package, one module a concern (issue 28 item 7): ``loader`` (the one
loader: :data:`KEYS`, :class:`TableConfig`, :func:`load_table_config`,
:func:`check_paths`), a module per section (``table``, ``readers`` for [shoe] and
[camera], ``gpio`` for [gpio] and [control], ``link`` for [mqtt], ``web``, ``journal``),
``base`` (errors, typed getters) and ``check`` (``check-config`` of any kind). Everything
is imported from here, ``from controller.config import load_table_config``, as before.
"""

from __future__ import annotations

from controller.config.base import REQUIRED, ConfigError, ConfigErrors
from controller.config.check import KINDS, ConfigCheck, check_config, check_config_file
from controller.config.clock import ClockConfig
from controller.config.gpio import (
    DEFAULT_SOCKET,
    PIN_FACTORIES,
    UNIX_SOCKET_MAX,
    ControlConfig,
    GpioConfig,
)
from controller.config.journal import GAMING_DAY_START, JournalConfig
from controller.config.link import (
    DEFAULT_PASSWORD_FILE,
    DEFAULT_SIGNING_KEY,
    SERVICE_USER,
    MqttConfig,
    link_keys,
    read_password,
)
from controller.config.loader import (
    KEYS,
    OPTIONAL_SECTIONS,
    REQUIRED_SECTIONS,
    TableConfig,
    check_paths,
    load_table_config,
    parse_table_config,
)
from controller.config.readers import SERIAL_URL, CameraConfig, ShoeConfig
from controller.config.table import DEFAULT_DATA_DIR, DEFAULT_SETTINGS, PROPERTY
from controller.config.web import WEB_PORT_MIN, WebConfig

__all__ = [
    "DEFAULT_DATA_DIR",
    "DEFAULT_PASSWORD_FILE",
    "DEFAULT_SETTINGS",
    "DEFAULT_SIGNING_KEY",
    "DEFAULT_SOCKET",
    "GAMING_DAY_START",
    "KEYS",
    "KINDS",
    "OPTIONAL_SECTIONS",
    "PIN_FACTORIES",
    "PROPERTY",
    "REQUIRED",
    "REQUIRED_SECTIONS",
    "SERIAL_URL",
    "SERVICE_USER",
    "UNIX_SOCKET_MAX",
    "WEB_PORT_MIN",
    "CameraConfig",
    "ClockConfig",
    "ConfigCheck",
    "ConfigError",
    "ConfigErrors",
    "ControlConfig",
    "GpioConfig",
    "JournalConfig",
    "MqttConfig",
    "ShoeConfig",
    "TableConfig",
    "WebConfig",
    "check_config",
    "check_config_file",
    "check_paths",
    "link_keys",
    "load_table_config",
    "parse_table_config",
    "read_password",
]
