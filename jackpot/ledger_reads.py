"""The ledger's reads outside a batch: the meters for the signs, each table's ack, the awards,
the boots, the applied records, a pool's totals (a mixin of :class:`~jackpot.ledger.Ledger`,
reading through its store ``_db``; exact fractions, money in cents)."""

from __future__ import annotations

import json
from fractions import Fraction

from jackpot.ledger_results import AWARD_COLUMNS, Award, frac
from jackpot.pools import MeterReading, MysteryPool, split_meter


class LedgerReads:
    """What the ledger reads back (mixed into :class:`~jackpot.ledger.Ledger`)."""

    def meters(self) -> dict[str, MeterReading]:
        """Every pool's meter for the signs (never the mystery trigger); a pool the config
        no longer has (retired) is not shown."""
        out = {}
        rows = self._db.execute("SELECT pool, value, seq FROM meters").fetchall()
        for pool, value, seq in sorted(rows):
            if pool not in self.config.pools:
                continue
            amount, fraction = split_meter(frac(value))
            cfg = self.config.pools.get(pool)
            ceiling = cfg.must_hit_by if isinstance(cfg, MysteryPool) else None
            out[pool] = MeterReading(pool, amount, fraction, seq, ceiling)
        return out

    def meter(self, pool: str) -> Fraction:
        row = self._db.execute("SELECT value FROM meters WHERE pool=?", (pool,)).fetchone()
        return frac(row[0])

    def ack(self, table: str) -> int:
        row = self._db.execute("SELECT acked FROM tables WHERE table_id=?", (table,)).fetchone()
        return row[0] if row else 0

    def awards(self, table: str | None = None) -> list[Award]:
        sql = f"SELECT {AWARD_COLUMNS} FROM awards"
        sql += (" WHERE table_id=?" if table else "") + f" ORDER BY {self._db.award_order}"
        return [Award(*r) for r in self._db.execute(sql, (table,) if table else ())]

    def confirmed_by(self, award_id: str) -> str | None:
        """Who confirmed a committed award's hand pay, as its table's ``award_confirm`` said
        (``confirmed_by``: ``supervisor key`` or ``supervisor NAME``; issue 28): kept with
        the message in ``applied``. None: not committed, or confirmed by a table before
        issue 28 (its message names no one)."""
        row = self._db.execute(
            "SELECT a.message FROM awards w JOIN applied a"
            " ON a.table_id = w.table_id AND a.seq = w.confirm_seq WHERE w.award_id = ?",
            (award_id,),
        ).fetchone()
        if row is None:
            return None
        return json.loads(row[0]).get("payload", {}).get("confirmed_by")

    def acks(self) -> dict[str, int]:
        """Every table's highest sequence with no gap."""
        return dict(self._db.execute("SELECT table_id, acked FROM tables").fetchall())

    def boots(self) -> dict[str, int]:
        """Every table's latest ``boot`` among its applied messages."""
        sql = "SELECT table_id, MAX(boot) FROM applied GROUP BY table_id"
        return dict(self._db.execute(sql).fetchall())

    def applied(self) -> list[tuple[str, int, str, str, str | None]]:
        """(table, seq, kind, outcome, reason) in apply order."""
        sql = "SELECT table_id, seq, kind, outcome, reason FROM applied ORDER BY n"
        return [tuple(row) for row in self._db.execute(sql).fetchall()]

    def totals(self, pool: str) -> dict[str, Fraction]:
        """The pool's movements summed by what: contribution, seed, award, excess."""
        out: dict[str, Fraction] = {}
        for what, amount in self._db.execute(
            "SELECT what, amount FROM movements WHERE pool=?", (pool,)
        ).fetchall():
            out[what] = out.get(what, Fraction(0)) + frac(amount)
        return out
