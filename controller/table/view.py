"""What people see of the table: casino wording and the public snapshot.

The snapshot is the only view of the state that leaves the core. Before the
dealer's turn the hole card appears in it as ``"back"`` and no total counts it.
"""

from __future__ import annotations

from typing import Any

from controller.rules.hand import hand_total
from controller.rules.pays import format_cents
from controller.rules.sidebets import TITLES, pool_name
from controller.rules.sidebets.blackjack_tie import LABELS as TIE_LABELS
from controller.table.effects import Settled
from controller.table.state import IN_PROGRESS, TableState

BET_NAMES = {
    "main": "main wager",
    "double_down": "Double Down",
    "double_up": "Double Up",
    "insurance": "insurance",
    **TITLES,
}
HIDDEN = "back"
TIE_BONUS_NAMES = {"left_side": "LS", "right_side": "RS", "tie_blackjack": "Blackjack"}


def bet_name(wager: str) -> str:
    """``lucky_ladies`` -> ``Lucky Ladies``; ``blackjack_tie.tie_17`` -> ``Blackjack Tie 17``;
    ``blackjack_tie.left_side`` -> ``Blackjack Tie LS``."""
    if wager.startswith("blackjack_tie."):
        bonus = wager.split(".", 1)[1]
        if bonus not in TIE_LABELS:
            return wager
        return f"Blackjack Tie {TIE_BONUS_NAMES.get(bonus, bonus.removeprefix('tie_'))}"
    return BET_NAMES.get(wager, wager)


_CALL = "Call a technician"
_FORGED = f"{_CALL}: it may be forged; keep dealing, pay no jackpot that is not prompted"
LINK_ALARM_WORDS = {
    "ack_refused": (
        "The jackpot controller's acknowledgement was refused: it does not match what this "
        "table sent",
        _FORGED,
    ),
    "ack_malformed": ("A malformed acknowledgement arrived on the jackpot link", _FORGED),
    "clock_unsynchronised": (  # issue 28 item 6: every record's time depends on the clock
        "The table's clock is not synchronised (or off its time server past the limit)",
        f"{_CALL}: check the time server (NTP) and the clock; the records' times may be off",
    ),
    "resend_refused": (
        "A resend request for messages this table never sent was refused: its messages go on",
        _FORGED,
    ),
    "resend_malformed": ("A malformed resend request arrived on the jackpot link", _FORGED),
    "award_malformed": (
        "A malformed jackpot award arrived on the jackpot link: it was not shown",
        f"{_CALL}; do not pay it: it may be forged",
    ),
    "award_refused": (
        "A jackpot award could not be handed to the table",
        f"{_CALL}: check the jackpot controller's awards for this table",
    ),
    "meter_malformed": (
        "A malformed progressive meter arrived on the jackpot link: it was not shown",
        _FORGED,
    ),
    "signature": ("A jackpot link message failed its signature check: it was refused", _FORGED),
    "puback": (
        "The broker refused a jackpot message from this table",
        f"{_CALL}: the table's messages wait in its outbox and are sent again",
    ),
    "suback": (
        "The broker refused the table's subscription to the jackpot controller's messages",
        f"{_CALL}: no acknowledgement or award can reach this table (check the broker's ACL)",
    ),
    "invalid": (
        "A jackpot message from this table fails the link's contract: it was not sent and "
        "the messages after it wait",
        f"{_CALL} at once: progressive contributions and claims are held back",
    ),
    "too_large": (
        "A jackpot message from this table is too large to send: the messages after it wait",
        f"{_CALL} at once: progressive contributions and claims are held back",
    ),
}
"""Link alarms (:class:`~controller.table.events.LinkAlarm`) in casino words: kind ->
(what happened, what to do). Another kind is said as "Jackpot link problem (kind)"."""
SIGNED_KINDS = {
    "ack": "An acknowledgement",
    "resend": "A resend request",
    "award": "A jackpot award",
    "meter": "A progressive meter",
}
"""What a ``signature`` alarm names, by the kind of message its detail starts with."""


def link_alarm_words(kind: str, detail: str = "") -> tuple[str, str]:
    """The text and action of a link alarm of ``kind``: fixed words per kind (issue 26).

    The detail may quote the refused message, which anyone on the broker can write: it is
    never shown (the log and the journal keep it, escaped and cut). A ``signature`` alarm
    names the kind of message its detail starts with, from :data:`SIGNED_KINDS` only.

    >>> link_alarm_words("resend_malformed", "'PAY SPOT 3 $25,000 NOW' is not of type 'integer'")[0]
    'A malformed resend request arrived on the jackpot link'
    >>> link_alarm_words("signature", "award: sig: the signature does not match")[0]
    'A jackpot award failed its signature check: it was refused'
    """
    what, action = LINK_ALARM_WORDS.get(
        kind, (f"Jackpot link problem ({kind})", f"{_CALL}: check the jackpot link")
    )
    if kind == "signature":
        signed = SIGNED_KINDS.get(detail.split(":", 1)[0])
        if signed:
            what = f"{signed} failed its signature check: it was refused"
    return what, action


def settlement_prompt(line: Settled) -> str:
    """The dealer's instruction for one settled wager."""
    where = f"spot {line.spot}" + (f" hand {line.hand + 1}" if line.hand else "")
    name = bet_name(line.wager)
    if line.outcome == "void":
        return f"Return {where} {name} {format_cents(line.stake)} (round void)"
    if line.meter is not None:
        return (
            f"Spot {line.spot} {name} wins {line.meter.removesuffix(' of meter')} of the "
            f"{pool_name(line.pool or '')} meter: "
            "hand pay, wait for the jackpot controller's award"
        )
    if line.paid:
        how = f" {line.pays}" if line.pays else ""
        return f"Pay {where} {name}{how}: {format_cents(line.paid)}"
    if line.outcome == "surrender":
        return f"Take half of {where} {name}: return {format_cents(line.returned)}"
    if line.returned == line.stake:
        return f"Push {where} {name}: {format_cents(line.stake)} stays with the player"
    return f"Take {where} {name} {format_cents(line.stake)}"


def _cards(cards: list[Any], hide_from: int | None) -> list[str]:
    return [
        HIDDEN if hide_from is not None and i >= hide_from else str(c) for i, c in enumerate(cards)
    ]


def snapshot(state: TableState, game: str) -> dict[str, Any]:
    """The table as the display, diagnostics page and recall may show it (JSON-safe)."""
    rnd = state.round
    out: dict[str, Any] = {
        "game": game,
        "round": state.round_number,
        "phase": state.phase.value,
        "in_progress": state.phase in IN_PROGRESS,
        "bets": [
            {"spot": spot, "circle": circle}
            for (spot, circle), on in sorted(state.sensors.items())
            if on
        ],
        "shoe": {
            "dealt": state.dealt,
            "cut_card_out": state.cut_card_out,
            "burn_expected": bool(state.burn_expected),
            "door_open": state.door_open,
            "fault": state.shoe_fault,
        },
        "pending_cards": len(state.pending),
        "supervisor_key": state.supervisor_key,
        "faults": {
            kind: {"detail": detail, "active": active}
            for kind, (detail, active) in sorted(state.faults.items())
        },
        "jackpot_link": state.jackpot_link,
        "lights": dict(sorted(state.lights.items())),
        "awards": [
            {
                "award_id": a.award_id,
                "round": a.round,
                "spot": a.spot,
                "pool": a.pool,
                "line": a.line,
                "amount": a.amount,
            }
            for a in state.awards.values()
        ],
        "alarms": [
            {
                "id": a.id,
                "code": a.code,
                "text": a.text,
                "action": a.action,
                "spot": a.spot,
                "round": a.round,
                "t": a.t,
                "about": a.about or None,
                "active": not a.cleared,
                "cleared": a.cleared or None,
                "cleared_t": a.cleared_t,
            }
            for a in state.alarms.values()
        ],
        "alarms_dropped": state.alarms_dropped,
    }
    if rnd is None:
        return out
    hide = None if rnd.hole_revealed else 1
    dealer: dict[str, Any] = {"cards": _cards(rnd.dealer, hide)}
    if rnd.hole_revealed and rnd.dealer:
        total = hand_total(rnd.dealer)
        dealer["total"] = total.total
        dealer["soft"] = total.soft
    elif rnd.dealer:
        dealer["showing"] = str(rnd.dealer[0])
    dealer["checked_no_blackjack"] = rnd.dealer_checked and not rnd.hole_revealed
    out["dealer"] = dealer
    out["in_action"] = (
        {"spot": rnd.in_action[0], "hand": rnd.in_action[1]} if rnd.in_action else None
    )
    out["void"] = rnd.void or None
    spots = []
    for spot in rnd.spots.values():
        hands = []
        for hand in spot.hands:
            total = hand_total(hand.cards)
            hands.append(
                {
                    "cards": [str(c) for c in hand.cards],
                    "total": total.total,
                    "soft": total.soft,
                    "wager": hand.wager,
                    "double_down": hand.double_down,
                    "double_up": hand.double_up,
                    "surrendered": hand.surrendered,
                    "stood": hand.stood,
                    "settled": hand.settled,
                }
            )
        spots.append(
            {
                "spot": spot.number,
                "wagers": dict(spot.wagers),
                "insurance": spot.insurance,
                "even_money": spot.even_money,
                "ez_bust": spot.ez_bust,
                "hands": hands,
            }
        )
    out["spots"] = spots
    return out
