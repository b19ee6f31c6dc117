"""Pages and files: ``/login``, ``/diag``, ``/dealer``, ``/static/...``, ``/healthz``,
``/metrics`` (a mixin of :class:`~controller.web.exchange.Exchange`)."""

from __future__ import annotations

import html
import re
from http import HTTPStatus
from pathlib import Path

from controller.web import views

STATIC = Path(__file__).with_name("static")
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


class PageRoutes:
    """The pages, the static files, ``/healthz`` and ``/metrics``."""

    def _page(self, path: str) -> None:
        if path == "/login":
            self._login_page()
        else:
            self._static(PAGES[path])

    def _login_page(self) -> None:
        """The login page, naming the table it logs in to (issue 30): its id, game and
        property, so a technician on the floor network knows which table asks."""
        ident = self.web.source.identity()
        table = str(ident.get("table") or "?")
        where = [f"game {ident['game']}" if ident.get("game") else ""]
        where.append(f"property {ident['property']}" if ident.get("property") else "")
        body = (STATIC / "login.html").read_text(encoding="utf-8")
        body = body.replace("{{table}}", html.escape(table))
        body = body.replace("{{where}}", html.escape(", ".join(w for w in where if w)))
        self._send(HTTPStatus.OK, body.encode(), CONTENT_TYPES[".html"])

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

    def _healthz(self) -> None:
        ok, problems = self.web.source.healthy()
        self._json(
            HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE,
            {"ok": ok, "problems": problems},
        )

    def _metrics(self) -> None:
        web = self.web
        text = views.metrics_text(web.bundle(), web.web_counters())
        self._send(HTTPStatus.OK, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
