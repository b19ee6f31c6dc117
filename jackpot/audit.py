"""After the fact: ``jackpot-controller audit-signatures --ledger L``.

Every message the ledger stores (``applied.message``: the text as it arrived, with ``kid``
and ``sig``; a row that came in a batch frame: ``kid`` and its proof up to the frame's one
signature, controller/link/frames.py) is verified again with the Ed25519 public key its table
had **when it arrived**: the key history the ``changes`` table records (each ``table:T keys``
term's old and new values and the change's UTC time; retired keys stay), so a message
signed before a key change still checks after it, and a key added later never vouches for
an older message.
``table_keys`` must match that history row for row (a key row without its change is a
failure, and is never trusted). Each stored text must be its row's (table, seq, kind, key)
and have the row's digest. A
message from before schema 3 (no time) checks against the keys the ledger held when it
first recorded its terms. Every revealed Mystery draw is checked against the commitment
written when it was drawn (SHA-256 of ``"{trigger}:{salt}"``), and a hit's trigger against
its award. Nothing is written. docs/jackpot/audit.md.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from controller.link.frames import is_frame_record, verify_row
from controller.link.messages import topic_for
from controller.link.signing import (
    SignatureError,
    SigningKeyError,
    Verifier,
    digest,
    parse_public_key,
)
from jackpot.draws import commitment
from jackpot.gaming_day import utc_text
from jackpot.reports import Reader


@dataclass
class Audit:
    messages: int = 0
    by_key: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    failures: list[str] = field(default_factory=list)
    draws: int = 0
    live: int = 0

    def lines(self) -> list[str]:
        keys = ", ".join(f"{kid} {n}" for kid, n in sorted(self.by_key.items()))
        out = [f"signatures: {self.messages} stored messages, "
               f"{self.messages - sum(1 for f in self.failures if f.startswith('seq'))} "
               f"verified ({keys or 'none'})",
               f"draws: {self.draws} revealed draws checked against their commitments; "
               f"{self.live} live (sealed)"]  # fmt: skip
        return out + [f"FAILED {f}" for f in self.failures]


def _valid(key: tuple, received: int | None) -> bool:
    """Was ``key`` (from_utc, until_utc) trusted when a message arrived at ``received``?"""
    since, until = key
    if received is None:  # from before schema 3: the keys the first terms recorded
        return since is None
    return (since is None or since <= received) and (until is None or received < until)


def key_history(reader: Reader) -> tuple[dict[tuple[str, str], list[tuple]], list[str]]:
    """The keys each table had, replayed from the changes the auditor signs off (each
    ``table:T keys`` term's old and new values), and the ``table_keys`` rows that do not match
    that history (failures): ({(table, kid): [(public, from_utc, until_utc)]}, failures).

    A key a change added is trusted from the change's time (no time: the first terms of a
    ledger migrated from schema 2, which trust the messages from before); a key it removed
    or replaced, until that change's time."""
    rows: dict[tuple, list] = {}  # (table, kid, public, from_n) -> [from_utc, until_n, until_utc]
    failures: list[str] = []
    untimed: set[tuple] = set()
    for n, t_utc, kind, detail in reader.rows(
        "SELECT n, t_utc, kind, detail FROM changes ORDER BY n"
    ):
        for entry in json.loads(detail):
            if entry.get("term") != "keys" or not str(entry.get("subject")).startswith("table:"):
                continue
            table = entry["subject"].split(":", 1)[1]
            old = dict(k.split("=", 1) for k in (entry["old"] or "").split(",") if k)
            new = dict(k.split("=", 1) for k in (entry["new"] or "").split(",") if k)
            for kid, public in old.items():
                if new.get(kid) != public:
                    for key, value in rows.items():
                        if key[:3] == (table, kid, public) and value[1] is None:
                            value[1:] = [n, t_utc]
            for kid, public in new.items():
                if old.get(kid) != public:
                    rows[(table, kid, public, n)] = [t_utc, None, None]
                    if kind == "initial":
                        untimed.add((table, kid, public, n))
    stored = {}
    for table, kid, public, from_n, since, until_n, until in reader.rows(
        "SELECT table_id, kid, public_key, from_n, from_utc, until_n, until_utc FROM table_keys"
    ):
        stored[(table, kid, public, from_n)] = (since, until_n, until)
    for key, (since, until_n, until) in sorted(stored.items(), key=repr):
        table, kid, _public, from_n = key
        want = rows.get(key)
        name = f"key {kid!r} of {table} (table_keys, from change {from_n})"
        if want is None:
            failures.append(f"{name}: no change added this key: a key row without a change "
                            "behind it is not trusted")  # fmt: skip
        elif (until_n, until) != tuple(want[1:]) or (
            since != want[0] and not (since is None and key in untimed)
        ):
            failures.append(f"{name}: its times or retirement differ from the changes "
                            f"(row: from {since}, until change {until_n}; changes: from "
                            f"{want[0]}, until change {want[1]})")  # fmt: skip
    for key in sorted(set(rows) - set(stored), key=repr):
        failures.append(f"key {key[1]!r} of {key[0]} (change {key[3]}): added by the change, "
                        "missing from table_keys")  # fmt: skip
    history: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for (table, kid, public, _n), (since, _until_n, until) in rows.items():
        row = stored.get((table, kid, public, _n))
        if row is not None and row[0] is None and (table, kid, public, _n) in untimed:
            since = None  # the migrated first terms: they vouch for the untimed messages
        history[(table, kid)].append((public, since, until))
    return history, failures


def audit(reader: Reader) -> Audit:
    result = Audit()
    keys, key_failures = key_history(reader)
    result.failures.extend(key_failures)
    for table, seq, key, kind, received, text, stored in reader.rows(
        "SELECT table_id, seq, key, kind, received_utc, message, digest FROM applied ORDER BY n"
    ):
        result.messages += 1
        where = f"seq {seq} {kind} from {table} (received {utc_text(received) or 'untimed'})"
        body = json.loads(text)
        row = (table, seq, kind, key)
        said = tuple(body.get(k) for k in ("table", "seq", "kind", "key"))
        if said != row:
            result.failures.append(
                f"{where}: the stored message is not this row's: it says table {said[0]}, seq "
                f"{said[1]}, {said[2]} {said[3]}"
            )
            continue
        if stored is not None and digest(body) != stored:
            result.failures.append(f"{where}: the stored message does not have the row's digest")
            continue
        kid = body.get("kid")
        trusted = [p for p, s, u in keys.get((table, kid), []) if _valid((s, u), received)]
        if not trusted:
            known = ", ".join(sorted({k for t, k in keys if t == table})) or "none"
            result.failures.append(
                f"{where}: signed with key {kid!r}, which the ledger did not trust for {table} "
                f"when it arrived (keys in its history: {known})"
            )
            continue
        for number, public in enumerate(trusted, 1):
            try:
                verifier = Verifier({kid: parse_public_key(public)})
                if is_frame_record(body):  # a row of a batch frame: its proof, the frame's sig
                    verify_row(verifier, body)
                else:
                    verifier.verify(topic_for(table, kind), body, kind)
                result.by_key[kid] += 1
                break
            except (SignatureError, SigningKeyError) as exc:
                if number == len(trusted):
                    result.failures.append(f"{where}: {exc}")
    for pool, cycle, sha, trigger, salt, ended, award_id, amount in reader.rows(
        "SELECT d.pool, d.cycle, d.commitment, d.trigger_cents, d.salt, d.ended, d.award_id,"
        " w.amount FROM draws d LEFT JOIN awards w ON w.award_id=d.award_id"
        " ORDER BY d.pool, d.cycle"
    ):
        if ended is None:
            result.live += 1
            continue
        result.draws += 1
        name = f"draw {pool} cycle {cycle} ({ended})"
        if sha is None or salt is None:
            result.failures.append(f"{name}: no commitment to check (drawn before schema 3)")
        elif commitment(trigger, salt) != sha:
            result.failures.append(f"{name}: trigger {trigger} and salt do not match the "
                                   "commitment written when it was drawn")  # fmt: skip
        elif ended == "hit" and amount != trigger:
            result.failures.append(f"{name}: award {award_id} paid {amount}, the trigger was "
                                   f"{trigger}")  # fmt: skip
    return result
