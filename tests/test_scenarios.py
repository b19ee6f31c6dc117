"""The dealer's procedure as scenario scripts: every ``docs/scenarios/*.jsonl`` replays clean.

Each script is a round (or a few) of one game, written as the dealer's procedure with the rule
card it exercises quoted in its comments; its expectations (prompts, refusals, alarms, every
settlement in cents, each spot's net) are checked against the table state machine. One script
also runs through the real command line, as a disputed round would be replayed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli

from controller.games import load_game
from controller.table.effects import Publish
from controller.table.script import Expectation, ReplayResult, parse_script, replay

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "docs" / "scenarios"
SCRIPTS = sorted(SCENARIOS.glob("*.jsonl"))

# Scripts whose correct expectation the machine does not meet yet: name -> reason.
# strict: a script that starts passing must leave this list.
KNOWN_FAILURES: dict[str, str] = {}


def _params() -> list:
    return [
        pytest.param(
            path,
            id=path.stem,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[path.name])]
            if path.name in KNOWN_FAILURES
            else [],
        )
        for path in SCRIPTS
    ]


def _replay(path: Path) -> tuple[list[Expectation], ReplayResult]:
    script = parse_script(path.read_text(encoding="utf-8"), str(path))
    game = script.header.get("game")
    assert game, f"{path.name}: the header must name the game"
    result = replay(script, load_game(game))
    expectations = [item for item in script.items if isinstance(item, Expectation)]
    return expectations, result


def test_there_are_at_least_25_scenarios():
    assert len(SCRIPTS) >= 25, [p.name for p in SCRIPTS]


def test_known_failures_name_existing_scripts():
    names = {path.name for path in SCRIPTS}
    assert set(KNOWN_FAILURES) <= names


@pytest.mark.parametrize("path", _params())
def test_scenario_replays_without_a_failed_expectation(path: Path):
    expectations, result = _replay(path)
    assert result.checked == len(expectations)
    assert not result.failures, "\n".join(result.failures)


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_scenario_is_a_readable_checked_procedure(path: Path):
    text = path.read_text(encoding="utf-8")
    script = parse_script(text, str(path))
    header = script.header
    assert header.get("type") == "header" and header.get("version") == 1
    assert 1 <= header.get("table", {}).get("spots", 0) <= 4, "a small table: 1 to 4 spots"
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert any(".txt" in line or "Issue 3" in line for line in comments), (
        "quote the rule card (seed file name) or the issue the script exercises"
    )
    kinds = [item.spec["expect"] for item in script.items if isinstance(item, Expectation)]
    assert len(kinds) >= 3
    assert {"settled", "refused"} & set(kinds), "at least one settled or refused expectation"
    assert "net" in kinds, "state each spot's net at the end"


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_publish_keys_are_unique_and_contributions_once_per_wager(path: Path):
    _, result = _replay(path)
    published = [
        effect for _, step in result.steps for effect in step.effects if isinstance(effect, Publish)
    ]
    repeated = [key for key, n in Counter(p.key for p in published).items() if n > 1]
    assert not repeated, repeated
    contributions = Counter(
        (p.payload["round"], p.payload["spot"], p.payload["wager"])
        for p in published
        if p.topic == "contribution"
    )
    assert all(n == 1 for n in contributions.values()), contributions


def test_replay_on_the_command_line_prints_the_settlements():
    path = SCENARIOS / "24-lucky-ladies-queen-of-hearts-pair-with-dealer-blackjack.jsonl"
    done = run_cli("replay", str(path), "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    out = json.loads(done.stdout)
    assert out["game"] == "pa-standard"
    assert out["expectations"]["failed"] == []
    lines = {(s["spot"], s["wager"]): s for s in out["settlements"]}
    queens = lines[(1, "lucky_ladies")]
    assert (queens["stake"], queens["paid"], queens["returned"]) == (500, 500000, 500)
    assert queens["pays"] == "1,000 to 1"
    assert lines[(1, "insurance")]["paid"] == 1000
    assert lines[(2, "lucky_ladies")]["paid"] == 5000
    assert lines[(3, "lucky_ladies")]["paid"] == 2000
    assert all(lines[(spot, "main")]["outcome"] == "lose" for spot in (1, 2, 3))
    assert out["net_by_spot"] == {"1": 500000, "2": 4000, "3": 1000}
    _, result = _replay(path)
    assert out["settlements"] == [s.to_dict() for s in result.settlements()]


def test_a_failed_expectation_fails_the_command_line(tmp_path: Path):
    source = SCENARIOS / "01-blackjack-paid-at-once-against-2-to-9.jsonl"
    wrong = source.read_text(encoding="utf-8").replace('"paid":1500', '"paid":1000', 1)
    path = tmp_path / "wrong.jsonl"
    path.write_text(wrong, encoding="utf-8")
    done = run_cli("replay", str(path))
    assert done.returncode == 1
    assert "FAILED line" in done.stdout
