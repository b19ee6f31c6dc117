"""Jackpot pools: config (``config/jackpot.example.toml``) and exact meter arithmetic.

Pure: no disk writes beyond reading the config text it is given, no clock, no randomness
(the Must-Hit-By trigger is drawn by a function the caller passes in). Money is integer
cents; a meter and a contribution are exact :class:`~fractions.Fraction` s of a cent.

>>> parse_money("$0.75")
Fraction(75, 1)
>>> parse_rate("1.5%", "contribution", _Where("x", "pools.mystery"))
Fraction(3, 200)
>>> split_meter(Fraction(2501, 2))
(1250, Fraction(1, 2))
>>> share_award(Fraction(100_001, 3), Fraction(10))
3333
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.errors import ProfileError
from controller.link.brokers import MAX_BROKERS, BrokerAddressError, parse_address
from controller.link.messages import POOL, RESERVED_PREFIXES, TABLE_ID, VERSION
from controller.link.signing import SigningKeyError, check_key_id, parse_public_key
from controller.rules.pays import parse_money
from controller.rules.schema import Where
from jackpot.gaming_day import GamingDay, read_gaming_day

_PERCENT = re.compile(r"^\s*(\d+)(?:\.(\d+))?\s*%\s*$")
_SHARE = re.compile(r"^(\d+)(?:\.(\d+))?% of meter$")
_PROPERTY = re.compile(r"^[a-z]{2,8}$")
_GAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")  # common.json#/$defs/game


class JackpotConfigError(ProfileError):
    """A jackpot config with a wrong key or value; the message names file, section and key."""


class _Where(Where):
    """Where a config value came from; errors are JackpotConfigError."""

    def error(self, key_name: str | None, problem: str) -> JackpotConfigError:
        return JackpotConfigError(self.source, self.section, key_name, problem)

    def child(self, name: str) -> _Where:
        return _Where(self.source, f"{self.section}.{name}" if self.section else name)


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


@dataclass(frozen=True)
class ProgressivePool:
    """A linked progressive meter (Blazing 7's): paid as shares of the meter.

    A ``100% of meter`` line pays the whole cents the meter holds and resets it to
    ``reset`` (the fraction of a cent stays); any other line pays its share and leaves the
    rest.
    """

    name: str
    rate: Fraction  # of the stake
    seed: int
    reset: int
    lines: tuple[str, ...]
    wagers: tuple[str, ...]

    kind = "progressive"


@dataclass(frozen=True)
class MysteryPool:
    """The Must-Hit-By Mystery meter, fed by the progressive wagers with ``mystery: true``."""

    name: str
    rate: Fraction  # of the stake of an eligible progressive wager
    seed: int
    must_hit_from: int
    must_hit_by: int
    wagers: tuple[str, ...]

    kind = "mystery"

    def __repr__(self) -> str:
        return (
            f"MysteryPool(name={self.name!r}, rate={self.rate!r}, seed={self.seed}, "
            f"must_hit_from={self.must_hit_from}, must_hit_by={self.must_hit_by})"
        )


Pool = ProgressivePool | MysteryPool


@dataclass(frozen=True)
class Property:
    """One casino on the link: its id is the table id's first segment (``hcm``).
    ``games``: the game profiles its tables may run (None: any profile)."""

    id: str
    name: str
    tables: tuple[str, ...]
    games: tuple[str, ...] | None = None
    gaming_day: GamingDay = GamingDay()  # its time zone and gaming-day start (central time)


@dataclass(frozen=True)
class TableEntry:
    """``[tables.ID]``: a table's public keys (key id -> Ed25519 key) and, optionally, the
    game profiles it may run (over its property's ``games``)."""

    id: str
    keys: Mapping[str, Ed25519PublicKey]
    games: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        return f"TableEntry({self.id!r}, keys={sorted(self.keys)}, games={self.games!r})"


@dataclass(frozen=True)
class HaConfig:
    """``[ha]``: this controller's ``name`` in the lease (one per controller: ``a``, ``b``)
    and ``lease_ms``, how long its lease lasts without renewal (docs/jackpot/failover.md)."""

    name: str
    lease_ms: int = 3000


@dataclass(frozen=True)
class JackpotConfig:
    """The controller's config. ``table_entries``: the ``[tables.ID]`` sections given;
    ``link_key_id``/``link_signing_key``: ``[link]``, the controller's own signing key (the
    key file's path), None without the section. ``metrics_address``/``metrics_port``:
    ``[metrics]``, where ``/metrics`` is served (port 0: a free port, named in the log).
    ``ha``: ``[ha]``, one of several controllers on a PostgreSQL ledger; None: the only one."""

    source: str
    pools: Mapping[str, Pool]
    properties: Mapping[str, Property]
    table_entries: Mapping[str, TableEntry] = field(default_factory=dict)
    link_key_id: str | None = None
    link_signing_key: str | None = None
    metrics_address: str = "127.0.0.1"
    metrics_port: int = 9471
    ha: HaConfig | None = None
    ledger_dsn: str | None = None  # [ledger] dsn: a postgresql:// URL (None: --ledger names it)
    #: ``[mqtt] brokers``: the central brokers, (host, port), the first preferred; () without
    #: the key (``--host``); ``tls_ca``: their CA file, TLS on (docs/jackpot/brokers.md).
    mqtt_brokers: tuple[tuple[str, int], ...] = ()
    mqtt_tls_ca: str | None = None
    #: ``[gaming_day]``: the controller's own gaming day (and every property's by default).
    gaming_day: GamingDay = GamingDay()
    #: ``[ledger] trigger_key``: the key file sealing the live Mystery triggers (None: the
    #: default beside the signing key; jackpot/draws.py).
    trigger_key: str | None = None

    @property
    def tables(self) -> frozenset[str]:
        return frozenset(t for p in self.properties.values() for t in p.tables)

    @property
    def table_keys(self) -> Mapping[str, Mapping[str, Ed25519PublicKey]]:
        """Every configured table's public keys by key id (empty for a table without keys)."""
        return {
            table: (entry.keys if (entry := self.table_entries.get(table)) else {})
            for table in sorted(self.tables)
        }

    def summary(self) -> str:
        """One line for ``jackpot-controller check-config``: what this config holds."""
        tables = sum(len(p.tables) for p in self.properties.values())
        return (
            f"jackpot: {len(self.pools)} pools, {len(self.properties)} properties, "
            f"{tables} tables"
        )

    def gaming_day_for(self, table: str | None) -> GamingDay:
        """The gaming day of ``table``'s property (the controller's own for None)."""
        prop = self.properties.get(table.split("-", 1)[0]) if table else None
        return prop.gaming_day if prop is not None else self.gaming_day

    def games_for(self, table: str) -> tuple[str, ...] | None:
        """The game profiles ``table`` may run: its ``[tables.ID] games``, else its
        property's ``games``; None when neither lists them (any profile whose side bet feeds
        the pool with that wager)."""
        entry = self.table_entries.get(table)
        if entry is not None and entry.games is not None:
            return entry.games
        prop = self.properties.get(table.split("-", 1)[0])
        return prop.games if prop is not None else None

    def progressive_for(self, wager: str) -> ProgressivePool | None:
        for pool in self.pools.values():
            if isinstance(pool, ProgressivePool) and wager in pool.wagers:
                return pool
        return None

    def mystery_for(self, wager: str) -> MysteryPool | None:
        for pool in self.pools.values():
            if isinstance(pool, MysteryPool) and wager in pool.wagers:
                return pool
        return None


# -- reading the config ----------------------------------------------------------------------

_POOL_KEYS = {
    "progressive": {"kind", "contribution", "per", "seed", "reset", "lines", "wagers"},
    "mystery": {"kind", "contribution", "per", "seed", "must_hit_from", "must_hit_by", "wagers"},
}


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


def _read_pool(name: str, raw: Any, where: Where) -> Pool:
    raw = _table(raw, where)
    if not POOL.match(name):
        raise where.error(None, f"pool name {name!r} does not fit {POOL.pattern}")
    kind = raw.get("kind")
    if kind not in _POOL_KEYS:
        raise where.error("kind", f"{kind!r}; allowed: {', '.join(_POOL_KEYS)}")
    unknown = sorted(set(raw) - _POOL_KEYS[kind])
    if unknown:
        allowed = ", ".join(sorted(_POOL_KEYS[kind]))
        raise where.error(unknown[0], f"unknown key; allowed keys here: {allowed}")
    per = Fraction(_cents(raw, "per", where, "$5"))
    if per == 0:
        raise where.error("per", "must be more than $0")
    if "contribution" not in raw:
        raise where.error("contribution", "missing; write '$0.75' (per wager) or '1.5%'")
    rate = parse_rate(raw["contribution"], "contribution", where, per)
    seed = _cents(raw, "seed", where)
    wagers = _names(raw, "wagers", where, ("blazing_7s",))
    if kind == "progressive":
        reset = _cents(raw, "reset", where, seed)
        lines = _names(raw, "lines", where, ("100% of meter", "10% of meter"))
        for line in lines:
            try:
                share = parse_share(line)
            except ValueError as exc:
                raise where.error("lines", str(exc)) from None
            if not 0 < share <= 100:
                raise where.error("lines", f"{line!r}: a share is more than 0% and up to 100%")
        if seed == 0 and reset == 0:
            raise where.error("seed", "a progressive meter starts above $0")
        return ProgressivePool(name, rate, seed, reset, lines, wagers)
    low = _cents(raw, "must_hit_from", where)
    high = _cents(raw, "must_hit_by", where)
    if not 0 < low <= high:
        raise where.error("must_hit_by", f"the range {low}..{high} cents is empty")
    if seed > low:
        raise where.error("seed", f"the seed {seed} is above must_hit_from {low}")
    return MysteryPool(name, rate, seed, low, high, wagers)


def _games(raw: dict, where: Where) -> tuple[str, ...] | None:
    if "games" not in raw:
        return None
    games = _names(raw, "games", where, ())
    for game in games:
        if not _GAME.match(game):
            raise where.error("games", f"{game!r} is not a game profile name like 'pa-standard'")
    if len(set(games)) != len(games):
        raise where.error("games", "a game is listed twice")
    return games


_PROPERTY_KEYS = {"name", "tables", "games", "time_zone", "gaming_day_start"}


def _read_property(
    pid: str, raw: Any, where: Where, seen: set[str], day: GamingDay | None = None
) -> Property:
    raw = _table(raw, where)
    if not _PROPERTY.match(pid) or pid in RESERVED_PREFIXES:
        raise where.error(None, f"property id {pid!r} must be 2-8 lower-case letters")
    unknown = sorted(set(raw) - _PROPERTY_KEYS)
    if unknown:
        raise where.error(
            unknown[0], f"unknown key; allowed keys here: {', '.join(sorted(_PROPERTY_KEYS))}"
        )
    name = raw.get("name", pid)
    if not isinstance(name, str):
        raise where.error("name", "must be a string")
    tables = _names(raw, "tables", where, ())
    for table in tables:
        if not TABLE_ID.match(table) or table.split("-", 1)[0] != pid:
            raise where.error("tables", f"{table!r} is not a table id like '{pid}-bj-07'")
        if table in seen:
            raise where.error("tables", f"{table!r} is listed twice")
        seen.add(table)
    gaming_day = read_gaming_day(raw, "time_zone", "gaming_day_start", where, day or GamingDay())
    return Property(pid, name, tables, _games(raw, where), gaming_day)


def _read_table(table: str, raw: Any, where: Where, tables: frozenset[str]) -> TableEntry:
    raw = _table(raw, where)
    if table not in tables:
        raise where.error(
            None, f"table {table!r} is not listed under any [properties.ID] tables: list it there"
        )
    unknown = sorted(set(raw) - {"keys", "games"})
    if unknown:
        raise where.error(unknown[0], "unknown key; allowed keys here: keys, games")
    keys_raw = raw.get("keys", {})
    if not isinstance(keys_raw, dict):
        raise where.error(
            "keys", 'must be a table of key id = public key, e.g. keys = { "hcm-bj-07-a" = "..." }'
        )
    keys: dict[str, Ed25519PublicKey] = {}
    for kid, text in keys_raw.items():
        try:
            keys[check_key_id(kid)] = parse_public_key(text)
        except SigningKeyError as exc:
            raise where.error("keys", f"key {kid!r}: {exc}") from None
    return TableEntry(table, keys, _games(raw, where))


def _read_link(raw: Any, where: Where) -> tuple[str, str]:
    raw = _table(raw, where)
    unknown = sorted(set(raw) - {"key_id", "signing_key"})
    if unknown:
        raise where.error(unknown[0], "unknown key; allowed keys here: key_id, signing_key")
    if "key_id" not in raw:
        raise where.error("key_id", "missing; the id of the controller's signing key")
    try:
        key_id = check_key_id(raw["key_id"])
    except SigningKeyError as exc:
        raise where.error("key_id", str(exc)) from None
    path = raw.get("signing_key")
    if not isinstance(path, str) or not path.strip():
        raise where.error(
            "signing_key", "must be the path of the controller's private key file (a string)"
        )
    return key_id, path


def _read_metrics(raw: Any, where: Where) -> tuple[str, int]:
    raw = _table(raw, where)
    unknown = sorted(set(raw) - {"address", "port"})
    if unknown:
        raise where.error(unknown[0], "unknown key; allowed keys here: address, port")
    address = raw.get("address", JackpotConfig.metrics_address)
    if not isinstance(address, str) or not address.strip() or address != address.strip():
        raise where.error(
            "address", 'must be the address to serve /metrics on, e.g. "127.0.0.1" (a string)'
        )
    port = raw.get("port", JackpotConfig.metrics_port)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise where.error("port", f"{port!r}: must be a TCP port, 1 to 65535 (0: any free port)")
    return address, port


_HA_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")


def _read_ha(raw: Any, where: Where) -> HaConfig:
    raw = _table(raw, where)
    unknown = sorted(set(raw) - {"name", "lease_ms"})
    if unknown:
        raise where.error(unknown[0], "unknown key; allowed keys here: name, lease_ms")
    name = raw.get("name")
    if not isinstance(name, str) or not _HA_NAME.match(name):
        raise where.error(
            "name", f"{name!r}: must name this controller among the others, e.g. \"a\" "
            "(1-32 of a-z 0-9 _ . -; each controller its own)"
        )  # fmt: skip
    lease = raw.get("lease_ms", HaConfig.lease_ms)
    if isinstance(lease, bool) or not isinstance(lease, int) or not 1000 <= lease <= 60_000:
        raise where.error(
            "lease_ms", f"{lease!r}: must be 1000 to 60000 (ms a lease lasts; a standby takes "
            "over about this long after the active controller stops)"
        )  # fmt: skip
    return HaConfig(name, lease)


_DSN = re.compile(r"^postgres(?:ql)?://[^\s]*$")


def _read_trigger_key(raw: Any, where: Where) -> str | None:
    """``[ledger] trigger_key``: the path of the key file sealing the live Mystery triggers."""
    path = _table(raw, where).get("trigger_key")
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise where.error(
            "trigger_key", f"{path!r}: the path of the Mystery trigger key file (a string), "
            "e.g. /etc/jackpot-controller/mystery-trigger.key"
        )  # fmt: skip
    return path


def _read_ledger(raw: Any, where: Where) -> str | None:
    """``[ledger] dsn``: the PostgreSQL ledger's URL, without a password (libpq reads it from
    a passfile: ``?passfile=/etc/jackpot-controller/pgpass``, docs/jackpot/postgres.md)."""
    raw = _table(raw, where)
    unknown = sorted(set(raw) - {"dsn", "trigger_key"})
    if unknown:
        raise where.error(unknown[0], "unknown key; allowed keys here: dsn, trigger_key")
    if "dsn" not in raw:
        return None
    dsn = raw.get("dsn")
    if not isinstance(dsn, str) or not _DSN.match(dsn):
        raise where.error(
            "dsn", f"{dsn!r}: must be a PostgreSQL URL like "
            '"postgresql://jackpot@db1.example:5432/jackpot" (an SQLite ledger is named by '
            "--ledger FILE instead)"
        )  # fmt: skip
    userinfo = dsn.split("://", 1)[1].split("/", 1)[0].rpartition("@")[0]
    if ":" in userinfo or re.search(r"[?&]password=", dsn):
        raise where.error(
            "dsn", "holds a password: remove it and put it in a passfile readable only by the "
            "controller (?passfile=/etc/jackpot-controller/pgpass, docs/jackpot/postgres.md)"
        )  # fmt: skip
    return dsn


def _read_mqtt(raw: Any, where: Where) -> tuple[tuple[tuple[str, int], ...], str | None]:
    """``[mqtt] brokers = ["central-a:1883", "central-b:1883"]`` (the first preferred; a
    port defaults to 1883, or 8883 with ``tls_ca``) and ``tls_ca``, the brokers' CA file."""
    raw = _table(raw, where)
    unknown = sorted(set(raw) - {"brokers", "tls_ca"})
    if unknown:
        raise where.error(unknown[0], "unknown key; allowed keys here: brokers, tls_ca")
    tls_ca = raw.get("tls_ca")
    if tls_ca is not None and (not isinstance(tls_ca, str) or not tls_ca.strip()):
        raise where.error("tls_ca", f"{tls_ca!r}: the path of the CA file that signed the brokers")
    brokers = raw.get("brokers", [])
    example = '["central-a.jackpot.example:8883", "central-b.jackpot.example:8883"]'
    if (
        not isinstance(brokers, list)
        or not 1 <= len(brokers) <= MAX_BROKERS
        or not all(isinstance(b, str) for b in brokers)
    ):
        raise where.error(
            "brokers", f"{brokers!r}: a list of 1 to {MAX_BROKERS} broker addresses, the first "
            f"preferred, e.g. brokers = {example}"
        )  # fmt: skip
    try:
        parsed = tuple(parse_address(b, 8883 if tls_ca else 1883) for b in brokers)
    except BrokerAddressError as exc:
        raise where.error("brokers", str(exc)) from None
    if len(set(parsed)) != len(parsed):
        raise where.error("brokers", f"{brokers!r} lists a broker twice: list each once")
    return parsed, tls_ca


def parse_config(text: str, source: str) -> JackpotConfig:
    """Read the jackpot controller's TOML; errors name ``source``, the section and the key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise JackpotConfigError(source, "", None, f"not valid TOML: {exc}") from None
    top = _Where(source, "")
    unknown = sorted(set(data) - {"pools", "properties", "tables", "link", "metrics", "ha",
                                  "ledger", "mqtt", "gaming_day"})
    if unknown:
        raise top.error(
            unknown[0], "unknown section; allowed: pools, properties, tables, link, metrics, ha, "
            "ledger, mqtt, gaming_day"
        )
    day_raw = _table(data.get("gaming_day", {}), top.child("gaming_day"))
    if unknown := sorted(set(day_raw) - {"time_zone", "start"}):
        raise top.child("gaming_day").error(unknown[0], "unknown key; allowed: time_zone, start")
    day = read_gaming_day(day_raw, "time_zone", "start", top.child("gaming_day"), GamingDay())
    pools_raw = _table(data.get("pools", {}), top.child("pools"))
    props_raw = _table(data.get("properties", {}), top.child("properties"))
    if not pools_raw:
        raise top.error("pools", "no pools configured")
    if not props_raw:
        raise top.error("properties", "no properties configured")
    pools = {n: _read_pool(n, r, top.child("pools").child(n)) for n, r in pools_raw.items()}
    for kind in ("progressive", "mystery"):
        fed: dict[str, str] = {}
        for pool in pools.values():
            if pool.kind == kind:
                for wager in pool.wagers:
                    if wager in fed:
                        raise (
                            top.child("pools")
                            .child(pool.name)
                            .error("wagers", f"{wager!r} already feeds {kind} pool {fed[wager]!r}")
                        )
                    fed[wager] = pool.name
    seen: set[str] = set()
    properties = {
        p: _read_property(p, r, top.child("properties").child(p), seen, day)
        for p, r in props_raw.items()
    }
    tables = frozenset(seen)
    entries = {
        t: _read_table(t, r, top.child("tables").child(t), tables)
        for t, r in _table(data.get("tables", {}), top.child("tables")).items()
    }
    key_id = signing_key = None
    if "link" in data:
        key_id, signing_key = _read_link(data["link"], top.child("link"))
    address, port = _read_metrics(data.get("metrics", {}), top.child("metrics"))
    ha = _read_ha(data["ha"], top.child("ha")) if "ha" in data else None
    dsn = _read_ledger(data["ledger"], top.child("ledger")) if "ledger" in data else None
    trigger_key = _read_trigger_key(data.get("ledger", {}), top.child("ledger"))
    brokers, tls_ca = _read_mqtt(data["mqtt"], top.child("mqtt")) if "mqtt" in data else ((), None)
    return JackpotConfig(
        source, pools, properties, entries, key_id, signing_key, address, port, ha, dsn,
        brokers, tls_ca, day, trigger_key,
    )  # fmt: skip


def load_config(path: Any) -> JackpotConfig:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise JackpotConfigError(str(path), "", None, f"cannot read the file: {exc}") from None
    return parse_config(text, str(path))


# -- meter arithmetic ------------------------------------------------------------------------


def contribution(pool: Pool, stake: int) -> Fraction:
    """What ``stake`` cents of wager add to ``pool``, exactly."""
    return pool.rate * stake


def split_meter(meter: Fraction) -> tuple[int, Fraction]:
    """Whole cents and the fraction of a cent left."""
    whole = math.floor(meter)
    return whole, meter - whole


def share_award(meter: Fraction, percent: Fraction) -> int:
    """``percent`` of the meter, floored to whole cents (the rest stays on the meter)."""
    return math.floor(meter * percent / 100)


@dataclass(frozen=True)
class MysteryStep:
    """One eligible contribution on the Must-Hit-By meter.

    Hit: the meter reached the trigger; ``award`` is the trigger (the meter is capped there,
    never above ``must_hit_by``) and ``meter`` is the seed plus the contribution's excess.
    """

    meter: Fraction
    hit: bool
    award: int = 0
    excess: Fraction = Fraction(0)

    def __repr__(self) -> str:  # a hit reveals nothing before it happens
        return f"MysteryStep(hit={self.hit})"


def mystery_ceiling_problem(pool: MysteryPool, added: Fraction) -> str | None:
    """Why a contribution of ``added`` could leave the meter at or past ``must_hit_by``, or
    None.

    Decided without the trigger, so a refusal tells nothing about the secret. Without a hit
    the meter stays below the trigger, at most ``must_hit_by``; with one it restarts at the
    seed plus the excess over the trigger, which is less than ``added`` (the meter was below
    the trigger): so ``seed + added <= must_hit_by`` keeps it below. A contribution larger
    than that is too large for the pool's range, whatever the trigger.

    >>> pool = MysteryPool("m", Fraction(1, 2), 100, 100, 200, ("b7",))
    >>> mystery_ceiling_problem(pool, Fraction(100)) is None
    True
    >>> mystery_ceiling_problem(pool, Fraction(201, 2))
    'a contribution of 201/2 cents could restart the meter after a hit at must_hit_by or above'
    """
    if pool.seed + added <= pool.must_hit_by:
        return None
    return (
        f"a contribution of {added} cents could restart the meter after a hit at must_hit_by "
        "or above"
    )


def mystery_step(pool: MysteryPool, meter: Fraction, added: Fraction, trigger: int) -> MysteryStep:
    """Add ``added`` to the mystery meter whose hidden trigger is ``trigger`` cents.
    ValueError if the meter would reach ``must_hit_by`` (the ledger refuses such a
    contribution first: :func:`mystery_ceiling_problem`)."""
    reached = meter + added
    if reached < trigger:
        step = MysteryStep(reached, False)
    else:
        excess = reached - trigger
        step = MysteryStep(pool.seed + excess, True, trigger, excess)
    if step.meter >= pool.must_hit_by:
        raise ValueError(f"the {pool.name} meter would reach must_hit_by")
    return step


def draw_trigger(pool: MysteryPool, randbelow: Callable[[int], int]) -> int:
    """A trigger uniform over [must_hit_from, must_hit_by] in whole cents."""
    return pool.must_hit_from + randbelow(pool.must_hit_by - pool.must_hit_from + 1)


@dataclass(frozen=True)
class MeterReading:
    """What a sign shows: whole cents, the exact fraction left, a sequence per pool."""

    pool: str
    amount: int
    fraction: Fraction
    seq: int
    must_hit_by: int | None = None

    def message(self, sent_t: int) -> dict[str, Any]:
        """The retained ``meter`` message (controller/link/schemas/meter.json)."""
        out = {
            "v": VERSION,
            "pool": self.pool,
            "amount": self.amount,
            "fraction": f"{self.fraction.numerator}/{self.fraction.denominator}",
            "seq": self.seq,
            "sent_t": sent_t,
        }
        if self.must_hit_by is not None:
            out["must_hit_by"] = self.must_hit_by
        return out
