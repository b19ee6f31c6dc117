"""The rules library and the table state machine are pure.

They import no I/O, clock, randomness, hardware or network module.

STYLE.md: "The core never sleeps, never reads the clock, never imports serial,
gpiozero, cv2 or paho." Checked on the source, so a lazy import inside a
function is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RULES = Path(__file__).resolve().parent.parent / "controller" / "rules"
TABLE = RULES.parent / "table"
PURE_MODULES = [
    *sorted(RULES.rglob("*.py")),
    RULES.parent / "parsheet.py",
    *sorted(TABLE.rglob("*.py")),
    RULES.parent.parent / "drivers" / "shoe_protocol.py",  # the shoe's parser, fuzzed
    RULES.parent.parent / "jackpot" / "pools.py",  # meter arithmetic
    RULES.parent.parent / "jackpot" / "config.py",  # the jackpot config's dataclasses
    RULES.parent.parent / "jackpot" / "config_read.py",  # reading it (the file's text only)
    RULES.parent / "backoff.py",
    RULES.parent / "fast_init.py",  # the core's frozen dataclasses' __init__
    RULES.parent / "runtime" / "watch.py",  # fault watchers: health samples in, events out
    RULES.parent / "demo" / "autopilot.py",  # the demo's dealer and players
    RULES.parent / "demo" / "strategy.py",
    RULES.parent / "web" / "views.py",  # what the pages show: status in, dicts and text out
    RULES.parent / "web" / "words.py",  # the dealer display's words
    RULES.parent / "web" / "felt.py",  # the dealer display's table picture and recalled round
    RULES.parent / "web" / "stops.py",  # which alarm stops the game, in which words
    RULES.parent / "runtime" / "recall.py",  # the recall_last button's memory: status in, out
    RULES.parent / "runtime" / "history_series.py",  # the charts' lines: samples in, lines out
]

FORBIDDEN = {
    "os",
    "io",
    "sys",
    "time",
    "datetime",
    "random",
    "secrets",
    "socket",
    "threading",
    "asyncio",
    "subprocess",
    "pathlib",
    "shutil",
    "sqlite3",
    "logging",
    "serial",
    "gpiozero",
    "cv2",
    "pyzbar",
    "paho",
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", PURE_MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pure_module_imports_nothing_impure(path):
    assert path.exists()
    assert not imported_modules(path) & FORBIDDEN


def test_the_purity_check_sees_an_import():
    """Guard against a check that cannot fail."""
    assert "gpiozero" in imported_modules(Path(__file__).with_name("_impure_sample.py.txt"))


def test_the_table_state_machine_is_checked():
    """The state machine's modules are in the list, so a new one cannot slip past."""
    names = {p.name for p in PURE_MODULES if p.parent == TABLE}
    assert {"machine.py", "procedure.py", "events.py", "effects.py", "script.py"} <= names
    assert "checkpoint.py" in names  # the journal's checkpoints of the table state


# -- the two products: the table (controller/) and the central jackpot controller (jackpot/) ----

CONTROLLER = RULES.parent
JACKPOT = CONTROLLER.parent / "jackpot"
DEMO = CONTROLLER / "demo"  # a whole casino in one process: it may start the jackpot side
#: What the jackpot controller may take from the table's package: the link contract (messages,
#: schemas, signing), the game profiles and rules it proves contributions and claims against,
#: and small shared utilities. Nothing of the running table (table/, journal/, runtime/, web/,
#: config, cli, demo/).
JACKPOT_MAY_IMPORT = (
    "controller.build",
    "controller.link",
    "controller.rules",
    "controller.games",
    "controller.errors",
    "controller.backoff",
    "controller.backup",
    "controller.verify",  # both products' verify (issue 29 item 4): stdlib and release_files
    "controller.release_files",
    "controller.selfcheck",  # both daemons' self-check of that verify (issue 29 item 4): stdlib
    "controller.logs",
    "controller.sdnotify",
    "controller.timesync",  # is the clock synchronised? both services ask (issue 28 item 6)
    "controller.names",  # a person's name that shows blank is refused by both (issues 26, 27)
    "controller.json_text",  # the link's JSON forms, byte for byte the standard library's
    "controller.json_floats",  # whether parsed JSON held a float (the link refuses one)
)
#: ``jackpot-controller reconcile`` (an audit command, run on copies of the tables' journals)
#: replays a table's journal with the table's own state machine to the messages it sent: the
#: one module of jackpot/ that reads the running table's code (issue 27).
JACKPOT_RECONCILE_MAY_IMPORT = ("controller.journal", "controller.table")


def imported_full_names(path: Path) -> set[str]:
    """Every module ``path`` imports, dotted in full (``from controller import logs`` gives
    ``controller.logs``), lazy imports inside functions included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "controller":
                names |= {f"controller.{alias.name}" for alias in node.names}
            else:
                names.add(node.module)
    return names


def _table_side() -> list[Path]:
    return [p for p in sorted(CONTROLLER.rglob("*.py")) if not p.is_relative_to(DEMO)]


def test_the_table_never_imports_the_jackpot_controller():
    """controller/ (but the demo) shares only the link contract with jackpot/: a table's Pi
    runs no code of the central product."""
    table = _table_side()
    assert len(table) > 50 and CONTROLLER / "config" / "loader.py" in table
    importing = {
        str(p.relative_to(CONTROLLER.parent)): sorted(
            n for n in imported_full_names(p) if n == "jackpot" or n.startswith("jackpot.")
        )
        for p in table
    }
    assert {k: v for k, v in importing.items() if v} == {}


def test_the_jackpot_controller_takes_only_the_contract_from_the_table():
    modules = sorted(JACKPOT.rglob("*.py"))
    assert JACKPOT / "ledger.py" in modules and JACKPOT / "service.py" in modules
    other = {
        str(p.relative_to(CONTROLLER.parent)): sorted(
            n
            for n in imported_full_names(p)
            if n.split(".")[0] == "controller"
            and n != "controller.__version__"
            and not n.startswith(tuple(JACKPOT_MAY_IMPORT))
            and not (p.name == "reconcile.py" and n.startswith(JACKPOT_RECONCILE_MAY_IMPORT))
        )
        for p in modules
    }
    assert {k: v for k, v in other.items() if v} == {}


def test_the_import_checks_see_an_import():
    """Guard against checks that cannot fail: the demo starts the jackpot side, and the ledger
    reads the link contract."""
    demo = imported_full_names(DEMO / "stage.py")
    assert any(n.startswith("jackpot.") for n in demo), sorted(demo)
    assert "controller.link.messages" in imported_full_names(JACKPOT / "ledger.py")
    assert "controller.logs" in imported_full_names(JACKPOT / "cli.py")
    assert "controller.journal.file" in imported_full_names(JACKPOT / "reconcile.py")
