"""A real browser for the web page tests: Playwright (sync API) driving Debian's chromium.

Use it from a test file with::

    from browser import browser_context, chromium, screenshot  # noqa: F401

- ``chromium``: one headless chromium for the whole session (``/usr/bin/chromium``, or
  ``$TC_CHROMIUM``; ``--no-sandbox`` because the tests run as root). The tests skip when
  Playwright or the browser is missing (``scripts/setup.sh --test`` installs both; we never
  run ``playwright install``).
- ``browser_context``: a fresh context per test (its own cookies, downloads accepted).
  Every page opened in it is watched: an uncaught script error or a Content-Security-Policy
  violation (an inline script or style the server's policy refuses) fails the test.
- ``screenshot(page, step)``: saves ``test-artifacts/screenshots/<test>-<step>.png`` at the
  repository root (the directory is git-ignored), for a person to look at what the test saw.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = Path(os.environ.get("TC_CHROMIUM", "/usr/bin/chromium"))
TIMEOUT_MS = 10_000
"""How long a locator or navigation waits: a live page updates within a second."""


_SHARED: dict[str, Any] = {"users": 0}
"""The one Playwright and browser of the session: every test module that says
``chromium = browser.chromium`` gets a fixture of its own (pytest registers it per module),
and a second ``sync_playwright()`` in the same thread fails ("Sync API inside the asyncio
loop"), so they share this one, started by the first and stopped by the last."""


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip(f"no browser at {CHROMIUM}: run `bash scripts/setup.sh --test`")
    if not _SHARED["users"]:
        playwright = sync_api.sync_playwright().start()
        _SHARED["playwright"] = playwright
        _SHARED["browser"] = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
    _SHARED["users"] += 1
    try:
        yield _SHARED["browser"]
    finally:
        _SHARED["users"] -= 1
        if not _SHARED["users"]:
            _SHARED.pop("browser").close()
            _SHARED.pop("playwright").stop()


@pytest.fixture
def browser_context(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []

    def watch(page: Any) -> None:
        def console(msg: Any) -> None:
            if msg.type == "error" and "Content Security Policy" in msg.text:
                problems.append(f"{page.url}: {msg.text}")

        page.on("pageerror", lambda exc: problems.append(f"{page.url}: script error: {exc}"))
        page.on("console", console)

    context.on("page", watch)
    try:
        yield context
    finally:
        context.close()
    assert not problems, "the pages reported errors:\n" + "\n".join(problems)


@pytest.fixture
def screenshot(request: pytest.FixtureRequest) -> Callable[[Any, str], Path]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    test = re.sub(r"[^\w.-]+", "_", request.node.name)

    def take(page: Any, step: str) -> Path:
        path = SCREENSHOTS / f"{test}-{step}.png"
        page.bring_to_front()  # a tab in the background paints late: seconds per shot
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
