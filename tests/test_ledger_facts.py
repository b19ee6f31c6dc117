"""A batch's checks read once at its start (jackpot/ledger_facts.py, PostgreSQL) and its rows
written at its end (jackpot/ledger.py) give what one-by-one application gives, where a
message depends on one before it in the same batch: a twin spot, a replayed key, a round
reported then contributed to, an older round after a newer one, a result reported twice, a
claim proven by a result of the same batch, a resend of a sequence the batch applied (the
same content and other content), a claim of a spot awarded in the same batch or before, a
claim of a spot that did not contribute. Both backends; every result and every stored row compared.
"""

from __future__ import annotations

import pytest
from pg_server import ledger_at, pg_server  # noqa: F401
from test_jackpot_ledger import CONFIG, T1, T2, claim, contrib, fixed, result, state

from jackpot.ledger import Ledger, Status


def _stream() -> list[dict]:
    seven = ["7D", "7D"]
    out = [
        contrib(T1, 1, 1, spot=1),
        contrib(T1, 2, 1, spot=2),
        contrib(T1, 3, 1, spot=1),  # seq 1's key again: a replay, refused
        result(T1, 4, 1, seven, "7D"),
        claim(T1, 5, 1, seven, "7D"),  # proven by seq 4, in the same batch
        contrib(T1, 6, 1, spot=3),  # round 1 was reported: refused
        result(T1, 7, 1, seven, "7D"),  # reported twice: refused
        contrib(T1, 8, 3, spot=1),
        contrib(T1, 9, 2, spot=1),  # before round 3: refused
        contrib(T2, 1, 1, spot=1),
        contrib(T2, 2, 2, spot=1),
        {**contrib(T2, 3, 2, spot=1), "key": "other/key"},  # a twin under a new key: refused
        contrib(T2, 2, 2, spot=1),  # a resend of seq 2, the same content
        {**contrib(T2, 2, 9, spot=4), "key": "x"},  # seq 2 with other content: a conflict
        result(T2, 4, 2, ["2C", "3D"], "KS", meter=None),
        contrib(T2, 5, 2, spot=2),  # round 2 reported in this batch: refused
        result(T1, 10, 3, seven, "7D"),
        claim(T1, 11, 3, seven, "7D"),  # proven; its contribution in an earlier batch
        {**claim(T1, 12, 3, seven, "7D"), "key": "again/3"},  # awarded just before: refused
        {**claim(T1, 13, 1, seven, "7D"), "key": "again/1"},  # awarded batches ago: refused
        result(T1, 14, 4, seven, "7D", spot=2),
        claim(T1, 15, 4, seven, "7D", spot=2),  # no contribution from round 4 spot 2: refused
    ]
    return out


@pytest.mark.parametrize("size", [4, 16])
def test_a_batch_that_depends_on_itself_gives_what_one_by_one_gives(ledger_at, size):  # noqa: F811
    stream = _stream()
    one = Ledger(ledger_at("one"), CONFIG, randbelow=fixed(3), clock=lambda: 1_800_000_000.0)
    many = Ledger(ledger_at("many"), CONFIG, randbelow=fixed(3), clock=lambda: 1_800_000_000.0)
    with one, many:
        singles = [one.apply(m) for m in stream]
        batched = []
        for start in range(0, len(stream), size):
            batched += many.apply_batch(stream[start : start + size])
        assert batched == singles
        statuses = [r.status for r in singles]
        assert statuses.count(Status.REFUSED) >= 5 and Status.CONFLICT in statuses
        assert Status.DUPLICATE in statuses and singles[4].awards  # the claim was paid
        alarms = [r.alarm for r in singles[16:]]
        assert alarms == [None, None, "claim_duplicate", "claim_duplicate", None,
                          "claim_unproven"]  # fmt: skip
        assert state(many) == state(one)


def test_the_facts_probe_an_index_whatever_the_plan(pg_server):  # noqa: F811
    """Each of the facts statement's subqueries is one index probe, in PostgreSQL's generic
    plan too (a prepared statement's after its fifth use): as ``IN (SELECT ... unnest)`` the
    generic plan read ``contributions`` and ``round_results`` whole, a batch costing more as
    the ledger grows."""
    import psycopg

    from jackpot.ledger_facts import FACTS_SQL

    stream = _stream()
    location = pg_server.create_database()
    with Ledger(location, CONFIG, randbelow=fixed(3), clock=lambda: 1_800_000_000.0) as led:
        led.apply_batch(stream)
    sql = FACTS_SQL
    for n in range(1, sql.count("?") + 1):
        sql = sql.replace("?", f"${n}", 1)
    with psycopg.connect(location, autocommit=True) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(f"PREPARE facts AS {sql}")
        plan = "\n".join(
            row[0] for row in conn.execute(
                "EXPLAIN EXECUTE facts('{hcm-bj-07}', '{k}', '{1}', '{1}', '{p}')"
            )
        )  # fmt: skip
    assert "Seq Scan" not in plan and plan.count(" using ") == 5, plan
