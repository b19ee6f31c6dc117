"""``[web]``: the diagnostics page and the dealer display (``docs/web.md``)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from controller.config.base import LOOPBACK_NAMES, ConfigError, Section

WEB_KEYS = (
    "bind",
    "port",
    "password_hash",
    "dealer_addresses",
    "users_file",
    "recall_s",
    "hold_settlement_s",
    "login_wait_s",
)
DEFAULT_USERS = "users"
"""The users file, beside the config (``/etc/table-controller/users``): issue 28 item 1."""

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
    #: The accounts (``controller.accounts``); while it does not exist, ``password_hash``
    #: is the one technicians' account. None: beside the config (the loader sets it).
    users_file: Path | None = None
    #: The dealer display (issue 30): how long the console's ``recall_last`` button shows the
    #: last settled round again, and how long the settlement stays after end round (0: not).
    recall_s: int = 30
    hold_settlement_s: int = 0
    #: The login throttle (docs/web.md, "The login"): the wait the fourth wrong password in
    #: a row from one address sets, doubled by each one after, at most 300 s.
    login_wait_s: int = 1


def read_web(sec: Section, base: Path) -> WebConfig | None:
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
    users = sec.path("users_file", DEFAULT_USERS, base, '"/etc/table-controller/users"')
    recall_s = sec.integer("recall_s", 30, 5, 600, "seconds")
    hold_s = sec.integer("hold_settlement_s", 0, 0, 300, "seconds")
    login_wait_s = sec.integer("login_wait_s", 1, 1, 60, "seconds")
    sec.check_unknown()
    values = (bind, port, password_hash, dealer, users, recall_s, hold_s, login_wait_s)
    if None in values:
        return None
    return WebConfig(
        bind,
        port,
        password_hash,
        enabled=sec.present,
        dealer_addresses=dealer,
        users_file=users,
        recall_s=recall_s,
        hold_settlement_s=hold_s,
        login_wait_s=login_wait_s,
    )


def users_file_problems(source: str, web: WebConfig) -> list[ConfigError]:
    """The users file, when there is one: readable, well formed, no more open than 0640
    (``check_paths``). None there yet is no error: ``[web] password_hash`` is the login."""
    from controller.accounts import AccountError, mode_problem, read_users

    path = web.users_file
    if path is None or not web.enabled or not path.exists():
        return []
    try:
        problem = mode_problem(path)
        if problem is None:
            read_users(path)
    except (OSError, AccountError) as exc:
        problem = str(exc)
    return [] if problem is None else [ConfigError(source, "web", "users_file", problem)]


def _read_dealer_addresses(sec: Section) -> tuple[str, ...] | None:
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
