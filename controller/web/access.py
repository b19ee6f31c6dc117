"""Who may do what on the diagnostics page, and the audit list of it (issue 28 item 1).

The page's logins are the accounts of the users file (``controller.accounts``), or, while
there is none, the old single ``[web] password_hash`` as one ``technician`` account. Every
action asks for a permission (:data:`ACTION_PERMISSION`); a session whose account was removed
or whose role changed ends at its next request. Every login, failed login, logout and action
(allowed or refused) goes to the audit list (``controller.audit``) with the account and the
UTC time.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from controller.accounts import PERMISSIONS, Account, AccountError, AccountStore
from controller.audit import AuditLog
from controller.web.auth import Session, hash_password, verify_password

log = logging.getLogger("table-controller.web")

ACTION_PERMISSION = {
    "/api/alarms/ack": "acknowledge_alarm",
    "/api/faults/clear": "clear_faults",
    "/api/lights/test": "light_test",
    "/api/journal/rotate": "rotate_journal",
    "/api/awards/confirm": "confirm_award",
    "/api/awards/void": "void_award",
}
"""The permission each page action needs (``controller.accounts.PERMISSIONS``)."""

ACTION_WORDS = {
    "acknowledge_alarm": "acknowledging an alarm",
    "clear_faults": "clearing the faults",
    "light_test": "the light test",
    "rotate_journal": "starting a new journal file",
    "confirm_award": "confirming a jackpot award",
    "void_award": "voiding a jackpot award",
    "read": "reading this page",
}


@dataclass(frozen=True, slots=True)
class LoginResult:
    ok: bool
    role: str = ""
    legacy: bool = False
    why: str = ""  # for the audit list: "wrong password", "unknown account", "legacy"


@functools.cache
def _decoy() -> str:
    """A hash checked for an unknown account, so it costs what a known one does."""
    return hash_password("no account has this password")


class Access:
    """The accounts (``store``) and the audit list (``audit``; None: not kept, a bare web
    server in a test)."""

    def __init__(self, store: AccountStore, audit: AuditLog | None = None):
        self.store = store
        self.audit = audit
        self.verify = verify_password  # the password check (the web server's, for its tests)

    @property
    def enabled(self) -> bool:
        return self.store.enabled

    def accounts(self) -> dict[str, Account] | None:
        try:
            return self.store.accounts()
        except AccountError:
            log.exception("web: the users file cannot be read: every login is refused")
            return {}

    def check(self, name: str, password: str) -> LoginResult:
        """The password check (slow: scrypt) for account ``name``."""
        accounts = self.accounts()
        if accounts is None:  # no users file: the old single technicians' password
            if self.verify(password, self.store.legacy_hash):
                return LoginResult(True, "technician", legacy=True)
            return LoginResult(False, why="legacy")  # the one password: only it can be wrong
        account = accounts.get(name)
        if account is None:
            self.verify(password, _decoy())
            return LoginResult(False, why="unknown account")
        if self.verify(password, account.password_hash):
            return LoginResult(True, account.role)
        return LoginResult(False, why="wrong password")

    def current(self, session: Session) -> bool:
        """Whether the session's account still is what it was at login."""
        accounts = self.accounts()
        if accounts is None:
            return session.legacy
        account = accounts.get(session.user)
        return not session.legacy and account is not None and account.role == session.role

    @staticmethod
    def may(session: Session, permission: str) -> bool:
        return permission in PERMISSIONS.get(session.role, ())

    def refusal(self, session: Session, permission: str) -> str:
        allowed = [role for role, perms in PERMISSIONS.items() if permission in perms]
        article = "an" if session.role[:1] in "aeiou" else "a"
        return (
            f"refused: {ACTION_WORDS.get(permission, permission)} needs a "
            f"{' or '.join(allowed)} account; {session.user} is {article} {session.role}"
        )

    def record(
        self,
        who: str,
        action: str,
        outcome: str = "ok",
        *,
        role: str = "",
        object: str = "",
        detail: str = "",
        address: str = "",
    ) -> None:
        if self.audit is None:
            return
        try:
            self.audit.record(
                who, action, outcome, role=role, object=object, detail=detail,
                source=f"web {address}" if address else "web",
            )  # fmt: skip
        except Exception:  # the page goes on; the log says the audit list missed a row
            log.exception("web: the audit list could not record %s by %s", action, who)
