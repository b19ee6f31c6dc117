"""Reading the jackpot controller's config (``config/jackpot.example.toml``).

Every error found is reported, not only the first (issue 26): :func:`parse_config` checks every
section and key it can and raises :class:`~jackpot.config.JackpotConfigErrors` with each error,
one per line, naming file, section and key. Pure: no disk writes, no clock;
:func:`load_config` reads the file it is given. What needs the game profiles on disk (a game
that exists, a wager a profile defines) and the broker password file is checked by
:mod:`jackpot.config_check`, at ``check-config`` and when the controller starts.

>>> parse_rate("1.5%", "contribution", _Where("x", "pools.mystery"))
Fraction(3, 200)
>>> parse_share("10% of meter")
Fraction(10, 1)
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.link.brokers import MAX_BROKERS, BrokerAddressError, parse_address
from controller.link.messages import POOL, RESERVED_PREFIXES, TABLE_ID
from controller.link.signing import SigningKeyError, check_key_id, parse_public_key
from controller.rules.pays import parse_money
from controller.rules.schema import Where
from jackpot.config import (
    MAX_SPOTS,
    HaConfig,
    JackpotConfig,
    JackpotConfigError,
    JackpotConfigErrors,
    MysteryPool,
    Pool,
    ProgressivePool,
    Property,
    TableEntry,
)
from jackpot.gaming_day import GamingDay, read_gaming_day

_PERCENT = re.compile(r"^\s*(\d+)(?:\.(\d+))?\s*%\s*$")
_SHARE = re.compile(r"^(\d+)(?:\.(\d+))?% of meter$")
_PROPERTY = re.compile(r"^[a-z]{2,8}$")
_GAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")  # common.json#/$defs/game

T = TypeVar("T")


class _Where(Where):
    """Where a config value came from; errors are JackpotConfigError."""

    def error(self, key_name: str | None, problem: str) -> JackpotConfigError:
        return JackpotConfigError(self.source, self.section, key_name, problem)

    def child(self, name: str) -> _Where:
        return _Where(self.source, f"{self.section}.{name}" if self.section else name)


class _Errors:
    """The errors of one config file, in the order found: a reader adds each and goes on."""

    def __init__(self) -> None:
        self.found: list[JackpotConfigError] = []

    def add(self, error: JackpotConfigError) -> None:
        self.found.append(error)

    def read(self, reader: Callable[..., T], *args: Any, default: Any = None) -> T | Any:
        """``reader(*args)``, or ``default`` once its error is kept."""
        try:
            return reader(*args)
        except JackpotConfigError as exc:
            self.found.extend(exc.errors)
            return default

    def unknown_keys(self, raw: dict, allowed: Iterable[str], where: _Where) -> None:
        """One error per key of ``raw`` not in ``allowed``."""
        names = ", ".join(sorted(allowed))
        for key in sorted(set(raw) - set(allowed)):
            self.add(where.error(key, f"unknown key; allowed keys here: {names}"))


def _decimal(whole: str, frac: str | None) -> Fraction:
    value = Fraction(int(whole.replace(",", "")))
    if frac:
        value += Fraction(int(frac), 10 ** len(frac))
    return value


def parse_share(text: str) -> Fraction:
    """``"10% of meter"`` -> 10 (percent)."""
    match = _SHARE.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"{text!r} is not a meter share like '100% of meter'")
    return _decimal(match[1], match[2])


def parse_rate(text: Any, key: str, where: Where, per: Fraction = Fraction(500)) -> Fraction:
    """A contribution as an exact fraction of the stake: ``"1.5%"``, or ``"$0.75"`` per
    ``per`` cents of stake (a $5 wager by default)."""
    if isinstance(text, str) and (match := _PERCENT.match(text)):
        rate = _decimal(match[1], match[2]) / 100
    else:
        try:
            rate = parse_money(text) / per
        except ValueError as exc:
            raise where.error(key, f"{exc}, or a percentage of the stake like '1.5%'") from None
    if not 0 < rate < 1:
        raise where.error(key, f"{text!r} must be more than nothing and less than the stake")
    return rate


# -- reading the config ----------------------------------------------------------------------

_POOL_KEYS = {
    "progressive": {"kind", "contribution", "per", "seed", "reset", "lines", "wagers"},
    "mystery": {"kind", "contribution", "per", "seed", "must_hit_from", "must_hit_by", "wagers"},
}
_SECTIONS = ("pools", "properties", "tables", "link", "metrics", "ha", "ledger", "mqtt",
             "gaming_day", "status")  # fmt: skip


def _table(raw: Any, where: Where) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise where.error(None, f"must be a table of keys, got {type(raw).__name__}")
    return raw


def _cents(raw: dict, key: str, where: Where, default: Any = None) -> int:
    if key not in raw and default is None:
        raise where.error(key, "missing; write dollars like '$250'")
    try:
        value = parse_money(raw.get(key, default))
    except ValueError as exc:
        raise where.error(key, str(exc)) from None
    if value.denominator != 1 or value < 0:
        raise where.error(key, f"{raw.get(key)!r} must be whole cents, not negative")
    return int(value)


def _names(raw: dict, key: str, where: Where, default: tuple[str, ...]) -> tuple[str, ...]:
    value = raw.get(key, list(default))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or not value:
        raise where.error(key, f"must be a non-empty list of strings, got {value!r}")
    return tuple(value)


def _read_pool(name: str, raw: Any, where: _Where, errs: _Errors) -> Pool | None:
    """One ``[pools.NAME]``; None if it has an error (each one kept in ``errs``)."""
    raw = _table(raw, where)
    before = len(errs.found)
    if not POOL.match(name):
        errs.add(where.error(None, f"pool name {name!r} does not fit {POOL.pattern}"))
    kind = raw.get("kind")
    if kind in _POOL_KEYS:
        errs.unknown_keys(raw, _POOL_KEYS[kind], where)
    else:
        errs.add(where.error("kind", f"{kind!r}; allowed: {', '.join(_POOL_KEYS)}"))
    per = errs.read(_cents, raw, "per", where, "$5")
    if per == 0:
        errs.add(where.error("per", "must be more than $0"))
    rate = None
    if "contribution" not in raw:
        errs.add(where.error("contribution", "missing; write '$0.75' (per wager) or '1.5%'"))
    elif per:
        rate = errs.read(parse_rate, raw["contribution"], "contribution", where, Fraction(per))
    seed = errs.read(_cents, raw, "seed", where)
    wagers = errs.read(_names, raw, "wagers", where, ("blazing_7s",))
    if kind == "progressive":
        reset = errs.read(_cents, raw, "reset", where) if "reset" in raw else seed
        lines = errs.read(_names, raw, "lines", where, ("100% of meter", "10% of meter"))
        for line in lines or ():
            try:
                share = parse_share(line)
            except ValueError as exc:
                errs.add(where.error("lines", str(exc)))
                continue
            if not 0 < share <= 100:
                errs.add(where.error("lines", f"{line!r}: a share is more than 0% and up to 100%"))
        if seed == 0 and reset == 0:
            errs.add(where.error("seed", "a progressive meter starts above $0"))
        if len(errs.found) == before:
            return ProgressivePool(name, rate, seed, reset, lines, wagers)
    elif kind == "mystery":
        low = errs.read(_cents, raw, "must_hit_from", where)
        high = errs.read(_cents, raw, "must_hit_by", where)
        if low is not None and high is not None and not 0 < low <= high:
            errs.add(where.error("must_hit_by", f"the range {low}..{high} cents is empty"))
        if seed is not None and low is not None and seed > low:
            errs.add(where.error("seed", f"the seed {seed} is above must_hit_from {low}"))
        if len(errs.found) == before:
            return MysteryPool(name, rate, seed, low, high, wagers)
    return None


def _games(raw: dict, where: _Where, errs: _Errors) -> tuple[str, ...] | None:
    if "games" not in raw:
        return None
    games = errs.read(_names, raw, "games", where, ())
    for game in games or ():
        if not _GAME.match(game):
            errs.add(
                where.error("games", f"{game!r} is not a game profile name like 'pa-standard'")
            )
    if games and len(set(games)) != len(games):
        errs.add(where.error("games", "a game is listed twice"))
    return games


def _spots(raw: dict, where: _Where, errs: _Errors) -> int | None:
    if "spots" not in raw:
        return None
    spots = raw["spots"]
    if isinstance(spots, bool) or not isinstance(spots, int) or not 1 <= spots <= MAX_SPOTS:
        errs.add(
            where.error(
                "spots",
                f"{spots!r}: the table's betting spots, 1 (first base) to {MAX_SPOTS}, "
                "as its own config's [table] spots",
            )
        )
        return None
    return spots


def _read_property(
    pid: str,
    raw: Any,
    where: _Where,
    seen: set[str],
    errs: _Errors,
    unread: set[str],
    day: GamingDay | None = None,
) -> Property | None:
    """One ``[properties.ID]``; its tables go into ``seen``. ``unread``: the ids of the
    properties whose ``tables`` could not be read (their tables' sections are not blamed)."""
    raw = _table(raw, where)
    before = len(errs.found)
    if not _PROPERTY.match(pid) or pid in RESERVED_PREFIXES:
        errs.add(where.error(None, f"property id {pid!r} must be 2-8 lower-case letters"))
    errs.unknown_keys(
        raw, ("name", "tables", "games", "spots", "time_zone", "gaming_day_start"), where
    )
    name = raw.get("name", pid)
    if not isinstance(name, str):
        errs.add(where.error("name", "must be a string"))
    tables = errs.read(_names, raw, "tables", where, ())
    if tables is None:
        unread.add(pid)
    for table in tables or ():
        if not TABLE_ID.match(table) or table.split("-", 1)[0] != pid:
            errs.add(where.error("tables", f"{table!r} is not a table id like '{pid}-bj-07'"))
        elif table in seen:
            errs.add(where.error("tables", f"{table!r} is listed twice"))
        else:
            seen.add(table)
    games, spots = _games(raw, where, errs), _spots(raw, where, errs)
    gaming_day = errs.read(read_gaming_day, raw, "time_zone", "gaming_day_start", where,
                           day or GamingDay())  # fmt: skip
    if len(errs.found) > before:
        return None
    return Property(pid, name, tables, games, spots, gaming_day)


def _read_table(
    table: str, raw: Any, where: _Where, tables: frozenset[str], errs: _Errors, unread: set[str]
) -> TableEntry | None:
    raw = _table(raw, where)
    if table not in tables:
        if table.split("-", 1)[0] in unread:
            return None  # its property's tables could not be read: that error says it
        raise where.error(
            None, f"table {table!r} is not listed under any [properties.ID] tables: list it there"
        )
    before = len(errs.found)
    errs.unknown_keys(raw, ("keys", "games", "spots"), where)
    keys_raw = raw.get("keys", {})
    if not isinstance(keys_raw, dict):
        errs.add(
            where.error(
                "keys",
                'must be a table of key id = public key, e.g. keys = { "hcm-bj-07-a" = "..." }',
            )
        )
        keys_raw = {}
    keys: dict[str, Ed25519PublicKey] = {}
    for kid, text in keys_raw.items():
        try:
            keys[check_key_id(kid)] = parse_public_key(text)
        except SigningKeyError as exc:
            errs.add(where.error("keys", f"key {kid!r}: {exc}"))
    games, spots = _games(raw, where, errs), _spots(raw, where, errs)
    if len(errs.found) > before:
        return None
    return TableEntry(table, keys, games, spots)


def _read_link(raw: Any, where: _Where, errs: _Errors) -> tuple[str | None, str | None]:
    raw = _table(raw, where)
    errs.unknown_keys(raw, ("key_id", "signing_key"), where)
    key_id = None
    if "key_id" not in raw:
        errs.add(where.error("key_id", "missing; the id of the controller's signing key"))
    else:
        try:
            key_id = check_key_id(raw["key_id"])
        except SigningKeyError as exc:
            errs.add(where.error("key_id", str(exc)))
    path = raw.get("signing_key")
    if not isinstance(path, str) or not path.strip():
        errs.add(
            where.error(
                "signing_key", "must be the path of the controller's private key file (a string)"
            )
        )
        path = None
    return key_id, path


#: ``[status] heartbeat_ms``: the range of the controller's heartbeat (docs/config.md).
HEARTBEAT_MS = (500, 30_000)


def _read_status(raw: Any, where: _Where, errs: _Errors) -> int:
    raw = _table(raw, where)
    errs.unknown_keys(raw, ("heartbeat_ms",), where)
    every = raw.get("heartbeat_ms", JackpotConfig.status_heartbeat_ms)
    low, high = HEARTBEAT_MS
    if isinstance(every, bool) or not isinstance(every, int) or not low <= every <= high:
        errs.add(
            where.error(
                "heartbeat_ms",
                f"{every!r}: must be a whole number of ms from {low} to {high}; the tables "
                "call the controller lost after their [mqtt] controller_timeout_s (6 s), so "
                "keep it at a third of that or less",
            )
        )
        return JackpotConfig.status_heartbeat_ms
    return every


def _read_metrics(raw: Any, where: _Where, errs: _Errors) -> tuple[str, int]:
    raw = _table(raw, where)
    errs.unknown_keys(raw, ("address", "port"), where)
    address = raw.get("address", JackpotConfig.metrics_address)
    if not isinstance(address, str) or not address.strip() or address != address.strip():
        errs.add(
            where.error(
                "address", 'must be the address to serve /metrics on, e.g. "127.0.0.1" (a string)'
            )
        )
    port = raw.get("port", JackpotConfig.metrics_port)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        errs.add(
            where.error("port", f"{port!r}: must be a TCP port, 1 to 65535 (0: any free port)")
        )
    return address, port


_HA_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")


def _read_ha(raw: Any, where: _Where, errs: _Errors) -> HaConfig:
    raw = _table(raw, where)
    errs.unknown_keys(raw, ("name", "lease_ms"), where)
    name = raw.get("name")
    if not isinstance(name, str) or not _HA_NAME.match(name):
        errs.add(where.error(
            "name", f"{name!r}: must name this controller among the others, e.g. \"a\" "
            "(1-32 of a-z 0-9 _ . -; each controller its own)"
        ))  # fmt: skip
    lease = raw.get("lease_ms", HaConfig.lease_ms)
    if isinstance(lease, bool) or not isinstance(lease, int) or not 1000 <= lease <= 60_000:
        errs.add(where.error(
            "lease_ms", f"{lease!r}: must be 1000 to 60000 (ms a lease lasts; a standby takes "
            "over about this long after the active controller stops)"
        ))  # fmt: skip
    return HaConfig(name, lease)


_DSN = re.compile(r"^postgres(?:ql)?://[^\s]*$")


def _read_ledger(raw: Any, where: _Where, errs: _Errors) -> str | None:
    """``[ledger] dsn``: the PostgreSQL ledger's URL, without a password (libpq reads it from
    a passfile: ``?passfile=/etc/jackpot-controller/pgpass``, docs/jackpot/postgres.md)."""
    raw = _table(raw, where)
    errs.unknown_keys(raw, ("dsn", "trigger_key"), where)
    if "dsn" not in raw:
        return None
    dsn = raw.get("dsn")
    if not isinstance(dsn, str) or not _DSN.match(dsn):
        errs.add(where.error(
            "dsn", f"{dsn!r}: must be a PostgreSQL URL like "
            '"postgresql://jackpot@db1.example:5432/jackpot" (an SQLite ledger is named by '
            "--ledger FILE instead)"
        ))  # fmt: skip
        return None
    userinfo = dsn.split("://", 1)[1].split("/", 1)[0].rpartition("@")[0]
    if ":" in userinfo or re.search(r"[?&]password=", dsn):
        errs.add(where.error(
            "dsn", "holds a password: remove it and put it in a passfile readable only by the "
            "controller (?passfile=/etc/jackpot-controller/pgpass, docs/jackpot/postgres.md)"
        ))  # fmt: skip
    return dsn


def _read_trigger_key(raw: Any, where: _Where) -> str | None:
    """``[ledger] trigger_key``: the path of the key file sealing the live Mystery triggers."""
    path = _table(raw, where).get("trigger_key")
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise where.error(
            "trigger_key", f"{path!r}: the path of the Mystery trigger key file (a string), "
            "e.g. /etc/jackpot-controller/mystery-trigger.key"
        )  # fmt: skip
    return path


def _read_gaming_day(raw: Any, where: _Where, errs: _Errors) -> GamingDay:
    """``[gaming_day] time_zone, start``: the controller's own gaming day, and every
    property's unless its section says (jackpot/gaming_day.py)."""
    raw = _table(raw, where)
    errs.unknown_keys(raw, ("time_zone", "start"), where)
    return read_gaming_day(raw, "time_zone", "start", where, GamingDay())


def _read_mqtt(
    raw: Any, where: _Where, errs: _Errors
) -> tuple[tuple[tuple[str, int], ...], str | None]:
    """``[mqtt] brokers = ["central-a:1883", "central-b:1883"]`` (the first preferred; a
    port defaults to 1883, or 8883 with ``tls_ca``) and ``tls_ca``, the brokers' CA file."""
    raw = _table(raw, where)
    errs.unknown_keys(raw, ("brokers", "tls_ca"), where)
    tls_ca = raw.get("tls_ca")
    if tls_ca is not None and (not isinstance(tls_ca, str) or not tls_ca.strip()):
        errs.add(
            where.error("tls_ca", f"{tls_ca!r}: the path of the CA file that signed the brokers")
        )
    brokers = raw.get("brokers", [])
    example = '["central-a.jackpot.example:8883", "central-b.jackpot.example:8883"]'
    if (
        not isinstance(brokers, list)
        or not 1 <= len(brokers) <= MAX_BROKERS
        or not all(isinstance(b, str) for b in brokers)
    ):
        errs.add(where.error(
            "brokers", f"{brokers!r}: a list of 1 to {MAX_BROKERS} broker addresses, the first "
            f"preferred, e.g. brokers = {example}"
        ))  # fmt: skip
        return (), tls_ca
    parsed = []
    for broker in brokers:
        try:
            parsed.append(parse_address(broker, 8883 if tls_ca else 1883))
        except BrokerAddressError as exc:
            errs.add(where.error("brokers", str(exc)))
    if len(set(parsed)) != len(parsed):
        errs.add(where.error("brokers", f"{brokers!r} lists a broker twice: list each once"))
    return tuple(parsed), tls_ca


def _fed_once(pools: Mapping[str, Pool], where: _Where, errs: _Errors) -> None:
    """A wager feeds at most one progressive and one Mystery pool."""
    for kind in ("progressive", "mystery"):
        fed: dict[str, str] = {}
        for pool in pools.values():
            if pool.kind != kind:
                continue
            for wager in pool.wagers:
                if wager in fed:
                    errs.add(
                        where.child(pool.name).error(
                            "wagers", f"{wager!r} already feeds {kind} pool {fed[wager]!r}"
                        )
                    )
                fed.setdefault(wager, pool.name)


def parse_config(text: str, source: str) -> JackpotConfig:
    """Read the jackpot controller's TOML. Every error found is raised together
    (:class:`JackpotConfigErrors`), each naming ``source``, the section and the key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise JackpotConfigError(source, "", None, f"not valid TOML: {exc}") from None
    errs = _Errors()
    top = _Where(source, "")
    for name in sorted(set(data) - set(_SECTIONS)):
        errs.add(top.error(name, f"unknown section; allowed: {', '.join(_SECTIONS)}"))
    pools_where, props_where = top.child("pools"), top.child("properties")
    pools_raw = errs.read(_table, data.get("pools", {}), pools_where, default=None)
    props_raw = errs.read(_table, data.get("properties", {}), props_where, default=None)
    if pools_raw == {}:
        errs.add(top.error("pools", "no pools configured"))
    if props_raw == {}:
        errs.add(top.error("properties", "no properties configured"))
    pools: dict[str, Pool] = {}
    for name, raw in (pools_raw or {}).items():
        if pool := errs.read(_read_pool, name, raw, pools_where.child(name), errs):
            pools[name] = pool
    _fed_once(pools, pools_where, errs)
    seen: set[str] = set()
    unread: set[str] = set()
    properties: dict[str, Property] = {}
    day = errs.read(_read_gaming_day, data.get("gaming_day", {}), top.child("gaming_day"), errs,
                    default=GamingDay())  # fmt: skip
    for pid, raw in (props_raw or {}).items():
        where = props_where.child(pid)
        if prop := errs.read(_read_property, pid, raw, where, seen, errs, unread, day):
            properties[pid] = prop
    if props_raw is None:
        unread.update(t.split("-", 1)[0] for t in data.get("tables", {}) or {})
    tables = frozenset(seen)
    entries: dict[str, TableEntry] = {}
    tables_where = top.child("tables")
    for table, raw in (errs.read(_table, data.get("tables", {}), tables_where) or {}).items():
        where = tables_where.child(table)
        if entry := errs.read(_read_table, table, raw, where, tables, errs, unread):
            entries[table] = entry
    key_id = signing_key = None
    if "link" in data:
        key_id, signing_key = errs.read(
            _read_link, data["link"], top.child("link"), errs, default=(None, None)
        )
    address, port = errs.read(
        _read_metrics, data.get("metrics", {}), top.child("metrics"), errs,
        default=(JackpotConfig.metrics_address, JackpotConfig.metrics_port),
    )  # fmt: skip
    ha = errs.read(_read_ha, data["ha"], top.child("ha"), errs) if "ha" in data else None
    dsn = (
        errs.read(_read_ledger, data["ledger"], top.child("ledger"), errs)
        if "ledger" in data
        else None
    )
    trigger_key = errs.read(_read_trigger_key, data.get("ledger", {}), top.child("ledger"))
    brokers, tls_ca = ((), None)
    if "mqtt" in data:
        brokers, tls_ca = errs.read(
            _read_mqtt, data["mqtt"], top.child("mqtt"), errs, default=((), None)
        )
    heartbeat = errs.read(
        _read_status, data.get("status", {}), top.child("status"), errs,
        default=JackpotConfig.status_heartbeat_ms,
    )  # fmt: skip
    if errs.found:
        raise JackpotConfigErrors(errs.found)
    return JackpotConfig(
        source, pools, properties, entries, key_id, signing_key, address, port, ha, dsn,
        brokers, tls_ca, day, trigger_key,
        status_heartbeat_ms=heartbeat,
    )  # fmt: skip


def load_config(path: Any) -> JackpotConfig:
    """Read and check the config file at ``path`` (:func:`parse_config`)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise JackpotConfigError(str(path), "", None, f"cannot read the file: {exc}") from None
    return parse_config(text, str(path))
