"""When the dealer display's headline says stop, and in which words (issue 30 item 1).

A blocking alarm takes the headline from the table's prompt of the moment: while the shoe is
offline the dealer must read "Stop: the shoe is offline. Deal no card; call a technician",
never "Spot 3 to act on 12: hit, stand" under a small red band. Which alarms block, in which
order and with which words is decided here, from the runtime's public status alone (pure:
status in, words out; the same status always gives the same words), and tested in
``tests/test_dealer_stops.py``. When the cause is over the status says so and the table's own
prompt is the headline again: nothing here is remembered.

The blocking alarms, first found wins (:data:`ORDER`):

1. ``journal_fault``: the journal cannot be written (nothing the table does is recorded);
2. ``shoe_offline`` and ``shoe_fault``: the shoe deals no card;
3. ``card_waiting``: a card (unexpected, held, foreign) waits for burn, assign or misdeal;
4. ``chips_lifted``: chips taken from a wager after no more bets;
5. ``progressive_link``: the jackpot link down while a progressive jackpot of the round on the
   layout waits for the jackpot controller's award;
6. ``table_fault``: a fault latched and still present: between rounds no new round; during a
   round the dealer finishes or voids it (the table's own prompt comes with it, as ``then``),
   so it yields to every stop above, which halt the play it would prompt;
7. ``fault_latched``: between rounds, a fault that is over but still latched (the supervisor
   key clears it; no round starts until then).

Each stop also says how long its cause has lasted (``since``: ``for 1 min 15 s``), from the
alarm register's time of the alarm and the clock of the status; an alarm's own text written
at detection (``no message from the shoe for 3001 ms``) is aged the same way by
:func:`aged_text`, so no text on the screen is frozen at the moment it was detected.
"""

from __future__ import annotations

import re
from typing import Any

from controller.rules.sidebets import pool_name
from controller.table.view import bet_name

ORDER = (
    "journal_fault",
    "shoe_offline",
    "shoe_fault",
    "card_waiting",
    "chips_lifted",
    "progressive_link",
    "table_fault",
    "fault_latched",
)
"""The blocking alarms, most urgent first: only the first found takes the headline."""

FAULT_WHAT = {
    "shoe": "the shoe is lost",
    "camera": "the camera is lost",
    "gpio": "the sensors and buttons are lost",
    "journal": "the journal failed",
    "link": "the jackpot link is down too long",
    "software": "the software is not the signed build",
}
"""A latched fault's kind as the headline says it (another kind: ``the KIND fault``)."""

_FROZEN = re.compile(r",? (?:for|after) (\d+(?:\.\d+)?) ?(ms|s)\b")
"""A duration written into an alarm's text when it was detected (``for 3001 ms``)."""


def duration_words(ms: int) -> str:
    """A duration as the screen says it, to the second.

    >>> duration_words(75_400), duration_words(9_999), duration_words(3_600_000 + 61_000)
    ('1 min 15 s', '9 s', '1 h 1 min')
    >>> duration_words(120_000), duration_words(-5)
    ('2 min', '0 s')
    """
    seconds = max(0, int(ms)) // 1000
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def frozen(text: str) -> tuple[str, int]:
    """``text`` without the durations written into it at detection, and the longest of them
    in ms (0 if none).

    >>> frozen("The shoe is offline (no message from the shoe for 3001 ms)")
    ('The shoe is offline (no message from the shoe)', 3001)
    >>> frozen("Table fault (shoe): not connected for 30 s")
    ('Table fault (shoe): not connected', 30000)
    """
    longest = 0
    for m in _FROZEN.finditer(text):
        amount = float(m[1]) * (1 if m[2] == "ms" else 1000)
        longest = max(longest, int(amount))
    return _FROZEN.sub("", text), longest


def aged_text(text: str, raised_t: int | None, now: int | None) -> tuple[str, str | None]:
    """An alarm's text without its frozen durations, and how long its cause has lasted now
    (``for 1 min 15 s``: since it was raised, plus what it had lasted when detected); None
    without both times.

    >>> aged_text("The shoe is offline (no message from the shoe for 3001 ms)", 1000, 73_000)
    ('The shoe is offline (no message from the shoe)', 'for 1 min 15 s')
    """
    words, before = frozen(text)
    if raised_t is None or now is None:
        return words, None
    return words, f"for {duration_words(now - raised_t + before)}"


def _open(snap: dict[str, Any], *codes: str) -> list[dict[str, Any]]:
    """The register's alarms of ``codes`` still open (oldest first)."""
    return [a for a in snap.get("alarms") or [] if a.get("code") in codes and a.get("active", True)]


def _since(alarms: list[dict[str, Any]], now: int | None) -> str | None:
    """How long the oldest of ``alarms`` has lasted (with what its text says it had lasted
    when it was raised)."""
    timed = [a for a in alarms if a.get("t") is not None]
    if not timed or now is None:
        return None
    lasted = max(now - a["t"] + frozen(a.get("text") or "")[1] for a in timed)
    return f"for {duration_words(lasted)}"


def _spots_words(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _stop(code: str, text: str, since: str | None, **extra: Any) -> dict[str, Any]:
    return {"code": code, "text": text, "since": since, "then": None, "spot": None, **extra}


def _journal(status: dict[str, Any], snap: dict[str, Any], now: int | None) -> Any:
    detail = status.get("journal_fault")
    if not detail:
        return None
    words, _ = frozen(str(detail))
    return _stop(
        "journal_fault",
        f"Stop: the table cannot record the game ({words}). Deal no card; call a technician",
        None,
    )


def _shoe(status: dict[str, Any], snap: dict[str, Any], now: int | None) -> Any:
    fault = (snap.get("shoe") or {}).get("fault") or ""
    if fault == "offline":
        return _stop(
            "shoe_offline",
            "Stop: the shoe is offline. Deal no card; call a technician",
            _since(_open(snap, "shoe_offline"), now),
        )
    if fault:
        what = "" if fault == "fault" else f" ({frozen(fault)[0]})"
        return _stop(
            "shoe_fault",
            f"Stop: the shoe reports a fault{what}. Deal no card; call a technician",
            _since(_open(snap, "shoe_fault"), now),
        )
    return None


def _fault_alarms(snap: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [a for a in _open(snap, "table_fault") if a.get("about") in (kind, None)]


def _fault(status: dict[str, Any], snap: dict[str, Any], now: int | None) -> Any:
    faults = status.get("faults") or {}
    present = [(k, f) for k, f in sorted(faults.items()) if f.get("active")]
    if not present:
        return None
    kind, fault = present[0]
    what = FAULT_WHAT.get(kind, f"the {kind} fault")
    detail = frozen(str(fault.get("detail") or ""))[0]
    what += f" ({detail})" if detail else ""
    more = f" and {len(present) - 1} more" if len(present) > 1 else ""
    since = _since(_fault_alarms(snap, kind), now)
    if snap.get("in_progress"):
        return _stop(
            "table_fault",
            f"Table fault: {what}{more}. Finish or void this round, then deal no other; "
            "call a technician",
            since,
            then=True,
        )
    return _stop(
        "table_fault",
        f"Stop: table fault, {what}{more}. No new round; call a technician",
        since,
    )


def _card(status: dict[str, Any], snap: dict[str, Any], now: int | None) -> Any:
    if not snap.get("pending_cards"):
        return None
    prompt = snap.get("prompt") or {}
    text = str(prompt.get("text") or "")
    head, _, advice = text.partition(" waits for a decision: ")
    if prompt.get("code") != "decide" or not advice:
        head = "A card"
        advice = "burn it, assign it, or call a misdeal (supervisor key)"
    if head[1:2].islower():  # "Card 7H", "A card": never "QH" lowered
        head = head[0].lower() + head[1:]
    return _stop(
        "card_waiting",
        f"Stop: {head} waits for a decision. {advice[0].upper()}{advice[1:]}",
        _since(_open(snap, "held_card", "unexpected_card", "foreign_card"), now),
    )


def _chips(status: dict[str, Any], snap: dict[str, Any], now: int | None) -> Any:
    lifted = _open(snap, "bet_removed")
    if not lifted:
        return None
    names = []
    for alarm in sorted(lifted, key=lambda a: (a.get("spot") or 0, str(a.get("about")))):
        name = f"spot {alarm.get('spot')} {bet_name(str(alarm.get('about') or 'main'))}"
        if name not in names:
            names.append(name)
    stand = "the wager stands" if len(names) == 1 else "the wagers stand"
    return _stop(
        "chips_lifted",
        f"Stop: chips were taken from {_spots_words(names)} after no more bets; {stand}. "
        "Call the supervisor",
        _since(lifted, now),
        spot=lifted[0].get("spot"),
        then=snap.get("phase") == "settled",  # the supervisor came: settle the round
    )


def _progressive(status: dict[str, Any], snap: dict[str, Any], now: int | None) -> Any:
    if status.get("jackpot_link", True):
        return None
    number = snap.get("round")
    awarded = {(a.get("round"), a.get("spot")) for a in snap.get("awards") or []}
    waiting = [
        s
        for s in status.get("settlements") or []
        if s.get("meter") and s.get("round") == number and (number, s.get("spot")) not in awarded
    ]
    if not waiting:
        return None
    first = waiting[0]
    pool = pool_name(str(first.get("pool") or first.get("wager") or ""))
    more = f" (and {len(waiting) - 1} more)" if len(waiting) > 1 else ""
    return _stop(
        "progressive_link",
        f"Stop: the jackpot link is down and spot {first.get('spot')}'s {pool} jackpot{more} "
        "waits for its award. Leave the cards on the layout; call the supervisor",
        _since(_open(snap, "jackpot_link_down"), now),
        spot=first.get("spot"),
    )


def _latched(status: dict[str, Any], snap: dict[str, Any], now: int | None) -> Any:
    faults = status.get("faults") or {}
    if not faults or snap.get("in_progress") or snap.get("phase") == "settled":
        return None
    kinds = sorted(faults)
    return _stop(
        "fault_latched",
        f"Stop: the {' and '.join(kinds)} fault is over but still latched. No new round: "
        "turn the supervisor key to clear it",
        None,
    )


_CHECKS = {
    "journal_fault": _journal,
    "shoe_offline": _shoe,
    "shoe_fault": _shoe,
    "table_fault": _fault,
    "card_waiting": _card,
    "chips_lifted": _chips,
    "progressive_link": _progressive,
    "fault_latched": _latched,
}


def stop_now(
    status: dict[str, Any], settlements: list[dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    """The blocking alarm that takes the dealer display's headline now, or None (the table's
    prompt is the headline). ``code`` names it (:data:`ORDER`), ``text`` is the instruction
    (cards as the table writes them: the caller adds suit symbols), ``since`` how long its
    cause has lasted (or None), ``then`` True when the table's own prompt still applies
    under it (a fault latched during a round: finish or void the round), ``spot`` the spot
    it is about, if one. ``settlements``: the round's settled wagers (feed items; default
    the status' own)."""
    if settlements is not None:
        status = {**status, "settlements": settlements}
    snap = status.get("snapshot") or {}
    now = status.get("t")
    seen = set()
    for code in ORDER:
        check = _CHECKS[code]
        if check in seen:
            continue
        seen.add(check)
        found = check(status, snap, now)
        if found is not None:
            return found
    return None
