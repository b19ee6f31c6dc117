"""Finding and loading house-rule profiles from ``config/games/``.

``--game pa-standard`` looks for ``pa-standard.toml`` in, in order: the
directory named by ``TABLE_CONTROLLER_GAMES``, ``config/games`` of this source
tree, and ``/etc/table-controller/games``. A path to a ``.toml`` file is taken
as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

from controller.errors import ProfileError
from controller.rules.profile import HouseRules, parse_profile

SOURCE_GAMES = Path(__file__).resolve().parent.parent / "config" / "games"
SYSTEM_GAMES = Path("/etc/table-controller/games")


def game_dirs() -> list[Path]:
    """Directories searched for profiles, in order."""
    dirs = []
    if env := os.environ.get("TABLE_CONTROLLER_GAMES"):
        dirs.append(Path(env))
    dirs += [SOURCE_GAMES, SYSTEM_GAMES]
    return dirs


def available_games() -> list[str]:
    """Names of the profiles found, first directory wins."""
    names: dict[str, Path] = {}
    for directory in game_dirs():
        if directory.is_dir():
            for path in sorted(directory.glob("*.toml")):
                if path.is_file():
                    names.setdefault(path.stem, path)
    return sorted(names)


def find_game(name: str) -> Path:
    """The profile file for ``name`` (a profile name or a path to a .toml file)."""
    candidate = Path(name)
    if candidate.suffix == ".toml":
        if candidate.is_file():
            return candidate
        raise ProfileError(name, "", None, "no such profile file")
    for directory in game_dirs():
        path = directory / f"{name}.toml"
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
    return parse_profile(text, str(path), default_name=path.stem)
