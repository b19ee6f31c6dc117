"""Journals as older software wrote them: a current journal taken back to an older schema."""

from __future__ import annotations

import sqlite3

V3_OUTBOX = (
    "CREATE TABLE outbox (seq INTEGER PRIMARY KEY CHECK (seq >= 1),"
    " event INTEGER NOT NULL REFERENCES events (seq),"
    " kind TEXT NOT NULL CHECK (kind IN ('contribution', 'round_result', 'hit_claim',"
    " 'award_confirm')), key TEXT NOT NULL UNIQUE, payload TEXT NOT NULL)"
)


def back_to_version_5(path) -> None:
    """Schema 5: no hash chain."""
    db = sqlite3.connect(path)
    db.executescript(
        "ALTER TABLE events DROP COLUMN chain; ALTER TABLE rounds DROP COLUMN chain;"
        "ALTER TABLE origin DROP COLUMN chain; DELETE FROM meta WHERE key = 'chain_since';"
        "UPDATE outbox SET payload = json_remove(payload, '$.chain');"
        "PRAGMA user_version = 5;"
    )
    db.close()


def back_to_version_3(path) -> None:
    """Schema 3: no UTC columns, no clock steps, no origin, outbox rows tied to events."""
    back_to_version_5(path)
    db = sqlite3.connect(path)
    db.executescript(
        "DROP INDEX events_by_round; DROP INDEX rounds_by_time;"
        "ALTER TABLE events DROP COLUMN utc_ms;"
        "ALTER TABLE rounds DROP COLUMN started_utc_ms; ALTER TABLE rounds DROP COLUMN utc_ms;"
        "DROP TABLE clock_steps; DROP TABLE origin;"
        "ALTER TABLE outbox RENAME TO o4;"
        f"{V3_OUTBOX}; INSERT INTO outbox SELECT * FROM o4; DROP TABLE o4;"
        "PRAGMA user_version = 3;"
    )
    db.close()


V4_OUTBOX = (
    "CREATE TABLE outbox (seq INTEGER PRIMARY KEY CHECK (seq >= 1),"
    " event INTEGER NOT NULL CHECK (event >= 1),"
    " kind TEXT NOT NULL CHECK (kind IN ('contribution', 'round_result', 'hit_claim',"
    " 'award_confirm')), key TEXT NOT NULL UNIQUE, payload TEXT NOT NULL)"
)


def back_to_version_4(path) -> None:
    """Schema 4: the outbox's CHECK does not know the ``event`` kind (no event rows)."""
    back_to_version_5(path)
    db = sqlite3.connect(path)
    db.executescript(
        "ALTER TABLE outbox RENAME TO o5;"
        f"{V4_OUTBOX}; INSERT INTO outbox SELECT * FROM o5; DROP TABLE o5;"
        "PRAGMA user_version = 4;"
    )
    db.close()
