"""The jackpot controller's ledger, pools and Must-Hit-By Mystery (issue #5), on real SQLite.

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

from controller.jackpot.ledger import Ledger, Status
from controller.jackpot.pools import JackpotConfigError, load_config, parse_config
from controller.link.messages import validate

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


def contrib(table, seq, rnd, spot=1, stake=500, mystery=True):
    payload = {"round": rnd, "game": "pa-standard", "spot": spot, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": stake, "mystery": mystery}  # fmt: skip
    return envelope(table, seq, "contribution", f"round-{rnd}/spot-{spot}/b7/c", payload)


def claim(table, seq, rnd, cards, up, meter="100% of meter", spot=1, stake=500):
    payload = {"round": rnd, "game": "pa-standard", "spot": spot, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": stake, "line": "Three 7's", "meter": meter,
               "cards": cards, "up_card": up}  # fmt: skip
    return envelope(table, seq, "hit_claim", f"round-{rnd}/spot-{spot}/b7/hit", payload)


def confirm(table, seq, award, amount=None):
    payload = {"award_id": award.award_id, "round": award.round, "spot": award.spot,
               "pool": award.pool, "amount": amount or award.amount, "confirmed_t": 5}  # fmt: skip
    return envelope(table, seq, "award_confirm", f"confirm/{award.award_id}/{seq}", payload)


def trigger_on_disk(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT trigger_cents FROM mystery").fetchone()[0]
    finally:
        db.close()


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "ledger.db", CONFIG, randbelow=fixed(500)) as led:
        yield led


# -- config --------------------------------------------------------------------------------


def test_example_config():
    b7, mystery = CONFIG.pools["blazing_7s"], CONFIG.pools["mystery"]
    assert b7.rate * 500 == 75 and (b7.seed, b7.reset) == (1_000_000, 1_000_000)
    assert mystery.rate * 500 == Fraction(15, 2)
    assert (mystery.must_hit_from, mystery.must_hit_by) == (25_000, 100_000)
    assert len(CONFIG.properties) == 4 and T1 in CONFIG.tables


@pytest.mark.parametrize(
    ("change", "section", "key"),
    [
        (('per = "$5"', 'per = "$5"\npers = 1'), "pools.blazing_7s", "pers"),
        (('"$0.75"', '"lots"'), "pools.blazing_7s", "contribution"),
        (('"1.5%"', '"150%"'), "pools.mystery", "contribution"),
        (('must_hit_by = "$1,000"', 'must_hit_by = "$100"'), "pools.mystery", "must_hit_by"),
        (('"hcy-bj-01"', '"hcm-bj-09"'), "properties.hcy", "tables"),
        (('seed = "$250"', 'seed = "$250.005"'), "pools.mystery", "seed"),
    ],
)
def test_config_errors_name_file_section_key(change, section, key):
    text = EXAMPLE.read_text().replace(*change)
    with pytest.raises(JackpotConfigError) as err:
        parse_config(text, "jackpot.toml")
    assert (err.value.source, err.value.section, err.value.key) == ("jackpot.toml", section, key)
    assert f"jackpot.toml: [{section}] key '{key}'" in str(err.value)


# -- sequence: apply once, in order ----------------------------------------------------------


def test_contributions_accumulate_exactly(ledger):
    for seq in (1, 2, 3):
        result = ledger.apply(contrib(T1, seq, seq))
        assert (result.status, result.ack) == (Status.APPLIED, seq)
    meters = ledger.meters()
    assert (meters["blazing_7s"].amount, meters["blazing_7s"].fraction) == (1_000_225, 0)
    assert (meters["mystery"].amount, meters["mystery"].fraction) == (25_022, Fraction(1, 2))
    assert meters["mystery"].message(9)["fraction"] == "1/2"
    assert meters["blazing_7s"].seq == 4  # 1 at creation, +1 per change
    validate("meter", meters["mystery"].message(9))


def test_duplicate_and_replay_change_nothing(ledger):
    first = contrib(T1, 1, 1)
    ledger.apply(first)
    before = ledger.meters()
    again = ledger.apply(first)
    assert (again.status, again.ack) == (Status.DUPLICATE, 1)
    assert ledger.meters() == before
    # the same message under a new sequence (same key): refused, the sequence moves on
    replay = dict(first, seq=2)
    result = ledger.apply(replay)
    assert (result.status, result.ack) == (Status.REFUSED, 2) and "replay" in result.reason
    assert ledger.meters() == before
    assert ledger.applied()[-1][:4] == (T1, 2, "contribution", "refused")


def test_gap_asks_for_resend_and_changes_nothing(ledger):
    ledger.apply(contrib(T1, 1, 1))
    before = ledger.meters()
    gap = ledger.apply(contrib(T1, 4, 4))
    assert (gap.status, gap.resend_from, gap.ack) == (Status.GAP, 2, 1)
    assert ledger.meters() == before and ledger.ack(T1) == 1
    for seq in (2, 3, 4):
        assert ledger.apply(contrib(T1, seq, seq)).status is Status.APPLIED
    assert ledger.ack(T1) == 4 and ledger.ack(T2) == 0


def test_unknown_table_and_malformed_are_refused(ledger):
    before = ledger.meters()
    assert ledger.apply(contrib(T1, 1, 1) | {"table": "zz-bj-01"}).status is Status.UNKNOWN_TABLE
    bad = contrib(T1, 1, 1)
    bad["payload"]["stake"] = 500.0
    assert ledger.apply(bad).status is Status.MALFORMED
    assert ledger.apply({"kind": "ack"}).status is Status.MALFORMED
    assert ledger.meters() == before and ledger.applied() == []


# -- hit claims and awards -------------------------------------------------------------------


def test_forged_claims_are_refused_and_recorded(ledger):
    ledger.apply(contrib(T1, 1, 1))
    before = ledger.meters()
    forged = [
        claim(T1, 2, 1, ["7D", "7S"], "7H"),  # three 7's, mixed colours: a fixed award
        claim(T1, 3, 1, ["7D", "8D"], "7D"),  # one seven
        claim(T1, 4, 1, ["7H", "7H"], "7H", meter="100% of meter"),  # suited is the 10% line
        claim(T1, 5, 9, ["7D", "7D"], "7D"),  # no contribution in round 9
        claim(T1, 6, 1, ["7D", "7D"], "7D", stake=2500),  # not the game's wager
    ]
    for message in forged:
        result = ledger.apply(message)
        assert result.status is Status.REFUSED, message
        (award,) = result.awards
        assert (award.state, award.amount) == ("refused", 0) and award.reason == result.reason
        validate("award", award.message(1))
    assert ledger.meters() == before
    assert [a.state for a in ledger.awards()] == ["refused"] * 5
    assert ledger.ack(T1) == 6


def test_two_hundred_percent_hits_in_a_row(ledger):
    ledger.apply(contrib(T1, 1, 1, stake=333, mystery=False))  # 49.95 cents
    ledger.apply(contrib(T1, 2, 2))
    ledger.apply(contrib(T2, 1, 7))
    meter = ledger.meter("blazing_7s")
    assert meter == 1_000_000 + Fraction(4995, 100) + 150
    first = ledger.apply(claim(T1, 3, 2, ["7D", "7D"], "7D")).awards[0]
    second = ledger.apply(claim(T2, 2, 7, ["7D", "7D"], "7D")).awards[0]
    assert (first.state, first.amount, first.order) == ("offered", 1_000_199, 1)
    # the second gets what the meter holds after the first reset: the reset and the 0.95 left
    assert (second.amount, second.order) == (1_000_000, 2)
    assert ledger.meter("blazing_7s") == 1_000_000 + Fraction(95, 100)
    assert [a.award_id for a in ledger.awards()] == [f"{T1}/3", f"{T2}/2"]
    validate("award", first.message(1))


def test_ten_percent_line_subtracts_and_award_flow(ledger):
    ledger.apply(contrib(T1, 1, 1, stake=333))
    result = ledger.apply(claim(T1, 2, 1, ["7H", "7H"], "7H", meter="10% of meter"))
    (award,) = result.awards
    assert award.amount == 100_004 and result.meters == ("blazing_7s",)
    assert ledger.meter("blazing_7s") == 1_000_000 + Fraction(4995, 100) - 100_004
    # a confirm with the wrong amount is refused; the right one commits; a second is refused
    assert ledger.apply(confirm(T1, 3, award, amount=99)).status is Status.REFUSED
    assert ledger.apply(confirm(T2, 1, award)).status is Status.REFUSED  # another table
    committed = ledger.apply(confirm(T1, 4, award))
    assert (committed.status, committed.awards[0].state) == (Status.APPLIED, "committed")
    assert ledger.apply(confirm(T1, 5, award)).status is Status.REFUSED
    assert ledger.awards(T1)[0].state == "committed"
    # the same spot cannot be awarded twice
    assert ledger.apply(claim(T1, 6, 1, ["7D", "7D"], "7D")).status is Status.REFUSED


# -- Must-Hit-By Mystery ---------------------------------------------------------------------


def test_mystery_hit_exact(tmp_path):
    draw = fixed(10)  # trigger 25,010 cents
    with Ledger(tmp_path / "l.db", CONFIG, randbelow=draw) as led:
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
        # capped at the trigger; the excess 5 cents starts the next cycle on the seed
        assert led.meter("mystery") == 25_005
        assert len(draw.calls) == 2  # a fresh draw after the hit
        totals = led.totals("mystery")
        assert totals["contribution"] == 15 and totals["award"] == -25_010
        assert led.meter("mystery") == totals["contribution"] + totals["seed"] + totals["award"]


def test_mystery_meter_never_passes_must_hit_by(tmp_path):
    draw = fixed(75_000)  # trigger at the ceiling, $1,000.00
    with Ledger(tmp_path / "l.db", CONFIG, randbelow=draw) as led:
        seq, hits = 0, []
        while not hits:
            seq += 1
            result = led.apply(contrib(T1, seq, seq, stake=99_999))  # 1,499.985 cents each
            hits = result.awards
            assert led.meters()["mystery"].amount <= 100_000
        assert hits[0].amount == 100_000
        assert seq == 51 and led.meter("mystery") < 25_000 + 1_500


def test_mystery_trigger_is_secret_and_survives_restart(tmp_path):
    path = tmp_path / "l.db"
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

    def no_redraw(n):
        raise AssertionError("the trigger was drawn again on reopening")

    with Ledger(path, CONFIG, randbelow=no_redraw) as led:
        assert trigger_on_disk(path) == secret
        assert led.meters()["mystery"].amount == 25_022


def test_pools_module_is_pure():
    import ast

    tree = ast.parse((ROOT / "controller" / "jackpot" / "pools.py").read_text())
    names = {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not names & {"os", "time", "random", "secrets", "sqlite3", "socket", "paho"}


# -- conservation (hypothesis) ---------------------------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("c"), st.sampled_from([T1, T2, T3]), st.integers(1, 100_000), st.booleans()
        ),
        st.tuples(
            st.just("h"), st.sampled_from([T1, T2, T3]), st.sampled_from(["100", "10"]), st.none()
        ),
    ),
    max_size=60,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, seed=st.integers(0, 2**32))
def test_contributions_equal_meter_movements_plus_awards(ops, seed):
    rng = random.Random(seed)
    with (
        tempfile.TemporaryDirectory() as tmp,
        Ledger(Path(tmp) / "l.db", CONFIG, randbelow=rng.randrange) as led,
    ):
        seqs = dict.fromkeys([T1, T2, T3], 0)
        expected = {"blazing_7s": Fraction(0), "mystery": Fraction(0)}
        awards = {"blazing_7s": 0, "mystery": 0}
        last_round = {}
        for op, table, value, mystery in ops:
            seqs[table] += 1
            before = {p: led.meter(p) for p in expected}
            if op == "c":
                stake = 500 if value % 2 else value
                result = led.apply(
                    contrib(table, seqs[table], seqs[table], stake=stake, mystery=mystery)
                )
                expected["blazing_7s"] += CONFIG.pools["blazing_7s"].rate * stake
                if mystery:
                    expected["mystery"] += CONFIG.pools["mystery"].rate * stake
                last_round[table] = seqs[table]
            else:
                rnd = last_round.get(table, 1)
                cards = (["7D", "7D"], "7D") if value == "100" else (["7S", "7S"], "7S")
                result = led.apply(
                    claim(table, seqs[table], rnd, *cards, meter=f"{value}% of meter")
                )
            assert result.ack == seqs[table]
            for award in result.awards:
                if award.state == "offered":
                    awards[award.pool] += award.amount
            for pool, old in before.items():
                assert isinstance(led.meter(pool), Fraction)
                if not any(a.pool == pool and a.state == "offered" for a in result.awards):
                    assert led.meter(pool) >= old  # never down except by an award
        for pool in expected:
            totals = led.totals(pool)
            assert totals.get("contribution", 0) == expected[pool]
            assert -totals.get("award", 0) == awards[pool]
            assert led.meter(pool) == expected[pool] + totals["seed"] - awards[pool]
            assert led.meter(pool) <= CONFIG.pools[pool].seed + expected[pool] + totals["seed"]


# -- crash safety: a real child process killed with SIGKILL ---------------------------------

TABLES = [T1, T2, T3]


def feed_messages(count: int):
    """Deterministic interleaving of contributions and claims from three tables."""
    rng = random.Random(11)
    seqs = dict.fromkeys(TABLES, 0)
    for i in range(count):
        table = TABLES[i % 3]
        seqs[table] += 1
        if i % 37 == 36:
            yield claim(table, seqs[table], seqs[table] - 1, ["7D", "7D"], "7D")
        else:
            yield contrib(table, seqs[table], seqs[table], stake=rng.choice([500, 333, 2500]))


def feed(ledger_path: str, config_path: str, count: int) -> None:
    with Ledger(ledger_path, load_config(config_path)) as led:
        for message in feed_messages(count):
            led.apply(message)
            print(message["table"], message["seq"], flush=True)


def check_ledger(path: Path) -> dict[str, int]:
    """Every applied (table, seq) once, 1..ack with no gap; meters = contributions from the
    applied messages + seeds - awards; returns the acks."""
    led = Ledger(path, CONFIG)
    try:
        applied = led.applied()
        acks = {t: led.ack(t) for t in TABLES}
        for table in TABLES:
            seqs = [s for t, s, *_ in applied if t == table]
            assert seqs == list(range(1, acks[table] + 1))
        db = sqlite3.connect(path)
        stakes = [
            (json.loads(m)["payload"]["stake"], json.loads(m)["payload"]["mystery"])
            for (m,) in db.execute(
                "SELECT message FROM applied WHERE kind='contribution' AND outcome='applied'"
            )
        ]
        db.close()
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


def test_sigkill_while_applying_then_replay(tmp_path):
    path = tmp_path / "ledger.db"
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
