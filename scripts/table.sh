#!/usr/bin/env bash
# The main job. For now: the par sheet of the default game (pa-standard).
# Arguments are passed to `table-controller`, e.g. `scripts/table.sh par-sheet --game double-up`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ $# -eq 0 ]; then
    set -- par-sheet --game pa-standard
fi
exec .venv/bin/table-controller "$@"
