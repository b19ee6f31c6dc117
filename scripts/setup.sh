#!/usr/bin/env bash
# Make .venv with the project and its test tools installed. Safe to run again:
# it reinstalls only when pyproject.toml changed. Installs python3-venv with
# apt when the machine lacks it (Debian / Raspberry Pi OS; needs root or sudo).
# `setup.sh --test` also installs what only the tests need: Debian's chromium, which
# the web page tests drive headless through Playwright (tests/browser.py), and PostgreSQL's
# server, which tests/pg_server.py starts for the jackpot ledger's PostgreSQL backend, and
# fuse3 (libfuse3), for the power-cut tests' file system (tests/powercut_fs.py).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's own /usr/bin/python3 where there is one: the interpreter a table's venv is made with
# (scripts/install-pi.sh, hardware/install.md step 5), so the tests and the benchmarks run on
# what the tables run, not on a python3 another PATH finds first (such as pyenv's, built
# without Debian's profile-guided optimisation: Debian's ran the replay 1.1-1.4 times as fast,
# issue 32)
if [ -z "${PYTHON:-}" ]; then
    if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
    if ! command -v apt-get >/dev/null; then
        echo "setup: please install: $*" >&2; exit 1
    fi
    echo "setup: installing $* with apt-get" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

if ! command -v "$PYTHON" >/dev/null; then
    apt_install python3 python3-venv python3-pip
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: Python 3.11 or newer is needed; $PYTHON is $("$PYTHON" -V 2>&1)" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    if ! "$PYTHON" -m venv .venv 2>/dev/null; then
        rm -rf .venv
        apt_install python3-venv
        "$PYTHON" -m venv .venv
    fi
fi
# a .venv made before with another interpreter is kept (it may be the hardware suite's
# --system-site-packages one); say so, since its test and benchmark figures are not a table's
venv_base=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
chosen=$("$PYTHON" -c 'import sys; print(sys.executable)')
if [ "$(readlink -f "$venv_base")" != "$(readlink -f "$chosen")" ]; then
    echo "setup: note: .venv runs $venv_base, not $chosen (the interpreter a table runs);" \
        "to make it anew: rm -rf .venv && bash scripts/setup.sh" >&2
fi

# ldconfig is in /sbin, which is not on a user's PATH on Debian: asked by name alone, it was
# never found and libzbar0 was reinstalled through sudo on every run (issue 29)
LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)
has_lib() { "$LDCONFIG" -p 2>/dev/null | grep -q "$1"; }

# pyzbar (the camera's barcode decoder) loads the system library libzbar.so.0
if ! has_lib 'libzbar\.so\.0'; then
    apt_install libzbar0
fi

# the tests start their own Mosquitto broker (tests/mqtt_broker.py); Debian's package also
# starts a system broker on port 1883, which the tests leave alone
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || apt_install mosquitto

# tests/test_systemd_units.py runs `systemd-analyze verify` on systemd/*.service; a fresh
# Debian container may have no systemd at all (the package brings the tool, not an init)
command -v systemd-analyze >/dev/null || apt_install systemd

# scripts/release.sh signs the release bundle with openssl (tests/test_release_bundle.py)
command -v openssl >/dev/null || apt_install openssl

if [ "${1:-}" = "--test" ]; then
    # the page tests run in the real browser Debian ships (Playwright drives it through
    # executable_path; no browser download from Playwright's servers)
    command -v chromium >/dev/null || [ -x /usr/bin/chromium ] || apt_install chromium
    # the ledger tests start their own cluster (initdb + pg_ctl as the postgres user, a free
    # loopback port: tests/pg_server.py); Debian's package may also start a system cluster on
    # port 5432, which the tests leave alone
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || apt_install postgresql
    # the power-cut tests run the journal and the ledger on a FUSE file system that forgets
    # what was not fsynced (tests/powercut_fs.py, through mfusepy): libfuse3 and fusermount3
    has_lib 'libfuse3\.so\.3' || apt_install fuse3
fi

# the exact versions of constraints.txt (scripts/lock.sh), the same a table installs
stamp=.venv/.installed-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -c constraints.txt -e '.[test]'
    rm -f .venv/.installed-*
    touch "$stamp"
fi
