"""Tables against the ledger: ``jackpot-controller reconcile --ledger L JOURNAL...``.

Each table's journal is replayed (read-only, from its first event or from the state its
file starts at) to the messages its events made, numbered as its outbox numbered them; each
is compared with the ledger's row of the same table and sequence:

- missing from the ledger (the table sent it, or still holds it in its outbox; a difference
  until it is applied), refused by the ledger (the player's money moved at the table, not on
  the meter), or applied with other content (its SHA-256 content digest differs, or the
  stored message no longer has the digest it was applied with);
- every contribution moved exactly the pools it feeds (its ``pool``, and with ``mystery``
  true the Mystery pool its wager feeds, by the terms then in force), each by exactly the
  pool's contribution rate in force when it was applied (the ledger's terms history) times
  its stake;
- each pool's meter is the sum of its movements (``excess`` aside): :func:`meter_differences`;
- the ledger holds nothing the table never wrote (a sequence after the journal's last);
- the outbox: it wrote as many messages as the journal's events made, and what it deleted
  as acknowledged the ledger does hold.

The result says what differs, table by table (:class:`TableCheck`); docs/jackpot/audit.md.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.errors import EventError, JournalError, ProfileError
from controller.games import load_game
from controller.journal import chain
from controller.journal.file import Journal
from controller.link.signing import digest
from controller.table import Table, significant
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
                    if effect.topic == "round_result":  # with its record's link, as sent
                        effect = chain.stamp(effect, chain.round_links(journal.db, entry.seq))
                    effect = significant.stamp(effect, entry.utc_ms)  # an event's UTC time
                    seq += 1
                    payload = json.loads(json.dumps(effect.payload))  # as the wire has it
                    messages[seq] = (effect.topic, effect.key, payload)
        written, acked, _pending = journal.outbox_rows()
    except (JournalError, EventError, ProfileError, ValueError, sqlite3.Error) as exc:
        raise ReconcileError(f"{path}: cannot replay the journal: {exc}") from None
    finally:
        journal.close()
    return Sent(path, messages, written, acked)


def _terms_history(reader: Reader) -> list[tuple[int | None, dict[tuple[str, str], str]]]:
    """The terms after each change, oldest first: (the change's UTC ms, the terms)."""
    out: list[tuple[int | None, dict[tuple[str, str], str]]] = []
    terms: dict[tuple[str, str], str] = {}
    for t_utc, detail in reader.rows("SELECT t_utc, detail FROM changes ORDER BY n"):
        terms = dict(terms)
        for entry in json.loads(detail):
            if "subject" not in entry:
                continue
            if entry["new"] is None:
                terms.pop((entry["subject"], entry["term"]), None)
            else:
                terms[(entry["subject"], entry["term"])] = entry["new"]
        out.append((t_utc, terms))
    return out


def _terms_at(history: list, when: int | None) -> dict[tuple[str, str], str]:
    """The terms in force at ``when`` (an untimed row: the first terms recorded)."""
    terms = history[0][1] if history else {}
    for since, value in history:
        if when is not None and since is not None and since <= when:
            terms = value
    return terms


def expected_pools(terms: dict[tuple[str, str], str], payload: dict[str, Any]) -> set[str]:
    """The pools a contribution must move: its ``pool``, and with ``mystery`` true the
    Mystery pool its wager feeds (the terms then in force)."""
    pools = {str(payload.get("pool"))}
    if payload.get("mystery") is True:
        for (subject, term), value in terms.items():
            if (
                term == "kind"
                and value == "mystery"
                and subject.startswith("pool:")
                and payload.get("wager") in terms.get((subject, "wagers"), "").split(",")
            ):
                pools.add(subject.split(":", 1)[1])
        if len(pools) == 1:
            pools.add("(the Mystery pool its wager feeds: none in the terms)")
    return pools


def meter_differences(reader: Reader) -> list[str]:
    """Each pool whose meter is not the sum of its movements (all but ``excess``)."""
    sums: dict[str, Fraction] = defaultdict(Fraction)
    for pool, what, amount in reader.rows("SELECT pool, what, amount FROM movements"):
        if what != "excess":  # information: already inside the meter's contribution
            sums[pool] += Fraction(amount)
    out = []
    for pool, value in reader.rows("SELECT pool, value FROM meters ORDER BY pool"):
        if Fraction(value) != sums.get(pool, Fraction(0)):
            out.append(
                f"pool {pool}: the meter is {cents_text(Fraction(value))} cents; its "
                f"movements add up to {cents_text(sums.get(pool, Fraction(0)))} cents"
            )
    return out


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
    history = _terms_history(reader)
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
            terms = _terms_at(history, received)
            moved = moves.get(seq, {})
            want = expected_pools(terms, payload)
            for pool in sorted(want - set(moved)):
                check.differences.append(f"{where}: applied, but did not move {pool}")
            for pool in sorted(set(moved) - want):
                check.differences.append(f"{where}: moved {pool}, which it does not feed")
            for pool, amount in sorted(moved.items()):
                rate = terms.get((f"pool:{pool}", "contribution"))
                rate = Fraction(rate) if rate is not None else None
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
