"""Login and session: ``POST /login``, ``POST /logout``, ``/api/session``, ``/api/audit``
(a mixin of :class:`~controller.web.exchange.Exchange`).

A login's form is checked here; its password check goes to :mod:`.logins` (the table-wide
budget, the order, the check threads), and the reply is that check's future.
"""

from __future__ import annotations

import logging
import math
from http import HTTPStatus
from typing import Any

from controller.web.auth import LoginNameError, Session, technician_name
from controller.web.front import Reply
from controller.web.logins import Refused
from controller.web.replies import COOKIE, error_reply

log = logging.getLogger("table-controller.web")


class SessionRoutes:
    """Logging in and out, who is logged in, the audit list."""

    def _session_info(self, session: Session) -> None:
        from controller.accounts import PERMISSIONS

        self._json(HTTPStatus.OK, {
            "ok": True, "user": session.user, "csrf": session.csrf,
            "role": session.role, "permissions": sorted(PERMISSIONS[session.role]),
        })  # fmt: skip

    def _audit(self) -> None:
        audit = self.web.access.audit
        entries = audit.recent(200) if audit is not None else []
        self._json(HTTPStatus.OK, {"ok": True, "kept": audit is not None,
                                   "entries": entries})  # fmt: skip

    def _logout(self, session: Session) -> None:
        self.web.sessions.end(session.token)
        self.web.access.record(session.user, "logout", role=session.role, address=self.address)
        log.info("web: %s logged out (%s)", session.user, self.address)
        self._json(
            HTTPStatus.OK,
            {"ok": True},
            {"Set-Cookie": f"{COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"},
        )

    def _login(self, body: dict[str, Any]) -> None:
        """Check a login's form, then hand its password check to :mod:`.logins` (the
        table-wide budget, the order, the threads): the reply is the check's future."""
        web = self.web
        if not self._same_origin():
            web.count("refused")
            self._error(HTTPStatus.FORBIDDEN, "log in from this table's own page")
            return
        form = (self.headers.get("Content-Type") or "").startswith("application/x-www-form")
        password = body.get("password")
        try:
            name = technician_name(body.get("name"))
        except LoginNameError as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
            return
        if not isinstance(password, str) or not password:
            self._error(HTTPStatus.BAD_REQUEST, "give the password")
            return
        if not web.access.enabled:
            self._error(
                HTTPStatus.FORBIDDEN,
                "the diagnostics page is off on this table: make an account (table-controller "
                "user add NAME --role technician --config FILE), or set [web] password_hash",
            )
            return
        answer = web.logins.submit(
            self.address,
            session=self._session() is not None,
            work=lambda: self._check(name, password, form),
        )
        if isinstance(answer, Refused):
            web.count("throttled")
            seconds = max(1, math.ceil(answer.wait_s))  # whole seconds, never short of it
            why = (
                "too many wrong passwords at this table from several places"
                if answer.table_wide
                else f"too many wrong passwords from {self.address}"
            )
            self._error(
                HTTPStatus.TOO_MANY_REQUESTS,
                f"{why}: wait {seconds} s before trying again",
                {"Retry-After": str(seconds)},
            )
            return
        self.reply = answer

    def _check(self, name: str, password: str, form: bool) -> Reply:
        """The password check and its answer, in a check thread of :mod:`.logins`."""
        web = self.web
        try:
            result = web.access.check(name, password[:1024])
        except Exception:
            log.exception("web: the password check for %r failed", name)
            web.throttle.wrong(self.address, web.clock())
            return error_reply(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error: see the log")
        if not result.ok:
            web.throttle.wrong(self.address, web.clock())
            web.count("login_failures")
            why = "wrong password" if result.why == "legacy" else result.why
            web.access.record(name, "login", "refused", detail=why, address=self.address)
            failures = web.throttle.failures(self.address)
            delay = web.throttle.delay_s(failures)
            log.warning(
                "web: wrong password for %r from %s (%d in a row)", name, self.address, failures
            )
            extra = f"; wait {int(delay)} s before the next try" if delay else ""
            wrong = "wrong password" if result.why == "legacy" else "wrong name or password"
            self._error(
                HTTPStatus.UNAUTHORIZED,
                f"{wrong}{extra}",
                {"Retry-After": str(int(delay))} if delay else None,
            )
            return self.reply  # type: ignore[return-value]
        web.throttle.succeeded(self.address)
        web.count("logins")
        session = web.sessions.create(
            name, self.address, web.clock(), role=result.role, legacy=result.legacy
        )
        how = "the old [web] password_hash" if result.legacy else ""
        web.access.record(name, "login", role=result.role, address=self.address, detail=how)
        log.info("web: %s (%s) logged in from %s", session.user, session.role, self.address)
        cookie = f"{COOKIE}={session.token}; Path=/; HttpOnly; SameSite=Strict"
        if form:
            self._redirect("/diag", {"Set-Cookie": cookie})
        else:
            self._json(
                HTTPStatus.OK,
                {"ok": True, "user": session.user, "csrf": session.csrf},
                {"Set-Cookie": cookie},
            )
        return self.reply  # type: ignore[return-value]
