"""What every section reader of the table config shares: the errors, and typed getters
over one TOML table (:class:`Section`) that record a problem and go on, so one load
reports every error in the file (Klipper's ``configfile``)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from controller.errors import ProfileError
from controller.rules.pays import parse_money


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


REQUIRED = object()
"""A key's default meaning: the key must be given."""

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Section:
    """Typed getters over one TOML table; problems go to ``errors`` and the getter
    returns None, so the rest of the file is still checked."""

    def __init__(
        self,
        source: str,
        name: str,
        raw: Any,
        errors: list[ConfigError],
        keys: tuple[str, ...],
    ):
        self.source = source
        self.name = name
        self.keys = keys
        self.errors = errors
        self.raw: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.present = raw is not None
        if raw is not None and not isinstance(raw, dict):
            self.error(None, f"must be a table ([{name}] and its keys), got {raw!r}")

    def error(self, key: str | None, problem: str) -> None:
        self.errors.append(ConfigError(self.source, self.name, key, problem))

    def check_unknown(self) -> None:
        allowed = self.keys
        for key in self.raw:
            if key not in allowed:
                self.error(key, f"unknown key; keys of [{self.name}] are: {', '.join(allowed)}")

    def _get(self, key: str, default: Any, example: str) -> tuple[bool, Any]:
        assert key in self.keys, key
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
        if not is_int(value) or not low <= value <= high:
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
        return resolve(value, base)


def resolve(text: str, base: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base / path


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
