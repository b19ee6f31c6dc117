"""The table's output over seeded multi-round replays is byte-for-byte what it was before the
replay speed work of issue 32 (item 3): every step's effects as the journal writes them (each
round's recall record, the link messages, prompts, lights and settlement lines), the event
rows, the checkpoints and the final snapshot, digested with SHA-256.

The rounds are those of ``bench/replay_rounds.py`` (its seeded generator: side bets,
insurance, EZ Bust, splits, doubles, surrenders, the cut card and shuffles). The golden
digests were computed with the code of main at a065f08, before any of that work.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from controller.games import load_game
from controller.journal.store import dumps
from controller.table import Table, TableSettings
from controller.table import checkpoint as checkpoints
from controller.table.effects import Record

BENCH = Path(__file__).resolve().parent.parent / "bench" / "replay_rounds.py"

GOLDEN = {
    # game: (rounds, seed, events, digest)
    "pa-standard": (
        60,
        11,
        2433,
        "0cfb809b262f319d892025645900ea5b3ad82e3b6d6e8a3fe12b7828453dd279",
    ),
    "blackjack-tie": (
        60,
        11,
        3267,
        "cb05eb44533f48b926b78f8b26c6b7f6a776a06db27922dccbb1749de0710e56",
    ),
    "double-up": (
        60,
        11,
        2027,
        "7c6728b25e39e73f05f8ebd52dc4a8799ef642815833b709fe6a1ceca11f935c",
    ),
    "online-6deck": (
        60,
        11,
        1794,
        "dec5e32b2941482ab4193b7a9026a910bb320b0c80d4db1c2d6a9c22da092f35",
    ),
}


def _bench():
    spec = importlib.util.spec_from_file_location("replay_rounds_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay_digest(game: str, rounds: int, seed: int) -> tuple[int, int, str]:
    """Events, round records and the SHA-256 of everything the table wrote replaying the
    bench's seeded rounds through a fresh 7-spot table."""
    rules = load_game(game)
    events = _bench().generate(rules, rounds, seed).events
    table = Table(rules, TableSettings(spots=7))
    digest = hashlib.sha256()
    records = 0
    for number, event in enumerate(events):
        step = table.handle(event)
        digest.update(dumps(event.to_dict()).encode())
        digest.update(b"\n%d %d\n" % (step.accepted, step.journal))
        for effect in step.effects:
            digest.update(dumps(effect.to_dict()).encode())
            digest.update(b"\n")
            if isinstance(effect, Record):
                records += 1
                digest.update(dumps(effect.data).encode())  # the journal's ``rounds`` row
        if event.TYPE == "end_round" or number % 5 == 0:
            digest.update(dumps(checkpoints.encode(table.state)).encode())
    digest.update(dumps(table.snapshot()).encode())
    return len(events), records, digest.hexdigest()


@pytest.mark.parametrize("game", sorted(GOLDEN))
def test_replay_writes_what_main_wrote(game: str) -> None:
    rounds, seed, events, expected = GOLDEN[game]
    got_events, records, digest = replay_digest(game, rounds, seed)
    assert (got_events, records) == (events, rounds)
    assert digest == expected


def test_a_table_that_forgets_its_settlement_lines_writes_the_same(monkeypatch) -> None:
    """The settlement lines a table remembers (``procedure.SETTLED_KEPT``) are forgotten all
    at once when there are too many: with room for 8 it is forgotten every round or two, and
    the replay writes the same bytes."""
    from controller.table import procedure

    monkeypatch.setattr(procedure, "SETTLED_KEPT", 8)
    rounds, seed, events, expected = GOLDEN["pa-standard"]
    assert replay_digest("pa-standard", rounds, seed) == (events, rounds, expected)
