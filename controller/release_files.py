"""The files a release bundle installs, for ``verify`` (issue 29 item 4; docs/release.md).

The signed ``MANIFEST.sha256`` names the bundle's files (wheels, units), not the installed
ones. So ``scripts/release.sh`` also writes, for each role and machine, ``installed/ROLE-
MACHINE.sha256`` (``sha256sum`` format, covered by the manifest and so by its signature):
every file pip puts in ``site-packages`` from the wheels that role installs on that machine,
as ``site-packages/PATH``, and the role's systemd units as ``etc/systemd/system/UNIT``.
Left out: what pip writes itself (``RECORD``, ``INSTALLER``, ``REQUESTED``,
``direct_url.json``, console scripts) and ``*.pyc``. The technician's files (configs, the
shoe's udev rule) are theirs and not listed.

The challenge (``verify --challenge SEED``) is an HMAC-SHA256 keyed by the seed over the
manifest and every listed file, path and content, in list order: a table must hold the files
to answer it, so an inspector need not trust its plain digests (58 Pa. Code 605a.4(c);
N.J.A.C. 13:69E-1.28B(d)). :func:`bundle_challenge` computes the expected value from the
bundle alone. Standard library only: ``release.sh`` runs this module with the build
machine's Python (``python3 -m controller.release_files``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import io
import json
import re
import sys
import tarfile
import urllib.parse
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

ROLES = ("table", "jackpot")
MACHINES = ("aarch64", "x86_64")
SITE = "site-packages/"
UNIT_DIR = "etc/systemd/system/"
#: Written by pip at install time, so not the wheel's bytes.
PIP_WRITES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})


class ReleaseError(ValueError):
    """A bundle or list that does not check; the message names the file."""


def list_name(role: str, machine: str) -> str:
    """The list's path in the bundle and in the release folder."""
    return f"installed/{role}-{machine}.sha256"


def units(role: str) -> tuple[str, ...]:
    """The systemd units ``install-pi.sh`` replaces at every install of ``role``."""
    service = f"{role}-controller"
    return (f"{service}.service", f"{service}-backup.service", f"{service}-backup.timer")


def installed_path(member: str) -> str | None:
    """Where pip puts a wheel's member, relative to site-packages, or None (not listed).

    >>> installed_path("numpy/__init__.py")
    'numpy/__init__.py'
    >>> installed_path("x-1.data/purelib/x.py"), installed_path("x-1.data/scripts/x")
    ('x.py', None)
    >>> installed_path("x-1.dist-info/RECORD"), installed_path("x/__pycache__/a.cpython-311.pyc")
    (None, None)
    """
    if member.endswith("/") or member.endswith(".pyc"):
        return None
    parts = PurePosixPath(member).parts
    if parts[0].endswith(".data"):
        if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
            return None  # scripts, headers, data: outside site-packages
        parts = parts[2:]
    if parts[0].endswith(".dist-info") and len(parts) == 2 and parts[1] in PIP_WRITES:
        return None
    return "/".join(parts)


def wheel_files(zf: zipfile.ZipFile) -> Iterator[tuple[str, bytes]]:
    """(site-packages path, bytes) of each file pip installs from an open wheel."""
    for member in zf.namelist():
        path = installed_path(member)
        if path is not None:
            yield path, zf.read(member)


def sha256sum_lines(entries: Iterable[tuple[str, bytes]]) -> str:
    return "".join(f"{hashlib.sha256(data).hexdigest()}  {path}\n" for path, data in entries)


def parse_sha256sum(text: str, source: str) -> list[tuple[str, str]]:
    """[(path, hex digest)] in file order; a bad line raises naming ``source`` and the line."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        m = re.fullmatch(r"([0-9a-f]{64})  ([^\n]+)", line)
        if m is None or ".." in PurePosixPath(m.group(2)).parts or m.group(2).startswith("/"):
            raise ReleaseError(f"{source}, line {number}: not 'SHA256  PATH': {line[:80]!r}")
        out.append((m.group(2), m.group(1)))
    return out


def make_list(wheels: list[Path], unit_dir: Path, role: str) -> str:
    """The installed list of ``role`` for the wheels pip installs (from its install report)."""
    entries: dict[str, bytes] = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            files = list(wheel_files(zf))
        for path, data in files:
            if SITE + path in entries:
                raise ReleaseError(f"{wheel.name}: {path} is also in another wheel")
            entries[SITE + path] = data
    for unit in units(role):
        entries[UNIT_DIR + unit] = (unit_dir / unit).read_bytes()
    return sha256sum_lines(sorted(entries.items()))


def challenge(seed: str, files: Iterable[tuple[str, bytes | None]]) -> str:
    """HMAC-SHA256 keyed by ``seed`` over each (path, content): the path, a NUL, the length
    in decimal (``-`` for a missing file), a NUL, the content.

    >>> challenge("s", [("a", b"x")]) == challenge("s", [("a", b"y")])
    False
    """
    mac = hmac.new(seed.encode(), digestmod=hashlib.sha256)
    for path, data in files:
        mac.update(path.encode() + b"\0")
        mac.update(b"-\0" if data is None else str(len(data)).encode() + b"\0" + data)
    return mac.hexdigest()


def verify_signature(manifest: bytes, signature: bytes, key_pem: bytes, where: str) -> None:
    """Ed25519 over the manifest with the key (PEM); raises naming ``where``/MANIFEST.sig."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(key_pem)
    except ValueError as exc:
        raise ReleaseError(f"{where}/release-key.pem: not a public key in PEM ({exc})") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise ReleaseError(f"{where}/release-key.pem: not an Ed25519 key")
    try:
        key.verify(signature, manifest)
    except InvalidSignature:
        raise ReleaseError(
            f"{where}/MANIFEST.sig: the signature of MANIFEST.sha256 does not verify with the "
            f"release key {key_line(key_pem)}: the manifest was altered or is not the "
            "vendor's; nothing it lists can be trusted"
        ) from None


def key_pem(data: bytes) -> bytes:
    """A public key file as PEM: ``release-key.pem``, or the line ``release.sh`` printed."""
    if b"BEGIN PUBLIC KEY" in data:
        return data
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(data.strip(), validate=True))
    except ValueError as exc:
        raise ReleaseError("the release key: neither release-key.pem nor the base64 line "
                           f"release.sh printed ({exc})") from exc  # fmt: skip
    return key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)


def key_line(key_pem: bytes) -> str:
    """The public key as the one base64 line ``release.sh`` prints."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_public_key,
    )

    raw = load_pem_public_key(key_pem).public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def bundle_challenge(
    bundle: Path, role: str, machine: str, seed: str, key_pem: bytes | None = None
) -> str:
    """The challenge's expected answer for a table of ``role`` on ``machine``, from the
    bundle alone, after checking its signature (with ``key_pem``, else the bundle's own key)
    and that every file it hashes has the digest the signed lists give."""
    with tarfile.open(bundle) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if m.isfile()}

        def read(name: str) -> bytes:
            if name not in members:
                raise ReleaseError(f"{bundle}: {name} is missing: not a release bundle")
            return tar.extractfile(members[name]).read()

        manifest = read("MANIFEST.sha256")
        verify_signature(manifest, read("MANIFEST.sig"), key_pem or read("release-key.pem"),
                         str(bundle))  # fmt: skip
        signed = dict(parse_sha256sum(manifest.decode(), "MANIFEST.sha256"))
        name = list_name(role, machine)
        if name not in signed:
            raise ReleaseError(f"{bundle}: MANIFEST.sha256 lists no {name}: a bundle from "
                               "before verify, or no such role or machine")  # fmt: skip
        listed = read(name)
        if hashlib.sha256(listed).hexdigest() != signed[name]:
            raise ReleaseError(f"{bundle}: {name}: its SHA-256 differs from MANIFEST.sha256")
        entries = parse_sha256sum(listed.decode(), name)
        # every site-packages file from the wheels of this machine, by path and digest
        found: dict[tuple[str, str], bytes] = {}
        for wheel in sorted(n for n in members if n.startswith("wheels/")):
            if not (wheel.endswith("-any.whl") or machine in wheel):
                continue
            data = read(wheel)
            if hashlib.sha256(data).hexdigest() != signed.get(wheel):
                raise ReleaseError(f"{bundle}: {wheel}: its SHA-256 differs from MANIFEST.sha256")
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for path, content in wheel_files(zf):
                    found[(SITE + path, hashlib.sha256(content).hexdigest())] = content
        files: list[tuple[str, bytes | None]] = [("MANIFEST.sha256", manifest)]
        for path, digest in entries:
            if path.startswith(UNIT_DIR):
                content = read("systemd/" + path.removeprefix(UNIT_DIR))
                found[(path, hashlib.sha256(content).hexdigest())] = content
            if (path, digest) not in found:
                raise ReleaseError(f"{bundle}: {path} with the digest {name} gives is in "
                                   "none of its files")  # fmt: skip
            files.append((path, found[(path, digest)]))
    return challenge(seed, files)


def main(argv: list[str] | None = None) -> int:
    """``python3 -m controller.release_files list --report R --unit-dir D --role R``:
    the installed list for a ``pip install --dry-run --report`` (release.sh)."""
    p = argparse.ArgumentParser(prog="release_files")
    p.add_argument("what", choices=["list"])
    p.add_argument("--report", required=True, help="pip's install report (JSON)")
    p.add_argument("--unit-dir", required=True, help="the systemd/ folder of the bundle")
    p.add_argument("--role", required=True, choices=ROLES)
    args = p.parse_args(argv)
    report = json.loads(Path(args.report).read_text())
    wheels = []
    for item in report["install"]:
        url = urllib.parse.urlparse(item["download_info"]["url"])
        if url.scheme != "file":
            raise SystemExit(f"release_files: {url.geturl()}: not a wheel of the bundle")
        wheels.append(Path(urllib.parse.unquote(url.path)))
    sys.stdout.write(make_list(wheels, Path(args.unit_dir), args.role))
    return 0


if __name__ == "__main__":
    sys.exit(main())
