"""``[table]``: which table this is, its game and its limits (docs/config.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from controller.config.base import REQUIRED, Section, resolve
from controller.errors import ProfileError
from controller.games import ProfileSource, find_game, read_game
from controller.link.messages import RESERVED_PREFIXES, TABLE_ID
from controller.rules.pays import format_cents
from controller.rules.profile import HouseRules
from controller.table.settings import CARD_SOURCE_MODES, SettingsError, TableSettings

TABLE_KEYS = (
    "id",
    "property",
    "game",
    "game_sha256",
    "spots",
    "main_minimum",
    "main_maximum",
    "side_minimum",
    "side_maximum",
    "card_source",
    "data_dir",
    "tick_ms",
    "checkpoint_every_events",
)

DEFAULT_SETTINGS = TableSettings()
DEFAULT_DATA_DIR = "/var/lib/table-controller"
PROPERTY = re.compile(r"^[a-z]{2,8}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
APPROVAL = "N.J.A.C. 13:69E-1.28H; 58 Pa. Code 605a.4(c)"


def read_table(sec: Section, base: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    table_id = sec.text("id", REQUIRED, example='"hcm-bj-07"')
    if table_id is not None:
        shape = (
            "lower-case letters, digits and '-': the property (2-8 letters), then 1 to 3 "
            "segments of up to 16 letters or digits, like 'hcm-bj-07'"
        )
        if not TABLE_ID.match(table_id):
            sec.error("id", f"{table_id!r} is not a table id: {shape}")
            table_id = None
        elif table_id.split("-", 1)[0] in RESERVED_PREFIXES:
            sec.error(
                "id",
                f"{table_id!r} starts with a name kept for the broker's own users "
                f"({', '.join(sorted(RESERVED_PREFIXES))}): use the property id",
            )
            table_id = None
    out["table_id"] = table_id
    prop = sec.text("property", REQUIRED, example='"hcm"')
    if prop is not None:
        if not PROPERTY.match(prop):
            sec.error("property", f"{prop!r} is not a property id: 2 to 8 lower-case letters")
            prop = None
        elif table_id is not None and table_id.split("-", 1)[0] != prop:
            sec.error(
                "property",
                f"{prop!r} is not the first segment of the table id {table_id!r} "
                f"({table_id.split('-', 1)[0]!r}): fix the id or the property",
            )
            prop = None
    out["property"] = prop
    game = sec.text("game", REQUIRED, example='"pa-standard"')
    approved = sec.text("game_sha256", None, example='"<64 hex digits, as sha256sum prints>"')
    if approved is not None and not SHA256.match(approved.strip().lower()):
        sec.error("game_sha256", f"{approved!r} is not a SHA-256: 64 hex digits (sha256sum FILE)")
        approved = ""
    out["game"] = game
    out["rules"] = out["profile"] = None
    if game is not None:
        out["rules"], out["profile"] = load_rules(sec, game, base, approved)
    spots = sec.integer("spots", REQUIRED, 1, 7)
    limits = {
        "main_minimum": sec.cents("main_minimum", REQUIRED, '"$10"'),
        "main_maximum": sec.cents("main_maximum", REQUIRED, '"$1,000"'),
        "side_minimum": sec.cents("side_minimum", DEFAULT_SETTINGS.side_minimum, '"$1"'),
        "side_maximum": sec.cents("side_maximum", DEFAULT_SETTINGS.side_maximum, '"$100"'),
    }
    for low, high in (("main_minimum", "main_maximum"), ("side_minimum", "side_maximum")):
        if limits[low] is not None and limits[high] is not None and limits[low] > limits[high]:
            sec.error(
                low,
                f"{format_cents(limits[low], whole=True)} is above {high} "
                f"{format_cents(limits[high], whole=True)}: the minimum must be at most the "
                f"maximum",
            )
            limits[low] = None
    card_source = sec.text("card_source", "shoe", choices=CARD_SOURCE_MODES)
    out["settings"] = None
    if spots is not None and card_source is not None and None not in limits.values():
        try:
            out["settings"] = TableSettings(spots=spots, card_source=card_source, **limits)
        except SettingsError as exc:  # every check above should come first
            sec.error(None, str(exc))
    out["spots"] = spots
    out["card_source"] = card_source
    out["data_dir"] = sec.path("data_dir", DEFAULT_DATA_DIR, base, f'"{DEFAULT_DATA_DIR}"')
    out["tick_ms"] = sec.integer("tick_ms", 100, 10, 1000, "ms")
    out["checkpoint_every_events"] = sec.integer(
        "checkpoint_every_events", 1000, 10, 1_000_000, "journaled events"
    )
    sec.check_unknown()
    return out


def load_rules(
    sec: Section, game: str, base: Path, approved: str | None = None
) -> tuple[HouseRules | None, ProfileSource | None]:
    """The profile and its source; one from outside the package needs its SHA-256 named in
    ``game_sha256`` (an approved pay table), and a named SHA-256 must match whatever the
    profile (``approved`` "": named but malformed, already said)."""
    name = game
    if game.endswith(".toml"):
        name = str(resolve(game, base))
    try:
        find_game(name)
    except ProfileError as exc:
        where = f"{game!r}" if name == game else f"{game!r} ({name})"
        sec.error("game", f"{where}: {exc.problem}")
        return None, None
    try:
        rules, source = read_game(name)
    except ProfileError as exc:
        sec.error("game", f"the profile {game!r} does not load: {exc}")
        return None, None
    if approved is None and not source.packaged:
        sec.error(
            "game",
            f"{game!r} is a profile from outside the package ({source.path}) with no approved "
            f"SHA-256: once the gaming lab approved this file, name its SHA-256 in "
            f'[table] game_sha256 (now "{source.sha256}"), or play a packaged profile '
            f"(table-controller games; {APPROVAL})",
        )
        return None, None
    if approved and approved.strip().lower() != source.sha256:
        sec.error(
            "game_sha256",
            f"the profile {game!r} ({source.path}) has SHA-256 {source.sha256}, not the "
            f"approved {approved.strip().lower()}: the file was changed or is not the one "
            f"approved; restore the approved file, or name the new one's SHA-256 once it is "
            f"approved ({APPROVAL})",
        )
        return None, None
    return rules, source
