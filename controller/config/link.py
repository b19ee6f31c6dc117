"""``[mqtt]``: the link to the jackpot controller (``controller/link/publisher.py``,
``docs/outbox.md``): the brokers, the password file, this table's signing key and the
controller's public keys; :func:`read_password` and :func:`link_keys` read the files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from controller.config.base import REQUIRED, ConfigError, Section, is_loopback, resolve
from controller.link.brokers import (
    MAX_BROKERS,
    BrokerAddressError,
    format_address,
    parse_address,
)
from controller.link.password_file import password_mode_problem
from controller.link.signing import (
    Signer,
    SigningKeyError,
    Verifier,
    check_key_id,
    load_signing_key,
    parse_public_key,
)

if TYPE_CHECKING:
    from controller.config.loader import TableConfig

MQTT_KEYS = (
    "host",
    "port",
    "username",
    "password_file",
    "tls_ca",
    "keepalive_s",
    "window",
    "batch_rows",
    "link_fault_after_s",
    "ack_timeout_s",
    "controller_timeout_s",
    "signing_key",
    "key_id",
    "controller_keys",
)

DEFAULT_PASSWORD_FILE = "/etc/table-controller/mqtt-password"
DEFAULT_SIGNING_KEY = "/etc/table-controller/link-signing.key"

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
    #: The jackpot controller's signed heartbeat (``bj/v1/jackpot/status``, every 2 s) older
    #: than this, or its status ``offline``: the link is down at once (issue 28 item 3).
    controller_timeout_s: int = 6
    #: This table's Ed25519 private key file (``table-controller link-key``) and its key id,
    #: which the jackpot controller's config lists with the public key.
    signing_key: Path = Path(DEFAULT_SIGNING_KEY)
    key_id: str = ""
    #: The jackpot controller's public keys this table trusts: key id -> base64 text.
    controller_keys: tuple[tuple[str, str], ...] = ()
    #: Every broker, (host, port), the first preferred (``host`` given as a list; else the one
    #: ``(host, port)``): controller/link/brokers.py, docs/jackpot/brokers.md.
    brokers: tuple[tuple[str, int], ...] = ()
    #: The most outbox rows one signed batch frame carries (issue 32; docs/jackpot/README.md,
    #: "Batch frames"); 1: single messages only, for a jackpot controller older than frames.
    batch_rows: int = 64


def brokers_text(mqtt: MqttConfig) -> str:
    if len(mqtt.brokers) > 1:
        return "brokers " + ", ".join(format_address(b) for b in mqtt.brokers)
    return f"broker {mqtt.host}:{mqtt.port}"


def _read_hosts(sec: Section) -> tuple[str | None, list[str]]:
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


def read_mqtt(sec: Section, table_id: str | None, base: Path) -> MqttConfig | None:
    host, hosts = _read_hosts(sec)
    tls_text = sec.text("tls_ca", "", example='"/etc/table-controller/ca.crt"', empty=True)
    tls_ca = resolve(tls_text, base) if tls_text else None
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
        if tls_text == "" and not is_loopback(name):
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
    batch_rows = sec.integer("batch_rows", 64, 1, 64, "rows a batch frame; 1: single messages only")
    link_fault = sec.integer("link_fault_after_s", 300, 0, 86_400, "s; 0: never latch")
    ack_timeout = sec.integer("ack_timeout_s", 30, 1, 3600, "s")
    controller_timeout = sec.integer(
        "controller_timeout_s", 6, 2, 300, "s without the jackpot controller's heartbeat"
    )
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
    values += (link_fault, ack_timeout, signing_key, key_id, controller_keys, controller_timeout)
    values += (batch_rows,)
    if None in values:
        return None
    return MqttConfig(
        host, port, username, password_file, tls_ca, keepalive, window, link_fault, ack_timeout,
        controller_timeout, signing_key, key_id, controller_keys, tuple(brokers), batch_rows,
    )  # fmt: skip


def _read_controller_keys(sec: Section) -> tuple[tuple[str, str], ...] | None:
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
