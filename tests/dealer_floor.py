"""A seven-spot table as the daemon runs it, minus the devices, for the dealer display's browser
tests (tests/test_dealer_display.py, test_dealer_screen.py, test_dealer_legibility.py).

The real journal (SQLite, WAL, synchronous=FULL) under the real table loop
(:class:`~controller.runtime.loop.TableRuntime`, in a thread), served by the real web server
(:class:`~controller.web.server.WebServer`) on a free loopback port. Events are submitted to
the loop as the daemon's drivers submit them; a pure :class:`~controller.table.machine.Table`
fed the same events is the oracle.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from controller import __version__
from controller.games import load_game
from controller.journal import JournaledTable
from controller.rules.cards import parse_card
from controller.runtime.loop import TableRuntime
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Step
from controller.web.server import WebServer

TABLE = "hcm-bj-07"
RULES = load_game("pa-standard")
SETTINGS = TableSettings(spots=7, main_minimum=1000, main_maximum=100_000)
SIZES = {"table": (800, 480), "laptop": (1280, 800)}
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
TIMEOUT_MS = 10_000
SUIT = {"H": "\u2665", "D": "\u2666", "C": "\u2663", "S": "\u2660"}


def shown(card: str) -> str:
    return card[:-1] + SUIT[card[-1]]


# -- the table, its loop and its web server ------------------------------------------------


class Floor:
    """A journaled 7-spot table under the real loop and web server, and its oracle."""

    def __init__(
        self,
        tmp: Path,
        rules: Any = RULES,
        settings: TableSettings = SETTINGS,
        recall_ms: int = 30_000,
    ):
        self.rules, self.settings, self.recall_ms = rules, settings, recall_ms
        self.journal_path = tmp / "journal.sqlite"
        self.oracle = Table(rules, settings)
        self.meters: list[dict[str, Any]] | None = None
        self.config = SimpleNamespace(
            journal_path=self.journal_path, gaming_day=SimpleNamespace(zone=None)
        )
        self.started = time.time()
        self._stop = threading.Event()
        ready: Future[TableRuntime] = Future()
        self._thread = threading.Thread(target=self._loop, args=(ready,), daemon=True)
        self._thread.start()
        self.runtime = ready.result(10)
        self.web = WebServer(self, bind="127.0.0.1", port=0).start()
        self.url = self.web.url
        self.steps: list[Step] = []

    def _loop(self, ready: Future[TableRuntime]) -> None:
        """The table loop's thread: it owns the journal's connection, as in the daemon."""
        with JournaledTable(self.journal_path, self.rules, self.settings) as table:
            runtime = TableRuntime(
                table,
                clock=lambda: time.monotonic_ns() // 1_000_000,
                tick_ms=50,
                recall_ms=self.recall_ms,
            )
            ready.set_result(runtime)
            runtime.run(self._stop)

    # what the web server reads (controller.web.server.TableSource)
    def identity(self) -> dict[str, Any]:
        return {
            "table": TABLE,
            "property": "hcm",
            "game": self.rules.name,
            "version": __version__,
            "config_checksum": "test",
            "started": self.started,
        }

    def status(self) -> dict[str, Any]:
        status = self.runtime.status()
        return status if self.meters is None else {**status, "meters": self.meters}

    def feed(self) -> list[dict[str, Any]]:
        return self.runtime.recent()

    def health(self) -> dict[str, Any]:
        return {"link": None, "shoe": None, "camera": None, "gpio": None}

    def healthy(self) -> tuple[bool, list[str]]:
        return True, []

    def wait_change(self, timeout_s: float) -> None:
        self.runtime.wait_change(timeout_s)

    def light_test_state(self) -> None:
        return None

    def recent_log(self) -> list[dict[str, Any]]:
        return []

    # driving it
    def do(self, event: ev.Event, accepted: bool = True) -> Step:
        expected = self.oracle.handle(event)
        reply: Future[Step] = Future()
        self.runtime.submit(event, reply)
        step = reply.result(10)
        assert step.accepted is expected.accepted is accepted, f"{event}: {step.reason}"
        self.steps.append(step)
        return step

    def card(self, text: str) -> Step:
        return self.do(ev.CardDrawn(parse_card(text)))

    def cards(self, texts: str) -> None:
        for text in texts.split():
            self.card(text)

    def close(self) -> None:
        self.web.close()
        self._stop.set()
        self._thread.join(10)
