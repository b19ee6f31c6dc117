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

The routes are :mod:`.exchange`'s, one module per group (``routes_pages``,
``routes_session``, ``routes_actions``, ``routes_recall``, ``routes_streams``). Routes
(docs/web.md): ``/dealer`` and ``/api/dealer[/stream]`` (the kiosk, read-only, no
login), ``/login``, ``/diag``, ``/api/session``, ``/api/status``, ``/api/stream`` (server-sent
events), ``/api/rounds`` (the last 10), ``/api/rounds/search?round=N`` or
``?at=YYYY-MM-DD HH:MM[&to=...]`` (local time; across files), ``/api/rounds/N/script``,
``/api/rounds/older?before=N`` (the 10 before round N), ``/api/history?hours=H`` (the charts' lines:
:mod:`controller.runtime.history`), ``/static/vendor/...`` (uPlot), ``/api/log``,
``POST /api/alarms/ack``, ``POST /api/faults/clear``, ``POST /api/lights/test``,
``POST /api/journal/rotate``, ``POST /logout``, ``/healthz``, ``/metrics``.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, Protocol

from controller.accounts import AccountStore
from controller.journal.library import JournalLibrary
from controller.web import glance, views
from controller.web.access import Access
from controller.web.admission import DEALER_ADDRESSES
from controller.web.auth import LoginThrottle, Sessions, verify_password
from controller.web.exchange import Exchange
from controller.web.front import Front, Limits, Reply, Request, Stream
from controller.web.logins import LoginChecks
from controller.web.protocol import Head
from controller.web.replies import COOKIE, error_reply, session_cookie
from controller.web.routes_streams import frame
from controller.web.times import TableTimes, system_zone

log = logging.getLogger("table-controller.web")

__all__ = ["COOKIE", "TableSource", "WebServer"]


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
    # a source without it answers /api/history with 404.
    # optional (issue 30): ``problems() -> list[Problem]`` (controller.runtime.health: the
    # summary line's items, whose texts are healthy()'s problems); ``times() -> {t, utc_ms,
    # since_t}`` (the table's clock and the wall clock now: alarms' times of day);
    # ``log_kept() -> {info, warning}`` (how many log records of each are kept). A source
    # without them: the problems without since when, no times of day, no counts.


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
            frame=frame,
            wait_change=source.wait_change,
            error=error_reply,
            limits=self.limits,
            dealer_addresses=dealer_addresses,
        )
        self._library: JournalLibrary | None = None
        self._system_zone: str | None = None
        self.times = TableTimes(getattr(getattr(source, "config", None), "journal_path", None))

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
        if self.sessions.get(session_cookie(head.headers.get("Cookie")), self.clock()) is not None:
            return "technician"
        return "dealer" if self.front.is_dealer(address) else "anonymous"

    def handle(self, request: Request) -> Reply | Stream | Future[Reply]:
        """Answer one request (in a thread of its role's pool)."""
        return Exchange(self, request).run()

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
        """Everything the diagnostics page shows at a glance (no secret, no hole card):
        with the summary line's problems (the same as ``/healthz``'s), each alarm's time of
        day, the zone the page shows times in and the wall clock now (``now_utc_ms``)."""
        source = self.source
        ident = source.identity()
        clock = getattr(source, "times", None)  # optional: a source without it shows no times
        now = self.times.now(clock()) if callable(clock) else None
        listed = getattr(source, "problems", None)
        if callable(listed):
            problems = [p.to_dict() for p in listed()]
        else:
            problems = [{"text": text, "kind": ""} for text in source.healthy()[1]]
        return {
            **ident,
            "uptime_s": round(self.clock() - self._started, 3),
            "status": glance.timed_status(source.status(), self.times.utc),
            "feed": source.feed(),
            "health": source.health(),
            "light_test": source.light_test_state(),
            "history": self._history_state(),
            "zone": self.zone,
            "now_utc_ms": now,
            "summary": glance.summary(problems, self.times.utc),
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
    def zone(self) -> str:
        """The time zone the pages and recall show (the gaming day's, else the system's:
        :func:`.times.system_zone`), an IANA name."""
        zone = self.source.config.gaming_day.zone
        if zone:
            return zone
        if self._system_zone is None:
            self._system_zone = system_zone()
        return self._system_zone

    def web_counters(self) -> dict[str, Any]:
        with self._lock:
            out = dict(self.counters)
        out["sessions"] = self.sessions.count(self.clock())
        out["streams"] = self.streams
        out["connections"] = self.front.connections
        out.update({f"front_{k}": v for k, v in self.front.counters.items()})
        out.update({f"login_{k}": v for k, v in self.logins.counters.items()})
        return out
