"""What the web pages show, built from the runtime's public status (pure: no I/O).

Everything here starts from :meth:`TableRuntime.status` (whose snapshot hides the hole
card until the dealer's turn), the dealer feed and the drivers' health. Nothing here can
see the table's internal state, so nothing here can leak the hole card. Amounts are
integer cents; ``format_cents`` writes them for people.
"""

from __future__ import annotations

import math
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


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _Metrics:
    """Samples grouped by family (the text format wants each family's lines together)."""

    def __init__(self) -> None:
        self.families: dict[str, list[str]] = {}

    @property
    def lines(self) -> list[str]:
        return [line for family in self.families.values() for line in family]

    def add(
        self, name: str, kind: str, help_text: str, value: Any, labels: dict[str, Any] | None = None
    ) -> None:
        if value is None:
            return
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, float) and not math.isfinite(value):
            return
        full = f"table_controller_{name}"
        family = self.families.get(full)
        if family is None:
            family = self.families[full] = [f"# HELP {full} {help_text}", f"# TYPE {full} {kind}"]
        text = ""
        if labels:
            text = "{" + ",".join(f'{k}="{_label(v)}"' for k, v in sorted(labels.items())) + "}"
        number = f"{value:.3f}" if isinstance(value, float) else str(value)
        family.append(f"{full}{text} {number}")


def metrics_text(bundle: dict[str, Any], web: dict[str, Any]) -> str:
    """``/metrics`` in the Prometheus text format (version 0.0.4).

    ``bundle`` is :meth:`WebServer.bundle`'s dict, ``web`` the server's own counters."""
    m = _Metrics()
    status = bundle["status"]
    snap = status.get("snapshot") or {}
    m.add(
        "info",
        "gauge",
        "The table, its software version and the checksum of its config.",
        1,
        {
            "table": bundle["table"],
            "game": bundle["game"],
            "version": bundle["version"],
            "config_checksum": bundle["config_checksum"],
        },
    )
    m.add("uptime_seconds", "gauge", "Seconds since the controller started.", bundle["uptime_s"])
    m.add("round", "gauge", "The round number on the layout.", snap.get("round"))
    m.add(
        "round_in_progress", "gauge", "1 while a round is dealt.", status.get("round_in_progress")
    )
    m.add("events_total", "counter", "Events journaled since start.", status.get("events_handled"))
    m.add("events_refused_total", "counter", "Events refused.", status.get("events_refused"))
    m.add(
        "events_dropped_total",
        "counter",
        "Events dropped while the journal could not be written.",
        status.get("events_dropped"),
    )
    m.add("journal_events", "gauge", "Events in the journal file.", status.get("journal_events"))
    m.add(
        "journal_writable",
        "gauge",
        "0 while the journal cannot be written.",
        not status.get("journal_fault"),
    )
    m.add("event_queue", "gauge", "Events waiting for the table loop.", status.get("queue"))
    m.add(
        "jackpot_link_up",
        "gauge",
        "1 while progressive wagers are taken.",
        status.get("jackpot_link"),
    )
    for kind, fault in sorted((status.get("faults") or {}).items()):
        m.add(
            "fault",
            "gauge",
            "A latched fault (1: its condition is still present).",
            int(bool(fault["active"])),
            {"kind": kind},
        )
    m.add("alarms_open", "gauge", "Alarms not yet acknowledged.", len(snap.get("alarms") or []))
    health = bundle.get("health") or {}
    link = health.get("link")
    if link:
        m.add("link_connected", "gauge", "1 while connected to the broker.", link["connected"])
        m.add(
            "outbox_depth",
            "gauge",
            "Messages not yet acknowledged by the jackpot controller.",
            link["depth"],
        )
        m.add(
            "outbox_last_ack",
            "gauge",
            "Sequence number of the last acknowledged message.",
            link.get("last_ack"),
        )
        m.add(
            "outbox_last_ack_age_seconds",
            "gauge",
            "Seconds since the last acknowledgement.",
            link.get("last_ack_age_s"),
        )
        for kind, n in sorted((link.get("errors") or {}).items()):
            m.add(
                "driver_errors_total",
                "counter",
                "Errors by driver and kind.",
                n,
                {"driver": "link", "kind": kind},
            )
    for name in ("shoe", "camera", "gpio"):
        part = health.get(name)
        if not part:
            continue
        m.add(
            "driver_connected",
            "gauge",
            "1 while the driver's device answers.",
            part.get("connected"),
            {"driver": name},
        )
        age = part.get("last_message_age_ms")
        if age is not None:
            m.add(
                "driver_last_message_age_seconds",
                "gauge",
                "Seconds since the driver's last good message.",
                age / 1000,
                {"driver": name},
            )
        for kind, n in sorted((part.get("errors") or {}).items()):
            m.add(
                "driver_errors_total",
                "counter",
                "Errors by driver and kind.",
                n,
                {"driver": name, "kind": kind},
            )
    m.add("web_logins_total", "counter", "Successful technician logins.", web.get("logins"))
    m.add("web_login_failures_total", "counter", "Wrong passwords.", web.get("login_failures"))
    m.add(
        "web_login_throttled_total",
        "counter",
        "Login attempts refused unchecked (too soon).",
        web.get("throttled"),
    )
    m.add("web_sessions", "gauge", "Technicians logged in.", web.get("sessions"))
    m.add("web_streams", "gauge", "Live pages connected.", web.get("streams"))
    m.add(
        "web_requests_refused_total",
        "counter",
        "Actions refused for a missing login or CSRF token.",
        web.get("refused"),
    )
    return "\n".join(m.lines) + "\n"
