"""The build identity: which software this is, for a gaming lab and a field inspector
(58 Pa. Code 605a.4(c); N.J.A.C. 13:69E-1.28B(d); 9 NYCRR 5321.18(b)(3)(iv)).

The version has one source, the git tag plus the commit (``0.4.0+g1a2b3c4``), as
setuptools-scm makes it: written into the wheel's metadata and ``controller/_version.py``
when the package is built or installed, and worked out again from git in a development
checkout (an editable install's metadata would say the commit it was installed at).

The build id is the version plus the SHA-256 of the installed release manifest,
``release/MANIFEST.sha256`` beside the venv (``/opt/table-controller/release/``), or the file
:data:`MANIFEST_ENV` names. Without one (a development checkout) the build id says
``unverified build``. This module states what is installed; ``verify`` checks it.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

#: The environment variable naming the installed release manifest (a file path).
MANIFEST_ENV = "TABLE_CONTROLLER_MANIFEST"
#: Where the manifest lies relative to the venv's parent (``/opt/table-controller``).
MANIFEST_RELATIVE = Path("release", "MANIFEST.sha256")
DISTRIBUTION = "table-controller"
UNVERIFIED = "unverified build"


@dataclass(frozen=True)
class BuildId:
    """``version`` (PEP 440, with the commit), ``manifest``: the manifest file read (None
    without one) and ``manifest_sha256``: its SHA-256 in hex."""

    version: str
    manifest: Path | None = None
    manifest_sha256: str | None = None

    @property
    def verified(self) -> bool:
        """True when a release manifest names this build (not that its files were checked)."""
        return self.manifest_sha256 is not None

    def __str__(self) -> str:
        """``0.4.0+g1a2b3c4 (manifest sha256:...)`` or ``0.4.0+g1a2b3c4 (unverified build)``.

        >>> str(BuildId("0.4.0+g1a2b3c4"))
        '0.4.0+g1a2b3c4 (unverified build)'
        >>> str(BuildId("0.4.0", Path("m"), "ab" * 32))[:35]
        '0.4.0 (manifest sha256:abababababab'
        """
        if self.manifest_sha256 is None:
            return f"{self.version} ({UNVERIFIED})"
        return f"{self.version} (manifest sha256:{self.manifest_sha256})"


def _checkout_root() -> Path | None:
    """The git checkout this package is imported from, or None (an installed copy)."""
    root = Path(__file__).resolve().parent.parent
    if (root / ".git").exists() and (root / "pyproject.toml").is_file():
        return root
    return None


@functools.cache
def version() -> str:
    """The version: from git in a checkout (when setuptools-scm is importable), else what
    the build wrote (``controller/_version.py``, the installed metadata)."""
    root = _checkout_root()
    if root is not None:
        try:
            from setuptools_scm import get_version  # a build and test tool, not at run time
        except ImportError:
            pass
        else:
            try:
                return get_version(root=str(root))
            except (LookupError, OSError):  # no git on the PATH: what the install wrote
                pass
    try:
        from controller._version import version as built  # written by the build
    except ImportError:
        pass
    else:
        return str(built)
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def manifest_path() -> Path:
    """The release manifest's path: :data:`MANIFEST_ENV`, else ``release/MANIFEST.sha256``
    beside the venv this Python runs in (``sys.prefix``'s parent)."""
    named = os.environ.get(MANIFEST_ENV)
    if named:
        return Path(named)
    return Path(sys.prefix).resolve().parent / MANIFEST_RELATIVE


@functools.cache
def build_id() -> BuildId:
    """This process's build id (read once; an install restarts the service)."""
    path = manifest_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return BuildId(version())
    except OSError as exc:
        raise SystemExit(
            f"cannot read the release manifest {path}: {exc.strerror}; make it readable by "
            f"this service's user (or unset {MANIFEST_ENV})"
        ) from exc
    return BuildId(version(), path, hashlib.sha256(data).hexdigest())


def software() -> str:
    """The build id as one line of text (journal ``runs.software``, ledger meta ``build``)."""
    return str(build_id())


class VersionAction(argparse.Action):
    """``--version``: prints ``PROG BUILD-ID`` and exits 0 (the build id read only then)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print the version and build id (with the release manifest's SHA-256, "
                 "or 'unverified build') and exit"):  # fmt: skip
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog} {build_id()}")  # on stdout, as argparse's own --version
        parser.exit(0)
