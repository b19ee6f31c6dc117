"""``jackpot-controller check-config``, and what the controller checks before it starts.

:func:`jackpot.config_read.load_config` checks what the file alone can tell, every error of
every section. What needs the disk is checked here, the same way at ``check-config`` and at the
start of ``jackpot-controller`` (issue 26: ``check-config`` passed an unknown game or wager and
a password file anyone could read):

- each game a ``[properties.ID]`` or ``[tables.ID]`` lists is a game profile this controller
  knows (``controller.games``: ``TABLE_CONTROLLER_GAMES``, the packaged profiles,
  ``/etc/table-controller/games``) and loads; its progressive wager feeds a pool of the config
  (else every contribution of that game would be refused);
- each wager a pool names is a progressive wager of a profile the tables may run (the games
  listed; every known profile where a table may run any);
- the broker password file: readable, not empty, and no more open than the installer's 0640
  root:jackpot-controller (:mod:`controller.link.password_file`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from controller.errors import ProfileError
from controller.games import available_games, load_game
from controller.link.password_file import password_mode_problem
from controller.rules.profile import PROGRESSIVE_WAGERS, HouseRules
from jackpot.config import (
    JackpotConfig,
    JackpotConfigError,
    ProgressivePool,
)
from jackpot.config_read import load_config

#: The controller service's user and group (systemd/jackpot-controller.service, the installer).
SERVICE_USER = "jackpot-controller"
#: The password file's name beside the config, where the installer puts both.
PASSWORD_FILE_NAME = "mqtt-password"


class PasswordFileError(JackpotConfigError):
    """The broker password file cannot be used: unreadable, empty, or open to others."""

    def __init__(self, path: str | Path, problem: str):
        self.source, self.section, self.key, self.problem = (
            str(path),
            "",
            "--password-file",
            problem,
        )
        Exception.__init__(self, f"--password-file: {problem}")


def read_password(path: str | Path) -> str:
    """The broker password: the stripped contents of ``path``, a file others cannot read and
    only its owner can write. :class:`PasswordFileError` says what is wrong and what to do."""
    fix = (
        f"write the broker's {SERVICE_USER} password there (one line; owner root, group "
        f"{SERVICE_USER}, mode 0640)"
    )
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
        problem = password_mode_problem(path, SERVICE_USER)
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise PasswordFileError(path, f"cannot read {path}: {reason}; {fix}") from None
    if problem:
        raise PasswordFileError(path, problem)
    if not text:
        raise PasswordFileError(path, f"{path} is empty; {fix}")
    return text


def _listed_games(config: JackpotConfig) -> list[tuple[str, str]]:
    """(section, game) for every game a property or a table lists, in the file's order."""
    listed = [(f"properties.{p.id}", g) for p in config.properties.values() for g in p.games or ()]
    listed += [(f"tables.{t.id}", g) for t in config.table_entries.values() for g in t.games or ()]
    return listed


def _progressives(rules: HouseRules) -> list[tuple[str, str]]:
    """(wager, pool) for each progressive wager the profile offers."""
    offered = PROGRESSIVE_WAGERS & set(rules.side_bets.offered())
    return [(wager, getattr(rules.side_bets, wager).pool) for wager in sorted(offered)]


class _Profiles:
    """The game profiles on this machine, each loaded once (a ProfileError if it does not)."""

    def __init__(self) -> None:
        self._loaded: dict[str, HouseRules | ProfileError] = {}

    def __call__(self, game: str) -> HouseRules | ProfileError:
        if game not in self._loaded:
            try:
                if game.endswith(".toml"):  # load_game would take it for a file path
                    raise ProfileError(game, "", None, "a profile name, not a file")
                self._loaded[game] = load_game(game)
            except ProfileError as exc:
                self._loaded[game] = exc
        return self._loaded[game]


def _game_errors(config: JackpotConfig, load: _Profiles) -> list[JackpotConfigError]:
    """Each listed game: a profile that loads, whose progressive wager the config's pools take."""
    errors = []
    for section, game in _listed_games(config):
        rules = load(game)
        problems = []
        if isinstance(rules, ProfileError):
            if game in available_games():
                problems.append(f"{game!r}: the profile does not load: {rules}")
            else:  # "no game profile of that name; known profiles: ... (searched ...)"
                problems.append(f"{game!r}: {rules.problem}")
            rules = None
        for wager, pool in _progressives(rules) if rules else ():
            fed = config.pools.get(pool)
            if not isinstance(fed, ProgressivePool) or wager not in fed.wagers:
                problems.append(
                    f"game {game!r} feeds its {wager} wager to pool {pool!r}, which is no "
                    f"progressive pool of this config fed by {wager!r}: every contribution of "
                    f"that game would be refused; add [pools.{pool}] or list another game"
                )
            mystery = rules.mystery.offered and wager in rules.mystery.eligible_wagers
            if mystery and config.mystery_for(wager) is None:
                problems.append(
                    f"game {game!r} makes its {wager} wager eligible for the Mystery, but no "
                    f"mystery pool of this config is fed by {wager!r}"
                )
        errors += [JackpotConfigError(config.source, section, "games", p) for p in problems]
    return errors


def _wager_errors(config: JackpotConfig, load: _Profiles) -> list[JackpotConfigError]:
    """Each pool's wagers: progressive wagers of a profile the tables may run."""
    anywhere = any(config.games_for(t) is None for t in config.tables)
    games = available_games() if anywhere else sorted({g for _, g in _listed_games(config)})
    defined: dict[str, list[str]] = {}  # wager -> the profiles that offer it
    for game in games:
        rules = load(game)
        for wager, _ in () if isinstance(rules, ProfileError) else _progressives(rules):
            defined.setdefault(wager, []).append(game)
    offered = "; ".join(f"{w} ({', '.join(g)})" for w, g in sorted(defined.items())) or "none"
    runs = "the known profiles" if anywhere else "the games the tables may run"
    errors = []
    for pool in config.pools.values():
        for wager in pool.wagers:
            if wager in defined:
                continue
            if wager in PROGRESSIVE_WAGERS:
                why = f"is offered by none of {runs} ({', '.join(games) or 'none'})"
            else:
                why = f"is not a progressive wager (those are: {', '.join(PROGRESSIVE_WAGERS)})"
            problem = (
                f"{wager!r} {why}: nothing would ever feed this meter with it; the progressive "
                f"wagers of {runs}: {offered}"
            )
            errors.append(
                JackpotConfigError(config.source, f"pools.{pool.name}", "wagers", problem)
            )
    return errors


def profile_errors(config: JackpotConfig) -> list[JackpotConfigError]:
    """Games and wagers of ``config`` checked against the game profiles on this machine."""
    load = _Profiles()
    return _game_errors(config, load) + _wager_errors(config, load)


def config_errors(path: str | Path) -> tuple[JackpotConfig | None, list[JackpotConfigError]]:
    """The config at ``path`` and every error found in it and in the profiles it names."""
    try:
        config = load_config(path)
    except JackpotConfigError as exc:
        return None, exc.errors
    return config, profile_errors(config)


def _password_file(config_path: str, given: str | None) -> Path | None:
    """The password file to check: ``--password-file``, else ``mqtt-password`` beside the
    config if there is one (the installer puts both in /etc/jackpot-controller)."""
    if given is not None:
        return Path(given)
    beside = Path(config_path).parent / PASSWORD_FILE_NAME
    return beside if beside.exists() else None


def main(argv: Iterable[str]) -> int:
    """``jackpot-controller check-config FILE [FILE...] [--password-file PATH]``:
    ``FILE: ok (...)`` on stdout, or every error, one per line naming section and key, on
    stderr and exit 2."""
    p = argparse.ArgumentParser(
        prog="jackpot-controller check-config",
        description="Check jackpot controller configs (pools, properties, tables and their "
        "keys, the game profiles and wagers they name) and the broker password file: every "
        "error, one per line naming section and key (docs/config.md).",
    )
    p.add_argument(
        "files", nargs="+", metavar="FILE", help="e.g. /etc/jackpot-controller/jackpot.toml"
    )
    p.add_argument(
        "--password-file",
        help=f"the broker password file the controller runs with (default: {PASSWORD_FILE_NAME} "
        "beside FILE, if there is one): readable, not empty, mode 0640 or tighter",
    )
    args = p.parse_args(list(argv))
    failed = False
    for name in args.files:
        config, errors = config_errors(name)
        password = _password_file(name, args.password_file)
        if password is not None:
            try:
                read_password(password)
            except PasswordFileError as exc:
                errors.append(exc)
        for error in errors:
            print(error, file=sys.stderr, flush=True)
        failed = failed or bool(errors)
        if not errors:
            pw = f"password file {password} ok" if password else "no password file checked"
            print(f"{name}: ok ({config.summary()}; {pw})", flush=True)
    return 2 if failed else 0
