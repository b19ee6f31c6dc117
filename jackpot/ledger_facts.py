"""What a batch's contributions and round results are checked against, read once a batch.

On PostgreSQL each contribution's and round result's checks were one statement and one round
trip a message (jackpot/ledger_kinds.py). :class:`BatchFacts` asks them for the whole batch
at its start, in one statement (that statement's subqueries, a row a message) sent in the
round trip that reads the meters (the meter rows are held by then: no one else writes these
tables until the batch ends), and keeps them up to date as the batch
inserts its own rows, so each message sees exactly what its one statement would have shown:

- the round results reported for each (table, round) the batch names, and each table's last
  reported round;
- each table's last contributed round, and the contributions of each (table, round, spot,
  pool) the batch names (a twin).

A key's replay is answered by the ``applied`` keys asked at the start and the batch's own
(jackpot/ledger.py keeps those). A message whose fields are not of the expected types is not
asked for: :meth:`known` says so and the kind reads its one statement as before. SQLite reads
in-process (no round trip to save) and does not use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_KINDS = ("contribution", "round_result")

#: A row a message (table, key, round, spot, pool: each one array), in order: whether its key
#: was applied (1 or NULL: ``EXISTS`` may be planned as a hash of the whole table), its round's
#: result, the table's last reported and last contributed round, a
#: twin contribution: the check statement of jackpot/ledger_kinds.py for every message at once.
FACTS_SQL = (
    "SELECT (SELECT 1 FROM applied WHERE table_id=u.t AND key=u.k LIMIT 1),"
    " (SELECT seq FROM round_results WHERE table_id=u.t AND round=u.r),"
    " (SELECT MAX(round) FROM round_results WHERE table_id=u.t),"
    " (SELECT MAX(round) FROM contributions WHERE table_id=u.t),"
    " (SELECT seq FROM contributions"
    "  WHERE table_id=u.t AND round=u.r AND spot=u.s AND pool=u.p)"
    " FROM unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::text[])"
    " WITH ORDINALITY AS u(t, k, r, s, p, o) ORDER BY o"
)


def _fields(message: Any) -> tuple[str, str, int, int | None, str | None] | None:
    """(table, key, round, spot, pool) of a contribution or round result whose fields have
    the types the queries take; None otherwise (spot and pool: None for a round result)."""
    if not isinstance(message, dict) or message.get("kind") not in _KINDS:
        return None
    table, key, p = message.get("table"), message.get("key"), message.get("payload")
    if not (isinstance(table, str) and isinstance(key, str) and isinstance(p, dict)):
        return None
    rnd = p.get("round")
    if type(rnd) is not int:
        return None
    if message["kind"] == "round_result":
        return table, key, rnd, None, None
    spot, pool = p.get("spot"), p.get("pool")
    if type(spot) is not int or not isinstance(pool, str):
        return None
    return table, key, rnd, spot, pool


#: A row a hit claim (table, round, spot, pool: each one array), in order: its round's result
#: as reported (the ``applied`` message), whether the spot contributed to the pool, whether
#: the spot was awarded (not refused): a claim's three reads of jackpot/ledger_kinds.py.
CLAIMS_SQL = (
    "SELECT (SELECT a.message FROM round_results r JOIN applied a"
    "  ON a.table_id=r.table_id AND a.seq=r.seq WHERE r.table_id=u.t AND r.round=u.r),"
    " (SELECT 1 FROM contributions"
    "  WHERE table_id=u.t AND round=u.r AND spot=u.s AND pool=u.p LIMIT 1),"
    " (SELECT 1 FROM awards WHERE table_id=u.t AND round=u.r AND spot=u.s AND pool=u.p"
    "  AND state!='refused' LIMIT 1)"
    " FROM unnest(?::text[], ?::bigint[], ?::bigint[], ?::text[])"
    " WITH ORDINALITY AS u(t, r, s, p, o) ORDER BY o"
)


def _claim(message: Any) -> tuple[str, int, int, str] | None:
    """(table, round, spot, pool) of a hit claim whose fields have the types the query
    takes; None otherwise."""
    if not isinstance(message, dict) or message.get("kind") != "hit_claim":
        return None
    table, p = message.get("table"), message.get("payload")
    if not (isinstance(table, str) and isinstance(p, dict)):
        return None
    rnd, spot, pool = p.get("round"), p.get("spot"), p.get("pool")
    if type(rnd) is not int or type(spot) is not int or not isinstance(pool, str):
        return None
    return table, rnd, spot, pool


class BatchFacts:
    """The facts a batch's contributions and round results are checked against (see the
    module). :meth:`ask` sends the queries (without waiting), :meth:`read` takes the
    answers; then :meth:`contribution`, :meth:`round_result` and :meth:`claim` answer as
    their statements would, and :meth:`contributed`, :meth:`reported` and :attr:`awarded`
    follow the batch's own inserts."""

    def __init__(self, messages: Sequence[Any]) -> None:
        self._asked = {id(m): f for m in messages if (f := _fields(m)) is not None}
        self._claims = {id(m): c for m in messages if (c := _claim(m)) is not None}
        self._pending: Any = None  # the query's cursor, until read
        self._pending_claims: Any = None
        self.claims: dict[int, tuple[str | None, bool, bool]] = {}
        #: (table, round, spot, pool) awarded in the batch, not refused (a claim's duplicate)
        self.awarded: set[tuple[str, int, int, str]] = set()
        self.keys: set[tuple[str, str]] = set()
        self.results: dict[tuple[str, int], int] = {}
        self.last_reported: dict[str, int | None] = {}
        self.last_contributed: dict[str, int | None] = {}
        self.twins: dict[tuple[str, int, int, str], int] = {}

    def __bool__(self) -> bool:
        return bool(self._asked or self._claims)

    def ask(self, execute: Any) -> None:
        """Send the one query (psycopg's pipeline: its answer comes with the batch's first
        read): a row a message, in order, with what its check statement would read. Each
        value is a scalar subquery, so each is one probe of a primary key or an index
        whatever the tables hold (as ``IN (SELECT ... unnest)`` a generic plan scanned
        ``contributions`` and ``round_results`` whole)."""
        facts = list(self._asked.values())
        if facts:
            self._pending = execute(FACTS_SQL, tuple([f[i] for f in facts] for i in range(5)))
        claims = list(self._claims.values())
        if claims:  # (their own statement: a batch without claims sends none)
            self._pending_claims = execute(
                CLAIMS_SQL, tuple([c[i] for c in claims] for i in range(4))
            )

    def read(self) -> None:
        answer, self._pending = self._pending, None
        claims, self._pending_claims = self._pending_claims, None
        if claims is not None:
            for key, (proof, contributed, awarded) in zip(
                self._claims, claims.fetchall(), strict=True
            ):
                self.claims[key] = (proof, contributed is not None, awarded is not None)
        if answer is None:
            return
        for (table, key, rnd, spot, pool), (replayed, reported, last_reported, latest, twin) in zip(
            self._asked.values(), answer.fetchall(), strict=True
        ):
            if replayed:
                self.keys.add((table, key))
            if reported is not None:
                self.results[(table, rnd)] = reported
            self.last_reported[table] = last_reported
            self.last_contributed[table] = latest
            if twin is not None:
                self.twins[(table, rnd, spot, pool)] = twin

    def known(self, message: Any) -> bool:
        """Whether the batch asked for this message's facts."""
        return id(message) in self._asked

    def contribution(self, message: dict[str, Any]) -> tuple[Any, ...]:
        """(replayed, reported, last reported, last contributed, twin): the contribution
        check statement's row (jackpot/ledger_kinds.py)."""
        table, key, rnd, spot, pool = self._asked[id(message)]
        return ((table, key) in self.keys, self.results.get((table, rnd)),
                self.last_reported.get(table), self.last_contributed.get(table),
                self.twins.get((table, rnd, spot, pool)))  # fmt: skip

    def round_result(self, message: dict[str, Any]) -> tuple[Any, ...]:
        """(replayed, reported, last reported): the round result check statement's row."""
        table, key, rnd, _, _ = self._asked[id(message)]
        return ((table, key) in self.keys, self.results.get((table, rnd)),
                self.last_reported.get(table))  # fmt: skip

    def claim(self, message: dict[str, Any], pool: str) -> tuple[str | None, bool, bool] | None:
        """(its round's result as reported, or None; whether the spot contributed to
        ``pool``; whether it was awarded, not refused) for a hit claim, as its three reads
        would give them now (the batch's own contributions and awards included; the caller
        takes a result reported in the batch from its own); None if not asked (or asked
        for another pool than ``pool``)."""
        answer = self.claims.get(id(message))
        if answer is None:
            return None
        table, rnd, spot, asked = self._claims[id(message)]
        if asked != pool:
            return None
        key = (table, rnd, spot, pool)
        proof, contributed, awarded = answer
        return proof, contributed or key in self.twins, awarded or key in self.awarded

    def contributed(self, table: str, rnd: int, spot: int, pool: str, seq: int) -> None:
        """The batch inserted this contribution."""
        self.twins[(table, rnd, spot, pool)] = seq
        last = self.last_contributed.get(table)
        self.last_contributed[table] = rnd if last is None else max(last, rnd)

    def reported(self, table: str, rnd: int, seq: int) -> None:
        """The batch inserted this round result."""
        self.results[(table, rnd)] = seq
        last = self.last_reported.get(table)
        self.last_reported[table] = rnd if last is None else max(last, rnd)
