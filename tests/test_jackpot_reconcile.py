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
from controller.link.signing import Signer, new_signing_key
from controller.table.effects import Publish
from jackpot.commands import run
from jackpot.ledger import Ledger, Status
from jackpot.pools import load_config
from jackpot.store import open_store

TABLES = ("hcm-bj-07", "hcpn-bj-01")


def journal(path, seed: int, rounds: int = 6):
    """A table's journal after a seeded session; its outbox rows (all unacknowledged)."""
    with JournaledTable(path, load_game("pa-standard"), SETTINGS) as table:
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
    assert len(lines) == 2 and all(line.endswith(": ok") for line in lines)
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
    seq = rows[1].seq
    sql(location, "UPDATE applied SET message=REPLACE(message, '\"stake\":500', '\"stake\":5000')"
                  f" WHERE seq={seq}")  # fmt: skip
    sql(location, f"UPDATE applied SET received_utc=1 WHERE seq={rows[-1].seq}")
    status, lines = cli(capsys, "audit-signatures", "--ledger", location)
    assert status == 1
    failed = [line for line in lines if line.startswith("FAILED")]
    assert len(failed) == 2
    assert failed[0].startswith(f"FAILED seq {seq} ") and "does not match" in failed[0]
    assert failed[1].startswith(f"FAILED seq {rows[-1].seq} ") and "did not trust" in failed[1]
