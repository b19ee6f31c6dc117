"""After the fact: ``jackpot-controller audit-signatures --ledger L``.

Every message the ledger stores (``applied.message``: the text as it arrived, with ``kid``
and ``sig``) is verified again with the Ed25519 public key its table had **when it arrived**:
the ledger's key history (``table_keys``: each key with the change that added it and the one
that retired it, and their UTC times; retired keys stay), so a message signed before a key
change still checks after it, and a key added later never vouches for an older message. A
message from before schema 3 (no time) checks against the keys the ledger held when it
first recorded its terms. Every revealed Mystery draw is checked against the commitment
written when it was drawn (SHA-256 of ``"{trigger}:{salt}"``), and a hit's trigger against
its award. Nothing is written. docs/jackpot/audit.md.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from controller.link.messages import topic_for
from controller.link.signing import SignatureError, SigningKeyError, Verifier, parse_public_key
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


def audit(reader: Reader) -> Audit:
    result = Audit()
    keys: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for table, kid, public, since, until in reader.rows(
        "SELECT table_id, kid, public_key, from_utc, until_utc FROM table_keys"
    ):
        keys[(table, kid)].append((public, since, until))
    for table, seq, kind, received, text in reader.rows(
        "SELECT table_id, seq, kind, received_utc, message FROM applied ORDER BY n"
    ):
        result.messages += 1
        where = f"seq {seq} {kind} from {table} (received {utc_text(received) or 'untimed'})"
        body = json.loads(text)
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
                Verifier({kid: parse_public_key(public)}).verify(topic_for(table, kind), body, kind)
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
