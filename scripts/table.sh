#!/usr/bin/env bash
# The main job: the whole table in simulation (`table-controller demo`): a generated Mosquitto,
# the jackpot controller, the reference sign, a simulated shoe on a pseudo-terminal and the table
# daemon on mock GPIO pins, played by an autopilot dealer. Ctrl-C stops everything it started.
# Arguments are passed to `table-controller`, e.g. `scripts/table.sh demo --rounds 20` or
# `scripts/table.sh par-sheet --game double-up`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ $# -eq 0 ]; then
    set -- demo
fi
exec .venv/bin/table-controller "$@"
