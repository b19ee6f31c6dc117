"""The jackpot controller's ledger: every table message applied once, in order.

In an SQLite file (the embedded default) or a PostgreSQL database (a group's central ledger),
with the same semantics: :func:`jackpot.store.open_store` picks the backend by the location
(a path or a ``postgresql://`` URL); the SQL here is written once for both.
:meth:`Ledger.apply` is one transaction:
insert the unique (table, seq), move the meters, record the awards and the acknowledgement.
A replay changes nothing; a gap changes nothing and asks for a resend; a sequence number
applied before with other content (its digest differs) is a conflict: nothing changes, no ack.
A message that is refused (a contribution off the game's terms, a claim its round's reported
cards do not prove, a confirm for no award) still takes its sequence number, recorded with the
reason and an alarm kind, so the table's stream goes on; the meters do not move.

The Must-Hit-By Mystery trigger lives only in the ledger's ``draws`` table, committed by
its SHA-256 and sealed with a key outside the ledger (jackpot/draws.py): no method returns
it, no result, repr, snapshot or error message holds it. Every row carries the controller's
UTC time and the gaming day (jackpot/gaming_day.py); the terms in force are ledger records
(jackpot/parameters.py, jackpot/changes.py). See docs/jackpot/controller.md.
"""

from __future__ import annotations

import contextlib
import enum
import json
import math
import os
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.errors import CardError, ProfileError
from controller.games import load_game
from controller.link.messages import TABLE_KINDS, LinkMessageError, validate
from controller.link.signing import digest
from controller.rules.cards import parse_cards
from controller.rules.pays import MeterShare
from controller.rules.profile import PROGRESSIVE_WAGERS, HouseRules
from controller.rules.sidebets import blazing_7s
from jackpot import chain as chains
from jackpot import events
from jackpot.draws import Draws, TriggerKey, key_path, next_low
from jackpot.parameters import TERMS_KEY
from jackpot.pools import (
    JackpotConfig,
    MeterReading,
    MysteryPool,
    ProgressivePool,
    contribution,
    mystery_ceiling_problem,
    mystery_step,
    parse_share,
    share_award,
    split_meter,
)
from jackpot.store import Fence, LedgerError, LedgerFenced, Location, Store, open_store

__all__ = ["Award", "Ledger", "LedgerError", "LedgerFenced", "Result", "Status"]

SCHEMA_VERSION = 5  # both backends (jackpot/store/sqlite.py, jackpot/store/postgres.py)

#: The kinds whose own first statement asks whether the key was applied before.
_KEY_ASKED_BY_KIND = ("contribution", "round_result")

_AWARD_COLUMNS = (
    "award_id, table_id, state, claim_seq, claim_key, round, spot, pool, meter, amount,"
    " hit_order, reason, meter_before"
)


class Status(enum.Enum):
    APPLIED = "applied"  # the sequence is taken; meters moved if the message says so
    REFUSED = "refused"  # the sequence is taken, recorded with the reason; nothing moved
    DUPLICATE = "duplicate"  # already applied (a replay): nothing changed, ack again
    CONFLICT = "conflict"  # the seq was applied with other content: nothing changed, no ack
    GAP = "gap"  # beyond the next expected sequence: nothing changed, resend from
    UNKNOWN_TABLE = "unknown table"  # no such table in the config: nothing recorded
    MALFORMED = "malformed"  # fails the contract: nothing recorded


@dataclass(frozen=True)
class Award:
    """An award as the table is told it (link schema award.json without v/sent_t)."""

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
    meter_before: int | None = None  # whole cents the meter held (offered, committed)

    def message(self, sent_t: int) -> dict[str, Any]:
        out = {"v": 1, **{k: v for k, v in vars(self).items() if v is not None}}
        out["sent_t"] = sent_t
        return out


@dataclass(frozen=True)
class Result:
    """What applying one message did; ``ack`` is the table's highest sequence with no gap
    (None: no ack is owed). ``reason`` says why for every status but ``applied``; ``alarm``
    is a short kind for the service to raise an alarm on (a refusal, a conflict, a malformed
    message or an unknown table), None for ``applied``, ``duplicate`` and ``gap``."""

    status: Status
    table: str | None
    seq: int | None
    ack: int | None = None
    resend_from: int | None = None
    reason: str | None = None
    awards: tuple[Award, ...] = ()
    meters: tuple[str, ...] = field(default=())  # pools whose meter changed
    alarm: str | None = None


class _Refused(Exception):
    def __init__(self, alarm: str, reason: str, awards: tuple[Award, ...] = ()):
        super().__init__(reason)
        self.alarm = alarm
        self.reason = reason
        self.awards = awards


def _frac(text: str) -> Fraction:
    return Fraction(text)


class Ledger:
    """The ledger at ``location`` (an SQLite file path, or a ``postgresql://`` URL) for
    ``config``. ``randbelow`` draws the mystery triggers (``secrets.randbelow``; tests inject
    a seeded one). ``fence(cursor)``, if given, is called first inside every write
    transaction, before any lock is taken or anything changes, and may raise
    :class:`LedgerFenced` to abort it with nothing committed (the hot standby's epoch check);
    its ``session``, if it has one, names and bounds the PostgreSQL connection (jackpot/leader.py:
    a paused transaction of an old term can hold nothing for long).
    ``clock()``: the controller's UTC time in seconds (every row's time). ``trigger_key``:
    the :class:`~jackpot.draws.TriggerKey` (or its file) sealing the live Mystery triggers
    (default :func:`jackpot.draws.key_path`). ``check_terms``: refuse a config whose terms
    differ from the ledger's (:class:`~jackpot.parameters.TermsChanged`); False only for
    ``parameters apply``, which applies them."""

    def __init__(
        self,
        location: Location,
        config: JackpotConfig,
        *,
        randbelow: Callable[[int], int] = secrets.randbelow,
        fence: Fence | None = None,
        clock: Callable[[], float] = time.time,
        trigger_key: TriggerKey | str | os.PathLike[str] | None = None,
        check_terms: bool = True,
    ):
        self._db: Store | None = None
        session = getattr(fence, "session", None)
        self._db = db = open_store(location, error=LedgerError, session=session)
        self._heads = chains.Heads(db.execute, db.award_order)  # jackpot/chain.py
        self.location = db.location  # no password
        self.path = Path(location) if db.dialect == "sqlite" else None
        self.config = config
        self._randbelow = randbelow
        self._fence = fence
        self._games: dict[str, Any] = {}
        # inside apply_batch's transaction (None outside it): what it read or wrote of each
        # table's acked sequence and each pool's meter, so a burst reads a row once
        self._acked: dict[str, int] | None = None
        self._meters: dict[str, Fraction] | None = None
        self._hit_counts: dict[str, int] | None = None
        # inside apply_batch: pool -> [meter updates, hits] not yet written (the meters rows
        # are written once a batch, at its end: see _set_meter)
        self._unwritten: dict[str, list[int]] | None = None
        self._clock = clock
        self._now: int | None = None  # the controller's UTC ms of what is being written
        self._day: str | None = None  # and its gaming day
        if trigger_key is None:
            trigger_key = key_path(config)
        if not isinstance(trigger_key, TriggerKey):
            trigger_key = Path(trigger_key)
        self.draws = Draws(db, trigger_key, randbelow)
        try:
            db.open_ledger()  # inside a write transaction from here
            self.draws.seal_plain()  # schema 2's live triggers, moved by the migration
            self.draws.check()  # the trigger key opens every live draw, or no start
            from jackpot.changes import record_terms

            self._stamp(None)
            if record_terms(self, check_terms):  # the first terms: the config's tables, pools
                self._init_rows()
            self._terms_n = self.meta(TERMS_KEY)
            db.commit()
            db.settle()
        except BaseException:
            db.rollback()
            db.close()
            raise

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    def __repr__(self) -> str:
        return f"Ledger({self.location!r})"

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fenced(self) -> None:
        """The fence, if any: the first statement of a write transaction (before
        :meth:`Store.lock_money`: a transaction paused after taking the meter rows and before
        its fence held them from the next leader, issue 26)."""
        if self._fence is not None:
            self._db.fence(self._fence)

    def _terms_current(self) -> None:
        """Refuse the write if another controller applied new terms since this one opened
        the ledger; asked after the meter rows are held (a change holds them too)."""
        if self._terms_n is not None:
            self._check_terms(self.meta(TERMS_KEY))

    def _check_terms(self, terms: str | None) -> None:
        """:meth:`_terms_current` with the ledger's ``terms_change`` read."""
        if self._terms_n is not None and terms != self._terms_n:
            raise LedgerFenced(
                f"{self.location}: the ledger's terms changed (change #{terms}) after this "
                "controller opened it: restart it with the config that was applied "
                "(jackpot-controller report changes)"
            )

    _terms_n: str | None = None  # meta terms_change when opened (or last changed here)

    def now_ms(self) -> int:
        """The controller's UTC time now, in ms."""
        return int(self._clock() * 1000)

    def _stamp(self, table: str | None, utc_ms: int | None = None) -> None:
        """What is written next happened at ``utc_ms`` (default: now), in ``table``'s
        property's gaming day (the controller's own for None)."""
        self._now = self.now_ms() if utc_ms is None else utc_ms
        self._day = self.config.gaming_day_for(table).day_of(self._now)

    @contextlib.contextmanager
    def write(self) -> Iterator[Store]:
        """One audited write transaction (jackpot/changes.py): the meter rows held, the
        fence asked, committed at the end, nothing kept if it raises."""
        db = self._db
        db.begin_write()
        self._heads.forget()
        try:
            self._fenced()
            db.lock_money()
            self._terms_current()
            self._meters = {}
            self._changed = []
            self._stamp(None)
            yield db
            db.commit()
        except BaseException:
            db.rollback()
            raise
        finally:
            self._meters = None

    def _init_rows(self) -> None:
        """The config's new tables (acked 0) and pools (seeded, a trigger drawn), with the
        first terms (:func:`jackpot.changes.record_terms` held the lock, asked the fence)."""
        db = self._db
        tables = {row[0] for row in db.execute("SELECT table_id FROM tables").fetchall()}
        pools = {row[0] for row in db.execute("SELECT pool FROM meters").fetchall()}
        new_tables = sorted(set(self.config.tables) - tables)
        new_pools = [p for p in self.config.pools.values() if p.name not in pools]
        if not new_tables and not new_pools:
            return
        for table in new_tables:
            db.execute("INSERT INTO tables VALUES (?, 0) ON CONFLICT DO NOTHING", (table,))
        for pool in new_pools:
            self.add_pool(pool)

    def add_pool(self, pool: ProgressivePool | MysteryPool, change_n: int | None = None) -> None:
        """A new pool's meter at its seed (a movement) and, for a Mystery, its first draw."""
        self._db.execute("INSERT INTO meters VALUES (?, ?, 1, 0)", (pool.name, str(pool.seed)))
        self._move(pool.name, None, None, "seed", Fraction(pool.seed), change_n)
        if isinstance(pool, MysteryPool):
            self._db.execute("INSERT INTO mystery VALUES (?, 1)", (pool.name,))
            low = next_low(pool.must_hit_from, Fraction(pool.seed))
            self.draws.draw(pool.name, 1, low, pool.must_hit_by, self._now, self._day)

    # -- meta --------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, text: str) -> None:
        """Set one ``meta`` value in a fenced write transaction (the software self-check's
        latest result, jackpot/selfcheck.py)."""
        db = self._db
        db.begin_write()
        try:
            self._fenced()
            db.execute(
                "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
                " SET value=excluded.value",
                (key, text),
            )
            db.commit()
        except BaseException:
            db.rollback()
            raise

    def bump(self, key: str, notes: dict[str, str] | None = None) -> int:
        """Add one to the counter ``key`` in ``meta`` (0 if absent) in one fenced write
        transaction, setting the ``notes`` keys in the same one (the build id at each start);
        returns the new value (the controller's boot counter)."""
        db = self._db
        db.begin_write()
        try:
            self._fenced()
            self._terms_current()
            db.execute("INSERT INTO meta VALUES (?, '0') ON CONFLICT (key) DO NOTHING", (key,))
            for name, text in (notes or {}).items():
                db.execute(
                    "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
                    " SET value=excluded.value",
                    (name, text),
                )
            (value,) = db.execute(
                "UPDATE meta SET value=CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key=?"
                " RETURNING value",
                (key,),
            ).fetchone()
            db.commit()
        except BaseException:
            db.rollback()
            raise
        return int(value)

    # -- reading -------------------------------------------------------------------------

    def meters(self) -> dict[str, MeterReading]:
        """Every pool's meter for the signs (never the mystery trigger); a pool the config
        no longer has (retired) is not shown."""
        out = {}
        rows = self._db.execute("SELECT pool, value, seq FROM meters").fetchall()
        for pool, value, seq in sorted(rows):
            if pool not in self.config.pools:
                continue
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
        sql = f"SELECT {_AWARD_COLUMNS} FROM awards"
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
            out[what] = out.get(what, Fraction(0)) + _frac(amount)
        return out

    # -- applying --------------------------------------------------------------------------

    def apply(self, message: dict[str, Any], *, checked: bool = False) -> Result:
        """Apply one table message (already routed by ``parse_message``), in one transaction:
        :meth:`apply_batch` of one."""
        return self.apply_batch([message], checked=checked)[0]

    def apply_batch(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        checked: bool = False,
        texts: Sequence[str] | None = None,
        received: Sequence[int] | None = None,
    ) -> list[Result]:
        """Apply ``messages`` in order in one transaction (group commit: one fsync for the
        burst) and return one :class:`Result` each, exactly as successive :meth:`apply` calls
        would give: each message sees what the ones before it changed, and a refused one rolls
        back only its own savepoint. Nothing is committed if the transaction fails (the
        exception propagates: acknowledge none of them), a :class:`LedgerFenced` from the
        fence included. The transaction first asks the fence, then holds every meter row
        (PostgreSQL: ``FOR UPDATE``; SQLite: ``BEGIN IMMEDIATE`` holds the file).
        ``checked``: the caller got them from ``parse_message``, which checked them against
        their schemas (the service does; checking twice was half the controller's time).
        ``texts``: each message as it arrived (JSON), kept in ``applied.message`` as the
        signed record; without them the message is written out again. ``received``: the
        controller's UTC ms each message arrived (default: now, for the whole batch)."""
        if texts is not None and len(texts) != len(messages):
            raise ValueError(f"{len(texts)} texts for {len(messages)} messages")
        if received is not None and len(received) != len(messages):
            raise ValueError(f"{len(received)} times for {len(messages)} messages")
        now = self.now_ms()
        db = self._db
        results: list[Result] = []
        moved: dict[str, int] = {}  # table -> the acked sequence its messages took
        try:
            with db.pipeline():  # PostgreSQL: a read waits, a write does not
                db.begin_write()
                self._fenced()  # its own round trip: nothing is held before it answers
                self._start_batch()
                for i, message in enumerate(messages):
                    table = message.get("table") if isinstance(message, dict) else None
                    self._stamp(table if isinstance(table, str) else None,
                                received[i] if received else now)  # fmt: skip
                    result = self._apply_one(message, checked, texts[i] if texts else None)
                    if result.status in (Status.APPLIED, Status.REFUSED):  # the seq is taken
                        moved[result.table] = result.seq
                    results.append(result)
                for table, seq in moved.items():  # once a table a batch, not once a message
                    db.execute("UPDATE tables SET acked=? WHERE table_id=?", (seq, table))
                for pool, (updates, hits) in self._unwritten.items():  # once a pool a batch
                    db.execute(
                        "UPDATE meters SET value=?, seq=seq+?, hits=hits+? WHERE pool=?",
                        (str(self._meters[pool]), updates, hits, pool),
                    )
                db.commit()
        except BaseException:
            db.rollback()  # after the pipeline: a rollback queued behind an error would wait
            raise
        finally:
            self._acked = self._meters = self._hit_counts = self._unwritten = None
            self._heads.forget()
            self.draws.release()
        return results

    def _start_batch(self) -> None:
        """Hold the meter rows and read what the batch starts from, in one round trip:
        every meter and its hits, every table's acked sequence, the chains' heads, the terms
        in force (refused with :class:`LedgerFenced` if another controller changed them).
        The batch keeps them up to date as it writes (the rows are held: no one else
        moves them until it ends)."""
        db = self._db
        db.lock_money()
        terms = db.execute("SELECT value FROM meta WHERE key=?", (TERMS_KEY,))
        meters = db.execute("SELECT pool, value, hits FROM meters")
        acked = db.execute("SELECT table_id, acked FROM tables")
        heads = db.execute(self._heads.read_sql())
        row = terms.fetchone()  # the first read waits for all five answers
        self._check_terms(row[0] if row else None)
        rows = meters.fetchall()
        self._meters = {pool: _frac(value) for pool, value, _ in rows}
        self._hit_counts = {pool: hits for pool, _, hits in rows}
        self._acked = dict(acked.fetchall())
        self._heads.known(heads.fetchone())
        self.draws.hold()
        self._unwritten = {}

    def _apply_one(self, message: dict[str, Any], checked: bool, text: str | None) -> Result:
        """One message inside the batch's transaction; writes nothing unless it takes its
        sequence number (applied or refused)."""
        kind = message.get("kind") if isinstance(message, dict) else None
        try:
            if kind not in TABLE_KINDS:
                raise LinkMessageError(None, "kind", f"{kind!r} is not a table message kind")
            if not checked:
                validate(kind, message)
        except LinkMessageError as exc:
            return Result(Status.MALFORMED, None, None, reason=str(exc), alarm="malformed")
        table, seq = message["table"], message["seq"]
        content = digest(message)
        db = self._db
        acked = self._acked.get(table)
        if acked is None:
            row = db.execute("SELECT acked FROM tables WHERE table_id=?", (table,)).fetchone()
            if row is None:
                reason = f"table {table!r} is not in the jackpot config: list it under a property"
                return Result(
                    Status.UNKNOWN_TABLE, table, seq, reason=reason, alarm="unknown_table"
                )
            acked = self._acked[table] = row[0]
        if seq <= acked:
            stored = db.execute(
                "SELECT digest FROM applied WHERE table_id=? AND seq=?", (table, seq)
            ).fetchone()
            if stored is not None and stored[0] != content:
                reason = (
                    f"seq {seq} was applied with other content: the table reused a sequence "
                    "number or the message is forged; nothing changed, check the table's "
                    "outbox and keys"
                )
                return Result(Status.CONFLICT, table, seq, reason=reason, alarm="seq_conflict")
            reason = f"seq {seq} was already applied (a resend): acknowledged again"
            return Result(Status.DUPLICATE, table, seq, ack=acked, reason=reason)
        if seq > acked + 1:
            reason = f"seq {seq} is beyond the next expected {acked + 1}: resend from there"
            return Result(Status.GAP, table, seq, ack=acked, resend_from=acked + 1, reason=reason)
        self._changed: list[str] = []
        # what the savepoint cannot undo: the meters kept here until the batch's end
        kept = (dict(self._meters), dict(self._hit_counts),
                {pool: list(n) for pool, n in self._unwritten.items()})  # fmt: skip
        db.execute("SAVEPOINT work")
        alarm = None
        try:
            if kind not in _KEY_ASKED_BY_KIND:
                self._key_replay(message, db.execute(
                    "SELECT 1 FROM applied WHERE table_id=? AND key=?", (table, message["key"])
                ).fetchone())  # fmt: skip
            awards = getattr(self, f"_apply_{kind}")(message)
            db.execute("RELEASE work")
            status, reason = Status.APPLIED, None
        except _Refused as refused:
            db.execute("ROLLBACK TO work")
            db.execute("RELEASE work")
            # as before the message: the savepoint undid what it wrote and linked (the chains'
            # heads and the live draws are read again), and its meter moves are dropped
            self._meters, self._hit_counts, self._unwritten = kept
            self._heads.forget()
            self.draws.hold()
            self._changed = []
            for award in refused.awards:
                self._insert_award(award)
            status, reason, awards = Status.REFUSED, refused.reason, refused.awards
            alarm = refused.alarm
        row = (table, seq, message["key"], kind, message["boot"], status.value, reason,
               json.dumps(message, sort_keys=True) if text is None else text, content,
               self._now, self._day)  # fmt: skip
        db.execute(
            "INSERT INTO applied (table_id, seq, key, kind, boot, outcome, reason, message,"
            " digest, received_utc, gaming_day, chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*row, self._heads.next("applied", row)),
        )
        self._acked[table] = seq  # the tables row is written once, at the batch's end
        return Result(
            status, table, seq, seq, None, reason, tuple(awards), tuple(self._changed), alarm
        )

    def _key_replay(self, message: dict[str, Any], found: Any) -> None:
        """Refuse ``message`` if its key was applied before (``found``: the ledger's
        answer, truthy if so): a replay under a new sequence number."""
        if found:
            reason = f"key {message['key']!r} was already applied (a replay)"
            raise _Refused("key_replay", reason, self._claim_refusal(message, reason))

    def _move(self, pool: str, table: str | None, seq: int | None, what: str, amount: Fraction,
              change_n: int | None = None):  # fmt: skip
        row = (pool, table, seq, what, str(amount), self._now, self._day, change_n)
        self._db.execute(
            "INSERT INTO movements (pool, table_id, seq, what, amount, t_utc, gaming_day,"
            " change_n, chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*row, self._heads.next("movements", row)),
        )

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
        row = (*vars(a).values(), self._now, self._day)  # the award's fields in order
        self._db.execute(
            f"INSERT INTO awards ({_AWARD_COLUMNS}, offered_utc, gaming_day, chain)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*row, self._heads.next("awards", row)),
        )  # fmt: skip

    # -- the terms of a table's game -------------------------------------------------------

    def _profile(self, table: str, game: str, alarm: str) -> HouseRules:
        """The profile ``game``, which ``table`` must be allowed to run."""
        allowed = self.config.games_for(table)
        if allowed is not None and game not in allowed:
            raise _Refused(
                alarm,
                f"table {table} may run only {', '.join(allowed)}, not {game!r}: list the game "
                "under the table's or its property's games in the jackpot config if approved",
            )
        if game not in self._games:
            try:
                if game.endswith(".toml"):  # load_game would take it for a file path
                    raise ProfileError(game, "", None, "a profile name, not a file")
                self._games[game] = load_game(game)
            except ProfileError as exc:
                raise _Refused(alarm, f"game {game!r} is not a known profile: {exc}") from None
        return self._games[game]

    def _wager_terms(
        self, table: str, p: dict[str, Any], alarm: str
    ) -> tuple[HouseRules, Any, ProgressivePool]:
        """The game's profile, its side bet for the payload's wager and the pool it feeds;
        the stake must be the wager the game fixes, the spot one the table has. Refused
        (``alarm``) otherwise."""
        if problem := self.config.spot_problem(table, p["spot"]):  # issue 26: spot 9 of 7
            raise _Refused(alarm, problem)
        profile = self._profile(table, p["game"], alarm)
        game, wager = p["game"], p["wager"]
        rules = getattr(profile.side_bets, wager) if wager in PROGRESSIVE_WAGERS else None
        if rules is None:
            raise _Refused(alarm, f"game {game!r} has no progressive wager {wager!r}")
        if rules.pool != p["pool"]:
            raise _Refused(
                alarm, f"game {game!r} feeds its {wager} wager to pool {rules.pool!r}, "
                f"not {p['pool']!r}"
            )  # fmt: skip
        pool = self.config.pools.get(p["pool"])
        if not isinstance(pool, ProgressivePool) or wager not in pool.wagers:
            raise _Refused(alarm, f"no progressive pool {p['pool']!r} fed by wager {wager!r}")
        if p["stake"] != rules.wager:  # the profile fixes the wager (Blazing 7's: $5)
            raise _Refused(
                alarm, f"stake {p['stake']} cents is not the {rules.wager} cent {wager} "
                f"wager game {game!r} fixes"
            )  # fmt: skip
        return profile, rules, pool

    # -- the kinds ---------------------------------------------------------------------------

    def _apply_contribution(self, message: dict[str, Any]) -> list[Award]:
        table, seq, p = message["table"], message["seq"], message["payload"]
        terms = "contribution_terms"
        # the key's replay check and what the table reported and contributed so far, in one
        # statement (one round trip to PostgreSQL instead of five), checked in the order of
        # the rules below (the pool as the payload names it: the twin matters only once
        # _wager_terms found that very pool)
        replayed, reported, last_reported, latest, twin = self._db.execute(
            "SELECT EXISTS (SELECT 1 FROM applied WHERE table_id=? AND key=?),"
            " (SELECT seq FROM round_results WHERE table_id=? AND round=?),"
            " (SELECT MAX(round) FROM round_results WHERE table_id=?),"
            " (SELECT MAX(round) FROM contributions WHERE table_id=?),"
            " (SELECT seq FROM contributions"
            "  WHERE table_id=? AND round=? AND spot=? AND pool=?)",
            (table, message["key"], table, p["round"], table, table, table, p["round"],
             p["spot"], p["pool"]),
        ).fetchone()  # fmt: skip
        self._key_replay(message, replayed)
        profile, _, pool = self._wager_terms(table, p, terms)
        eligible = profile.mystery.offered and p["wager"] in profile.mystery.eligible_wagers
        if p["mystery"] != eligible:
            raise _Refused(
                terms, f"game {p['game']!r} makes the {p['wager']} wager "
                f"{'' if eligible else 'not '}eligible for the Mystery; the contribution says "
                f"mystery={json.dumps(p['mystery'])}"
            )  # fmt: skip
        mystery = self.config.mystery_for(p["wager"]) if eligible else None
        if eligible and mystery is None:
            raise _Refused(terms, f"no Mystery pool is fed by wager {p['wager']!r}")
        if reported is not None:
            raise _Refused(
                terms, f"round {p['round']} was already reported (seq {reported}): a "
                "contribution comes at no more bets, before the round's result"
            )  # fmt: skip
        if last_reported is not None and p["round"] < last_reported:
            raise _Refused(
                terms, f"a contribution for round {p['round']} is before round "
                f"{last_reported}, which the table already reported: a table's rounds only "
                "go forward"
            )  # fmt: skip
        if latest is not None and p["round"] < latest:
            raise _Refused(
                terms, f"a contribution for round {p['round']} after one for round {latest}: "
                "a table's rounds only go forward"
            )  # fmt: skip
        if twin is not None:
            raise _Refused(
                "contribution_duplicate", f"round {p['round']} spot {p['spot']} already "
                f"contributed to {pool.name} (seq {twin}): one contribution per spot and round"
            )  # fmt: skip
        self._db.execute(
            "INSERT INTO contributions VALUES (?, ?, ?, ?, ?)",
            (table, p["round"], p["spot"], pool.name, seq),
        )
        added = contribution(pool, p["stake"])
        self._move(pool.name, table, seq, "contribution", added)
        self._set_meter(pool.name, self._meter(pool.name) + added)
        if mystery is None:
            return []
        added = contribution(mystery, p["stake"])
        meter = self._meter(mystery.name)
        if problem := mystery_ceiling_problem(mystery, added):
            raise _Refused(
                "mystery_ceiling",
                f"{mystery.name}: {problem} ({mystery.must_hit_by} cents): the pool's "
                "contribution is too large for its range; fix the jackpot config",
            )
        self._move(mystery.name, table, seq, "contribution", added)
        trigger, cycle = self.draws.live(mystery.name)
        try:
            step = mystery_step(mystery, meter, added, trigger)
        except ValueError as exc:  # only after a restart above a fresh trigger
            raise _Refused("mystery_ceiling", f"{exc}: the contribution is refused") from None
        del trigger
        if not step.hit:
            self._set_meter(mystery.name, step.meter)
            return []
        self._move(mystery.name, table, seq, "award", Fraction(-step.award))
        self._move(mystery.name, table, seq, "seed", Fraction(mystery.seed))
        self._move(mystery.name, table, seq, "excess", step.excess)
        order = self._hits(mystery.name) + 1
        self._set_meter(mystery.name, step.meter, hit=True)
        # the next trigger: never below the meter now showing (rounded up), so no award is
        # less than what a sign displayed (docs/profiles.md, "Must-Hit-By Mystery")
        self.draws.end(mystery.name, "hit", self._now, f"{table}/{seq}")
        self._db.execute("UPDATE mystery SET cycle=? WHERE pool=?", (cycle + 1, mystery.name))
        low = next_low(mystery.must_hit_from, step.meter)
        self.draws.draw(mystery.name, cycle + 1, low, mystery.must_hit_by, self._now, self._day)
        award = Award(f"{table}/{seq}", table, "offered", seq, message["key"], p["round"],
                      p["spot"], mystery.name, "100% of meter", step.award, order, None,
                      step.award)  # fmt: skip
        self._insert_award(award)
        return [award]

    def _apply_round_result(self, message: dict[str, Any]) -> list[Award]:
        """Recorded as the proof of the round's cards; no money moves."""
        table, p = message["table"], message["payload"]
        # the key's replay check and the table's reports so far: one statement
        replayed, reported, last = self._db.execute(
            "SELECT EXISTS (SELECT 1 FROM applied WHERE table_id=? AND key=?),"
            " (SELECT seq FROM round_results WHERE table_id=? AND round=?),"
            " (SELECT MAX(round) FROM round_results WHERE table_id=?)",
            (table, message["key"], table, p["round"], table),
        ).fetchone()
        self._key_replay(message, replayed)
        profile = self._profile(table, p["game"], "round_result_terms")
        for spot in sorted({s["spot"] for s in p["spots"] + p["settlements"]}):
            if problem := self.config.spot_problem(table, spot):
                raise _Refused("round_result_terms", problem)
        if reported is not None:
            raise _Refused(
                "round_result_duplicate",
                f"round {p['round']} was already reported (seq {reported}): one result a round",
            )
        _forward(last, p["round"], "round_result_order", "the result of")
        if problem := _cards_problem(p, profile.shoe.decks):
            raise _Refused("round_result_cards", problem)
        self._db.execute(
            "INSERT INTO round_results VALUES (?, ?, ?)", (table, p["round"], message["seq"])
        )
        return []

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

        def refuse(alarm: str, reason: str) -> _Refused:
            return _Refused(alarm, reason, self._claim_refusal(message, reason))

        try:
            profile, rules, pool = self._wager_terms(table, p, "claim_terms")
        except _Refused as exc:
            raise refuse(exc.alarm, exc.reason) from None
        if p["meter"] not in pool.lines:
            raise refuse("claim_terms", f"{p['meter']!r} is not a line of pool {pool.name!r}")
        if p["wager"] != blazing_7s.BET:  # pragma: no cover - the only progressive wager
            raise refuse("claim_terms", f"no evaluator for wager {p['wager']!r}")
        # the proof: the round as the table reported it before the claim
        rnd, spot_no = p["round"], p["spot"]
        row = self._db.execute(
            "SELECT a.message FROM round_results r JOIN applied a"
            " ON a.table_id=r.table_id AND a.seq=r.seq WHERE r.table_id=? AND r.round=?",
            (table, rnd),
        ).fetchone()
        if row is None:
            raise refuse(
                "claim_unproven", f"round {rnd} has no round_result from {table}: a table "
                "publishes the round's result, with every spot's cards, before its claims"
            )  # fmt: skip
        result = json.loads(row[0])["payload"]
        if result["game"] != p["game"]:
            raise refuse("claim_unproven", f"round {rnd} was reported as {result['game']!r}")
        spot = next((s for s in result["spots"] if s["spot"] == spot_no), None)
        dealer = result["dealer"]
        if spot is None or p["cards"] != spot["first_two"] or dealer[:1] != [p["up_card"]]:
            shown = f"{spot['first_two'] if spot else 'no cards'} and up card {dealer[:1]}"
            raise refuse(
                "claim_cards", f"the claim's cards {p['cards']} and up card {p['up_card']} are "
                f"not round {rnd} spot {spot_no} as reported: {shown}"
            )  # fmt: skip
        if problem := _cards_problem(result, profile.shoe.decks):
            raise refuse("claim_cards", problem)
        if not any(
            (s["spot"], s["wager"], s.get("pool"), s.get("meter"), s["stake"], s["outcome"])
            == (spot_no, p["wager"], pool.name, p["meter"], p["stake"], "win")
            and s["reason"] == p["line"]
            for s in result["settlements"]
        ):
            raise refuse(
                "claim_unproven", f"round {rnd}'s result settled no {p['line']!r} "
                f"({p['meter']}) on spot {spot_no}'s {p['wager']} wager of pool {pool.name}"
            )  # fmt: skip
        if not self._db.execute(
            "SELECT 1 FROM contributions WHERE table_id=? AND round=? AND spot=? AND pool=?",
            (table, rnd, spot_no, pool.name),
        ).fetchone():
            raise refuse("claim_unproven", f"no contribution from round {rnd} spot {spot_no}")
        if self._db.execute(
            "SELECT 1 FROM awards WHERE table_id=? AND round=? AND spot=? AND pool=?"
            " AND state!='refused'",
            (table, rnd, spot_no, pool.name),
        ).fetchone():
            raise refuse("claim_duplicate", f"round {rnd} spot {spot_no} was already awarded")
        try:
            first_two = parse_cards(" ".join(p["cards"]))
            (up_card,) = parse_cards(p["up_card"])
            won = blazing_7s.evaluate(first_two, up_card, rules)
        except (CardError, ValueError) as exc:
            raise refuse("claim_cards", f"cards not evaluable: {exc}") from None
        if not won.wins or not isinstance(won.pays, MeterShare):
            raise refuse("claim_cards", f"the cards do not qualify for {p['meter']!r}: {won.label}")
        if won.pays.percent != parse_share(p["meter"]):
            raise refuse(
                "claim_cards", f"the cards make {won.label!r} ({won.pays}), not {p['meter']!r}"
            )
        meter = self._meter(pool.name)
        before = math.floor(meter)  # the whole cents the award is a share of
        amount = share_award(Fraction(before), won.pays.percent)
        if amount < 1:
            raise refuse("claim_terms", "the meter holds less than a cent")
        self._move(pool.name, table, seq, "award", Fraction(-amount))
        after = meter - amount
        if won.pays.percent == 100:
            self._move(pool.name, table, seq, "seed", Fraction(pool.reset))
            after += pool.reset
        order = self._hits(pool.name) + 1
        self._set_meter(pool.name, after, hit=True)
        offered = Award(f"{table}/{seq}", table, "offered", seq, message["key"], rnd, spot_no,
                        pool.name, p["meter"], amount, order, None, before)  # fmt: skip
        self._insert_award(offered)
        return [offered]

    def _apply_award_confirm(self, message: dict[str, Any]) -> list[Award]:
        p, alarm = message["payload"], "confirm_mismatch"
        row = self._db.execute(
            f"SELECT {_AWARD_COLUMNS}, chain FROM awards WHERE award_id=?", (p["award_id"],)
        ).fetchone()
        if row is None:
            raise _Refused(alarm, f"no award {p['award_id']!r}")
        award, link = Award(*row[:-1]), row[-1]
        if award.table != message["table"]:
            raise _Refused(alarm, f"award {award.award_id!r} belongs to another table")
        if award.state != "offered":
            raise _Refused(alarm, f"award {award.award_id!r} is {award.state}, not offered")
        if (p["amount"], p["pool"], p["round"], p["spot"]) != (
            award.amount, award.pool, award.round, award.spot
        ):  # fmt: skip
            raise _Refused(alarm, f"the confirm does not match award {award.award_id!r}")
        self._db.execute(
            "UPDATE awards SET state='committed', confirm_seq=?, committed_utc=?,"
            " confirm_chain=? WHERE award_id=?",
            (message["seq"], self._now,
             None if link is None else chains.confirm_link(link, message["seq"], self._now),
             award.award_id),
        )  # fmt: skip
        return [Award(**{**vars(award), "state": "committed"})]

    def _apply_event(self, message: dict[str, Any]) -> list[Award]:
        """A table's significant event, kept in ``events`` (jackpot/events.py: refused on no
        term, both clocks stored); no meter moves."""
        events.record(self._db, message, self._now, self._day)
        return []


def _forward(last: int | None, rnd: int, alarm: str, what: str) -> None:
    """Refuse round ``rnd`` if it is before ``last``, the table's last reported round: a
    table's rounds only go forward (a stolen key cannot reopen a settled round, nor reuse an
    old round number)."""
    if last is not None and rnd < last:
        raise _Refused(
            alarm, f"{what} round {rnd} is before round {last}, which the table already "
            "reported: a table's rounds only go forward"
        )  # fmt: skip


def _cards_problem(result: dict[str, Any], decks: int) -> str | None:
    """What makes a round_result payload's cards impossible in a shoe of ``decks`` decks:
    a spot listed twice, first two cards that are not among the spot's hands, or a card
    dealt (dealer and every hand) more often than the shoe holds it. None if possible."""
    counts: Counter[str] = Counter(result["dealer"])
    spots: set[int] = set()
    for spot in result["spots"]:
        if spot["spot"] in spots:
            return f"round {result['round']}: spot {spot['spot']} is listed twice"
        spots.add(spot["spot"])
        held = Counter(card for hand in spot["hands"] for card in hand)
        if Counter(spot["first_two"]) - held:
            return (
                f"round {result['round']}: spot {spot['spot']}'s first two cards "
                f"{spot['first_two']} are not in its hands {spot['hands']}"
            )
        counts += held
    for card, count in sorted(counts.items()):
        if count > decks:
            return (
                f"round {result['round']}: card {card} was dealt {count} times; a {decks}-deck "
                f"shoe holds it {decks} times"
            )
    return None
