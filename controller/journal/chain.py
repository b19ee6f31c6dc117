"""The journal's hash chain (issue 29 item 5): each event row and round record carries the
SHA-256 of what came before it, so a record edited after it was written does not verify.

Pure apart from reading the rows (``docs/journal.md``, "The chain"):

- an event row: ``chain = sha256(prev + "\\n" + json(["event", seq, round, event, accepted,
  utc_ms]))``, ``prev`` the head before it, ``event`` the stored JSON text;
- the round records the event settled, in round order, each chained on the one before it
  (the first on its event): ``sha256(prev + "\\n" + json(["round", round, seq, record,
  utc_ms]))``;
- the head after an event is its last link; a file starts from its origin's ``chain`` (the
  previous file's head: gaming-day files and set-aside carry it on), else from
  :data:`GENESIS`. Events up to ``meta.chain_since`` (those of a journal migrated to schema
  version 6) were journaled before the chain and are not covered.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from json.encoder import encode_basestring as _string  # json.dumps's, ensure_ascii=False
from typing import Any

import orjson

from controller.errors import JournalError
from controller.journal.store import dumps
from controller.table.effects import Publish

GENESIS = "0" * 64
"""The head before a file's first chained event when it has no origin to carry on from."""

V6 = (
    "ALTER TABLE events ADD COLUMN chain TEXT",
    "ALTER TABLE rounds ADD COLUMN chain TEXT",
    "ALTER TABLE origin ADD COLUMN chain TEXT",
)
"""What schema version 6 adds: the links, and the head an origin carries on from."""

WAY_OUT = (
    "keep the file for the investigation: stop the table controller and run "
    "`table-controller journal-set-aside --config CONFIG` (it keeps this file, read-only, as "
    "an archive and starts a new one that carries the chain on), then call a technician"
)


def _link(prev: str, item: list[Any]) -> str:
    return _digest(prev, dumps(item))


def _digest(prev: str, text: str) -> str:
    return hashlib.sha256(f"{prev}\n{text}".encode()).hexdigest()


def _escaped(text: str) -> bytes:
    """``_string(text).encode()``: the JSON string of ``text`` as ``dumps`` writes it, in
    UTF-8, written by orjson (its escapes are the standard library's for every code point,
    ``tests/test_journal_chain_escape.py``; a 5 kB record's in 6 us, not 10, and no second
    copy to encode). A lone surrogate (no UTF-8 for it) goes to the standard library, which
    raises as before."""
    try:
        return _orjson_string(text)
    except TypeError:
        return _string(text).encode()


_orjson_string = orjson.dumps


def _hashed(head: str, text: str, tail: str) -> str:
    """``_digest(prev, head + _string(text) + tail)`` (``head`` starting with ``prev`` and
    the newline), hashed in three pieces: the long ``text`` is never copied into one string."""
    digest = hashlib.sha256(head.encode())
    digest.update(_escaped(text))
    digest.update(tail.encode())
    return digest.hexdigest()


def _plain(seq: Any, number: Any, text: Any, utc_ms: Any) -> bool:
    """Whether :func:`event_link` and :func:`round_link` may write their JSON themselves:
    exactly ints, a str and an int or None (what the journal stores and reads back)."""
    return (
        type(seq) is int
        and type(number) is int
        and type(text) is str
        and (utc_ms is None or type(utc_ms) is int)
    )


def event_link(prev: str, seq: int, round_number: int, event: str, accepted: bool,
               utc_ms: int | None) -> str:  # fmt: skip
    """The chain value of an event row (``event``: its stored JSON text).

    The hashed text is ``dumps(["event", seq, round, event, accepted, utc_ms])``; for the
    plain values every row has, it is written here, byte for byte the same (the string
    escaped as ``dumps`` escapes it, :func:`_escaped`), at an eighth of the cost: the link
    is on the path of every dealer prompt and of the check on open (issue 32)."""
    if not _plain(seq, round_number, event, utc_ms):
        return _link(prev, ["event", seq, round_number, event, int(accepted), utc_ms])
    utc = "null" if utc_ms is None else str(utc_ms)
    return _hashed(f'{prev}\n["event",{seq},{round_number},', event, f",{int(accepted)},{utc}]")


def round_link(prev: str, round_number: int, seq: int, record: str, utc_ms: int | None) -> str:
    """The chain value of a round record row (``record``: its stored JSON text); hashed as
    ``dumps(["round", round, seq, record, utc_ms])``, written as :func:`event_link` does."""
    if not _plain(seq, round_number, record, utc_ms):
        return _link(prev, ["round", round_number, seq, record, utc_ms])
    utc = "null" if utc_ms is None else str(utc_ms)
    return _hashed(f'{prev}\n["round",{round_number},{seq},', record, f",{utc}]")


def links(
    prev: str,
    seq: int,
    round_number: int,
    event: str,
    accepted: bool,
    utc_ms: int | None,
    records: Sequence[tuple[int, str]],
) -> tuple[str, list[str]]:
    """The event's link and those of the round records ``(round, text)`` it settled (in
    the order given, which must be round order)."""
    head = event_link(prev, seq, round_number, event, accepted, utc_ms)
    out = []
    last = head
    for number, text in records:
        last = round_link(last, number, seq, text, utc_ms)
        out.append(last)
    return head, out


def stamp(publish: Publish, chains: dict[int, str]) -> Publish:
    """A ``round_result`` with the link of its round's record (``chains``: round number to
    link, the records the same event settled), as ``chain``; others as they are."""
    if publish.topic != "round_result":
        return publish
    link = chains.get(publish.payload.get("round"))  # type: ignore[arg-type]
    if link is None:
        return publish
    return Publish(publish.topic, publish.key, {**publish.payload, "chain": link})


@dataclass(frozen=True)
class Break:
    """The first row that does not verify: event ``seq``, or the record of ``round`` that
    event settled; ``why`` (altered, missing link)."""

    seq: int
    round: int | None
    why: str

    def what(self) -> str:
        if self.round is None:
            return f"event {self.seq}"
        return f"the record of round {self.round} (settled by event {self.seq})"

    def text(self, path: object) -> str:
        return (
            f"journal {path}: {self.what()} does not verify against the journal's hash chain "
            f"({self.why}): it, or a record before it, was changed after it was written "
            "(docs/journal.md, The chain); the table does not recover from an altered file: "
            f"{WAY_OUT}"
        )


@dataclass(frozen=True)
class Verified:
    """How far a file's chain was checked: every event up to ``upto`` (``head`` the link
    after it); ``since`` the last event journaled before the chain; ``broken`` the first row
    that does not verify (then nothing after it is verified)."""

    upto: int
    head: str
    since: int
    broken: Break | None = None


def has_chain(db: sqlite3.Connection) -> bool:
    return any(row[1] == "chain" for row in db.execute("PRAGMA table_info(events)"))


def start(db: sqlite3.Connection) -> Verified:
    """Where a file's chain starts: after its origin (with the origin's head) or event 0."""
    row = db.execute("SELECT value FROM meta WHERE key = 'chain_since'").fetchone()
    since = int(row[0]) if row else 0
    origin = db.execute("SELECT seq, chain FROM origin WHERE id = 1").fetchone()
    if origin is None:
        return Verified(0, GENESIS, since)
    return Verified(int(origin[0]), origin[1] or GENESIS, since)


def verify(db: sqlite3.Connection, done: Verified) -> Verified:
    """Carry the check on from ``done`` to the last event; read in one snapshot."""
    if done.broken is not None:
        return done
    head, upto = done.head, done.upto
    own = not db.in_transaction
    if own:
        db.execute("BEGIN")
    try:
        events = db.execute(
            "SELECT seq, round, event, accepted, utc_ms, chain FROM events WHERE seq > ?"
            " ORDER BY seq",
            (upto,),
        )
        rounds = db.execute(
            "SELECT round, seq, record, utc_ms, chain FROM rounds WHERE seq > ?"
            " ORDER BY seq, round",
            (upto,),
        )
        pending = rounds.fetchone()
        for seq, number, text, accepted, utc_ms, link in events:
            if seq <= done.since:  # journaled before the chain
                while pending is not None and pending[1] <= seq:
                    pending = rounds.fetchone()
                upto = seq
                continue
            if seq != upto + 1:
                return replace(done, upto=upto, head=head, broken=Break(upto + 1, None, "missing"))
            if link is None:
                return replace(done, upto=upto, head=head, broken=Break(seq, None, "no link"))
            expected = event_link(head, seq, number, text, bool(accepted), utc_ms)
            if link != expected:
                return replace(done, upto=upto, head=head, broken=Break(seq, None, "altered"))
            head = link
            if pending is not None and pending[1] < seq:
                return replace(
                    done, upto=upto, head=head,
                    broken=Break(pending[1], pending[0], "its event is missing"),
                )  # fmt: skip
            while pending is not None and pending[1] == seq:
                r_number, _, record, r_utc, r_link = pending
                expected = round_link(head, r_number, seq, record, r_utc)
                if r_link != expected:
                    why = "no link" if r_link is None else "altered"
                    return replace(done, upto=upto, head=head, broken=Break(seq, r_number, why))
                head = r_link
                pending = rounds.fetchone()
            upto = seq
    finally:
        if own:
            db.execute("COMMIT")
    return Verified(upto, head, done.since)


def check(db: sqlite3.Connection, path: object) -> Verified:
    """Verify the whole file; raise :class:`JournalError` naming the first row that does
    not verify and the technician's way out."""
    try:
        found = verify(db, start(db))
    except sqlite3.Error as exc:
        raise JournalError(f"cannot read journal {path} to check its chain: {exc}") from None
    if found.broken is not None:
        raise JournalError(found.broken.text(path))
    return found


def mark(record: dict[str, Any], seq: int, found: Verified) -> None:
    """Add recall's ``chain`` key to a round record settled by event ``seq``: ``verified``,
    ``not chained`` (journaled before the chain) or ``UNVERIFIED: ...``."""
    if seq <= found.since:
        record["chain"] = "not chained (journaled before schema version 6)"
    elif found.broken is not None and seq >= found.broken.seq:
        record["chain"] = (
            f"UNVERIFIED: the journal's hash chain breaks at {found.broken.what()} "
            f"({found.broken.why})"
        )
    elif seq <= found.upto:
        record["chain"] = "verified"
    else:
        record["chain"] = "UNVERIFIED: written after the check"


def stored_head(db: sqlite3.Connection) -> str:
    """The head as stored (not verified): the last event's last link, else where the file
    starts. A writer carries it on; :func:`check` verifies it first."""
    row = db.execute("SELECT seq, chain FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    if row is not None and row[1] is not None:
        last = db.execute(
            "SELECT chain FROM rounds WHERE seq = ? ORDER BY round DESC LIMIT 1", (row[0],)
        ).fetchone()
        return str(last[0] if last is not None and last[0] is not None else row[1])
    return start(db).head


def round_links(db: sqlite3.Connection, seq: int) -> dict[int, str]:
    """The links of the round records event ``seq`` settled, by round (for :func:`stamp`:
    a replayed ``round_result`` carries its record's, as the written one did)."""
    if not has_chain(db):
        return {}
    rows = db.execute(
        "SELECT round, chain FROM rounds WHERE seq = ? AND chain IS NOT NULL", (seq,)
    ).fetchall()
    return {int(number): str(link) for number, link in rows}
