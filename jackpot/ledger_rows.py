"""A ledger transaction's row writes (a mixin of :class:`~jackpot.ledger.Ledger`): inside
:meth:`~jackpot.ledger.Ledger.apply_batch` the movements, contributions, round results and
meter rows are kept and written once, at the batch's end (jackpot/ledger_end.py); outside one
(an audited change) each is written now. Amounts are exact fractions of a cent; every row
carries the controller's UTC time and the gaming day, and its chain link (jackpot/chain.py)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from jackpot.ledger_end import BATCHED_COLUMNS
from jackpot.ledger_results import AWARD_COLUMNS, Award


class LedgerRows:
    """The row writes of a ledger transaction (mixed into :class:`~jackpot.ledger.Ledger`,
    writing through its store ``_db``)."""

    def _move(self, pool: str, table: str | None, seq: int | None, what: str, amount: Fraction,
              change_n: int | None = None):  # fmt: skip
        row = (pool, table, seq, what, str(amount), self._now, self._day, change_n)
        if self._rows is not None:  # inside apply_batch: written at its end
            self._rows["movements"].append((*row, self._heads.next("movements", row)))
            return
        self._db.execute(
            "INSERT INTO movements (pool, table_id, seq, what, amount, t_utc, gaming_day,"
            " change_n, chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*row, self._heads.next("movements", row)),
        )

    def _insert(self, table: str, row: tuple[Any, ...]) -> None:
        """A ``contributions`` or ``round_results`` row: on PostgreSQL inside a batch kept
        and written at its end with the others of its table (one statement a batch, not one
        a message; the batch's checks see it through jackpot/ledger_facts.py), else now."""
        rows = None if self._rows is None else self._rows.get(table)
        if rows is None:
            marks = ", ".join("?" for _ in row)
            self._db.execute(f"INSERT INTO {table} VALUES ({marks})", row)
        else:
            rows.append(row)

    def _written(self, *tables: str) -> None:
        """Write the batch's kept rows of ``tables`` now: a statement reading them follows
        (a check the batch's facts do not answer, a claim's contribution)."""
        for table in tables:
            rows = None if self._rows is None else self._rows.get(table)
            if rows:
                self._db.insert_rows(table, BATCHED_COLUMNS[table], rows)
                rows.clear()

    def _meter(self, pool: str) -> Fraction:
        """The pool's meter inside the batch's transaction (read once, then kept)."""
        value = self._meters.get(pool)
        if value is None:
            value = self._meters[pool] = self.meter(pool)
        return value

    def _set_meter(self, pool: str, value: Fraction, hit: bool = False) -> None:
        """The pool's meter is now ``value`` (its ``seq`` one more; ``hits`` one more on a
        hit). Inside :meth:`apply_batch` it is kept here and the row written once, at the
        batch's end, with the same value, ``seq`` and ``hits`` as one update each would
        leave (the batch holds the row: no one reads it meanwhile); outside it (an audited
        change) it is written now."""
        if self._unwritten is None:
            self._db.execute(
                "UPDATE meters SET value=?, seq=seq+1, hits=hits+? WHERE pool=?",
                (str(value), int(hit), pool),
            )
        else:
            if hit:
                self._hit_counts[pool] = self._hits(pool) + 1
            counts = self._unwritten.setdefault(pool, [0, 0])
            counts[0] += 1
            counts[1] += int(hit)
        self._meters[pool] = value
        if pool not in self._changed:
            self._changed.append(pool)

    def _hits(self, pool: str) -> int:
        """The pool's hits so far (inside a batch: read once, then kept)."""
        hits = None if self._hit_counts is None else self._hit_counts.get(pool)
        if hits is None:
            sql = "SELECT hits FROM meters WHERE pool=?"
            hits = self._db.execute(sql, (pool,)).fetchone()[0]
            if self._hit_counts is not None:
                self._hit_counts[pool] = hits
        return hits

    def _insert_award(self, a: Award) -> None:
        if self._facts is not None and a.state != "refused":  # a later claim's duplicate check
            self._facts.awarded.add((a.table, a.round, a.spot, a.pool))
        row = (*vars(a).values(), self._now, self._day)  # the award's fields in order
        self._db.execute(
            f"INSERT INTO awards ({AWARD_COLUMNS}, offered_utc, gaming_day, chain)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*row, self._heads.next("awards", row)),
        )  # fmt: skip
