"""The one loader of the table config: the sections and their keys (:data:`KEYS`), the
checked :class:`TableConfig`, :func:`load_table_config` (every section's reader, every
error collected) and :func:`check_paths` (the files the config names).

Each section is read by its own module: ``table`` ([table]), ``readers`` ([shoe],
[camera]), ``gpio`` ([gpio], [control]), ``link`` ([mqtt]), ``web`` ([web]), ``journal``
([journal]); they share ``base`` (the errors and the typed getters)."""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.config.base import ConfigError, ConfigErrors, Section
from controller.config.clock import CLOCK_KEYS, ClockConfig, read_clock
from controller.config.gpio import (
    CONTROL_KEYS,
    GPIO_KEYS,
    ControlConfig,
    GpioConfig,
    all_circles,
    read_control,
    read_gpio,
)
from controller.config.journal import JOURNAL_KEYS, JournalConfig, read_journal
from controller.config.link import (
    MQTT_KEYS,
    MqttConfig,
    brokers_text,
    link_keys,
    read_mqtt,
    read_password,
)
from controller.config.readers import (
    CAMERA_KEYS,
    SHOE_KEYS,
    CameraConfig,
    ShoeConfig,
    read_camera,
    read_shoe,
)
from controller.config.software import SOFTWARE_KEYS, SoftwareConfig, read_software
from controller.config.table import TABLE_KEYS, read_table
from controller.config.web import WEB_KEYS, WebConfig, read_web, users_file_problems
from controller.journal.rotation import GamingDay
from controller.rules.pays import format_cents
from controller.rules.profile import HouseRules
from controller.table.machine import table_circles
from controller.table.settings import TableSettings

KEYS: dict[str, tuple[str, ...]] = {
    "table": TABLE_KEYS,
    "shoe": SHOE_KEYS,
    "gpio": GPIO_KEYS,
    "camera": CAMERA_KEYS,
    "mqtt": MQTT_KEYS,
    "web": WEB_KEYS,
    "control": CONTROL_KEYS,
    "journal": JOURNAL_KEYS,
    "clock": CLOCK_KEYS,
    "software": SOFTWARE_KEYS,
}
"""Every section and its keys, in file order."""

REQUIRED_SECTIONS = ("table", "shoe", "gpio", "mqtt")
OPTIONAL_SECTIONS = ("camera", "web", "control", "journal", "clock", "software")


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
    #: ``[clock]``: the time synchronisation check (issue 28 item 6)
    clock: ClockConfig = field(default_factory=ClockConfig)
    #: ``[software]``: the self-check against the signed manifest (issue 29 item 4)
    software: SoftwareConfig = field(default_factory=SoftwareConfig)
    #: the profile's SHA-256 (hex) and whether it is one shipped in the package (else its
    #: SHA-256 is the config's ``[table] game_sha256``; issue 29 item 6)
    game_sha256: str = ""
    game_packaged: bool = True

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
            f"table {self.table_id}, game {self.game} "
            f"({'packaged' if self.game_packaged else 'approved by game_sha256'}, "
            f"sha256 {self.game_sha256[:12]}), {s.spots} spots, "
            f"main {format_cents(s.main_minimum, whole=True)}-"
            f"{format_cents(s.main_maximum, whole=True)}, "
            f"side {format_cents(s.side_minimum, whole=True)}-"
            f"{format_cents(s.side_maximum, whole=True)}, cards from {s.card_source}, "
            f"{self.gpio.pin_map.describe()} ({self.gpio.pin_factory}), "
            f"{brokers_text(self.mqtt)} {transport}, "
            f"sha256 {self.checksum[:12]}{self.journal.describe_floor()}"
        )


def read_toml(path: Path, source: str) -> tuple[dict[str, Any], bytes]:
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

    def section(name: str) -> Section:
        # a missing section is one error, not one per required key
        return Section(source, name, data.get(name), errors if name in data else [], KEYS[name])

    table = read_table(section("table"), base)
    shoe = read_shoe(section("shoe")) if "shoe" in data else None
    gpio = None
    if "gpio" in data:
        rules, spots = table["rules"], table["spots"]
        note = ""
        if rules is None:
            circles = all_circles()
            note = " (checked against every game's circles: [table] game did not load)"
        else:
            circles = table_circles(rules)
        game = None if rules is None else rules.name
        gpio = read_gpio(section("gpio"), circles, spots or 7, note, game)
    camera = read_camera(section("camera"), table["card_source"])
    mqtt = read_mqtt(section("mqtt"), table["table_id"], base) if "mqtt" in data else None
    web = read_web(section("web"), base)
    control = read_control(section("control"), base)
    journal = read_journal(section("journal"))
    clock = read_clock(section("clock"))
    software = read_software(section("software"))
    if errors:
        raise ConfigErrors(errors)
    # every reader returned its value when it found no error
    assert None not in (
        shoe,
        gpio,
        camera,
        mqtt,
        web,
        control,
        journal,
        clock,
        software,
        table["settings"],
    )
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
        clock=clock,
        software=software,
        game_sha256=table["profile"].sha256,
        game_packaged=table["profile"].packaged,
    )


def load_table_config(path: str | os.PathLike[str]) -> TableConfig:
    """Read and check the table config ``path``; raises :class:`ConfigErrors` listing every
    problem found. Does not look at the files it names: see :func:`check_paths`."""
    source = str(path)
    path = Path(path)
    data, raw = read_toml(path, source)
    checksum = hashlib.sha256(raw).hexdigest()
    return parse_table_config(data, source, base=path.resolve().parent, checksum=checksum)


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
    errors += users_file_problems(config.source, config.web)
    problem = _writable_dir(config.data_dir)
    if problem:
        errors.append(ConfigError(config.source, "table", "data_dir", problem))
    return errors
