"""Tables against the ledger: ``jackpot-controller reconcile --ledger L JOURNAL...``.

Each table's journal is replayed (read-only, from its first event or from the state its
file starts at) to the messages its events made, numbered as its outbox numbered them; each
is compared with the ledger's row of the same table and sequence:

- missing from the ledger (the table sent it, or still holds it in its outbox; a difference
  until it is applied), refused by the ledger (the player's money moved at the table, not on
  the meter), or applied with other content (its SHA-256 content digest differs, or the
  stored message no longer has the digest it was applied with);
- every contribution moved each pool it feeds by exactly the pool's contribution rate in
  force when it was applied (the ledger's terms history) times its stake;
- the ledger holds nothing the table never wrote (a sequence after the journal's last);
- the outbox: it wrote as many messages as the journal's events made, and what it deleted
  as acknowledged the ledger does hold.

The result says what differs, table by table (:class:`TableCheck`); docs/jackpot/audit.md.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.errors import EventError, JournalError, ProfileError
from controller.games import load_game
from controller.journal.file import Journal
from controller.link.signing import digest
from controller.table import Table
from controller.table import checkpoint as checkpoints
from controller.table.effects import Publish
from jackpot.money import cents_text
from jackpot.reports import Reader, ReportError


class ReconcileError(ReportError):
    """A journal that cannot be read, or whose table cannot be found in the ledger."""


@dataclass
class Sent:
    """What a table's journal says it sent: per sequence, the kind, key and payload."""

    path: Path
    messages: dict[int, tuple[str, str, dict[str, Any]]]
    written: int  # the outbox's highest sequence ever written
    acked: int  # the outbox's highest sequence the controller acknowledged


@dataclass
class TableCheck:
    table: str
    journals: list[Path]
    sent: int = 0
    applied: int = 0
    differences: list[str] = field(default_factory=list)
    totals: dict[str, list] = field(default_factory=dict)  # pool -> [count, stake, cents]

    def lines(self) -> list[str]:
        pools = ", ".join(
            f"{pool} {n} contributions, stake {cents_text(stake)}, "
            f"{cents_text(amount)} cents contributed"
            for pool, (n, stake, amount) in sorted(self.totals.items())
        )  # fmt: skip
        head = (f"{self.table}: {self.sent} messages in {len(self.journals)} journal(s), "
                f"{self.applied} applied in the ledger; {pools or 'no contributions'}")  # fmt: skip
        if not self.differences:
            return [f"{head}: ok"]
        return [f"{head}: {len(self.differences)} DIFFERENCES"] + [
            f"{self.table}: {d}" for d in self.differences
        ]


def read_journal(path: Path) -> Sent:
    """Replay ``path`` to the messages its events made (never writing it)."""
    try:
        journal = Journal(path)
    except JournalError as exc:
        raise ReconcileError(str(exc)) from None
    try:
        rules, settings = load_game(journal.game), journal.settings
        origin = journal.origin()
        table = Table(rules, settings)
        if origin is not None:
            table = checkpoints.restore(rules, settings, origin.state)
        since = journal.outbox_since() or 0
        seq = origin.written if origin else 0
        messages: dict[int, tuple[str, str, dict[str, Any]]] = {}
        for entry in journal.entries(after=origin.seq if origin else 0):
            for effect in table.handle(journal._parse(entry)).effects:
                if isinstance(effect, Publish) and entry.seq > since:
                    seq += 1
                    payload = json.loads(json.dumps(effect.payload))  # as the wire has it
                    messages[seq] = (effect.topic, effect.key, payload)
        written, acked, _pending = journal.outbox_rows()
    except (JournalError, EventError, ProfileError, ValueError) as exc:
        raise ReconcileError(f"{path}: cannot replay the journal: {exc}") from None
    finally:
        journal.close()
    return Sent(path, messages, written, acked)


def _rates(reader: Reader) -> dict[str, list[tuple[int | None, Fraction]]]:
    """Each pool's contribution rate over time: (from UTC ms, rate), oldest first."""
    out: dict[str, list[tuple[int | None, Fraction]]] = defaultdict(list)
    for t_utc, detail in reader.rows("SELECT t_utc, detail FROM changes ORDER BY n"):
        for entry in json.loads(detail):
            if entry.get("term") == "contribution" and entry["new"] is not None:
                out[entry["subject"].split(":", 1)[1]].append((t_utc, Fraction(entry["new"])))
    return out


def _rate_at(history: list[tuple[int | None, Fraction]], when: int | None) -> Fraction | None:
    rate = history[0][1] if history else None  # an untimed row: the first rate recorded
    for since, value in history:
        if when is not None and since is not None and since <= when:
            rate = value
    return rate


def find_table(reader: Reader, sent: Sent) -> str:
    """The ledger's table whose applied rows have this journal's first messages."""
    tables = [t for (t,) in reader.rows("SELECT table_id FROM tables ORDER BY table_id")]
    stored = {(t, s): d for t, s, d in reader.rows("SELECT table_id, seq, digest FROM applied")}
    for table in tables:
        for seq, message in sent.messages.items():
            if stored.get((table, seq)) == _digest(table, seq, message):
                return table
    raise ReconcileError(
        f"{sent.path}: no table of the ledger has this journal's messages: name it as "
        "TABLE=JOURNAL (e.g. hcm-bj-07=/var/lib/table-controller/journal.sqlite)"
    )


def _digest(table: str, seq: int, message: tuple[str, str, dict[str, Any]]) -> str:
    kind, key, payload = message
    return digest({"v": 1, "table": table, "seq": seq, "key": key, "kind": kind,
                   "payload": payload})  # fmt: skip


def reconcile(reader: Reader, table: str, journals: list[Sent]) -> TableCheck:
    check = TableCheck(table, [s.path for s in journals])
    sent: dict[int, tuple[str, str, dict[str, Any]]] = {}
    for one in journals:
        sent.update(one.messages)
        if one.written != max(one.messages, default=one.written):
            check.differences.append(
                f"{one.path}: its outbox wrote up to seq {one.written}, its events made up to "
                f"{max(one.messages, default=0)}"
            )
    check.sent = len(sent)
    ledger = {s: (k, o, r, m, d, t) for s, k, o, r, m, d, t in reader.rows(
        "SELECT seq, kind, outcome, reason, message, digest, received_utc FROM applied"
        " WHERE table_id=? ORDER BY seq", (table,))}  # fmt: skip
    (acked,) = reader.rows("SELECT acked FROM tables WHERE table_id=?", (table,))[0] or (0,)
    moves: dict[int, dict[str, Fraction]] = defaultdict(dict)
    for seq, pool, amount in reader.rows(
        "SELECT seq, pool, amount FROM movements WHERE table_id=? AND what='contribution'",
        (table,),
    ):
        moves[seq][pool] = moves[seq].get(pool, Fraction(0)) + Fraction(amount)
    rates = _rates(reader)
    for seq in sorted(sent):
        kind, key, payload = sent[seq]
        row = ledger.get(seq)
        where = f"seq {seq} {kind} {key}"
        if row is None:
            late = " (still in the table's outbox: not yet delivered)" if seq > acked else ""
            check.differences.append(f"{where}: in the journal, not in the ledger{late}")
            continue
        _kind, outcome, reason, text, stored, received = row
        if stored != _digest(table, seq, sent[seq]):
            check.differences.append(f"{where}: the ledger applied other content (digest)")
            continue
        if digest(json.loads(text)) != stored:
            check.differences.append(f"{where}: the ledger's stored message was changed after "
                                     "it was applied (its digest no longer matches)")  # fmt: skip
            continue
        check.applied += 1
        if outcome != "applied":
            check.differences.append(f"{where}: refused by the ledger: {reason}")
            continue
        if kind == "contribution":
            for pool, amount in sorted(moves.get(seq, {}).items()):
                rate = _rate_at(rates.get(pool, []), received)
                total = check.totals.setdefault(pool, [0, 0, Fraction(0)])
                total[0] += 1
                total[1] += payload["stake"]
                total[2] += amount
                if rate is not None and amount != rate * payload["stake"]:
                    check.differences.append(
                        f"{where}: moved {pool} by {cents_text(amount)} cents; the rate in force "
                        f"({rate} of the stake) on {payload['stake']} cents is "
                        f"{cents_text(rate * payload['stake'])}"
                    )
            if not moves.get(seq):
                check.differences.append(f"{where}: applied, but no meter moved")
    last = max(sent, default=0)
    for seq in sorted(s for s in ledger if s > last):
        check.differences.append(
            f"seq {seq} {ledger[seq][0]}: in the ledger, never written by the table (a forgery, "
            "or a journal not given)"
        )
    outbox_acked = max((one.acked for one in journals), default=0)
    if outbox_acked > acked:
        check.differences.append(
            f"the table deleted its messages up to seq {outbox_acked} as acknowledged; the "
            f"ledger acknowledged up to {acked}"
        )
    return check
