"""The jackpot controller's config (``config/jackpot.example.toml``): what it holds.

The pools, properties, tables and the controller's own sections as frozen dataclasses, and
the errors a config can have. :mod:`jackpot.config_read` reads the TOML into them, reporting
every error it finds (issue 26); :mod:`jackpot.config_check` checks what needs the disk (the
game profiles, the broker password file). Pure: no I/O at all. Money is integer cents; a
contribution rate is an exact :class:`~fractions.Fraction` of the stake.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.errors import ProfileError
from jackpot.gaming_day import GamingDay

#: A table's betting spots when neither its ``[tables.ID]`` nor its property says: the most a
#: table controller drives (its ``[table] spots`` is 1 to 7). A game profile fixes no spot
#: count (the table's config does), so there is no default to take from the game.
DEFAULT_SPOTS = 7
MAX_SPOTS = 7


class JackpotConfigError(ProfileError):
    """A jackpot config with a wrong key or value; the message names file, section and key."""

    @property
    def errors(self) -> list[JackpotConfigError]:
        """Every error this one stands for (itself)."""
        return [self]


class JackpotConfigErrors(JackpotConfigError):
    """Every error found in one config file, one per line. ``source``, ``section``, ``key``
    and ``problem`` are the first error's; :attr:`errors` lists them all."""

    def __init__(self, errors: Iterable[JackpotConfigError]):
        found = [e for error in errors for e in error.errors]
        if not found:
            raise ValueError("JackpotConfigErrors needs at least one error")
        self._errors = found
        first = found[0]
        self.source, self.section, self.key, self.problem = (
            first.source, first.section, first.key, first.problem,
        )  # fmt: skip
        Exception.__init__(self, "\n".join(str(error) for error in found))

    @property
    def errors(self) -> list[JackpotConfigError]:
        return list(self._errors)


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
    ``games``: the game profiles its tables may run (None: any profile); ``spots``: its
    tables' betting spots unless a ``[tables.ID]`` says (None: :data:`DEFAULT_SPOTS`)."""

    id: str
    name: str
    tables: tuple[str, ...]
    games: tuple[str, ...] | None = None
    spots: int | None = None
    gaming_day: GamingDay = GamingDay()  # its time zone and gaming-day start (central time)


@dataclass(frozen=True)
class TableEntry:
    """``[tables.ID]``: a table's public keys (key id -> Ed25519 key) and, optionally, the
    game profiles it may run and its betting spots (over its property's ``games``, ``spots``)."""

    id: str
    keys: Mapping[str, Ed25519PublicKey]
    games: tuple[str, ...] | None = None
    spots: int | None = None

    def __repr__(self) -> str:
        return (
            f"TableEntry({self.id!r}, keys={sorted(self.keys)}, games={self.games!r}, "
            f"spots={self.spots!r})"
        )


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
    #: ``[status] heartbeat_ms``: how often the signed retained ``bj/v1/jackpot/status``
    #: ``online`` is published again; the tables call the controller lost when it is older
    #: than their ``[mqtt] controller_timeout_s`` (issue 28 item 3).
    status_heartbeat_ms: int = 2000

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
            f"jackpot: {len(self.pools)} pools, {len(self.properties)} properties, {tables} tables"
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

    def spots_for(self, table: str) -> tuple[int, str]:
        """How many betting spots ``table`` has and where that was said: its ``[tables.ID]
        spots``, else its property's ``spots``, else :data:`DEFAULT_SPOTS`."""
        entry = self.table_entries.get(table)
        if entry is not None and entry.spots is not None:
            return entry.spots, f"[tables.{table}] spots"
        prop = self.properties.get(table.split("-", 1)[0])
        if prop is not None and prop.spots is not None:
            return prop.spots, f"[properties.{prop.id}] spots"
        return DEFAULT_SPOTS, "the default, no spots in its [tables.ID] or [properties.ID]"

    def spot_problem(self, table: str, spot: int) -> str | None:
        """Why ``table`` cannot have betting spot ``spot``, or None (issue 26: a message for
        spot 9 of a 7-spot table is refused before anything changes).

        >>> config = JackpotConfig("j.toml", {}, {"hcm": Property("hcm", "M", ("hcm-bj-07",))})
        >>> config.spot_problem("hcm-bj-07", 7) is None
        True
        >>> config.spot_problem("hcm-bj-07", 9).split(" (")[0]
        'spot 9: table hcm-bj-07 has 7 betting spots'
        """
        spots, said = self.spots_for(table)
        if 1 <= spot <= spots:
            return None
        return (
            f"spot {spot}: table {table} has {spots} betting spots (1 to {spots}; {said} in "
            f"the jackpot config): a spot it does not have; if the table really has more, say "
            f"so in [tables.{table}] spots"
        )

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
