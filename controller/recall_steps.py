"""A recalled round step by step (issue 30): each action with its time of day, the spot and
hand it was for, the cards it dealt and what the table said, for the diagnostics page.

The round's record keeps its events (with the table's clock ``t``) and the wall-clock times
it started and settled; its events are replayed on a fresh table, one at a time, and each
card is put where the table put it (the hand that grew). Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from typing import Any

from controller.recall import action_line, card_text

PROMPTS_SHOWN = 3
"""What the table said after an action: at most this many prompts (the settlement lines
are listed apart)."""
_CARD = re.compile(r"(?<![\w$.])(10|[2-9AJQK])([HDCS])(?![\w])")
_QUIET_PROMPTS = frozenset({"pay", "round_settled"})
"""Prompts not repeated in the actions: the settlements say them."""
_ON_SPOT_IN_ACTION = frozenset(
    {"double", "split", "surrender", "stand", "hit", "double_up", "insurance", "even_money"}
)


def faces(text: str) -> str:
    """Card codes in a sentence as faces.

    >>> faces("Dealer turns the hole card: AC 10D, 21")
    'Dealer turns the hole card: A♣ 10♦, 21'
    """
    return _CARD.sub(lambda m: card_text(m.group(0), True), text)


def _hands(state: Any) -> dict[tuple[int, int], int]:
    """Cards held now: ``(spot, hand)`` -> count; the dealer is spot 0."""
    rnd = state.round
    if rnd is None:
        return {}
    out = {(0, 0): len(rnd.dealer)}
    for spot in rnd.spots.values():
        for n, hand in enumerate(spot.hands):
            out[(spot.number, n)] = len(hand.cards)
    return out


def _who(spot: int, hand: int, hands_of: dict[int, int]) -> str:
    if spot == 0:
        return "Dealer"
    return f"Spot {spot}" + (f" hand {hand + 1}" if hands_of.get(spot, 1) > 1 else "")


def event_times(record: dict[str, Any]) -> tuple[int | None, int | None, bool]:
    """The offsets (UTC ms minus the table's ms) before and after the round started, and
    whether they disagree (the table restarted, or its wall clock stepped, during it): then
    the events' times of day are approximate."""
    started_t, settled_t = record.get("started_t"), record.get("settled_t")
    started, settled = record.get("started_utc_ms"), record.get("settled_utc_ms")
    after = settled - settled_t if settled is not None and settled_t is not None else None
    before = started - started_t if started is not None and started_t is not None else after
    if after is None:
        after = before
    rough = before is not None and after is not None and abs(before - after) > 1000
    return before, after, rough


def round_steps(record: dict[str, Any], rules: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The layout at settlement (as :func:`controller.recall.round_layout`) and each action:
    ``utc_ms`` (None when the record has no wall clock), ``who`` (``Spot 3``, ``Spot 3 hand
    2``, ``Dealer``, ``Table``), ``what`` (in words), ``cards`` (as recorded), ``said`` (the
    table's prompts and alarms after it, cards as faces), ``refused`` (the reason, or None).
    Raises the replay's error if the events no longer replay."""
    from controller.table.events import parse_event
    from controller.table.machine import Table
    from controller.table.script import parse_script, round_script

    script = parse_script(round_script(record), f"round {record['round']}")
    table = Table(rules, script.settings())
    table.state.round_number = record["round"]
    before_t, after_t, rough = event_times(record)
    started_t = record.get("started_t")
    steps: list[dict[str, Any]] = []
    for raw in record["events"]:
        kind = str(raw.get("type"))
        event = parse_event(raw)
        if kind == "tick":
            table.handle(event)
            continue
        rnd = table.state.round
        in_action = rnd.in_action if rnd is not None else None
        held = _hands(table.state)
        step = table.handle(event)
        grown = [key for key, n in _hands(table.state).items() if n > held.get(key, 0)]
        hands_of: dict[int, int] = {}
        for spot, _hand in _hands(table.state):
            hands_of[spot] = hands_of.get(spot, 0) + 1
        spot = raw.get("spot")
        if kind == "card" and grown:
            who = ", ".join(_who(s, h, hands_of) for s, h in grown[:1])
        elif isinstance(spot, int) and spot > 0:
            who = f"Spot {spot}"
        elif in_action is not None and (kind in _ON_SPOT_IN_ACTION or kind == "next"):
            who = _who(in_action[0], in_action[1], hands_of)
        else:
            who = "Table"
        t = raw.get("t")
        early = started_t is not None and isinstance(t, int) and t < started_t
        offset = before_t if early else after_t
        said = [
            faces(e.text)
            for e in step.effects
            if e.KIND in ("prompt", "alarm") and getattr(e, "code", "") not in _QUIET_PROMPTS
        ]
        more = len(said) - PROMPTS_SHOWN
        words = action_line(raw) or kind
        steps.append(
            {
                "utc_ms": t + offset if isinstance(t, int) and offset is not None else None,
                "approximate": rough,
                "who": who,
                "what": _what(kind, words, grown),
                "cards": [raw["card"]] if kind in ("card", "out_of_order_card") else [],
                "said": said[:PROMPTS_SHOWN] + ([f"and {more} more"] if more > 0 else []),
                "refused": None if step.accepted else (step.reason or "refused"),
            }
        )
    snap = table.snapshot()
    return {"dealer": snap.get("dealer") or {}, "spots": snap.get("spots") or []}, steps


def _what(kind: str, words: str, grown: list[tuple[int, int]]) -> str:
    """An action in words, without the card code (the page draws the card's face)."""
    if kind == "card":
        return "dealt" if grown else "card not dealt to a hand"
    if kind == "next":
        return "next"
    words = re.sub(r"\bTrue\b", "yes", re.sub(r"\bFalse\b", "no", words))
    return re.sub(r"\bspot \d+ | \(spot in action\)", "", words).strip() or words
