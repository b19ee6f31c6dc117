#!/usr/bin/env bash
# Build the signed release bundle, on a machine with PyPI: one file
# dist/table-controller-VERSION.tar holding the project's wheel, every pinned dependency's
# wheels for aarch64 (the Pi, with lgpio) and x86_64 (CPython 3.11, constraints.txt), the
# build backend (setuptools, pinned), the systemd units and udev rule, the example configs, the
# game profiles, the install script, the vendor's public key (release-key.pem), MANIFEST.sha256
# (every file's SHA-256, sha256sum format) and MANIFEST.sig (Ed25519 over MANIFEST.sha256 by
# the release key). A table installs it off-line with scripts/install-pi.sh --bundle FILE.
#
#   bash scripts/release.sh [--key FILE] [--out DIR]
#
# --key: the vendor's release key, an Ed25519 private key in PKCS#8 PEM (mode 0600; make one
# with: openssl genpkey -algorithm ed25519 -out release.key); default $TABLE_CONTROLLER_RELEASE_KEY.
# The public key is printed for the casino to pin (install-pi.sh --release-key). docs/release.md
# says how a release is built, signed and verified (58 Pa. Code 605a.4(c); N.J.A.C.
# 13:69E-1.28B(d)). --out: the folder for the bundle (default dist/ in the checkout).
set -euo pipefail
umask 022

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit "${1:-0}"
}

KEY=${TABLE_CONTROLLER_RELEASE_KEY:-}
OUT_DIR=
while [ $# -gt 0 ]; do
    case "$1" in
        --key) KEY=${2:-}; shift 2 || usage 2 ;;
        --key=*) KEY=${1#*=}; shift ;;
        --out) OUT_DIR=${2:-}; shift 2 || usage 2 ;;
        --out=*) OUT_DIR=${1#*=}; shift ;;
        -h|--help) usage 0 ;;
        *) echo "release: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

say() { echo "release: $*"; }
die() { echo "release: $*" >&2; exit 1; }

[ -n "$KEY" ] || die "no release key: give --key FILE (an Ed25519 private key in PEM; make one \
with 'openssl genpkey -algorithm ed25519 -out release.key', keep it off-line; docs/release.md)"
[ -r "$KEY" ] || die "--key $KEY: no such file, or not readable"
command -v openssl >/dev/null || die "openssl is needed to sign: apt-get install openssl"
openssl pkey -in "$KEY" -noout -text 2>/dev/null | head -1 | grep -q ED25519 \
    || die "--key $KEY: not an Ed25519 private key in PEM (make one with 'openssl genpkey \
-algorithm ed25519 -out release.key')"

REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# the build backend at the version constraints.txt pins, in the build's isolated environment too
export PIP_CONSTRAINT=$REPO/constraints.txt

# -- the project's wheel, built from a copy (no build/ left in the checkout) -------------------

mkdir "$WORK/source" "$WORK/wheel"
# the version comes from the checkout's git tag and commit (setuptools-scm, issue 29 item 1); the
# copy has no .git, so it is told the version the checkout has
SCM_VERSION=$(cd "$REPO" && for py in "$PYTHON" "$REPO/.venv/bin/python"; do
    "$py" -c 'import setuptools_scm; print(setuptools_scm.get_version(root="."))' 2>/dev/null \
        && break
done) || true
[ -n "$SCM_VERSION" ] || die "cannot tell the version from git: run from a git checkout with \
setuptools-scm installed (scripts/setup.sh --test, or pip install setuptools-scm==10.3.4)"
export SETUPTOOLS_SCM_PRETEND_VERSION_FOR_TABLE_CONTROLLER=$SCM_VERSION
cp "$REPO/pyproject.toml" "$REPO/README.md" "$WORK/source/"
for package in controller drivers jackpot; do
    (cd "$REPO" && tar --exclude=__pycache__ -cf - "$package") | tar -xf - -C "$WORK/source"
done
"$PYTHON" -m pip wheel -q --no-deps --wheel-dir "$WORK/wheel" "$WORK/source"
WHEEL=$(echo "$WORK"/wheel/table_controller-*.whl)
[ -f "$WHEEL" ] || die "the wheel was not built"
VERSION=$(basename "$WHEEL" | sed -E 's/^table_controller-([^-]+)-.*/\1/')
NAME=table-controller-$VERSION
B=$WORK/$NAME
mkdir -p "$B/wheels"
cp "$WHEEL" "$B/wheels/"
say "built $(basename "$WHEEL")"

# -- every pinned dependency, wheels only, for both machines ---------------------------------

unset PIP_CONSTRAINT
platforms() {  # ARCH: pip's options for CPython 3.11 wheels of that machine
    local tag
    # Debian 12 has glibc 2.36: every manylinux tag up to it
    for tag in manylinux2014 manylinux_2_17 manylinux_2_24 manylinux_2_27 manylinux_2_28 \
            manylinux_2_31 manylinux_2_34 manylinux_2_35 manylinux_2_36; do
        echo "--platform=${tag}_$1"
    done
    echo --python-version=3.11 --implementation=cp --only-binary=:all:
}
download() {  # ARCH REQUIREMENT...
    local arch=$1
    shift
    # shellcheck disable=SC2046
    "$PYTHON" -m pip download -q $(platforms "$arch") \
        -c "$REPO/constraints.txt" -d "$B/wheels" "$@" \
        || die "pip download for $arch failed (above): every pin needs a CPython 3.11 wheel \
for $arch on PyPI"
}
# the Pi: lgpio (the pi extra) from the bundle, for Debian without the Raspberry Pi archive
download aarch64 "$WHEEL[pi]" setuptools setuptools-scm vcs-versioning
download x86_64 "$WHEEL" setuptools setuptools-scm vcs-versioning
for arch in aarch64 x86_64; do
    for package in numpy cryptography lgpio; do
        [ "$arch/$package" = x86_64/lgpio ] && continue
        ls "$B"/wheels/"$package"-*"$arch"*.whl >/dev/null 2>&1 \
            || die "no $arch wheel of $package in the bundle"
    done
done
say "$(ls "$B/wheels" | wc -l) wheels (aarch64 and x86_64, CPython 3.11)"

# -- the files around the venv -----------------------------------------------------------------

install -D -m 0755 "$REPO/scripts/install-pi.sh" "$B/scripts/install-pi.sh"
install -m 0644 "$REPO/constraints.txt" "$B/constraints.txt"
(cd "$REPO" && tar --exclude=__pycache__ -cf - systemd config) | tar -xf - -C "$B"
mkdir "$B/profiles"
cp "$REPO"/controller/profiles/*.toml "$B/profiles/"
openssl pkey -in "$KEY" -pubout -out "$B/release-key.pem"

# -- what each role installs on each machine, for verify (controller/release_files.py) -------

# pip's own choice of wheels from the bundle (as install-pi.sh installs them), then every file
# those wheels put in site-packages and the role's units: installed/ROLE-MACHINE.sha256
mkdir "$B/installed"
for arch in aarch64 x86_64; do
    for role in table jackpot; do
        requirement=$B/wheels/$(basename "$WHEEL")
        [ "$role/$arch" = table/aarch64 ] && requirement="$requirement[pi]"
        # shellcheck disable=SC2046
        "$PYTHON" -m pip install -q --dry-run --ignore-installed --target "$WORK/none" \
            --report "$WORK/report.json" --no-index --find-links "$B/wheels" $(platforms "$arch") \
            -c "$REPO/constraints.txt" "$requirement" \
            || die "pip cannot resolve the $role role's install for $arch from the bundle (above)"
        PYTHONPATH=$REPO "$PYTHON" -m controller.release_files list --report "$WORK/report.json" \
            --unit-dir "$B/systemd" --role "$role" > "$B/installed/$role-$arch.sha256" \
            || die "cannot list the files the $role role installs on $arch (above)"
    done
done
say "installed/: the files each role installs on each machine, $(cat "$B"/installed/* | wc -l) lines"
chmod -R u=rwX,go=rX "$B"

# -- the manifest and its signature ------------------------------------------------------------

(cd "$B" && find . -type f ! -name 'MANIFEST.*' -printf '%P\n' | LC_ALL=C sort \
    | xargs -d '\n' sha256sum) > "$WORK/MANIFEST.sha256"
mv "$WORK/MANIFEST.sha256" "$B/MANIFEST.sha256"
openssl pkeyutl -sign -inkey "$KEY" -rawin -in "$B/MANIFEST.sha256" -out "$B/MANIFEST.sig"
openssl pkeyutl -verify -pubin -inkey "$B/release-key.pem" -rawin -in "$B/MANIFEST.sha256" \
    -sigfile "$B/MANIFEST.sig" >/dev/null || die "the signature just made does not verify"
chmod 0644 "$B/MANIFEST.sha256" "$B/MANIFEST.sig"

OUT_DIR=${OUT_DIR:-$REPO/dist}
mkdir -p "$OUT_DIR"
OUT=$(cd "$OUT_DIR" && pwd)/$NAME.tar
tar --sort=name --owner=0 --group=0 --numeric-owner -cf "$OUT.part" -C "$WORK" "$NAME"
mv "$OUT.part" "$OUT"

PUBLIC=$(openssl pkey -pubin -in "$B/release-key.pem" -outform DER | tail -c 32 | base64 -w0)
MANIFEST_SHA=$(sha256sum "$B/MANIFEST.sha256" | cut -d' ' -f1)
cat <<EOF
release: $OUT
  files:      $(wc -l < "$B/MANIFEST.sha256") in MANIFEST.sha256, signed in MANIFEST.sig (Ed25519)
  build id:   $VERSION (manifest sha256:$MANIFEST_SHA)
  bundle:     sha256 $(sha256sum "$OUT" | cut -d' ' -f1)
The release key's public key, for the casino to pin (install-pi.sh --release-key FILE, a file
holding this line or release-key.pem):
  $PUBLIC
EOF
