"""``table-controller``: the command line.

Subcommands so far:

- ``par-sheet --game PROFILE [--decks N] [--json]``: the exact game-math
  document for a profile's card-determined side bets;
- ``profile-keys``: the reference of every house-rule profile key (Markdown),
  as kept in ``docs/profiles.md``;
- ``games``: the profiles found and where.

Errors the user can fix print one line naming what was wrong and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from controller import __version__
from controller.errors import TableControllerError


def _cmd_par_sheet(args: argparse.Namespace) -> int:
    from controller.games import load_game
    from controller.parsheet import compute_par_sheet, format_par_sheet

    rules = load_game(args.game)
    if args.decks is not None:
        rules = rules.with_decks(args.decks)
    sheet = compute_par_sheet(rules)
    if args.json:
        print(json.dumps(sheet, indent=2))
    else:
        print(format_par_sheet(sheet), end="")
    return 0


def _cmd_profile_keys(_args: argparse.Namespace) -> int:
    from controller.rules.profile import profile_keys_markdown

    print(profile_keys_markdown(), end="")
    return 0


def _cmd_games(_args: argparse.Namespace) -> int:
    from controller.games import available_games, find_game, load_game

    for name in available_games():
        rules = load_game(name)
        print(f"{name:<16} {rules.game.title}  ({find_game(name)})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="table-controller", description="Blackjack table controller."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    par = commands.add_parser(
        "par-sheet", help="exact house edge and hit frequencies of a game's side bets"
    )
    par.add_argument(
        "--game",
        default="pa-standard",
        help="profile name in config/games (or a path to a .toml file); default: pa-standard",
    )
    par.add_argument("--decks", type=int, help="override the profile's number of decks (1-8)")
    par.add_argument("--json", action="store_true", help="print JSON instead of a table")
    par.set_defaults(run=_cmd_par_sheet)

    keys = commands.add_parser("profile-keys", help="print the reference of every profile key")
    keys.set_defaults(run=_cmd_profile_keys)

    games = commands.add_parser("games", help="list the game profiles found")
    games.set_defaults(run=_cmd_games)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except TableControllerError as exc:
        print(f"table-controller: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
