"""Reconciliation and the signature audit as product commands (issue 27, item 5), both backends.

The auditor relies on ``reconcile`` to say, table by table, what differs between what a
table's journal says it sent and what the ledger applied (exit 1 on any difference), and on
``audit-signatures`` to verify every stored message with the key its table had when it
arrived, a retired key included (exit 1 naming each that fails). The tables here play
real seeded sessions into real journals (``JournaledTable``); their outbox messages are
signed and applied as the controller applies them.
"""

from __future__ import annotations

import json

from _journal_feeder import SETTINGS, session_events
from link_keys import jackpot_config_text, table_signer
from pg_server import ledger_at, pg_server  # noqa: F401
from test_jackpot_ledger import fixed

from controller.games import load_game
from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.messages import envelope, topic_for
from controller.link.signing import Signer, digest, new_signing_key
from controller.table.effects import Publish
from controller.table.events import ShoeEvent
from jackpot.commands import run
from jackpot.ledger import Ledger, Status
from jackpot.pools import load_config
from jackpot.store import open_store

TABLES = ("hcm-bj-07", "hcpn-bj-01")


def journal(path, seed: int, rounds: int = 6):
    """A table's journal after a seeded session, which starts with the shoe's door opened and
    shut (significant events, stamped with their UTC time: issue 28); its outbox rows (all
    unacknowledged)."""
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:
        table.handle(ShoeEvent("door_open"))
        table.handle(ShoeEvent("door_closed"))
        for event in session_events("pa-standard", seed, rounds):
            table.handle(event)
    with Outbox(path) as box:
        return box.pending()


def signed(table: str, rows, signer: Signer | None = None) -> list[tuple[dict, str]]:
    out = []
    for row in rows:
        message = envelope(table, 1, row.seq, Publish(row.kind, row.key, row.payload), 5)
        body = (signer or table_signer(table)).sign(topic_for(table, row.kind), message)
        text = json.dumps(body, separators=(",", ":"))  # as the publisher sends it
        out.append((json.loads(text), text))
    return out


def apply(led, stream) -> None:
    results = led.apply_batch([m for m, _ in stream], texts=[t for _, t in stream])
    assert all(r.status is Status.APPLIED for r in results), [r.reason for r in results]


def cli(capsys, *argv) -> tuple[int, list[str]]:
    status = run([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, (out + err).strip().splitlines()


def sql(location, statement: str) -> None:
    store = open_store(location)
    try:
        store.execute(statement)
    finally:
        store.close()


def test_reconcile_agrees_then_names_each_difference(ledger_at, tmp_path, capsys):  # noqa: F811
    location = ledger_at()
    config_path = tmp_path / "jackpot.toml"
    config_path.write_text(jackpot_config_text())
    paths, streams = {}, {}
    for number, table in enumerate(TABLES):
        paths[table] = tmp_path / f"{table}.journal"
        streams[table] = signed(table, journal(paths[table], seed=11 + number))
    with Ledger(location, load_config(config_path), randbelow=fixed(70_000)) as led:
        for table in TABLES:
            apply(led, streams[table][:-2])  # the last two still on their way
    status, lines = cli(capsys, "reconcile", "--ledger", location, *paths.values())
    assert status == 1
    first, second = TABLES
    assert [line for line in lines if "not in the ledger" in line] == [
        f"{t}: seq {m['seq']} {m['kind']} {m['key']}: in the journal, not in the ledger (still "
        "in the table's outbox: not yet delivered)" for t in TABLES for m, _ in streams[t][-2:]
    ]  # fmt: skip
    with Ledger(location, load_config(config_path)) as led:
        for table in TABLES:
            apply(led, streams[table][-2:])
    status, lines = cli(capsys, "reconcile", "--ledger", location,
                        f"{first}={paths[first]}", paths[second])  # fmt: skip
    assert status == 0, lines
    assert len(lines) == 3 and all(line.endswith(": ok") for line in lines)
    count = sum(m["kind"] == "contribution" for m, _ in streams[first])
    totals = f"blazing_7s {count} contributions, stake {count * 500}, {count * 75} cents"
    assert totals in lines[0]
    # what an auditor must see: a lost message, changed content, a wrong amount, a forgery
    seqs = [m["seq"] for m, _ in streams[first] if m["kind"] == "contribution"]
    sql(location, f"DELETE FROM applied WHERE table_id='{first}' AND seq={seqs[0]}")
    sql(location, "UPDATE applied SET message=REPLACE(message, '\"stake\":500', '\"stake\":5000')"
                  f" WHERE table_id='{first}' AND seq={seqs[1]}")  # fmt: skip
    sql(location, f"UPDATE movements SET amount='76' WHERE table_id='{first}' AND seq={seqs[2]}"
                  " AND pool='blazing_7s' AND what='contribution'")  # fmt: skip
    last = streams[second][-1][0]["seq"]
    sql(location, "INSERT INTO applied (table_id, seq, key, kind, boot, outcome, message, digest)"
                  f" VALUES ('{second}', {last + 1}, 'x', 'contribution', 1, 'applied', '{{}}',"
                  " 'x')")  # fmt: skip
    status, lines = cli(capsys, "reconcile", "--ledger", location, f"{first}={paths[first]}",
                        f"{second}={paths[second]}")  # fmt: skip
    assert status == 1
    text = "\n".join(lines)
    assert f"{first}: seq {seqs[0]} contribution" in text and "not in the ledger" in text
    assert f"seq {seqs[1]} contribution" in text and "stored message was changed" in text
    assert f"seq {seqs[2]} contribution" in text and "moved blazing_7s by 76 cents" in text
    assert f"{second}: seq {last + 1} contribution: in the ledger, never written" in text
    assert f"{first}: " in lines[0] and "4 DIFFERENCES" not in lines[0]  # table by table
    status, lines = cli(capsys, "reconcile", "--ledger", location, f"hcy-bj-99={paths[first]}")
    assert status == 2 and "no table 'hcy-bj-99' in the ledger" in lines[-1]


def test_audit_signatures_keeps_a_retired_key_and_names_a_failure(ledger_at, tmp_path, capsys):  # noqa: F811
    location = ledger_at()
    table = TABLES[0]
    rows = journal(tmp_path / "t.journal", seed=5)
    old = table_signer(table)
    new = Signer(f"{table}-2", new_signing_key())
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text(jackpot_config_text())
    rotated = f'"{new.key_id}" = "{new.public_key}"'
    retired = f'"{old.key_id}" = "{old.public_key}"'
    second.write_text(jackpot_config_text().replace(retired, rotated))
    half = len(rows) // 2
    with Ledger(location, load_config(first), randbelow=fixed(70_000)) as led:
        apply(led, signed(table, rows[:half], old))
    names = ["--by", "J. Smith", "--approved-by", "M. Jones", "--reason", "key change 2026b"]
    assert cli(capsys, "parameters", "apply", second, "--ledger", location, *names)[0] == 0
    with Ledger(location, load_config(second), randbelow=fixed(70_000)) as led:
        apply(led, signed(table, rows[half:], new))
    status, lines = cli(capsys, "audit-signatures", "--ledger", location)
    assert status == 0, lines
    assert lines[0] == (f"signatures: {len(rows)} stored messages, {len(rows)} verified "
                        f"({old.key_id} {half}, {new.key_id} {len(rows) - half})")  # fmt: skip
    # a stored message changed after the fact fails, named; so does one the new key signed
    # but dated before the new key was trusted
    seq = next(row.seq for row in rows if row.kind == "contribution")
    assert seq <= half
    sql(location, "UPDATE applied SET message=REPLACE(message, '\"stake\":500', '\"stake\":5000')"
                  f" WHERE seq={seq}")  # fmt: skip
    sql(location, f"UPDATE applied SET received_utc=1 WHERE seq={rows[-1].seq}")
    status, lines = cli(capsys, "audit-signatures", "--ledger", location)
    assert status == 1
    failed = [line for line in lines if line.startswith("FAILED")]
    assert len(failed) == 2
    assert failed[0].startswith(f"FAILED seq {seq} ")
    assert "does not have the row's digest" in failed[0]
    assert failed[1].startswith(f"FAILED seq {rows[-1].seq} ") and "did not trust" in failed[1]


def played(make, tmp_path):
    """One table's seeded session applied to a new ledger (``make``: the ``ledger_at``
    fixture): (ledger, journal, stream)."""
    location = make()
    config_path = tmp_path / "jackpot.toml"
    config_path.write_text(jackpot_config_text())
    path = tmp_path / "t.journal"
    stream = signed(TABLES[0], journal(path, seed=11))
    with Ledger(location, load_config(config_path), randbelow=fixed(70_000)) as led:
        apply(led, stream)
    return location, path, stream


def test_reconcile_names_a_contribution_that_moved_one_pool(ledger_at, tmp_path, capsys):  # noqa: F811
    """Review finding 5 (tamper B): a contribution with ``mystery`` true feeds its pool and the
    Mystery; a deleted Mystery movement is named, and the Mystery's meter no longer adds up."""
    location, path, stream = played(ledger_at, tmp_path)
    table = TABLES[0]
    status, lines = cli(capsys, "reconcile", "--ledger", location, path)
    assert status == 0, lines
    assert lines[-1] == "ledger: every meter is the sum of its movements: ok"
    first = next(m for m, _ in stream if m["kind"] == "contribution")
    assert first["payload"]["mystery"] is True
    sql(location, f"DELETE FROM movements WHERE table_id='{table}' AND seq={first['seq']}"
                  " AND pool='mystery'")  # fmt: skip
    status, lines = cli(capsys, "reconcile", "--ledger", location, path)
    assert status == 1
    where = f"{table}: seq {first['seq']} contribution {first['key']}"
    assert f"{where}: applied, but did not move mystery" in lines
    assert lines[-2] == "ledger: 1 DIFFERENCES"
    assert lines[-1].startswith("ledger: pool mystery: the meter is ")
    assert "its movements add up to" in lines[-1]


def test_audit_signatures_ties_each_stored_message_to_its_row(ledger_at, tmp_path, capsys):  # noqa: F811
    """Review finding 7 (tamper A): two contributions' texts and digests swapped, each still
    validly signed, are named: the text says another sequence than its row."""
    location, _path, stream = played(ledger_at, tmp_path)
    table = TABLES[0]
    s1, s2 = [m["seq"] for m, _ in stream if m["kind"] == "contribution"][:2]
    store = open_store(location)
    try:
        get = "SELECT message, digest FROM applied WHERE table_id=? AND seq=?"
        (m1, g1), (m2, g2) = (store.execute(get, (table, s)).fetchone() for s in (s1, s2))
        put = "UPDATE applied SET message=?, digest=? WHERE table_id=? AND seq=?"
        store.execute(put, (m2, g2, table, s1))
        store.execute(put, (m1, g1, table, s2))
    finally:
        store.close()
    status, lines = cli(capsys, "audit-signatures", "--ledger", location)
    assert status == 1
    failed = [line for line in lines if line.startswith("FAILED")]
    assert [line.split(" (")[0] for line in failed] == [
        f"FAILED seq {s} contribution from {table}" for s in (s1, s2)
    ]
    assert f"the stored message is not this row's: it says table {table}, seq {s2}," in failed[0]
    # the digest column alone changed: named too
    sql(location, f"UPDATE applied SET message='{m1}', digest='{g2}' WHERE seq={s1}")
    sql(location, f"UPDATE applied SET message='{m2}', digest='{g2}' WHERE seq={s2}")
    status, lines = cli(capsys, "audit-signatures", "--ledger", location)
    assert status == 1
    (failed,) = [line for line in lines if line.startswith("FAILED")]
    assert failed.startswith(f"FAILED seq {s1} ") and "does not have the row's digest" in failed


def test_audit_signatures_trusts_no_key_row_without_its_change(ledger_at, tmp_path, capsys):  # noqa: F811
    """Review finding 6 (tamper C): a key written into ``table_keys`` afterwards, and a
    message replaced by one it signs, are both named; only the changes vouch for a key."""
    location, _path, stream = played(ledger_at, tmp_path)
    table = TABLES[0]
    first = next(m for m, _ in stream if m["kind"] == "contribution")
    evil = Signer(f"{table}-x", new_signing_key())
    sql(location, f"INSERT INTO table_keys VALUES ('{table}', '{evil.key_id}',"
                  f" '{evil.public_key}', 1, NULL, NULL, NULL)")  # fmt: skip
    status, lines = cli(capsys, "audit-signatures", "--ledger", location)
    assert status == 1
    assert [line for line in lines if line.startswith("FAILED")] == [
        f"FAILED key {evil.key_id!r} of {table} (table_keys, from change 1): no change added "
        "this key: a key row without a change behind it is not trusted"
    ]
    store = open_store(location)
    try:
        (text,) = store.execute(
            "SELECT message FROM applied WHERE table_id=? AND seq=?", (table, first["seq"])
        ).fetchone()
        body = json.loads(text)
        body.pop("sig", None)
        body.pop("kid", None)
        body["payload"]["stake"] = 5000
        forged = evil.sign(topic_for(table, "contribution"), body)
        store.execute(
            "UPDATE applied SET message=?, digest=? WHERE table_id=? AND seq=?",
            (json.dumps(forged), digest(forged), table, first["seq"]),
        )
    finally:
        store.close()
    status, lines = cli(capsys, "audit-signatures", "--ledger", location)
    assert status == 1
    failed = [line for line in lines if line.startswith("FAILED")]
    assert len(failed) == 2 and failed[1].startswith(f"FAILED seq {first['seq']} contribution")
    assert f"signed with key {evil.key_id!r}, which the ledger did not trust" in failed[1]
    # a real key's row whose times were moved is named too
    sql(location, f"DELETE FROM table_keys WHERE kid='{evil.key_id}'")
    sql(location, f"UPDATE table_keys SET from_utc=1 WHERE table_id='{table}'")
    status, lines = cli(capsys, "audit-signatures", "--ledger", location)
    failed = [line for line in lines if line.startswith("FAILED")]
    assert status == 1 and "its times or retirement differ from the changes" in failed[0]
