"""The ledger's hash chains (issue 29 item 5), on SQLite and PostgreSQL: an edited movement
or award is found by ``jackpot-controller verify-ledger``, naming the row; a schema 4
ledger migrates and its chains start there."""

from __future__ import annotations

from pg_server import ledger_at, pg_server  # noqa: F401
from test_jackpot_ledger import CONFIG, T1, confirm, contrib, fixed, hit

from jackpot.chain import V5_COLUMNS
from jackpot.commands import run
from jackpot.ledger import Ledger, Status
from jackpot.store import open_store


def played(location, first: int = 1) -> None:
    """Three contributions, a 10% Blazing 7's hit and its confirm: every chained table."""
    with Ledger(location, CONFIG, randbelow=fixed(10)) as led:
        for seq in range(first, first + 3):
            assert led.apply(contrib(T1, seq, seq)).status is Status.APPLIED
        rnd = first  # a round with a contribution: its spot may claim
        (award,) = hit(led, T1, first + 3, rnd, ["7H", "7H"], "7H", "10% of meter").awards
        assert led.apply(confirm(T1, first + 5, award)).status is Status.APPLIED


def sql(location, statement: str, *params) -> list:
    store = open_store(location)
    try:
        cursor = store.execute(statement, params)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []
    finally:
        store.close()


def verify(capsys, location) -> tuple[int, str]:
    status = run(["verify-ledger", "--ledger", str(location)])
    return status, capsys.readouterr().out


def test_an_edited_movement_or_award_is_found_by_verify_ledger(ledger_at, capsys):  # noqa: F811
    location = ledger_at()
    played(location)
    status, out = verify(capsys, location)
    assert status == 0, out
    assert "applied: 6 rows verify: ok" in out and "awards: 2 rows verify: ok" in out

    ((n,),) = sql(location, "SELECT min(n) FROM movements WHERE what = 'contribution'")
    sql(location, "UPDATE movements SET amount = '500000' WHERE n = ?", n)
    status, out = verify(capsys, location)
    assert status == 1
    assert f"movements: row {n} (movements pool " in out
    assert "contribution 500000) does not verify (altered)" in out
    assert "applied: 6 rows verify: ok" in out  # the other chains still hold

    sql(
        location,
        "UPDATE awards SET state = 'offered', confirm_seq = NULL, committed_utc = NULL"
        " WHERE state = 'committed'",
    )
    status, out = verify(capsys, location)
    assert status == 1 and f"(awards award {T1}/" in out
    assert "does not verify (its commit was altered)" in out


def test_a_schema_4_ledger_migrates_and_its_chains_start_there(ledger_at, capsys):  # noqa: F811
    location = ledger_at()
    played(location)
    for table, column in V5_COLUMNS:  # what schema 4 had
        sql(location, f"ALTER TABLE {table} DROP COLUMN {column}")
    sql(location, "DELETE FROM meta WHERE key = 'chain_since'")
    sql(location, "UPDATE meta SET value = '4' WHERE key = 'schema'")
    played(location, first=7)  # migrates, then applies more
    status, out = verify(capsys, location)
    assert status == 0, out
    assert "applied: 6 rows verify (6 from before the chain): ok" in out
    sql(location, "UPDATE applied SET reason = 'edited' WHERE seq = 6")  # not chained
    assert verify(capsys, location)[0] == 0
    sql(location, "UPDATE applied SET reason = 'edited' WHERE seq = 7")
    status, out = verify(capsys, location)
    assert status == 1 and f"(applied table {T1} seq 7 contribution) does not verify" in out
