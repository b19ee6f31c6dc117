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

Here: the ledger's transactions (opening, :meth:`Ledger.apply_batch`, audited writes) and its
reads. The rules of each message kind are in jackpot/ledger_kinds.py, what applying gives
(:class:`Status`, :class:`Result`, :class:`Award`) in jackpot/ledger_results.py, its reads
outside a batch in jackpot/ledger_reads.py, its row writes in jackpot/ledger_rows.py, the chains
in jackpot/chain.py, the SQL dialects in jackpot/store/. A batch on PostgreSQL runs in
psycopg's pipeline mode: a write does not wait for its answer, a read waits once for all
that is due; it reads what it starts from in one round trip, each kind's checks in one
statement, and writes each meter row once, at its end (docs/jackpot/controller.md, "What a
batch sends the database").
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.link.messages import TABLE_KINDS, LinkMessageError, validate
from controller.link.signing import digest
from jackpot import chain as chains
from jackpot.draws import Draws, TriggerKey, key_path, next_low
from jackpot.ledger_end import LATER_ON_SERVER, write_end
from jackpot.ledger_facts import BatchFacts
from jackpot.ledger_kinds import KEY_ASKED_BY_KIND, KindRules
from jackpot.ledger_reads import LedgerReads
from jackpot.ledger_results import Award, Refused, Result, Status, frac
from jackpot.ledger_rows import LedgerRows
from jackpot.parameters import TERMS_KEY
from jackpot.pools import JackpotConfig, MysteryPool, ProgressivePool
from jackpot.store import (
    Fence,
    LedgerError,
    LedgerFenced,
    Location,
    Store,
    meters_for_update,
    open_store,
)

if TYPE_CHECKING:
    from jackpot.store.sqlite import Checkpointer

__all__ = ["Award", "Ledger", "LedgerError", "LedgerFenced", "Result", "Status"]

SCHEMA_VERSION = 5  # both backends (jackpot/store/sqlite.py, jackpot/store/postgres.py)

#: A PostgreSQL batch's start: the meters' lock (:meth:`Store.lock_money`'s, in its order)
#: reading the values and hit counts of the rows it holds.
_METERS_HELD = meters_for_update("pool, value, hits")


class Ledger(KindRules, LedgerReads, LedgerRows):
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
        # inside apply_batch: the applied and movements rows not yet written (each table's
        # written in one statement at the batch's end: nothing in a batch reads them back
        # but through what is kept here: each row's key, its digest, a round's result)
        self._rows: dict[str, list[tuple[Any, ...]]] | None = None
        self._batch_keys: set[tuple[str, str]] = set()
        self._batch_digests: dict[tuple[str, int], str | None] = {}
        self._batch_results: dict[tuple[str, int], str] = {}
        self._digest: str | None = None  # the message being applied's, from the intake
        self._facts: BatchFacts | None = None  # PostgreSQL: the checks' facts, once a batch
        self._start_text: str | None = None  # PostgreSQL: _start_sql, made once
        self._clock = clock
        self._now: int | None = None  # the controller's UTC ms of what is being written
        self._day: str | None = None  # and its gaming day
        self._stamped: tuple[Any, ...] = (None, None, None)  # (gaming day, ms, its day)
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

    def checkpoint_apart(self) -> Checkpointer | None:
        """SQLite: WAL checkpoints on a thread apart, not in commits; returns that
        :class:`~jackpot.store.sqlite.Checkpointer` (its counts). PostgreSQL: None."""
        return getattr(self._db, "checkpoint_apart", lambda: None)()

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
        self._now = now = self.now_ms() if utc_ms is None else utc_ms
        gaming_day = self.config.gaming_day_for(table)
        # the rows of a frame arrive at one moment: their day is worked out once (3.6 us)
        if self._stamped[:2] != (gaming_day, now):
            self._stamped = (gaming_day, now, gaming_day.day_of(now))
        self._day = self._stamped[2]

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
        digests: Sequence[str | None] | None = None,
        meanwhile: Callable[[], None] | None = None,
    ) -> list[Result]:
        """Apply ``messages`` in order in one transaction (group commit: one fsync for the burst)
        and return one :class:`Result` each, exactly as successive :meth:`apply` calls
        would give: each message sees what the ones before it changed, and a refused one
        writes nothing but its own record (its kind's checks all run before its first
        write). Nothing is committed if the transaction fails (the exception propagates:
        acknowledge none of them), a :class:`LedgerFenced` from the fence included. The
        transaction first asks the fence, then holds every meter row (PostgreSQL: ``FOR
        UPDATE``; SQLite: ``BEGIN IMMEDIATE`` holds the file). ``checked``: the caller
        got them from ``parse_message``, which checked them against their schemas (the
        service does; checking twice was half the controller's time). ``texts``: each
        message as it arrived (JSON), kept in ``applied.message`` as the signed record;
        without them the message is written out again. ``received``: the controller's
        UTC ms each message arrived (default: now, for the whole batch). ``digests``: each
        message's content digest where the caller has it (jackpot/intake.py
        ``content_digest``; None: computed here). ``meanwhile``: called once the COMMIT is
        sent, before its answer is awaited (PostgreSQL only: the server's fsync overlaps it);
        it must not touch the ledger and decides nothing: the batch may still fail."""
        if texts is not None and len(texts) != len(messages):
            raise ValueError(f"{len(texts)} texts for {len(messages)} messages")
        if received is not None and len(received) != len(messages):
            raise ValueError(f"{len(received)} times for {len(messages)} messages")
        if digests is not None and len(digests) != len(messages):
            raise ValueError(f"{len(digests)} digests for {len(messages)} messages")
        now = self.now_ms()
        db = self._db
        results: list[Result] = []
        moved: dict[str, int] = {}  # table -> the acked sequence its messages took
        # with a fence (a hot standby's term), BEGIN waits for its answer before the pipeline:
        # a session the next term ended says so there (57P01: "a newer term ... took over");
        # in the pipeline the same end reads as a connection lost, cause unknown
        fenced = self._fence is not None
        try:
            if fenced:
                db.begin_write()
            with db.pipeline():  # PostgreSQL: a read waits, a write does not
                if not fenced:
                    db.begin_write()
                self._fenced()  # its own round trip: nothing is held before it answers
                self._start_batch(messages)
                for i, message in enumerate(messages):
                    table = message.get("table") if isinstance(message, dict) else None
                    self._stamp(table if isinstance(table, str) else None,
                                received[i] if received else now)  # fmt: skip
                    self._digest = digests[i] if digests else None
                    result = self._apply_one(message, checked, texts[i] if texts else None)
                    if result.status in (Status.APPLIED, Status.REFUSED):  # the seq is taken
                        moved[result.table] = result.seq
                    results.append(result)
                write_end(db, self._rows, moved, {  # PostgreSQL: one statement
                    pool: (str(self._meters[pool]), updates, hits)
                    for pool, (updates, hits) in self._unwritten.items()
                })  # fmt: skip
                db.commit()
                if meanwhile is not None and db.round_trips:
                    meanwhile()
        except BaseException:
            db.rollback()  # after the pipeline: a rollback queued behind an error would wait
            raise
        finally:
            self._acked = self._meters = self._hit_counts = self._unwritten = None
            self._rows = self._facts = None
            self._batch_keys, self._batch_digests, self._batch_results = set(), {}, {}
            self._heads.forget()
            self.draws.release()
        return results

    def _start_batch(self, messages: Sequence[Any]) -> None:
        """Hold the meter rows and read what the batch starts from, in one round trip:
        every meter and its hits (the lock's own rows), every table's acked sequence, the
        chains' heads, the live Mystery draws, the terms in force (refused with
        :class:`LedgerFenced` if another controller changed them). The batch keeps them up
        to date as it writes (the rows are held: no one else moves them until it ends).
        Where a read costs no round trip (SQLite) each is read when first needed instead: a
        batch of one reads less. On PostgreSQL the same round trip reads what the batch's
        contributions and round results are checked against (jackpot/ledger_facts.py)."""
        db = self._db
        self.draws.hold()
        self._unwritten = {}
        self._rows = {"applied": [], "movements": []}
        if not db.round_trips:
            db.lock_money()
            self._terms_current()
            self._meters, self._hit_counts, self._acked = {}, {}, {}
            return
        self._rows.update((name, []) for name in LATER_ON_SERVER)
        # this transaction's prepared statements run their generic plan: a statement of
        # unnest arrays was planned again at each use (its custom plan looked cheaper than the
        # generic one, whose arrays it cannot see), about 0.3 ms of the server's time a batch
        # for the facts alone; each generic plan probes indexes (tests/test_ledger_facts.py)
        db.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        # the lock of lock_money (every meter row, in its order) reading the rows it holds
        meters = db.execute(_METERS_HELD)
        if self._start_text is None:
            self._start_text = self._start_sql()
        start = db.execute(self._start_text, (TERMS_KEY,))
        facts = BatchFacts(messages)
        if facts:
            facts.ask(db.execute)
        rows = meters.fetchall()  # the first read waits for all the answers
        read: dict[str, list[tuple[Any, ...]]] = {"terms": [], "acked": [], "draw": [], "head": []}
        for what, name, number, text in start.fetchall():
            read[what].append((name, number, text))
        self._check_terms(read["terms"][0][0] if read["terms"] else None)
        self._meters = {pool: frac(value) for pool, value, _ in rows}
        self._hit_counts = {pool: hits for pool, _, hits in rows}
        self._acked = {table: acked for table, acked, _ in read["acked"]}
        heads = {table: link for table, _, link in read["head"]}
        self._heads.known(tuple(heads[table] for table in chains.TABLES))
        self.draws.known(read["draw"])
        if facts:
            facts.read()
            self._facts = facts

    def _start_sql(self) -> str:
        """PostgreSQL: what a batch starts from but the meters, one statement (its one
        parameter: the terms' ``meta`` key), a row each as (what, name, number, text): the
        terms in force (``terms``, value), each table's acked sequence (``acked``, table,
        seq), each live Mystery draw (``draw``, pool, cycle, sealed), each chain's head
        (``head``, table, None, last link)."""
        heads = " UNION ALL ".join(
            f"SELECT 'head', '{table}', NULL, (SELECT chain FROM {table}"
            f" ORDER BY {chains.order(table, self._db.award_order)} DESC LIMIT 1)"
            for table in chains.TABLES
        )
        return (
            "SELECT 'terms', value, NULL::bigint, NULL::text FROM meta WHERE key=?"
            " UNION ALL SELECT 'acked', table_id, acked, NULL FROM tables"
            " UNION ALL SELECT 'draw', pool, cycle, sealed FROM draws WHERE ended IS NULL"
            f" UNION ALL {heads}"
        )

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
        content = self._digest or digest(message)  # the intake's, if it had it
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
            if (table, seq) in self._batch_digests:  # applied earlier in this batch
                stored = (self._batch_digests[(table, seq)],)
            else:
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
        moves = self._rows["movements"] if self._rows is not None else []
        moved = len(moves)
        alarm = None
        try:
            if kind not in KEY_ASKED_BY_KIND:
                self._key_replay(message, db.execute(
                    "SELECT 1 FROM applied WHERE table_id=? AND key=?", (table, message["key"])
                ).fetchone())  # fmt: skip
            awards = getattr(self, f"_apply_{kind}")(message)
            status, reason = Status.APPLIED, None
        except Refused as refused:
            # every kind runs all its checks before its first write (jackpot/ledger_kinds.py):
            # a refused message wrote nothing and moved no meter, so there is nothing to undo
            # and no savepoint a message (PostgreSQL: two statements less a message, and no
            # subtransaction: over 64 in a transaction overflowed its subtransaction cache);
            # a kind that broke that rule would commit half a message: the batch is undone
            if self._changed or len(moves) != moved:
                raise LedgerError(
                    f"{kind} seq {seq} of {table} was refused after it had moved money "
                    f"({refused.reason}): the whole batch is rolled back and nothing is "
                    "acknowledged; this is a fault of the controller's software, report it"
                ) from refused
            self._changed = []
            for award in refused.awards:
                self._insert_award(award)
            status, reason, awards = Status.REFUSED, refused.reason, refused.awards
            alarm = refused.alarm
        if text is None:
            text = json.dumps(message, sort_keys=True)
        row = (table, seq, message["key"], kind, message["boot"], status.value, reason, text,
               content, self._now, self._day)  # fmt: skip
        self._rows["applied"].append((*row, self._heads.next("applied", row)))
        self._batch_keys.add((table, message["key"]))
        self._batch_digests[(table, seq)] = content
        if kind == "round_result" and status is Status.APPLIED:  # a claim's proof
            self._batch_results[(table, message["payload"]["round"])] = text
        self._acked[table] = seq  # the tables row is written once, at the batch's end
        return Result(
            status, table, seq, seq, None, reason, tuple(awards), tuple(self._changed), alarm
        )
