"""The demo's files: where the checkout keeps what it uses, its names (table, users, key ids,
ports), and what it writes in its work folder: the link signing keys, the jackpot
controller's and the table's configs, the broker's config with the production limits; and the
small look-ups the stage makes before it starts anything (the broker's executable, a free
port, whether a process lives). The processes are :mod:`controller.demo.stage`'s."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.demo.play import DemoError

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: the demo uses its broker config and example jackpot config, which are files
for technicians, not package data (an installed wheel has no demo; :func:`main` says so)."""
CONFIG = ROOT / "config"
ACL_FILE = CONFIG / "mosquitto" / "acl"
PRODUCTION_CONF = CONFIG / "mosquitto" / "mosquitto.conf"
JACKPOT_CONFIG = CONFIG / "jackpot.example.toml"

TABLE_ID = "hcm-bj-07"
PROPERTY = "hcm"
GAME = "pa-standard"
SPOTS = 7
PIN_MAP = CONFIG / "gpio.example.toml"
"""The demo table's pin map: a full seven-spot pa-standard table, every circle's sensor and
lamp on a spot board (an MCP23017 expander, simulated at register level under mock pins)."""
CONTROLLER_USER = "jackpot-controller"
SIGN_USER = "sign-lobby"
USERS = (TABLE_ID, CONTROLLER_USER, SIGN_USER)
HOST = "127.0.0.1"
WEB_PORT = 8080
"""The demo's web pages (dealer display, diagnostics) when the port is free."""
CONTROLLER_KEY_ID = "jackpot-demo-1"
TABLE_KEY_ID = f"{TABLE_ID}-1"
"""The key ids of the demo's link signing keys (``DIR/keys/``)."""

CIRCLES = ("main", "lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s")
"""pa-standard's bet circles, one sensor and one lamp each per spot."""

LIMIT_OPTIONS = (
    "max_queued_messages",
    "max_queued_bytes",
    "queue_qos0_messages",
    "max_inflight_messages",
    "message_size_limit",
    "max_keepalive",
    "persistent_client_expiration",
    "set_tcp_nodelay",
)
"""Global broker options copied from the production config (``set_tcp_nodelay``: Nagle off on
the broker's sockets; with it on, a message to the jackpot controller waited up to 40 ms)."""

LISTENER_OPTIONS = ("use_username_as_clientid",)
"""Listener options copied from the production config, where every listener sets them alike:
``use_username_as_clientid true`` binds each client id to its broker user (one user cannot
take another's client id, nor its session)."""

TICK_MS = 50
SENSOR_DEBOUNCE_MS = 60
BUTTON_DEBOUNCE_MS = 20


def pin_map(path: Path = PIN_MAP) -> dict[str, Any]:
    """The ``[gpio]`` table of the demo's pin map (``config/gpio.example.toml``): every
    sensor, console input and light of seven spots, on the Pi's pins and expanders.

    >>> gpio = pin_map()
    >>> len(gpio["expanders"]), len(gpio["sensors"]), gpio["sensors"]["7.main"]["expander"]
    (7, 28, 'spot7')
    """
    import tomllib

    return tomllib.loads(path.read_text(encoding="utf-8"))["gpio"]


def console_buttons(gpio: dict[str, Any]) -> list[str]:
    """The console inputs of ``gpio`` the autopilot may press (all but the key switch)."""
    return [key for key in gpio["console"] if key != "supervisor_key"]


@dataclass(frozen=True)
class LinkKeys:
    """The demo's link signing keys: each private key file (0600) and its public key text."""

    controller_file: Path
    controller_public: str
    table_file: Path
    table_public: str

    @property
    def controller_arg(self) -> str:
        """The controller's key as ``jackpot-sign --controller-key`` takes it."""
        return f"{CONTROLLER_KEY_ID}={self.controller_public}"


def link_keys(workdir: Path) -> LinkKeys:
    """The controller's and the table's link signing keys in ``DIR/keys/``: made at the first
    start (``make_link_key``, mode 0600), read again on a resumed run. A key file that cannot
    be used raises :class:`DemoError` naming it."""
    from controller.link.signing import (
        SigningKeyError,
        load_signing_key,
        make_link_key,
        public_key_text,
    )

    folder = workdir / "keys"
    folder.mkdir(mode=0o700, exist_ok=True)
    found: list[tuple[Path, str]] = []
    for name, key_id in ((CONTROLLER_USER, CONTROLLER_KEY_ID), (TABLE_ID, TABLE_KEY_ID)):
        path = folder / f"{name}.key"
        try:
            if path.exists():
                public = public_key_text(load_signing_key(path))
            else:
                public = make_link_key(path, key_id)
        except SigningKeyError as exc:
            raise DemoError(
                f"{exc} (the demo's {name} link key; remove {path} to make a new one)"
            ) from None
        found.append((path, public))
    (controller_file, controller_public), (table_file, table_public) = found
    return LinkKeys(controller_file, controller_public, table_file, table_public)


def jackpot_config(keys: LinkKeys, example: Path = JACKPOT_CONFIG) -> str:
    """The demo's jackpot config: ``example`` with the demo table's public key listed."""
    text = example.read_text(encoding="utf-8").rstrip("\n")
    return (
        f"{text}\n\n# Added by `table-controller demo`: the demo table's link signing key.\n"
        f"[tables.{TABLE_ID}]\nkeys = {{ {json.dumps(TABLE_KEY_ID)} = "
        f"{json.dumps(keys.table_public)} }}\n"
    )


def _toml(value: Any) -> str:
    if isinstance(value, dict):  # an inline table of strings
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value) if isinstance(value, str) else str(value).lower()


def table_config(
    workdir: Path,
    port: int,
    keys: LinkKeys,
    *,
    tick_ms: int = TICK_MS,
    sensor_debounce_ms: int = SENSOR_DEBOUNCE_MS,
    web_port: int | None = None,
    web_hash: str = "",
) -> str:
    """The demo table's config file (``table-controller run --config``), signing with
    ``keys.table_file`` and trusting the controller's public key; with ``web_port`` the web
    pages (dealer display, diagnostics page with the login ``web_hash``)."""
    sections: list[tuple[str, dict[str, Any]]] = [
        (
            "table",
            {
                "id": TABLE_ID,
                "property": PROPERTY,
                "game": GAME,
                "spots": SPOTS,
                "main_minimum": "$10",
                "main_maximum": "$1,000",
                "side_minimum": "$1",
                "side_maximum": "$100",
                "card_source": "shoe",
                "data_dir": str(workdir / "table"),
                "tick_ms": tick_ms,
            },
        ),
        ("shoe", {"url": str(workdir / "shoe"), "heartbeat_timeout_ms": 3000, "fault_after_s": 30}),
        (
            "gpio",
            {
                "pin_factory": "mock",
                "game": GAME,
                "button_debounce_ms": BUTTON_DEBOUNCE_MS,
                "sensor_debounce_ms": sensor_debounce_ms,
                "blink_ms": 500,
            },
        ),
    ]
    gpio = pin_map()
    sections += [
        (f"gpio.{name}", gpio[name])
        for name in ("i2c", "expanders", "sensors", "console", "lights")
        if name in gpio
    ]
    sections += [
        (
            "mqtt",
            {
                "host": HOST,
                "port": port,
                "username": TABLE_ID,
                "password_file": str(workdir / "secrets" / TABLE_ID),
                "tls_ca": "",
                "keepalive_s": 30,
                "link_fault_after_s": 300,
                "ack_timeout_s": 30,
                "signing_key": str(keys.table_file),
                "key_id": TABLE_KEY_ID,
                "controller_keys": {CONTROLLER_KEY_ID: keys.controller_public},
            },
        ),
        ("control", {"socket": str(workdir / "control.sock")}),
        # a PC's clock is what it is: checked and shown, never a reason to refuse a wager
        ("clock", {"check_every_s": 60, "refuse_progressive": False}),
    ]
    if web_port is not None:
        sections.append(("web", {"bind": HOST, "port": web_port, "password_hash": web_hash}))
    lines = [
        "# The demo table, written by `table-controller demo` at each start (docs/demo.md).",
    ]
    for name, keys in sections:
        lines += ["", f"[{name}]"]
        lines += [f"{json.dumps(k) if '.' in k else k} = {_toml(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def _conf_words(conf: Path) -> list[list[str]]:
    """The lines of a Mosquitto config that set something, split in words (none if the file
    cannot be read)."""
    try:
        text = conf.read_text(encoding="utf-8")
    except OSError:
        return []
    lines = (line.split() for line in text.splitlines())
    return [words for words in lines if words and not words[0].startswith("#")]


def production_limits(conf: Path = PRODUCTION_CONF) -> dict[str, str]:
    """The global limits (:data:`LIMIT_OPTIONS`) set in ``conf`` before its first listener."""
    limits: dict[str, str] = {}
    for words in _conf_words(conf):
        if words[0] == "listener":
            break
        if words[0] in LIMIT_OPTIONS:
            limits[words[0]] = " ".join(words[1:])
    return limits


def listener_settings(conf: Path = PRODUCTION_CONF) -> dict[str, str]:
    """The :data:`LISTENER_OPTIONS` that every listener of ``conf`` sets, with the same value
    on each; one that a listener lacks, or sets otherwise, is left out."""
    blocks: list[dict[str, str]] = []
    for words in _conf_words(conf):
        if words[0] == "listener":
            blocks.append({})
        elif blocks and words[0] in LISTENER_OPTIONS:
            blocks[-1][words[0]] = " ".join(words[1:])
    if not blocks:
        return {}
    return {k: v for k, v in blocks[0].items() if all(b.get(k) == v for b in blocks)}


def broker_config(workdir: Path, port: int) -> str:
    """The demo broker's config: loopback only, persistence and passwords in ``workdir``."""
    broker = workdir / "broker"
    lines = [
        "# The demo broker, written by `table-controller demo` (docs/demo.md).",
        "per_listener_settings true",
        "persistence true",
        f"persistence_location {broker}/",
        "log_dest stdout",
        "log_type error",
        "log_type warning",
        "log_type notice",
        "log_type information",
        "connection_messages true",
    ]
    if os.geteuid() == 0:  # root would drop to the "mosquitto" user, who cannot read here
        lines.append("user root")
    lines += [f"{key} {value}" for key, value in production_limits().items()]
    lines += [
        f"listener {port} {HOST}",
        "allow_anonymous false",
        f"password_file {broker / 'passwd'}",
        f"acl_file {ACL_FILE}",
    ]
    lines += [f"{key} {value}" for key, value in listener_settings().items()]
    return "\n".join(lines) + "\n"


def find_mosquitto() -> str | None:
    """The broker's executable: on PATH, or Debian's /usr/sbin (not on a user's PATH)."""
    found = shutil.which("mosquitto")
    if found:
        return found
    return "/usr/sbin/mosquitto" if os.access("/usr/sbin/mosquitto", os.X_OK) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_answers(port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped) is no running process
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
