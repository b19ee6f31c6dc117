#!/usr/bin/env bash
# Install or upgrade the table controller on a table's Pi (or the jackpot controller on the
# central host) from this checkout: apt packages, the service's user and directories, the
# pinned venv at /opt/table-controller/venv (not editable, -c constraints.txt), the systemd
# units and timers, the shoe's udev rule, the example configs into /etc if absent. Then it
# prints what is left for the technician. hardware/install.md is the guide around it.
#
#   sudo scripts/install-pi.sh [--role table|jackpot] [--destdir DIR]
#   sudo scripts/install-pi.sh --bundle FILE [--release-key KEY] [--role ...] [--destdir DIR]
#
# --bundle FILE: off-line, from a signed release bundle (scripts/release.sh) alone: no index,
# no checkout. Before anything is done it checks MANIFEST.sig (Ed25519, with openssl) with the
# release key and every file's SHA-256 against MANIFEST.sha256, and refuses naming the file
# that does not check. The key: --release-key KEY (release-key.pem, or the line release.sh
# printed), else the one a previous install kept in /opt/table-controller/release/, else (a
# first install) the bundle's own, whose fingerprint is printed to compare with the vendor's.
# The manifest, its signature and the key are kept in /opt/table-controller/release/ for
# `verify` (docs/release.md; N.J.A.C. 13:69E-1.28B(d), 9 NYCRR 5321.18(b)(3)(iv)).
#
# Safe to run again, for an upgrade: configs, secrets, the udev rule and data are kept; the
# venv and the units are brought to this checkout. With --destdir DIR every file goes under
# DIR (a scratch root, for a test or a review) and the system is not touched: no apt, no
# useradd, no chown, no systemctl or udevadm; those are printed as "would run: ...".
#
# Platform: 64-bit Raspberry Pi OS bookworm or Debian 12 (aarch64); x86_64 Debian 12 is
# accepted for testing (no GPIO). 32-bit ARM (armv7, armhf) is refused: PyPI has no armv7
# wheels of OpenCV or numpy.
set -euo pipefail
# the venv must be readable by the service's user whatever root's umask is; files of secrets
# get their own modes below
umask 022

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit "${1:-0}"
}

ROLE=table
DESTDIR=
BUNDLE=
RELEASE_KEY=
while [ $# -gt 0 ]; do
    case "$1" in
        --role) ROLE=${2:-}; shift 2 || usage 2 ;;
        --role=*) ROLE=${1#*=}; shift ;;
        --destdir) DESTDIR=${2:-}; shift 2 || usage 2 ;;
        --destdir=*) DESTDIR=${1#*=}; shift ;;
        --bundle) BUNDLE=${2:-}; shift 2 || usage 2 ;;
        --bundle=*) BUNDLE=${1#*=}; shift ;;
        --release-key) RELEASE_KEY=${2:-}; shift 2 || usage 2 ;;
        --release-key=*) RELEASE_KEY=${1#*=}; shift ;;
        -h|--help) usage 0 ;;
        *) echo "install-pi: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$ROLE" in
    table|jackpot) ;;
    *) echo "install-pi: --role must be table or jackpot, not '$ROLE'" >&2; exit 2 ;;
esac
[ -z "$RELEASE_KEY" ] || [ -n "$BUNDLE" ] || {
    echo "install-pi: --release-key checks a bundle: give --bundle FILE too" >&2; exit 2; }
if [ -n "$BUNDLE" ]; then
    [ -f "$BUNDLE" ] || { echo "install-pi: --bundle $BUNDLE: no such file" >&2; exit 2; }
    BUNDLE=$(cd "$(dirname "$BUNDLE")" && pwd)/$(basename "$BUNDLE")
fi

REPO=$(cd "$(dirname "$0")/.." && pwd)
SERVICE=$ROLE-controller                  # the user, the unit, /etc/$SERVICE, /var/lib/$SERVICE
PREFIX=/opt/table-controller              # both roles: one package, two console scripts
VENV=$PREFIX/venv
CONF_DIR=/etc/$SERVICE
DATA_DIR=/var/lib/$SERVICE
# Debian's own Python 3.11: the one apt's python3-lgpio and python3-venv are built for (not
# a python3 that another PATH finds first, such as pyenv's)
PYTHON=${PYTHON:-/usr/bin/python3}

say() { echo "install-pi: $*"; }
die() { echo "install-pi: $*" >&2; exit 1; }

if [ -n "$DESTDIR" ]; then
    mkdir -p "$DESTDIR"
    DESTDIR=$(cd "$DESTDIR" && pwd)
    [ "$DESTDIR" != / ] || die "--destdir / is the real system: leave --destdir out for that"
elif [ "$(id -u)" -ne 0 ]; then
    die "run it as root: sudo $0 $*"
fi

# A command that changes the system: run it, or with --destdir only say it.
system() {
    if [ -n "$DESTDIR" ]; then
        echo "would run: $*"
    else
        "$@"
    fi
}

# The same for a reload of a daemon that may not run yet (an image built in a chroot): a
# warning, not a failed install.
reload() {
    if [ -n "$DESTDIR" ]; then
        echo "would run: $*"
    elif ! "$@"; then
        say "warning: '$*' failed (is the system booted with systemd and udev?): run it later"
    fi
}

# -- the platform ---------------------------------------------------------------------------

MACHINE=$(uname -m)
ARCH=$(dpkg --print-architecture 2>/dev/null || echo unknown)
case "$MACHINE/$ARCH" in
    armv6*|armv7*|armv8l*|*/armhf|*/armel)
        die "this is a 32-bit ARM system ($MACHINE, $ARCH packages): not supported. PyPI has no \
armv7 wheels of OpenCV or numpy. Write Raspberry Pi OS Lite (64-bit), the bookworm release, \
to the disk and start again (hardware/install.md, step 1)." ;;
    aarch64/arm64) NOTE= ;;
    x86_64/amd64) NOTE="x86_64: accepted for testing; a table needs a Pi (no GPIO here)" ;;
    *) die "unsupported machine $MACHINE ($ARCH packages): a table needs 64-bit Raspberry Pi \
OS (aarch64); x86_64 Debian 12 is accepted for testing." ;;
esac
# shellcheck disable=SC1091
OS_ID=$(. /etc/os-release && echo "${ID:-}")
OS_VERSION=$(. /etc/os-release && echo "${VERSION_ID:-}")
case "$OS_ID/$OS_VERSION" in
    debian/12|raspbian/12) ;;
    *) die "this is $OS_ID $OS_VERSION: the pinned versions (constraints.txt) are for Debian 12 \
bookworm (Raspberry Pi OS bookworm 64-bit is Debian 12) with its Python 3.11." ;;
esac
[ -n "$NOTE" ] && say "note: $NOTE"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# -- the bundle, checked before anything is done (docs/release.md) ----------------------------

# A public key file (PEM, or the base64 line release.sh prints) as PEM in $2.
key_pem() {  # FILE OUT
    local text
    if grep -q 'BEGIN PUBLIC KEY' "$1" 2>/dev/null; then
        openssl pkey -pubin -in "$1" -out "$2" 2>/dev/null
        return
    fi
    text=$(tr -d ' \n\r' < "$1" 2>/dev/null) || return 1
    [ "$(printf '%s' "$text" | base64 -d 2>/dev/null | wc -c)" = 32 ] || return 1
    # SubjectPublicKeyInfo of Ed25519 (RFC 8410): a fixed 12-byte prefix, then the 32 bytes
    { printf '\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00'
      printf '%s' "$text" | base64 -d; } > "$2.der"
    openssl pkey -pubin -inform DER -in "$2.der" -out "$2" 2>/dev/null
}
fingerprint() {  # PEM: the raw public key in base64, as release.sh prints it
    openssl pkey -pubin -in "$1" -outform DER | tail -c 32 | base64 -w0
}

# Unpack $BUNDLE into $WORK, check its signature with the pinned key and every file's
# SHA-256, and set REPO to the checked files. Refuses naming the file that does not check.
RELEASE_DIR=$PREFIX/release
check_bundle() {
    command -v openssl >/dev/null || die "openssl checks the bundle's signature and is not \
installed: apt-get install --no-install-recommends openssl (from the OS archive), then again"
    mkdir "$WORK/bundle"
    tar -xf "$BUNDLE" -C "$WORK/bundle" --no-same-owner --no-same-permissions 2>"$WORK/tar.err" \
        || die "$BUNDLE: not a release bundle (tar: $(head -1 "$WORK/tar.err"))"
    local tops
    tops=$(ls -A "$WORK/bundle")
    [ "$(echo "$tops" | wc -l)" = 1 ] && [ -d "$WORK/bundle/$tops" ] \
        || die "$BUNDLE: not a release bundle (one folder table-controller-VERSION expected)"
    REPO=$WORK/bundle/$tops
    local name
    for name in MANIFEST.sha256 MANIFEST.sig release-key.pem; do
        [ -f "$REPO/$name" ] || die "$BUNDLE: $tops/$name is missing: not a signed release \
bundle (scripts/release.sh makes one)"
    done
    # the key: the one given, else the one kept by the last install, else (first install) the
    # bundle's own, said plainly
    local pinned=$WORK/pinned.pem source
    if [ -n "$RELEASE_KEY" ]; then
        key_pem "$RELEASE_KEY" "$pinned" || die "--release-key $RELEASE_KEY: not an Ed25519 \
public key (release-key.pem, or the base64 line scripts/release.sh printed)"
        source="--release-key $RELEASE_KEY"
    elif [ -f "$DESTDIR$RELEASE_DIR/release-key.pem" ]; then
        key_pem "$DESTDIR$RELEASE_DIR/release-key.pem" "$pinned" \
            || die "$RELEASE_DIR/release-key.pem: not an Ed25519 public key"
        source="$RELEASE_DIR/release-key.pem (the last install's; a new key needs --release-key)"
    else
        key_pem "$REPO/release-key.pem" "$pinned" \
            || die "$BUNDLE: $tops/release-key.pem: not an Ed25519 public key"
        source="the bundle's own: no --release-key given and none installed"
        say "warning: no release key pinned. Compare this one with the key the vendor gave you:"
        say "  $(fingerprint "$pinned")"
    fi
    openssl pkeyutl -verify -pubin -inkey "$pinned" -rawin -in "$REPO/MANIFEST.sha256" \
            -sigfile "$REPO/MANIFEST.sig" >/dev/null 2>&1 \
        || die "$BUNDLE: $tops/MANIFEST.sig: the signature of MANIFEST.sha256 does not verify \
with the release key $(fingerprint "$pinned") ($source): the bundle was altered or is not \
signed by that key. Nothing was installed; get the release from the vendor again."
    # every line a digest and a plain relative path; every file listed, nothing more
    local bad
    bad=$(grep -nvE '^[0-9a-f]{64}  [A-Za-z0-9_+-][A-Za-z0-9_./+-]*$' "$REPO/MANIFEST.sha256" \
        || true)$(grep -nE '/\.\.(/|$)' "$REPO/MANIFEST.sha256" || true)
    [ -z "$bad" ] || die "$BUNDLE: $tops/MANIFEST.sha256: a line that is not 'SHA256  PATH' \
inside the bundle: $(echo "$bad" | head -1)"
    (cd "$REPO" && find . ! -type d ! -name 'MANIFEST.sha256' ! -name 'MANIFEST.sig' \
        -printf '%P\n' | LC_ALL=C sort) > "$WORK/files"
    cut -c67- "$REPO/MANIFEST.sha256" | LC_ALL=C sort > "$WORK/listed"
    local extra missing
    extra=$(LC_ALL=C comm -23 "$WORK/files" "$WORK/listed" | head -5 | paste -sd' ')
    [ -z "$extra" ] || die "$BUNDLE: not in the signed manifest: $extra: refused (a file \
added to the bundle after it was signed)"
    missing=$(LC_ALL=C comm -13 "$WORK/files" "$WORK/listed" | head -5 | paste -sd' ')
    [ -z "$missing" ] || die "$BUNDLE: missing from the bundle: $missing: refused"
    local failed
    failed=$(cd "$REPO" && sha256sum -c MANIFEST.sha256 2>/dev/null | grep -v ': OK$' \
        | sed 's/: FAILED.*$//' | head -5 | paste -sd' ' || true)
    [ -z "$failed" ] || die "$BUNDLE: $failed: its SHA-256 differs from the signed \
MANIFEST.sha256: the file was altered. Nothing was installed; get the release from the vendor \
again."
    if ! cmp -s "$0" "$REPO/scripts/install-pi.sh"; then
        die "this install-pi.sh is not the bundle's: run the one it holds, \
$tops/scripts/install-pi.sh (tar -xf the bundle, then that script with --bundle)"
    fi
    say "bundle $(basename "$BUNDLE"): signature and $(wc -l < "$REPO/MANIFEST.sha256") \
files check (release key $source)"
}

# The manifest, its signature, the key and the lists of installed files (installed/, each
# listed in the manifest) under $PREFIX/release, for `verify`.
keep_release() {
    local name
    place_dir 0755 root:root "$RELEASE_DIR"
    for name in MANIFEST.sha256 MANIFEST.sig; do
        install -m 0644 "$REPO/$name" "$DESTDIR$RELEASE_DIR/$name"
    done
    rm -rf "$DESTDIR$RELEASE_DIR/installed"
    if [ -d "$REPO/installed" ]; then
        place_dir 0755 root:root "$RELEASE_DIR/installed"
        install -m 0644 "$REPO"/installed/*.sha256 "$DESTDIR$RELEASE_DIR/installed/"
    fi
    install -m 0644 "$WORK/pinned.pem" "$DESTDIR$RELEASE_DIR/release-key.pem"
    # the role installed: verify checks its list (a jackpot-controller on a table's install,
    # as the demo starts one, checks the table's)
    echo "$ROLE" > "$DESTDIR$RELEASE_DIR/ROLE"
    chmod 0644 "$DESTDIR$RELEASE_DIR/ROLE"
    say "kept the signed manifest and the release key in $RELEASE_DIR (for verify)"
}

if [ -n "$BUNDLE" ]; then
    check_bundle   # sets REPO to the checked files; refuses before anything is done
fi
say "installing the $ROLE role from ${BUNDLE:-$REPO}${DESTDIR:+ into $DESTDIR (scratch root)}"

# -- apt packages (hardware/install.md, section 2) --------------------------------------------

if [ "$ROLE" = table ]; then
    # libzbar0: pyzbar; mosquitto-clients, v4l-utils: checks. gpiozero's pin library lgpio
    # comes from PyPI's wheel (the pi extra; in a bundle) into the venv, not from
    # python3-lgpio, which only the Raspberry Pi OS archive has (plain Debian 12 lacks it)
    PACKAGES="python3-venv libzbar0 mosquitto-clients v4l-utils"
else
    PACKAGES="python3-venv mosquitto mosquitto-clients"
fi
# --no-install-recommends: libzbar0 alone recommends ImageMagick, Ghostscript, X11 and CUPS
if [ -n "$DESTDIR" ]; then
    system apt-get install -y --no-install-recommends $PACKAGES
else
    missing=
    for package in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" \
            || missing="$missing $package"
    done
    if [ -n "$missing" ]; then
        say "apt-get install$missing"
        if [ -n "$BUNDLE" ]; then
            # off-line: the OS's archive or the casino's mirror, if any is reachable
            apt-get update -qq || say "warning: apt-get update failed: the package lists at hand"
        else
            apt-get update -qq
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
            || die "apt-get could not install$missing: these come from the OS's archive (a \
bundle carries none); make it reachable (a local mirror) or install them first"
    fi
fi

# -- the service's user ----------------------------------------------------------------------

if [ "$ROLE" = table ]; then
    GROUPS_=gpio,i2c,dialout,video  # /dev/gpiochip*, /dev/i2c-* (the expanders), the serial ports and /dev/bj-shoe, /dev/video*
else
    GROUPS_=
fi
for group in ${GROUPS_//,/ }; do
    # gpio and i2c exist on Raspberry Pi OS; plain Debian lacks them, and the unit's
    # SupplementaryGroups= would refuse to start without it
    if [ -n "$DESTDIR" ]; then
        echo "would run (where there is no group $group): groupadd --system $group"
    elif ! getent group "$group" >/dev/null; then
        say "note: no group $group (Raspberry Pi OS has one): making it"
        groupadd --system "$group"
    fi
done
if [ -n "$DESTDIR" ] || ! getent passwd "$SERVICE" >/dev/null; then
    system useradd --system --user-group ${GROUPS_:+--groups "$GROUPS_"} --home-dir "$DATA_DIR" \
        --no-create-home --shell /usr/sbin/nologin "$SERVICE"
elif [ -n "$GROUPS_" ]; then
    usermod --append --groups "$GROUPS_" "$SERVICE"      # an upgrade: the groups kept right
fi

# -- directories -----------------------------------------------------------------------------

# install -d with a mode; the owner is set on the real system only (DESTDIR: printed).
place_dir() {  # MODE OWNER:GROUP PATH
    install -d -m "$1" "$DESTDIR$3"
    chmod "$1" "$DESTDIR$3"   # install -d leaves an existing directory's mode alone
    system chown "$2" "$3"
}
place_dir 0755 root:root "$PREFIX"
place_dir 0755 root:root "$CONF_DIR"
# the data: made now so check-config can test it is writable; systemd keeps it afterwards
# (StateDirectory=, 0750). Never emptied here.
place_dir 0750 "$SERVICE:$SERVICE" "$DATA_DIR"

# -- the venv --------------------------------------------------------------------------------

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "Python 3.11 or newer is needed; $PYTHON is $("$PYTHON" -V 2>&1)"
TARGET=$DESTDIR$VENV
if [ -x "$TARGET/bin/python" ] && ! "$TARGET/bin/python" -c '' 2>/dev/null; then
    say "the venv's Python no longer runs (a system upgrade?): making it again"
    rm -rf "$TARGET"
fi
# From a checkout the table's venv sees the system's packages (a python3-lgpio of Raspberry
# Pi OS); from a bundle it holds only the bundle's, every file of which verify can check.
SYSTEM_SITE=false
[ "$ROLE" = table ] && [ -z "$BUNDLE" ] && SYSTEM_SITE=true
if [ -f "$TARGET/pyvenv.cfg" ] \
        && ! grep -q "^include-system-site-packages = $SYSTEM_SITE" "$TARGET/pyvenv.cfg"; then
    say "the venv's include-system-site-packages is not $SYSTEM_SITE: making it again"
    rm -rf "$TARGET"
fi
if [ ! -x "$TARGET/bin/python" ]; then
    if [ "$SYSTEM_SITE" = true ]; then
        "$PYTHON" -m venv --system-site-packages "$TARGET"
    else
        "$PYTHON" -m venv "$TARGET"
    fi
    say "made the venv $VENV"
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_NO_INPUT=1
if [ -n "$BUNDLE" ]; then
    # the bundle's wheels only: no index, and no pip.conf or PIP_* naming another source
    export PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1
    unset PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_FIND_LINKS PIP_CONSTRAINT
    FROM=(--no-index --find-links "$REPO/wheels")
    WHEEL=$(echo "$REPO"/wheels/table_controller-*.whl)
    [ -f "$WHEEL" ] || die "$BUNDLE holds no table_controller wheel (wheels/)"
    # the last bundle install removed pip (below): the OS's copy back for this one
    "$TARGET/bin/python" -m pip --version >/dev/null 2>&1 \
        || "$TARGET/bin/python" -m ensurepip --default-pip >/dev/null
else
    "$TARGET/bin/python" -m pip install -q --upgrade pip
    FROM=()
    # The wheel, built from a copy: a build in the checkout would leave build/ behind, whose
    # stale files a later wheel could pick up. The backend at its pinned version.
    mkdir "$WORK/source"
    # the version is the checkout's git tag and commit (setuptools-scm, at its pinned version,
    # beside the venv); the copy has no .git, so it is told the version
    "$TARGET/bin/python" -m pip install -q --target "$WORK/scm" -c "$REPO/constraints.txt" \
        setuptools-scm vcs-versioning
    SCM_VERSION=$(cd "$REPO" && PYTHONPATH="$WORK/scm" "$TARGET/bin/python" \
        -c 'import setuptools_scm; print(setuptools_scm.get_version(root="."))') \
        || die "cannot tell the version from git in $REPO: install from a git checkout (with \
git installed), or from a release bundle (--bundle)"
    export SETUPTOOLS_SCM_PRETEND_VERSION_FOR_TABLE_CONTROLLER=$SCM_VERSION
    cp "$REPO/pyproject.toml" "$REPO/README.md" "$WORK/source/"
    for package in controller drivers jackpot; do
        (cd "$REPO" && tar --exclude=__pycache__ -cf - "$package") | tar -xf - -C "$WORK/source"
    done
    PIP_CONSTRAINT=$REPO/constraints.txt \
        "$TARGET/bin/python" -m pip wheel -q --no-deps --wheel-dir "$WORK/dist" "$WORK/source"
    WHEEL=$(echo "$WORK"/dist/table_controller-*.whl)
fi
# the table's Pi takes lgpio from PyPI's wheel (the pi extra), as plain Debian has no package
REQUIREMENT=$WHEEL
[ "$ROLE/$ARCH" = table/arm64 ] && REQUIREMENT="$WHEEL[pi]"
# the dependencies at the versions CI tested; then the project's own files replaced even when
# its version number did not change (an upgrade to a newer commit of the same version)
"$TARGET/bin/python" -m pip install -q "${FROM[@]}" -c "$REPO/constraints.txt" --upgrade \
    "$REQUIREMENT"
"$TARGET/bin/python" -m pip install -q "${FROM[@]}" --no-deps --force-reinstall "$WHEEL"
if [ -n "$BUNDLE" ]; then
    # pip is the OS's (python3 -m venv), not the bundle's: removed, so that every file in
    # site-packages is one the signed lists name and verify can report any other as added
    "$TARGET/bin/python" -m pip uninstall -q -y pip
    keep_release  # the manifest, its signature, the key and the lists, for verify
fi
say "installed $("$TARGET/bin/table-controller" --version 2>&1) in $VENV (not editable)"

# -- units, timers, the udev rule ------------------------------------------------------------

# Files of the software: replaced at every run (change a unit with systemctl edit, a drop-in).
place_file() {  # MODE SOURCE PATH
    install -D -m "$1" "$2" "$DESTDIR$3"
}
UNIT_DIR=/etc/systemd/system
for unit in "$SERVICE.service" "$SERVICE-backup.service" "$SERVICE-backup.timer"; do
    place_file 0644 "$REPO/systemd/$unit" "$UNIT_DIR/$unit"
done
say "units in $UNIT_DIR: $SERVICE.service, $SERVICE-backup.service, $SERVICE-backup.timer"

# Files of the technician: put in place once, never overwritten.
KEPT=
place_once() {  # MODE OWNER:GROUP SOURCE PATH
    if [ -e "$DESTDIR$4" ] || [ -L "$DESTDIR$4" ]; then
        KEPT="$KEPT $4"
        if [ -f "$3" ] && ! cmp -s "$3" "$DESTDIR$4"; then
            say "kept $4 (yours; the shipped one is $3)"
        else
            say "kept $4"
        fi
        return
    fi
    install -D -m "$1" "$3" "$DESTDIR$4"
    system chown "$2" "$4"
    say "new $4"
}
if [ "$ROLE" = table ]; then
    # its serial number is the technician's (hardware/serial.md): the rule is theirs once placed
    place_once 0644 root:root "$REPO/systemd/99-bj-shoe.rules" /etc/udev/rules.d/99-bj-shoe.rules
    place_once 0640 root:"$SERVICE" "$REPO/config/table.example.toml" "$CONF_DIR/table.toml"
else
    place_once 0640 root:"$SERVICE" "$REPO/config/jackpot.example.toml" "$CONF_DIR/jackpot.toml"
fi
# the broker password: an empty file with the right owner and mode, for the technician to fill
place_once 0640 root:"$SERVICE" /dev/null "$CONF_DIR/mqtt-password"

if [ "$ROLE" = table ]; then
    reload udevadm control --reload
    reload udevadm trigger --subsystem-match=tty
fi
reload systemctl daemon-reload

# -- what is left ----------------------------------------------------------------------------

BIN=$VENV/bin
# (quiet where systemd is not running: an image built in a chroot, scripts/arm64-check.sh)
if [ -z "$DESTDIR" ] && systemctl is-active --quiet "$SERVICE" 2>/dev/null; then
    RUNNING="
!! $SERVICE is running the version it started with. Restart it between rounds to run this one:
   sudo systemctl restart $SERVICE"
else
    RUNNING=
fi
if [ "$ROLE" = table ]; then
    cat <<EOF

Installed. Left for the technician (hardware/install.md, sections 3, 6, 7, 8):
 1. The serial console off (sudo raspi-config > Interface Options > Serial Port), reboot.
 2. The shoe's port: put the adapter's serial number (or the UART line) in
    /etc/udev/rules.d/99-bj-shoe.rules (hardware/serial.md), then
      sudo udevadm control --reload && sudo udevadm trigger --subsystem-match=tty
      ls -lL /dev/bj-shoe
 3. The config: sudo nano $CONF_DIR/table.toml
    [table] id, property, spots, limits; [shoe] url; the [gpio] pin map as wired
    (hardware/pinout.md); [camera]; [mqtt] host and controller_keys; [web].
 4. The broker password (one line): sudo nano $CONF_DIR/mqtt-password
    The link's CA: sudo install -m 0644 ca.crt $CONF_DIR/ca.crt
 5. The link key, sent to whoever runs the jackpot controller:
      sudo $BIN/table-controller link-key --config $CONF_DIR/table.toml --owner $SERVICE
 6. The diagnostics page's accounts, one per person (roles technician, supervisor,
    auditor; each asks for the password twice; docs/web.md, "Accounts"):
      sudo $BIN/table-controller user add NAME --role technician --config $CONF_DIR/table.toml
 7. Check, until it says ok:
      sudo -u $SERVICE $BIN/table-controller check-config $CONF_DIR/table.toml
 8. Start it now and at every boot, and the daily journal backup:
      sudo systemctl enable --now $SERVICE $SERVICE-backup.timer
      systemctl status $SERVICE
EOF
else
    cat <<EOF

Installed. Left for the technician (hardware/install.md, "The jackpot controller's host"):
 1. The broker: config/mosquitto/README.md (mosquitto.conf, acl, users, TLS certificates).
 2. The config: sudo nano $CONF_DIR/jackpot.toml (pools, properties, tables and their keys)
 3. The broker password (one line): sudo nano $CONF_DIR/mqtt-password
 4. The controller's link key, once for the whole link:
      sudo $BIN/jackpot-controller link-key --out $CONF_DIR/link-signing.key --key-id jackpot-1 --owner $SERVICE
 5. Check, until it says ok:
      $BIN/jackpot-controller check-config $CONF_DIR/jackpot.toml
 6. Start it now and at every boot, and the daily ledger backup:
      sudo systemctl enable --now $SERVICE $SERVICE-backup.timer
      systemctl status $SERVICE
EOF
fi
[ -z "$KEPT" ] || echo "Kept as they were:$KEPT"
[ -z "$RUNNING" ] || echo "$RUNNING"
if [ -n "$DESTDIR" ]; then
    echo "(A scratch root: the venv under $DESTDIR works in place but is not relocatable.)"
fi
