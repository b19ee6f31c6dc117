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
    RULES.parent / "jackpot" / "pools.py",  # meter arithmetic and pool config
    RULES.parent / "backoff.py",
    RULES.parent / "runtime" / "watch.py",  # fault watchers: health samples in, events out
    RULES.parent / "demo" / "autopilot.py",  # the demo's dealer and players
    RULES.parent / "demo" / "strategy.py",
    RULES.parent / "web" / "views.py",  # what the pages show: status in, dicts and text out
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
