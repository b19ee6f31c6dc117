"""What the web pages show, built from the runtime's public status (pure: no I/O).

Everything here starts from :meth:`TableRuntime.status` (whose snapshot hides the hole
card until the dealer's turn), the dealer feed and the drivers' health. Nothing here can
see the table's internal state, so nothing here can leak the hole card. Amounts are
integer cents; ``format_cents`` writes them for people.
"""

from __future__ import annotations

import re
from typing import Any

from controller.rules.pays import format_cents
from controller.table.effects import Settled, field_names
from controller.table.events import LINK_WHY
from controller.table.view import bet_name, pool_name, settlement_prompt

SUITS = {"H": "\u2665", "D": "\u2666", "C": "\u2663", "S": "\u2660"}
"""Suits as the dealer display writes them: 10H -> 10\u2665."""
_CARD = re.compile(r"(?<![\w$.])(10|[2-9AJQK])([HDCS])(?![\w])")
SHORT_NAMES = {"main": "Main", "double_down": "Double Down", "insurance": "Insurance"}
"""Bet circles as the table picture labels them (others: :func:`bet_name`)."""

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


def card_words(text: str) -> str:
    """Every card in a text with its suit symbol (``Burn card 10H`` -> ``Burn card 10\u2665``).

    >>> card_words("Dealer turns the hole card: 10C 6D, 16; spot 3 pays $5.00")
    'Dealer turns the hole card: 10\u2663 6\u2666, 16; spot 3 pays $5.00'
    """
    return _CARD.sub(lambda m: m[1] + SUITS[m[2]], text)


def circle_name(circle: str) -> str:
    """``main`` -> ``Main``; ``blazing_7s`` -> ``Blazing 7's`` (the rule cards' names)."""
    return SHORT_NAMES.get(circle) or bet_name(circle)


def total_words(cards: list[str], total: int | None, soft: bool, *, natural: bool = True) -> str:
    """A hand's total as the dealer says it: ``soft 17``, ``BUST 25``, ``Blackjack``; empty
    for a hand without cards (never a total of 0)."""
    if total is None or not cards:
        return ""
    if total > 21:
        return f"BUST {total}"
    if natural and total == 21 and len(cards) == 2:
        return "Blackjack"
    return f"soft {total}" if soft else str(total)


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


def alarm_lines(status: dict[str, Any]) -> list[dict[str, Any]]:
    """The alarms the dealer must see, one line per kind: repeats of a kind merge into one
    line with their ``count`` and ``spots``; alarms whose cause is over (cleared by
    themselves) are left out, and so is a table fault's alarm, which the latched fault's own
    line says. Newest kind first; texts with suit symbols."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for alarm in open_alarms(status):
        if alarm["code"] == "table_fault" and status.get("faults"):
            continue
        groups.setdefault(alarm["code"], []).append(alarm)
    lines = [
        {
            "code": code,
            "count": len(items),
            "spots": sorted({a["spot"] for a in items if a.get("spot")}),
            "text": card_words(_group_text(code, items)),
            "action": card_words(items[-1]["action"]),
        }
        for code, items in groups.items()
    ]
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


def _settlement_rows(pay: list[dict[str, Any]], items: list[dict[str, Any]]) -> dict[int, Any]:
    """Spot -> its one settlement row: each wager's line (``what``, ``name``, ``amount``,
    ``hand``) in settlement order and the spot's ``net`` (cents; None while a meter share is
    unknown: the jackpot controller sends its amount)."""
    rows: dict[int, dict[str, Any]] = {}
    for line, item in zip(pay, items, strict=True):
        row = rows.setdefault(line["spot"], {"lines": [], "net": 0, "meter": False})
        wager = item.get("wager") or ""
        name = circle_name(wager)
        if line["hand"] is not None and item.get("split"):
            name = ("Hand" if wager == "main" else "Double") + f" {line['hand'] + 1}"
        row["lines"].append(
            {
                "what": line["what"],
                "name": name,
                "amount": line["amount"],
                "hand": line["hand"],
                "wager": wager,
            }
        )
        row["net"] += (item.get("paid") or 0) + (item.get("returned") or 0) - item["stake"]
        row["meter"] = row["meter"] or line["what"] == "meter"
    return rows


def _hand_view(hand: dict[str, Any], *, natural: bool, here: bool) -> dict[str, Any]:
    return {
        "cards": hand["cards"],
        "total": total_words(hand["cards"], hand["total"], hand["soft"], natural=natural),
        "bust": hand["total"] > 21,
        "wager": hand["wager"],
        "double_down": hand.get("double_down") or 0,
        "double_up": hand.get("double_up") or 0,
        "surrendered": bool(hand.get("surrendered")),
        "in_action": here,
    }


def _mark_split(snap: dict[str, Any], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The settled items, each with ``split``: whether its spot played more than one hand."""
    split = {spot["spot"] for spot in snap.get("spots") or [] if len(spot["hands"]) > 1}
    return [{**item, "split": item.get("spot") in split} for item in items]


def _chip_outcomes(row: dict[str, Any] | None, hands: int) -> dict[str, tuple[str, int]]:
    """Circle -> what became of it and the amount to pay, take or return, for the wagers of
    a spot settled during the round (side bets at the deal, a blackjack paid at once,
    insurance at the peek)."""
    out: dict[str, tuple[str, int]] = {}
    for line in (row or {}).get("lines", []):
        if line["hand"] is None or (line["wager"] == "main" and hands == 1):
            out[line["wager"]] = (line["what"], line["amount"])
    return out


def table_layout(snap: dict[str, Any], rows: dict[int, Any]) -> list[dict[str, Any]]:
    """The table as a picture: every spot of the table in table order (first base first),
    each with its chips (the bets the sensors see, at the amount they would be taken, or the
    wagers latched for the round), its hands and totals and its settlement row.

    While a round is played a chip the sensors see that is no wager (a late bet, a
    progressive bet refused while the link is down) has ``not_wager``; a wager whose chips
    left the circle has ``chips_off``."""
    table = snap.get("table") or {}
    playing = {spot["spot"]: spot for spot in snap.get("spots") or []}
    numbers = range(1, (table.get("spots") or max(playing, default=0)) + 1)
    seen: dict[int, list[dict[str, Any]]] = {}
    order = {circle: n for n, circle in enumerate(table.get("circles") or [])}
    bets = snap.get("bet_amounts") or snap.get("bets") or []
    for bet in sorted(bets, key=lambda b: (b["spot"], order.get(b["circle"], 99))):
        seen.setdefault(bet["spot"], []).append(bet)
    act = snap.get("in_action") or {}
    in_round = bool(snap.get("in_progress"))
    out = []
    for number in numbers:
        spot = playing.get(number)
        if spot is not None:
            wagers = dict(spot["wagers"])
            if spot.get("insurance"):
                wagers["insurance"] = spot["insurance"]
            if spot.get("ez_bust"):
                wagers["ez_bust"] = spot["ez_bust"]
            done = _chip_outcomes(rows.get(number), len(spot["hands"]))
            on = {b["circle"] for b in seen.get(number, [])}
            chips = [
                {
                    "circle": c,
                    "name": circle_name(c),
                    "amount": amount,
                    "settled": done[c][0] if c in done else None,
                    "settled_amount": done[c][1] if c in done else None,
                    "chips_off": in_round and c in order and c not in on,
                }
                for c, amount in wagers.items()
            ]
            chips += [
                {
                    "circle": b["circle"],
                    "name": circle_name(b["circle"]),
                    "amount": b.get("amount"),
                    "not_wager": True,
                }
                for b in seen.get(number, [])
                if b["circle"] not in wagers and in_round
            ]
            natural = len(spot["hands"]) == 1
            hands = [
                _hand_view(
                    hand,
                    natural=natural,
                    here=act.get("spot") == number and act.get("hand", 0) == index,
                )
                for index, hand in enumerate(spot["hands"])
            ]
        else:
            chips = [
                {
                    "circle": b["circle"],
                    "name": circle_name(b["circle"]),
                    "amount": b.get("amount"),
                    "not_wager": in_round,
                }
                for b in seen.get(number, [])
            ]
            hands = []
        out.append(
            {
                "spot": number,
                "playing": spot is not None,
                "in_action": act.get("spot") == number,
                "chips": chips,
                "hands": hands,
                "settlement": rows.get(number) if snap.get("phase") == "settled" else None,
            }
        )
    return out


def betting_view(snap: dict[str, Any], meters: list[dict[str, Any]] | None) -> dict[str, Any]:
    """What the dealer needs while bets are placed: the table's limits, the chips the
    sensors see and their total, and the progressive meters (``pool``, ``name``, ``amount``)
    when the link brings them."""
    table = snap.get("table") or {}
    bets = snap.get("bet_amounts") or []
    limits = []
    if table.get("main_minimum") is not None:
        limits.append({"name": "Main", "low": table["main_minimum"], "high": table["main_maximum"]})
    if table.get("side_minimum") is not None and len(table.get("circles") or []) > 1:
        limits.append(
            {"name": "Side bets", "low": table["side_minimum"], "high": table["side_maximum"]}
        )
    return {
        "limits": limits,
        "spots_bet": len({b["spot"] for b in bets if b["circle"] == "main"}),
        "chips_total": sum(b.get("amount") or 0 for b in bets),
        "meters": [
            {"pool": m["pool"], "name": pool_name(m["pool"]), "amount": m["amount"]}
            for m in meters or []
        ],
    }


def headline(snap: dict[str, Any], feed: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one thing to do now: the table's prompt of the moment (it never goes stale), or,
    from an older table without one, the newest prompt."""
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
    turns the hole card ...``): its prompts, without the pay prompts (the settlement rows say
    them) and without the headline itself; nothing once a later event came."""
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
    return [text for text in texts if text != now]


def jackpot_link_words(status: dict[str, Any]) -> str | None:
    """The dealer's bar while the jackpot link is down, in fixed words (the controller's
    heartbeat missing says so: issue 28 item 3); None while it is up."""
    if status.get("jackpot_link", True):
        return None
    why = LINK_WHY.get(str(status.get("jackpot_link_why") or ""))
    if why is None:
        return "Jackpot link down: no progressive wagers"
    return f"Jackpot link down: {why}. No progressive wagers"


def dealer_view(
    table_id: str,
    status: dict[str, Any],
    feed: list[dict[str, Any]],
    meters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The dealer display: the next thing to do, what to pay whom, alarms, the layout.

    ``prompt`` is the headline (:func:`headline`), ``recent`` what the last event said,
    ``alarm_lines`` the alarms merged by kind, ``layout`` the table picture
    (:func:`table_layout`), ``betting`` the limits, chips and meters (``meters``: the
    progressive meters, ``pool`` and ``amount``, if the link brings them; else
    ``status["meters"]``). The older keys (``next``, ``pay``, ``alarms``, ``spots``,
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
    dealer = snap.get("dealer") or {}
    spots = []
    for spot in snap.get("spots") or []:
        hands = [
            {"cards": h["cards"], "total": h["total"], "soft": h["soft"], "wager": h["wager"]}
            for h in spot["hands"]
        ]
        spots.append({"spot": spot["spot"], "hands": hands})
    view = {
        "table": table_id,
        "round": number,
        "phase": snap.get("phase"),
        "phase_words": phase_words(str(snap.get("phase") or "")),
        # after a restart the feed is empty: the phase says what to do until a prompt comes
        "next": next_steps(feed) or ([phase_words(snap["phase"])] if snap.get("phase") else []),
        "refused": refusal,
        "pay": [pay_line(item) for item in _round_settlements(status, feed, number)],
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
    items = _round_settlements(status, feed, number)
    now = headline(snap, feed)
    view["prompt"] = now
    view["recent"] = recent(feed, status, now["text"] if now else None)
    if view["refused"]:
        view["refused"] = card_words(view["refused"])
    view["alarm_lines"] = alarm_lines(status)
    view["dealer_words"] = {
        "total": total_words(
            dealer.get("cards") or [], dealer.get("total"), dealer.get("soft", False)
        ),
        "showing": card_words(dealer["showing"]) if dealer.get("showing") else "",
    }
    view["layout"] = table_layout(snap, _settlement_rows(view["pay"], _mark_split(snap, items)))
    view["betting"] = betting_view(snap, meters if meters is not None else status.get("meters"))
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


def _round_settlements(
    status: dict[str, Any], feed: list[dict[str, Any]], number: Any
) -> list[dict[str, Any]]:
    """The settled wagers of round ``number`` (feed items): the runtime keeps all of the
    round's in the status, however long the feed."""
    items = (
        status["settlements"]
        if "settlements" in status
        else [i for i in feed if i.get("kind") == "settled"]
    )
    return [item for item in items if item.get("round") == number]


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
