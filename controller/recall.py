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


def round_layout(record: dict[str, Any], rules: Any) -> dict[str, Any]:
    """The layout at settlement, with every card of every hand: the round's events replayed
    on a fresh table of ``rules`` (the record keeps the events, not the hands). Returns the
    snapshot's ``dealer`` and ``spots``; raises the replay's error if the events no longer
    replay (a record written by other software)."""
    from controller.table.script import parse_script, replay, round_script

    script = parse_script(round_script(record), f"round {record['round']}")
    snap = replay(script, rules).table.snapshot()
    return {"dealer": snap.get("dealer") or {}, "spots": snap.get("spots") or []}


def action_line(event: dict[str, Any]) -> str | None:
    """One journaled event in a few casino words (None for a tick).

    >>> print(action_line({"type": "wager", "spot": 3, "circle": "lucky_ladies", "amount": 700}))
    spot 3 Lucky Ladies $7.00
    >>> action_line({"type": "double", "spot": 0}), action_line({"type": "card", "card": "KD"})
    ('double (spot in action)', 'card KD')
    """
    from controller.table.view import bet_name

    kind = str(event.get("type", "?"))
    if kind == "tick":
        return None
    if kind == "bet":
        where = f"spot {event.get('spot')} {bet_name(str(event.get('circle')))}"
        return f"chips {'on' if event.get('on') else 'off'} {where}"
    if kind == "wager":
        amount = event.get("amount")
        money = format_cents(amount) if isinstance(amount, int) else str(amount)
        return f"spot {event.get('spot')} {bet_name(str(event.get('circle')))} {money}"
    if kind == "card":
        return f"card {event.get('card')}"
    words = kind.replace("_", " ")
    if "spot" in event and event["spot"] == 0:
        return f"{words} (spot in action)"
    fields = [
        f"{key.replace('_', ' ')} {value}"
        for key, value in event.items()
        if key not in ("type", "t") and value is not None
    ]
    return " ".join([words, *fields])


def action_lines(record: dict[str, Any]) -> list[str]:
    """The round's events in order, one short line each (ticks left out)."""
    return [line for event in record["events"] if (line := action_line(event)) is not None]


def _hand_text(cards: list[str]) -> str:
    total = hand_total(parse_cards(cards))
    return f"{' '.join(cards)} = {'bust ' if total.is_bust else ''}{total.total}"


def format_round(record: dict[str, Any], layout: dict[str, Any] | None = None) -> str:
    """One round: number, time, the dealer's cards and every settled wager; with its
    ``layout`` (:func:`round_layout`) also every spot's cards and the actions in order."""
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
    if layout is not None:
        for spot in layout["spots"]:
            for n, hand in enumerate(spot["hands"]):
                where = f"spot {spot['spot']}" + (
                    f" hand {n + 1}" if len(spot["hands"]) > 1 else ""
                )
                flags = [
                    word
                    for key, word in (
                        ("double_down", "doubled"),
                        ("double_up", "doubled up"),
                        ("surrendered", "surrendered"),
                    )
                    if hand.get(key)
                ]
                extra = f" ({', '.join(flags)})" if flags else ""
                lines.append(f"  {where}: {_hand_text(hand['cards'])}{extra}")
        lines.append("  actions: " + ", ".join(action_lines(record)))
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


def format_rounds(records: list[dict[str, Any]], header: str = "", rules: Any | None = None) -> str:
    """Several rounds (newest first, as ``last_rounds`` gives them), one block each; with
    ``rules`` every hand's cards and the actions too (:func:`recall_text`)."""
    blocks = [header] if header else []
    blocks.extend(
        format_round(record) if rules is None else recall_text(record, rules) for record in records
    )
    if not records:
        blocks.append("No round is recorded yet (a round is recorded when it is settled).")
    return "\n\n".join(blocks) + "\n"


def recall_text(record: dict[str, Any], rules: Any) -> str:
    """:func:`format_round` with the layout, or without it (and a line saying why) when the
    round's events do not replay on ``rules``."""
    from controller.errors import TableControllerError

    try:
        layout = round_layout(record, rules)
    except (TableControllerError, KeyError, TypeError) as exc:
        return format_round(record) + f"\n  (hands not shown: the events do not replay: {exc})"
    return format_round(record, layout)
