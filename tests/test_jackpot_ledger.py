"""The jackpot controller's ledger, pools and Must-Hit-By Mystery (issue #5), on both backends:
a real SQLite file and a real PostgreSQL database (tests/pg_server.py), same tests, same results.

Run as a script (``feed LEDGER CONFIG COUNT``) it is the child process the crash test kills
with SIGKILL while it applies messages.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_server import BACKENDS, ledger_at, pg_server  # noqa: F401

from controller.games import load_game
from controller.link.messages import envelope as env
from controller.link.messages import validate
from controller.link.signing import new_signing_key, public_key_text
from controller.table.effects import Publish
from controller.table.script import parse_script, replay
from jackpot.chain import V5_COLUMNS
from jackpot.draws import TriggerKey
from jackpot.ledger import Ledger, LedgerError, LedgerFenced, Status
from jackpot.pools import JackpotConfigError, contribution, load_config, parse_config
from jackpot.store import open_store

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config" / "jackpot.example.toml"
CONFIG = load_config(EXAMPLE)
T1, T2, T3 = "hcm-bj-07", "hcpn-bj-01", "hcy-bj-02"


def fixed(offset: int):
    """A randbelow that always draws ``offset`` (trigger = must_hit_from + offset)."""
    calls = []

    def randbelow(n: int) -> int:
        calls.append(n)
        return offset

    randbelow.calls = calls
    return randbelow


def envelope(table, seq, kind, key, payload):
    message = {"v": 1, "table": table, "boot": 1, "seq": seq, "key": key, "kind": kind,
               "sent_t": 1_700_000_000_000 + seq, "payload": payload}  # fmt: skip
    validate(kind, message)
    return message


def contrib(table, seq, rnd, spot=1, stake=500, mystery=True, game="pa-standard"):
    payload = {"round": rnd, "game": game, "spot": spot, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": stake, "mystery": mystery}  # fmt: skip
    return envelope(table, seq, "contribution", f"round-{rnd}/spot-{spot}/b7/c", payload)


LINES = {"100% of meter": "Three 7's - Diamonds", "10% of meter": "Three 7's - Suited (Other)"}


def result(table, seq, rnd, cards, up, meter="100% of meter", spot=1, hole="KH", hands=None):
    """The round's result as the table reports it: spot ``spot`` holds ``cards`` and won the
    meter line ``meter`` (None: no meter line)."""
    line = {"effect": "settled", "spot": spot, "wager": "blazing_7s", "stake": 500,
            "outcome": "win", "paid": 0, "returned": 0, "reason": LINES.get(meter, "x"),
            "meter": meter, "pool": "blazing_7s"}  # fmt: skip
    if meter is None:
        line = {k: v for k, v in line.items() if k not in ("meter", "pool")} | {"outcome": "lose"}
    payload = {"round": rnd, "game": "pa-standard", "void": None, "dealer": [up, hole],
               "spots": [{"spot": spot, "first_two": cards, "hands": hands or [cards]}],
               "settlements": [line], "stake": 500, "paid": 0, "returned": 0}  # fmt: skip
    return envelope(table, seq, "round_result", f"round-{rnd}/result", payload)


def claim(table, seq, rnd, cards, up, meter="100% of meter", spot=1, stake=500):
    payload = {"round": rnd, "game": "pa-standard", "spot": spot, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": stake, "line": LINES.get(meter, "x"),
               "meter": meter, "cards": cards, "up_card": up}  # fmt: skip
    return envelope(table, seq, "hit_claim", f"round-{rnd}/spot-{spot}/b7/hit", payload)


def hit(led, table, seq, rnd, cards, up, meter="100% of meter", spot=1):
    """Report round ``rnd`` (seq) and claim its meter line (seq + 1): the claim's result."""
    assert led.apply(result(table, seq, rnd, cards, up, meter, spot)).status is Status.APPLIED
    return led.apply(claim(table, seq + 1, rnd, cards, up, meter, spot))


def confirm(table, seq, award, amount=None):
    payload = {"award_id": award.award_id, "round": award.round, "spot": award.spot,
               "pool": award.pool, "amount": amount or award.amount, "confirmed_t": 5}  # fmt: skip
    return envelope(table, seq, "award_confirm", f"confirm/{award.award_id}/{seq}", payload)


def rows(location, sql: str) -> list[tuple]:
    """``sql``'s rows read through a connection of its own (as another process would)."""
    store = open_store(location)
    try:
        return [tuple(row) for row in store.execute(sql).fetchall()]
    finally:
        store.close()


def state(led) -> dict:
    """Everything a refused message must leave as it was (the applied rows but the last)."""
    at, order = led.path or led.location, led._db.award_order
    # the hash chain's columns come last (schema 5, jackpot/chain.py): not compared here
    return {
        "meters": led.meters(),
        "movements": [r[:-1] for r in rows(at, "SELECT * FROM movements ORDER BY n")],
        "awards": [r[:-2] for r in rows(at, f"SELECT * FROM awards ORDER BY {order}")],
        "applied": [r[:-1] for r in rows(at, "SELECT * FROM applied ORDER BY n")],
        "mystery": rows(at, "SELECT * FROM mystery ORDER BY pool"),
        "contributions": rows(at, "SELECT * FROM contributions ORDER BY table_id, seq, pool"),
        "round_results": rows(at, "SELECT * FROM round_results ORDER BY table_id, seq"),
        "tables": rows(at, "SELECT * FROM tables ORDER BY table_id"),
        "meta": rows(at, "SELECT * FROM meta ORDER BY key"),
    }


def assert_refused(led, message, alarm, words):
    """``message`` is refused with ``alarm`` and a reason holding ``words``; it takes its
    sequence; nothing else changes (meters, movements, awards but a claim's refused one, the
    applied rows but its own, the trigger, the proofs)."""
    before = state(led)
    got = led.apply(message)
    assert (got.status, got.alarm, got.ack) == (Status.REFUSED, alarm, message["seq"]), got
    assert words in got.reason, got.reason
    after = state(led)
    assert after["applied"][:-1] == before["applied"]
    assert after["applied"][-1][1:3] == (message["table"], message["seq"])
    assert after["applied"][-1][6:8] == ("refused", got.reason)
    refused = list(got.awards)
    assert all(a.state == "refused" and a.amount == 0 for a in refused)
    assert len(after["awards"]) == len(before["awards"]) + len(refused)
    assert after["awards"][: len(before["awards"])] == before["awards"]
    for key in ("meters", "movements", "mystery", "contributions", "round_results"):
        assert after[key] == before[key], key
    assert got.meters == ()
    return got


def trigger_on_disk(location) -> int:
    """The live Mystery trigger, opened with the trigger key (jackpot/draws.py): the ledger
    holds it sealed, never in the clear."""
    ((cycle, sealed),) = rows(location, "SELECT cycle, sealed FROM draws WHERE ended IS NULL")
    key = TriggerKey.load(os.environ["JACKPOT_TRIGGER_KEY"])
    return key.open("mystery", cycle, sealed)[0]


def every_cell(location) -> list:
    """Every value of every row of every ledger table, as a copy of the ledger shows it."""
    out = []
    for table in ("meta", "tables", "applied", "meters", "mystery", "movements", "awards",
                  "contributions", "round_results", "draws", "parameters", "changes",
                  "table_keys"):  # fmt: skip
        for row in rows(location, f"SELECT * FROM {table}"):
            out += list(row)
    return out


@pytest.fixture
def ledger(ledger_at):  # noqa: F811
    with Ledger(ledger_at(), CONFIG, randbelow=fixed(500)) as led:
        yield led


# -- config --------------------------------------------------------------------------------


def test_example_config():
    b7, mystery = CONFIG.pools["blazing_7s"], CONFIG.pools["mystery"]
    assert b7.rate * 500 == 75 and (b7.seed, b7.reset) == (1_000_000, 1_000_000)
    assert mystery.rate * 500 == Fraction(15, 2)
    assert (mystery.must_hit_from, mystery.must_hit_by) == (25_000, 100_000)
    assert len(CONFIG.properties) == 4 and T1 in CONFIG.tables
    assert CONFIG.games_for(T1) == ("pa-standard",)
    assert CONFIG.table_keys[T1] == {} and set(CONFIG.table_keys) == CONFIG.tables
    assert (CONFIG.link_key_id, CONFIG.link_signing_key) == (None, None)


def test_config_tables_and_link_sections():
    key = public_key_text(new_signing_key())
    text = (
        EXAMPLE.read_text()
        .replace("# [tables.hcm-bj-07]", "[tables.hcm-bj-07]")
        .replace(
            '# keys = { "hcm-bj-07-2026a" = "BASE64 PUBLIC KEY printed by table-controller '
            'link-key" }',
            f'keys = {{ "hcm-bj-07-2026a" = "{key}" }}',
        )
        .replace('# games = ["pa-standard"]', 'games = ["blackjack-tie"]')
        .replace("# [link]\n# key_id", "[link]\nkey_id")
        .replace("# signing_key", "signing_key")
    )
    config = parse_config(text, "jackpot.toml")
    (kid,) = config.table_keys[T1]
    assert kid == "hcm-bj-07-2026a" and public_key_text(config.table_keys[T1][kid]) == key
    assert config.table_keys["hcm-bj-01"] == {}
    assert config.games_for(T1) == ("blackjack-tie",)  # the table's list over its property's
    assert config.games_for("hcm-bj-01") == ("pa-standard",)
    assert (config.link_key_id, config.link_signing_key) == (
        "jackpot-2026a",
        "/etc/jackpot/link-key.pem",
    )
    no_games = parse_config(text.replace('games = ["pa-standard"]\n', ""), "j.toml")
    assert no_games.games_for("hcm-bj-01") is None


TABLE_SECTION = (
    '# [tables.hcm-bj-07]\n# keys = { "hcm-bj-07-2026a" = "BASE64 PUBLIC KEY printed by '
    'table-controller link-key" }'
)


@pytest.mark.parametrize(
    ("change", "section", "key"),
    [
        (('per = "$5"', 'per = "$5"\npers = 1'), "pools.blazing_7s", "pers"),
        (('"$0.75"', '"lots"'), "pools.blazing_7s", "contribution"),
        (('"1.5%"', '"150%"'), "pools.mystery", "contribution"),
        (('must_hit_by = "$1,000"', 'must_hit_by = "$100"'), "pools.mystery", "must_hit_by"),
        (('"hcy-bj-01"', '"hcm-bj-09"'), "properties.hcy", "tables"),
        (('seed = "$250"', 'seed = "$250.005"'), "pools.mystery", "seed"),
        (('games = ["pa-standard"]', 'games = ["PA Standard"]'), "properties.hcpn", "games"),
        (('games = ["pa-standard"]', "games = []"), "properties.hcpn", "games"),
        (
            (TABLE_SECTION, '[tables.hcm-bj-07]\nkeys = { "hcm-bj-07-a" = "not a key" }'),
            "tables.hcm-bj-07",
            "keys",
        ),
        (
            (TABLE_SECTION, '[tables.hcm-bj-07]\nkeys = { "bad id!" = "AAAA" }'),
            "tables.hcm-bj-07",
            "keys",
        ),
        ((TABLE_SECTION, "[tables.hcm-bj-07]\nkey = 1"), "tables.hcm-bj-07", "key"),
        ((TABLE_SECTION, '[tables.hcm-bj-07]\ngames = ["x y"]'), "tables.hcm-bj-07", "games"),
        ((TABLE_SECTION, "[tables.hcm-bj-99]"), "tables.hcm-bj-99", None),
        (("# [link]\n# key_id = ", "[link]\nkey_id = 7 # "), "link", "key_id"),
        (("# [link]\n# key_id", "[link]\nkey_id"), "link", "signing_key"),
    ],
)
def test_config_errors_name_file_section_key(change, section, key):
    text = EXAMPLE.read_text()
    assert change[0] in text
    with pytest.raises(JackpotConfigError) as err:
        parse_config(text.replace(*change), "jackpot.toml")
    assert (err.value.source, err.value.section, err.value.key) == ("jackpot.toml", section, key)
    where = f"[{section}]" + (f" key '{key}'" if key else "")
    assert f"jackpot.toml: {where}" in str(err.value)


# -- sequence: apply once, in order ----------------------------------------------------------


def test_contributions_accumulate_exactly(ledger):
    for seq in (1, 2, 3):
        result = ledger.apply(contrib(T1, seq, seq))
        assert (result.status, result.ack, result.alarm) == (Status.APPLIED, seq, None)
    meters = ledger.meters()
    assert (meters["blazing_7s"].amount, meters["blazing_7s"].fraction) == (1_000_225, 0)
    assert (meters["mystery"].amount, meters["mystery"].fraction) == (25_022, Fraction(1, 2))
    assert meters["mystery"].message(9)["fraction"] == "1/2"
    assert meters["blazing_7s"].seq == 4  # 1 at creation, +1 per change
    validate("meter", meters["mystery"].message(9))


def test_duplicate_and_replay_change_nothing(ledger):
    first = contrib(T1, 1, 1)
    ledger.apply(first)
    before = state(ledger)
    again = ledger.apply(first)
    assert (again.status, again.ack, again.alarm) == (Status.DUPLICATE, 1, None)
    assert "already applied" in again.reason
    # a resend after a restart (new boot, sent_t) signed with a rotated key: the same message
    resent = ledger.apply(first | {"boot": 2, "sent_t": 5, "kid": "new", "sig": "A" * 86 + "=="})
    assert (resent.status, resent.ack) == (Status.DUPLICATE, 1)
    assert state(ledger) == before
    # the same message under a new sequence (same key): refused, the sequence moves on
    got = assert_refused(ledger, dict(first, seq=2), "key_replay", "replay")
    assert got.ack == 2


def test_a_reused_sequence_with_other_content_is_a_conflict(ledger):
    ledger.apply(contrib(T1, 1, 1))
    ledger.apply(result(T1, 2, 1, ["7D", "7D"], "7D"))
    before = state(ledger)
    for other in (
        contrib(T1, 1, 1, spot=2),  # seq 1 again, another spot
        contrib(T1, 1, 5),  # another round
        result(T1, 2, 1, ["7D", "7D"], "7H"),  # seq 2 again, another up card
        claim(T1, 2, 1, ["7D", "7D"], "7D"),  # seq 2 again, another kind
    ):
        got = ledger.apply(other)
        assert (got.status, got.alarm, got.ack) == (Status.CONFLICT, "seq_conflict", None)
        assert got.reason.startswith(f"seq {other['seq']} was applied with other content")
        assert got.awards == () and got.meters == ()
    assert state(ledger) == before and ledger.ack(T1) == 2
    assert ledger.apply(claim(T1, 3, 1, ["7D", "7D"], "7D")).status is Status.APPLIED


def test_gap_asks_for_resend_and_changes_nothing(ledger):
    ledger.apply(contrib(T1, 1, 1))
    before = ledger.meters()
    gap = ledger.apply(contrib(T1, 4, 4))
    assert (gap.status, gap.resend_from, gap.ack) == (Status.GAP, 2, 1)
    assert gap.alarm is None and "resend" in gap.reason
    assert ledger.meters() == before and ledger.ack(T1) == 1
    for seq in (2, 3, 4):
        assert ledger.apply(contrib(T1, seq, seq)).status is Status.APPLIED
    assert ledger.ack(T1) == 4 and ledger.ack(T2) == 0


def test_unknown_table_and_malformed_are_refused(ledger):
    before = state(ledger)
    unknown = ledger.apply(contrib(T1, 1, 1) | {"table": "zz-bj-01"})
    assert (unknown.status, unknown.alarm) == (Status.UNKNOWN_TABLE, "unknown_table")
    assert "not in the jackpot config" in unknown.reason
    bad = contrib(T1, 1, 1)
    bad["payload"]["stake"] = 500.0
    for message in (bad, {"kind": "ack"}):
        got = ledger.apply(message)
        assert (got.status, got.alarm) == (Status.MALFORMED, "malformed") and got.reason
    assert state(ledger) == before


# -- contribution terms ------------------------------------------------------------------------

NO_GAMES = parse_config(EXAMPLE.read_text().replace('games = ["pa-standard"]\n', ""), "any.toml")


def test_a_stake_of_ten_to_the_fifteen_is_refused(ledger):
    ledger.apply(contrib(T1, 1, 1))
    got = assert_refused(
        ledger, contrib(T1, 2, 2, stake=10**15) | {"key": "forged"}, "contribution_terms", "500"
    )
    assert got.reason == (
        "stake 1000000000000000 cents is not the 500 cent blazing_7s wager game 'pa-standard' fixes"
    )
    assert ledger.meters()["blazing_7s"].amount == 1_000_075
    assert ledger.meters()["mystery"].amount == 25_007 and ledger.awards() == []
    assert ledger.apply(contrib(T1, 3, 2)).status is Status.APPLIED  # the next good one


@pytest.mark.parametrize(
    ("config", "change", "alarm", "words"),
    [
        (CONFIG, {"stake": 2_500}, "contribution_terms", "not the 500 cent"),
        (CONFIG, {"stake": 499}, "contribution_terms", "not the 500 cent"),
        (CONFIG, {"game": "double-up"}, "contribution_terms", "may run only pa-standard"),
        (NO_GAMES, {"game": "double-up"}, "contribution_terms", "no progressive wager"),
        (NO_GAMES, {"game": "no-such-game"}, "contribution_terms", "not a known profile"),
        (NO_GAMES, {"game": "x.toml"}, "contribution_terms", "not a known profile"),
        (CONFIG, {"pool": "mystery"}, "contribution_terms", "to pool 'blazing_7s', not"),
        (CONFIG, {"wager": "lucky_ladies"}, "contribution_terms", "no progressive wager"),
        (CONFIG, {"mystery": False}, "contribution_terms", "eligible for the Mystery"),
        (CONFIG, {"spot": 2, "round": 1}, "contribution_duplicate", "one contribution per"),
        (CONFIG, {"round": 1, "key": "again"}, "contribution_duplicate", "already contributed"),
    ],
)
def test_contributions_off_the_terms_are_refused(ledger_at, config, change, alarm, words):  # noqa: F811
    with Ledger(ledger_at("l"), config, randbelow=fixed(500)) as led:
        assert led.apply(contrib(T1, 1, 1)).status is Status.APPLIED
        assert led.apply(contrib(T1, 2, 1, spot=2)).status is Status.APPLIED
        payload = contrib(T1, 3, 2)["payload"] | change
        key = change.get("key", "forged-" + "-".join(sorted(change)))
        payload.pop("key", None)
        assert_refused(led, envelope(T1, 3, "contribution", key, payload), alarm, words)
        assert led.apply(contrib(T1, 4, 2)).status is Status.APPLIED  # the next good one
        assert led.meter("blazing_7s") == 1_000_000 + 3 * 75


def test_a_contribution_after_its_round_was_reported_is_refused(ledger):
    ledger.apply(contrib(T1, 1, 1))
    ledger.apply(result(T1, 2, 1, ["4C", "9C"], "7D", meter=None))
    assert_refused(ledger, contrib(T1, 3, 1, spot=3), "contribution_terms", "already reported")
    assert ledger.apply(contrib(T1, 4, 2, spot=3)).status is Status.APPLIED


def test_a_tables_rounds_only_go_forward(ledger):
    """A stolen key cannot reopen an old round number: contributions and results for a round
    before the last one reported are refused."""
    ledger.apply(contrib(T1, 1, 5))
    ledger.apply(result(T1, 2, 5, ["4C", "9C"], "7D", meter=None))
    assert_refused(ledger, contrib(T1, 3, 4), "contribution_terms", "only go forward")
    assert_refused(ledger, contrib(T1, 4, 1, spot=2), "contribution_terms", "before round 5")
    old = result(T1, 5, 3, ["4C", "9C"], "7D", meter=None)
    assert_refused(ledger, old, "round_result_order", "only go forward")
    assert ledger.apply(contrib(T1, 6, 6)).status is Status.APPLIED
    assert ledger.apply(contrib(T1, 7, 6, spot=4)).status is Status.APPLIED  # same round: fine
    assert ledger.apply(contrib(T1, 8, 9)).status is Status.APPLIED  # no result of 6..8 yet
    assert_refused(ledger, contrib(T1, 9, 8, spot=2), "contribution_terms", "after one for round 9")


# -- round results and hit claims ------------------------------------------------------------


def test_round_results_impossible_in_the_shoe_or_repeated_are_refused(ledger):
    ledger.apply(contrib(T1, 1, 1))
    seven_7d = [["7D", "7D"], ["7D", "7D", "7D"], ["7D", "7D"]]  # six decks: six 7D at most
    assert_refused(
        ledger,
        result(T1, 2, 1, ["7D", "7D"], "7D", hands=seven_7d) | {"key": "forged-1"},
        "round_result_cards",
        "card 7D was dealt 8 times; a 6-deck shoe holds it 6 times",
    )
    assert_refused(
        ledger,
        result(T1, 3, 1, ["7D", "7D"], "7D", hands=[["7D", "8D"]]) | {"key": "forged-2"},
        "round_result_cards",
        "are not in its hands",
    )
    # the claim of a refused result has no proof
    unproven = claim(T1, 4, 1, ["7D", "7D"], "7D") | {"key": "forged-3"}
    assert_refused(ledger, unproven, "claim_unproven", "no round_result")
    assert ledger.apply(result(T1, 5, 1, ["7D", "7D"], "7D")).status is Status.APPLIED
    assert_refused(
        ledger, result(T1, 6, 1, ["7D", "7D"], "7D") | {"key": "r1-again"},
        "round_result_duplicate", "already reported (seq 5)",
    )  # fmt: skip
    offered = ledger.apply(claim(T1, 7, 1, ["7D", "7D"], "7D"))
    assert offered.status is Status.APPLIED and offered.awards[0].state == "offered"


def test_invented_cards_are_refused(ledger):
    """Issue 15 item 4: 7D 7D, 7D up claimed for a round whose reported cards were others."""
    ledger.apply(contrib(T1, 1, 1))
    ledger.apply(result(T1, 2, 1, ["4C", "9C"], "7D", meter=None))
    for forged in (
        claim(T1, 3, 1, ["7D", "7D"], "7D"),
        claim(T1, 4, 1, ["7D", "7D"], "7D", spot=2),
    ):
        got = assert_refused(ledger, forged, "claim_cards", "not round 1 spot")
        assert (got.awards[0].state, got.awards[0].reason) == ("refused", got.reason)
        validate("award", got.awards[0].message(1))
    # the cards as reported but another up card
    ledger.apply(contrib(T1, 5, 2))
    ledger.apply(result(T1, 6, 2, ["7D", "7D"], "7H", meter="10% of meter"))
    assert_refused(ledger, claim(T1, 7, 2, ["7D", "7D"], "7D"), "claim_cards", "up card ['7H']")
    # the reported cards, but the line claimed is not the one the result settled
    assert_refused(
        ledger, claim(T1, 8, 2, ["7D", "7D"], "7H", meter="100% of meter") | {"key": "k8"},
        "claim_unproven", "settled no \"Three 7's - Diamonds\"",
    )  # fmt: skip
    # the reported cards and the reported line, but the cards do not make that line
    assert_refused(
        ledger, claim(T1, 9, 2, ["7D", "7D"], "7H", meter="10% of meter") | {"key": "k9"},
        "claim_cards", "do not qualify for '10% of meter'",
    )  # fmt: skip
    assert ledger.awards() and all(a.state == "refused" for a in ledger.awards())
    assert ledger.meter("blazing_7s") == 1_000_150


def test_forged_claims_are_refused_and_recorded(ledger):
    ledger.apply(contrib(T1, 1, 1))
    ledger.apply(result(T1, 2, 1, ["7D", "7D"], "7D"))
    forged = [
        (claim(T1, 3, 1, ["7D", "7D"], "7D", stake=2500), "claim_terms", "not the 500 cent"),
        (claim(T1, 4, 1, ["7D", "7D"], "7D", meter="50% of meter"), "claim_terms", "not a line"),
        (claim(T1, 5, 9, ["7D", "7D"], "7D"), "claim_unproven", "round 9 has no round_result"),
        (claim(T2, 1, 1, ["7D", "7D"], "7D"), "claim_unproven", "no round_result from"),
    ]
    for message, alarm, words in forged:
        got = assert_refused(ledger, message | {"key": f"forged-{message['seq']}"}, alarm, words)
        (award,) = got.awards
        assert (award.state, award.amount) == ("refused", 0) and award.reason == got.reason
        validate("award", award.message(1))
    # a result and a claim with no contribution behind them
    ledger.apply(result(T1, 6, 3, ["7D", "7D"], "7D"))
    assert_refused(ledger, claim(T1, 7, 3, ["7D", "7D"], "7D"), "claim_unproven", "contribution")
    assert ledger.apply(claim(T1, 8, 1, ["7D", "7D"], "7D")).status is Status.APPLIED
    assert_refused(ledger, claim(T1, 9, 1, ["7D", "7D"], "7D") | {"key": "k9"},
                   "claim_duplicate", "already awarded")  # fmt: skip


def test_the_tables_own_messages_are_accepted_and_the_claim_is_paid(ledger):
    """Scenario 27 played through the real table: its contributions, round result and claim
    (published after the result) go through the ledger as they are; the claim is paid."""
    path = ROOT / "docs" / "scenarios" / "27-blazing-7s-fixed-5-dollars-meter-hit-claim.jsonl"
    script = parse_script(path.read_text(encoding="utf-8"), str(path))
    replayed = replay(script, load_game(script.header["game"]))
    publishes = [e for _, step in replayed.steps for e in step.effects if isinstance(e, Publish)]
    kinds = [p.topic for p in publishes]
    assert kinds.index("hit_claim") == kinds.index("round_result") + 1
    results = [ledger.apply(env(T1, 1, seq, p, seq)) for seq, p in enumerate(publishes, 1)]
    assert [r.status for r in results] == [Status.APPLIED] * len(publishes)
    (award,) = [a for r in results for a in r.awards]
    assert (award.state, award.pool, award.spot, award.amount) == ("offered", "blazing_7s", 1,
                                                                    1_000_225)  # fmt: skip
    assert award.meter_before == 1_000_225
    validate("award", award.message(1))


def test_two_hundred_percent_hits_in_a_row(ledger):
    ledger.apply(contrib(T1, 1, 1))
    ledger.apply(contrib(T1, 2, 2))
    ledger.apply(contrib(T2, 1, 7))
    assert ledger.meter("blazing_7s") == 1_000_225
    first = hit(ledger, T1, 3, 2, ["7D", "7D"], "7D").awards[0]
    second = hit(ledger, T2, 2, 7, ["7D", "7D"], "7D").awards[0]
    assert (first.state, first.amount, first.order, first.meter_before) == (
        "offered", 1_000_225, 1, 1_000_225
    )  # fmt: skip
    # the second gets what the meter holds after the first reset
    assert (second.amount, second.order, second.meter_before) == (1_000_000, 2, 1_000_000)
    assert ledger.meter("blazing_7s") == 1_000_000
    assert [a.award_id for a in ledger.awards()] == [f"{T1}/4", f"{T2}/3"]
    validate("award", first.message(1))


def test_ten_percent_line_subtracts_and_award_flow(ledger):
    ledger.apply(contrib(T1, 1, 1))
    ledger.apply(contrib(T1, 2, 2))
    ledger.apply(contrib(T1, 3, 3))  # the Blazing 7's meter: $10,002.25
    got = hit(ledger, T1, 4, 1, ["7H", "7H"], "7H", meter="10% of meter")
    (award,) = got.awards
    assert (award.amount, award.meter_before) == (100_022, 1_000_225)
    assert got.meters == ("blazing_7s",)
    assert ledger.meter("blazing_7s") == 1_000_225 - 100_022
    validate("award", award.message(1))
    # a confirm with the wrong amount is refused; the right one commits; a second is refused
    assert_refused(ledger, confirm(T1, 6, award, amount=99), "confirm_mismatch", "does not match")
    assert_refused(ledger, confirm(T2, 1, award), "confirm_mismatch", "another table")
    committed = ledger.apply(confirm(T1, 7, award))
    assert (committed.status, committed.awards[0].state) == (Status.APPLIED, "committed")
    assert committed.awards[0].meter_before == 1_000_225
    validate("award", committed.awards[0].message(2))
    assert_refused(ledger, confirm(T1, 8, award), "confirm_mismatch", "committed, not offered")
    assert ledger.awards(T1)[0].state == "committed"


# -- Must-Hit-By Mystery ---------------------------------------------------------------------


def test_mystery_hit_exact(ledger_at):  # noqa: F811
    draw = fixed(10)  # trigger 25,010 cents
    with Ledger(ledger_at("l"), CONFIG, randbelow=draw) as led:
        assert led.apply(contrib(T1, 1, 1)).awards == ()  # 25,007.5
        hit = led.apply(contrib(T2, 1, 5, spot=3))  # 25,015 >= 25,010: this one wins
        (award,) = hit.awards
        assert (award.amount, award.table, award.round, award.spot) == (25_010, T2, 5, 3)
        assert (award.pool, award.state, award.order, award.claim_seq) == (
            "mystery",
            "offered",
            1,
            1,
        )
        assert award.meter_before == 25_010  # the trigger
        validate("award", award.message(1))
        # capped at the trigger; the excess 5 cents starts the next cycle on the seed
        assert led.meter("mystery") == 25_005
        assert len(draw.calls) == 2  # a fresh draw after the hit
        totals = led.totals("mystery")
        assert totals["contribution"] == 15 and totals["award"] == -25_010
        assert led.meter("mystery") == totals["contribution"] + totals["seed"] + totals["award"]


def ceiling_config(contribution: str, by: str) -> object:
    text = (
        EXAMPLE.read_text()
        .replace('contribution = "1.5%"', f'contribution = "{contribution}"')
        .replace('must_hit_by = "$1,000"', f'must_hit_by = "{by}"')
    )
    return parse_config(text, "ceiling.toml")


def test_a_mystery_contribution_too_large_for_the_range_is_refused(ledger_at):  # noqa: F811
    config = ceiling_config("$4.99", "$254.98")  # seed $250 + $4.99 > $254.98
    with Ledger(ledger_at("l"), config, randbelow=fixed(0)) as led:
        got = assert_refused(led, contrib(T1, 1, 1), "mystery_ceiling", "must_hit_by")
        assert "25498" not in got.reason.replace(" ", "") or "must_hit_by" in got.reason
        assert led.meter("mystery") == 25_000 and led.awards() == []
    config = ceiling_config("$4.99", "$254.99")  # exactly fits: the meter stays below
    with Ledger(ledger_at("m"), config, randbelow=fixed(498)) as led:  # trigger $254.98
        for seq in range(1, 40):
            assert led.apply(contrib(T1, seq, seq)).status is Status.APPLIED
            assert led.meter("mystery") < 25_499


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rate=st.integers(1, 499),
    seed=st.integers(0, 2_000),
    span=st.integers(0, 2_000),
    head=st.integers(0, 1_000),
    draws=st.lists(st.integers(0, 10**6), min_size=1, max_size=20),
    count=st.integers(1, 40),
)
def test_the_mystery_meter_never_reaches_must_hit_by(rate, seed, span, head, draws, count):
    """Any contribution rate and range, any triggers, contributions that pass the terms: the
    meter stays below must_hit_by, and a refused contribution moves nothing."""
    low = seed + head + 1
    text = (
        EXAMPLE.read_text()
        .replace('contribution = "1.5%"', f"contribution = {rate}")
        .replace('seed = "$250"', f"seed = {seed}")
        .replace('must_hit_from = "$250"', f"must_hit_from = {low}")
        .replace('must_hit_by = "$1,000"', f"must_hit_by = {low + span}")
    )
    config = parse_config(text, "prop.toml")
    pool = config.pools["mystery"]
    picks = iter(draws * 100)
    with (
        tempfile.TemporaryDirectory() as tmp,
        Ledger(Path(tmp) / "l.db", config, randbelow=lambda n: next(picks) % n) as led,
    ):
        for seq in range(1, count + 1):
            before = led.meter("mystery")
            got = led.apply(contrib(T1, seq, seq))
            assert got.status in (Status.APPLIED, Status.REFUSED)
            if got.status is Status.REFUSED:
                assert got.alarm == "mystery_ceiling" and led.meter("mystery") == before
            assert led.meter("mystery") < pool.must_hit_by
            for award in got.awards:
                assert award.amount <= pool.must_hit_by


def test_mystery_trigger_is_secret_and_survives_restart(ledger_at):  # noqa: F811
    path = ledger_at("l")
    secret = 25_000 + 54_321  # $793.21
    with Ledger(path, CONFIG, randbelow=fixed(54_321)) as led:
        results = [led.apply(contrib(T1, s, s)) for s in (1, 2, 3)]
        results.append(led.apply(claim(T1, 4, 9, ["7D", "7D"], "7D")))
        shown = [repr(led), repr(CONFIG), repr(CONFIG.pools["mystery"]), *map(repr, results)]
        shown += [json.dumps(m.message(1)) for m in led.meters().values()]
        shown += [repr(led.meters()), repr(led.awards()), repr(led.applied())]
        shown += [repr(led.totals("mystery")), repr(vars(led))]
    for text in shown:
        for form in ("79321", "793.21", "793,21"):
            assert form not in text
    assert trigger_on_disk(path) == secret
    # a copy of the ledger (what a backup or an auditor holds) has it nowhere in the clear
    assert not [v for v in every_cell(path) if v == secret or "79321" in str(v)]

    def no_redraw(n):
        raise AssertionError("the trigger was drawn again on reopening")

    with Ledger(path, CONFIG, randbelow=no_redraw) as led:
        assert trigger_on_disk(path) == secret
        assert led.meters()["mystery"].amount == 25_022


def test_pools_module_is_pure():
    import ast

    tree = ast.parse((ROOT / "jackpot" / "pools.py").read_text())
    names = {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not names & {"os", "time", "random", "secrets", "sqlite3", "socket", "paho"}


# -- schema 1 -> 2 -> 3 ------------------------------------------------------------------------

#: What schema 3 added to the tables schema 2 had (jackpot/store/__init__.py, v3_steps).
V3_COLUMNS = {"applied": ("received_utc", "gaming_day"),
              "movements": ("t_utc", "gaming_day", "change_n"),
              "awards": ("offered_utc", "committed_utc", "gaming_day")}  # fmt: skip
V3_TABLES = ("draws", "parameters", "changes", "table_keys")


def downgrade_to_2(location) -> int:
    """Make a ledger exactly what schema 2 kept: no time columns, no terms, no draws, the
    live trigger in the clear in ``mystery.trigger_cents``. Returns that trigger."""
    secret = trigger_on_disk(location)
    store = open_store(location)
    try:
        for table, columns in V3_COLUMNS.items():
            for column in columns:
                store.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        for table, column in V5_COLUMNS:  # schema 5's hash chains (jackpot/chain.py)
            store.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        store.execute("DELETE FROM meta WHERE key = 'chain_since'")
        for table in (*V3_TABLES, "events"):  # events: schema 4's (test_jackpot_events.py)
            store.execute(f"DROP TABLE {table}")
        store.execute("DELETE FROM meta WHERE key IN ('terms_change', 'trigger_key')")
        store.execute("ALTER TABLE mystery ADD COLUMN trigger_cents BIGINT")
        store.execute("UPDATE mystery SET trigger_cents=?", (secret,))
        store.execute("UPDATE meta SET value='2' WHERE key='schema'")
    finally:
        store.close()
    return secret


def untimed(snapshot: dict) -> dict:
    """A state() without the columns schema 3 added (the time of each row)."""
    out = dict(snapshot)
    for key, columns in V3_COLUMNS.items():  # the columns schema 3 added come last
        out[key] = [row[: -len(columns)] for row in snapshot[key]]
    out["meta"] = [
        r for r in snapshot["meta"] if r[0] not in ("terms_change", "trigger_key", "chain_since")
    ]
    out["mystery"] = [(pool, cycle) for pool, cycle, *_ in snapshot["mystery"]]
    return out


def test_a_version_1_ledger_is_migrated_in_place(tmp_path):
    path = tmp_path / "l.db"
    with Ledger(path, CONFIG, randbelow=fixed(10)) as led:
        led.apply(contrib(T1, 1, 1))
        led.apply(contrib(T2, 1, 5))  # the Mystery hits at $250.10
        ledger_hit = hit(led, T1, 2, 1, ["7H", "7H"], "7H", meter="10% of meter")
        led.apply(claim(T1, 4, 1, ["7D", "7D"], "7D") | {"key": "forged"})  # refused
        want = state(led)
        awards = led.awards()
    assert {a.meter_before for a in awards} == {25_010, 1_000_150, None}
    assert ledger_hit.awards[0].meter_before == 1_000_150
    # what schema 1 had: no digest, no meter_before, no contributions or round_results
    downgrade_to_2(path)
    db = sqlite3.connect(path)
    db.executescript(
        "ALTER TABLE applied DROP COLUMN digest; ALTER TABLE awards DROP COLUMN meter_before;"
        " DROP TABLE contributions; DROP TABLE round_results;"
        " UPDATE meta SET value='1' WHERE key='schema';"
    )
    db.close()
    with Ledger(path, CONFIG, randbelow=fixed(10)) as led:
        assert untimed(state(led)) == untimed(want)
        assert led.awards() == awards
        db = sqlite3.connect(path)
        assert db.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == ("5",)
        db.close()
        # the migrated digests tell a resend from a conflict; the proofs still hold
        assert led.apply(contrib(T1, 1, 1)).status is Status.DUPLICATE
        assert led.apply(contrib(T1, 1, 2)).status is Status.CONFLICT
        assert_refused(led, contrib(T1, 5, 1, spot=3), "contribution_terms", "already reported")


def test_a_newer_ledger_is_refused(ledger_at):  # noqa: F811
    path = ledger_at("l")
    Ledger(path, CONFIG).close()
    store = open_store(path)
    store.execute("UPDATE meta SET value='6' WHERE key='schema'")
    store.close()
    with pytest.raises(LedgerError, match="ledger schema 6, this controller reads 5"):
        Ledger(path, CONFIG)


# -- conservation (hypothesis) ---------------------------------------------------------------

ops = st.lists(
    st.tuples(
        st.sampled_from([T1, T2, T3]),
        st.integers(1, 3),  # spots with a Blazing 7's wager
        st.sampled_from([None, "100", "10"]),  # spot 1's meter line, if any
    ),
    max_size=40,
)
HITS = {"100": (["7D", "7D"], "7D"), "10": (["7S", "7S"], "7S")}


@pytest.mark.parametrize("backend", BACKENDS)
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=ops, seed=st.integers(0, 2**32))
def test_contributions_equal_meter_movements_plus_awards(request, backend, ops, seed):
    rng = random.Random(seed)
    server = request.getfixturevalue("pg_server") if backend == "postgresql" else None
    with tempfile.TemporaryDirectory() as tmp:
        location = server.create_database() if server else Path(tmp) / "l.db"
        try:
            _conservation(location, rng, ops)
        finally:
            if server:
                server.drop_database(location)


def _conservation(location, rng, ops) -> None:
    with Ledger(location, CONFIG, randbelow=rng.randrange) as led:
        seqs = dict.fromkeys([T1, T2, T3], 0)
        rounds = dict.fromkeys([T1, T2, T3], 0)
        expected = {"blazing_7s": Fraction(0), "mystery": Fraction(0)}
        awards = {"blazing_7s": 0, "mystery": 0}

        def send(message):
            result = led.apply(message)
            assert result.status is Status.APPLIED, result.reason
            for award in result.awards:
                awards[award.pool] += award.amount
            return result

        for table, spots, line in ops:
            rounds[table] += 1
            rnd = rounds[table]
            for spot in range(1, spots + 1):
                seqs[table] += 1
                send(contrib(table, seqs[table], rnd, spot=spot))
                expected["blazing_7s"] += 75
                expected["mystery"] += Fraction(15, 2)
            cards, up = HITS[line] if line else (["4C", "9C"], "2D")
            meter = f"{line}% of meter" if line else None
            seqs[table] += 1
            send(result(table, seqs[table], rnd, cards, up, meter))
            if line:
                seqs[table] += 1
                before = led.meter("blazing_7s")
                (award,) = send(claim(table, seqs[table], rnd, cards, up, meter)).awards
                assert award.meter_before == int(before) and award.amount <= before
        for pool in expected:
            totals = led.totals(pool)
            assert totals.get("contribution", 0) == expected[pool]
            assert -totals.get("award", 0) == awards[pool]
            assert led.meter(pool) == expected[pool] + totals["seed"] - awards[pool]
            assert led.meter(pool) <= CONFIG.pools[pool].seed + expected[pool] + totals["seed"]


# -- crash safety: a real child process killed with SIGKILL ---------------------------------

TABLES = [T1, T2, T3]


def feed_messages(count: int):
    """Deterministic interleaving of rounds from three tables: contributions, the round's
    result and now and then a claim of a meter line."""
    rng = random.Random(11)
    seqs = dict.fromkeys(TABLES, 0)
    out: list = []
    for rnd in range(1, count + 1):
        for table in TABLES:
            line = rng.choice([None] * 8 + ["100", "10"])
            cards, up = HITS[line] if line else (["4C", "9C"], "2D")
            meter = f"{line}% of meter" if line else None
            kinds = [("c", spot) for spot in range(1, rng.randint(1, 3) + 1)] + [("r", 1)]
            kinds += [("h", 1)] if line else []
            for kind, spot in kinds:
                seqs[table] += 1
                seq = seqs[table]
                if kind == "c":
                    out.append(contrib(table, seq, rnd, spot=spot))
                elif kind == "r":
                    out.append(result(table, seq, rnd, cards, up, meter))
                else:
                    out.append(claim(table, seq, rnd, cards, up, meter))
                if len(out) == count:
                    return out
    return out


def feed(ledger_path: str, config_path: str, count: int) -> None:
    with Ledger(ledger_path, load_config(config_path)) as led:
        for message in feed_messages(count):
            led.apply(message)
            print(message["table"], message["seq"], flush=True)


def check_ledger(path) -> dict[str, int]:
    """Every applied (table, seq) once, 1..ack with no gap; meters = contributions from the
    applied messages + seeds - awards; returns the acks."""
    led = Ledger(path, CONFIG)
    try:
        applied = led.applied()
        acks = {t: led.ack(t) for t in TABLES}
        for table in TABLES:
            seqs = [s for t, s, *_ in applied if t == table]
            assert seqs == list(range(1, acks[table] + 1))
        stakes = [
            (json.loads(m)["payload"]["stake"], json.loads(m)["payload"]["mystery"])
            for (m,) in rows(
                path, "SELECT message FROM applied WHERE kind='contribution' AND outcome='applied'"
            )
        ]
        for pool in ("blazing_7s", "mystery"):
            rate = CONFIG.pools[pool].rate
            paid = sum(rate * s for s, m in stakes if pool == "blazing_7s" or m)
            totals = led.totals(pool)
            assert totals.get("contribution", 0) == paid
            offered = sum(a.amount for a in led.awards() if a.pool == pool and a.state != "refused")
            assert led.meter(pool) == paid + totals["seed"] - offered
        return acks
    finally:
        led.close()


def test_sigkill_while_applying_then_replay(ledger_at):  # noqa: F811
    path = ledger_at("ledger")
    count = 400
    for attempt in range(3):
        child = subprocess.Popen(
            [sys.executable, __file__, "feed", str(path), str(EXAMPLE), str(count)],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        lines = random.Random(attempt).randint(5, 60)
        for _ in range(lines):
            if not child.stdout.readline():
                break
        time.sleep(random.Random(attempt).random() * 0.05)
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        assert sum(check_ledger(path).values()) < count  # killed while applying
    # everything replayed from the start, as a table republishes its outbox
    with Ledger(path, CONFIG) as led:
        statuses = [led.apply(m).status for m in feed_messages(count)]
    assert Status.GAP not in statuses and Status.DUPLICATE in statuses
    acks = check_ledger(path)
    assert sum(acks.values()) == count


if __name__ == "__main__" and sys.argv[1:2] == ["feed"]:
    feed(sys.argv[2], sys.argv[3], int(sys.argv[4]))


def test_a_burst_in_one_transaction_gives_the_ledger_of_one_by_one(ledger_at):  # noqa: F811
    """Group commit: a stream applied in batches (one transaction each) gives exactly the
    results, awards, meters and movements of the same stream applied message by message,
    Mystery hits inside a batch, duplicates, a gap and a refusal included."""
    rng = random.Random(19)
    stream, seqs = [], {T1: 0, T2: 0, T3: 0}
    for rnd in range(1, 120):
        table = rng.choice([T1, T2, T3])
        seqs[table] += 1
        stream.append(contrib(table, seqs[table], rnd, spot=rng.randint(1, 7)))
    stream.insert(40, stream[30])  # a resend: duplicate
    stream.insert(60, contrib(T1, 999, 500))  # a gap: resend asked, nothing applied
    stream.append(contrib(T2, seqs[T2] + 1, 600, stake=10**6))  # off the terms: refused
    stream.append(contrib(T2, seqs[T2] + 2, 601))  # and the stream goes on after it
    one = Ledger(ledger_at("one"), CONFIG, randbelow=fixed(3))
    many = Ledger(ledger_at("many"), CONFIG, randbelow=fixed(3))
    with one, many:
        singles = [one.apply(message) for message in stream]
        batched, start = [], 0
        while start < len(stream):
            size = rng.randint(1, 25)
            batched += many.apply_batch(stream[start : start + size])
            start += size
        assert batched == singles
        assert sum(1 for r in singles if r.awards) >= 2  # Mystery hits happened
        statuses = {r.status for r in singles}
        assert {Status.APPLIED, Status.DUPLICATE, Status.GAP, Status.REFUSED} <= statuses
        assert many.applied() == one.applied()
        assert many.awards() == one.awards()
        assert many.meters() == one.meters()
        for pool in ("mystery", "blazing_7s"):
            assert many.totals(pool) == one.totals(pool)


def test_a_batch_that_fails_commits_nothing(ledger_at):  # noqa: F811
    with Ledger(ledger_at("l"), CONFIG, randbelow=fixed(3)) as led:
        led.apply(contrib(T1, 1, 1))
        before = (led.applied(), led.meters(), led.ack(T1))

        class Boom(Exception):
            pass

        broken = dict(contrib(T1, 3, 3))
        real = led._apply_one

        def failing(message, checked, text):
            if message is broken:
                raise Boom
            return real(message, checked, text)

        led._apply_one = failing
        with pytest.raises(Boom):
            led.apply_batch([contrib(T1, 2, 2), broken])
        assert (led.applied(), led.meters(), led.ack(T1)) == before


# -- the fence (the hot standby's epoch check) ------------------------------------------------


def test_a_fence_that_refuses_leaves_the_ledger_unchanged(ledger_at):  # noqa: F811
    """``fence(cursor)`` runs inside every write transaction before anything changes; when it
    raises LedgerFenced, nothing of the batch (nor of a boot count) is committed."""
    location = ledger_at("l")
    calls: list[object] = []
    fenced = False

    def fence(cursor):
        calls.append(cursor)
        cursor.execute("SELECT 1").fetchone()  # the backend's own cursor, in the transaction
        if fenced:
            raise LedgerFenced("epoch 1 is over: controller b took over (epoch 2)")

    with Ledger(location, CONFIG, randbelow=fixed(3), fence=fence) as led:
        assert len(calls) == 1  # a new ledger's seeds are a write: the fence was asked
        assert led.apply(contrib(T1, 1, 1)).status is Status.APPLIED
        assert led.bump("controller_boot") == 1
        before = state(led)
        fenced = True
        with pytest.raises(LedgerFenced, match="took over"):
            led.apply_batch([contrib(T1, 2, 2), contrib(T2, 1, 1)])
        with pytest.raises(LedgerFenced):
            led.bump("controller_boot")
        assert state(led) == before
        assert (led.ack(T1), led.ack(T2)) == (1, 0)
        fenced = False
        assert [r.status for r in led.apply_batch([contrib(T1, 2, 2)])] == [Status.APPLIED]
    asked = len(calls)
    with Ledger(location, CONFIG, fence=fence) as led:  # nothing to add: no write, no fence
        assert len(calls) == asked and led.ack(T1) == 2


def test_a_fenced_ledger_error_is_a_ledger_error_and_an_os_error():
    assert issubclass(LedgerFenced, LedgerError) and issubclass(LedgerFenced, OSError)


# -- PostgreSQL only: two writers, a lost server, the config key ------------------------------


def test_two_connections_applying_the_same_streams_apply_each_message_once(pg_server):  # noqa: F811
    """Two ledgers on one database (an old leader and a new one, say) apply the same three
    streams at once: the meter rows' locks order their batches, so every (table, seq) is
    applied once and the meters are exactly seed + contributions - awards."""
    import threading

    dsn = pg_server.create_database()
    try:
        stream = feed_messages(300)
        Ledger(dsn, CONFIG, randbelow=fixed(3)).close()
        results: dict[int, list] = {0: [], 1: []}

        def run(n: int) -> None:
            rng = random.Random(n)
            with Ledger(dsn, CONFIG) as led:
                start = 0
                while start < len(stream):
                    size = rng.randint(1, 20)
                    results[n] += led.apply_batch(stream[start : start + size])
                    start += size

        threads = [threading.Thread(target=run, args=(n,)) for n in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        applied = [r for n in (0, 1) for r in results[n] if r.status is Status.APPLIED]
        assert len(results[0]) == len(results[1]) == len(stream)
        assert sorted((r.table, r.seq) for r in applied) == sorted(
            (m["table"], m["seq"]) for m in stream
        )
        assert sum(check_ledger(dsn).values()) == len(stream)
    finally:
        pg_server.drop_database(dsn)


def test_a_lost_database_is_a_ledger_error_and_the_ledger_reconnects(pg_server):  # noqa: F811
    dsn = pg_server.create_database()
    try:
        with Ledger(dsn, CONFIG, randbelow=fixed(3)) as led:
            assert led.apply(contrib(T1, 1, 1)).status is Status.APPLIED
            pg_server.kill()
            try:
                with pytest.raises(LedgerError, match="ledger database error"):
                    led.apply(contrib(T1, 2, 2))
            finally:
                pg_server.restart()
            # the same Ledger connects again at its next transaction; nothing was lost
            assert led.apply(contrib(T1, 2, 2)).status is Status.APPLIED
            assert led.apply(contrib(T1, 1, 1)).status is Status.DUPLICATE
            assert led.ack(T1) == 2
    finally:
        pg_server.drop_database(dsn)


def test_an_unreachable_database_names_the_url_without_its_password():
    with pytest.raises(LedgerError) as caught:
        Ledger("postgresql://jackpot:s3cret@127.0.0.1:1/jackpot?connect_timeout=2", CONFIG)
    text = str(caught.value)
    assert "cannot connect to the PostgreSQL ledger" in text and "s3cret" not in text
    assert "postgresql://jackpot:***@127.0.0.1:1/jackpot" in text


def test_the_ledger_section_names_a_postgresql_database():
    text = EXAMPLE.read_text(encoding="utf-8")
    assert CONFIG.ledger_dsn is None
    dsn = "postgresql://jackpot@db1.example:5432/jackpot?passfile=/etc/jackpot-controller/pgpass"
    got = parse_config(text + f'\n[ledger]\ndsn = "{dsn}"\n', "j.toml")
    assert got.ledger_dsn == dsn
    for extra, words in [
        ('dsn = "/var/lib/jackpot/ledger.sqlite"', "must be a PostgreSQL URL"),
        ("dsn = 5", "must be a PostgreSQL URL"),
        ('dsn = "postgresql://jackpot:pw@db1/jackpot"', "holds a password"),
        ('dsn = "postgresql://jackpot@db1/jackpot?password=pw"', "holds a password"),
        ('url = "postgresql://db1/jackpot"', "key 'url': unknown key; allowed keys here: dsn"),
    ]:
        with pytest.raises(JackpotConfigError) as err:
            parse_config(text + f"\n[ledger]\n{extra}\n", "j.toml")
        assert "[ledger]" in str(err.value) and words in str(err.value), str(err.value)


def test_a_refusal_after_a_meter_moved_leaves_the_rest_of_the_batch_right(
    ledger_at,  # noqa: F811
    monkeypatch,
):
    """A contribution refused after it moved the Blazing 7's meter (its Mystery part fails)
    is rolled back to its savepoint; the batch reads the meter again, so the messages after
    it, in the same transaction, see the meter as if the refused one never came (the batch
    gives what one-by-one gives), and each message's text is kept as it arrived."""
    import jackpot.ledger as ledger_module
    import jackpot.ledger_kinds as kinds_module

    real_step = kinds_module.mystery_step
    refuse_rounds = {5, 9}

    def failing_for(round_of):
        def fake(mystery, meter, added, trigger):
            if round_of[0] in refuse_rounds:
                raise ValueError("the meter is above the trigger")
            return real_step(mystery, meter, added, trigger)

        return fake

    stream = [contrib(T1, seq, seq, spot=1 + seq % 7) for seq in range(1, 13)]
    texts = [json.dumps(m, separators=(",", ":")) for m in stream]
    current = [0]
    real_apply = ledger_module.Ledger._apply_contribution

    def tracking(self, message):
        current[0] = message["payload"]["round"]
        return real_apply(self, message)

    monkeypatch.setattr(ledger_module.Ledger, "_apply_contribution", tracking)
    monkeypatch.setattr(kinds_module, "mystery_step", failing_for(current))
    one = Ledger(ledger_at("one"), CONFIG, randbelow=fixed(3))
    many = Ledger(ledger_at("many"), CONFIG, randbelow=fixed(3))
    with one, many:
        singles = [one.apply(message) for message in stream]
        batched = many.apply_batch(stream, texts=texts)
        assert [r.status for r in singles].count(Status.REFUSED) == 2
        assert batched == singles
        assert many.meters() == one.meters()
        assert many.totals("blazing_7s") == one.totals("blazing_7s")
        pool = CONFIG.pools["blazing_7s"]
        applied = sum(r.status is Status.APPLIED for r in singles)
        assert many.meter("blazing_7s") == pool.seed + applied * contribution(pool, 500)
        db = sqlite3.connect(many.path) if many.dialect == "sqlite" else None
        if db is not None:
            kept = [row[0] for row in db.execute("SELECT message FROM applied ORDER BY n")]
            db.close()
            assert kept == texts  # the signed record, byte for byte
        with pytest.raises(ValueError, match="2 texts for 12 messages"):
            many.apply_batch(stream, texts=texts[:2])


def test_a_kind_that_moves_money_and_then_refuses_undoes_the_whole_batch(
    ledger_at,  # noqa: F811
    monkeypatch,
):
    """Every kind runs its checks before its first write, so a refusal has nothing to undo
    (no savepoint a message). A kind that broke that rule (a future change) would commit a
    refused message's meter move; the ledger refuses to: the batch is rolled back whole and
    raised (nothing acknowledged), the meters and the records as they were."""
    import jackpot.ledger as ledger_module
    from jackpot.ledger_results import Refused

    real_apply = ledger_module.Ledger._apply_contribution

    def moves_then_refuses(self, message):
        real_apply(self, message)  # the meter moved
        raise Refused("malformed", "refused after its write")

    with Ledger(ledger_at("broken"), CONFIG, randbelow=fixed(3)) as led:
        assert led.apply(contrib(T1, 1, 1)).status is Status.APPLIED
        meters, applied = led.meters(), led.applied()
        monkeypatch.setattr(ledger_module.Ledger, "_apply_contribution", moves_then_refuses)
        with pytest.raises(LedgerError, match="refused after it had moved money"):
            led.apply_batch([contrib(T1, 2, 2), contrib(T1, 3, 3)])
        assert led.meters() == meters
        assert led.applied() == applied
        assert led.ack(T1) == 1
