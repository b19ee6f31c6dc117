"""The technician's actions: ``POST /api/alarms/ack``, ``/api/faults/clear``,
``/api/lights/test``, ``/api/journal/rotate`` and ``/api/awards/...`` (a mixin of
:class:`~controller.web.exchange.Exchange`).

Each needs a login, the same origin and the session's CSRF token (checked before these run,
with the permission: :meth:`~controller.web.exchange.Exchange._post`); each is submitted to
the table loop and answered with the table's own words.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from controller.errors import TableControllerError
from controller.web.access import ACTION_PERMISSION
from controller.web.auth import Session

log = logging.getLogger("table-controller.web")

ACTIONS = (
    "/logout",
    "/api/alarms/ack",
    "/api/faults/clear",
    "/api/lights/test",
    "/api/journal/rotate",
    *(path for path in ACTION_PERMISSION if path.startswith("/api/awards/")),
)
"""The POST routes that need a login and the session's CSRF token."""


class ActionRoutes:
    """What a technician (or a supervisor) may ask of the table."""

    def _action(self, path: str, body: dict[str, Any], session: Session) -> None:
        """A page action the session may take: submitted to the table, answered."""
        by = session.by
        if path == "/api/alarms/ack":
            alarm = body.get("alarm")
            if isinstance(alarm, bool) or not isinstance(alarm, int) or alarm < 0:
                self._error(
                    HTTPStatus.BAD_REQUEST,
                    "alarm must be an alarm's id (a whole number), or 0 for every alarm",
                )
                return
            self._table_action("acknowledge", lambda ev: ev.AcknowledgeAlarm(alarm, by=by))
        elif path == "/api/faults/clear":
            status = self.web.source.status()
            if not status.get("faults") and not status.get("journal_fault"):
                # nothing to clear: answered here, not refused by the table (no refusal in
                # the journal or on the dealer's screen for a button pressed by mistake)
                self._error(HTTPStatus.CONFLICT, "no fault is latched: nothing to clear")
                return
            self._table_action("clear faults", lambda ev: ev.ClearFaults(by=by))
        elif path == "/api/journal/rotate":
            self._rotate(by)
        elif path.startswith("/api/awards/"):
            self._award(path, body, session)
        else:
            try:
                started, message = self.web.source.light_test(by)
            except TimeoutError:
                self._error(
                    HTTPStatus.SERVICE_UNAVAILABLE,
                    "light test: the table did not answer in time; try again",
                )
                return
            log.info("web: light test by %s: %s", session.user, message)
            queued = started and "queued" in message
            code = HTTPStatus.OK if started else HTTPStatus.CONFLICT
            self._json(
                HTTPStatus.ACCEPTED if queued else code,
                {"ok": started, "message": message, "queued": queued},
            )

    def _award(self, path: str, body: dict[str, Any], session: Session) -> None:
        """``/api/awards/confirm {award, amount}``: a supervisor confirms the hand pay of a
        named award, typing its amount again (issue 28 item 2); the table checks both and
        carries ``confirmed_by`` to the jackpot controller. An award is never voided here:
        the controller never refuses an award it offered (docs/table.md)."""
        from controller.rules.pays import parse_money

        if path != "/api/awards/confirm":
            self._error(
                HTTPStatus.NOT_FOUND,
                "an offered award is not voided at the table: the jackpot controller never "
                "refuses an award it offered; call the jackpot controller's operator",
            )
            return
        award, typed = body.get("award"), body.get("amount")
        if not isinstance(award, str) or not 0 < len(award) <= 120:
            self._error(HTTPStatus.BAD_REQUEST, "award must be the award's id, e.g. hcm-bj-07/3")
            return
        try:
            amount = parse_money(typed) if isinstance(typed, str | int) else None
        except ValueError:
            amount = None
        if amount is None or amount.denominator != 1 or amount < 1 or isinstance(typed, bool):
            self._error(
                HTTPStatus.BAD_REQUEST,
                'amount must be the award\'s amount typed again, e.g. "$12,345.67"',
            )
            return
        by = session.by
        self._table_action(
            "confirm award",
            lambda ev: ev.ConfirmAward(award, by=by, amount=int(amount)),
        )

    def _table_action(self, what: str, make: Callable[[Any], Any]) -> None:
        from controller.table import events

        try:
            step = self.web.source.submit_wait(make(events))
        except TableControllerError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, f"{what} not recorded: {exc}")
            return
        except TimeoutError:
            self._error(
                HTTPStatus.SERVICE_UNAVAILABLE,
                f"{what}: the table did not answer in time; try again",
            )
            return
        if step.accepted:
            self._json(HTTPStatus.OK, {"ok": True})
        else:
            self._error(HTTPStatus.CONFLICT, step.reason or f"{what} refused")

    def _rotate(self, by: str) -> None:
        try:
            answer = self.web.source.rotate_journal(by)
        except (TimeoutError, TableControllerError) as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, f"new journal file not started: {exc}")
            return
        log.info("web: new journal file asked by %s: %s", by, answer)
        if not answer.get("ok"):
            self._error(HTTPStatus.CONFLICT, str(answer.get("error") or "refused"))
            return
        message = answer.get("deferred") or answer.get("message") or "new journal file started"
        self._json(
            HTTPStatus.OK,
            {
                "ok": True,
                "message": str(message),
                "rotated": bool(answer.get("rotated")),
                "archive": answer.get("archive"),
                "sha256": answer.get("sha256"),
            },
        )
