"""One request and its answer: the plumbing every route shares, and the list of routes.

:class:`Exchange` is built and run in a pool thread of the front (:mod:`.front`) for each
request. The routes themselves live in one module per group, each a mixin of this class:

- :mod:`.routes_pages`: ``/``, ``/login``, ``/diag``, ``/dealer``, ``/static/...``,
  ``/healthz``, ``/metrics``;
- :mod:`.routes_session`: ``POST /login``, ``POST /logout``, ``/api/session``, ``/api/audit``;
- :mod:`.routes_actions`: the POST actions (alarms, faults, light test, journal, awards);
- :mod:`.routes_recall`: ``/api/rounds...``, ``/api/history``, ``/api/log``;
- :mod:`.routes_streams`: ``/api/status``, ``/api/stream``, ``/api/dealer[/stream]``.

The two dispatchers below (:meth:`Exchange._get`, :meth:`Exchange._post`) are the one place
that says which path is which route and which needs a login.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.parse
from concurrent.futures import Future
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from controller.web.access import ACTION_PERMISSION
from controller.web.auth import Session, csrf_ok
from controller.web.front import Reply, Request, Stream
from controller.web.replies import COOKIE, SECURITY_HEADERS, headers, json_bytes, session_cookie
from controller.web.routes_actions import ACTIONS, ActionRoutes
from controller.web.routes_pages import PAGES, PageRoutes
from controller.web.routes_recall import RecallRoutes
from controller.web.routes_session import SessionRoutes
from controller.web.routes_streams import StreamRoutes

if TYPE_CHECKING:
    from controller.web.server import WebServer

log = logging.getLogger("table-controller.web")


class Exchange(PageRoutes, SessionRoutes, ActionRoutes, RecallRoutes, StreamRoutes):
    """One request and its answer (the routes); built and run in a pool thread."""

    def __init__(self, web: WebServer, request: Request):
        self.web = web
        self.request = request
        self.command = request.head.method
        self.path = request.head.target
        self.headers = request.head.headers
        self.reply: Reply | Stream | Future[Reply] | None = None

    def run(self) -> Reply | Stream | Future[Reply]:
        try:
            path = urllib.parse.urlsplit(self.path).path
        except ValueError:  # "//[x": a network path, not one of this server's
            self._error(HTTPStatus.BAD_REQUEST, "the request target must be a plain path")
            assert self.reply is not None
            return self.reply
        try:
            if self.command == "POST":
                self._post(path)
            else:
                self._get(path)
        except Exception:
            log.exception("web: %s %s failed", self.command, path)
            self.reply = None
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error: see the log")
        if self.reply is None:  # pragma: no cover - every route answers
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error: no answer")
        assert self.reply is not None
        return self.reply

    # -- plumbing --------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self.request.address

    def _query(self, key: str, default: str = "") -> str:
        """The last value of ``key`` in the request's query, stripped."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        return (query.get(key) or [default])[-1].strip()

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        extra: dict[str, str] | None = None,
    ) -> None:
        self.reply = Reply(status, HTTPStatus(status).phrase, headers(content_type, extra), body)

    def _json(self, status: int, data: Any, extra: dict[str, str] | None = None) -> None:
        self._send(status, json_bytes(data), "application/json", extra)

    def _error(self, status: int, message: str, extra: dict[str, str] | None = None) -> None:
        self._json(status, {"ok": False, "error": message}, extra)

    def _redirect(self, where: str, extra: dict[str, str] | None = None) -> None:
        self.reply = Reply(
            HTTPStatus.SEE_OTHER,
            "See Other",
            [
                ("Server", "table-controller"),
                ("Location", where),
                *{**SECURITY_HEADERS, **(extra or {})}.items(),
            ],
        )

    def _cookie(self) -> str | None:
        return session_cookie(self.headers.get("Cookie"))

    def _session(self) -> Session | None:
        return self.web.sessions.get(self._cookie(), self.web.clock())

    def _body(self) -> dict[str, Any] | None:
        """The request body as a dict (JSON or a form); None after an error reply. Its
        size was checked with the head (:mod:`.protocol`)."""
        raw = self.request.body
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            if kind == "application/x-www-form-urlencoded":
                return {k: v[-1] for k, v in urllib.parse.parse_qs(raw.decode()).items()}
            if not raw:
                return {}
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._error(HTTPStatus.BAD_REQUEST, "the body is not JSON (or a form): send JSON")
            return None
        except ValueError:  # the only other: an integer over Python's 4,300 digits
            self._error(
                HTTPStatus.BAD_REQUEST,
                "the body has a number over 4,300 digits: send the fields the page sends",
            )
            return None
        except RecursionError:  # nested deeper than the parser goes
            self._error(
                HTTPStatus.BAD_REQUEST, "the body is JSON nested too deep: send a flat object"
            )
            return None
        if not isinstance(data, dict):
            self._error(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
            return None
        return data

    def _same_origin(self) -> bool:
        """A browser's Origin (when sent) must be this server: no cross-site actions."""
        origin = self.headers.get("Origin")
        if origin is None:  # not a browser, or a same-origin GET-like request
            return True
        host = self.headers.get("Host", "")
        return origin in (f"http://{host}", f"https://{host}")

    def _login_required(self, page: bool = False) -> Session | None:
        session = self._session()
        if session is not None and not self.web.access.current(session):
            self.web.sessions.end(session.token)  # the account was removed or changed
            self.web.access.record(
                session.user, "session_ended", role=session.role, address=self.address,
                detail="the account was removed or its role changed",
            )  # fmt: skip
            session = None
        if session is None:
            if page:
                self._redirect("/login")
            else:
                self.web.count("refused")
                self._error(HTTPStatus.UNAUTHORIZED, "log in first (POST /login)")
        return session

    def _action_session(self) -> Session | None:
        """A state-changing request: login, same origin and the session's CSRF token."""
        session = self._login_required()
        if session is None:
            return None
        if not self._same_origin() or not csrf_ok(session, self.headers.get("X-CSRF-Token")):
            self.web.count("refused")
            log.warning(
                "web: %s %s refused for %s: no valid CSRF token",
                self.command,
                self.path,
                self.address,
            )
            self._error(
                HTTPStatus.FORBIDDEN,
                "refused: the CSRF token is missing or wrong; reload the page and try again",
            )
            return None
        session.actions += 1
        return session

    # -- the routes ------------------------------------------------------------------------

    def _get(self, path: str) -> None:
        web = self.web
        if path == "/":
            self._redirect("/diag" if self._session() else "/login")
        elif path == "/diag":
            if self._login_required(page=True):
                self._static("diag.html")
        elif path in PAGES:
            self._page(path)
        elif path.startswith("/static/"):
            self._static(path.removeprefix("/static/"))
        elif path == "/healthz":
            self._healthz()
        elif path == "/metrics":
            self._metrics()
        elif path == "/api/dealer":
            self._json(HTTPStatus.OK, web.dealer())
        elif path == "/api/dealer/stream":
            self._stream("dealer", None)
        elif path == "/api/session":
            session = self._login_required()
            if session:
                self._session_info(session)
        elif path == "/api/audit":
            if self._login_required():
                self._audit()
        elif path == "/api/status":
            if self._login_required():
                self._json(HTTPStatus.OK, web.bundle())
        elif path == "/api/stream":
            session = self._login_required()
            if session:
                self._stream("diag", session)
        elif path == "/api/rounds":
            if self._login_required():
                self._rounds()
        elif path == "/api/rounds/search":
            if self._login_required():
                self._search()
        elif path == "/api/rounds/older":
            if self._login_required():
                self._older()
        elif path == "/api/history":
            if self._login_required():
                self._history()
        elif m := re.fullmatch(r"/api/rounds/(\d{1,9})/script", path):
            if self._login_required():
                self._script(int(m.group(1)))
        elif path == "/api/log":
            if self._login_required():
                self._log()
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no page {path}")

    def _post(self, path: str) -> None:
        # the body is read first, whatever the answer: left unread on a kept connection it
        # would be taken for the next request
        body = self._body()
        if body is None:
            return
        if path == "/login":
            self._login(body)
            return
        if path not in ACTIONS:
            self._error(HTTPStatus.NOT_FOUND, f"no action {path}")
            return
        session = self._action_session()
        if session is None:
            return
        access = self.web.access
        permission = ACTION_PERMISSION.get(path)
        if permission is not None and not access.may(session, permission):
            why = access.refusal(session, permission)
            access.record(session.user, permission, "refused", role=session.role,
                          detail=why, address=self.address)  # fmt: skip
            log.warning("web: %s %s", path, why)
            self._error(HTTPStatus.FORBIDDEN, why)
            return
        if path == "/logout":
            self._logout(session)
            return
        self._action(path, body, session)
        # the audit list: who, what, and how it ended (the table's own words on a refusal)
        reply = self.reply
        answer: dict[str, Any] = {}
        if isinstance(reply, Reply) and reply.body.startswith(b"{"):
            answer = json.loads(reply.body)
        ok = isinstance(reply, Reply) and reply.status < 300
        what = body.get("award") or body.get("alarm")
        access.record(
            session.user, permission or path, "ok" if ok else "refused", role=session.role,
            object="" if what is None else str(what), address=self.address,
            detail=str(answer.get("error") or answer.get("message") or ""),
        )  # fmt: skip


__all__ = ["COOKIE", "Exchange"]
