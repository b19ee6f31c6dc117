"""``table-controller check-config``: any config file of the table side (a table config,
a pin map, a game profile), told apart by its sections; a jackpot controller's config is
referred to ``jackpot-controller check-config``."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.config.base import ConfigError, ConfigErrors
from controller.config.gpio import all_circles
from controller.config.loader import check_paths, parse_table_config, read_toml
from controller.errors import ProfileError
from controller.games import available_games, load_game
from controller.rules.profile import SECTIONS as PROFILE_SECTIONS
from controller.rules.profile import parse_profile
from controller.table.machine import table_circles
from drivers.gpio_pins import PinMap, PinMapError, parse_pin_map, wiring_gaps

KINDS = ("table", "jackpot", "gpio", "game")


@dataclass(frozen=True, slots=True)
class ConfigCheck:
    """What :func:`check_config` found: the ``kind``, the ``errors`` and, when there are
    none, a one-line ``summary``."""

    kind: str
    errors: list[ConfigError]
    summary: str = ""


def _detect(path: Path, data: dict[str, Any]) -> str | None:
    if "table" in data:
        return "table"
    if "pools" in data or "properties" in data:
        return "jackpot"
    if set(data) == {"gpio"}:
        return "gpio"
    if path.parent.name == "games" or "game" in data or set(data) & set(PROFILE_SECTIONS):
        return "game"
    return None


def _gaps(source: str, pin_map: PinMap, circles: Iterable[str], spots: int) -> list[ConfigError]:
    """A spot left unwired: every missing sensor and light, each naming its key."""
    return [
        ConfigError(source, s, k, problem) for s, k, problem in wiring_gaps(pin_map, circles, spots)
    ]


def _converted(exc: ProfileError | PinMapError) -> ConfigError:
    return ConfigError(exc.source, exc.section, exc.key, exc.problem)


def check_config(
    path: str | os.PathLike[str], kind: str | None = None, *, files: bool = True
) -> ConfigCheck:
    """Check the config file ``path`` of ``kind`` (table, gpio, game; None: tell by its
    sections; a jackpot config is an error naming ``jackpot-controller check-config``).
    ``files``: for a table config, also :func:`check_paths`."""
    source = str(path)
    path = Path(path)
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind {kind!r}: one of {', '.join(KINDS)}")
    try:
        data, raw = read_toml(path, source)
    except ConfigErrors as exc:
        return ConfigCheck(kind or "unknown", exc.errors)
    if kind is None:
        kind = _detect(path, data)
        if kind is None:
            problem = (
                "cannot tell what config this is: a table config has [table], a jackpot config "
                "[pools] and [properties], a pin map only [gpio], a game profile [game]; or "
                "give --kind"
            )
            return ConfigCheck("unknown", [ConfigError(source, "", None, problem)])
    text = raw.decode("utf-8")
    if kind == "table":
        try:
            config = parse_table_config(
                data,
                source,
                base=path.resolve().parent,
                checksum=hashlib.sha256(raw).hexdigest(),
            )
        except ConfigErrors as exc:
            return ConfigCheck(kind, exc.errors)
        errors = _gaps(
            source, config.gpio.pin_map, table_circles(config.rules), config.settings.spots
        )
        errors += check_paths(config) if files else []
        summary = config.summary() + ("" if files else "; files not checked")
        return ConfigCheck(kind, errors, "" if errors else summary)
    try:
        if kind == "jackpot":  # another product's: the table side does not read it
            problem = (
                "a jackpot controller's config ([pools], [properties]): check it where the "
                f"jackpot controller runs, with: jackpot-controller check-config {source}"
            )
            return ConfigCheck(kind, [ConfigError(source, "", None, problem)])
        if kind == "gpio":
            unknown = sorted(set(data) - {"gpio"})
            if unknown:
                raise ConfigError(
                    source, unknown[0], None, "unknown section; a pin map file has only [gpio]"
                )
            raw_map = data["gpio"]
            game = raw_map.get("game") if isinstance(raw_map, dict) else None
            if game is None:
                circles, wired, against = all_circles(), ("main",), "every game's circles"
            else:
                try:
                    circles = wired = table_circles(load_game(str(game)))
                except ProfileError:
                    raise ConfigError(
                        source,
                        "gpio",
                        "game",
                        f"{game!r} is no game profile; use one of: "
                        f"{', '.join(available_games())} (table-controller games)",
                    ) from None
                against = f"game {game}, {len(wired)} circle{'s' if len(wired) > 1 else ''} a spot"
            pin_map = parse_pin_map(raw_map, circles=circles, spots=7, source=source)
            gaps = _gaps(source, pin_map, wired, 7)
            if gaps:
                return ConfigCheck(kind, gaps)
            summary = f"pin map: {pin_map.describe()}, complete for 7 spots ({against})"
        else:
            rules = parse_profile(text, source, default_name=path.stem)
            summary = (  # the digest a table's [table] game_sha256 names once it is approved
                f"game {rules.name}: {rules.game.title}; sha256 {hashlib.sha256(raw).hexdigest()}"
            )
    except (ProfileError, PinMapError) as exc:
        return ConfigCheck(kind, [_converted(exc)])
    return ConfigCheck(kind, [], summary)


def check_config_file(
    path: str | os.PathLike[str], kind: str | None = None, *, files: bool = True
) -> tuple[str, list[ConfigError]]:
    """The kind of the config file ``path`` and every error found (see :func:`check_config`)."""
    check = check_config(path, kind, files=files)
    return check.kind, check.errors
