"""Finding and loading house-rule profiles.

``--game pa-standard`` looks for ``pa-standard.toml`` in, in order: the
directory named by ``TABLE_CONTROLLER_GAMES``, the profiles shipped inside
the package (``controller/profiles/``, read with :mod:`importlib.resources`,
so an installed wheel has them too), and ``/etc/table-controller/games``.
A path to a ``.toml`` file is taken as it is.

>>> "pa-standard" in available_games()
True
"""

from __future__ import annotations

import importlib.resources
import os
from importlib.resources.abc import Traversable
from pathlib import Path

from controller.errors import ProfileError
from controller.rules.profile import HouseRules, parse_profile

PACKAGED_GAMES: Traversable = importlib.resources.files("controller").joinpath("profiles")
"""The profiles that ship with the package (controller/profiles/*.toml)."""
SYSTEM_GAMES = Path("/etc/table-controller/games")


def game_dirs() -> list[Traversable]:
    """Directories searched for profiles, in order."""
    dirs: list[Traversable] = []
    if env := os.environ.get("TABLE_CONTROLLER_GAMES"):
        dirs.append(Path(env))
    dirs += [PACKAGED_GAMES, SYSTEM_GAMES]
    return dirs


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
    path = find_game(name)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(str(path), "", None, f"cannot read the file: {exc}") from None
    return parse_profile(text, str(path), default_name=path.name.removesuffix(".toml"))
