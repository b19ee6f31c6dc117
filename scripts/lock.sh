#!/usr/bin/env bash
# Refresh constraints.txt: the exact versions of every runtime and test dependency, resolved by
# uv from pyproject.toml's ranges for CPython 3.11 on Debian 12 / 64-bit Raspberry Pi OS
# (glibc 2.36), wheels only. Resolved for aarch64 (the Pi) and x86_64 (CI, development); the
# two must agree, so one file serves both. Needs PyPI; uv is fetched into a temporary venv.
# Run after changing a dependency in pyproject.toml, then run scripts/test.sh and commit both.
set -euo pipefail
cd "$(dirname "$0")/.."

tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/python" -m pip install -q 'uv>=0.5,<1'

compile() {  # compile PLATFORM OUT
    "$tools/venv/bin/uv" pip compile pyproject.toml --extra test --extra pi --quiet \
        --python-version 3.11 --python-platform "$1" --only-binary :all: \
        --custom-compile-command "bash scripts/lock.sh" --output-file "$2"
}
compile aarch64-manylinux_2_36 "$tools/aarch64.txt"
compile x86_64-manylinux_2_36 "$tools/x86_64.txt"
if ! diff -u "$tools/aarch64.txt" "$tools/x86_64.txt"; then
    echo "lock: aarch64 and x86_64 resolve differently (above); pin the odd one in pyproject.toml" >&2
    exit 1
fi
cp "$tools/aarch64.txt" constraints.txt
echo "lock: constraints.txt written ($(grep -c '==' constraints.txt) pins)"
