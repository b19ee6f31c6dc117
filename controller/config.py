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
a ``game`` given as a ``.toml`` path) is taken from the folder of the config file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import ipaddress
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import time as time_of_day
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controller.errors import ProfileError
from controller.games import available_games, find_game, load_game
from controller.journal.rotation import GamingDay
from controller.link.brokers import (
    MAX_BROKERS,
    BrokerAddressError,
    format_address,
    parse_address,
)
from controller.link.messages import RESERVED_PREFIXES, TABLE_ID
from controller.link.password_file import password_mode_problem
from controller.link.signing import (
    Signer,
    SigningKeyError,
    Verifier,
    check_key_id,
    load_signing_key,
    parse_public_key,
)
from controller.rules.pays import format_cents, parse_money
from controller.rules.profile import SECTIONS as PROFILE_SECTIONS
from controller.rules.profile import HouseRules, parse_profile
from controller.table.machine import table_circles
from controller.table.settings import CARD_SOURCE_MODES, SettingsError, TableSettings
from drivers.gpio_pins import DEFAULTS as PIN_MAP_DEFAULTS
from drivers.gpio_pins import OPTIONS as PIN_MAP_OPTIONS
from drivers.gpio_pins import SECTIONS as PIN_MAP_SECTIONS
from drivers.gpio_pins import PinMap, PinMapError, parse_pin_map, wiring_gaps


class ConfigError(ProfileError):
    """One problem in a config file: ``"FILE: [section] key 'k': problem"``."""


class ConfigErrors(ConfigError):
    """Every problem found in a config file; ``errors`` lists them, the message has one
    per line."""

    def __init__(self, errors: Iterable[ConfigError]):
        self.errors = list(errors)
        if not self.errors:
            raise ValueError("ConfigErrors needs at least one error")
        first = self.errors[0]
        message = "\n".join(str(error) for error in self.errors)
        self.source = first.source
        if len(self.errors) == 1:
            self.section, self.key, self.problem = first.section, first.key, first.problem
        else:
            self.section, self.key, self.problem = "", None, message
        Exception.__init__(self, message)


PIN_FACTORIES = ("default", "mock", "lgpio", "rpigpio", "pigpio", "native")
"""gpiozero pin factories: ``default`` leaves the choice to gpiozero
(``GPIOZERO_PIN_FACTORY``, else the first library found); ``mock`` is gpiozero's
MockFactory, for a simulation without hardware."""

REQUIRED = object()
"""A key's default meaning: the key must be given."""

KEYS: dict[str, tuple[str, ...]] = {
    "table": (
        "id",
        "property",
        "game",
        "spots",
        "main_minimum",
        "main_maximum",
        "side_minimum",
        "side_maximum",
        "card_source",
        "data_dir",
        "tick_ms",
        "checkpoint_every_events",
    ),
    "shoe": (
        "url",
        "heartbeat_timeout_ms",
        "reconnect_min_ms",
        "reconnect_max_ms",
        "fault_after_s",
    ),
    "gpio": ("pin_factory", *PIN_MAP_OPTIONS, *PIN_MAP_DEFAULTS, *PIN_MAP_SECTIONS),
    "camera": ("enabled", "source", "forget_after_frames", "fault_after_s"),
    "mqtt": (
        "host",
        "port",
        "username",
        "password_file",
        "tls_ca",
        "keepalive_s",
        "window",
        "link_fault_after_s",
        "ack_timeout_s",
        "signing_key",
        "key_id",
        "controller_keys",
    ),
    "web": ("bind", "port", "password_hash", "dealer_addresses"),
    "control": ("socket",),
    "journal": ("gaming_day_starts", "timezone", "keep_days", "rotate_on_upgrade"),
}
"""Every section and its keys, in file order."""

REQUIRED_SECTIONS = ("table", "shoe", "gpio", "mqtt")
OPTIONAL_SECTIONS = ("camera", "web", "control", "journal")

DEFAULT_SETTINGS = TableSettings()
DEFAULT_DATA_DIR = "/var/lib/table-controller"
DEFAULT_PASSWORD_FILE = "/etc/table-controller/mqtt-password"
DEFAULT_SIGNING_KEY = "/etc/table-controller/link-signing.key"
DEFAULT_SOCKET = "/run/table-controller/control.sock"
PROPERTY = re.compile(r"^[a-z]{2,8}$")
SERIAL_URL = re.compile(r"^([a-z][a-z0-9]*)://")
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")
UNIX_SOCKET_MAX = 107
"""Bytes in a unix socket path (``sun_path`` is 108 with its NUL)."""

KINDS = ("table", "jackpot", "gpio", "game")


# -- the config ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShoeConfig:
    url: str
    heartbeat_timeout_ms: int = 3000
    reconnect_min_ms: int = 200
    reconnect_max_ms: int = 5000
    fault_after_s: int = 30


@dataclass(frozen=True, slots=True)
class GpioConfig:
    pin_factory: str
    pin_map: PinMap


@dataclass(frozen=True, slots=True)
class CameraConfig:
    enabled: bool = False
    source: str = "/dev/video0"
    forget_after_frames: int = 5
    fault_after_s: int = 30


@dataclass(frozen=True, slots=True)
class MqttConfig:
    host: str
    port: int
    username: str
    password_file: Path
    tls_ca: Path | None
    keepalive_s: int = 30
    window: int = 256
    link_fault_after_s: int = 300
    ack_timeout_s: int = 30
    #: This table's Ed25519 private key file (``table-controller link-key``) and its key id,
    #: which the jackpot controller's config lists with the public key.
    signing_key: Path = Path(DEFAULT_SIGNING_KEY)
    key_id: str = ""
    #: The jackpot controller's public keys this table trusts: key id -> base64 text.
    controller_keys: tuple[tuple[str, str], ...] = ()
    #: Every broker, (host, port), the first preferred (``host`` given as a list; else the one
    #: ``(host, port)``): controller/link/brokers.py, docs/jackpot/brokers.md.
    brokers: tuple[tuple[str, int], ...] = ()


WEB_PORT_MIN = 1024
"""The lowest ``[web] port``: the service runs without CAP_NET_BIND_SERVICE (docs/web.md)."""


@dataclass(frozen=True, slots=True)
class WebConfig:
    """``enabled``: the config has a ``[web]`` section (no section: no web server)."""

    bind: str = "127.0.0.1"
    port: int = 8080
    password_hash: str = ""
    enabled: bool = False
    #: Where the dealer's screen connects from (its connections are never closed for a
    #: stranger's; docs/web.md, "Limits"): the Pi's own loopback unless the config says.
    dealer_addresses: tuple[str, ...] = ("127.0.0.1", "::1")


@dataclass(frozen=True, slots=True)
class ControlConfig:
    socket: Path = Path(DEFAULT_SOCKET)


@dataclass(frozen=True, slots=True)
class JournalConfig:
    """The journal's gaming-day files (``docs/journal.md``): ``gaming_day`` says when a
    casino's day starts and in which zone; archives older than ``keep_days`` days are
    removed (never one holding an unacknowledged message); ``rotate_on_upgrade``: a new
    file at the first moment between rounds after the software version changed."""

    gaming_day: GamingDay = field(default_factory=GamingDay)
    keep_days: int = 400
    rotate_on_upgrade: bool = True


@dataclass(frozen=True, slots=True)
class TableConfig:
    """A checked table config. Money is integer cents, times whole units named in the field.

    ``source`` is the file as named to :func:`load_table_config`; ``checksum`` the sha256
    (hex) of its bytes; ``game`` the ``[table] game`` text as written, ``rules`` its profile.
    """

    source: str
    checksum: str
    table_id: str
    property: str
    game: str
    rules: HouseRules
    settings: TableSettings
    data_dir: Path
    tick_ms: int
    shoe: ShoeConfig
    gpio: GpioConfig
    camera: CameraConfig
    mqtt: MqttConfig
    web: WebConfig
    control: ControlConfig
    #: a journal checkpoint at each round's end and at least every this many events
    checkpoint_every_events: int = 1000
    journal: JournalConfig = field(default_factory=JournalConfig)

    @property
    def journal_path(self) -> Path:
        return self.data_dir / "journal.sqlite"

    @property
    def gaming_day(self) -> GamingDay:
        """When the journal starts a new gaming-day file (``[journal]``)."""
        return self.journal.gaming_day

    def summary(self) -> str:
        """One line for ``check-config`` and the log: what this table is."""
        s = self.settings
        transport = "TLS" if self.mqtt.tls_ca else "plain TCP"
        return (
            f"table {self.table_id}, game {self.game}, {s.spots} spots, "
            f"main {format_cents(s.main_minimum, whole=True)}-"
            f"{format_cents(s.main_maximum, whole=True)}, "
            f"side {format_cents(s.side_minimum, whole=True)}-"
            f"{format_cents(s.side_maximum, whole=True)}, cards from {s.card_source}, "
            f"{self.gpio.pin_map.describe()} ({self.gpio.pin_factory}), "
            f"{_brokers_text(self.mqtt)} {transport}, "
            f"sha256 {self.checksum[:12]}"
        )


def _brokers_text(mqtt: MqttConfig) -> str:
    if len(mqtt.brokers) > 1:
        return "brokers " + ", ".join(format_address(b) for b in mqtt.brokers)
    return f"broker {mqtt.host}:{mqtt.port}"


# -- reading one section ---------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Section:
    """Typed getters over one TOML table; problems go to ``errors`` and the getter
    returns None, so the rest of the file is still checked."""

    def __init__(self, source: str, name: str, raw: Any, errors: list[ConfigError]):
        self.source = source
        self.name = name
        self.errors = errors
        self.raw: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.present = raw is not None
        if raw is not None and not isinstance(raw, dict):
            self.error(None, f"must be a table ([{name}] and its keys), got {raw!r}")

    def error(self, key: str | None, problem: str) -> None:
        self.errors.append(ConfigError(self.source, self.name, key, problem))

    def check_unknown(self) -> None:
        allowed = KEYS[self.name]
        for key in self.raw:
            if key not in allowed:
                self.error(key, f"unknown key; keys of [{self.name}] are: {', '.join(allowed)}")

    def _get(self, key: str, default: Any, example: str) -> tuple[bool, Any]:
        assert key in KEYS[self.name], key
        if key in self.raw:
            return True, self.raw[key]
        if default is REQUIRED:
            self.error(key, f"missing; it is required, e.g. {key} = {example}")
            return False, None
        return False, default

    def integer(self, key: str, default: Any, low: int, high: int, unit: str = "") -> int | None:
        given, value = self._get(key, default, str(low if default is REQUIRED else default))
        if not given:
            return value
        if not _is_int(value) or not low <= value <= high:
            what = f" ({unit})" if unit else ""
            self.error(key, f"must be a whole number from {low} to {high}{what}, got {value!r}")
            return None
        return value

    def boolean(self, key: str, default: Any) -> bool | None:
        given, value = self._get(key, default, "true")
        if given and not isinstance(value, bool):
            self.error(key, f"must be true or false, got {value!r}")
            return None
        return value

    def text(
        self,
        key: str,
        default: Any,
        *,
        example: str = '"..."',
        choices: tuple[str, ...] | None = None,
        empty: bool = False,
    ) -> str | None:
        given, value = self._get(key, default, example)
        if not given:
            return value
        if choices is not None:
            if value not in choices:
                self.error(key, f"must be one of {', '.join(choices)}; got {value!r}")
                return None
            return value
        if not isinstance(value, str):
            self.error(key, f"must be text in quotes, e.g. {key} = {example}; got {value!r}")
            return None
        if not empty and not value.strip():
            self.error(key, f"must not be empty, e.g. {key} = {example}")
            return None
        return value

    def cents(self, key: str, default: Any, example: str) -> int | None:
        given, value = self._get(key, default, example)
        if not given:
            return value
        allowed = (
            'write dollars as text like "$10", "$1,000" or "$2.50", or whole cents as a '
            "number (1000 is $10)"
        )
        try:
            amount = parse_money(value)
        except ValueError:
            self.error(key, f"{value!r} is not an amount: {allowed}")
            return None
        if amount.denominator != 1 or amount < 1:
            self.error(key, f"{value!r} must be at least $0.01, in whole cents: {allowed}")
            return None
        return int(amount)

    def path(self, key: str, default: Any, base: Path, example: str) -> Path | None:
        value = self.text(key, default, example=example)
        if value is None:
            return None
        return _resolve(value, base)


def _resolve(text: str, base: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base / path


def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- the sections ----------------------------------------------------------------------------


def _read_table(sec: _Section, base: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    table_id = sec.text("id", REQUIRED, example='"hcm-bj-07"')
    if table_id is not None:
        shape = (
            "lower-case letters, digits and '-': the property (2-8 letters), then 1 to 3 "
            "segments of up to 16 letters or digits, like 'hcm-bj-07'"
        )
        if not TABLE_ID.match(table_id):
            sec.error("id", f"{table_id!r} is not a table id: {shape}")
            table_id = None
        elif table_id.split("-", 1)[0] in RESERVED_PREFIXES:
            sec.error(
                "id",
                f"{table_id!r} starts with a name kept for the broker's own users "
                f"({', '.join(sorted(RESERVED_PREFIXES))}): use the property id",
            )
            table_id = None
    out["table_id"] = table_id
    prop = sec.text("property", REQUIRED, example='"hcm"')
    if prop is not None:
        if not PROPERTY.match(prop):
            sec.error("property", f"{prop!r} is not a property id: 2 to 8 lower-case letters")
            prop = None
        elif table_id is not None and table_id.split("-", 1)[0] != prop:
            sec.error(
                "property",
                f"{prop!r} is not the first segment of the table id {table_id!r} "
                f"({table_id.split('-', 1)[0]!r}): fix the id or the property",
            )
            prop = None
    out["property"] = prop
    game = sec.text("game", REQUIRED, example='"pa-standard"')
    out["game"] = game
    out["rules"] = None
    if game is not None:
        out["rules"] = _load_rules(sec, game, base)
    spots = sec.integer("spots", REQUIRED, 1, 7)
    limits = {
        "main_minimum": sec.cents("main_minimum", REQUIRED, '"$10"'),
        "main_maximum": sec.cents("main_maximum", REQUIRED, '"$1,000"'),
        "side_minimum": sec.cents("side_minimum", DEFAULT_SETTINGS.side_minimum, '"$1"'),
        "side_maximum": sec.cents("side_maximum", DEFAULT_SETTINGS.side_maximum, '"$100"'),
    }
    for low, high in (("main_minimum", "main_maximum"), ("side_minimum", "side_maximum")):
        if limits[low] is not None and limits[high] is not None and limits[low] > limits[high]:
            sec.error(
                low,
                f"{format_cents(limits[low], whole=True)} is above {high} "
                f"{format_cents(limits[high], whole=True)}: the minimum must be at most the "
                f"maximum",
            )
            limits[low] = None
    card_source = sec.text("card_source", "shoe", choices=CARD_SOURCE_MODES)
    out["settings"] = None
    if spots is not None and card_source is not None and None not in limits.values():
        try:
            out["settings"] = TableSettings(spots=spots, card_source=card_source, **limits)
        except SettingsError as exc:  # every check above should come first
            sec.error(None, str(exc))
    out["spots"] = spots
    out["card_source"] = card_source
    out["data_dir"] = sec.path("data_dir", DEFAULT_DATA_DIR, base, f'"{DEFAULT_DATA_DIR}"')
    out["tick_ms"] = sec.integer("tick_ms", 100, 10, 1000, "ms")
    out["checkpoint_every_events"] = sec.integer(
        "checkpoint_every_events", 1000, 10, 1_000_000, "journaled events"
    )
    sec.check_unknown()
    return out


def _load_rules(sec: _Section, game: str, base: Path) -> HouseRules | None:
    name = game
    if game.endswith(".toml"):
        name = str(_resolve(game, base))
    try:
        find_game(name)
    except ProfileError as exc:
        where = f"{game!r}" if name == game else f"{game!r} ({name})"
        sec.error("game", f"{where}: {exc.problem}")
        return None
    try:
        return load_game(name)
    except ProfileError as exc:
        sec.error("game", f"the profile {game!r} does not load: {exc}")
        return None


def _read_shoe(sec: _Section) -> ShoeConfig | None:
    url = sec.text("url", REQUIRED, example='"/dev/bj-shoe"')
    if url is not None:
        url = url.strip()
        match = SERIAL_URL.match(url)
        if match:
            scheme = match[1]
            if importlib.util.find_spec(f"serial.urlhandler.protocol_{scheme}") is None:
                sec.error(
                    "url",
                    f"pyserial has no {scheme}:// handler; use a device path (/dev/bj-shoe) or "
                    "socket://, rfc2217://, loop://, spy://, alt://, hwgrep://",
                )
                url = None
        elif not url.startswith("/"):
            sec.error(
                "url",
                f"{url!r} is neither a device path (/dev/bj-shoe, /dev/serial/by-id/...) nor a "
                "pyserial URL (socket://HOST:PORT, rfc2217://..., loop://, spy://...)",
            )
            url = None
    heartbeat = sec.integer("heartbeat_timeout_ms", 3000, 100, 60_000, "ms")
    low = sec.integer("reconnect_min_ms", 200, 10, 60_000, "ms")
    high = sec.integer("reconnect_max_ms", 5000, 10, 600_000, "ms")
    if low is not None and high is not None and high < low:
        sec.error(
            "reconnect_max_ms",
            f"{high} is below reconnect_min_ms {low}: the backoff grows from the minimum to "
            "the maximum",
        )
        high = None
    fault = sec.integer("fault_after_s", 30, 0, 3600, "s; 0: at once")
    sec.check_unknown()
    values = (url, heartbeat, low, high, fault)
    return None if None in values else ShoeConfig(*values)


def _read_gpio(
    sec: _Section,
    circles: tuple[str, ...],
    spots: int,
    circles_note: str,
    game: str | None = None,
) -> GpioConfig | None:
    """``game``: the [table] game's profile name (None: it did not load); a pin map's own
    ``game`` key must name it."""
    factory = sec.text("pin_factory", "default", choices=PIN_FACTORIES)
    sec.check_unknown()
    raw = {k: v for k, v in sec.raw.items() if k in KEYS["gpio"] and k != "pin_factory"}
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


def _read_camera(sec: _Section, card_source: str | None) -> CameraConfig | None:
    enabled = sec.boolean("enabled", False)
    index = sec.raw.get("source")
    if _is_int(index) and index >= 0:  # a device index may be written as a number
        source: str | None = str(index)
    else:
        source = sec.text("source", "/dev/video0", example='"/dev/video0"')
    frames = sec.integer("forget_after_frames", 5, 1, 1000, "frames")
    fault = sec.integer("fault_after_s", 30, 0, 3600, "s; 0: at once")
    if enabled is not None and card_source is not None:
        uses_camera = card_source in ("camera", "both")
        if uses_camera and not enabled:
            sec.error(
                "enabled",
                f"[table] card_source = {card_source!r} reads cards with the camera: set "
                "enabled = true (and source)",
            )
            enabled = None
        elif enabled and not uses_camera:
            sec.error(
                "enabled",
                "true, but [table] card_source = 'shoe' does not use the camera: set "
                "card_source = 'both' (the camera checks the shoe) or enabled = false",
            )
            enabled = None
    sec.check_unknown()
    values = (enabled, source, frames, fault)
    return None if None in values else CameraConfig(*values)


def _read_hosts(sec: _Section) -> tuple[str | None, list[str]]:
    """``host``: one host name, or a list of brokers (``"name"`` or ``"name:port"``), the
    first preferred. Returns (the first host text or None when wrong, every entry)."""
    given, raw = sec._get("host", REQUIRED, '"hcm.jackpot.example"')
    if given and isinstance(raw, list):
        example = '["central-a.example:8883", "central-b.example:8883"]'
        if not 1 <= len(raw) <= MAX_BROKERS or not all(isinstance(h, str) for h in raw):
            sec.error(
                "host",
                f"a list of 1 to {MAX_BROKERS} broker addresses in quotes, the first preferred, "
                f"e.g. host = {example}; got {raw!r}",
            )
            return None, []
        return raw[0], list(raw)
    host = sec.text("host", REQUIRED, example='"hcm.jackpot.example"')
    if host is not None and (host != host.strip() or " " in host or "://" in host):
        sec.error("host", f"{host!r} must be a host name or IP address alone, no scheme or port")
        host = None
    return host, [] if host is None else [host]


def _read_mqtt(sec: _Section, table_id: str | None, base: Path) -> MqttConfig | None:
    host, hosts = _read_hosts(sec)
    tls_text = sec.text("tls_ca", "", example='"/etc/table-controller/ca.crt"', empty=True)
    tls_ca = _resolve(tls_text, base) if tls_text else None
    port = sec.integer("port", 8883 if tls_text else 1883, 1, 65535)
    if port is not None and tls_text is not None:
        if tls_ca is not None and port == 1883:
            sec.error(
                "port",
                "1883 is MQTT's plain TCP port, but tls_ca turns TLS on: use 8883 (the "
                "broker's TLS listener)",
            )
            port = None
        elif tls_ca is None and port == 8883:
            sec.error(
                "port",
                "8883 is MQTT's TLS port, but tls_ca is empty (plain TCP): set tls_ca to the "
                "broker's CA file",
            )
            port = None
    brokers: list[tuple[str, int]] = []
    for entry in hosts:  # a wrong port was reported above: the hosts are still checked
        try:
            brokers.append(parse_address(entry, port or 1883))
        except BrokerAddressError as exc:
            sec.error("host", str(exc))
            host = None
    if len(set(brokers)) != len(brokers):
        sec.error("host", f"{hosts!r} lists a broker twice: list each broker once")
        host = None
    if host is not None and port is not None:
        host, port = brokers[0]
    for name, _ in brokers:
        if tls_text == "" and not _is_loopback(name):
            sec.error(
                "tls_ca",
                f"empty, so the password would cross the network to {name!r} in plain text: "
                "set tls_ca to the broker's CA file (plain TCP is for a broker on this machine "
                "only)",
            )
            tls_ca = None
            tls_text = None
            break
    username = sec.text("username", "", example='"hcm-bj-07"', empty=True)
    if username is not None and username.strip() != username:
        sec.error("username", f"{username!r} has spaces at an end")
        username = None
    if username == "":
        username = table_id
    password_file = sec.path(
        "password_file", DEFAULT_PASSWORD_FILE, base, f'"{DEFAULT_PASSWORD_FILE}"'
    )
    keepalive = sec.integer("keepalive_s", 30, 5, 3600, "s")
    window = sec.integer("window", 256, 1, 10_000, "messages")
    link_fault = sec.integer("link_fault_after_s", 300, 0, 86_400, "s; 0: never latch")
    ack_timeout = sec.integer("ack_timeout_s", 30, 1, 3600, "s")
    signing_key = sec.path("signing_key", DEFAULT_SIGNING_KEY, base, f'"{DEFAULT_SIGNING_KEY}"')
    key_id = sec.text("key_id", f"{table_id}-1" if table_id else "", example='"hcm-bj-07-1"')
    if key_id is not None:
        try:
            check_key_id(key_id)
        except SigningKeyError as exc:
            sec.error("key_id", str(exc))
            key_id = None
    controller_keys = _read_controller_keys(sec)
    sec.check_unknown()
    values = (host, port, username, password_file, tls_text, keepalive, window)
    values += (link_fault, ack_timeout, signing_key, key_id, controller_keys)
    if None in values:
        return None
    return MqttConfig(
        host, port, username, password_file, tls_ca, keepalive, window, link_fault, ack_timeout,
        signing_key, key_id, controller_keys, tuple(brokers),
    )  # fmt: skip


def _read_controller_keys(sec: _Section) -> tuple[tuple[str, str], ...] | None:
    example = '{ "jackpot-1" = "BASE64 printed by jackpot-controller link-key" }'
    given, raw = sec._get("controller_keys", {}, example)
    if not given:
        return ()  # link_keys() refuses to start the link without one
    if not isinstance(raw, dict) or not raw:
        sec.error(
            "controller_keys",
            f"must list the jackpot controller's public keys, e.g. controller_keys = {example}",
        )
        return None
    keys = []
    for kid, text in raw.items():
        try:
            check_key_id(kid)
            parse_public_key(text)
        except SigningKeyError as exc:
            sec.error("controller_keys", f"key {kid!r}: {exc}")
            return None
        keys.append((kid, text.strip()))
    return tuple(keys)


def _read_web(sec: _Section) -> WebConfig | None:
    bind = sec.text("bind", "127.0.0.1", example='"127.0.0.1"')
    if bind is not None and bind not in LOOPBACK_NAMES:
        try:
            ipaddress.ip_address(bind)
        except ValueError:
            sec.error(
                "bind",
                f"{bind!r} is not an IP address: 127.0.0.1 (this machine only), the address of "
                "one interface, or 0.0.0.0 (every interface)",
            )
            bind = None
    port = sec.integer("port", 8080, 1, 65535)
    if port is not None and port < WEB_PORT_MIN:
        sec.error(
            "port",
            f"{port} is below {WEB_PORT_MIN}: the service has no capability to bind such a port "
            "(it would fail at start); use 8080 or another from 1024 to 65535",
        )
        port = None
    password_hash = sec.text("password_hash", "", example='"scrypt$..."', empty=True)
    if password_hash and not password_hash.startswith("scrypt$"):
        sec.error(
            "password_hash",
            'must be empty (the page is off) or a hash "scrypt$..." printed by '
            "`table-controller hash-password`, never the password itself",
        )
        password_hash = None
    elif password_hash:
        from controller.web.auth import PasswordHashError, parse_hash

        try:
            parse_hash(password_hash)
        except PasswordHashError as exc:
            sec.error("password_hash", str(exc).removeprefix("password_hash "))
            password_hash = None
    dealer = _read_dealer_addresses(sec)
    sec.check_unknown()
    values = (bind, port, password_hash, dealer)
    if None in values:
        return None
    return WebConfig(bind, port, password_hash, enabled=sec.present, dealer_addresses=dealer)


def _read_dealer_addresses(sec: _Section) -> tuple[str, ...] | None:
    """``dealer_addresses``: a list of IP addresses (each in its shortest form, an IPv4 one
    mapped into IPv6 as IPv4), at most 16; empty: no address is the dealer's screen."""
    default = ["127.0.0.1", "::1"]
    _, raw = sec._get("dealer_addresses", default, '["127.0.0.1", "::1"]')
    example = 'e.g. dealer_addresses = ["127.0.0.1", "::1"] (the kiosk browser on this Pi)'
    if not isinstance(raw, list) or len(raw) > 16 or not all(isinstance(a, str) for a in raw):
        sec.error(
            "dealer_addresses",
            f"must be a list of at most 16 IP addresses in quotes, {example}; got {raw!r}",
        )
        return None
    out: list[str] = []
    for text in raw:
        try:
            ip = ipaddress.ip_address(text.strip())
        except ValueError:
            sec.error(
                "dealer_addresses",
                f"{text!r} is not an IP address (no host names, no networks): {example}",
            )
            return None
        mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:10.7.0.21 is how a dual-stack
        out.append((mapped or ip).compressed)  # socket names 10.7.0.21: the same client
    return tuple(dict.fromkeys(out))


def _read_control(sec: _Section, base: Path) -> ControlConfig | None:
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


GAMING_DAY_START = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def _read_journal(sec: _Section) -> JournalConfig | None:
    starts: time_of_day | None = None
    _, raw = sec._get("gaming_day_starts", "06:00", '"06:00"')
    match = GAMING_DAY_START.match(raw.strip()) if isinstance(raw, str) else None
    if isinstance(raw, time_of_day) and raw.tzinfo is None:  # TOML's own local time, 06:00:00
        starts = raw.replace(second=0, microsecond=0)
    elif match:
        starts = time_of_day(int(match[1]), int(match[2]))
    else:
        sec.error(
            "gaming_day_starts",
            f'must be a local time of day "HH:MM" from "00:00" to "23:59", e.g. '
            f'gaming_day_starts = "06:00"; got {raw!r}',
        )
    zone = sec.text("timezone", "", example='"America/New_York"', empty=True)
    if zone:
        zone = zone.strip()
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            sec.error(
                "timezone",
                f"{zone!r} is not a time zone this system knows: give an IANA name such as "
                '"America/New_York" (`timedatectl list-timezones` lists them), or "" for the '
                "system's zone",
            )
            zone = None
    keep_days = sec.integer("keep_days", 400, 1, 3650, "days")
    on_upgrade = sec.boolean("rotate_on_upgrade", True)
    sec.check_unknown()
    if starts is None or zone is None or keep_days is None or on_upgrade is None:
        return None
    return JournalConfig(GamingDay(starts, zone or None), keep_days, on_upgrade)


def _all_circles() -> tuple[str, ...]:
    circles: dict[str, None] = {}
    for name in available_games():
        try:
            circles.update(dict.fromkeys(table_circles(load_game(name))))
        except ProfileError:
            continue
    return tuple(circles) or ("main",)


# -- loading ---------------------------------------------------------------------------------


def _read_toml(path: Path, source: str) -> tuple[dict[str, Any], bytes]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigErrors(
            [ConfigError(source, "", None, f"cannot read the file: {exc.strerror or exc}")]
        ) from None
    try:
        return tomllib.loads(data.decode("utf-8")), data
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text: {exc}"
    except tomllib.TOMLDecodeError as exc:
        problem = f"not valid TOML: {exc}"
    raise ConfigErrors([ConfigError(source, "", None, problem)])


def parse_table_config(
    data: dict[str, Any], source: str, *, base: Path, checksum: str = ""
) -> TableConfig:
    """Check parsed TOML ``data`` (see :func:`load_table_config`); relative paths are taken
    from ``base``."""
    errors: list[ConfigError] = []
    for name in data:
        if name not in KEYS:
            errors.append(
                ConfigError(
                    source,
                    name,
                    None,
                    f"unknown section; sections are: {', '.join(KEYS)} "
                    f"(optional: {', '.join(OPTIONAL_SECTIONS)})",
                )
            )
    for name in REQUIRED_SECTIONS:
        if name not in data:
            errors.append(ConfigError(source, name, None, f"missing: the file needs a [{name}]"))

    def section(name: str) -> _Section:
        # a missing section is one error, not one per required key
        return _Section(source, name, data.get(name), errors if name in data else [])

    table = _read_table(section("table"), base)
    shoe = _read_shoe(section("shoe")) if "shoe" in data else None
    gpio = None
    if "gpio" in data:
        rules, spots = table["rules"], table["spots"]
        note = ""
        if rules is None:
            circles = _all_circles()
            note = " (checked against every game's circles: [table] game did not load)"
        else:
            circles = table_circles(rules)
        game = None if rules is None else rules.name
        gpio = _read_gpio(section("gpio"), circles, spots or 7, note, game)
    camera = _read_camera(section("camera"), table["card_source"])
    mqtt = _read_mqtt(section("mqtt"), table["table_id"], base) if "mqtt" in data else None
    web = _read_web(section("web"))
    control = _read_control(section("control"), base)
    journal = _read_journal(section("journal"))
    if errors:
        raise ConfigErrors(errors)
    # every reader returned its value when it found no error
    assert None not in (shoe, gpio, camera, mqtt, web, control, journal, table["settings"])
    return TableConfig(
        source=source,
        checksum=checksum,
        table_id=table["table_id"],
        property=table["property"],
        game=table["game"],
        rules=table["rules"],
        settings=table["settings"],
        data_dir=table["data_dir"],
        tick_ms=table["tick_ms"],
        checkpoint_every_events=table["checkpoint_every_events"],
        shoe=shoe,
        gpio=gpio,
        camera=camera,
        mqtt=mqtt,
        web=web,
        control=control,
        journal=journal,
    )


def load_table_config(path: str | os.PathLike[str]) -> TableConfig:
    """Read and check the table config ``path``; raises :class:`ConfigErrors` listing every
    problem found. Does not look at the files it names: see :func:`check_paths`."""
    source = str(path)
    path = Path(path)
    data, raw = _read_toml(path, source)
    checksum = hashlib.sha256(raw).hexdigest()
    return parse_table_config(data, source, base=path.resolve().parent, checksum=checksum)


# -- the files a config names ----------------------------------------------------------------


#: The table service's user and group (systemd/table-controller.service, the installer).
SERVICE_USER = "table-controller"


def read_password(config: TableConfig) -> str:
    """The MQTT password: the stripped contents of ``[mqtt] password_file``, a file others
    cannot read and only its owner can write (``controller.link.password_file``)."""
    path = config.mqtt.password_file
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(
            config.source,
            "mqtt",
            "password_file",
            f"cannot read {path}: {reason}; write this table's broker password there (one "
            "line; owner root, group table-controller, mode 0640)",
        ) from None
    problem = password_mode_problem(path, SERVICE_USER)  # issue 26: 0644 passed
    if problem:
        raise ConfigError(config.source, "mqtt", "password_file", problem)
    if not text:
        raise ConfigError(
            config.source,
            "mqtt",
            "password_file",
            f"{path} is empty; write this table's broker password there (one line)",
        )
    return text


def link_keys(config: TableConfig) -> tuple[Signer, Verifier]:
    """This table's signer (``[mqtt] signing_key``, ``key_id``) and the verifier of the
    jackpot controller's messages (``[mqtt] controller_keys``)."""
    try:
        key = load_signing_key(config.mqtt.signing_key)
    except SigningKeyError as exc:
        raise ConfigError(
            config.source,
            "mqtt",
            "signing_key",
            f"{exc}. Make this table's key with: table-controller link-key --out "
            f"{config.mqtt.signing_key} --key-id {config.mqtt.key_id}, then list the public "
            "key it prints under this table in the jackpot controller's config",
        ) from None
    if not config.mqtt.controller_keys:
        raise ConfigError(
            config.source,
            "mqtt",
            "controller_keys",
            "missing: list the jackpot controller's public key(s), e.g. controller_keys = "
            '{ "jackpot-1" = "BASE64" } (printed by jackpot-controller link-key); without one '
            "every ack and award would be refused",
        )
    verifier = Verifier({kid: parse_public_key(text) for kid, text in config.mqtt.controller_keys})
    return Signer(config.mqtt.key_id, key), verifier


def _writable_dir(path: Path) -> str | None:
    """None if ``path`` is a writable folder or could be created; else what is wrong."""
    if path.exists():
        if not path.is_dir():
            return f"{path} is not a folder"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{path} is not writable by this user; chown it to the table-controller user"
        journal = path / "journal.sqlite"
        if journal.exists() and not os.access(journal, os.R_OK | os.W_OK):
            return f"{journal} is not writable by this user; chown it to the table-controller user"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{path} cannot be created: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return (
            f"{path} does not exist and this user cannot create it in {parent}: "
            f"sudo install -d -o USER {path}"
        )
    return None


def check_paths(config: TableConfig) -> list[ConfigError]:
    """Check the files ``config`` names: the MQTT password file (readable, not empty, not
    readable by others nor writable by the group or others: 0640 root:table-controller), the
    link signing key (an Ed25519 PEM file only its owner may read), the CA
    file (readable, a PEM certificate) and ``data_dir`` (a writable folder, or creatable).
    Creates nothing. ``run`` refuses to start on any of these; ``check-config`` reports them
    unless given ``--no-files``."""
    errors: list[ConfigError] = []
    try:
        read_password(config)
    except ConfigError as exc:
        errors.append(exc)
    try:
        link_keys(config)
    except ConfigError as exc:
        errors.append(exc)
    ca = config.mqtt.tls_ca
    if ca is not None:
        problem = None
        try:
            if "BEGIN CERTIFICATE" not in ca.read_text(encoding="utf-8", errors="replace"):
                problem = f"{ca} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        except OSError as exc:
            problem = f"cannot read {ca}: {exc.strerror or exc}"
        if problem:
            errors.append(
                ConfigError(
                    config.source,
                    "mqtt",
                    "tls_ca",
                    f"{problem}; copy the CA certificate that signed the broker's certificate "
                    "there (config/mosquitto/README.md)",
                )
            )
    problem = _writable_dir(config.data_dir)
    if problem:
        errors.append(ConfigError(config.source, "table", "data_dir", problem))
    return errors


# -- any config file -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigCheck:
    """What :func:`check_config` found: the ``kind``, the ``errors`` and, when there are
    none, a one-line ``summary``."""

    kind: str
    errors: list[ConfigError]
    summary: str = ""


def _detect(path: Path, data: dict[str, Any]) -> str | None:
    if "table" in data:
        return "table"
    if "pools" in data or "properties" in data:
        return "jackpot"
    if set(data) == {"gpio"}:
        return "gpio"
    if path.parent.name == "games" or "game" in data or set(data) & set(PROFILE_SECTIONS):
        return "game"
    return None


def _gaps(source: str, pin_map: PinMap, circles: Iterable[str], spots: int) -> list[ConfigError]:
    """A spot left unwired: every missing sensor and light, each naming its key."""
    return [
        ConfigError(source, s, k, problem) for s, k, problem in wiring_gaps(pin_map, circles, spots)
    ]


def _converted(exc: ProfileError | PinMapError) -> ConfigError:
    return ConfigError(exc.source, exc.section, exc.key, exc.problem)


def check_config(
    path: str | os.PathLike[str], kind: str | None = None, *, files: bool = True
) -> ConfigCheck:
    """Check the config file ``path`` of ``kind`` (table, gpio, game; None: tell by its
    sections; a jackpot config is an error naming ``jackpot-controller check-config``).
    ``files``: for a table config, also :func:`check_paths`."""
    source = str(path)
    path = Path(path)
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind {kind!r}: one of {', '.join(KINDS)}")
    try:
        data, raw = _read_toml(path, source)
    except ConfigErrors as exc:
        return ConfigCheck(kind or "unknown", exc.errors)
    if kind is None:
        kind = _detect(path, data)
        if kind is None:
            problem = (
                "cannot tell what config this is: a table config has [table], a jackpot config "
                "[pools] and [properties], a pin map only [gpio], a game profile [game]; or "
                "give --kind"
            )
            return ConfigCheck("unknown", [ConfigError(source, "", None, problem)])
    text = raw.decode("utf-8")
    if kind == "table":
        try:
            config = parse_table_config(
                data,
                source,
                base=path.resolve().parent,
                checksum=hashlib.sha256(raw).hexdigest(),
            )
        except ConfigErrors as exc:
            return ConfigCheck(kind, exc.errors)
        errors = _gaps(
            source, config.gpio.pin_map, table_circles(config.rules), config.settings.spots
        )
        errors += check_paths(config) if files else []
        summary = config.summary() + ("" if files else "; files not checked")
        return ConfigCheck(kind, errors, "" if errors else summary)
    try:
        if kind == "jackpot":  # another product's: the table side does not read it
            problem = (
                "a jackpot controller's config ([pools], [properties]): check it where the "
                f"jackpot controller runs, with: jackpot-controller check-config {source}"
            )
            return ConfigCheck(kind, [ConfigError(source, "", None, problem)])
        if kind == "gpio":
            unknown = sorted(set(data) - {"gpio"})
            if unknown:
                raise ConfigError(
                    source, unknown[0], None, "unknown section; a pin map file has only [gpio]"
                )
            raw_map = data["gpio"]
            game = raw_map.get("game") if isinstance(raw_map, dict) else None
            if game is None:
                circles, wired, against = _all_circles(), ("main",), "every game's circles"
            else:
                try:
                    circles = wired = table_circles(load_game(str(game)))
                except ProfileError:
                    raise ConfigError(
                        source,
                        "gpio",
                        "game",
                        f"{game!r} is no game profile; use one of: "
                        f"{', '.join(available_games())} (table-controller games)",
                    ) from None
                against = f"game {game}, {len(wired)} circle{'s' if len(wired) > 1 else ''} a spot"
            pin_map = parse_pin_map(raw_map, circles=circles, spots=7, source=source)
            gaps = _gaps(source, pin_map, wired, 7)
            if gaps:
                return ConfigCheck(kind, gaps)
            summary = f"pin map: {pin_map.describe()}, complete for 7 spots ({against})"
        else:
            rules = parse_profile(text, source, default_name=path.stem)
            summary = f"game {rules.name}: {rules.game.title}"
    except (ProfileError, PinMapError) as exc:
        return ConfigCheck(kind, [_converted(exc)])
    return ConfigCheck(kind, [], summary)


def check_config_file(
    path: str | os.PathLike[str], kind: str | None = None, *, files: bool = True
) -> tuple[str, list[ConfigError]]:
    """The kind of the config file ``path`` and every error found (see :func:`check_config`)."""
    check = check_config(path, kind, files=files)
    return check.kind, check.errors
