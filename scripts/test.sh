#!/usr/bin/env bash
# The whole test suite: lint, then pytest (unit, property, doctests).
# Extra arguments go to pytest, e.g. `scripts/test.sh -k lucky`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
