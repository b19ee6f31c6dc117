"""The Must-Hit-By Mystery's draws (issue 27, item 2).

What a player, the auditor and a regulator's lab rely on:

- no award is ever below the meter a sign last showed (the next trigger is drawn between the
  meter after the reset, rounded up to the cent, and ``must_hit_by``);
- every draw is committed (SHA-256 of the trigger and a salt) when drawn and revealed after
  it ends, so every past draw can be checked; the live one is sealed with a key outside the
  ledger and cannot be read from a copy of it;
- the draw itself is uniform over its range, with no modulo bias (chi-square through the
  product's own draw, with the system's generator).
"""

from __future__ import annotations

import base64
import json
import math
import os
import random
import secrets
import stat
from collections import Counter
from fractions import Fraction

import pytest
from pg_server import ledger_at, pg_server  # noqa: F401
from test_jackpot_ledger import (
    CONFIG,
    EXAMPLE,
    T1,
    T2,
    contrib,
    downgrade_to_2,
    every_cell,
    fixed,
    rows,
    trigger_on_disk,
)

from jackpot.draws import TriggerKey, TriggerKeyError, commitment, draw_cents, next_low
from jackpot.ledger import Ledger, Status
from jackpot.store import open_store


def wilson_hilferty(df: int, z: float) -> float:
    """The chi-square quantile with ``df`` degrees of freedom at the normal quantile ``z``."""
    k = 2 / (9 * df)
    return df * (1 - k + z * math.sqrt(k)) ** 3


def test_the_draw_is_uniform_over_the_cards_range():
    """$250.00 to $1,000.00 is 75,001 whole-cent values = 179 bins of 419 values each; 179,000
    draws through the product's draw with the system's generator: the chi-square statistic
    (178 degrees of freedom) lies between its 1e-6 and 1 - 1e-6 quantiles, and every draw is
    in range."""
    low, high = 25_000, 100_000
    assert (high - low + 1) == 179 * 419
    counts: Counter[int] = Counter()
    for _ in range(179_000):
        value = draw_cents(low, high)  # secrets.randbelow, as the ledger draws
        assert low <= value <= high
        counts[(value - low) // 419] += 1
    expected = 1_000
    chi2 = sum((counts[b] - expected) ** 2 / expected for b in range(179))
    assert wilson_hilferty(178, -4.75) < chi2 < wilson_hilferty(178, 4.75), chi2


def test_the_draw_has_no_modulo_bias_and_reaches_both_ends():
    """A range of 2/3 of 2**32: a 32-bit number taken modulo it would land in the lower half
    two times in three; the product's draw lands there half the time."""
    n = 2_863_311_530
    lower = sum(draw_cents(0, n - 1) < n // 2 for _ in range(40_000))
    assert abs(lower / 40_000 - 0.5) < 0.015, lower
    seen = {draw_cents(7, 10) for _ in range(400)}
    assert seen == {7, 8, 9, 10}  # both ends are drawn
    with pytest.raises(ValueError, match="gave 4"):
        draw_cents(0, 3, lambda n: n)  # a broken generator is refused, not trusted


def test_the_issues_case_a_trigger_below_the_meter_after_a_reset_cannot_be_drawn(ledger_at):  # noqa: F811
    """After a hit the meter restarts at the seed plus the excess ($250.05); the next trigger
    is drawn from $250.05 up, never $250.02."""
    with Ledger(ledger_at(), CONFIG, randbelow=fixed(10)) as led:
        led.apply(contrib(T1, 1, 1))  # $250.075
        (award,) = led.apply(contrib(T2, 1, 5)).awards  # $250.15 >= $250.10: hit
        assert award.amount == 25_010 and led.meter("mystery") == 25_005
        ((low, high),) = rows(led.location, "SELECT low, high FROM draws WHERE ended IS NULL")
        assert (low, high) == (25_005, 100_000)  # from the meter after the reset, rounded up
        assert trigger_on_disk(led.location) == 25_015
    assert next_low(25_000, Fraction(50_011, 2)) == 25_006  # $250.055 -> $250.06


def test_no_award_is_below_the_meter_a_sign_showed(ledger_at):  # noqa: F811
    """A seeded stream of Mystery contributions with random triggers: every award is at least
    the whole cents the meter showed before the contribution that won it."""
    rng = random.Random(2027)
    text = EXAMPLE.read_text().replace('contribution = "1.5%"', 'contribution = "$2.37"')
    from jackpot.pools import parse_config

    config = parse_config(text, "fast.toml")  # $2.37 a contribution: many hits quickly
    hits = 0
    with Ledger(ledger_at(), config, randbelow=lambda n: rng.randrange(min(n, 800))) as led:
        for seq in range(1, 401):
            shown = led.meters()["mystery"].amount
            got = led.apply(contrib(T1, seq, seq))
            assert got.status is Status.APPLIED, got.reason
            for award in got.awards:
                hits += 1
                assert award.amount >= shown, (seq, award.amount, shown)
                assert 25_000 <= award.amount <= 100_000
    assert hits >= 20


def test_every_past_draw_is_revealed_and_matches_its_commitment(ledger_at):  # noqa: F811
    with Ledger(ledger_at(), CONFIG, randbelow=fixed(30)) as led:
        awards = []
        for seq in range(1, 60):
            awards += led.apply(contrib(T1, seq, seq)).awards
        draws = rows(led.location, "SELECT cycle, low, high, commitment, trigger_cents, salt,"
                     " sealed, ended, award_id FROM draws ORDER BY cycle")  # fmt: skip
    assert len(awards) >= 3 and len(draws) == len(awards) + 1
    for (cycle, low, _high, sha, trigger, salt, sealed, ended, award_id), award in zip(
        draws, awards, strict=False
    ):
        assert (ended, award_id, sealed) == ("hit", award.award_id, None)
        assert trigger == award.amount == low + 30 and commitment(trigger, salt) == sha
        assert len(salt) == 32 and cycle >= 1
    *_, (cycle, _low, _high, sha, trigger, salt, sealed, ended, award_id) = draws
    assert (trigger, salt, ended, award_id) == (None, None, None, None) and sealed  # the live one


def test_the_live_trigger_needs_the_key_outside_the_ledger(tmp_path):
    key_path = tmp_path / "keys" / "mystery-trigger.key"
    key_path.parent.mkdir()
    location = tmp_path / "ledger.db"
    with Ledger(location, CONFIG, randbelow=fixed(54_321), trigger_key=key_path) as led:
        led.apply(contrib(T1, 1, 1))
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600  # made at the first draw
    assert not [v for v in every_cell(location) if v == 79_321 or "79321" in str(v)]
    ((cycle, sealed),) = rows(location, "SELECT cycle, sealed FROM draws WHERE ended IS NULL")
    assert TriggerKey.load(key_path).open("mystery", cycle, sealed)[0] == 79_321
    other = TriggerKey.create(tmp_path / "other.key")
    with pytest.raises(TriggerKeyError, match="does not open"):
        other.open("mystery", cycle, sealed)
    with (
        pytest.raises(TriggerKeyError, match="not the one"),
        Ledger(location, CONFIG, trigger_key=other.path) as led,
    ):
        led.apply(contrib(T1, 2, 2))
    with pytest.raises(TriggerKeyError, match="does not open"):  # a sealed value moved
        TriggerKey.load(key_path).open("mystery", cycle + 1, sealed)
    key_path.chmod(0o644)
    with pytest.raises(TriggerKeyError, match="chmod 600"):
        TriggerKey.load(key_path)
    key_path.chmod(0o600)
    os.rename(key_path, tmp_path / "lost.key")
    with (
        pytest.raises(TriggerKeyError, match="cannot read"),
        Ledger(location, CONFIG, trigger_key=key_path) as led,
    ):
        led.apply(contrib(T1, 2, 2))


# -- review findings (issue 27 review) ---------------------------------------------------------


def no_redraw(n: int) -> int:
    raise AssertionError("a trigger was drawn again")


def test_a_migrated_trigger_below_the_meter_is_redrawn_and_recorded(ledger_at):  # noqa: F811
    """Schema 2 drew the next trigger from must_hit_from: after a hit left the meter at
    $250.05 it could hold $250.00. The migration ends that draw as ``redrawn`` (revealed, in
    the draws and in ``changes``) and draws again from the meter up; a trigger that is in
    range is kept (never a silent redraw)."""
    kept, low = ledger_at("kept"), ledger_at("low")
    for location in (kept, low):
        with Ledger(location, CONFIG, randbelow=fixed(10)) as led:
            led.apply(contrib(T1, 1, 1))
            (award,) = led.apply(contrib(T2, 1, 5)).awards
            assert award.amount == 25_010 and led.meter("mystery") == 25_005
        downgrade_to_2(location)
    # in range (25015 >= 25005): carried over as it is, no draw
    with Ledger(kept, CONFIG, randbelow=no_redraw):
        pass
    assert trigger_on_disk(kept) == 25_015
    assert rows(kept, "SELECT ended FROM draws") == [(None,)]
    store = open_store(low)
    store.execute("UPDATE mystery SET trigger_cents=25000")  # what schema 2 could draw
    store.close()
    with Ledger(low, CONFIG, randbelow=fixed(0)) as led:
        shown = led.meters()["mystery"].amount
        assert shown == 25_005
        got = led.apply(contrib(T1, 2, 2))
        assert [a.amount for a in got.awards] == [25_005]  # what the sign showed, not $250.00
    (old, new, _live) = rows(low, "SELECT cycle, ended, trigger_cents, salt, commitment, low, high,"
                      " award_id FROM draws ORDER BY cycle")  # fmt: skip
    _cycle, ended, trigger, salt, sha, _, _, award_id = old
    assert (ended, trigger, award_id) == ("redrawn", 25_000, "change/1")
    assert commitment(trigger, salt) == sha
    assert new[1:3] == ("hit", 25_005) and new[5:7] == (25_005, 100_000)
    ((kind, detail),) = rows(low, "SELECT kind, detail FROM changes")
    (entry,) = [e for e in json.loads(detail) if e.get("term") == "draw"]
    assert kind == "initial" and entry["subject"] == "pool:mystery"
    assert "below the meter $250.05" in entry["old"] and "[$250.05, $1,000.00]" in entry["new"]


def test_a_missing_or_wrong_trigger_key_is_refused_at_start(ledger_at, tmp_path):  # noqa: F811
    """The key is loaded, its fingerprint compared and every live draw opened when the ledger
    opens: the controller refuses to start (exit 2, one line, no broker) instead of stalling
    every table later; no key is made in place of the missing one."""
    from test_jackpot_terms import start_controller

    location = ledger_at()
    key = tmp_path / "mystery-trigger.key"
    Ledger(location, CONFIG, trigger_key=key).close()
    missing = tmp_path / "missing.key"
    with pytest.raises(TriggerKeyError, match=r"cannot read .*restore"):
        Ledger(location, CONFIG, trigger_key=missing)
    assert not missing.exists()
    wrong = TriggerKey.create(tmp_path / "wrong.key")
    with pytest.raises(TriggerKeyError, match=r"not the one .* restore"):
        Ledger(location, CONFIG, trigger_key=wrong.path)
    # a key whose fingerprint is right but the live draw was sealed otherwise (altered)
    store = open_store(location)
    ((cycle, sealed),) = store.execute("SELECT cycle, sealed FROM draws WHERE ended IS NULL")
    store.execute(
        "UPDATE draws SET sealed=? WHERE ended IS NULL",
        (TriggerKey.load(key).seal("mystery", cycle + 1, 30_000, "00" * 16),),
    )
    store.close()
    with pytest.raises(TriggerKeyError, match="does not open"):
        Ledger(location, CONFIG, trigger_key=key)
    store = open_store(location)
    store.execute("UPDATE draws SET sealed=? WHERE ended IS NULL", (sealed,))
    store.close()
    Ledger(location, CONFIG, trigger_key=key, randbelow=no_redraw).close()
    for bad in (missing, wrong.path):
        done, connected = start_controller(tmp_path, EXAMPLE, location, "--trigger-key", bad)
        assert done.returncode == 2, done.stderr
        (line,) = [x for x in done.stderr.splitlines() if "trigger key" in x]
        assert line.startswith("jackpot-controller: ") and "restore" in line
        assert not connected and not missing.exists()


def test_the_sealed_trigger_does_not_give_away_its_digits(tmp_path):
    """Every sealed trigger is the same length, whatever its number of digits; a seal
    written before (``"{trigger}:{salt}"``) still opens."""
    key = TriggerKey.create(tmp_path / "k")
    lengths = {len(base64.b64decode(key.seal("mystery", 1, t, secrets.token_hex(16))))
               for t in (0, 9_999, 10_000, 99_999, 100_000, 10**12)}  # fmt: skip
    assert len(lengths) == 1, lengths
    salt = secrets.token_hex(16)
    assert key.open("mystery", 1, key.seal("mystery", 1, 79_321, salt)) == (79_321, salt)
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from jackpot.draws import _aad

    raw = (tmp_path / "k").read_text().split()[-1]
    nonce = b"\x01" * 12
    old = AESGCM(base64.b64decode(raw)).encrypt(nonce, f"79321:{salt}".encode(), _aad("mystery", 1))
    assert key.open("mystery", 1, base64.b64encode(nonce + old).decode()) == (79_321, salt)


class _DrawsTable:
    """The draws table as :class:`~jackpot.draws.Draws` uses it: live rows by pool."""

    location = "memory"

    def __init__(self) -> None:
        self.live: dict[str, tuple[int, str]] = {}

    def execute(self, sql: str, params: tuple = ()):
        if sql.startswith("INSERT INTO draws"):
            self.live[params[0]] = (params[1], params[7])
        elif sql.startswith("UPDATE draws"):
            self.live.pop(params[-2], None)
        elif sql.startswith("SELECT cycle, sealed FROM draws"):
            row = self.live.get(params[0])
            return type("Cursor", (), {"fetchone": lambda _self: row})()
        return None


class _CountingKey(TriggerKey):
    opened = 0

    def open(self, pool, cycle, sealed):
        type(self).opened += 1
        return super().open(pool, cycle, sealed)


def test_a_batch_opens_each_live_draw_once_and_a_new_draw_again(tmp_path):
    """Inside a batch (``hold`` to ``release``) the live trigger is opened once a draw, not
    once a Mystery contribution; a draw that ends and a new one sealed in the same batch are
    opened anew; outside a batch every read opens the seal, and nothing stays after it."""
    from jackpot.draws import Draws

    key = _CountingKey(tmp_path / "k", os.urandom(32))
    table = _DrawsTable()
    draws = Draws(table, key, randbelow=lambda n: 7)
    draws.draw("m", 1, 100, 200, None, None)
    draws.hold()
    assert [draws.live("m") for _ in range(5)] == [(107, 1)] * 5
    assert _CountingKey.opened == 1
    draws.end("m", "hit", None)
    draws.draw("m", 2, 300, 400, None, None)
    assert [draws.live("m") for _ in range(3)] == [(307, 2)] * 3
    assert _CountingKey.opened == 2 + 1  # end() opens to reveal
    draws.release()
    assert not draws._opened
    assert [draws.live("m") for _ in range(2)] == [(307, 2)] * 2
    assert _CountingKey.opened == 5
