"""``jackpot-controller``'s commands for accounting, the auditor and the operator.

Each is ``NAME_main(argv) -> exit status``: 0 done, 1 a difference found (``reconcile``,
``audit-signatures``, ``verify-ledger``), 2 bad input (one line on stderr naming what was
wrong and what to do; nothing changed). :func:`run` picks one by the first word of the command line:

- ``parameters apply|show``, ``pool correct|transfer|retire``, ``trigger-key``
  (:mod:`jackpot.commands.audited`): the ledger's terms and audited movements;
- ``report liability|contributions|awards|changes|events``
  (:mod:`jackpot.commands.reports`);
- ``reconcile``, ``audit-signatures``, ``verify-ledger`` (:mod:`jackpot.commands.checks`).

See docs/jackpot/controller.md and docs/jackpot/audit.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

NAMES = ("parameters", "pool", "trigger-key", "report", "reconcile", "audit-signatures",
         "verify-ledger")  # fmt: skip


def bad(prog: str, message: str) -> int:
    """One line on stderr, exit status 2."""
    print(f"{prog}: {message}", file=sys.stderr, flush=True)
    return 2


def _command(name: str) -> Callable[[list[str]], int]:
    if name in ("parameters", "pool", "trigger-key"):
        from jackpot.commands import audited

        return {"parameters": audited.parameters_main, "pool": audited.pool_main,
                "trigger-key": audited.trigger_key_main}[name]  # fmt: skip
    if name == "report":
        from jackpot.commands.reports import report_main

        return report_main
    from jackpot.commands import checks

    return {"reconcile": checks.reconcile_main, "audit-signatures": checks.audit_main,
            "verify-ledger": checks.verify_main}[name]  # fmt: skip


def run(argv: list[str]) -> int | None:
    """The exit status of the command ``argv`` names; None if it names none of these."""
    if not argv or argv[0] not in NAMES:
        return None
    return _command(argv[0])(argv[1:])
