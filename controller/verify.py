"""``table-controller verify`` and ``jackpot-controller verify``: is the installed software
the signed build? (issue 29 item 4; 58 Pa. Code 605a.4(c); N.J.A.C. 13:69E-1.28B(d) and
1.28H; 9 NYCRR 5321.18(b)(3)(iv); docs/release.md, "How an inspector checks a table").

An install from a bundle keeps in ``/opt/table-controller/release/`` (beside the venv) the
signed ``MANIFEST.sha256``, ``MANIFEST.sig``, the pinned ``release-key.pem`` and the lists
``installed/ROLE-MACHINE.sha256`` (:mod:`controller.release_files`). :func:`verify` checks
the signature with the pinned key, the role's list against the manifest, then every listed
file (site-packages, the units) and that site-packages holds no file the list does not name.

No manifest there (a development checkout, or an install from a checkout): the result is
``unverified build``, exit 0, and the software runs, marked so; a release folder that has a
signature or key but no manifest is a failure (a manifest removed).
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from controller.release_files import (
    MACHINES,
    PIP_WRITES,
    SITE,
    ReleaseError,
    bundle_challenge,
    challenge,
    key_pem,
    list_name,
    parse_sha256sum,
    verify_signature,
)

UNVERIFIED = "unverified build"


@dataclass(frozen=True)
class Install:
    """Where an installed product's files are: the release folder, site-packages, the root
    the listed ``etc/...`` paths are under (``/``, or an install's ``--destdir``)."""

    release: Path
    site: Path
    root: Path

    @classmethod
    def running(cls) -> Install:
        """This Python's venv: ``release/`` beside it (``/opt/table-controller``)."""
        prefix = Path(sys.prefix).resolve()
        release = prefix.parent / "release"
        parents = release.parents
        root = parents[min(2, len(parents) - 1)]
        return cls(release, Path(sysconfig.get_paths()["purelib"]), root)


@dataclass
class Result:
    """``build``: the build id (None: unverified); ``problems``: one line per file."""

    build: str | None
    problems: list[str] = field(default_factory=list)
    files: int = 0

    @property
    def ok(self) -> bool:
        return self.build is not None and not self.problems

    def text(self, role: str) -> str:
        if self.build is None and not self.problems:
            return (f"{UNVERIFIED}: no signed release manifest (a development checkout or an "
                    "install from a checkout; docs/release.md)")  # fmt: skip
        if self.ok:
            return f"ok: build {self.build}: {self.files} files of the {role} role check"
        return "\n".join(["FAILED: " + (self.build or "no build"), *self.problems])


def _read_release(install: Install, role: str, machine: str):
    """(manifest bytes, the role's list entries) after the signature and list check."""
    release = install.release
    manifest = release / "MANIFEST.sha256"
    if not manifest.is_file():
        if any((release / n).exists() for n in ("MANIFEST.sig", "release-key.pem")):
            raise ReleaseError(f"{manifest}: missing, while {release} holds a signature or "
                               "key: removed? Install the release bundle again")  # fmt: skip
        return None
    data = manifest.read_bytes()
    for name in ("MANIFEST.sig", "release-key.pem"):
        if not (release / name).is_file():
            raise ReleaseError(f"{release / name}: missing: the manifest cannot be checked; "
                               "install the release bundle again")  # fmt: skip
    verify_signature(data, (release / "MANIFEST.sig").read_bytes(),
                     (release / "release-key.pem").read_bytes(), str(release))  # fmt: skip
    signed = dict(parse_sha256sum(data.decode(), str(manifest)))
    name = list_name(role, machine)
    listed = release / name
    if name not in signed:
        raise ReleaseError(f"{manifest}: lists no {name}: a bundle from before verify, or not "
                           f"built for {machine}")  # fmt: skip
    if not listed.is_file():
        raise ReleaseError(f"{listed}: missing: install the release bundle again")
    text = listed.read_bytes()
    if hashlib.sha256(text).hexdigest() != signed[name]:
        raise ReleaseError(f"{listed}: its SHA-256 differs from the signed MANIFEST.sha256")
    return data, signed, parse_sha256sum(text.decode(), str(listed))


def build_id(manifest: bytes, signed: dict[str, str]) -> str:
    """``VERSION (manifest sha256:HEX)``, the version from the signed wheel's name."""
    versions = [m.group(1) for n in signed
                if (m := re.fullmatch(r"wheels/table_controller-([^-]+)-.*\.whl", n))]  # fmt: skip
    version = versions[0] if versions else "unknown"
    return f"{version} (manifest sha256:{hashlib.sha256(manifest).hexdigest()})"


def _where(install: Install, path: str) -> Path:
    if path.startswith(SITE):
        return install.site / path.removeprefix(SITE)
    return install.root / path


def _ignored(rel: Path) -> bool:
    """Files in site-packages that no wheel holds: pip's own records, compiled caches."""
    if rel.suffix == ".pyc" and rel.parent.name == "__pycache__":
        return True
    return rel.parent.name.endswith(".dist-info") and rel.name in PIP_WRITES


ROLES = ("table", "jackpot")


def installed_role(install: Install, asked: str) -> str:
    """The role ``install-pi.sh`` installed (``release/ROLE``), else ``asked``. Its list is the
    one the venv holds: a jackpot controller started on a table's install (the demo) checks
    the table's list, which covers the same package; the file is not what authenticates
    anything (both lists are signed, and only the installed one matches the venv)."""
    try:
        named = (install.release / "ROLE").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return asked
    return named if named in ROLES else asked


def verify(role: str, install: Install | None = None, machine: str | None = None) -> Result:
    """Every installed file of the installed role (:func:`installed_role`, else ``role``)
    against the signed lists (see the module)."""
    install = install or Install.running()
    role = installed_role(install, role)
    machine = machine or platform.machine()
    try:
        release = _read_release(install, role, machine)
    except (ReleaseError, OSError, UnicodeDecodeError) as exc:
        return Result(None, [str(exc)])
    if release is None:
        return Result(None)
    manifest, signed, entries = release
    result = Result(build_id(manifest, signed), files=len(entries))
    for path, digest in entries:
        where = _where(install, path)
        try:
            actual = hashlib.sha256(where.read_bytes()).hexdigest()
        except FileNotFoundError:
            result.problems.append(f"{where}: missing")
            continue
        except OSError as exc:
            result.problems.append(f"{where}: cannot be read ({exc.strerror})")
            continue
        if actual != digest:
            result.problems.append(f"{where}: its SHA-256 differs from the signed list")
    listed = {p.removeprefix(SITE) for p, _ in entries if p.startswith(SITE)}
    for where in sorted(install.site.rglob("*")):
        rel = where.relative_to(install.site)
        added = where.is_file() or where.is_symlink()
        if added and rel.as_posix() not in listed and not _ignored(rel):
            result.problems.append(f"{where}: not in the signed list (a file added)")
    cfg = install.site.parents[2] / "pyvenv.cfg"
    if cfg.is_file() and "include-system-site-packages = true" in cfg.read_text():
        result.problems.append(f"{cfg}: the venv also loads the system's packages, which "
                               "nothing checks; install the bundle again")  # fmt: skip
    return result


def installed_challenge(role: str, seed: str, install: Install | None = None,
                        machine: str | None = None) -> tuple[str | None, list[str]]:  # fmt: skip
    """(the HMAC over the installed files, problems); (None, []) when unverified."""
    install = install or Install.running()
    role = installed_role(install, role)
    try:
        release = _read_release(install, role, machine or platform.machine())
    except (ReleaseError, OSError, UnicodeDecodeError) as exc:
        return None, [str(exc)]
    if release is None:
        return None, []
    manifest, _signed, entries = release
    problems: list[str] = []

    def files():
        yield "MANIFEST.sha256", manifest
        for path, _digest in entries:
            try:
                yield path, _where(install, path).read_bytes()
            except OSError:
                problems.append(f"{_where(install, path)}: missing or unreadable")
                yield path, None

    return challenge(seed, files()), problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--challenge", metavar="SEED",
                        help="print the HMAC-SHA256 keyed by SEED over the manifest and every "
                        "installed file, path and content, instead of the check")  # fmt: skip
    parser.add_argument("--bundle", metavar="FILE",
                        help="with --challenge: the expected answer, from this release bundle "
                        "(the inspector's copy), for --machine")  # fmt: skip
    parser.add_argument("--machine", choices=MACHINES,
                        help="with --bundle: the table's machine (uname -m)")  # fmt: skip
    parser.add_argument(
        "--release-key",
        metavar="PEM",
        help="with --bundle: the pinned public key, release-key.pem or the vendor's line "
        "(default: the bundle's own)",
    )


def run(args: argparse.Namespace, role: str) -> int:
    """The command: 0 for ok or unverified, 1 for a failure, 2 for a usage error."""
    if args.bundle:
        if not args.challenge or not args.machine:
            print(
                "verify: --bundle computes a challenge's answer: give --challenge SEED and "
                "--machine aarch64|x86_64 (the table's uname -m)",
                file=sys.stderr,
            )
            return 2
        try:
            key = key_pem(Path(args.release_key).read_bytes()) if args.release_key else None
            print(bundle_challenge(Path(args.bundle), role, args.machine, args.challenge, key))
        except (ReleaseError, OSError) as exc:
            print(f"verify: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.challenge is not None:
        mac, problems = installed_challenge(role, args.challenge)
        if mac is None and not problems:
            print(Result(None).text(role))
            return 0
        if mac is not None:
            print(mac)
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    result = verify(role)
    print(result.text(installed_role(Install.running(), role)))
    return 1 if result.problems else 0


def main(argv: list[str], role: str) -> int:
    """``ROLE-controller verify [...]`` for a CLI without subcommand objects (jackpot)."""
    parser = argparse.ArgumentParser(
        prog=f"{role}-controller verify",
        description="check every installed file against the signed release manifest",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv), role)
