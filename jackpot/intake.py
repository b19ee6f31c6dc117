"""What the jackpot controller accepts from a table, before the ledger: parse, route, verify.

:meth:`Intake.read` turns one received MQTT message into what the ledger may apply, or a
:class:`Refusal` the service counts and raises as an alarm. A single message and a batch
frame (controller/link/frames.py) pass the same checks: the topic and the JSON, the version,
the sender's identity (the message's table is the topic's), the kind's schema, a table in
the config, and a signature by one of that table's keys. A frame is refused whole if any of
its rows fails, if its rows are not consecutive sequences of its table and boot in order, if
it holds more than :data:`~controller.link.frames.BATCH_ROWS` rows or
:data:`~controller.link.frames.BATCH_BYTES` bytes, or if its one signature does not cover
exactly these rows in this order. The game's terms and the sequence are the ledger's checks,
row by row, as for single messages.

Pure but for the clock-free signature check: no client, no ledger. See
docs/jackpot/controller.md ("Service") and docs/jackpot/threat-model.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.errors import TableControllerError
from controller.json_floats import FloatWatch
from controller.link.frames import BATCH, BATCH_BYTES, verify_frame
from controller.link.messages import TABLE_KINDS, LinkMessageError, parse_message
from controller.link.signing import SignatureError, Verifier, digest


class Refusal(TableControllerError, ValueError):
    """A message refused before the ledger: ``outcome`` is the count and alarm kind
    (``malformed``, ``unknown_table``, ``signature``), ``kind`` the message kind when known,
    ``table`` and ``seq`` what it claimed (not trusted), ``detail`` for the technician."""

    def __init__(self, outcome: str, kind: str | None, table: str | None, seq: Any,
                 detail: str) -> None:  # fmt: skip
        super().__init__(f"{outcome}: {detail}")
        self.outcome, self.kind, self.table, self.seq, self.detail = (
            outcome,
            kind,
            table,
            seq,
            detail,
        )


@dataclass(slots=True)
class Received:
    """A message that passed: ``kind`` (a table kind, ``batch``, ``status``...), ``table``,
    ``rows``: the table messages for the ledger, in order, each with the text the ledger
    keeps as its signed record (one for a single message, several for a frame, none for a
    status); ``digests``: each row's content digest where the intake has it already (a
    frame's rows, from the canonical text the signature check encoded; None: the ledger
    computes it); ``body``: the message as parsed."""

    kind: str
    table: str
    body: dict[str, Any]
    rows: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    digests: list[str | None] = field(default_factory=list)


class Intake:
    """Checks table messages for the tables in ``tables``, each against its own keys
    (``keys``: table -> {kid: public key})."""

    def __init__(self, tables: Any, keys: Mapping[str, Mapping[str, Any]]) -> None:
        self.tables = tables
        self._verifiers = {table: Verifier(k) for table, k in keys.items()}

    def read(self, topic: str, payload: bytes) -> Received:
        """One received message, checked (:class:`Refusal` otherwise)."""
        if topic.endswith("/" + BATCH) and len(payload) > BATCH_BYTES:
            raise Refusal("malformed", BATCH, None, None,
                          f"on {topic[:120]!r}: a frame of {len(payload)} bytes, more than "
                          f"{BATCH_BYTES}: refused whole")  # fmt: skip
        floats = FloatWatch()
        try:
            kind, table, body = parse_message(topic, payload, floats=floats)  # a frame's rows
        except LinkMessageError as exc:
            raise Refusal("malformed", None, None, None, f"on {topic[:120]!r}: {exc}") from None
        if table not in self.tables:
            raise Refusal("unknown_table", kind, table, _seq(body), f"a {kind}: not in the config")
        verifier = self._verifiers.get(table)
        try:
            if verifier is None:
                raise SignatureError(kind, "kid", "no public key for this table in the config")
            if kind == BATCH:
                _kid, texts = verify_frame(verifier, topic, body, floats=floats.seen_any)
            else:
                verifier.verify(topic, body, kind)
        except SignatureError as exc:
            raise Refusal("signature", kind, table, _seq(body),
                          f"refused, nothing applied: {exc}") from None  # fmt: skip
        received = Received(kind, table, body)
        if kind == BATCH:
            received.rows = list(zip(body["rows"], texts, strict=True))
            received.digests = [content_digest(row, text) for row, text in received.rows]
        elif kind in TABLE_KINDS:
            received.rows = [(body, bytes(payload).decode("utf-8"))]  # parse_message decoded it
            received.digests = [None]
        return received


#: The fields of a frame's row (controller/link/messages.py ``envelope``), sorted.
_ROW_FIELDS = frozenset(("boot", "key", "kind", "payload", "sent_t", "seq", "table", "v"))


def content_digest(row: Mapping[str, Any], record: str) -> str:
    """:func:`~controller.link.signing.digest` of a frame's ``row`` without encoding it
    again: its stored ``record`` begins with the row's canonical JSON (sorted keys, ASCII),
    from which the digest's text is the same less ``boot`` (the first key) and ``sent_t``
    (the one before ``seq``, ``table`` and ``v``, whose values hold no such text). A row with
    other fields, or not of that shape, is encoded again (:func:`digest`)."""
    if row.keys() != _ROW_FIELDS or type(row["boot"]) is not int or type(row["sent_t"]) is not int:
        return digest(row)
    end = record.rfind(',"frame":{')
    head = f'{{"boot":{row["boot"]},'
    tail = f',"sent_t":{row["sent_t"]},"seq":'
    cut = record.rfind(tail, 0, end)
    if end < 0 or cut < 0 or not record.startswith(head):
        return digest(row)
    content = "{" + record[len(head) : cut] + ',"seq":' + record[cut + len(tail) : end] + "}"
    return hashlib.sha256(content.encode("ascii")).hexdigest()


def _seq(body: Mapping[str, Any]) -> Any:
    """The sequence a message claims, for an alarm: a frame's first row's."""
    if body.get("kind") == BATCH:
        rows = body.get("rows")
        if isinstance(rows, list) and rows and isinstance(rows[0], dict):
            return rows[0].get("seq")
        return None
    return body.get("seq")
