"""``table-controller user add|remove|list|passwd --config FILE`` and the audit list of the
Pi's privileged commands (issue 28 item 1; docs/web.md, "Accounts").

The users file is ``[web] users_file`` (``users`` beside the config); only root writes it
(run these with sudo). Every command, done or refused, is a row of the audit list
(``DATA_DIR/audit.sqlite``) naming the account that ran it (``SUDO_USER``, else the user): a
refusal changes nothing. The list is opened before anything is changed, so a command that
cannot be recorded is not carried out.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from controller.accounts import (
    ROLES,
    Account,
    AccountError,
    check_name,
    check_role,
    password_problem,
    read_users,
    write_users,
)
from controller.audit import AUDIT_NAME, AuditLog, command_line_account


def open_audit(config: Any) -> AuditLog:
    """The table's audit list, for a command on the Pi (made if missing)."""
    from controller.errors import TableControllerError

    try:
        return AuditLog(config.data_dir / AUDIT_NAME)
    except Exception as exc:  # a command that cannot be recorded is not carried out
        raise TableControllerError(
            f"the audit list {config.data_dir / AUDIT_NAME} cannot be written ({exc}): "
            "nothing done; run the command with sudo"
        ) from None


def audited(config: Any, action: str) -> Any:
    """``(audit, record)``: the list opened now (before anything changes) and a function
    ``record(outcome, object, detail)`` for the command's row."""
    audit = open_audit(config)
    who = command_line_account()

    def record(outcome: str = "ok", object: str = "", detail: str = "") -> None:
        audit.record(
            who, action, outcome, object=object, detail=detail,
            source=f"command line: table-controller {action.replace('_', '-')}",
        )  # fmt: skip

    return audit, record


def _password(args: argparse.Namespace, name: str) -> str:
    if args.stdin:
        return sys.stdin.readline().rstrip("\r\n")
    password = getpass.getpass(f"Password for {name}: ")
    if getpass.getpass("Again: ") != password:
        raise AccountError("the two passwords differ")
    return password


def _cmd_user(args: argparse.Namespace) -> int:
    from controller.config import load_table_config
    from controller.web.auth import hash_password

    config = load_table_config(args.config)
    path = config.web.users_file
    _, record = audited(config, f"user_{args.action}")
    name = getattr(args, "name", "") or ""
    try:
        accounts = read_users(path) or {}
        if args.action == "list":
            for account in sorted(accounts.values(), key=lambda a: a.name):
                print(f"{account.name}\t{account.role}")
            if not accounts:
                print(f"no accounts in {path}: the page's login is [web] password_hash")
            record(detail=f"{len(accounts)} accounts")
            return 0
        check_name(name)
        if args.action == "add":
            role = check_role(args.role)
            if name in accounts:
                raise AccountError(f"account {name!r} exists already (user passwd to change "
                                   "its password, user remove to take it away)")  # fmt: skip
        elif name not in accounts:
            raise AccountError(f"no account {name!r} in {path} (user list shows them)")
        else:
            role = accounts[name].role
        if args.action == "remove":
            del accounts[name]
            write_users(path, accounts.values())
            record(object=name, detail=f"was a {role}")
            print(f"removed {name} ({role}) from {path}; its sessions end at their next request")
            return 0
        password = _password(args, name)
        problem = password_problem(name, password)
        if problem:
            raise AccountError(f"password refused: {problem}")
        accounts[name] = Account(name, role, hash_password(password))
        write_users(path, accounts.values())
    except AccountError as exc:
        record("refused", object=name[:40], detail=str(exc))
        print(f"table-controller user {args.action}: {exc}; nothing changed", file=sys.stderr)
        return 2
    record(object=name, detail=f"role {role}")
    verb = "added" if args.action == "add" else "new password for"
    print(f"{verb} {name} ({role}) in {path}")
    if args.action == "add" and len(accounts) == 1 and config.web.password_hash:
        print("the users file exists now: [web] password_hash no longer logs in; remove it "
              "from the config")  # fmt: skip
    return 0


def add_user_parser(commands: Any) -> None:
    user = commands.add_parser("user", help="the accounts of the diagnostics page (sudo)")
    actions = user.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, words in (
        ("add", "a new account"),
        ("remove", "take an account away"),
        ("list", "the accounts and their roles"),
        ("passwd", "a new password for an account"),
    ):
        sub = actions.add_parser(action, help=words)
        if action != "list":
            sub.add_argument("name", help="the account name (e.g. jsmith)")
        if action == "add":
            sub.add_argument("--role", required=True, help=f"one of {', '.join(ROLES)}")
        if action in ("add", "passwd"):
            sub.add_argument("--stdin", action="store_true", help="read the password from stdin")
        sub.add_argument("--config", required=True, help="the table config: [web] users_file")
        sub.set_defaults(run=_cmd_user)
