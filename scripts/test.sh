#!/usr/bin/env bash
# The whole test suite: lint, then pytest (unit, property, doctests).
# Extra arguments go to pytest, e.g. `scripts/test.sh -k lucky`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
.venv/bin/ruff check .
# Two workers (pytest-xdist), each taking whole test files (module fixtures stay together):
# the suite took 17-18 min on one core of a 2-core VM, 10 min on both. TEST_WORKERS=0 runs it
# in this process (for a debugger or to read one failure's output in order).
# --no-loadscope-reorder: files go out in the order tests/conftest.py gives them, the
# longest first (LONGEST_FILES), not by how many tests each holds.
exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
