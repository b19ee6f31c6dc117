#!/usr/bin/env bash
# The check on the real platform (issue 29 item 7): build a Debian 12 (bookworm) arm64 root
# with debootstrap and qemu-user, build the signed release bundle (scripts/release.sh), install
# it in the root with install-pi.sh --bundle and no network, then run there `table-controller
# games`, `par-sheet`, `demo --rounds 3` and `verify` (skipped with a note where this branch
# has no verify). Each step's time is printed; the last line is a key=value summary.
#
#   sudo bash scripts/arm64-check.sh [--cache DIR] [--work DIR] [--key FILE] [--mirror URL]
#                                    [--root-only]
#
# --cache DIR: where the root's tarball is kept, so a second run skips debootstrap (default
# /var/cache/table-controller-arm64). --work DIR: where the root is unpacked, afresh at every
# run (default /var/tmp/table-controller-arm64). --key: the release key to sign with (default:
# a throwaway key made for this run). --mirror: the Debian archive (default
# http://deb.debian.org/debian). --root-only: build or refresh the cached root and stop.
#
# Root only (apt, binfmt_misc, chroot). Not run in CI: a debootstrap under emulation takes about
# 30 minutes. The root has the OS's packages install-pi.sh asks for (installed while it is
# built, as a casino's image or mirror would); the bundle brings every Python package. It
# stands for the lab's and the field's check that the approved build installs and runs on the
# table's platform (58 Pa. Code 605a.4(c); N.J.A.C. 13:69E-1.28B(d)).
set -euo pipefail
umask 022

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit "${1:-0}"
}

CACHE=/var/cache/table-controller-arm64
WORK=/var/tmp/table-controller-arm64
KEY=
MIRROR=http://deb.debian.org/debian
ROOT_ONLY=
while [ $# -gt 0 ]; do
    case "$1" in
        --cache) CACHE=${2:-}; shift 2 || usage 2 ;;
        --cache=*) CACHE=${1#*=}; shift ;;
        --work) WORK=${2:-}; shift 2 || usage 2 ;;
        --work=*) WORK=${1#*=}; shift ;;
        --key) KEY=${2:-}; shift 2 || usage 2 ;;
        --key=*) KEY=${1#*=}; shift ;;
        --mirror) MIRROR=${2:-}; shift 2 || usage 2 ;;
        --mirror=*) MIRROR=${1#*=}; shift ;;
        --root-only) ROOT_ONLY=1; shift ;;
        -h|--help) usage 0 ;;
        *) echo "arm64-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

say() { echo "arm64-check: $*"; }
die() { echo "arm64-check: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run it as root (apt, binfmt_misc, chroot): sudo bash $0 $*"
[ -z "$KEY" ] || [ -f "$KEY" ] || die "--key $KEY: no such file (an Ed25519 private key, PEM)"
REPO=$(cd "$(dirname "$0")/.." && pwd)
[ -z "$KEY" ] || KEY=$(cd "$(dirname "$KEY")" && pwd)/$(basename "$KEY")
mkdir -p "$CACHE" "$WORK"
CACHE=$(cd "$CACHE" && pwd)
WORK=$(cd "$WORK" && pwd)
ROOT=$WORK/root
case "$ROOT" in /|/root|/usr*|/etc*|/dev*|/proc*|/sys*) die "--work $WORK: not a scratch folder" ;; esac

# The OS packages install-pi.sh installs (both roles), openssl (it checks the signature),
# ca-certificates, and systemd and udev as on a real system (their commands in a chroot only
# say they are ignored); no recommends (debootstrap takes none). The tarball's name carries a digest
# of this list, so a changed list builds a new root.
PACKAGES="python3,python3-venv,libzbar0,mosquitto,mosquitto-clients,v4l-utils,openssl,ca-certificates,systemd,udev"
TARBALL=$CACHE/bookworm-arm64-$(printf '%s %s' "$PACKAGES" "$MIRROR" | sha256sum | cut -c1-12).tar.gz

STEPS=
step_start() { STEP=$1; T0=$(date +%s); say "== $1"; }
step_end() {
    local s=$(( $(date +%s) - T0 ))
    say "== $STEP: ${s}s"
    STEPS="$STEPS ${STEP}_s=$s"
}
RESULT=failed
FAILED_AT=
summary() {
    echo "arm64-check:${STEPS}${FAILED_AT:+ failed_at=$FAILED_AT} result=$RESULT"
}

# -- mounts, undone on any exit ------------------------------------------------------------------

MOUNTS=()
mount_in() {  # TYPE-or---bind SOURCE TARGET
    mkdir -p "$3"
    # shellcheck disable=SC2086  # SOURCE may carry options: "-o ro sysfs"
    if [ "$1" = --bind ]; then mount --bind "$2" "$3"; else mount -t "$1" $2 "$3"; fi
    MOUNTS+=("$3")
}
unmount_all() {
    local i
    for (( i=${#MOUNTS[@]}-1; i>=0; i-- )); do
        umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}" \
            || say "warning: could not unmount ${MOUNTS[$i]}"
    done
    MOUNTS=()
}
mounted_under() { findmnt -rno TARGET | grep -E "^$1(/|$)" || true; }
on_exit() {
    local rc=$?
    unmount_all
    [ -z "${STEP:-}" ] || [ "$RESULT" = ok ] || FAILED_AT=$STEP
    [ -n "$ROOT_ONLY" ] && [ "$rc" = 0 ] && RESULT=ok
    summary
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# A root with nothing mounted under it, removed (never through a mount: --one-file-system).
remove_root() {
    local left
    left=$(mounted_under "$ROOT")
    [ -z "$left" ] || die "still mounted under $ROOT: $left: unmount them (umount -l), then again"
    rm -rf --one-file-system "$ROOT"
}

# -- the host ------------------------------------------------------------------------------------

step_start host
need=
command -v debootstrap >/dev/null || need="$need debootstrap"
command -v qemu-aarch64-static >/dev/null || need="$need qemu-user-static"
command -v update-binfmts >/dev/null || need="$need binfmt-support"
command -v unshare >/dev/null || need="$need util-linux"
command -v ip >/dev/null || need="$need iproute2"
if [ -n "$need" ]; then
    say "apt-get install$need"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need
fi
mountpoint -q /proc/sys/fs/binfmt_misc \
    || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc \
    || die "could not mount binfmt_misc on /proc/sys/fs/binfmt_misc (a container without it?)"
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 \
    || die "update-binfmts --enable qemu-aarch64 failed: is qemu-user-static installed?"
grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 \
    || die "binfmt_misc qemu-aarch64 is disabled: update-binfmts --enable qemu-aarch64"
# flag F: the interpreter is opened when registered, so it runs inside the root too
FIX_BINARY=$(sed -n 's/^flags: .*F.*/yes/p' /proc/sys/fs/binfmt_misc/qemu-aarch64)
say "qemu-aarch64 registered (interpreter $(sed -n 's/^interpreter //p' \
    /proc/sys/fs/binfmt_misc/qemu-aarch64), fix-binary ${FIX_BINARY:-no})"
step_end

# -- the arm64 root ------------------------------------------------------------------------------

if [ ! -f "$TARBALL" ]; then
    step_start debootstrap
    remove_root
    rm -rf --one-file-system "$WORK/root.new"
    debootstrap --arch=arm64 --variant=minbase --include="$PACKAGES" bookworm \
        "$WORK/root.new" "$MIRROR"
    # the host's CA certificates (a network that re-signs TLS) for anything in the root that
    # fetches over https while it is built; the check itself runs with no network
    if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$WORK/root.new/usr/local/share/ca-certificates/"
        chroot "$WORK/root.new" update-ca-certificates >/dev/null
    fi
    chroot "$WORK/root.new" apt-get clean
    rm -f "$WORK/root.new/etc/resolv.conf"   # no name service inside: nothing resolves
    tar -C "$WORK/root.new" --numeric-owner -czf "$TARBALL.part" .
    mv "$TARBALL.part" "$TARBALL"
    find "$CACHE" -maxdepth 1 -name 'bookworm-arm64-*.tar.gz' ! -path "$TARBALL" -delete
    rm -rf --one-file-system "$WORK/root.new"
    step_end
else
    say "cached root: $TARBALL (remove it to build a new one)"
fi
if [ -n "$ROOT_ONLY" ]; then
    STEP=
    exit 0
fi

step_start unpack
remove_root
mkdir -p "$ROOT"
tar -C "$ROOT" --numeric-owner -xzf "$TARBALL"
rm -f "$ROOT/etc/resolv.conf"
if [ -z "$FIX_BINARY" ]; then
    # without flag F the kernel looks for the interpreter inside the root
    mkdir -p "$ROOT/$(dirname "$(sed -n 's/^interpreter //p' /proc/sys/fs/binfmt_misc/qemu-aarch64)")"
    cp "$(sed -n 's/^interpreter //p' /proc/sys/fs/binfmt_misc/qemu-aarch64)" \
        "$ROOT/$(sed -n 's/^interpreter //p' /proc/sys/fs/binfmt_misc/qemu-aarch64)"
fi
say "$(chroot "$ROOT" uname -m) root, $(chroot "$ROOT" /usr/bin/python3 --version), \
$(. "$ROOT/etc/os-release" && echo "$PRETTY_NAME")"
step_end

# -- the bundle ----------------------------------------------------------------------------------

step_start bundle
OUT=$WORK/dist
rm -rf "$OUT"
mkdir -p "$OUT"
if [ -z "$KEY" ]; then
    KEY=$WORK/throwaway-release.key
    rm -f "$KEY"
    (umask 077 && openssl genpkey -algorithm ed25519 -out "$KEY")
    say "signing with a throwaway release key ($KEY): a check, not a release"
fi
bash "$REPO/scripts/release.sh" --key "$KEY" --out "$OUT"
BUNDLE=$(ls "$OUT"/table-controller-*.tar)
[ "$(echo "$BUNDLE" | wc -l)" = 1 ] || die "release.sh left more than one bundle in $OUT"
openssl pkey -in "$KEY" -pubout -out "$WORK/release-key.pem"
mkdir -p "$ROOT/root/release"
cp "$BUNDLE" "$WORK/release-key.pem" "$ROOT/root/release/"
say "bundle $(basename "$BUNDLE"), $(( $(stat -c %s "$BUNDLE") / 1024 / 1024 )) MiB"
step_end

# -- inside the root, with no network ------------------------------------------------------------

mount_in proc proc "$ROOT/proc"
# /sys read-only: the installer's udevadm trigger must not reach the host's devices
mount_in sysfs "-o ro sysfs" "$ROOT/sys"
mount_in --bind /dev "$ROOT/dev"
mount_in devpts devpts "$ROOT/dev/pts" 2>/dev/null || true

# in the root, in a network namespace of its own with only a loopback (the demo's broker
# listens on 127.0.0.1): anything that tries the network fails, and the check below proves it
inside() {
    unshare --net /bin/sh -c 'ip link set lo up && exec "$@"' sh \
        chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
        PATH=/opt/table-controller/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

step_start no_network
if inside /usr/bin/python3 - <<'EOF'
import socket
for host, port in (("deb.debian.org", 80), ("151.101.0.223", 443), ("1.1.1.1", 53)):
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as e:
        print(f"{host}:{port}: unreachable ({e.__class__.__name__}: {e})")
    else:
        raise SystemExit(f"{host}:{port}: reached: the root has network")
EOF
then NETWORK=none; else die "the root reaches the network: the check would not be off-line"; fi
step_end

BNAME=$(basename "$BUNDLE")
step_start install
inside /bin/sh -c "cd /root/release && rm -rf ${BNAME%.tar} && tar -xf $BNAME \
    && bash ${BNAME%.tar}/scripts/install-pi.sh --bundle /root/release/$BNAME \
       --release-key /root/release/release-key.pem"
step_end

step_start version
inside table-controller --version
step_end

# the compiled wheels load on aarch64: lgpio (PyPI's, for gpiozero), OpenCV and libzbar0
# (the camera), numpy, cryptography (the link's signatures); no GPIO chip is opened
step_start libraries
inside python - <<'EOF'
from importlib.metadata import version

import cryptography.hazmat.primitives.asymmetric.ed25519, cv2, gpiozero, lgpio, numpy  # noqa
from pyzbar import pyzbar  # loads libzbar0

names = "lgpio gpiozero opencv-python-headless numpy cryptography pyzbar".split()
print("loaded:", ", ".join(f"{name} {version(name)}" for name in names))
EOF
step_end

step_start games
inside table-controller games
step_end

step_start par_sheet
inside table-controller par-sheet
step_end

# The demo runs from a checkout (it reads config/mosquitto and config/jackpot.example.toml
# beside the package; an installed wheel has none): the bundle's wheel unpacked with the
# bundle's config/ beside it, on the installed venv's Python and packages
step_start demo
inside /bin/sh -ec "rm -rf /root/demo-tree && mkdir -p /root/demo-tree && cd /root/demo-tree \
    && python -m zipfile -e /root/release/${BNAME%.tar}/wheels/table_controller-*.whl . \
    && cp -r /root/release/${BNAME%.tar}/config . \
    && PYTHONPATH=/root/demo-tree python -m controller demo --rounds 3 --seed 29 --web-port 0"
step_end

COMMANDS=$(inside table-controller --help 2>&1 || true)
if grep -qE '^\s+verify\b|[{,]verify[,}]' <<<"$COMMANDS"; then
    step_start verify
    inside table-controller verify
    step_end
else
    say "note: this branch's table-controller has no verify command (issue 29 item 4 adds it): skipped"
    STEPS="$STEPS verify=absent"
fi

unmount_all
STEP=
RESULT=ok
