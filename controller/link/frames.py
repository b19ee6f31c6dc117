"""Batch frames: several outbox rows in one MQTT message, under one Ed25519 signature.

A table with more than one row waiting (a backlog after a reconnect, a burst at settlement)
publishes them together on ``bj/v1/table/{table}/batch``::

    {"v": 1, "table": "hcm-bj-07", "kind": "batch", "boot": 4, "sent_t": 1770000000000,
     "rows": [<envelope of seq 12>, <envelope of seq 13>, ...], "kid": "...", "sig": "..."}

Each row is the envelope a single message would carry (``v``, ``table``, ``boot``, ``seq``,
``key``, ``kind``, ``sent_t``, ``payload``; no ``kid``/``sig`` of its own) and is checked by
its kind's schema exactly as one. The rows are consecutive sequence numbers of the frame's
table and boot, in order, at most :data:`BATCH_ROWS` of them and :data:`BATCH_BYTES` bytes.

What is signed: ``DOMAIN + topic + "\\n" + canonical(header)``, where the header is the frame
without ``rows`` and ``sig`` plus ``count`` (the number of rows) and ``root``: the Merkle tree
hash (RFC 6962, SHA-256; a leaf is ``0x00 || canonical(row)``, a node ``0x01 || left ||
right``) of the rows in order. Truncating, reordering, dropping, adding or changing a row
changes ``count`` or ``root``: the signature no longer matches and the frame is refused whole.

The tree is what lets the ledger keep one record per row that an auditor can check alone:
each row is stored as its envelope with ``kid`` and a ``frame`` proof (the frame's ``sig``,
``sent_t``, ``count``, the row's ``index`` and its audit ``path``: about log2(rows) sibling
hashes), from which :func:`verify_row` rebuilds the signed header (jackpot/audit.py).

Pure: no client, no clock, no disk. docs/jackpot/README.md ("Batch frames").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from controller import json_text
from controller.link.messages import (
    TABLE_KINDS,
    VERSION,
    LinkMessageError,
    _compiled,
    topic_for,
    validate,
)
from controller.link.signing import (
    DOMAIN,
    SignatureError,
    Signer,
    Verifier,
    canonical,
)

#: The most rows one frame carries (the schema's ``maxItems``).
BATCH_ROWS = 64
#: The most bytes one frame may be on the wire: half Mosquitto's ``message_size_limit``
#: (65536, config/mosquitto/mosquitto.conf), so a frame is never near the broker's limit.
BATCH_BYTES = 32_768
#: A frame's topic level (``bj/v1/table/{table}/batch``).
BATCH = "batch"
#: The fields of a frame row's stored proof (``frame`` in the ledger's record).
PROOF_FIELDS = ("sig", "sent_t", "count", "index", "path")


# -- the Merkle tree (RFC 6962 section 2.1) -------------------------------------------------


def leaf_hash(row_bytes: bytes) -> bytes:
    """The tree's hash of one row's canonical JSON."""
    return hashlib.sha256(b"\x00" + row_bytes).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two below ``n`` (n >= 2)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


class _Tree:
    """The Merkle tree of ``leaves`` (leaf hashes, at least one): ``root``, and each leaf's
    audit path (:meth:`path`), all made in one pass: each node hashed once."""

    def __init__(self, leaves: Sequence[bytes]) -> None:
        if not leaves:
            raise ValueError("a Merkle tree of no rows")
        self.leaves = list(leaves)
        self._paths: list[list[bytes]] = [[] for _ in self.leaves]
        self.root = self._build(0, len(self.leaves))

    def _build(self, start: int, end: int) -> bytes:
        if end - start == 1:
            return self.leaves[start]
        k = _split(end - start)
        left, right = self._build(start, start + k), self._build(start + k, end)
        paths = self._paths  # the subtrees' paths are done: each sibling goes above them
        for i in range(start, start + k):
            paths[i].append(right)
        for i in range(start + k, end):
            paths[i].append(left)
        return _node(left, right)

    def path(self, index: int) -> list[bytes]:
        """The sibling hashes from leaf ``index`` up to the root (lowest first)."""
        return list(self._paths[index])


def tree_root(leaves: Sequence[bytes]) -> bytes:
    """The root of the tree of ``leaves`` (leaf hashes, at least one), the tree's
    :attr:`_Tree.root` without the audit paths (what a sender needs): level by level, each
    pair of nodes hashed together, a last node without a partner carried up as it is. That
    is RFC 6962's tree: its left part is the largest power of two below the count, which
    pairing from the left fills first."""
    if not leaves:
        raise ValueError("a Merkle tree of no rows")
    level = list(leaves)
    sha256 = hashlib.sha256
    while len(level) > 1:
        pairs = range(0, len(level) - 1, 2)
        up = [sha256(b"\x01" + level[i] + level[i + 1]).digest() for i in pairs]
        if len(level) % 2:
            up.append(level[-1])
        level = up
    return level[0]


def root_from_path(leaf: bytes, index: int, count: int, path: Sequence[bytes]) -> bytes | None:
    """The root a leaf's audit path leads to, or None if the path does not fit ``index`` of
    ``count`` leaves."""
    if not 0 <= index < count:
        return None
    sides: list[bool] = []  # per level from the top: whether the leaf is in the right part
    start, end = 0, count
    while end - start > 1:
        k = _split(end - start)
        right = index >= start + k
        sides.append(right)
        start, end = (start + k, end) if right else (start, start + k)
    if len(sides) != len(path):
        return None
    value = leaf
    for right, sibling in zip(reversed(sides), path, strict=True):
        value = _node(sibling, value) if right else _node(value, sibling)
    return value


# -- the frame -------------------------------------------------------------------------------


def _header(frame: Mapping[str, Any], count: int, root: bytes) -> dict[str, Any]:
    """What the frame's signature covers, beside the domain and the topic."""
    head = {k: v for k, v in frame.items() if k not in ("rows", "sig")}
    head["count"] = count
    head["root"] = root.hex()
    return head


def _signed_bytes(topic: str, header: Mapping[str, Any]) -> bytes:
    return DOMAIN + topic.encode("utf-8") + b"\n" + canonical(header)


def wire_frame(
    signer: Signer,
    table_id: str,
    boot: int,
    sent_t: int,
    rows: Sequence[Mapping[str, Any]] | None,
    encoded: Sequence[bytes] | None = None,
) -> bytes:
    """The signed frame of ``rows`` (envelopes from :func:`~controller.link.messages.envelope`,
    unsigned, in sequence order) as the JSON bytes to publish on the table's batch topic.
    ``encoded``: the rows' canonical JSON (:func:`~controller.link.signing.canonical`) if
    the caller has it already (it sized the frame with it); else they are encoded here.
    With ``encoded``, ``rows`` may be None: the frame needs only their bytes."""
    if encoded is None:
        if rows is None:
            raise ValueError("a frame of no rows: give the rows or their canonical JSON")
        encoded = [canonical(row) for row in rows]
    elif rows is not None and len(encoded) != len(rows):
        raise ValueError(f"{len(encoded)} encoded rows for {len(rows)} rows")
    root = tree_root([leaf_hash(data) for data in encoded])
    frame = {"v": VERSION, "table": table_id, "kind": BATCH, "boot": boot, "sent_t": sent_t,
             "kid": signer.key_id}  # fmt: skip
    topic = topic_for(table_id, BATCH)
    sig = signer.sign_bytes(_signed_bytes(topic, _header(frame, len(encoded), root)))
    head = canonical(frame)[:-1]
    return (head + b',"rows":[' + b",".join(encoded) + b'],"sig":"' + sig.encode("ascii")
            + b'"}')  # fmt: skip


def frame_size(rows_bytes: int, rows: int) -> int:
    """An upper bound of a frame's size on the wire for ``rows`` rows of ``rows_bytes``
    canonical bytes in all (the header, the signature and the commas)."""
    return rows_bytes + rows + 400


class Planner:
    """:func:`plan`, one row at a time, so a frame goes out as soon as it is full instead of
    after every waiting row is read and encoded: :meth:`add` takes the next row's canonical
    size and returns the groups (row counts, in order) that are complete now; :meth:`finish`
    the last one. The groups are :func:`plan`'s, whatever the rows.

    >>> p = Planner(2, BATCH_BYTES)
    >>> [p.add(300), p.add(300), p.add(300), p.finish()]
    [[], [], [2], [1]]
    """

    def __init__(self, batch_rows: int, cap: int) -> None:
        self.batch_rows, self.cap = batch_rows, cap
        self.count = self.size = 0

    def add(self, length: int) -> list[int]:
        out: list[int] = []
        if self.batch_rows < 2 or frame_size(length, 1) > self.cap:
            if self.count:
                out.append(self.count)
                self.count = self.size = 0
            out.append(1)
            return out
        if self.count >= self.batch_rows or (
            self.count and frame_size(self.size + length, self.count + 1) > self.cap
        ):
            out.append(self.count)
            self.count = self.size = 0
        self.count += 1
        self.size += length
        return out

    def finish(self) -> list[int]:
        out = [self.count] if self.count else []
        self.count = self.size = 0
        return out


def plan(sizes: Sequence[int], batch_rows: int, cap: int) -> list[int]:
    """How many consecutive rows each message carries, in order, for rows whose canonical
    JSON is ``sizes`` bytes: a frame holds at most ``batch_rows`` rows and ``cap`` bytes
    (:func:`frame_size`); a 1 is a single message (a row alone, one too large for any frame,
    or every row when ``batch_rows`` is 1). Nothing waits: the last group goes as it is.

    >>> plan([300] * 5, 2, BATCH_BYTES)
    [2, 2, 1]
    >>> plan([300, 40_000, 300, 300], 64, BATCH_BYTES)
    [1, 1, 2]
    """
    planner = Planner(batch_rows, cap)
    out = [count for length in sizes for count in planner.add(length)]
    return out + planner.finish()


def _passes(compiled: Any, row: dict[str, Any]) -> bool:
    """Whether the compiled schema passes ``row`` (False where it cannot read it)."""
    try:
        return bool(compiled.is_valid(row))
    except (ValueError, TypeError, OverflowError):
        return False


def check_rows(
    table_id: str, frame: Mapping[str, Any], floats: bool | None
) -> list[dict[str, Any]]:
    """The frame's rows, each checked as a single message of its kind is (version, table =
    the topic's, kind, schema), and together: the frame's boot, consecutive sequence numbers
    in order. LinkMessageError naming the row (``rows.3.seq``) otherwise. ``floats``: whether
    the frame holds a float anywhere, if the caller knows (it parsed it); the
    :func:`~controller.link.messages.parse_message` of a frame calls this."""
    rows = frame["rows"]
    first = None
    # a frame without a float: a row its kind's compiled schema passes passes validate()
    # (which asks the reference validator only for a float or a refusal, and adds a check
    # for meters alone); anything else goes through validate() for its words
    compiled = _compiled() if floats is False else None
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise LinkMessageError(BATCH, f"rows.{i}", "a row is a JSON object")
        kind = row.get("kind")
        if kind not in TABLE_KINDS:
            raise LinkMessageError(
                BATCH, f"rows.{i}.kind", f"{kind!r:.40} is not a table message kind"
            )
        if row.get("v") != VERSION:
            raise LinkMessageError(BATCH, f"rows.{i}.v", f"version {row.get('v')!r:.20}")
        if row.get("table") != table_id:
            raise LinkMessageError(
                BATCH, f"rows.{i}.table",
                f"row says table {row.get('table')!r:.60} in {table_id!r}'s frame",
            )  # fmt: skip
        if "kid" in row or "sig" in row:
            raise LinkMessageError(
                BATCH, f"rows.{i}", "a row carries no kid or sig of its own: the frame is signed"
            )
        if row.get("boot") != frame["boot"]:
            raise LinkMessageError(
                BATCH, f"rows.{i}.boot",
                f"boot {row.get('boot')!r:.20} in a frame of boot {frame['boot']}",
            )  # fmt: skip
        if compiled is None or not _passes(compiled[kind], row):
            try:
                validate(kind, row, floats=floats)
            except LinkMessageError as exc:
                raise LinkMessageError(BATCH, f"rows.{i}.{exc.field}", exc.problem) from None
        if first is None:
            first = row["seq"]
        elif row["seq"] != first + i:
            raise LinkMessageError(
                BATCH, f"rows.{i}.seq",
                f"seq {row['seq']} after {first + i - 1}: a frame's rows are consecutive, "
                "in order",
            )  # fmt: skip
    return rows


def verify_frame(
    verifier: Verifier, topic: str, frame: Mapping[str, Any], *, floats: bool | None = None
) -> tuple[str, list[str]]:
    """Check the frame's one signature over its header and the tree of its rows: ``(kid,
    records)``, ``records`` being each row's text for the ledger (its canonical envelope
    with ``kid`` and its ``frame`` proof, :func:`verify_row`). SignatureError otherwise.
    ``floats=False``: the caller parsed the frame and it held no float (its rows' canonical
    JSON is then not looked at for one: :func:`controller.json_text.canonical`)."""
    rows = frame["rows"]
    encoded = [json_text.canonical(row, floats=floats) for row in rows]
    tree = _Tree([leaf_hash(data) for data in encoded])
    kid = verifier.verify_bytes(
        BATCH, frame.get("kid"), frame.get("sig"),
        _signed_bytes(topic, _header(frame, len(rows), tree.root)),
    )  # fmt: skip
    tail_kid = json.dumps(kid)
    common = f'"sig":"{frame["sig"]}","sent_t":{frame["sent_t"]},"count":{len(rows)}'
    records = []
    quoted: dict[bytes, str] = {}  # each node's hash written once: it is in many paths
    for i, data in enumerate(encoded):
        hexes = []
        for h in tree.path(i):
            text = quoted.get(h)
            if text is None:
                text = quoted[h] = f'"{h.hex()}"'
            hexes.append(text)
        path = ",".join(hexes)
        proof = f',"frame":{{{common},"index":{i},"path":[{path}]}},"kid":{tail_kid}}}'
        records.append(data[:-1].decode("ascii") + proof)
    return kid, records


def verify_row(verifier: Verifier, record: Mapping[str, Any]) -> str:
    """Check one stored row of a frame on its own (the auditor's check): its ``frame`` proof
    leads from the row to a tree root that the frame's signature covers. The key id that
    signed it; SignatureError otherwise."""
    kind = record.get("kind")
    proof = record.get("frame")
    if not isinstance(proof, dict) or set(proof) != set(PROOF_FIELDS):
        raise SignatureError(kind, "frame", "not a batch frame's proof")
    row = {k: v for k, v in record.items() if k not in ("frame", "kid")}
    try:
        path = [bytes.fromhex(h) for h in proof["path"]]
        count, index = int(proof["count"]), int(proof["index"])
    except (TypeError, ValueError):
        raise SignatureError(
            kind, "frame", "the proof's path, count or index is unreadable"
        ) from None
    root = root_from_path(leaf_hash(canonical(row)), index, count, path)
    if root is None or any(len(h) != 32 for h in path):
        raise SignatureError(kind, "frame", "the proof's path does not fit its index and count")
    frame = {"v": row.get("v"), "table": row.get("table"), "kind": BATCH, "boot": row.get("boot"),
             "sent_t": proof["sent_t"], "kid": record.get("kid")}  # fmt: skip
    return verifier.verify_bytes(
        kind, record.get("kid"), proof["sig"],
        _signed_bytes(topic_for(str(row.get("table")), BATCH), _header(frame, count, root)),
    )  # fmt: skip


def is_frame_record(record: Mapping[str, Any]) -> bool:
    """Whether a stored message is a row of a batch frame (it carries a ``frame`` proof)."""
    return "frame" in record


__all__ = [
    "BATCH",
    "BATCH_BYTES",
    "BATCH_ROWS",
    "Planner",
    "check_rows",
    "frame_size",
    "is_frame_record",
    "leaf_hash",
    "plan",
    "root_from_path",
    "tree_root",
    "verify_frame",
    "verify_row",
    "wire_frame",
]
