"""The jackpot controller's ledger: every table message applied once, in order, in SQLite.

WAL and ``synchronous=FULL`` on every connection. :meth:`Ledger.apply` is one transaction:
insert the unique (table, seq), move the meters, record the awards and the acknowledgement.
A replay changes nothing; a gap changes nothing and asks for a resend. A message that is
refused (a forged claim, a confirm for no award) still takes its sequence number, recorded
with the reason, so the table's stream goes on; the meters do not move.

The Must-Hit-By Mystery trigger lives only in the ``mystery`` table: no method returns it,
no result, repr, snapshot or error message holds it. See docs/jackpot/controller.md.
"""

from __future__ import annotations

import enum
import json
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.errors import CardError, ProfileError, TableControllerError
from controller.games import load_game
from controller.jackpot.pools import (
    JackpotConfig,
    MeterReading,
    MysteryPool,
    ProgressivePool,
    contribution,
    draw_trigger,
    mystery_step,
    parse_share,
    share_award,
    split_meter,
)
from controller.link.messages import TABLE_KINDS, LinkMessageError, validate
from controller.rules.cards import parse_cards
from controller.rules.pays import MeterShare
from controller.rules.sidebets import blazing_7s

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tables (table_id TEXT PRIMARY KEY, acked INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS applied (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    table_id TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL,
    boot INTEGER NOT NULL, outcome TEXT NOT NULL, reason TEXT, message TEXT NOT NULL,
    UNIQUE (table_id, seq));
CREATE INDEX IF NOT EXISTS applied_key ON applied (table_id, key);
CREATE TABLE IF NOT EXISTS meters (
    pool TEXT PRIMARY KEY, value TEXT NOT NULL, seq INTEGER NOT NULL, hits INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS mystery (
    pool TEXT PRIMARY KEY, trigger_cents INTEGER NOT NULL, cycle INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS movements (
    n INTEGER PRIMARY KEY AUTOINCREMENT, pool TEXT NOT NULL, table_id TEXT, seq INTEGER,
    what TEXT NOT NULL, amount TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS awards (
    award_id TEXT PRIMARY KEY, pool TEXT NOT NULL, table_id TEXT NOT NULL,
    claim_seq INTEGER NOT NULL, claim_key TEXT NOT NULL, round INTEGER NOT NULL,
    spot INTEGER NOT NULL, meter TEXT NOT NULL, amount INTEGER NOT NULL, state TEXT NOT NULL,
    hit_order INTEGER, reason TEXT, confirm_seq INTEGER);
"""


class LedgerError(TableControllerError, OSError):
    """The ledger file could not be opened or does not fit this config."""


class Status(enum.Enum):
    APPLIED = "applied"  # the sequence is taken; meters moved if the message says so
    REFUSED = "refused"  # the sequence is taken, recorded with the reason; nothing moved
    DUPLICATE = "duplicate"  # already applied (a replay): nothing changed, ack again
    GAP = "gap"  # beyond the next expected sequence: nothing changed, resend from
    UNKNOWN_TABLE = "unknown table"  # no such table in the config: nothing recorded
    MALFORMED = "malformed"  # fails the contract: nothing recorded


@dataclass(frozen=True)
class Award:
    """An award as the table is told it (docs/jackpot/schemas/award.json without v/sent_t)."""

    award_id: str
    table: str
    state: str
    claim_seq: int
    claim_key: str
    round: int
    spot: int
    pool: str
    meter: str
    amount: int
    order: int | None = None
    reason: str | None = None

    def message(self, sent_t: int) -> dict[str, Any]:
        out = {"v": 1, **{k: v for k, v in vars(self).items() if v is not None}}
        out["sent_t"] = sent_t
        return out


@dataclass(frozen=True)
class Result:
    """What applying one message did; ``ack`` is the table's highest sequence with no gap."""

    status: Status
    table: str | None
    seq: int | None
    ack: int | None = None
    resend_from: int | None = None
    reason: str | None = None
    awards: tuple[Award, ...] = ()
    meters: tuple[str, ...] = field(default=())  # pools whose meter changed


class _Refused(Exception):
    def __init__(self, reason: str, awards: tuple[Award, ...] = ()):
        super().__init__(reason)
        self.reason = reason
        self.awards = awards


def _frac(text: str) -> Fraction:
    return Fraction(text)


class Ledger:
    """The ledger in ``path`` for ``config``. ``randbelow`` draws the mystery triggers
    (``secrets.randbelow``; tests inject a seeded one)."""

    def __init__(
        self,
        path: str | Path,
        config: JackpotConfig,
        *,
        randbelow: Callable[[int], int] = secrets.randbelow,
    ):
        self.path = Path(path)
        self.config = config
        self._randbelow = randbelow
        self._games: dict[str, Any] = {}
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._db.execute("BEGIN IMMEDIATE")
            self._init_rows()
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: cannot open the jackpot ledger: {exc}") from None

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _init_rows(self) -> None:
        db = self._db
        row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise LedgerError(f"{self.path}: ledger schema {row[0]}, expected {SCHEMA_VERSION}")
        for table in sorted(self.config.tables):
            db.execute("INSERT OR IGNORE INTO tables VALUES (?, 0)", (table,))
        for pool in self.config.pools.values():
            if db.execute("SELECT 1 FROM meters WHERE pool=?", (pool.name,)).fetchone():
                continue
            db.execute("INSERT INTO meters VALUES (?, ?, 1, 0)", (pool.name, str(pool.seed)))
            self._move(pool.name, None, None, "seed", Fraction(pool.seed))
            if isinstance(pool, MysteryPool):
                db.execute(
                    "INSERT INTO mystery VALUES (?, ?, 1)",
                    (pool.name, draw_trigger(pool, self._randbelow)),
                )

    # -- reading -------------------------------------------------------------------------

    def meters(self) -> dict[str, MeterReading]:
        """Every pool's meter for the signs (never the mystery trigger)."""
        out = {}
        for pool, value, seq, _ in self._db.execute("SELECT * FROM meters ORDER BY pool"):
            amount, frac = split_meter(_frac(value))
            cfg = self.config.pools.get(pool)
            ceiling = cfg.must_hit_by if isinstance(cfg, MysteryPool) else None
            out[pool] = MeterReading(pool, amount, frac, seq, ceiling)
        return out

    def meter(self, pool: str) -> Fraction:
        row = self._db.execute("SELECT value FROM meters WHERE pool=?", (pool,)).fetchone()
        return _frac(row[0])

    def ack(self, table: str) -> int:
        row = self._db.execute("SELECT acked FROM tables WHERE table_id=?", (table,)).fetchone()
        return row[0] if row else 0

    def awards(self, table: str | None = None) -> list[Award]:
        sql = "SELECT * FROM awards" + (" WHERE table_id=?" if table else "") + " ORDER BY rowid"
        return [self._award_row(r) for r in self._db.execute(sql, (table,) if table else ())]

    def applied(self) -> list[tuple[str, int, str, str, str | None]]:
        """(table, seq, kind, outcome, reason) in apply order."""
        return list(
            self._db.execute("SELECT table_id, seq, kind, outcome, reason FROM applied ORDER BY n")
        )

    def totals(self, pool: str) -> dict[str, Fraction]:
        """The pool's movements summed by what: contribution, seed, award, excess."""
        out: dict[str, Fraction] = {}
        for what, amount in self._db.execute(
            "SELECT what, amount FROM movements WHERE pool=?", (pool,)
        ):
            out[what] = out.get(what, Fraction(0)) + _frac(amount)
        return out

    @staticmethod
    def _award_row(row: tuple) -> Award:
        (aid, pool, table, cseq, ckey, rnd, spot, meter, amount, state, order, reason, _) = row
        return Award(aid, table, state, cseq, ckey, rnd, spot, pool, meter, amount, order, reason)

    # -- applying --------------------------------------------------------------------------

    def apply(self, message: dict[str, Any]) -> Result:
        """Apply one table message (already routed by ``parse_message``), in one transaction."""
        kind = message.get("kind") if isinstance(message, dict) else None
        try:
            if kind not in TABLE_KINDS:
                raise LinkMessageError(None, "kind", f"{kind!r} is not a table message kind")
            validate(kind, message)
        except LinkMessageError as exc:
            return Result(Status.MALFORMED, None, None, reason=str(exc))
        table, seq = message["table"], message["seq"]
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT acked FROM tables WHERE table_id=?", (table,)).fetchone()
            if row is None:
                db.execute("ROLLBACK")
                return Result(Status.UNKNOWN_TABLE, table, seq, reason="not in the config")
            acked = row[0]
            if seq <= acked:
                db.execute("ROLLBACK")
                return Result(Status.DUPLICATE, table, seq, ack=acked)
            if seq > acked + 1:
                db.execute("ROLLBACK")
                return Result(Status.GAP, table, seq, ack=acked, resend_from=acked + 1)
            self._changed: list[str] = []
            db.execute("SAVEPOINT work")
            try:
                if db.execute(
                    "SELECT 1 FROM applied WHERE table_id=? AND key=?", (table, message["key"])
                ).fetchone():
                    reason = f"key {message['key']!r} was already applied (a replay)"
                    raise _Refused(reason, self._claim_refusal(message, reason))
                awards = getattr(self, f"_apply_{kind}")(message)
                db.execute("RELEASE work")
                status, reason = Status.APPLIED, None
            except _Refused as refused:
                db.execute("ROLLBACK TO work")
                db.execute("RELEASE work")
                self._changed = []
                for award in refused.awards:
                    self._insert_award(award)
                status, reason, awards = Status.REFUSED, refused.reason, refused.awards
            db.execute(
                "INSERT INTO applied (table_id, seq, key, kind, boot, outcome, reason, message)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (table, seq, message["key"], kind, message["boot"], status.value, reason,
                 json.dumps(message, sort_keys=True)),
            )  # fmt: skip
            db.execute("UPDATE tables SET acked=? WHERE table_id=?", (seq, table))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return Result(status, table, seq, seq, None, reason, tuple(awards), tuple(self._changed))

    def _move(self, pool: str, table: str | None, seq: int | None, what: str, amount: Fraction):
        self._db.execute(
            "INSERT INTO movements (pool, table_id, seq, what, amount) VALUES (?, ?, ?, ?, ?)",
            (pool, table, seq, what, str(amount)),
        )

    def _set_meter(self, pool: str, value: Fraction, hit: bool = False) -> None:
        self._db.execute(
            "UPDATE meters SET value=?, seq=seq+1, hits=hits+? WHERE pool=?",
            (str(value), int(hit), pool),
        )
        if pool not in self._changed:
            self._changed.append(pool)

    def _hits(self, pool: str) -> int:
        return self._db.execute("SELECT hits FROM meters WHERE pool=?", (pool,)).fetchone()[0]

    def _insert_award(self, a: Award) -> None:
        self._db.execute(
            "INSERT INTO awards VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            (a.award_id, a.pool, a.table, a.claim_seq, a.claim_key, a.round, a.spot, a.meter,
             a.amount, a.state, a.order, a.reason),
        )  # fmt: skip

    def _apply_contribution(self, message: dict[str, Any]) -> list[Award]:
        table, seq, p = message["table"], message["seq"], message["payload"]
        pool = self.config.progressive_for(p["wager"])
        if pool is None or pool.name != p["pool"]:
            raise _Refused(f"no progressive pool {p['pool']!r} fed by wager {p['wager']!r}")
        added = contribution(pool, p["stake"])
        self._move(pool.name, table, seq, "contribution", added)
        self._set_meter(pool.name, self.meter(pool.name) + added)
        mystery = self.config.mystery_for(p["wager"]) if p["mystery"] else None
        if mystery is None:
            return []
        added = contribution(mystery, p["stake"])
        self._move(mystery.name, table, seq, "contribution", added)
        (trigger, cycle) = self._db.execute(
            "SELECT trigger_cents, cycle FROM mystery WHERE pool=?", (mystery.name,)
        ).fetchone()
        step = mystery_step(mystery, self.meter(mystery.name), added, trigger)
        del trigger
        if not step.hit:
            self._set_meter(mystery.name, step.meter)
            return []
        self._move(mystery.name, table, seq, "award", Fraction(-step.award))
        self._move(mystery.name, table, seq, "seed", Fraction(mystery.seed))
        self._move(mystery.name, table, seq, "excess", step.excess)
        order = self._hits(mystery.name) + 1
        self._set_meter(mystery.name, step.meter, hit=True)
        self._db.execute(
            "UPDATE mystery SET trigger_cents=?, cycle=? WHERE pool=?",
            (draw_trigger(mystery, self._randbelow), cycle + 1, mystery.name),
        )
        award = Award(f"{table}/{seq}", table, "offered", seq, message["key"], p["round"],
                      p["spot"], mystery.name, "100% of meter", step.award, order)  # fmt: skip
        self._insert_award(award)
        return [award]

    def _rules(self, game: str) -> Any:
        if game not in self._games:
            try:
                self._games[game] = load_game(game).side_bets.blazing_7s
            except ProfileError as exc:
                raise _Refused(f"game {game!r}: {exc}") from None
        return self._games[game]

    @staticmethod
    def _claim_refusal(message: dict[str, Any], reason: str) -> tuple[Award, ...]:
        """The refused award that answers a hit claim (nothing for other kinds)."""
        if message["kind"] != "hit_claim":
            return ()
        table, seq, p = message["table"], message["seq"], message["payload"]
        return (Award(f"{table}/{seq}", table, "refused", seq, message["key"], p["round"],
                      p["spot"], p["pool"], p["meter"], 0, None, reason),)  # fmt: skip

    def _apply_hit_claim(self, message: dict[str, Any]) -> list[Award]:
        table, seq, p = message["table"], message["seq"], message["payload"]

        def refuse(reason: str) -> _Refused:
            return _Refused(reason, self._claim_refusal(message, reason))

        pool = self.config.pools.get(p["pool"])
        if not isinstance(pool, ProgressivePool) or p["wager"] not in pool.wagers:
            raise refuse(f"no progressive pool {p['pool']!r} for wager {p['wager']!r}")
        if p["meter"] not in pool.lines:
            raise refuse(f"{p['meter']!r} is not a line of pool {pool.name!r}")
        rules = self._rules(p["game"])
        if rules is None or rules.pool != pool.name or p["wager"] != blazing_7s.BET:
            raise refuse(f"game {p['game']!r} has no {p['wager']} wager on pool {pool.name!r}")
        if p["stake"] != rules.wager:
            raise refuse(f"stake {p['stake']} is not the game's {rules.wager} cent wager")
        if not self._db.execute(
            "SELECT 1 FROM movements m JOIN applied a ON a.table_id=m.table_id AND a.seq=m.seq"
            " WHERE m.pool=? AND m.table_id=? AND m.what='contribution'"
            " AND json_extract(a.message, '$.payload.round')=?"
            " AND json_extract(a.message, '$.payload.spot')=?",
            (pool.name, table, p["round"], p["spot"]),
        ).fetchone():
            raise refuse(f"no contribution from round {p['round']} spot {p['spot']}")
        if self._db.execute(
            "SELECT 1 FROM awards WHERE table_id=? AND round=? AND spot=? AND pool=?"
            " AND state!='refused'",
            (table, p["round"], p["spot"], pool.name),
        ).fetchone():
            raise refuse(f"round {p['round']} spot {p['spot']} was already awarded")
        try:
            first_two = parse_cards(" ".join(p["cards"]))
            (up_card,) = parse_cards(p["up_card"])
            result = blazing_7s.evaluate(first_two, up_card, rules)
        except (CardError, ValueError) as exc:
            raise refuse(f"cards not evaluable: {exc}") from None
        if not result.wins or not isinstance(result.pays, MeterShare):
            raise refuse(f"the cards do not qualify for {p['meter']!r}: {result.label}")
        if result.pays.percent != parse_share(p["meter"]):
            raise refuse(f"the cards make {result.label!r} ({result.pays}), not {p['meter']!r}")
        meter = self.meter(pool.name)
        amount = share_award(meter, result.pays.percent)
        if amount < 1:
            raise refuse("the meter holds less than a cent")
        self._move(pool.name, table, seq, "award", Fraction(-amount))
        after = meter - amount
        if result.pays.percent == 100:
            self._move(pool.name, table, seq, "seed", Fraction(pool.reset))
            after += pool.reset
        order = self._hits(pool.name) + 1
        self._set_meter(pool.name, after, hit=True)
        offered = Award(f"{table}/{seq}", table, "offered", seq, message["key"], p["round"],
                        p["spot"], pool.name, p["meter"], amount, order)  # fmt: skip
        self._insert_award(offered)
        return [offered]

    def _apply_award_confirm(self, message: dict[str, Any]) -> list[Award]:
        p = message["payload"]
        row = self._db.execute("SELECT * FROM awards WHERE award_id=?", (p["award_id"],))
        row = row.fetchone()
        if row is None:
            raise _Refused(f"no award {p['award_id']!r}")
        award = self._award_row(row)
        if award.table != message["table"]:
            raise _Refused(f"award {award.award_id!r} belongs to another table")
        if award.state != "offered":
            raise _Refused(f"award {award.award_id!r} is {award.state}, not offered")
        if (p["amount"], p["pool"], p["round"], p["spot"]) != (
            award.amount, award.pool, award.round, award.spot
        ):  # fmt: skip
            raise _Refused(f"the confirm does not match award {award.award_id!r}")
        self._db.execute(
            "UPDATE awards SET state='committed', confirm_seq=? WHERE award_id=?",
            (message["seq"], award.award_id),
        )
        return [Award(**{**vars(award), "state": "committed"})]

    def _apply_round_result(self, message: dict[str, Any]) -> list[Award]:
        return []  # recorded in ``applied``; no money moves
