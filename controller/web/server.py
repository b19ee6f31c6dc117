"""The table's web server: the diagnostics page, the dealer display, /healthz, /metrics.

Served on the address of ``[web]`` by :class:`~.front.Front` (one asyncio loop holds the
connections; timeouts, a connection cap, handler pools and live-stream budgets per role:
the dealer's screen, technicians, anyone else; requests checked by :mod:`.protocol`); the
routes below run in the pools' threads. It reads the table only
through its ``source`` (the daemon: :class:`TableSource`), never a driver, and changes it
only by what a technician may ask: acknowledge an alarm, clear the latched faults, run the
light test, start a new journal file. Those need a login (session cookie) **and** the
session's CSRF token in ``X-CSRF-Token``; the login is throttled per address
(:class:`~.auth.LoginThrottle`) and, across addresses, by a table-wide budget with the
password checks in order (:mod:`.logins`). Recall reads the journal's files itself, read-only
(:class:`~controller.journal.library.JournalLibrary`: the live file and the gaming-day files
kept beside it), and shows local times in the zone of the table's gaming day.

Routes (docs/web.md): ``/dealer`` and ``/api/dealer[/stream]`` (the kiosk, read-only, no
login), ``/login``, ``/diag``, ``/api/session``, ``/api/status``, ``/api/stream`` (server-sent
events), ``/api/rounds`` (the last 10), ``/api/rounds/search?round=N`` or
``?at=YYYY-MM-DD HH:MM[&to=...]`` (local time; across files), ``/api/rounds/N/script``,
``/api/rounds/older?before=N`` (the 10 before round N), ``/api/history?hours=H`` (the charts' lines:
:mod:`controller.runtime.history`), ``/static/vendor/...`` (uPlot), ``/api/log``,
``POST /api/alarms/ack``, ``POST /api/faults/clear``, ``POST /api/lights/test``,
``POST /api/journal/rotate``, ``POST /logout``, ``/healthz``, ``/metrics``.
"""

from __future__ import annotations

import http.cookies
import json
import logging
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from http import HTTPStatus
from pathlib import Path
from typing import Any, Protocol

from controller.accounts import AccountStore
from controller.errors import JournalError, TableControllerError
from controller.journal.library import FoundRound, JournalLibrary, local_to_utc_ms
from controller.web import views
from controller.web.access import ACTION_PERMISSION, Access
from controller.web.auth import (
    LoginNameError,
    LoginThrottle,
    Session,
    Sessions,
    csrf_ok,
    technician_name,
    verify_password,
)
from controller.web.front import DEALER_ADDRESSES, Front, Limits, Reply, Request, Stream
from controller.web.logins import LoginChecks, Refused
from controller.web.protocol import Head

log = logging.getLogger("table-controller.web")

STATIC = Path(__file__).with_name("static")
COOKIE = "tc_session"
ACTIONS = (
    "/logout",
    "/api/alarms/ack",
    "/api/faults/clear",
    "/api/lights/test",
    "/api/journal/rotate",
    *(path for path in ACTION_PERMISSION if path.startswith("/api/awards/")),
)
"""The POST routes that need a login and the session's CSRF token."""
PAGES = {
    "/login": "login.html",
    "/diag": "diag.html",
    "/dealer": "dealer.html",
}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
STATIC_NAME = re.compile(
    r"(?:vendor/)?[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.(?:html|css|js|svg|png)"
)
"""A file /static/ serves: a name in ``static/`` or ``static/vendor/``, nothing else."""
STATIC_NAME_MAX = 120
"""Longest /static/ name (bytes; ours are under 30): a longer one is no file, without asking
the file system (whose limit, 255 bytes a name, raised an error once: issue 26 item 6)."""
HISTORY_HOURS = (1, 72)
"""The hours /api/history may cover (the store keeps 72)."""
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


class TableSource(Protocol):
    """What the web server may read and ask of the running table (the daemon)."""

    config: Any
    """The table config: recall reads its ``journal_path`` (and the files kept beside it)
    and shows times in its ``gaming_day.zone``."""

    def identity(self) -> dict[str, Any]:
        """``table``, ``game``, ``property``, ``version``, ``build`` (the build id),
        ``config_checksum``, ``started``."""

    def status(self) -> dict[str, Any]:
        """:meth:`TableRuntime.status` (the hole card hidden until the dealer's turn)."""

    def feed(self) -> list[dict[str, Any]]:
        """:meth:`TableRuntime.recent`."""

    def health(self) -> dict[str, Any]:
        """The drivers' and the link's health (no card values)."""

    def healthy(self) -> tuple[bool, list[str]]:
        """Whether the table runs as it should, and the problems if not."""

    def last_rounds(self, n: int) -> list[dict[str, Any]]:
        """Recall records of the last ``n`` settled rounds, newest first."""

    def round_script(self, number: int) -> str:
        """A settled round's event script (raises JournalError for another)."""

    def submit_wait(self, event: Any) -> Any:
        """Journal an event through the table loop; returns its Step."""

    def light_test(self, by: str) -> tuple[bool, str]:
        """Start the light test, or queue it for the round break: (accepted, what
        happened or why not)."""

    def light_test_state(self) -> dict[str, Any]:
        """The light test in progress, if any."""

    def rotate_journal(self, by: str) -> dict[str, Any]:
        """Start a new journal file (at once between rounds, else when the round is
        settled): ``ok`` and ``message`` (``deferred`` if it waits), or ``error``."""

    def recent_log(self) -> list[dict[str, Any]]:
        """The last log records: ``t`` (epoch s), ``level``, ``logger``, ``message``."""

    def wait_change(self, timeout_s: float) -> None:
        """Return when the table's status changes next, or after ``timeout_s``."""

    # optional: ``history_series(hours) -> dict`` (the charts' lines, ``ok``/``error``);
    # a source without it answers /api/history with 404


class WebServer:
    """Serves ``source`` on ``(bind, port)`` until :meth:`close`. ``password_hash`` empty:
    every login is refused (the diagnostics page is off; the dealer display runs).
    ``limits``: timeouts, the connection cap, stream budgets (:class:`~.front.Limits`).
    ``dealer_addresses``: where the dealer's screen connects from (default: the config's
    ``[web] dealer_addresses``, else loopback)."""

    def __init__(
        self,
        source: TableSource,
        *,
        bind: str = "127.0.0.1",
        port: int = 8080,
        password_hash: str = "",
        clock: Callable[[], float] = time.monotonic,
        throttle: LoginThrottle | None = None,
        sessions: Sessions | None = None,
        limits: Limits | None = None,
        dealer_addresses: Iterable[str] | None = None,
        access: Access | None = None,
    ):
        self.source = source
        # the accounts and the audit list (issue 28); without them the one password_hash
        self.access = access or Access(AccountStore(None, password_hash))
        self.access.verify = lambda password, stored: verify_password(password, stored)
        if dealer_addresses is None:
            web_config = getattr(getattr(source, "config", None), "web", None)
            dealer_addresses = getattr(web_config, "dealer_addresses", DEALER_ADDRESSES)
        self.password_hash = password_hash
        self.clock = clock
        self.throttle = throttle or LoginThrottle()
        self.sessions = sessions or Sessions()
        self.limits = limits or Limits()
        self.stopping = threading.Event()
        self.counters = {"logins": 0, "login_failures": 0, "throttled": 0, "refused": 0}
        self._lock = threading.Lock()
        self.logins = LoginChecks(self.throttle, clock=clock)
        self._started = clock()
        host = "127.0.0.1" if bind == "localhost" else bind
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family, backlog=1024)
        self.address = sock.getsockname()[:2]
        self.front = Front(
            sock,
            handler=self.handle,
            role=self.role,
            views=self.views,
            frame=_frame,
            wait_change=source.wait_change,
            error=_error_reply,
            limits=self.limits,
            dealer_addresses=dealer_addresses,
        )
        self._library: JournalLibrary | None = None

    def start(self) -> WebServer:
        self.front.start()
        log.info("web pages on http://%s:%d/ (dealer display /dealer)", *self.address)
        return self

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def close(self) -> None:
        """Stop serving: live streams end, the socket closes. Safe twice."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        self.front.close()
        self.logins.close()

    def count(self, name: str) -> None:
        with self._lock:
            self.counters[name] += 1

    @property
    def streams(self) -> int:
        return self.front.streams

    # -- who asks, and what the front calls -------------------------------------------------

    def role(self, head: Head, address: str) -> str:
        """``technician`` with a live session, ``dealer`` from the dealer's screen (the Pi
        itself, or ``[web] dealer_addresses``), else ``anonymous`` (:data:`~.front.ROLES`)."""
        if self.sessions.get(_cookie(head.headers.get("Cookie")), self.clock()) is not None:
            return "technician"
        return "dealer" if self.front.is_dealer(address) else "anonymous"

    def handle(self, request: Request) -> Reply | Stream | Future[Reply]:
        """Answer one request (in a thread of its role's pool)."""
        exchange = _Exchange(self, request)
        return exchange.run()

    def views(self, kinds: set[str]) -> dict[str, Any]:
        """The live streams' views: ``dealer`` the dealer display's, ``diag`` the bundle."""
        out: dict[str, Any] = {}
        if "dealer" in kinds:
            out["dealer"] = self.dealer()
        if "diag" in kinds:
            out["diag"] = self.bundle()
        return out

    # -- what the pages show ---------------------------------------------------------------

    def bundle(self) -> dict[str, Any]:
        """Everything the diagnostics page shows at a glance (no secret, no hole card)."""
        ident = self.source.identity()
        return {
            **ident,
            "uptime_s": round(self.clock() - self._started, 3),
            "status": self.source.status(),
            "feed": self.source.feed(),
            "health": self.source.health(),
            "light_test": self.source.light_test_state(),
            "history": self._history_state(),
            "zone": self.zone,
        }

    def _history_state(self) -> dict[str, Any] | None:
        recorder = getattr(self.source, "history", None)
        state = getattr(recorder, "state", None)
        if callable(state):
            return state()
        problem = getattr(self.source, "history_problem", None)
        return {"problem": problem} if problem else None

    def dealer(self) -> dict[str, Any]:
        return views.dealer_view(
            self.source.identity()["table"], self.source.status(), self.source.feed()
        )

    @property
    def library(self) -> JournalLibrary:
        """The journal's files (the facts of archives kept between requests)."""
        if self._library is None:
            self._library = JournalLibrary(self.source.config.journal_path)
        return self._library

    @property
    def zone(self) -> str | None:
        """The time zone recall shows (the gaming day's; None: the system's)."""
        return self.source.config.gaming_day.zone

    def web_counters(self) -> dict[str, Any]:
        with self._lock:
            out = dict(self.counters)
        out["sessions"] = self.sessions.count(self.clock())
        out["streams"] = self.streams
        out["connections"] = self.front.connections
        out.update({f"front_{k}": v for k, v in self.front.counters.items()})
        out.update({f"login_{k}": v for k, v in self.logins.counters.items()})
        return out


def _json_bytes(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def _frame(kind: str, view: dict[str, Any]) -> tuple[bytes, bytes]:
    """A stream's ``event: update`` frame, and the key of what must go out at once (ages
    and counters change every second and go out once a second)."""
    gpio = (view.get("health") or {}).get("gpio") or {}
    key = _json_bytes(
        {k: v for k, v in view.items() if k not in ("health", "uptime_s")}
        | {"status": {k: v for k, v in (view.get("status") or {}).items() if k != "t"}}
        | {"lights": gpio.get("lights")}  # the light test is watched live
    )
    return key, b"event: update\ndata: " + _json_bytes(view) + b"\n\n"


def _headers(content_type: str, extra: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [
        ("Server", "table-controller"),
        ("Content-Type", content_type),
        ("Cache-Control", "no-store"),
        *{**SECURITY_HEADERS, **(extra or {})}.items(),
    ]


def _error_reply(status: int, message: str) -> Reply:
    """What the front answers itself (a bad request, a timeout, a full budget)."""
    return Reply(
        status,
        HTTPStatus(status).phrase,
        _headers("application/json"),
        _json_bytes({"ok": False, "error": message}),
    )


def _recall_hands(layout: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """Every hand of a recalled round as the page draws it (the dealer first): ``who``,
    ``cards`` (as recorded, ``10H``), ``total``, ``soft``, ``bust`` and what was done;
    None when the round's events do not replay."""
    from controller.rules.cards import parse_cards
    from controller.rules.hand import hand_total

    if layout is None:
        return None

    def hand(who: str, cards: list[str], **extra: Any) -> dict[str, Any]:
        total = hand_total(parse_cards(cards)) if cards else None
        return {
            "who": who,
            "cards": cards,
            "total": None if total is None else total.total,
            "soft": bool(total and total.soft),
            "bust": bool(total and total.is_bust),
            **extra,
        }

    dealer = layout.get("dealer") or {}
    out = [hand("Dealer", [c for c in dealer.get("cards") or [] if c != "back"])]
    for spot in layout.get("spots") or []:
        hands = spot.get("hands") or []
        for n, one in enumerate(hands):
            who = f"Spot {spot['spot']}" + (f" hand {n + 1}" if len(hands) > 1 else "")
            done = [
                word
                for key, word in (
                    ("double_down", "doubled"),
                    ("double_up", "doubled up"),
                    ("surrendered", "surrendered"),
                )
                if one.get(key)
            ]
            out.append(hand(who, list(one.get("cards") or []), done=done))
    return out


def _cookie(raw: str | None) -> str | None:
    if not raw:
        return None
    jar = http.cookies.SimpleCookie()
    try:
        jar.load(raw)
    except http.cookies.CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel else None


class _Exchange:
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

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.reply = Reply(status, HTTPStatus(status).phrase, _headers(content_type, headers), body)

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, _json_bytes(data), "application/json", headers)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._json(status, {"ok": False, "error": message}, headers)

    def _redirect(self, where: str, headers: dict[str, str] | None = None) -> None:
        self.reply = Reply(
            HTTPStatus.SEE_OTHER,
            "See Other",
            [
                ("Server", "table-controller"),
                ("Location", where),
                *{**SECURITY_HEADERS, **(headers or {})}.items(),
            ],
        )

    def _cookie(self) -> str | None:
        return _cookie(self.headers.get("Cookie"))

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

    # -- routes ----------------------------------------------------------------------------

    def _get(self, path: str) -> None:
        web = self.web
        if path == "/":
            self._redirect("/diag" if self._session() else "/login")
        elif path == "/diag":
            if self._login_required(page=True):
                self._static("diag.html")
        elif path in PAGES:
            self._static(PAGES[path])
        elif path.startswith("/static/"):
            self._static(path.removeprefix("/static/"))
        elif path == "/healthz":
            ok, problems = web.source.healthy()
            self._json(
                HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE,
                {"ok": ok, "problems": problems},
            )
        elif path == "/metrics":
            text = views.metrics_text(web.bundle(), web.web_counters())
            self._send(HTTPStatus.OK, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif path == "/api/dealer":
            self._json(HTTPStatus.OK, web.dealer())
        elif path == "/api/dealer/stream":
            self._stream("dealer", None)
        elif path == "/api/session":
            session = self._login_required()
            if session:
                from controller.accounts import PERMISSIONS

                self._json(HTTPStatus.OK, {
                    "ok": True, "user": session.user, "csrf": session.csrf,
                    "role": session.role, "permissions": sorted(PERMISSIONS[session.role]),
                })  # fmt: skip
        elif path == "/api/audit":
            if self._login_required():
                audit = web.access.audit
                entries = audit.recent(200) if audit is not None else []
                self._json(HTTPStatus.OK, {"ok": True, "kept": audit is not None,
                                           "entries": entries})  # fmt: skip
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
                self._json(HTTPStatus.OK, {"records": web.source.recent_log()})
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
            self.web.sessions.end(session.token)
            access.record(session.user, "logout", role=session.role, address=self.address)
            log.info("web: %s logged out (%s)", session.user, self.address)
            self._json(
                HTTPStatus.OK,
                {"ok": True},
                {"Set-Cookie": f"{COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"},
            )
            return
        self._action(path, body, session)
        # the audit list: who, what, and how it ended (the table's own words on a refusal)
        reply = self.reply
        answer: dict[str, Any] = {}
        if reply is not None and reply.body.startswith(b"{"):
            answer = json.loads(reply.body)
        ok = reply is not None and reply.status < 300
        what = body.get("award") or body.get("alarm")
        access.record(
            session.user, permission or path, "ok" if ok else "refused", role=session.role,
            object="" if what is None else str(what), address=self.address,
            detail=str(answer.get("error") or answer.get("message") or ""),
        )  # fmt: skip

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
                "amount must be the award's amount typed again, e.g. \"$12,345.67\"",
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

    # -- login ------------------------------------------------------------------------------

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
            seconds = int(answer.wait_s) + 1
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
            return _error_reply(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error: see the log")
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

    # -- pages, recall, streams ----------------------------------------------------------------

    def _static(self, name: str) -> None:
        shown = name if len(name) <= 80 else name[:77] + "..."
        if len(name.encode()) > STATIC_NAME_MAX or not STATIC_NAME.fullmatch(name):
            self._error(HTTPStatus.NOT_FOUND, f"no file {shown}")
            return
        path = STATIC / name
        kind = CONTENT_TYPES.get(path.suffix)
        try:
            body = path.read_bytes() if kind is not None and path.is_file() else None
        except OSError:  # a name the file system refuses is no file of ours
            body = None
        if body is None:
            self._error(HTTPStatus.NOT_FOUND, f"no file {shown}")
            return
        self._send(HTTPStatus.OK, body, kind)

    def _history(self) -> None:
        """``?hours=H`` (1 to 72, default 6): the charts' lines from the daemon's history."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        text = (query.get("hours") or ["6"])[-1].strip()
        low, high = HISTORY_HOURS
        try:
            hours = float(text)
        except ValueError:
            hours = -1.0
        if not low <= hours <= high:
            self._error(
                HTTPStatus.BAD_REQUEST,
                f"hours must be a number of hours from {low} to {high}, e.g. hours=6 "
                f"(got {text[:20]!r})",
            )
            return
        source = getattr(self.web.source, "history_series", None)
        if source is None:
            self._error(HTTPStatus.NOT_FOUND, "this table keeps no history")
            return
        answer = source(hours)
        if not answer.get("ok"):
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(answer.get("error")))
            return
        self._json(HTTPStatus.OK, answer)

    def _older(self) -> None:
        """``?before=N``: the 10 settled rounds before round N, newest first (paging back
        through every file the journal keeps)."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        before = (query.get("before") or [""])[-1].strip()
        if not re.fullmatch(r"\d{1,9}", before):
            self._error(HTTPStatus.BAD_REQUEST, "before must be a round number, e.g. before=120")
            return
        try:
            found = self.web.library.older_rounds(int(before), 10)
        except JournalError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
            return
        self._json(HTTPStatus.OK, {"ok": True, "rounds": self._recalled(found)})

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

    def _recalled(self, found: list[FoundRound]) -> list[dict[str, Any]]:
        """Recall records as the page shows them: each with its text (every hand's cards,
        replayed from the round's events, ~1 ms), its local time and the file it is in."""
        from controller.games import load_game
        from controller.recall import recall_view, round_times

        zone = self.web.zone
        rules: dict[str, Any] = {}
        out = []
        for item in found:
            record, name = item.record, item.file.name
            game = record["game"]
            if game not in rules:
                rules[game] = load_game(game)
            text, layout = recall_view(record, rules[game], zone=zone, file=name, suits=True)
            out.append(
                {
                    **record,
                    "text": text,
                    "hands": _recall_hands(layout),
                    "when": round_times(record, zone),
                    "file": name,
                }
            )
        return out

    def _rounds(self) -> None:
        try:
            found = self.web.library.last_rounds(10)
        except JournalError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
            return
        self._json(HTTPStatus.OK, {"rounds": self._recalled(found)})

    def _search(self) -> None:
        """``?round=N``, or ``?at=YYYY-MM-DD HH:MM`` (the rounds nearest that local time)
        with ``&to=...`` for the rounds settled in a range; across the journal's files."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        number, at, to = ((query.get(key) or [""])[-1].strip() for key in ("round", "at", "to"))
        library, zone = self.web.library, self.web.zone
        if number and not re.fullmatch(r"\d{1,9}", number):
            self._error(HTTPStatus.BAD_REQUEST, "round must be a round number, e.g. 1234")
            return
        if not number and not at:
            self._error(
                HTTPStatus.BAD_REQUEST,
                "give round=N, or at=YYYY-MM-DD HH:MM (local time), with to=... for a range",
            )
            return
        try:
            since = local_to_utc_ms(at, zone) if at and not number else None
            until = local_to_utc_ms(to, zone) if to and since is not None else None
        except JournalError as exc:  # a time not written as asked, a zone not known
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
            return
        try:
            if number:
                one = library.find_round(int(number))
                found = [one] if one is not None else []
                nothing = f"no record of round {number} in any journal file"
            elif until is not None:
                found = library.rounds_between(since, until, 50)
                nothing = f"no round settled from {at} to {to}"
            else:
                found = library.nearest(since, 5)
                nothing = "no round with a time of day is recorded"
            rounds = self._recalled(found)
            problems = [f"{f.name}: {f.problem}" for f in library.problems()]
        except JournalError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
            return
        if not rounds:
            self._json(
                HTTPStatus.NOT_FOUND,
                {"ok": False, "error": nothing, "rounds": [], "unreadable": problems},
            )
            return
        self._json(HTTPStatus.OK, {"ok": True, "rounds": rounds, "unreadable": problems})

    def _script(self, number: int) -> None:
        """A settled round's event script from whichever file holds it, with its local date
        and time (and UTC, and the file) as comment lines after the header."""
        from controller.recall import script_with_times
        from controller.table.script import round_script

        try:
            found = self.web.library.find_round(number)
        except JournalError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
            return
        if found is None:
            self._error(
                HTTPStatus.NOT_FOUND,
                f"no record of round {number} in any journal file (a round in progress is "
                "recorded when it is settled)",
            )
            return
        script = script_with_times(
            round_script(found.record), found.record, self.web.zone, found.file.name
        )
        table = self.web.source.identity()["table"]
        self._send(
            HTTPStatus.OK,
            script.encode(),
            "application/x-ndjson; charset=utf-8",
            {"Content-Disposition": f'attachment; filename="{table}-round-{number}.jsonl"'},
        )

    def _stream(self, kind: str, session: Session | None) -> None:
        """Server-sent events: ``event: update`` with the whole view whenever it changes
        (the front runs it within the role's budget); ``event: logout`` when the session
        ends."""
        web = self.web
        valid = None
        if session is not None:
            token = session.token
            valid = lambda: web.sessions.get(token, web.clock()) is not None  # noqa: E731
        self.reply = Stream(
            kind,
            [("Server", "table-controller"), *_headers("text/event-stream; charset=utf-8")[1:]],
            session,
            valid,
        )
