"""What the web pages show, built from the runtime's public status (pure: no I/O).

Everything here starts from :meth:`TableRuntime.status` (whose snapshot hides the hole
card until the dealer's turn), the dealer feed and the drivers' health. Nothing here can
see the table's internal state, so nothing here can leak the hole card. Amounts are
integer cents; ``format_cents`` writes them for people.

The dealer view is assembled here (:func:`dealer_view`) from :mod:`controller.web.words`
(cards, circles, totals, phases), :mod:`controller.web.felt` (the table picture, settlement
rows, the recalled round) and :mod:`controller.web.stops` (the blocking alarm that takes the
headline, and the age of every alarm).
"""

from __future__ import annotations

from typing import Any

from controller.table.events import LINK_WHY
from controller.table.view import bet_name
from controller.web.felt import (
    betting_view,
    dealer_hand,
    mark_split,
    recall_view,
    round_settlements,
    settlement_rows,
    table_layout,
)
from controller.web.stops import aged_text, stop_now
from controller.web.words import (
    PHASE_WORDS,
    SHORT_NAMES,
    SUITS,
    card_words,
    circle_name,
    money,
    pay_line,
    phase_words,
    total_words,
)

__all__ = [
    "PHASE_WORDS",
    "SHORT_NAMES",
    "SUITS",
    "alarm_lines",
    "betting_view",
    "card_words",
    "circle_name",
    "dealer_view",
    "headline",
    "jackpot_link_words",
    "metrics_text",
    "money",
    "next_steps",
    "open_alarms",
    "pay_line",
    "phase_words",
    "recent",
    "software_words",
    "table_layout",
    "total_words",
]

RECENT_KEPT = 4
"""What the latest event said besides the headline: at most this many messages, newest
first (the end of a round says "remove the cards" and "place your bets": both are kept)."""

STOP_ALARMS = {
    "journal_fault": ("journal_fault",),
    "shoe_offline": ("shoe_offline",),
    "shoe_fault": ("shoe_fault",),
    "chips_lifted": ("bet_removed",),
}
"""The alarm band's kinds whose instruction the headline gives while it stops the game (not
said twice); a fault's line (``fault_KIND``) leaves the band while its stop is the headline.
A card waiting stays in the band: its alarm says why the card was not dealt."""


def _fault_t(snap: dict[str, Any], kind: str) -> int | None:
    """When the register's alarm of the ``kind`` fault was raised (None if not kept)."""
    for alarm in snap.get("alarms") or []:
        if alarm.get("code") == "table_fault" and alarm.get("about") == kind:
            return alarm.get("t")
    return None


def open_alarms(status: dict[str, Any]) -> list[dict[str, Any]]:
    """Alarms a person must see: the journal fault, latched faults, then open table alarms."""
    out: list[dict[str, Any]] = []
    snap = status.get("snapshot") or {}
    if status.get("journal_fault"):
        out.append(
            {
                "id": None,
                "code": "journal_fault",
                "text": f"The journal cannot be written: {status['journal_fault']}",
                "action": "Stop the game and call a technician",
                "spot": None,
                "t": None,
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
                "t": _fault_t(snap, kind),
            }
        )
    out.extend(a for a in snap.get("alarms") or [] if a.get("active", True))
    return out


def _spots_words(spots: list[int]) -> str:
    if len(spots) == 1:
        return f"spot {spots[0]}"
    return "spots " + ", ".join(map(str, spots[:-1])) + f" and {spots[-1]}"


def _group_text(code: str, items: list[dict[str, Any]]) -> str:
    """One line for several open alarms of one kind (newest last in ``items``)."""
    spots = sorted({a["spot"] for a in items if a.get("spot")})
    newest = items[-1]["text"]
    if len(spots) < 2:
        return newest
    where = _spots_words(spots)
    if code == "progressive_refused":
        names = sorted({bet_name(a["about"]) for a in items if a.get("about")}) or ["Progressive"]
        return f"{' and '.join(names)} bets at {where} not accepted: the jackpot link is down"
    if code == "late_bet":
        return f"Late bets at {where} after no more bets: they are not wagers"
    if code == "side_bet_without_main":
        return f"Side bets at {where} without a main wager: they are not wagers"
    if code == "bet_removed":
        return f"Chips taken from wagers at {where} after no more bets: the wagers stand"
    return newest


def alarm_lines(status: dict[str, Any], skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The alarms the dealer must see, one line per kind: repeats of a kind merge into one
    line with their ``count`` and ``spots``; alarms whose cause is over (cleared by
    themselves) are left out, and so is a table fault's alarm, which the latched fault's own
    line says, and every kind in ``skip`` (the headline says it). Newest kind first; texts
    with suit symbols, without the durations written at detection: ``since`` says how long
    the oldest alarm of the kind has lasted now (``for 1 min 15 s``)."""
    now = status.get("t")
    groups: dict[str, list[dict[str, Any]]] = {}
    for alarm in open_alarms(status):
        if alarm["code"] == "table_fault" and status.get("faults"):
            continue
        if alarm["code"] in skip:
            continue
        groups.setdefault(alarm["code"], []).append(alarm)
    lines = []
    for code, items in groups.items():
        text, _ = aged_text(_group_text(code, items), None, None)
        oldest = items[0]
        _, since = aged_text(oldest.get("text") or "", oldest.get("t"), now)
        lines.append(
            {
                "code": code,
                "count": len(items),
                "spots": sorted({a["spot"] for a in items if a.get("spot")}),
                "text": card_words(text),
                "action": card_words(items[-1]["action"]),
                "since": since,
            }
        )
    severe = [line for line in lines if line["code"].startswith(("journal_fault", "fault_"))]
    return severe + [line for line in lines[::-1] if line not in severe]


def next_steps(feed: list[dict[str, Any]]) -> list[str]:
    """The newest prompts (all those of the last event that gave any), oldest first."""
    prompts = [item for item in feed if item.get("kind") == "prompt"]
    if not prompts:
        return []
    last = prompts[-1]
    key = ("seq",) if "seq" in last else ("t", "round")  # seq: the event that made it
    return [p["text"] for p in prompts if all(p.get(k) == last.get(k) for k in key)]


def headline(snap: dict[str, Any], feed: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The table's one thing to do now: its prompt of the moment (it never goes stale), or,
    from an older table without one, the newest prompt. (A blocking alarm takes the dealer
    display's headline from it: :func:`dealer_view`, :func:`controller.web.stops.stop_now`.)"""
    prompt = snap.get("prompt")
    if prompt:
        return {**prompt, "text": card_words(prompt["text"])}
    steps = next_steps(feed)
    if steps:
        return {"code": None, "text": card_words(steps[-1]), "spot": None}
    if snap.get("phase"):
        return {"code": snap["phase"], "text": phase_words(snap["phase"]), "spot": None}
    return None


def recent(feed: list[dict[str, Any]], status: dict[str, Any], now: str | None) -> list[str]:
    """What the latest event said besides the headline (``Spot 2 stands on 17``, ``Dealer
    turns the hole card ...``): every message of it, newest first, at most
    :data:`RECENT_KEPT`, without the pay prompts (the settlement rows say them) and without
    the headline itself; nothing once a later event came."""
    prompts = [item for item in feed if item.get("kind") == "prompt"]
    if not prompts:
        return []
    last = prompts[-1]
    latest = status.get("journal_events")
    if "seq" in last and latest is not None and last["seq"] != latest:
        return []
    key = ("seq",) if "seq" in last else ("t", "round")
    texts = [
        card_words(p["text"])
        for p in prompts
        if all(p.get(k) == last.get(k) for k in key) and p.get("code") != "pay"
    ]
    return [text for text in texts if text != now][::-1][:RECENT_KEPT]


def jackpot_link_words(status: dict[str, Any]) -> str | None:
    """The dealer's bar while the jackpot link is down, in fixed words (the controller's
    heartbeat missing says so: issue 28 item 3); None while it is up."""
    if status.get("jackpot_link", True):
        return None
    why = LINK_WHY.get(str(status.get("jackpot_link_why") or ""))
    if why is None:
        return "Jackpot link down: no progressive wagers"
    return f"Jackpot link down: {why}. No progressive wagers"


def _stop_headline(stop: dict[str, Any], table_prompt: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "code": stop["code"],
        "text": card_words(stop["text"]),
        "spot": stop.get("spot"),
        "stop": True,
        "since": stop.get("since"),
        "then": table_prompt["text"] if stop.get("then") and table_prompt else None,
    }


def _skipped(stop: dict[str, Any] | None, status: dict[str, Any]) -> tuple[str, ...]:
    if stop is None:
        return ()
    if stop["code"] in ("table_fault", "fault_latched"):
        return tuple(f"fault_{kind}" for kind in status.get("faults") or {})
    return STOP_ALARMS.get(stop["code"], ())


def dealer_view(
    table_id: str,
    status: dict[str, Any],
    feed: list[dict[str, Any]],
    meters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The dealer display: the next thing to do, what to pay whom, alarms, the layout.

    ``prompt`` is the headline: a blocking alarm's instruction (``stop`` true, ``since``,
    ``then``: :func:`controller.web.stops.stop_now`) or the table's prompt of the moment
    (:func:`headline`); ``recent`` what the last event said, newest first; ``alarm_lines``
    the alarms merged by kind, each with its age; ``layout`` the table picture
    (:func:`table_layout`); ``betting`` the limits, chips and meters (``meters``: the
    progressive meters, ``pool`` and ``amount``, if the link brings them; else
    ``status["meters"]``; offline while the link is down); ``recall`` the last settled
    round shown again, or None. The older keys (``next``, ``pay``, ``alarms``, ``spots``,
    ``dealer``) stay as they were for the pages and tools that read them."""
    snap = status.get("snapshot") or {}
    number = snap.get("round")
    refusal = None
    for item in reversed(feed):
        if item.get("kind") == "prompt":
            break
        if item.get("kind") == "refused":
            refusal = item["reason"]
            break
    notice = (status.get("recall") or {}).get("notice")
    if notice and status.get("t") is not None and status["t"] < status["recall"]["until"]:
        refusal = notice  # a recall_last press that shows nothing says why, for a moment
    dealer = snap.get("dealer") or {}
    spots = []
    for spot in snap.get("spots") or []:
        hands = [
            {"cards": h["cards"], "total": h["total"], "soft": h["soft"], "wager": h["wager"]}
            for h in spot["hands"]
        ]
        spots.append({"spot": spot["spot"], "hands": hands})
    table_prompt = headline(snap, feed)
    view = {
        "table": table_id,
        "round": number,
        "phase": snap.get("phase"),
        "phase_words": phase_words(
            str(snap.get("phase") or ""), (snap.get("prompt") or {}).get("code")
        ),
        # after a restart the feed is empty: the phase says what to do until a prompt comes
        "next": next_steps(feed) or ([phase_words(snap["phase"])] if snap.get("phase") else []),
        "refused": card_words(refusal) if refusal else None,
        "pay": [pay_line(item) for item in round_settlements(status, feed, number)],
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
        "jackpot_link_words": jackpot_link_words(status),
    }
    items = round_settlements(status, feed, number)
    stop = stop_now(status, items)
    view["prompt"] = _stop_headline(stop, table_prompt) if stop else table_prompt
    view["recent"] = recent(feed, status, table_prompt["text"] if table_prompt else None)
    view["alarm_lines"] = alarm_lines(status, _skipped(stop, status))
    words = dealer_hand(snap)
    view["dealer_words"] = {"total": words["total"], "showing": card_words(words["showing"])}
    view["layout"] = table_layout(snap, settlement_rows(view["pay"], mark_split(snap, items)))
    view["betting"] = betting_view(
        snap,
        meters if meters is not None else status.get("meters"),
        link_up=bool(status.get("jackpot_link", True)),
    )
    view["recall"] = recall_view(status)
    view["software"] = software_words(status)
    return view


def software_words(status: dict[str, Any]) -> str | None:
    """The dealer display's footer: the software self-check when it is not ok (issue 29
    item 4), else None (no footer)."""
    result = (status.get("software") or {}).get("result")
    if result == "unverified":
        return "unverified build: not a signed release (a development checkout)"
    if result == "failed":
        return "software not verified: call a technician (no new round)"
    return None


# -- /metrics ---------------------------------------------------------------------------------


def metrics_text(bundle: dict[str, Any], web: dict[str, Any]) -> str:
    """``/metrics`` in the Prometheus text format (version 0.0.4): the table's figures and the
    process metrics, built by prometheus_client in :mod:`controller.web.metrics` (which reads
    /proc, so it is imported only here, when a scrape asks).

    ``bundle`` is :meth:`WebServer.bundle`'s dict, ``web`` the server's own counters."""
    from controller.web.metrics import metrics_text as scrape

    return scrape(bundle, web)
