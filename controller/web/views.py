"""What the web pages show, built from the runtime's public status (pure: no I/O).

Everything here starts from :meth:`TableRuntime.status` (whose snapshot hides the hole
card until the dealer's turn), the dealer feed and the drivers' health. Nothing here can
see the table's internal state, so nothing here can leak the hole card. Amounts are
integer cents; ``format_cents`` writes them for people.
"""

from __future__ import annotations

from typing import Any

from controller.rules.pays import format_cents
from controller.table.effects import Settled, field_names
from controller.table.view import bet_name, settlement_prompt

PHASE_WORDS = {
    "betting": "Place your bets",
    "dealing": "Dealing",
    "insurance": "Insurance",
    "ez_bust": "EZ Bust offer",
    "players": "Players' turn",
    "dealer": "Dealer's turn",
    "settled": "Settle the wagers",
}
"""Phases as the dealer display names them (an unknown phase shows its own name)."""


def phase_words(phase: str) -> str:
    return PHASE_WORDS.get(phase, phase.replace("_", " ").capitalize())


def _settled(item: dict[str, Any]) -> Settled:
    return Settled(**{name: item.get(name) for name in field_names(Settled)})


def pay_line(item: dict[str, Any]) -> dict[str, Any]:
    """One settlement of the feed as the dealer display lists it: what to do with whose chips.

    ``what`` is ``pay``, ``take``, ``push``, ``return`` (half a surrender or a void) or
    ``meter`` (a jackpot share: hand pay, the jackpot controller sends the amount)."""
    line = _settled(item)
    if line.meter is not None:
        what = "meter"
    elif line.outcome == "void" or line.outcome == "surrender":
        what = "return"
    elif line.paid:
        what = "pay"
    elif line.returned == line.stake:
        what = "push"
    else:
        what = "take"
    return {
        "spot": line.spot,
        "hand": line.hand,
        "wager": bet_name(line.wager),
        "what": what,
        "amount": line.paid if what == "pay" else line.returned if what == "return" else line.stake,
        "text": settlement_prompt(line),
    }


def open_alarms(status: dict[str, Any]) -> list[dict[str, Any]]:
    """Alarms a person must see: the journal fault, latched faults, then open table alarms."""
    out: list[dict[str, Any]] = []
    if status.get("journal_fault"):
        out.append(
            {
                "id": None,
                "code": "journal_fault",
                "text": f"The journal cannot be written: {status['journal_fault']}",
                "action": "Stop the game and call a technician",
                "spot": None,
            }
        )
    for kind, fault in sorted((status.get("faults") or {}).items()):
        out.append(
            {
                "id": None,
                "code": f"fault_{kind}",
                "text": f"Table fault ({kind}): {fault['detail'] or 'lost'}"
                + ("" if fault["active"] else " (now gone)"),
                "action": "Call a technician"
                if fault["active"]
                else "Turn the supervisor key to clear the fault",
                "spot": None,
            }
        )
    snap = status.get("snapshot") or {}
    out.extend(snap.get("alarms") or [])
    return out


def next_steps(feed: list[dict[str, Any]]) -> list[str]:
    """The newest prompts (all those of the last event that gave any), oldest first."""
    prompts = [item for item in feed if item.get("kind") == "prompt"]
    if not prompts:
        return []
    last = prompts[-1]
    key = ("seq",) if "seq" in last else ("t", "round")  # seq: the event that made it
    return [p["text"] for p in prompts if all(p.get(k) == last.get(k) for k in key)]


def dealer_view(
    table_id: str, status: dict[str, Any], feed: list[dict[str, Any]]
) -> dict[str, Any]:
    """The dealer display: the next thing to do, what to pay whom, alarms, the layout."""
    snap = status.get("snapshot") or {}
    number = snap.get("round")
    refusal = None
    for item in reversed(feed):
        if item.get("kind") == "prompt":
            break
        if item.get("kind") == "refused":
            refusal = item["reason"]
            break
    dealer = snap.get("dealer") or {}
    spots = []
    for spot in snap.get("spots") or []:
        hands = [
            {"cards": h["cards"], "total": h["total"], "soft": h["soft"], "wager": h["wager"]}
            for h in spot["hands"]
        ]
        spots.append({"spot": spot["spot"], "hands": hands})
    return {
        "table": table_id,
        "round": number,
        "phase": snap.get("phase"),
        "phase_words": phase_words(str(snap.get("phase") or "")),
        # after a restart the feed is empty: the phase says what to do until a prompt comes
        "next": next_steps(feed) or ([phase_words(snap["phase"])] if snap.get("phase") else []),
        "refused": refusal,
        "pay": [
            pay_line(item)
            for item in (
                status["settlements"]
                if "settlements" in status  # the runtime keeps all of the round's
                else [i for i in feed if i.get("kind") == "settled"]
            )
            if item.get("round") == number
        ],
        "alarms": [
            {"code": a["code"], "text": a["text"], "action": a["action"], "spot": a.get("spot")}
            for a in open_alarms(status)
        ],
        "dealer": {
            "cards": dealer.get("cards") or [],
            "total": dealer.get("total"),
            "showing": dealer.get("showing"),
        },
        "in_action": snap.get("in_action"),
        "spots": spots,
        "jackpot_link": status.get("jackpot_link", True),
    }


def money(cents: int | None) -> str:
    return "" if cents is None else format_cents(cents)


# -- /metrics ---------------------------------------------------------------------------------


def metrics_text(bundle: dict[str, Any], web: dict[str, Any]) -> str:
    """``/metrics`` in the Prometheus text format (version 0.0.4): the table's figures and the
    process metrics, built by prometheus_client in :mod:`controller.web.metrics` (which reads
    /proc, so it is imported only here, when a scrape asks).

    ``bundle`` is :meth:`WebServer.bundle`'s dict, ``web`` the server's own counters."""
    from controller.web.metrics import metrics_text as scrape

    return scrape(bundle, web)
