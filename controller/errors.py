"""The table controller's exception hierarchy.

Every error derives from :class:`TableControllerError` *and* the builtin that
fits it (as gpiozero's ``exc.py`` does), so callers may catch either. Messages
say what was wrong and what to do about it.
"""

from __future__ import annotations


class TableControllerError(Exception):
    """Base of every error this package raises on purpose."""


class CardError(TableControllerError, ValueError):
    """Card text that names no card, or a card the shoe cannot hold."""


class ProfileError(TableControllerError, ValueError):
    """A house-rule profile with a wrong key or value.

    ``source`` is the file (or other origin), ``section`` the TOML table and
    ``key`` the offending key; all three appear in the message.
    """

    def __init__(self, source: str, section: str, key: str | None, problem: str):
        self.source = source
        self.section = section
        self.key = key
        self.problem = problem
        where = f"[{section}]" if section else "top level"
        if key is not None:
            where += f" key '{key}'"
        super().__init__(f"{source}: {where}: {problem}")


class WagerError(TableControllerError, ValueError):
    """A wager the house rules do not accept (amount, limit or timing)."""


class RuleViolation(TableControllerError, ValueError):
    """A player or dealer action the house rules refuse; the message names the rule."""


class EventError(TableControllerError, ValueError):
    """An event (script line, journal record, driver message) that is malformed."""


class ProcedureError(TableControllerError, ValueError):
    """An event the dealing procedure does not allow now; the message says what to do."""


class JournalError(TableControllerError, OSError):
    """The journal could not be opened, read or written, or belongs to another table;
    the message names the file, what failed and what to do."""
