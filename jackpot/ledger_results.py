"""What applying a table message gives (jackpot/ledger.py): its :class:`Status`, the
:class:`Result` the service acts on, the :class:`Award` a table is told, and the refusal the
kinds' rules raise (:class:`Refused`, caught by the ledger, which records the reason)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

AWARD_COLUMNS = (
    "award_id, table_id, state, claim_seq, claim_key, round, spot, pool, meter, amount,"
    " hit_order, reason, meter_before"
)


class Status(enum.Enum):
    APPLIED = "applied"  # the sequence is taken; meters moved if the message says so
    REFUSED = "refused"  # the sequence is taken, recorded with the reason; nothing moved
    DUPLICATE = "duplicate"  # already applied (a replay): nothing changed, ack again
    CONFLICT = "conflict"  # the seq was applied with other content: nothing changed, no ack
    GAP = "gap"  # beyond the next expected sequence: nothing changed, resend from
    UNKNOWN_TABLE = "unknown table"  # no such table in the config: nothing recorded
    MALFORMED = "malformed"  # fails the contract: nothing recorded


@dataclass(frozen=True)
class Award:
    """An award as the table is told it (link schema award.json without v/sent_t)."""

    award_id: str
    table: str
    state: str
    claim_seq: int
    claim_key: str
    round: int
    spot: int
    pool: str
    meter: str
    amount: int
    order: int | None = None
    reason: str | None = None
    meter_before: int | None = None  # whole cents the meter held (offered, committed)

    def message(self, sent_t: int) -> dict[str, Any]:
        out = {"v": 1, **{k: v for k, v in vars(self).items() if v is not None}}
        out["sent_t"] = sent_t
        return out


@dataclass(frozen=True)
class Result:
    """What applying one message did; ``ack`` is the table's highest sequence with no gap
    (None: no ack is owed). ``reason`` says why for every status but ``applied``; ``alarm``
    is a short kind for the service to raise an alarm on (a refusal, a conflict, a malformed
    message or an unknown table), None for ``applied``, ``duplicate`` and ``gap``."""

    status: Status
    table: str | None
    seq: int | None
    ack: int | None = None
    resend_from: int | None = None
    reason: str | None = None
    awards: tuple[Award, ...] = ()
    meters: tuple[str, ...] = field(default=())  # pools whose meter changed
    alarm: str | None = None


class Refused(Exception):
    """A message is refused: it takes its sequence, recorded with ``reason``, the service
    raises ``alarm``; ``awards``: the refused award a hit claim is answered with."""

    def __init__(self, alarm: str, reason: str, awards: tuple[Award, ...] = ()):
        super().__init__(reason)
        self.alarm = alarm
        self.reason = reason
        self.awards = awards


def frac(text: str) -> Fraction:
    """A meter or movement as stored (``"num/den"``, exact)."""
    return Fraction(text)
