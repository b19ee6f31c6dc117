"""Named accounts on the table, managed on the Pi (issue 28 item 1): ``table-controller user
add|remove|list|passwd --config FILE``, the users file (0640, ``NAME:ROLE:HASH``), the audit
list of every command, done or refused, and ``check-config``'s checks of the file. Real files
and the real command line in its own process; no mocks."""

from __future__ import annotations

import getpass
import os
import stat
from pathlib import Path

import pytest
from conftest import run_cli
from test_config import on_this_machine

from controller.accounts import AccountError, parse_users, password_problem, read_users
from controller.audit import AuditLog, record_start
from controller.config import check_paths, load_table_config
from controller.web.auth import verify_password

GOOD = "Felt-and-Chips-2026"


def audit_rows(config_path: Path) -> list[dict]:
    config = load_table_config(config_path)
    return AuditLog(config.data_dir / "audit.sqlite").recent()


def user(config: Path, *args: str, stdin: str | None = None):
    return run_cli("user", *args, "--config", str(config), stdin=stdin)


def add(config: Path, name: str, role: str):
    return user(config, "add", name, "--role", role, "--stdin", stdin=GOOD + "\n")


def test_accounts_are_added_listed_changed_and_removed_each_one_audited(tmp_path):
    config = on_this_machine(tmp_path)
    users = tmp_path / "users"
    assert not users.exists()
    done = user(config, "add", "jsmith", "--role", "technician", "--stdin", stdin=GOOD + "\n")
    assert done.returncode == 0, done.stderr
    assert "added jsmith (technician)" in done.stdout
    assert stat.S_IMODE(users.stat().st_mode) == 0o640
    accounts = read_users(users)
    assert list(accounts) == ["jsmith"] and accounts["jsmith"].role == "technician"
    assert verify_password(GOOD, accounts["jsmith"].password_hash)
    assert GOOD not in users.read_text()  # only its hash
    done = user(config, "add", "mlopez", "--role", "supervisor", "--stdin", stdin=GOOD + "!\n")
    assert done.returncode == 0, done.stderr
    listed = user(config, "list")
    assert listed.stdout.splitlines() == ["jsmith\ttechnician", "mlopez\tsupervisor"]
    old = read_users(users)["jsmith"].password_hash
    done = user(config, "passwd", "jsmith", "--stdin", stdin="Another-Good-One-9\n")
    assert done.returncode == 0, done.stderr
    new = read_users(users)["jsmith"]
    assert new.password_hash != old and new.role == "technician"
    assert verify_password("Another-Good-One-9", new.password_hash)
    done = user(config, "remove", "jsmith")
    assert done.returncode == 0 and list(read_users(users)) == ["mlopez"]
    rows = audit_rows(config)[::-1]
    me = os.environ.get("SUDO_USER") or getpass.getuser()
    assert [(r["action"], r["object"], r["outcome"]) for r in rows] == [
        ("user_add", "jsmith", "ok"),
        ("user_add", "mlopez", "ok"),
        ("user_list", "", "ok"),
        ("user_passwd", "jsmith", "ok"),
        ("user_remove", "jsmith", "ok"),
    ]
    assert {r["account"] for r in rows} == {me}
    assert all(r["utc_ms"] > 1_700_000_000_000 for r in rows)  # UTC milliseconds


@pytest.mark.parametrize(
    ("args", "stdin", "words"),
    [
        (("add", "mlopez", "--role", "technician", "--stdin"), GOOD, "exists already"),
        (("add", "newbie", "--role", "pitboss", "--stdin"), GOOD, "role 'pitboss' refused"),
        (("add", "newbie", "--role", "auditor", "--stdin"), "short1", "at least 10 characters"),
        (("add", "newbie", "--role", "auditor", "--stdin"), "aaaaaaaaaaaa", "5 different"),
        (("add", "newbie", "--role", "auditor", "--stdin"), "newbie-2026-x", "account name"),
        (("add", "Bad Name", "--role", "auditor", "--stdin"), GOOD, "account name"),
        (("remove", "ghost"), None, "no account 'ghost'"),
        (("passwd", "ghost", "--stdin"), GOOD, "no account 'ghost'"),
    ],
)
def test_a_bad_command_is_refused_changes_nothing_and_is_audited(tmp_path, args, stdin, words):
    config = on_this_machine(tmp_path)
    assert (
        user(config, "add", "mlopez", "--role", "supervisor", "--stdin", stdin=GOOD).returncode == 0
    )
    before = (tmp_path / "users").read_bytes()
    done = user(config, *args, stdin=None if stdin is None else stdin + "\n")
    assert done.returncode == 2, done
    assert words in done.stderr and "nothing changed" in done.stderr, done.stderr
    assert (tmp_path / "users").read_bytes() == before
    last = audit_rows(config)[0]
    assert (last["action"], last["outcome"]) == (f"user_{args[0]}", "refused")
    assert words in last["detail"]


def test_the_password_rule():
    assert password_problem("jsmith", GOOD) is None
    assert "10 characters" in password_problem("jsmith", "Short-1")
    assert "account name" in password_problem("jsmith", "xx-JSmith-2026")
    assert "guesser" in password_problem("ana", "Password123")


def test_a_users_file_others_can_read_or_malformed_fails_check_config(tmp_path):
    config_path = on_this_machine(tmp_path)
    assert (
        user(config_path, "add", "mlopez", "--role", "supervisor", "--stdin", stdin=GOOD).returncode
        == 0
    )
    config = load_table_config(config_path)
    assert check_paths(config) == []
    users = tmp_path / "users"
    users.chmod(0o644)
    (error,) = check_paths(config)
    assert (error.section, error.key) == ("web", "users_file") and "0644" in str(error)
    users.chmod(0o640)
    users.write_text(users.read_text() + "someone:owner:scrypt$1$2$3$x$y\n")
    (error,) = check_paths(config)
    assert "line 3" in str(error) and "role 'owner' refused" in str(error)
    with pytest.raises(AccountError, match="listed twice"):
        line = users.read_text().splitlines()[1]
        parse_users(f"{line}\n{line}\n", "users")


def test_commands_on_the_pi_leave_a_record_of_who_ran_them(tmp_path):
    config = on_this_machine(tmp_path)
    refused = run_cli("link-key", "--config", str(config))  # a key is never overwritten
    assert refused.returncode == 2
    (tmp_path / "link-signing.key").rename(tmp_path / "old.key")
    done = run_cli("link-key", "--config", str(config))
    assert done.returncode == 0, done.stderr
    refused = run_cli("journal-set-aside", "--config", str(config))  # no journal yet
    assert refused.returncode == 2
    rows = audit_rows(config)[::-1]
    assert [(r["action"], r["outcome"]) for r in rows] == [
        ("link_key", "refused"),
        ("link_key", "ok"),
        ("journal_set_aside", "refused"),
    ]
    assert "never overwritten" in rows[0]["detail"]
    assert rows[1]["object"] == "hcm-bj-07-1" and rows[2]["detail"] == "no journal to set aside"


def test_a_start_with_a_changed_config_is_in_the_audit_list(tmp_path):
    audit = AuditLog(tmp_path / "audit.sqlite")
    assert record_start(audit, "table.toml", "a" * 64) is False
    assert record_start(audit, "table.toml", "a" * 64) is False
    assert record_start(audit, "table.toml", "b" * 64) is True
    rows = audit.recent()
    assert [r["action"] for r in rows] == [
        "service_start",
        "config_changed",
        "service_start",
        "service_start",
    ]
    assert (
        rows[1]["detail"] == "table.toml: sha256 aaaaaaaaaaaa at the last start, bbbbbbbbbbbb now"
    )
