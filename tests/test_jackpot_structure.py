"""The jackpot package's structure (issue 27, item 6): the command line is its own module and
imports run one way, ``jackpot.service`` <- ``jackpot.ha`` <- ``jackpot.cli``, so the service
(what a controller runs) can be read, tested and changed without the command line, and the
high-availability supervisor without either importing the other back.
"""

from __future__ import annotations

import ast
from pathlib import Path

JACKPOT = Path(__file__).resolve().parent.parent / "jackpot"


def imported(module: str) -> set[str]:
    """Every ``jackpot.*`` module the file imports, at the top or inside a function."""
    tree = ast.parse((JACKPOT / f"{module}.py").read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return {n for n in names if n.startswith("jackpot")}


def test_the_service_and_the_supervisor_do_not_import_each_other_or_the_command_line():
    assert not imported("service") & {"jackpot.ha", "jackpot.cli", "jackpot.commands"}
    assert "jackpot.service" in imported("ha")
    assert not imported("ha") & {"jackpot.cli", "jackpot.commands"}
    assert {"jackpot.service", "jackpot.ha", "jackpot.commands"} <= imported("cli")
    for module in (
        "ledger",
        "ledger_kinds",
        "ledger_results",
        "ledger_rows",
        "changes",
        "reports",
        "reconcile",
        "audit",
        "draws",
        "parameters",
    ):
        assert not imported(module) & {"jackpot.service", "jackpot.ha", "jackpot.cli"}, module


def test_the_command_line_is_not_in_the_service():
    tree = ast.parse((JACKPOT / "service.py").read_text())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert not functions & {"main", "_parser", "alarms_main", "backup_main", "link_key_main"}
    assert "argparse" not in {a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                              for a in n.names}  # fmt: skip
