"""What a ledger batch writes at its end (jackpot/ledger.py ``apply_batch``).

Nothing in a batch reads these rows back through SQL (what its checks need of them is kept
in the batch), so they wait for its end: its ``applied`` and ``movements`` rows, on
PostgreSQL its ``contributions`` and ``round_results`` rows too (SQLite's checks read those
tables in-process, so it writes them as it goes), each table's acked sequence and each changed
meter row (the value, ``seq`` and ``hits`` that one update per change leaves; the batch holds
the meter rows, so no one reads them meanwhile).

SQLite: a prepared statement stepped once a row. PostgreSQL: **one statement** for all of it,
a data-modifying ``WITH`` a table: each table's rows as one array a column (binary), ``unnest``
in step, ordered by position (an identity column numbers them as one ``INSERT`` each would).
Its text is fixed (a table without rows gets empty arrays), so it runs prepared.
"""

from __future__ import annotations

from typing import Any

from jackpot.store import Store

#: The tables whose rows a batch writes at its end: column -> type (``text`` or ``int``).
BATCHED_COLUMNS = {
    "applied": (("table_id", "text"), ("seq", "int"), ("key", "text"), ("kind", "text"),
                ("boot", "int"), ("outcome", "text"), ("reason", "text"),
                ("message", "text"), ("digest", "text"), ("received_utc", "int"),
                ("gaming_day", "text"), ("chain", "text")),
    "movements": (("pool", "text"), ("table_id", "text"), ("seq", "int"), ("what", "text"),
                  ("amount", "text"), ("t_utc", "int"), ("gaming_day", "text"),
                  ("change_n", "int"), ("chain", "text")),
    # PostgreSQL only (LATER_ON_SERVER)
    "contributions": (("table_id", "text"), ("round", "int"), ("spot", "int"), ("pool", "text"),
                      ("seq", "int")),
    "round_results": (("table_id", "text"), ("round", "int"), ("seq", "int")),
}  # fmt: skip
#: Of those, the ones a batch writes at its end only where a statement is a round trip.
LATER_ON_SERVER = ("contributions", "round_results")

#: PostgreSQL: the acked sequences and the meters, from arrays ``u`` (``{u}`` is their unnest).
UPDATES = (
    ("UPDATE tables t SET acked=u.acked FROM {u} WHERE t.table_id=u.table_id",
     (("table_id", "text"), ("acked", "int"))),
    ("UPDATE meters m SET value=u.value, seq=m.seq+u.n, hits=m.hits+u.hits FROM {u}"
     " WHERE m.pool=u.pool", (("pool", "text"), ("value", "text"), ("n", "int"), ("hits", "int"))),
)  # fmt: skip


def write_end(
    db: Store,
    rows: dict[str, list[tuple[Any, ...]]],
    acked: dict[str, int],
    meters: dict[str, tuple[str, int, int]],
) -> None:
    """Write a batch's kept ``rows`` (table -> rows, in order), each table's ``acked``
    sequence and each changed meter (pool -> (value as ``num/den``, updates, hits))."""
    if not db.round_trips:
        for name, kept in rows.items():
            if kept:
                db.insert_rows(name, BATCHED_COLUMNS[name], kept)
        for table, seq in acked.items():
            db.execute("UPDATE tables SET acked=? WHERE table_id=?", (seq, table))
        for pool, (value, updates, hits) in meters.items():
            db.execute(
                "UPDATE meters SET value=?, seq=seq+?, hits=hits+? WHERE pool=?",
                (value, updates, hits, pool),
            )
        return
    (tables_sql, tables_cols), (meters_sql, meters_cols) = UPDATES
    db.write_all(  # type: ignore[attr-defined]  (PostgresStore)
        [(name, BATCHED_COLUMNS[name], kept) for name, kept in rows.items()],
        [(tables_sql, tables_cols, list(acked.items())),
         (meters_sql, meters_cols, [(pool, *m) for pool, m in meters.items()])],
    )  # fmt: skip
