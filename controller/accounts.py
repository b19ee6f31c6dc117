"""Named accounts and their roles on the table (issue 28 item 1).

58 Pa. Code 605a.4(d)(3)-(4) and GLI-24 2.3 ask that access be limited to named personnel and
their actions logged. Each person has an account: a name, a role and a scrypt hash of the
password (``controller.web.auth``), one line each in the users file, ``name:role:hash``, by
default ``users`` beside the table's config (``/etc/table-controller/users``; ``[web]
users_file``), mode 0640 owner root, group table-controller: the service reads it, only root
(``table-controller user ...``) writes it.

Roles hold named permissions (as OctoPrint's groups do): an action asks for a permission, never
for a role or a name.

- ``technician``: read, acknowledge alarms, clear faults, the light test, a new journal file;
- ``supervisor``: everything a technician may, and confirm or void a jackpot award (the hand
  pay, item 2);
- ``auditor``: read only: recall, history, reports, the audit list.

Until a users file exists the old single ``[web] password_hash`` is one ``technician`` account
(the name typed with it is recorded, as before): docs/web.md, "Accounts".
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from controller.errors import TableControllerError

ROLES = ("technician", "supervisor", "auditor")

_TECHNICIAN = frozenset(
    {"read", "acknowledge_alarm", "clear_faults", "light_test", "rotate_journal"}
)
PERMISSIONS: Mapping[str, frozenset[str]] = {
    "technician": _TECHNICIAN,
    "supervisor": _TECHNICIAN | {"confirm_award", "void_award"},
    "auditor": frozenset({"read"}),
}
"""What each role may do; every page action asks for one of these."""

NAME = re.compile(r"^[a-z][a-z0-9._-]{1,31}$")
NAME_RULE = "2 to 32 of a-z 0-9 . _ -, starting with a letter (e.g. jsmith)"

MIN_LENGTH = 10
MAX_LENGTH = 128
MIN_DISTINCT = 5
COMMON = frozenset(
    {
        "password123",
        "password1234",
        "passw0rd123",
        "1234567890",
        "0123456789",
        "qwertyuiop",
        "letmein123",
        "blackjack21",
        "changeme123",
        "administrator",
    }
)
"""A few passwords every guesser tries first; refused whatever their length."""

FILE_MODE = 0o640
SERVICE_GROUP = "table-controller"


class AccountError(TableControllerError, ValueError):
    """A refused account change or a users file that cannot be read; says what to do."""


@dataclass(frozen=True, slots=True)
class Account:
    name: str
    role: str
    password_hash: str

    def may(self, permission: str) -> bool:
        return permission in PERMISSIONS[self.role]


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise AccountError(f"account name {str(name)[:40]!r} refused: {NAME_RULE}")
    return name


def check_role(role: object) -> str:
    if role not in ROLES:
        raise AccountError(f"role {str(role)[:40]!r} refused: one of {', '.join(ROLES)}")
    return str(role)


def password_problem(name: str, password: str) -> str | None:
    """Why ``password`` is too weak for account ``name``, or None."""
    if len(password) < MIN_LENGTH:
        return f"at least {MIN_LENGTH} characters (got {len(password)})"
    if len(password) > MAX_LENGTH:
        return f"at most {MAX_LENGTH} characters"
    if len(set(password)) < MIN_DISTINCT:
        return f"at least {MIN_DISTINCT} different characters"
    if name.lower() in password.lower():
        return "it must not contain the account name"
    if password.lower() in COMMON:
        return "it is one of the passwords every guesser tries first"
    return None


def mode_problem(path: Path) -> str | None:
    """The users file readable by others or writable by its group or others, or None."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & (stat.S_IROTH | stat.S_IWOTH | stat.S_IWGRP):
        return (
            f"{path} is mode {mode:04o}: the accounts' hashes must be readable by root and "
            f"the service only: sudo chown root:{SERVICE_GROUP} {path} && sudo chmod "
            f"{FILE_MODE:o} {path}"
        )
    return None


def parse_users(text: str, source: str) -> dict[str, Account]:
    """The accounts of a users file's text; AccountError naming the line otherwise."""
    from controller.web.auth import PasswordHashError, parse_hash

    accounts: dict[str, Account] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(":")
        where = f"{source} line {number}"
        if len(parts) != 3:
            raise AccountError(f"{where}: not NAME:ROLE:HASH; manage the file with "
                               "table-controller user")  # fmt: skip
        name, role, hashed = parts
        try:
            check_name(name)
            check_role(role)
            parse_hash(hashed)
        except (AccountError, PasswordHashError) as exc:
            raise AccountError(f"{where}: {exc}") from None
        if name in accounts:
            raise AccountError(f"{where}: account {name!r} is listed twice")
        accounts[name] = Account(name, role, hashed)
    return accounts


def format_users(accounts: Iterable[Account]) -> str:
    lines = ["# table-controller accounts: NAME:ROLE:HASH (table-controller user ...)"]
    for a in sorted(accounts, key=lambda a: a.name):
        lines.append(f"{a.name}:{a.role}:{a.password_hash}")
    return "\n".join(lines) + "\n"


def read_users(path: Path) -> dict[str, Account] | None:
    """The accounts in ``path``; None when it does not exist (the old single password)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AccountError(f"cannot read the users file {path}: {exc}") from None
    return parse_users(text, str(path))


def write_users(path: Path, accounts: Iterable[Account]) -> None:
    """Replace ``path`` with ``accounts`` at once (a new file renamed over the old, fsynced),
    mode 0640, keeping the old file's owner and group (or, as root, the service's group)."""
    text = format_users(accounts)
    owner = group = None
    try:
        st = os.stat(path)
        owner, group = st.st_uid, st.st_gid
    except FileNotFoundError:
        if os.geteuid() == 0:
            import grp

            try:
                owner, group = 0, grp.getgrnam(SERVICE_GROUP).gr_gid
            except KeyError:
                owner = group = None
    fd, tmp = tempfile.mkstemp(prefix=".users-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), FILE_MODE)
            if owner is not None and os.geteuid() == 0:
                os.fchown(handle.fileno(), owner, group)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with __import__("contextlib").suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class AccountStore:
    """The users file as the running table reads it: read again whenever it changed (a
    ``user add`` takes effect at the next login; a removed account's sessions end)."""

    def __init__(self, path: Path | None, legacy_hash: str = ""):
        self.path = path
        self.legacy_hash = legacy_hash
        self._seen: tuple[int, int] | None = None
        self._accounts: dict[str, Account] | None = None

    def accounts(self) -> dict[str, Account] | None:
        """The accounts, or None while no users file exists (the old single password)."""
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._accounts = None, None
            return None
        key = (st.st_mtime_ns, st.st_size)
        if key != self._seen:
            self._accounts = read_users(self.path)
            self._seen = key
        return self._accounts

    def find(self, name: str) -> Account | None:
        accounts = self.accounts()
        return None if accounts is None else accounts.get(name)

    @property
    def enabled(self) -> bool:
        """Whether anyone can log in: a users file, or the old ``password_hash``."""
        return self.accounts() is not None or bool(self.legacy_hash)
