"""Jackpot awards: each one proven against a claim this table published before it is prompted,
and its hand pay confirmed. A part of :class:`controller.table.machine.Table`."""

from __future__ import annotations

import math
from fractions import Fraction

from controller.errors import ProcedureError
from controller.rules.pays import MeterShare, format_cents, parse_pay
from controller.table import events as ev
from controller.table.effects import Alarm, Publish
from controller.table.part import RefusedWithAlarm, TablePart
from controller.table.state import Claim
from controller.table.view import pool_name


class Awards(TablePart):
    """Claims remembered, awards proven, hand pays confirmed."""

    def _on_award(self, event: ev.JackpotAward) -> None:
        # Any phase, between rounds too. Prompted only if it answers a claim this table
        # published, with an amount that is the line's share of the meter it names; anything
        # else is refused with an alarm for a technician (docs/table.md "Award proof").
        # An award without claim_key was journaled by 0.1.0, before the table checked awards
        # (the link's schema requires claim_key): it is replayed as it was then, unchecked,
        # so that journal recovers to the state it had.
        checked = event.claim_key is not None
        state, award_id = self.state, event.award_id
        closed = state.awards_closed.get(award_id)
        what = f"spot {event.spot} wins {pool_name(event.pool)} {event.line}"
        if event.state == "offered":
            if award_id in state.awards or closed is not None:
                return  # the controller repeats an award until the confirm is applied
            if checked:
                self._proven_claim(event)
            state.awards[award_id] = event
            self._prompt(
                "jackpot_award",
                f"Jackpot: {what}: {format_cents(event.amount)} hand pay; call the supervisor",
                event.spot,
            )
        elif event.state == "committed":
            if closed in ("committed", "refused"):
                return
            if checked and closed != "confirmed":
                raise self._unproven(
                    event,
                    "the dealer has not confirmed its hand pay yet"
                    if award_id in state.awards
                    else "this table was never offered that award",
                )
            state.awards.pop(award_id, None)  # a checked one left at its confirmation
            state.awards_closed[award_id] = "committed"
            self._prompt(
                "jackpot_committed",
                f"Jackpot award {award_id} committed: {what}, "
                f"{format_cents(event.amount)} hand paid",
                event.spot,
            )
        else:
            if closed is not None:
                return
            if checked:
                if award_id in state.awards:
                    raise self._unproven(
                        event,
                        "it was offered to this table and waits for its hand pay; the jackpot "
                        "controller never refuses an award it offered",
                    )
                claim = self._proven_claim(event)
                del state.claims[claim.key]
            state.awards.pop(award_id, None)
            state.awards_closed[award_id] = "refused"
            self._prompt(
                "jackpot_refused",
                f"Jackpot claim refused by the jackpot controller: spot {event.spot} "
                f"{pool_name(event.pool)} {event.line}: no hand pay; call the supervisor",
                event.spot,
            )

    def _proven_claim(self, event: ev.JackpotAward) -> Claim:
        """The claim ``event`` answers; raises :class:`RefusedWithAlarm` unless it names one
        this table made, with the same round, spot, pool and line and, when offered, an
        amount that is the line's share of ``meter_before``."""
        state, key = self.state, event.claim_key
        assert key is not None
        claim = state.claims.get(key) or state.mystery_claims.get(key)
        if claim is None:
            raise self._unproven(
                event, f"it answers no claim this table has open (claim key {key[:80]!r})"
            )
        wrong = []
        if event.round != claim.round:
            wrong.append(f"round {event.round}, not {claim.round}")
        if event.spot != claim.spot:
            wrong.append(f"spot {event.spot}, not {claim.spot}")
        if claim.mystery and event.pool == claim.pool:
            wrong.append(f"pool {event.pool} is the progressive meter, not a Mystery meter")
        elif not claim.mystery and event.pool != claim.pool:
            wrong.append(f"pool {event.pool}, not {claim.pool}")
        if event.line != claim.line:
            wrong.append(f"line {event.line!r}, not {claim.line!r}")
        if wrong:
            raise self._unproven(event, f"it does not match claim {key}: {'; '.join(wrong)}")
        if event.state == "refused":
            if claim.mystery:
                raise self._unproven(
                    event, "a Must-Hit-By Mystery contribution is never answered by a refusal"
                )
            return claim
        other = next((a.award_id for a in state.awards.values() if a.claim_key == key), None)
        if other is not None:
            raise self._unproven(event, f"claim {key} is already answered by award {other}")
        before = event.meter_before
        if before is None:
            raise self._unproven(
                event,
                "it does not say what the meter held (meter_before): its amount cannot be checked",
            )
        pay = parse_pay(claim.line)
        share = pay.percent if isinstance(pay, MeterShare) else Fraction(0)
        low = math.floor(before * share / 100)
        high = min(before, math.floor((before + 1) * share / 100))
        if not max(low, 1) <= event.amount <= high:
            meter = format_cents(before)
            if share == 100:
                expected = f"the meter's {meter}"
            else:
                share_text = claim.line.removesuffix(" of meter")
                expected = f"{share_text} of the meter's {meter} ({format_cents(low)}"
                expected += ")" if low == high else f" to {format_cents(high)})"
            raise self._unproven(
                event, f"its amount {format_cents(event.amount)} is not {expected}"
            )
        return claim

    def _unproven(self, event: ev.JackpotAward, why: str) -> RefusedWithAlarm:
        amount = f"{format_cents(event.amount)} for " if event.amount else ""
        return RefusedWithAlarm(
            f"jackpot award refused: {event.award_id} ({event.state}) {why}; call a "
            "technician; do not pay",
            Alarm(
                "award_unproven",
                f"Jackpot award {event.award_id} ({event.state}, {amount}spot {event.spot}) "
                f"refused: {why}",
                "Call a technician; do not pay: no hand pay is owed for it (the jackpot link "
                "may be forged)",
            ),
        )

    def _forget_claim(self, key: str | None) -> None:
        if key is not None:
            self.state.claims.pop(key, None)
            self.state.mystery_claims.pop(key, None)

    def _on_jackpot_paid(self, event: ev.JackpotPaid) -> None:
        state = self.state
        if not state.supervisor_key:
            raise ProcedureError("jackpot paid refused: turn the supervisor key first")
        if not state.awards:
            raise ProcedureError("jackpot paid refused: no award waits for a hand pay")
        oldest = next(iter(state.awards))
        self._confirm(oldest, "supervisor key", None, "jackpot paid")

    def _on_confirm_award(self, event: ev.ConfirmAward) -> None:
        if event.by is None and not self.state.supervisor_key:
            raise ProcedureError("confirm award refused: turn the supervisor key first")
        self._confirm(event.award_id, event.by, event.amount, "confirm award")

    def _confirm(self, award_id: str, by: str | None, typed: int | None, what: str) -> None:
        """Confirm the hand pay of ``award_id`` (``by``: who, for ``confirmed_by``; ``typed``:
        the amount typed again, which must be the award's)."""
        state = self.state
        award = state.awards.get(award_id)
        if award is None:
            pending = ", ".join(state.awards) or "none"
            raise ProcedureError(
                f"{what} refused: no award {award_id} waits for a hand pay (pending: {pending})"
            )
        if typed is not None and typed != award.amount:
            raise ProcedureError(
                f"{what} refused: the amount typed, {format_cents(typed)}, is not award "
                f"{award_id}'s {format_cents(award.amount)}; nothing confirmed"
            )
        if state.now is None:
            raise ProcedureError(
                "confirm award refused: the confirmation carries no time (t); the console "
                "must stamp it"
            )
        del state.awards[award.award_id]
        state.awards_closed[award.award_id] = "confirmed"
        self._forget_claim(award.claim_key)
        payload: dict[str, object] = {
            "award_id": award.award_id,
            "round": award.round,
            "spot": award.spot,
            "pool": award.pool,
            "amount": award.amount,
            "confirmed_t": state.now,
        }
        if by is not None:  # a journal before issue 28 made none: its outbox stays as written
            payload["confirmed_by"] = by
        self._out.append(Publish("award_confirm", f"award/{award.award_id}/confirm", payload))
        self._prompt(
            "jackpot_confirmed",
            f"Jackpot award {award.award_id} confirmed: spot {award.spot} hand paid "
            f"{format_cents(award.amount)}"
            + (f" (by {by})" if by else "")
            + "; sent to the jackpot controller",
            award.spot,
        )
