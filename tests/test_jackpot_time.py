"""Central time (issue 27, item 3), on both backends: every applied message, movement and award
carries the controller's UTC time and its property's gaming day; a schema 2 ledger migrates
to schema 3 in place, its old rows carrying no time, its live trigger sealed.

An accountant relies on this: a contribution at 05:30 in Pennsylvania belongs to the
gaming day before (the day starts at 06:00), whatever the table's own clock said.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pg_server import ledger_at, pg_server  # noqa: F401
from test_jackpot_ledger import (
    CONFIG,
    EXAMPLE,
    T1,
    T3,
    confirm,
    contrib,
    downgrade_to_2,
    fixed,
    hit,
    rows,
    state,
    trigger_on_disk,
    untimed,
)

from jackpot.gaming_day import GamingDay, GamingDayError
from jackpot.ledger import Ledger, Status
from jackpot.pools import JackpotConfigError, parse_config

#: Every property in New York's time, 06:00 gaming days; York (hcy) in Chicago's, 04:00.
TIMED = EXAMPLE.read_text()  # [gaming_day]: New York, 06:00
assert '[gaming_day]\ntime_zone = "America/New_York"\nstart = "06:00"' in TIMED
TIMED = TIMED.replace(
    'name = "Hollywood Casino York"',
    'name = "Hollywood Casino York"\ntime_zone = "America/Chicago"\ngaming_day_start = "04:00"',
)


def utc_ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000)


class Clock:
    """The controller's clock, set by the test (seconds)."""

    def __init__(self, text: str) -> None:
        self.set(text)

    def set(self, text: str) -> None:
        self.t = utc_ms(text) / 1000

    def __call__(self) -> float:
        return self.t


def test_the_config_names_each_propertys_gaming_day():
    config = parse_config(TIMED, "timed.toml")
    assert config.gaming_day == GamingDay("America/New_York", "06:00")
    assert config.gaming_day_for(T1) == GamingDay("America/New_York", "06:00")
    assert config.gaming_day_for(T3) == GamingDay("America/Chicago", "04:00")
    assert config.gaming_day_for(None) == config.gaming_day
    utc = parse_config(EXAMPLE.read_text().split("[gaming_day]")[0] + "[properties.hcm]\n"
                       'tables = ["hcm-bj-07"]\n', "utc.toml")  # fmt: skip
    assert utc.gaming_day_for(T1) == GamingDay("UTC", "00:00")  # without [gaming_day]
    assert CONFIG.gaming_day_for(T1).day_of(utc_ms("2026-03-02T10:59:00")) == "2026-03-01"
    for bad, words in (
        ('time_zone = "America/Chicago"', "time_zone"),
        ('gaming_day_start = "04:00"', "gaming_day_start"),
    ):
        wrong = TIMED.replace(bad, bad.replace("America/Chicago", "Mars/Olympus").replace(
            "04:00", "4 am"))  # fmt: skip
        with pytest.raises(JackpotConfigError, match=words):
            parse_config(wrong, "bad.toml")


def test_a_gaming_day_begins_at_its_start_in_its_zone():
    rule = GamingDay("America/New_York", "06:00")
    assert rule.day_of(utc_ms("2026-03-02T10:59:00")) == "2026-03-01"  # 05:59 EST
    assert rule.day_of(utc_ms("2026-03-02T11:00:00")) == "2026-03-02"  # 06:00 EST
    assert rule.day_of(utc_ms("2026-07-02T09:59:00")) == "2026-07-01"  # 05:59 EDT
    assert rule.day_of(utc_ms("2026-07-02T10:00:00")) == "2026-07-02"  # 06:00 EDT
    assert rule.close_ms("2026-03-01") == utc_ms("2026-03-02T11:00:00")
    with pytest.raises(GamingDayError, match="2026-02-30"):
        rule.close_ms("2026-02-30")


def test_every_row_carries_the_controllers_time_and_gaming_day(ledger_at):  # noqa: F811
    config = parse_config(TIMED, "timed.toml")
    clock = Clock("2026-03-02T10:30:00")  # 05:30 in New York: gaming day 1 March
    with Ledger(ledger_at(), config, randbelow=fixed(20), clock=clock) as led:
        assert led.apply(contrib(T1, 1, 1)).status is Status.APPLIED
        clock.set("2026-03-02T11:30:00")  # 06:30 New York (2 March), 05:30 Chicago (2 March)
        led.apply(contrib(T3, 1, 1))  # York: Chicago 05:30, after its 04:00 start: 2 March
        # the service passes when each message arrived: that time, not the clock's, is kept
        arrived = utc_ms("2026-03-02T09:00:00")  # 04:00 New York: still 1 March
        (got,) = led.apply_batch([contrib(T1, 2, 2, spot=2)], received=[arrived])
        assert got.status is Status.APPLIED and got.awards  # the Mystery's trigger $250.20
        clock.set("2026-03-03T12:00:00")
        led.apply(contrib(T1, 3, 3))
        hit(led, T1, 4, 3, ["7D", "7D"], "7D")
        (award,) = [a for a in led.awards() if a.pool == "blazing_7s"]
        clock.set("2026-03-03T12:05:00")
        assert led.apply(confirm(T1, 6, award)).status is Status.APPLIED
        at = led.location
        applied = rows(at, "SELECT table_id, seq, received_utc, gaming_day FROM applied ORDER BY n")
        moves = rows(at, "SELECT pool, table_id, seq, what, t_utc, gaming_day FROM movements"
                         " WHERE table_id IS NOT NULL ORDER BY n")  # fmt: skip
        awards = rows(at, "SELECT award_id, offered_utc, committed_utc, gaming_day FROM awards"
                          " ORDER BY award_id")  # fmt: skip
    assert applied == [
        (T1, 1, utc_ms("2026-03-02T10:30:00"), "2026-03-01"),
        (T3, 1, utc_ms("2026-03-02T11:30:00"), "2026-03-02"),
        (T1, 2, arrived, "2026-03-01"),
        (T1, 3, utc_ms("2026-03-03T12:00:00"), "2026-03-03"),
        (T1, 4, utc_ms("2026-03-03T12:00:00"), "2026-03-03"),
        (T1, 5, utc_ms("2026-03-03T12:00:00"), "2026-03-03"),
        (T1, 6, utc_ms("2026-03-03T12:05:00"), "2026-03-03"),
    ]
    assert {(m[1], m[2]): (m[4], m[5]) for m in moves if m[3] == "contribution"} == {
        (T1, 1): (utc_ms("2026-03-02T10:30:00"), "2026-03-01"),
        (T3, 1): (utc_ms("2026-03-02T11:30:00"), "2026-03-02"),
        (T1, 2): (arrived, "2026-03-01"),
        (T1, 3): (utc_ms("2026-03-03T12:00:00"), "2026-03-03"),
    }
    assert awards == [
        (f"{T1}/2", arrived, None, "2026-03-01"),  # the Mystery: offered, not yet confirmed
        (f"{T1}/5", utc_ms("2026-03-03T12:00:00"), utc_ms("2026-03-03T12:05:00"), "2026-03-03"),
    ]


def test_a_schema_2_ledger_migrates_and_its_old_rows_say_they_have_no_time(ledger_at):  # noqa: F811
    location = ledger_at()
    clock = Clock("2026-03-02T15:00:00")
    with Ledger(location, CONFIG, randbelow=fixed(54_321), clock=clock) as led:
        for seq in (1, 2, 3):
            led.apply(contrib(T1, seq, seq))
        before = state(led)
    secret = downgrade_to_2(location)
    assert secret == 25_000 + 54_321
    clock.set("2026-03-03T15:00:00")
    with Ledger(location, CONFIG, randbelow=fixed(0), clock=clock) as led:
        after = state(led)
        assert untimed(after) == untimed(before)  # nothing but the time columns differ
        # the rows from before carry no time; the ones after do
        assert {row[-2:] for row in after["applied"]} == {(None, None)}
        assert {row[-3:-1] for row in after["movements"]} == {(None, None)}
        assert led.apply(contrib(T1, 4, 4)).status is Status.APPLIED
        assert rows(location, "SELECT received_utc FROM applied WHERE seq=4") == [
            (utc_ms("2026-03-03T15:00:00"),)
        ]
        # the live trigger is the same one, now sealed and committed; no column holds it
        assert trigger_on_disk(location) == secret
        assert rows(location, "SELECT * FROM mystery") == [("mystery", 1)]
        ((commitment, drawn),) = rows(location, "SELECT commitment, drawn_utc FROM draws")
        assert len(commitment) == 64 and drawn is None  # drawn before the ledger kept time
        assert rows(location, "SELECT value FROM meta WHERE key='schema'") == [("5",)]
        # the terms the config had at the first start after the upgrade are the first record
        ((kind, by, reason, detail),) = rows(
            location, "SELECT kind, by_name, reason, detail FROM changes"
        )
        assert (kind, by) == ("initial", "jackpot-controller") and "migration" in reason
        assert {"subject": "pool:mystery", "term": "must_hit_by", "old": None,
                "new": "100000"} in json.loads(detail)  # fmt: skip
