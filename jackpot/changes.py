"""Audited changes to the ledger: its terms, corrections, transfers, retirements.

Each is one write transaction of the :class:`~jackpot.ledger.Ledger` (:meth:`Ledger.write`:
the meter rows held as a batch holds them, the fence asked) that writes one ``changes`` row
(the controller's UTC time and gaming day, the kind, who did it, who approved it, why, the
config's SHA-256, and the detail: each term's old and new value, or each meter's movement)
and the rows it changes. Money moves only as ``movements`` rows that name the change
(``change_n``): ``correction``, ``transfer`` (out of one pool, negative; into another,
positive) and ``seed`` (a new pool). Never raw SQL: docs/jackpot/audit.md.

Kinds: ``initial`` (the first start's terms, or the first after the schema 3 migration),
``parameters`` (``jackpot-controller parameters apply``), ``correction``, ``transfer``,
``retire``.
"""

from __future__ import annotations

import hashlib
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jackpot.draws import next_low
from jackpot.money import dollars
from jackpot.parameters import (
    TERMS_KEY,
    Change,
    ChangeRefused,
    TermsChanged,
    check_names,
    config_terms,
    differences,
    ledger_terms,
    refusal,
    retired_pools,
)
from jackpot.pools import JackpotConfig, MysteryPool

if TYPE_CHECKING:
    from jackpot.ledger import Ledger

CONTROLLER = "jackpot-controller"  # who records the first terms (no person: the software)


def config_sha256(config: JackpotConfig) -> str | None:
    """SHA-256 of the config file as it is on disk (None if ``config.source`` is no file)."""
    try:
        return hashlib.sha256(Path(config.source).read_bytes()).hexdigest()
    except OSError:
        return None


def apply_command(config: JackpotConfig, location: str) -> str:
    return (
        f"jackpot-controller parameters apply {config.source} --ledger {location} "
        "--by NAME --approved-by NAME --reason TEXT"
    )


def _record(led: Ledger, kind: str, by: str, approved: str | None, reason: str,
            detail: list[dict[str, Any]], sha: str | None = None) -> int:  # fmt: skip
    (n,) = led._db.execute(
        "INSERT INTO changes (t_utc, gaming_day, kind, by_name, approved_by, reason,"
        " config_sha256, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING n",
        (led._now, led._day, kind, by, approved, reason, sha, json.dumps(detail)),
    ).fetchone()
    return int(n)


def _write_terms(led: Ledger, n: int, changes: list[Change], timed: bool = True) -> None:
    """The changed terms, and the key history of every table whose keys changed."""
    db = led._db
    for c in changes:
        if c.new is None:
            db.execute("DELETE FROM parameters WHERE subject=? AND term=?", (c.subject, c.term))
        else:
            db.execute(
                "INSERT INTO parameters VALUES (?, ?, ?, ?) ON CONFLICT (subject, term)"
                " DO UPDATE SET value=excluded.value, change_n=excluded.change_n",
                (c.subject, c.term, c.new, n),
            )
        if c.subject.startswith("table:") and c.term == "keys":
            table = c.subject.split(":", 1)[1]
            old = dict(k.split("=", 1) for k in (c.old or "").split(",") if k)
            new = dict(k.split("=", 1) for k in (c.new or "").split(",") if k)
            for kid, public in old.items():
                if new.get(kid) != public:
                    db.execute(
                        "UPDATE table_keys SET until_n=?, until_utc=? WHERE table_id=? AND kid=?"
                        " AND until_n IS NULL",
                        (n, led._now, table, kid),
                    )
            for kid, public in new.items():
                if old.get(kid) != public:
                    db.execute(
                        "INSERT INTO table_keys VALUES (?, ?, ?, ?, ?, NULL, NULL)",
                        (table, kid, public, n, led._now if timed else None),
                    )
    db.execute(
        "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
        (TERMS_KEY, str(n)),
    )
    led._terms_n = str(n)


def record_terms(led: Ledger, check: bool) -> bool:
    """At opening, inside its transaction: a ledger without terms records the config's
    (``initial``; True: the caller adds the config's tables and pools); one whose terms
    differ raises :class:`TermsChanged` (unless ``check`` is False: ``parameters apply``)."""
    db = led._db
    recorded = ledger_terms(db)
    wanted = config_terms(led.config)
    if recorded:
        changes = differences(recorded, wanted)
        if changes and check:
            raise TermsChanged(led.location, changes, apply_command(led.config, led.location))
        return False
    led._fenced()
    db.lock_money()
    migrated = db.execute("SELECT 1 FROM meters").fetchone() is not None
    changes = [Change(s, t, None, v) for (s, t), v in sorted(wanted.items())]
    meters = {p: Fraction(v) for p, v in db.execute("SELECT pool, value FROM meters")}
    if migrated and (
        why := refusal(changes, led.config, meters, apply_command(led.config, led.location))
    ):
        raise ChangeRefused(
            f"{led.location}: this ledger was migrated from schema 2 and its first terms get the "
            f"checks of parameters apply: {why}"
        )  # fmt: skip
    for (pool,) in db.execute("SELECT pool FROM meters ORDER BY pool").fetchall():
        if pool not in led.config.pools:  # a pool the config dropped: owed until it is zero
            changes.append(Change(f"pool:{pool}", "status", None, "retired"))
    reason = (
        "the terms of the config at the first start after the schema 3 migration (the ledger "
        "kept none before)" if migrated else "the terms of the config at the first start"
    )  # fmt: skip
    n = _record(led, "initial", CONTROLLER, None, reason, [c.as_dict() for c in changes],
                config_sha256(led.config))  # fmt: skip
    _write_terms(led, n, changes, timed=not migrated)
    if migrated:
        redrawn = _redraw_carried_over(led, meters, n)
        if redrawn:
            detail = [c.as_dict() for c in changes] + redrawn
            db.execute("UPDATE changes SET detail=? WHERE n=?", (json.dumps(detail), n))
    return True


def _redraw_carried_over(led: Ledger, meters: dict[str, Fraction], n: int) -> list[dict[str, Any]]:
    """The live triggers schema 2 carried over that the terms now in force do not allow
    (below the meter, rounded up, or ``must_hit_from``; above ``must_hit_by``): each ended
    ``redrawn`` (revealed, ``award_id`` ``change/{n}``) and drawn again; one detail entry for
    ``changes`` each. A trigger in range is kept: never a silent redraw."""
    out = []
    for pool in led.config.pools.values():
        if not isinstance(pool, MysteryPool) or pool.name not in meters:
            continue
        meter = meters[pool.name]
        trigger, cycle = led.draws.live(pool.name)
        low = next_low(pool.must_hit_from, meter)
        if trigger < math.ceil(meter):
            why = f"below the meter {dollars(meter)}"
        elif trigger < pool.must_hit_from:
            why = f"below must_hit_from {dollars(pool.must_hit_from)}"
        elif trigger > pool.must_hit_by:
            why = f"above must_hit_by {dollars(pool.must_hit_by)}"
        else:
            continue
        old = f"cycle {cycle}: trigger {dollars(trigger)} carried over from schema 2, {why}"
        del trigger
        _redraw(led, pool, meter, n)
        out.append({
            "subject": f"pool:{pool.name}", "term": "draw", "old": old,
            "new": f"redrawn: cycle {cycle + 1} drawn in [{dollars(low)}, "
                   f"{dollars(pool.must_hit_by)}]",
        })  # fmt: skip
    return out


def _redraw(led: Ledger, pool: MysteryPool, meter: Fraction, n: int) -> None:
    """End the live draw (revealed) and draw again in [max(from, meter), by]."""
    cycle = led.draws.end(pool.name, "redrawn", led._now, f"change/{n}")
    led._db.execute("UPDATE mystery SET cycle=? WHERE pool=?", (cycle + 1, pool.name))
    low = next_low(pool.must_hit_from, meter)
    led.draws.draw(pool.name, cycle + 1, low, pool.must_hit_by, led._now, led._day)


def apply_config(led: Ledger, by: str, approved_by: str, reason: str) -> tuple[int, list[Change]]:
    """Make ``led.config``'s terms the ledger's (``parameters apply``); the ledger was
    opened with ``check_terms=False``. Returns the change's number and what changed."""
    by, approved_by, reason = check_names(by, approved_by, reason)
    config = led.config
    with led.write() as db:
        changes = differences(ledger_terms(db), config_terms(config))
        if not changes:
            raise ChangeRefused(
                f"the ledger's terms are already those of {config.source}: nothing to apply"
            )
        meters = {p: Fraction(v) for p, v in db.execute("SELECT pool, value FROM meters")}
        retire = (
            f"jackpot-controller pool retire {{pool}} --config CONFIG --ledger {led.location} "
            "--by NAME --approved-by NAME --reason TEXT"
        )
        if why := refusal(changes, config, meters, retire):
            raise ChangeRefused(why)
        n = _record(led, "parameters", by, approved_by, reason, [c.as_dict() for c in changes],
                    config_sha256(config))  # fmt: skip
        _write_terms(led, n, changes)
        for table in sorted(config.tables):
            db.execute("INSERT INTO tables VALUES (?, 0) ON CONFLICT DO NOTHING", (table,))
        ranges = {c.subject for c in changes if c.term in ("must_hit_from", "must_hit_by")}
        for pool in config.pools.values():
            if pool.name not in meters:
                led.add_pool(pool, n)
            elif isinstance(pool, MysteryPool) and f"pool:{pool.name}" in ranges:
                _redraw(led, pool, meters[pool.name], n)
    return n, changes


def _active(led: Ledger, pool: str) -> Fraction:
    """The meter of ``pool``, which must be a pool of the ledger (retired or not)."""
    row = led._db.execute("SELECT value FROM meters WHERE pool=?", (pool,)).fetchone()
    if row is None:
        known = ", ".join(p for (p,) in led._db.execute("SELECT pool FROM meters ORDER BY pool"))
        raise ChangeRefused(f"no pool {pool!r} in the ledger (pools: {known})")
    return Fraction(row[0])


def _move_meter(led: Ledger, pool: str, amount: Fraction, what: str, n: int) -> dict[str, Any]:
    meter = _active(led, pool)
    after = meter + amount
    if after < 0:
        raise ChangeRefused(
            f"{pool}: {dollars(meter)} {what} {dollars(amount)} would leave {dollars(after)}: a "
            "meter does not go below $0.00"
        )
    cfg = led.config.pools.get(pool)
    if isinstance(cfg, MysteryPool) and after >= cfg.must_hit_by:
        raise ChangeRefused(
            f"{pool}: {dollars(after)} would be at or above must_hit_by "
            f"{dollars(cfg.must_hit_by)}: the Mystery must hit before it"
        )
    led._move(pool, None, None, what, amount, n)
    led._set_meter(pool, after)
    if isinstance(cfg, MysteryPool) and amount > 0:  # the trigger may now be below the meter
        _redraw(led, cfg, after, n)
    return {"pool": pool, "amount": str(amount), "meter_before": str(meter), "meter": str(after)}


def correct(led: Ledger, pool: str, amount: Fraction, by: str, approved_by: str,
            reason: str) -> int:  # fmt: skip
    """Add ``amount`` cents (negative: take) to ``pool``'s meter."""
    by, approved_by, reason = check_names(by, approved_by, reason)
    if amount == 0:
        raise ChangeRefused("--amount is $0.00: a correction moves money")
    with led.write():
        _active(led, pool)
        n = _record(led, "correction", by, approved_by, reason, [])
        detail = [_move_meter(led, pool, amount, "correction", n)]
        led._db.execute("UPDATE changes SET detail=? WHERE n=?", (json.dumps(detail), n))
    return n


def transfer(led: Ledger, source: str, target: str, amount: Fraction | None, by: str,
             approved_by: str, reason: str) -> tuple[int, Fraction]:  # fmt: skip
    """Move ``amount`` cents (None: the whole meter) from ``source`` to ``target``."""
    by, approved_by, reason = check_names(by, approved_by, reason)
    if source == target:
        raise ChangeRefused(f"a transfer from {source} to itself moves nothing")
    with led.write() as db:
        meter = _active(led, source)
        _active(led, target)
        if target in retired_pools(ledger_terms(db)):
            raise ChangeRefused(f"{target} is retired: nothing is transferred into it")
        amount = meter if amount is None else amount
        if amount <= 0:
            raise ChangeRefused(
                f"a transfer moves more than $0.00 ({source} holds {dollars(meter)})"
            )
        n = _record(led, "transfer", by, approved_by, reason, [])
        detail = [_move_meter(led, source, -amount, "transfer", n),
                  _move_meter(led, target, amount, "transfer", n)]  # fmt: skip
        db.execute("UPDATE changes SET detail=? WHERE n=?", (json.dumps(detail), n))
    return n, amount


def retire(led: Ledger, pool: str, by: str, approved_by: str, reason: str) -> int:
    """The pool is fed and published no more; its meter stays, owed, until moved to zero."""
    by, approved_by, reason = check_names(by, approved_by, reason)
    with led.write() as db:
        meter = _active(led, pool)
        if pool in retired_pools(ledger_terms(db)):
            raise ChangeRefused(f"{pool} is already retired")
        change = Change(f"pool:{pool}", "status", "active", "retired")
        detail = [{**change.as_dict(), "meter": str(meter)}]
        n = _record(led, "retire", by, approved_by, reason, detail)
        _write_terms(led, n, [change])
        if isinstance(led.config.pools.get(pool), MysteryPool):
            led.draws.end(pool, "retired", led._now, f"change/{n}")
    return n
