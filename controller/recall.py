"""Game recall as a supervisor reads it: the last rounds of a journal, in casino words.

The records come from :class:`controller.journal.Journal` (``last_rounds``,
``round_record``); only settled or voided rounds have one, so a round in
progress, and its hole card, is never shown. Amounts are integer cents, times
the runtime's clock in milliseconds (shown as UTC when they are epoch times).

>>> print(format_time(1770000000000))
2026-02-02 02:40:00 UTC
>>> print(format_time(None))
no time
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.rules.cards import parse_cards
from controller.rules.hand import hand_total
from controller.rules.pays import format_cents

EPOCH_2000_MS = 946_684_800_000
"""Clock values from this one on are epoch milliseconds; smaller ones are shown raw."""


def format_time(t: int | None) -> str:
    """A record's ``started_t``/``settled_t`` for people."""
    if t is None:
        return "no time"
    if t >= EPOCH_2000_MS:
        return datetime.fromtimestamp(t / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"t={t} ms"


def _signed(cents: int) -> str:
    return ("+" if cents >= 0 else "-") + format_cents(abs(cents))


def format_round(record: dict[str, Any]) -> str:
    """One round: number, time, the dealer's cards and every settled wager."""
    result = record["result"]
    head = f"Round {record['round']}  {format_time(record.get('settled_t'))}"
    if record.get("void"):
        head += f"  VOID ({record['void']})"
    cards = record.get("dealer") or []
    if cards:
        total = hand_total(parse_cards(cards))
        dealer = f"{' '.join(cards)} = {'bust ' if total.is_bust else ''}{total.total}"
    else:
        dealer = "no cards"
    lines = [head, f"  dealer: {dealer}"]
    split = {line["spot"] for line in result["settlements"] if line.get("hand")}
    for line in result["settlements"]:
        where = f"spot {line['spot']}"
        if line.get("hand") is not None and line["spot"] in split:
            where += f" hand {line['hand'] + 1}"
        net = line["paid"] + line["returned"] - line["stake"]
        pays = f" {line['pays']}" if line.get("pays") else ""
        meter = (
            f", {line['meter']} of the {line.get('pool') or ''} meter" if line.get("meter") else ""
        )
        lines.append(
            f"  {where} {line['wager']}: {line['outcome']}{pays}, stake "
            f"{format_cents(line['stake'])}, paid {format_cents(line['paid'])}, returned "
            f"{format_cents(line['returned'])}, net {_signed(net)}{meter} ({line['reason']})"
        )
    house = result["stake"] - result["paid"] - result["returned"]
    lines.append(
        f"  table: {len(record['events'])} events; stakes {format_cents(result['stake'])}, "
        f"paid {format_cents(result['paid'])}, returned {format_cents(result['returned'])}, "
        f"house {_signed(house)}"
    )
    return "\n".join(lines)


def format_rounds(records: list[dict[str, Any]], header: str = "") -> str:
    """Several rounds (newest first, as ``last_rounds`` gives them), one block each."""
    blocks = [header] if header else []
    blocks.extend(format_round(record) for record in records)
    if not records:
        blocks.append("No round is recorded yet (a round is recorded when it is settled).")
    return "\n\n".join(blocks) + "\n"
