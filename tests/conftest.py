"""Shared fixtures for the rules-library tests.

- ``cards("QH,7D")`` / ``card("QH")``: card text to cards, as a dealer would write them;
- ``pa``, ``double_up``, ``online``, ``tie``: the four shipped profiles, loaded through
  :func:`controller.games.load_game` exactly as the table loads them;
- ``edited``: a shipped profile with some of its lines replaced, parsed from text
  (``edited("pa-standard", ('pays = "3 to 2"', 'pays = "6 to 5"'))``), for house variants
  such as a 6:5 table or a table without a hole-card reader.

Seeds quoted in the tests are the rule cards in ``/work/shared/seeds/``: 000 and 001 (PA
standard), 002 (online six-deck), 003 (Double Up Blackjack), 004 (Blackjack Tie).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.games import find_game, load_game
from controller.rules.cards import Card, parse_card, parse_cards
from controller.rules.profile import HouseRules, parse_profile

PROFILES = ("pa-standard", "double-up", "online-6deck", "blackjack-tie")


def _trigger_key() -> None:
    """The jackpot ledgers these tests open seal their Mystery triggers with one key file of
    this test process (jackpot/draws.py; $JACKPOT_TRIGGER_KEY is how a controller finds it
    without [ledger] trigger_key); the service children the tests start inherit it."""
    if os.environ.get("JACKPOT_TRIGGER_KEY"):
        return
    import tempfile

    from jackpot.draws import TriggerKey

    path = Path(tempfile.mkdtemp(prefix="jackpot-key-")) / "mystery-trigger.key"
    TriggerKey.create(path)
    os.environ["JACKPOT_TRIGGER_KEY"] = str(path)


_trigger_key()


def _par_cache() -> None:
    """Every table daemon and demo these tests start computes its game's par sheet and main
    edge for the diagnostics page's charts (seconds of CPU each, beside its table): they share
    them through one folder of this test run, $TABLE_CONTROLLER_PAR_CACHE
    (controller/runtime/history.py, :func:`shared_par`), so each game's figures are computed
    once a run, by whichever daemon asks first. tests/test_history.py runs without it."""
    if os.environ.get("TABLE_CONTROLLER_PAR_CACHE"):
        return
    import tempfile

    os.environ["TABLE_CONTROLLER_PAR_CACHE"] = tempfile.mkdtemp(prefix="par-cache-")


_par_cache()


def profile_text(name: str) -> str:
    """The TOML text of a shipped profile."""
    return find_game(name).read_text(encoding="utf-8")


def edit_profile(name: str, *replacements: tuple[str, str]) -> HouseRules:
    """Parse shipped profile ``name`` with each ``(old, new)`` line replaced once.

    An ``old`` text that is not in the profile is a test error, so an edit can never
    silently do nothing.
    """
    text = profile_text(name)
    for old, new in replacements:
        assert old in text, f"{old!r} is not in {name}.toml"
        text = text.replace(old, new, 1)
    return parse_profile(text, f"{name}-edited.toml", default_name=name)


@pytest.fixture(scope="session")
def cards() -> Callable[[str], tuple[Card, ...]]:
    return parse_cards


@pytest.fixture(scope="session")
def card() -> Callable[[str], Card]:
    return parse_card


@pytest.fixture(scope="session")
def pa() -> HouseRules:
    return load_game("pa-standard")


@pytest.fixture(scope="session")
def double_up() -> HouseRules:
    return load_game("double-up")


@pytest.fixture(scope="session")
def online() -> HouseRules:
    return load_game("online-6deck")


@pytest.fixture(scope="session")
def tie() -> HouseRules:
    return load_game("blackjack-tie")


@pytest.fixture(scope="session")
def edited() -> Callable[..., HouseRules]:
    return edit_profile


@pytest.fixture(scope="session")
def no_peek() -> Callable[[str], HouseRules]:
    """The PA rules on a table without a hole-card reader, with ``blackjack_takes`` set."""

    def make(blackjack_takes: str) -> HouseRules:
        return edit_profile(
            "pa-standard",
            ('hole_card = "face_down"', 'hole_card = "after_players"'),
            ('peek = "electronic"', f'peek = "none"\nblackjack_takes = "{blackjack_takes}"'),
        )

    return make


ROOT = Path(__file__).resolve().parent.parent

#: The test files that take longest, longest first (seconds per file, setup, call and
#: teardown summed, from a whole run on two workers, 2026-11-28 18:53-19:29 UTC at load
#: 4-15; re-measure when a file grows; test_main_ev.py and test_wheel_install.py moved down
#: after their cuts of 2026-11-28 20:08-20:17 UTC, to about 50 s and 40 s; test_web_limits.py
#: after its cut, 111 -> 34-44 s).
#: With ``--dist loadfile --no-loadscope-reorder`` (scripts/test.sh) pytest-xdist hands
#: files out in collection order, so starting the long ones first keeps one worker from being
#: left with a two-minute file at the end while the other idles
#: (longest-processing-time-first).
#: test_release_bundle.py first: its bundle build (and the off-line install test_verify.py
#: shares) is what test_verify.py waits for.
LONGEST_FILES = (
    "test_release_bundle.py", "test_installer.py",
    "test_diag_page.py", "test_jackpot_failover.py", "test_parsheet.py", "test_web_browser.py",
    "test_diag_summary.py", "test_broker_failover.py", "test_main_ev.py", "test_web_limits.py",
    "test_web_server.py", "test_jackpot_takeover_pause.py", "test_jackpot_ledger.py",
    "test_recovery.py", "test_cli.py", "test_web_front.py", "test_power_loss.py",
    "test_rotation_kill.py", "test_wheel_install.py", "test_dealer_screen.py",
    "test_main_hold_sim.py",
    "test_accounts.py", "test_table_properties.py", "test_demo.py", "test_dealer_display.py",
    "test_link_forgery.py", "test_checkpoint.py", "test_jackpot_faults.py", "test_config.py",
    "test_enclosure_power.py", "test_hand_pay.py", "test_table_daemon.py",
    "test_jackpot_service.py", "test_web_accounts.py", "test_link_batches.py",
    "test_recall_files.py", "test_bench_web_pages.py", "test_journal_rotation_runtime.py",
    # test_verify.py waits for the bundle test_release_bundle.py builds (one build a run):
    # late, so that its worker does not sit idle on the lock
    "test_verify.py",
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest files first (:data:`LONGEST_FILES`), the rest in their usual order."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``table-controller ARGS`` as a user would, in its own process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "controller", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        input=stdin,
        timeout=120,
        check=False,
    )
