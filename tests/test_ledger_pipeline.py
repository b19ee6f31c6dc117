"""The ledger's batch path on PostgreSQL (issue 32 item 2): psycopg's pipeline mode, one round
trip a read, each meter row written once a batch. It must store what the per-statement path
stores, byte for byte (every row, every chain link, every meter), on a real PostgreSQL
(tests/pg_server.py) beside a real SQLite file; a statement the server refuses inside the
pipeline commits nothing and is a ledger error, as before.
"""

from __future__ import annotations

import random

import pytest
from pg_server import pg_server  # noqa: F401
from test_jackpot_events import event
from test_jackpot_ledger import CONFIG, HITS, T1, T2, T3, claim, confirm, contrib, fixed, result

from jackpot.commands import run
from jackpot.ledger import Ledger, LedgerError, Status
from jackpot.store import Store, open_store
from jackpot.store.postgres import PostgresStore

#: Every ledger table's columns compared, in a fixed row order; left out: ``draws``' salt,
#: commitment and sealed trigger (a fresh salt each run) and the backend's own row numbers.
CONTENT = {
    "meta": ("key, value", "key"),
    "tables": ("table_id, acked", "table_id"),
    "meters": ("pool, value, seq, hits", "pool"),
    "mystery": ("pool, cycle", "pool"),
    "applied": ("table_id, seq, key, kind, boot, outcome, reason, message, digest,"
                " received_utc, gaming_day, chain", "n"),
    "movements": ("pool, table_id, seq, what, amount, t_utc, gaming_day, change_n, chain", "n"),
    "awards": ("award_id, table_id, state, claim_seq, claim_key, round, spot, pool, meter,"
               " amount, hit_order, reason, meter_before, confirm_seq, offered_utc,"
               " committed_utc, gaming_day, chain, confirm_chain", "claim_seq, table_id"),
    "contributions": ("table_id, round, spot, pool, seq", "table_id, seq, pool"),
    "round_results": ("table_id, round, seq", "table_id, seq"),
    "draws": ("pool, cycle, drawn_utc, gaming_day, low, high, trigger_cents, ended, ended_utc,"
              " award_id", "pool, cycle"),
    "events": ("table_id, seq, code, table_utc_ms, received_utc, gaming_day, round, in_round,"
               " detail, by_name, payload", "table_id, seq"),
    "parameters": ("subject, term, value, change_n", "subject, term"),
    "changes": ("t_utc, gaming_day, kind, by_name, approved_by, reason, config_sha256, detail",
                "n"),
    "table_keys": ("table_id, kid, public_key, from_n, from_utc, until_n, until_utc",
                   "table_id, kid, from_n"),
}  # fmt: skip

T0 = 1_800_000_000_000  # the controller's UTC ms of the first message


def clock() -> float:
    return T0 / 1000


def content(location) -> dict[str, list[tuple]]:
    store = open_store(location)
    try:
        return {
            table: [tuple(r) for r in store.execute(f"SELECT {cols} FROM {table} ORDER BY {by}")]
            for table, (cols, by) in CONTENT.items()
        }
    finally:
        store.close()


def stream(seed: int) -> list[dict]:
    """Rounds from three tables (contributions, results, meter-line claims: Mystery and
    Blazing 7's hits), events, a resend, a gap, a refused contribution, a replayed key."""
    rng = random.Random(seed)
    seqs = dict.fromkeys([T1, T2, T3], 0)
    out: list[dict] = []

    def nxt(table: str) -> int:
        seqs[table] += 1
        return seqs[table]

    for rnd in range(1, 70):
        table = rng.choice([T1, T2, T3])
        line = rng.choice([None] * 5 + ["100", "10"])
        cards, up = HITS[line] if line else (["4C", "9C"], "2D")
        meter = f"{line}% of meter" if line else None
        for spot in range(1, rng.randint(1, 4) + 1):
            out.append(contrib(table, nxt(table), rnd, spot=spot))
        out.append(result(table, nxt(table), rnd, cards, up, meter))
        if line:
            out.append(claim(table, nxt(table), rnd, cards, up, meter))
        if rnd % 9 == 0:
            out.append(event(table, nxt(table), "shoe_door_open", T0 - 5, rnd=rnd))
        if rnd == 20:
            out.append(out[-2])  # a resend: a duplicate
            out.append(contrib(table, seqs[table] + 5, rnd + 1))  # a gap
            out.append(contrib(table, nxt(table), rnd, spot=5, stake=10**6))  # refused
            old = next(m for m in out if m["table"] == table and m["kind"] == "contribution")
            out.append(dict(old, seq=nxt(table)))  # an old key under a new seq: refused
    return out


def confirms(led: Ledger) -> list[dict]:
    """A confirm of every offered award, each from its own table's next sequence."""
    acked = led.acks()
    out = []
    for award in led.awards():
        if award.state == "offered":
            acked[award.table] += 1
            out.append(confirm(award.table, acked[award.table], award))
    return out


def apply(location, messages: list[dict], rng: random.Random | None) -> list:
    """Apply ``messages`` one by one (``rng`` None) or in batches of random sizes, each with
    the time it arrived; then a confirm of each award offered, the same way. The results."""
    with Ledger(location, CONFIG, randbelow=fixed(40), clock=clock) as led:
        out: list = []
        for part in (messages, None):
            if part is None:
                part = confirms(led)
            start = 0
            while start < len(part):
                size = 1 if rng is None else rng.randint(1, 30)
                chunk = part[start : start + size]
                times = [T0 + 3 * (start + i) for i in range(len(chunk))]
                out += led.apply_batch(chunk, checked=True, received=times)
                start += size
        return out


def test_pipelined_batches_store_what_one_statement_at_a_time_stores(
    pg_server,  # noqa: F811
    tmp_path,
    monkeypatch,
    capsys,
):
    messages = stream(32)
    lite = tmp_path / "one-by-one.db"
    plain, piped = pg_server.create_database(), pg_server.create_database()
    try:
        want = apply(lite, messages, None)
        with monkeypatch.context() as m:  # the path before issue 32: a wait a statement
            m.setattr(PostgresStore, "pipeline", Store.pipeline)
            assert apply(plain, messages, None) == want
        assert apply(piped, messages, random.Random(5)) == want
        statuses = {r.status for r in want}
        assert {Status.APPLIED, Status.DUPLICATE, Status.GAP, Status.REFUSED} <= statuses
        assert sum(1 for r in want if r.awards and r.awards[0].state == "committed") >= 3
        expected = content(lite)
        assert len(expected["applied"]) > 200 and expected["events"]
        assert {a[2] for a in expected["awards"]} >= {"committed"}
        assert content(plain) == expected
        assert content(piped) == expected
        assert run(["verify-ledger", "--ledger", piped]) == 0, capsys.readouterr().out
    finally:
        pg_server.drop_database(plain)
        pg_server.drop_database(piped)


class Watched:
    """Round trips of psycopg connections: a wait for the server's answer."""

    def __init__(self, monkeypatch) -> None:
        import psycopg

        self.round_trips = 0
        real = psycopg.Connection.wait

        def wait(conn, gen, *args, **kw):
            if conn._pipeline is None or gen.__name__ in ("_fetch_gen", "_sync_gen", "_exit_gen"):
                self.round_trips += 1
            return real(conn, gen, *args, **kw)

        monkeypatch.setattr(psycopg.Connection, "wait", wait)


def test_a_batch_of_contributions_waits_once_a_contribution(pg_server, monkeypatch):  # noqa: F811
    """A batch waits for the server at its fence, at its start (the meter rows held and what
    it starts from read together), once a contribution (its checks in one statement; its
    writes do not wait) and at its commit: never once a statement."""
    location = pg_server.create_database()
    try:
        with Ledger(location, CONFIG, randbelow=fixed(70_000), clock=clock) as led:
            led.apply(contrib(T1, 1, 1))  # the first Mystery draw's key is loaded
            batch = [contrib(T1, seq, seq) for seq in range(2, 22)]
            watched = Watched(monkeypatch)
            results = led.apply_batch(batch, checked=True)
            assert {r.status for r in results} == {Status.APPLIED}
            assert watched.round_trips <= 3 + len(batch), watched.round_trips
            assert led.ack(T1) == 21
    finally:
        pg_server.drop_database(location)


def test_a_statement_refused_inside_the_pipeline_commits_nothing(pg_server):  # noqa: F811
    """A write the server refuses (a trigger here) surfaces at the batch's next wait: a
    ledger error, nothing of the batch committed; the same connection applies it once the
    cause is gone."""
    location = pg_server.create_database()
    try:
        with Ledger(location, CONFIG, randbelow=fixed(70_000), clock=clock) as led:
            led.apply(contrib(T1, 1, 1))
            before = content(location)
            led._db.execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
                " 'BEGIN RAISE EXCEPTION ''refused by the test''; END'"
            )
            led._db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON contributions FOR EACH ROW"
                " WHEN (NEW.round = 4) EXECUTE FUNCTION refuse()"
            )
            batch = [contrib(T1, seq, seq) for seq in range(2, 8)]
            with pytest.raises(LedgerError, match="refused by the test"):
                led.apply_batch(batch, checked=True)
            assert content(location) == before
            led._db.execute("DROP TRIGGER refuse ON contributions")
            results = led.apply_batch(batch, checked=True)
            assert [r.status for r in results] == [Status.APPLIED] * len(batch)
            assert led.ack(T1) == 7
    finally:
        pg_server.drop_database(location)
