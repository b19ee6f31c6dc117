"""Pay tables that are approved (issue 29 item 6): a profile from outside the package plays
only when the config names its SHA-256 (N.J.A.C. 13:69E-1.28H; 58 Pa. Code 605a.4(c)), and
journal files are kept a year unless a demo or test table says why (N.J.A.C. 13:69E-1.31(b)).
The journal's meta ``game_sha256``: tests/test_journal_rotation_runtime.py."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from conftest import profile_text
from test_config import ROOT, errors_of, one_error, write

from controller.config import load_table_config


def check_config(path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "controller", "check-config", str(path), "--no-files"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_profile_from_outside_the_package_needs_its_approved_sha256(tmp_path, monkeypatch):
    house = profile_text("pa-standard").replace('name = "pa-standard"', 'name = "house"', 1)
    games = tmp_path / "games"
    games.mkdir()
    (games / "house.toml").write_text(house, encoding="utf-8")
    digest = hashlib.sha256(house.encode()).hexdigest()
    monkeypatch.setenv("TABLE_CONTROLLER_GAMES", str(games))
    pins = ('game = "pa-standard"       # the profile this map', 'game = "house" #')
    path = write(tmp_path, ('game = "pa-standard"', 'game = "house"'), pins)
    error = one_error(path, "table", "game")
    assert f"'house' is a profile from outside the package ({games / 'house.toml'})" in str(error)
    assert f'game_sha256 (now "{digest}")' in error.problem and "13:69E-1.28H" in error.problem
    result = check_config(path)  # the command says so, exit 2
    assert result.returncode == 2 and "game_sha256" in result.stderr + result.stdout
    # the approved digest plays it; another digest, or the file changed, is refused
    approved = ('game = "pa-standard"', f'game = "house"\ngame_sha256 = "{digest}"')
    path = write(tmp_path, approved, pins)
    config = load_table_config(path)
    assert (config.rules.name, config.game_sha256, config.game_packaged) == ("house", digest, False)
    result = check_config(path)
    assert result.returncode == 0, result.stderr
    assert f"game house (approved by game_sha256, sha256 {digest[:12]})" in result.stdout
    (games / "house.toml").write_text(house.replace("decks = 6", "decks = 8", 1), "utf-8")
    error = one_error(path, "table", "game_sha256")
    assert f"not the approved {digest}" in error.problem
    # a packaged profile needs none, and is checked against one if named
    packaged = hashlib.sha256((ROOT / "controller/profiles/pa-standard.toml").read_bytes())
    same = ('game = "pa-standard"', 'game = "pa-standard"')
    assert load_table_config(write(tmp_path, same)).game_sha256 == packaged.hexdigest()
    path = write(tmp_path, (same[0], f'{same[0]}\ngame_sha256 = "{digest}"'))
    assert one_error(path, "table", "game_sha256")


def test_journal_files_are_kept_a_year_unless_a_demo_says_why(tmp_path):
    path = write(tmp_path, ("keep_days = 400", "keep_days = 30"))
    error = one_error(path, "journal", "keep_days")
    assert "below the 365 days" in error.problem and "N.J.A.C. 13:69E-1.31(b)" in error.problem
    assert "keep_days_reason" in error.problem
    why = "a demo table: nothing it plays is money"
    path = write(tmp_path, ("keep_days = 400", f'keep_days = 30\nkeep_days_reason = "{why}"'))
    assert load_table_config(path).journal.keep_days == 30
    result = check_config(path)
    assert result.returncode == 0, result.stderr
    assert f"kept 30 days, below the 365-day floor (N.J.A.C. 13:69E-1.31(b)) because: {why}" in (
        result.stdout
    )
    path = write(tmp_path, ("keep_days = 400", f'keep_days = 365\nkeep_days_reason = "{why}"'))
    assert [e.key for e in errors_of(path)] == ["keep_days_reason"]
