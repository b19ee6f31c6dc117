"""The dealer display's table picture (pure): every spot with its chips, hands and settlement
row, the betting strip, and the last settled round shown again (issue 30).

Built from :meth:`TableRuntime.status` only (its snapshot hides the hole card until the
dealer's turn). Amounts are integer cents.
"""

from __future__ import annotations

import math
from typing import Any

from controller.table.view import pool_name
from controller.web.stops import duration_words
from controller.web.words import circle_name, pay_line, total_words


def settlement_rows(pay: list[dict[str, Any]], items: list[dict[str, Any]]) -> dict[int, Any]:
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


def mark_split(snap: dict[str, Any], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
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


def _returns(
    snap: dict[str, Any], number: int, seen: list[dict[str, Any]], wagers: dict[str, Any]
) -> list[dict[str, Any]]:
    """A settled spot's lines for chips that were no wager: ``return`` for those still on
    their circle (``Return $5.00 Blazing 7's``: a progressive bet refused while the jackpot
    link was down, a late bet), ``returned`` for a refused progressive bet whose chips the
    dealer already took off (it stays in the settlement: issue 30)."""
    out = [
        {
            "what": "return",
            "name": circle_name(b["circle"]),
            "amount": b.get("amount"),
            "hand": None,
            "wager": b["circle"],
            "not_wager": True,
        }
        for b in seen
        if b["circle"] not in wagers
    ]
    on = {b["circle"] for b in seen}
    for alarm in snap.get("alarms") or []:
        circle = alarm.get("about")
        if (
            alarm.get("code") == "progressive_refused"
            and alarm.get("spot") == number
            and alarm.get("round") == snap.get("round")
            and circle
            and circle not in on
            and circle not in wagers
            and not any(line["wager"] == circle for line in out)
        ):
            out.append(
                {
                    "what": "returned",
                    "name": circle_name(circle),
                    "amount": None,
                    "hand": None,
                    "wager": circle,
                    "not_wager": True,
                }
            )
    return out


def table_layout(snap: dict[str, Any], rows: dict[int, Any]) -> list[dict[str, Any]]:
    """The table as a picture: every spot of the table in table order (first base first),
    each with its chips (the bets the sensors see, at the amount they would be taken, or the
    wagers latched for the round), its hands and totals and its settlement row.

    While a round is played or settled, a chip the sensors see that is no wager (a late bet,
    a progressive bet refused while the link is down) has ``not_wager`` (once the round is
    settled it is a ``return`` line of the spot's row); a wager whose chips left the circle
    has ``chips_off``."""
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
    settled = snap.get("phase") == "settled"
    out = []
    for number in numbers:
        spot = playing.get(number)
        row = rows.get(number) if settled else None
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
                if b["circle"] not in wagers and (in_round or settled)
            ]
            if row is not None:
                row = {
                    **row,
                    "lines": row["lines"] + _returns(snap, number, seen.get(number, []), wagers),
                }
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
                    "not_wager": in_round or settled,
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
                "settlement": row,
            }
        )
    return out


def betting_view(
    snap: dict[str, Any], meters: list[dict[str, Any]] | None, link_up: bool = True
) -> dict[str, Any]:
    """What the dealer needs while bets are placed: the table's limits, the chips the
    sensors see and their total, and the progressive meters (``pool``, ``name``, ``amount``)
    when the link brings them. While the jackpot link is down every meter is ``offline``
    with no amount (the lobby sign says OFFLINE too: a meter the controller may have moved
    since is not shown as if it were current)."""
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
            {
                "pool": m["pool"],
                "name": pool_name(m["pool"]),
                "amount": m["amount"] if link_up else None,
                "offline": not link_up,
            }
            for m in meters or []
        ],
        "meters_offline": not link_up and bool(meters),
    }


def round_settlements(
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


def dealer_hand(snap: dict[str, Any]) -> dict[str, Any]:
    """The dealer's cards (``back`` for the hole card face down) and their words."""
    dealer = snap.get("dealer") or {}
    cards = dealer.get("cards") or []
    return {
        "cards": cards,
        "total": total_words(cards, dealer.get("total"), dealer.get("soft", False)),
        "showing": dealer.get("showing") or "",
    }


def recall_view(status: dict[str, Any]) -> dict[str, Any] | None:
    """The last settled round shown again (the console's ``recall_last`` button, or the
    settlement held after end round: ``status["recall"]``), until its time is up; None
    otherwise. Never during a round: the felt is the live table's then.

    ``round``, ``ago`` (how long since it was settled), ``left_s`` (seconds it stays on the
    screen), ``why`` (``button`` or ``end_round``), ``dealer`` (:func:`dealer_hand`) and
    ``layout`` (:func:`table_layout`, every spot with its settlement row)."""
    recall = status.get("recall") or {}
    last = status.get("last_settled") or {}
    now = status.get("t")
    snap = status.get("snapshot") or {}
    until = recall.get("until")
    if not recall.get("round") or now is None or until is None or now >= until:
        return None
    if snap.get("in_progress") or snap.get("phase") == "settled" or not last.get("snapshot"):
        return None
    shown = last["snapshot"]
    if shown.get("round") != recall["round"]:
        return None
    items = mark_split(shown, last.get("settlements") or [])
    rows = settlement_rows([pay_line(item) for item in items], items)
    return {
        "round": shown.get("round"),
        "ago": duration_words(now - last["t"]) if last.get("t") is not None else None,
        "left_s": math.ceil((until - now) / 1000),
        "why": recall.get("why") or "button",
        "dealer": dealer_hand(shown),
        "layout": table_layout(shown, rows),
    }
