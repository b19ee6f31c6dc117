#!/usr/bin/env bash
# The whole test suite: lint, then pytest (unit, property, doctests).
# Extra arguments go to pytest, e.g. `scripts/test.sh -k lucky`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
.venv/bin/ruff check .
.venv/bin/ruff format --check .  # the code as ruff formats it (every file, since 2026-11-29)
# Three workers (pytest-xdist), each taking whole test files (module fixtures stay together),
# on a 2-core machine: with two, a whole run used about one core (user+sys 16.5 min in 16.1 min
# of wall, 2026-11-28 19:29-19:45 UTC): the tests wait on daemons, brokers, browsers and fsync
# more than they compute, and a third worker fills that wait. TEST_WORKERS=N sets how many;
# TEST_WORKERS=0 runs it in this process (for a debugger or to read one failure's output in order).
# --no-loadscope-reorder: files go out in the order tests/conftest.py gives them, the
# longest first (LONGEST_FILES), not by how many tests each holds.
exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder "$@"
