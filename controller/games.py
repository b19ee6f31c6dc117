"""Finding and loading house-rule profiles.

``--game pa-standard`` looks for ``pa-standard.toml`` in, in order: the
profiles shipped inside the package (``controller/profiles/``, read with
:mod:`importlib.resources`, so an installed wheel has them too), the directory
named by ``TABLE_CONTROLLER_GAMES`` and ``/etc/table-controller/games``.
A path to a ``.toml`` file is taken as it is. The package's profiles win: a
file elsewhere cannot stand in for an approved pay table under its name, and a
table's config names the SHA-256 of any profile from outside the package
(``[table] game_sha256``; N.J.A.C. 13:69E-1.28H, 58 Pa. Code 605a.4(c)).

>>> "pa-standard" in available_games()
True
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

from controller.errors import ProfileError
from controller.rules.profile import HouseRules, parse_profile

PACKAGED_GAMES: Traversable = importlib.resources.files("controller").joinpath("profiles")
"""The profiles that ship with the package (controller/profiles/*.toml)."""
SYSTEM_GAMES = Path("/etc/table-controller/games")


@dataclass(frozen=True)
class ProfileSource:
    """Where a loaded profile came from: ``path``, ``sha256`` (hex) of the bytes parsed, and
    ``packaged``: True for a profile shipped inside the package."""

    path: Traversable
    sha256: str
    packaged: bool


def game_dirs() -> list[Traversable]:
    """Directories searched for profiles, in order: the package's first."""
    dirs: list[Traversable] = [PACKAGED_GAMES]
    if env := os.environ.get("TABLE_CONTROLLER_GAMES"):
        dirs.append(Path(env))
    dirs.append(SYSTEM_GAMES)
    return dirs


def is_packaged(path: Traversable) -> bool:
    """True if ``path`` is one of the profiles shipped inside the package."""
    try:
        return Path(str(path)).resolve().parent == Path(str(PACKAGED_GAMES)).resolve()
    except OSError:
        return False


def _profiles(directory: Traversable) -> list[Traversable]:
    if not directory.is_dir():
        return []
    found = (p for p in directory.iterdir() if p.name.endswith(".toml") and p.is_file())
    return sorted(found, key=lambda p: p.name)


def available_games() -> list[str]:
    """Names of the profiles found, first directory wins."""
    names = {p.name.removesuffix(".toml") for d in game_dirs() for p in _profiles(d)}
    return sorted(names)


def find_game(name: str) -> Traversable:
    """The profile file for ``name`` (a profile name or a path to a .toml file): a ``Path``,
    or for the packaged profiles whatever :mod:`importlib.resources` gives (a ``Path`` when
    the package is installed as files, which pip always does)."""
    candidate = Path(name)
    if candidate.suffix == ".toml":
        if candidate.is_file():
            return candidate
        raise ProfileError(name, "", None, "no such profile file")
    for directory in game_dirs():
        path = directory.joinpath(f"{name}.toml")
        if path.is_file():
            return path
    known = ", ".join(available_games()) or "none found"
    raise ProfileError(
        name,
        "",
        None,
        f"no game profile of that name; known profiles: {known} "
        f"(searched {', '.join(str(d) for d in game_dirs())})",
    )


def load_game(name: str) -> HouseRules:
    """Load and check the profile ``name`` (see :func:`find_game`)."""
    return read_game(name)[0]


def read_game(name: str) -> tuple[HouseRules, ProfileSource]:
    """The profile ``name`` and where it came from, its SHA-256 that of the bytes parsed."""
    path = find_game(name)
    try:
        data = path.read_bytes()
        text = data.decode("utf-8").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(str(path), "", None, f"cannot read the file: {exc}") from None
    rules = parse_profile(text, str(path), default_name=path.name.removesuffix(".toml"))
    return rules, ProfileSource(path, hashlib.sha256(data).hexdigest(), is_packaged(path))
