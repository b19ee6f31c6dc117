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


class BatchFacts:
    """The facts a batch's contributions and round results are checked against (see the
    module). :meth:`ask` sends the query (without waiting), :meth:`read` takes the
    answer; then :meth:`contribution` and :meth:`round_result` answer as their one
    statement would, and :meth:`contributed` and :meth:`reported` note the batch's own
    inserts."""

    def __init__(self, messages: Sequence[Any]) -> None:
        self._asked = {id(m): f for m in messages if (f := _fields(m)) is not None}
        self._pending: Any = None  # the query's cursor, until read
        self.keys: set[tuple[str, str]] = set()
        self.results: dict[tuple[str, int], int] = {}
        self.last_reported: dict[str, int | None] = {}
        self.last_contributed: dict[str, int | None] = {}
        self.twins: dict[tuple[str, int, int, str], int] = {}

    def __bool__(self) -> bool:
        return bool(self._asked)

    def ask(self, execute: Any) -> None:
        """Send the one query (psycopg's pipeline: its answer comes with the batch's first
        read): a row a message, in order, with what its check statement would read. Each
        value is a scalar subquery, so each is one probe of a primary key or an index
        whatever the tables hold (as ``IN (SELECT ... unnest)`` a generic plan scanned
        ``contributions`` and ``round_results`` whole)."""
        facts = list(self._asked.values())
        self._pending = execute(
            FACTS_SQL,
            tuple([f[i] for f in facts] for i in range(5)),
        )

    def read(self) -> None:
        answer, self._pending = self._pending, None
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
