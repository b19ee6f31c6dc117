"""The ledger's hash chains (issue 29 item 5): each ``applied``, ``movements`` and ``awards``
row carries the SHA-256 of the row before it in its table, so a row edited after it was
written does not verify (``jackpot-controller verify-ledger``; docs/jackpot/controller.md,
"The chains").

- a row's ``chain = sha256(prev + "\\n" + json([table, *columns]))``, ``prev`` the ``chain``
  of the row before it in its table's order (``n``; awards: SQLite's ``rowid``, PostgreSQL's
  ``n``), or 64 zeros for the first; ``columns`` the row's values in :data:`COLUMNS` order
  (an applied row's ``message`` by the SHA-256 of its text);
- an award is chained as it was offered or refused; when it is committed its
  ``confirm_chain = sha256(chain + "\\n" + json(["confirm", confirm_seq, committed_utc]))``;
- rows up to ``meta.chain_since`` (a ledger migrated to schema 5) are not chained.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller import json_text

GENESIS = "0" * 64

COLUMNS: dict[str, tuple[str, ...]] = {
    "applied": ("table_id", "seq", "key", "kind", "boot", "outcome", "reason", "message",
                "digest", "received_utc", "gaming_day"),
    "movements": ("pool", "table_id", "seq", "what", "amount", "t_utc", "gaming_day",
                  "change_n"),
    "awards": ("award_id", "table_id", "state", "claim_seq", "claim_key", "round", "spot",
               "pool", "meter", "amount", "hit_order", "reason", "meter_before", "offered_utc",
               "gaming_day"),
}  # fmt: skip
"""What each chained table's link covers, in order."""

TABLES = tuple(COLUMNS)

V5_COLUMNS = (("applied", "chain"), ("movements", "chain"), ("awards", "chain"),
              ("awards", "confirm_chain"))  # fmt: skip
"""The columns schema 5 adds, both backends (TEXT)."""


MESSAGE = COLUMNS["applied"].index("message")
#: ``json.dumps(values, separators=(",", ":"), ensure_ascii=False)``, byte for byte, by orjson
#: where that is the same (controller/json_text.py): 2.6 -> 0.8 us a link, three a message
_encode = json_text.compact


def link(prev: str, table: str, values: tuple[Any, ...] | list[Any]) -> str:
    if table == "applied":  # the message (about 1 KB of JSON) by its SHA-256: no escaping
        values = list(values)
        values[MESSAGE] = hashlib.sha256(values[MESSAGE].encode()).hexdigest()
    return hashlib.sha256(f"{prev}\n{_encode([table, *values])}".encode()).hexdigest()


def confirm_link(chain: str, confirm_seq: int | None, committed_utc: int | None) -> str:
    return link(chain, "confirm", [confirm_seq, committed_utc])


def order(table: str, award_order: str) -> str:
    return award_order if table == "awards" else "n"


class Heads:
    """The last link of each table, read once a transaction and carried on as rows are
    written; :meth:`forget` after a rollback (to a savepoint too)."""

    def __init__(self, execute: Callable[..., Any], award_order: str) -> None:
        self._execute = execute
        self._order = award_order
        self._heads: dict[str, str] = {}

    def forget(self) -> None:
        self._heads.clear()

    def known(self, row: tuple[Any, ...]) -> None:
        """The heads, each table's last link in :data:`TABLES` order (a batch reads them with
        the rest it starts from, jackpot/ledger.py; a table's last row without a
        link, or no row: the chain starts at :data:`GENESIS`, as :meth:`next` reads it)."""
        self._heads = {t: link or GENESIS for t, link in zip(TABLES, row, strict=True)}

    def next(self, table: str, values: tuple[Any, ...] | list[Any]) -> str:
        """The link of a new row of ``table`` with ``values`` (:data:`COLUMNS`)."""
        prev = self._heads.get(table)
        if prev is None:
            row = self._execute(
                f"SELECT chain FROM {table} ORDER BY {order(table, self._order)} DESC LIMIT 1"
            ).fetchone()
            prev = row[0] if row is not None and row[0] is not None else GENESIS
        self._heads[table] = new = link(prev, table, values)
        return new


@dataclass(frozen=True)
class Checked:
    """One table's check: ``rows`` verified, ``unchained`` (before the chain), the first row
    that does not verify (``broken``: its order value, what it is, why)."""

    table: str
    rows: int
    unchained: int
    broken: tuple[int, str, str] | None = None

    def line(self) -> str:
        if self.broken is None:
            return (
                f"{self.table}: {self.rows} rows verify"
                + (f" ({self.unchained} from before the chain)" if self.unchained else "")
                + ": ok"
            )
        n, what, why = self.broken
        return (
            f"{self.table}: row {n} ({what}) does not verify ({why}): it or a row before it "
            "was changed after it was written; keep the ledger as it is (take a copy) and "
            "call the jackpot operator and the regulator's auditor"
        )


def verify(rows: Callable[[str], list[tuple]], award_order: str, since: dict[str, int]
           ) -> list[Checked]:  # fmt: skip
    """Check each table's chain with ``rows(sql)`` (a reader's)."""
    out = []
    for table in TABLES:
        key = order(table, award_order)
        extra = ", state, confirm_seq, committed_utc, confirm_chain" if table == "awards" else ""
        sql = f"SELECT {key}, chain{extra}, {', '.join(COLUMNS[table])} FROM {table} ORDER BY {key}"
        out.append(_check(table, rows(sql), since.get(table, 0)))
    return out


def _check(table: str, found: list[tuple], since: int) -> Checked:
    head, count, unchained = GENESIS, 0, 0
    awards = table == "awards"
    for row in found:
        n, stored = row[0], row[1]
        values = list(row[6:] if awards else row[2:])
        what = f"{table} {_name(table, values)}"
        if n <= since:
            unchained += 1
            continue
        if awards:
            state, confirm_seq, committed, confirm = row[2:6]
            if state == "committed":
                values[2] = "offered"  # chained as offered; the commit has its own link
        expected = link(head, table, values)
        if stored != expected:
            return Checked(table, count, unchained, (n, what, "no link" if stored is None
                                                     else "altered"))  # fmt: skip
        if awards:
            confirmed = confirm_seq is not None or committed is not None or confirm is not None
            if (state == "committed") != confirmed or (
                confirmed and confirm != confirm_link(stored, confirm_seq, committed)
            ):
                return Checked(table, count, unchained, (n, what, "its commit was altered"))
        head = stored
        count += 1
    return Checked(table, count, unchained)


def _name(table: str, values: list[Any]) -> str:
    if table == "applied":
        return f"table {values[0]} seq {values[1]} {values[3]}"
    if table == "movements":
        return f"pool {values[0]} {values[3]} {values[4]}"
    return f"award {values[0]}"


def since_of(meta_value: str | None) -> dict[str, int]:
    """``meta.chain_since`` (JSON) as table -> the last order value before the chain."""
    return {k: int(v) for k, v in json.loads(meta_value).items()} if meta_value else {}


def migrate(execute: Callable[..., Any], award_order: str) -> None:
    """Schema 4 -> 5, inside the opening transaction, both backends: the link columns, and
    ``meta.chain_since``: the rows already written are not chained; the chains start after
    them."""
    since = {}
    for table, column in V5_COLUMNS:
        execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
    for table in TABLES:
        (last,) = execute(
            f"SELECT coalesce(max({order(table, award_order)}), 0) FROM {table}"
        ).fetchone()
        since[table] = int(last)
    execute(
        "INSERT INTO meta VALUES ('chain_since', ?) ON CONFLICT (key) DO UPDATE"
        " SET value = excluded.value",
        (json.dumps(since, sort_keys=True),),
    )
