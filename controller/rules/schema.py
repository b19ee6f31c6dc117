"""Typed, checked reading of TOML tables into frozen dataclasses.

A config section is a frozen dataclass whose fields are declared with
:func:`key` (default, one-line doc, allowed values). :func:`read_section`
fills it from a parsed TOML table, checking every value and refusing unknown
keys, so a typo is an error naming file, section and key (as Klipper's
``configfile`` does). :func:`describe` lists every key for the documentation.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.errors import ProfileError
from controller.rules.pays import (
    FixedAward,
    MeterShare,
    Odds,
    Pay,
    PayError,
    format_cents,
    parse_cents,
    parse_pay,
)


def key(
    default: Any,
    doc: str,
    *,
    choices: tuple[Any, ...] | None = None,
    minimum: Any = None,
    maximum: Any = None,
    kind: str | None = None,
    converter: Any = None,
    expect: str | None = None,
) -> Any:
    """Declare a config key: its ``default``, a one-line ``doc`` and what is allowed.

    ``kind`` is inferred from the default (bool, int, str, Odds, Fraction,
    tuple of str); pass ``"cents"`` for money written as ``"$5"``, ``"pay"``
    for any paytable entry, or ``"paytable"`` for a table of outcome -> pay
    (checked against the class's ``OUTCOMES``). A ``converter(raw) -> value``
    with its ``expect`` text handles anything else.
    """
    if converter is not None:
        kind = "custom"
    elif kind is None:
        kind = _infer_kind(default)
    meta = {
        "doc": doc,
        "choices": choices,
        "minimum": minimum,
        "maximum": maximum,
        "kind": kind,
        "converter": converter,
        "expect": expect,
    }
    if isinstance(default, Mapping):
        frozen = types.MappingProxyType(dict(default))
        return dataclasses.field(default_factory=lambda: frozen, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _infer_kind(default: Any) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, str):
        return "str"
    if isinstance(default, Odds):
        return "odds"
    if isinstance(default, Fraction):
        return "fraction"
    if isinstance(default, tuple):
        return "str_list"
    raise TypeError(f"cannot infer the kind of config default {default!r}")


@dataclass(frozen=True)
class Where:
    """Where a value came from, for error messages."""

    source: str
    section: str

    def error(self, key_name: str | None, problem: str) -> ProfileError:
        return ProfileError(self.source, self.section, key_name, problem)

    def child(self, name: str) -> Where:
        return Where(self.source, f"{self.section}.{name}" if self.section else name)


def read_section(cls: type, table: Any, where: Where, **context: Any) -> Any:
    """Build dataclass ``cls`` from TOML ``table`` (a dict), checking every key.

    ``context`` supplies values for fields that are not config keys (such as a
    side bet's outcome list used to check its paytable).
    """
    if table is None:
        table = {}
    if not isinstance(table, Mapping):
        raise where.error(None, f"must be a table of keys, got {type(table).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls) if "kind" in f.metadata}
    unknown = sorted(set(table) - set(fields))
    if unknown:
        allowed = ", ".join(sorted(fields)) or "none"
        raise where.error(unknown[0], f"unknown key; allowed keys here: {allowed}")
    values = {}
    for name, fld in fields.items():
        if name in table:
            values[name] = _convert(fld, table[name], where, cls)
    section = cls(**values, **context)
    check = getattr(section, "check", None)
    if check is not None:
        problem = check()
        if problem is not None:
            key_name, message = problem
            raise where.error(key_name, message)
    return section


def _convert(fld: dataclasses.Field, raw: Any, where: Where, cls: type) -> Any:
    meta = fld.metadata
    kind = meta["kind"]
    name = fld.name
    try:
        value = meta["converter"](raw) if kind == "custom" else _CONVERTERS[kind](raw, cls)
    except InnerKeyError as exc:
        inner = where.child(name)
        if exc.subsection:
            inner = inner.child(exc.subsection)
        raise inner.error(exc.key, exc.problem) from None
    except (PayError, ValueError, TypeError, ZeroDivisionError) as exc:
        raise where.error(name, f"{exc}; expected {_expectation(meta, fld)}") from None
    choices = meta["choices"]
    if choices is not None and value not in choices:
        raise where.error(name, f"{raw!r} is not allowed; choose one of {_fmt_choices(choices)}")
    if meta["minimum"] is not None and value < meta["minimum"]:
        raise where.error(name, f"{raw!r} is below the minimum {_show(meta['minimum'], kind)}")
    if meta["maximum"] is not None and value > meta["maximum"]:
        raise where.error(name, f"{raw!r} is above the maximum {_show(meta['maximum'], kind)}")
    return value


def _bool(raw: Any, _cls: type) -> bool:
    if not isinstance(raw, bool):
        raise TypeError(f"{raw!r} is not true or false")
    return raw


def _int(raw: Any, _cls: type) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise TypeError(f"{raw!r} is not a whole number")
    return raw


def _str(raw: Any, _cls: type) -> str:
    if not isinstance(raw, str):
        raise TypeError(f"{raw!r} is not text")
    return raw


def _odds(raw: Any, _cls: type) -> Odds:
    pay = parse_pay(_str(raw, _cls))
    if not isinstance(pay, Odds):
        raise TypeError(f"{raw!r} is not odds")
    return pay


def _pay(raw: Any, _cls: type) -> Pay:
    return parse_pay(_str(raw, _cls))


def _fraction(raw: Any, _cls: type) -> Fraction:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise TypeError(f"{raw!r} is not a fraction")
    return Fraction(raw)


def _cents(raw: Any, _cls: type) -> int:
    return parse_cents(_str(raw, _cls))


def _str_list(raw: Any, _cls: type) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise TypeError(f"{raw!r} is not a list of text")
    return tuple(raw)


class InnerKeyError(ValueError):
    """A problem with ``key`` inside a table-valued key (a paytable line)."""

    def __init__(self, key_name: str | None, problem: str, subsection: str = ""):
        super().__init__(problem)
        self.key = key_name
        self.problem = problem
        self.subsection = subsection


def _paytable(raw: Any, cls: type) -> Mapping[str, Pay]:
    if not isinstance(raw, Mapping):
        raise TypeError(f"{raw!r} is not a table of outcome = pay")
    outcomes = cls.OUTCOMES
    for outcome in raw:
        if outcome not in outcomes:
            raise InnerKeyError(outcome, f"unknown outcome; outcomes: {', '.join(outcomes)}")
    table = dict(cls.DEFAULT_PAYS)
    allowed = getattr(cls, "PAY_KINDS", {})
    for outcome, text in raw.items():
        kinds = allowed.get(outcome, (Odds,))
        names = " or ".join(_KIND_WORDS[k] for k in kinds)
        try:
            pay = parse_pay(_str(text, cls))
        except (PayError, TypeError) as exc:
            raise InnerKeyError(outcome, f"{exc}; this line pays {names}") from None
        if not isinstance(pay, kinds):
            raise InnerKeyError(outcome, f"'{pay}' is not allowed: this line pays {names}")
        table[outcome] = pay
    return types.MappingProxyType(table)


_KIND_WORDS = {
    Odds: "odds like '25 to 1'",
    FixedAward: "a fixed award like '$2,500'",
    MeterShare: "a meter share like '10% of meter'",
}

_CONVERTERS = {
    "bool": _bool,
    "int": _int,
    "str": _str,
    "odds": _odds,
    "pay": _pay,
    "fraction": _fraction,
    "cents": _cents,
    "str_list": _str_list,
    "paytable": _paytable,
}

_EXPECT = {
    "bool": "true or false",
    "int": "a whole number",
    "str": "text",
    "odds": "odds like '3 to 2'",
    "pay": "'N to M', '$X' or 'P% of meter'",
    "fraction": "a fraction like '2/3'",
    "cents": "an amount like '$5'",
    "str_list": "a list of text",
    "paytable": "a table of outcome = pay",
}


def _expectation(meta: Mapping[str, Any], _fld: dataclasses.Field) -> str:
    if meta["choices"] is not None:
        return f"one of {_fmt_choices(meta['choices'])}"
    return meta["expect"] or _EXPECT[meta["kind"]]


def _fmt_choices(choices: tuple[Any, ...]) -> str:
    return ", ".join(repr(c) if isinstance(c, str) else str(c) for c in choices)


def _show(value: Any, kind: str) -> str:
    if kind == "cents":
        return format_cents(value)
    return str(value)


@dataclass(frozen=True)
class KeyDoc:
    """One documented config key."""

    section: str
    name: str
    default: str
    allowed: str
    doc: str


def describe(cls: type, section: str) -> Iterator[KeyDoc]:
    """Every config key of dataclass ``cls`` (as documented in ``docs/profiles.md``)."""
    for fld in dataclasses.fields(cls):
        meta = fld.metadata
        if "kind" not in meta:
            continue
        default = fld.default if fld.default is not dataclasses.MISSING else fld.default_factory()
        yield KeyDoc(
            section, fld.name, show_value(default, meta["kind"]), _allowed(meta), meta["doc"]
        )


def _allowed(meta: Mapping[str, Any]) -> str:
    if meta["choices"] is not None:
        return _fmt_choices(meta["choices"])
    text = meta["expect"] or _EXPECT[meta["kind"]]
    lo, hi = meta["minimum"], meta["maximum"]
    if lo is not None and hi is not None:
        text += f", {_show(lo, meta['kind'])} to {_show(hi, meta['kind'])}"
    elif lo is not None:
        text += f", at least {_show(lo, meta['kind'])}"
    return text


def show_value(value: Any, kind: str) -> str:
    """A default as it would be written in TOML."""
    if kind == "bool":
        return "true" if value else "false"
    if kind == "cents":
        return f'"{format_cents(value, whole=True)}"'
    if kind in ("odds", "fraction", "str"):
        return f'"{value}"'
    if kind == "str_list":
        return "[" + ", ".join(f'"{item}"' for item in value) + "]"
    if kind == "paytable":
        return "; ".join(f'{outcome} = "{pay}"' for outcome, pay in value.items())
    if kind == "custom" and isinstance(value, Mapping):
        return "see the profile files"
    return str(value)
