"""Game recall as a supervisor reads it: rounds of a journal, in casino words.

The records come from :class:`controller.journal.Journal` (``last_rounds``,
``round_record``, ``rounds_between``) or, across the journal's files, from
:class:`controller.journal.library.JournalLibrary`; only settled or voided rounds have one,
so a round in progress, and its hole card, is never shown. Amounts are integer cents.

A record written since journal schema version 4 carries the wall-clock UTC times its round
started and settled (``started_utc_ms``, ``settled_utc_ms``): recall shows them as the local
date and time of day, with the zone's abbreviation, to match the surveillance video; and
the wall clock's steps during the round (``clock_steps``), which never reorder its events.
An older record has only the table's clock (``settled_t``), shown as before: as UTC when it
is an epoch time, else raw.

>>> print(format_time(1770000000000))
2026-02-02 02:40:00 UTC
>>> print(format_time(None))
no time
>>> print(format_time(626486))
no time of day (recorded before the journal kept the wall clock; 626.5 s on the table's clock)
>>> print(format_local(1770000000000, "America/New_York"))
2026-02-01 21:40:00 EST
>>> print(round_times({"started_utc_ms": 1769999880000, "settled_utc_ms": 1770000000000},
...                   "America/New_York"))
2026-02-01 21:38:00 to 21:40:00 EST
>>> print(clock_step_line({"seq": 812, "step_ms": 3600000, "utc_before": 0, "utc_after": 0}))
wall clock stepped +3600 s at event 812 (NTP correction?); event order is the journal's
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from controller.rules.cards import parse_cards
from controller.rules.hand import hand_total
from controller.rules.pays import format_cents

SUIT_SYMBOLS = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}
"""A card's suit letter as the symbol on the card (the web page's recall)."""

EPOCH_2000_MS = 946_684_800_000
"""Clock values from this one on are epoch milliseconds; smaller ones are shown raw."""


def format_time(t: int | None) -> str:
    """A record's ``started_t``/``settled_t`` (the table's clock) for people."""
    if t is None:
        return "no time"
    if t >= EPOCH_2000_MS:
        return datetime.fromtimestamp(t / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f"no time of day (recorded before the journal kept the wall clock; "
        f"{t / 1000:.1f} s on the table's clock)"
    )


def local_time(utc_ms: int, zone: str | None = None) -> datetime:
    """``utc_ms`` (ms since the epoch) in ``zone`` (an IANA name; None: the system's)."""
    moment = datetime.fromtimestamp(utc_ms / 1000, UTC)
    return moment.astimezone(ZoneInfo(zone) if zone else None)


def format_local(utc_ms: int, zone: str | None = None) -> str:
    """``utc_ms`` as a local date and time of day with the zone's abbreviation."""
    return local_time(utc_ms, zone).strftime("%Y-%m-%d %H:%M:%S %Z")


def round_times(record: dict[str, Any], zone: str | None = None) -> str:
    """When a round was played, in local time (the journal's UTC times); the table's clock
    (:func:`format_time`) for a record that has none."""
    settled = record.get("settled_utc_ms")
    if settled is None:
        return format_time(record.get("settled_t"))
    started = record.get("started_utc_ms")
    end = local_time(settled, zone)
    if started is None:
        return f"settled {end:%Y-%m-%d %H:%M:%S %Z}"
    begin = local_time(started, zone)
    if (begin.date(), begin.tzname()) == (end.date(), end.tzname()):
        return f"{begin:%Y-%m-%d %H:%M:%S} to {end:%H:%M:%S %Z}"
    return f"{begin:%Y-%m-%d %H:%M:%S %Z} to {end:%Y-%m-%d %H:%M:%S %Z}"


def clock_step_line(step: dict[str, Any]) -> str:
    """A wall-clock step during a round (a ``clock_steps`` item), in words."""
    ms = int(step["step_ms"])
    seconds = f"{ms // 1000}" if ms % 1000 == 0 else f"{ms / 1000:.1f}"
    sign = "+" if ms >= 0 else ""
    return (
        f"wall clock stepped {sign}{seconds} s at event {step['seq']} (NTP correction?); "
        "event order is the journal's"
    )


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
    if kind == "out_of_order_card":
        return out_of_order_words(event)
    if kind == "shoe":
        detail = event.get("detail")
        return f"shoe {str(event.get('event')).replace('_', ' ')}" + (
            f": {detail}" if detail else ""
        )
    words = kind.replace("_", " ")
    if "spot" in event and event["spot"] == 0:
        return f"{words} (spot in action)"
    fields = [
        f"{key.replace('_', ' ')} {value}"
        for key, value in event.items()
        if key not in ("type", "t") and value is not None and value != ""
    ]
    return " ".join([words, *fields])


def out_of_order_words(event: dict[str, Any]) -> str:
    """A card frame the shoe sent behind its count, in words (held, never dealt).

    >>> out_of_order_words({"card": "KD", "frame": 1, "last": 4, "again": True})
    'card KD sent again out of order (frame 01 after 04): held, not dealt'
    """
    again = " again" if event.get("again") else ""
    frame, last = event.get("frame"), event.get("last")
    where = (
        f" (frame {frame:02X} after {last:02X})"
        if isinstance(frame, int) and isinstance(last, int)
        else ""
    )
    return f"card {event.get('card')} sent{again} out of order{where}: held, not dealt"


def action_lines(record: dict[str, Any]) -> list[str]:
    """The round's events in order, one short line each (ticks left out)."""
    return [line for event in record["events"] if (line := action_line(event)) is not None]


def card_text(card: str, suits: bool = False) -> str:
    """A card as recorded (``10H``), or with its suit's symbol (``10\u2665``).

    >>> card_text("10H"), card_text("10H", True), card_text("QS", True)
    ('10H', '10\u2665', 'Q\u2660')
    """
    if not suits or not card or card[-1] not in SUIT_SYMBOLS:
        return card
    return card[:-1] + SUIT_SYMBOLS[card[-1]]


def _hand_text(cards: list[str], suits: bool = False) -> str:
    total = hand_total(parse_cards(cards))
    shown = " ".join(card_text(card, suits) for card in cards)
    return f"{shown} = {'bust ' if total.is_bust else ''}{total.total}"


def format_round(
    record: dict[str, Any],
    layout: dict[str, Any] | None = None,
    *,
    zone: str | None = None,
    file: str | None = None,
    suits: bool = False,
) -> str:
    """One round: number, when (local time in ``zone``, :func:`round_times`), the journal
    ``file`` that holds it if given, the wall clock's steps, the dealer's cards and every
    settled wager (by its rule-card name); with its ``layout`` (:func:`round_layout`) also
    every spot's cards and the actions in order. ``suits``: cards with their suit symbols
    (``10\u2665``), as the web page shows them."""
    from controller.rules.sidebets import pool_name
    from controller.table.view import bet_name

    result = record["result"]
    head = f"Round {record['round']}  {round_times(record, zone)}"
    if record.get("void"):
        head += f"  VOID ({record['void']})"
    head_lines = [head]
    if file:
        head_lines.append(f"  journal file: {file}")
    if record.get("chain") not in (None, "verified"):
        head_lines.append(f"  chain: {record['chain']}")
    head_lines.extend(f"  {clock_step_line(step)}" for step in record.get("clock_steps") or [])
    cards = record.get("dealer") or []
    dealer = _hand_text(cards, suits) if cards else "no cards"
    lines = [*head_lines, f"  dealer: {dealer}"]
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
                lines.append(f"  {where}: {_hand_text(hand['cards'], suits)}{extra}")
        lines.append("  actions: " + ", ".join(action_lines(record)))
    split = {line["spot"] for line in result["settlements"] if line.get("hand")}
    for line in result["settlements"]:
        where = f"spot {line['spot']}"
        if line.get("hand") is not None and line["spot"] in split:
            where += f" hand {line['hand'] + 1}"
        net = line["paid"] + line["returned"] - line["stake"]
        pays = f" {line['pays']}" if line.get("pays") else ""
        meter = (
            f", {str(line['meter']).removesuffix(' of meter')} of the "
            f"{pool_name(line.get('pool') or '')} meter"
            if line.get("meter")
            else ""
        )
        lines.append(
            f"  {where} {bet_name(str(line['wager']))}: {line['outcome']}{pays}, stake "
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


def format_rounds(
    records: list[dict[str, Any]],
    header: str = "",
    rules: Any | None = None,
    *,
    zone: str | None = None,
    files: Sequence[str | None] = (),
) -> str:
    """Several rounds (newest first, as ``last_rounds`` gives them), one block each; with
    ``rules`` every hand's cards and the actions too (:func:`recall_text`); ``files``: the
    journal file of each record, in the same order (none: not shown)."""
    blocks = [header] if header else []
    names = list(files) + [None] * (len(records) - len(files))
    blocks.extend(
        format_round(record, zone=zone, file=name)
        if rules is None
        else recall_text(record, rules, zone=zone, file=name)
        for record, name in zip(records, names, strict=False)
    )
    if not records:
        blocks.append("No round is recorded yet (a round is recorded when it is settled).")
    return "\n\n".join(blocks) + "\n"


def recall_text(
    record: dict[str, Any],
    rules: Any,
    *,
    zone: str | None = None,
    file: str | None = None,
    suits: bool = False,
) -> str:
    """:func:`format_round` with the layout, or without it (and a line saying why) when the
    round's events do not replay on ``rules``."""
    return recall_view(record, rules, zone=zone, file=file, suits=suits)[0]


def recall_view(
    record: dict[str, Any],
    rules: Any,
    *,
    zone: str | None = None,
    file: str | None = None,
    suits: bool = False,
) -> tuple[str, dict[str, Any] | None]:
    """:func:`recall_text` and the layout it was made from (None: the events do not
    replay), from one replay of the round: the web page draws the hands from it."""
    from controller.errors import TableControllerError

    try:
        layout = round_layout(record, rules)
    except (TableControllerError, KeyError, TypeError) as exc:
        text = format_round(record, zone=zone, file=file, suits=suits)
        return text + f"\n  (hands not shown: the events do not replay: {exc})", None
    return format_round(record, layout, zone=zone, file=file, suits=suits), layout


def script_with_times(
    script: str, record: dict[str, Any], zone: str | None = None, file: str | None = None
) -> str:
    """A round's event script (:func:`controller.table.script.round_script`) with comment
    lines after its header: when it was played in local time and UTC, the wall clock's
    steps and the journal file, for matching it with the surveillance video. Replay reads
    ``#`` lines as comments."""
    notes = [f"# round {record['round']}: {round_times(record, zone)}"]
    started, settled = record.get("started_utc_ms"), record.get("settled_utc_ms")
    if settled is not None:
        utc = [format_local(t, "UTC") for t in (started, settled) if t is not None]
        notes.append(f"# UTC: {' to '.join(utc)}")
    notes.extend(f"# {clock_step_line(step)}" for step in record.get("clock_steps") or [])
    if file:
        notes.append(f"# journal file: {file}")
    head, _, rest = script.partition("\n")
    return "\n".join([head, *notes, rest]) if rest else "\n".join([head, *notes]) + "\n"
