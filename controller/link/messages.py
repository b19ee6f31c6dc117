"""The jackpot link's contract (v1), in code: topics, the envelope, schema checks, parsing.

Pure: no MQTT client, no clock, no disk writes. The schemas are read once, lazily, from
``controller/link/schemas`` inside the package (:mod:`importlib.resources`, so an installed
wheel has them); docs/jackpot/README.md and docs/jackpot/asyncapi.yaml are the same contract
for people and tools, and refer to those files.

Topic layout (``{table}`` like ``hcm-bj-07``)::

    bj/v1/table/{table}/contribution|round_result|hit_claim|award_confirm|event  table -> ctl
    bj/v1/table/{table}/batch              several of those in one signed frame (frames.py)
    bj/v1/table/{table}/status                                      table birth/death
    bj/v1/jackpot/{table}/ack|resend|award                          controller -> table
    bj/v1/meters/{pool}                                             controller -> signs
    bj/v1/jackpot/status                                            controller online

>>> topic_for("hcm-bj-07", "contribution")
'bj/v1/table/hcm-bj-07/contribution'
>>> topic_for("hcm-bj-07", "ack")
'bj/v1/jackpot/hcm-bj-07/ack'
>>> meter_topic("blazing_7s")
'bj/v1/meters/blazing_7s'
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from typing import Any

import jsonschema
import jsonschema_rs

from controller.errors import TableControllerError
from controller.json_floats import FloatWatch
from controller.json_text import plain_read
from controller.table.effects import Publish

VERSION = 1
PREFIX = f"bj/v{VERSION}"

#: Sequenced, enveloped messages a table publishes (the outbox's kinds).
TABLE_KINDS = ("contribution", "round_result", "hit_claim", "award_confirm", "event")
#: Several sequenced messages in one signed frame (controller/link/frames.py).
FRAME_KINDS = ("batch",)
#: Messages the jackpot controller sends to one table.
CONTROLLER_KINDS = ("ack", "resend", "award")
#: Every kind with a topic per table: ``topic_for`` accepts these.
PER_TABLE_KINDS = (*TABLE_KINDS, *FRAME_KINDS, "status", *CONTROLLER_KINDS)
#: Controller-wide kinds: ``meter`` on bj/v1/meters/{pool}, ``jackpot_status``.
SIGN_KINDS = ("meter", "jackpot_status")
ALL_KINDS = (*PER_TABLE_KINDS, *SIGN_KINDS)

#: The schema file of each kind (in controller/link/schemas).
SCHEMA_FILES = {kind: f"{kind}.json" for kind in ALL_KINDS} | {"status": "table_status.json"}

#: MQTT delivery of each kind: (QoS, retained). Everything is QoS 1; retained are the
#: latest-state topics (table status, meters, the controller's status), never money streams.
DELIVERY: dict[str, tuple[int, bool]] = {kind: (1, False) for kind in ALL_KINDS} | {
    "status": (1, True),
    "meter": (1, True),
    "jackpot_status": (1, True),
}

JACKPOT_STATUS_TOPIC = f"{PREFIX}/jackpot/status"
#: What the jackpot controller subscribes to (every table's streams and status).
TABLE_STREAMS = f"{PREFIX}/table/+/+"

TABLE_ID = re.compile(r"^[a-z]{2,8}(-[a-z0-9]{1,16}){1,3}$")
#: First segments a table id may not have: the broker users of the controller, signs and
#: bridges (config/mosquitto/acl) are never tables, even where their names fit TABLE_ID.
RESERVED_PREFIXES = frozenset({"jackpot", "sign", "signs", "bridge"})
POOL = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_FRACTION = re.compile(r"^(0|[1-9][0-9]*)/([1-9][0-9]*)$")


class LinkMessageError(TableControllerError, ValueError):
    """A jackpot link message that breaks the contract; the message names the field.

    ``field`` is the dotted path of the offending field (``payload.stake``), or ``topic``,
    ``json``, ``v``, ``table``, ``kind``; ``kind`` is the message kind when known.
    """

    def __init__(self, kind: str | None, field: str, problem: str):
        self.kind = kind
        self.field = field
        self.problem = problem
        super().__init__(f"{kind or 'message'}: {field}: {problem}")


#: Characters of a refusal's detail kept for the technician (the log, /diag, the journal).
DETAIL_MAX = 240


def loggable(text: str, limit: int = DETAIL_MAX) -> str:
    """``text`` fit for one log line and a technician's page: each character that is not
    printable ASCII written as its Python escape (a newline as ``\\n``, ESC as ``\\x1b``,
    U+202E as ``\\u202e``), cut after ``limit`` characters (whole escapes) with ``...``.
    A refused message's words reach no one as they came; applying this twice changes nothing.

    >>> print(loggable("PAY\\nSPOT 3\\u202e $25,000"))
    PAY\\nSPOT 3\\u202e $25,000
    >>> loggable("x" * 300, 10)
    'xxxxxxx...'
    """
    out: list[str] = []
    size = 0
    for char in str(text):
        piece = char if " " <= char <= "~" else ascii(char)[1:-1]
        if size + len(piece) > limit:
            while out and size > limit - 3:
                size -= len(out.pop())
            out.append("...")
            break
        out.append(piece)
        size += len(piece)
    return "".join(out)


def _check_table_id(table_id: str) -> None:
    if not isinstance(table_id, str) or not TABLE_ID.match(table_id):
        raise LinkMessageError(
            None, "table", f"{table_id!r} is not a table id like 'hcm-bj-07' ({TABLE_ID.pattern})"
        )
    if table_id.split("-", 1)[0] in RESERVED_PREFIXES:
        raise LinkMessageError(
            None, "table", f"{table_id!r} is a broker user of the controller, a sign or a bridge"
        )


def topic_for(table_id: str, kind: str) -> str:
    """The topic a per-table message of ``kind`` travels on."""
    _check_table_id(table_id)
    if kind in TABLE_KINDS or kind in FRAME_KINDS or kind == "status":
        return f"{PREFIX}/table/{table_id}/{kind}"
    if kind in CONTROLLER_KINDS:
        return f"{PREFIX}/jackpot/{table_id}/{kind}"
    raise LinkMessageError(
        kind, "kind", f"no per-table topic for {kind!r}; use one of {', '.join(PER_TABLE_KINDS)}"
    )


def meter_topic(pool: str) -> str:
    """The retained topic of one pool's meter."""
    if not isinstance(pool, str) or not POOL.match(pool):
        raise LinkMessageError("meter", "pool", f"{pool!r} is not a pool name ({POOL.pattern})")
    return f"{PREFIX}/meters/{pool}"


def envelope(
    table_id: str,
    boot: int,
    seq: int,
    publish: Publish,
    sent_t: int,
    *,
    copy: bool = True,
    floats: bool | None = None,
) -> dict[str, Any]:
    """Wrap one table ``Publish`` effect for the wire (the outbox stores exactly this).

    The payload is copied, never shared with the effect (``copy=False``: the caller's payload
    is its own to give, as one just read from the outbox is). The result is checked against
    the kind's schema, so nothing malformed reaches the outbox. ``floats`` (with
    ``copy=False``): whether the payload holds a float, if the caller knows (it parsed it;
    the copy knows by itself).
    """
    if not copy:
        return row_envelope(
            table_id, boot, seq, publish.topic, publish.key, publish.payload, sent_t, floats
        )
    if publish.topic not in TABLE_KINDS:
        raise _not_a_table_kind(publish.topic)
    watch = FloatWatch()
    message = {
        "v": VERSION,
        "table": table_id,
        "boot": boot,
        "seq": seq,
        "key": publish.key,
        "kind": publish.topic,
        "sent_t": sent_t,
        "payload": json.loads(json.dumps(publish.payload), parse_float=watch.seen),
    }
    watch.seen_any |= any(isinstance(v, float) for v in message.values())
    validate(publish.topic, message, floats=watch.seen_any)
    return message


def row_envelope(
    table_id: str,
    boot: int,
    seq: int,
    kind: str,
    key: str,
    payload: Any,
    sent_t: int,
    floats: bool | None = None,
) -> dict[str, Any]:
    """:func:`envelope` with ``copy=False`` of an outbox row's fields (``kind`` is the
    ``Publish``'s topic), without a ``Publish`` made for each row: the message, checked
    against the kind's schema; ``payload`` becomes the message's own."""
    if kind not in TABLE_KINDS:
        raise _not_a_table_kind(kind)
    message = {
        "v": VERSION,
        "table": table_id,
        "boot": boot,
        "seq": seq,
        "key": key,
        "kind": kind,
        "sent_t": sent_t,
        "payload": payload,
    }
    validate(kind, message, floats=floats)
    return message


def _not_a_table_kind(kind: Any) -> LinkMessageError:
    return LinkMessageError(
        kind, "kind", f"a table publishes only {', '.join(TABLE_KINDS)}, not {kind!r}"
    )


# -- schemas -------------------------------------------------------------------------------


def schema_dir() -> Any:
    """The directory of the v1 schemas (a ``Traversable``): ``schemas/`` of this package."""
    root = importlib.resources.files("controller.link").joinpath("schemas")
    if not root.joinpath("envelope.json").is_file():
        raise TableControllerError(
            f"jackpot link schemas not found at {root}: the installed package is incomplete; "
            "reinstall table-controller from its wheel (scripts/setup.sh in a checkout)"
        )
    return root


def _is_exact_integer(checker: Any, instance: Any) -> bool:
    """JSON Schema counts 5.0 as an integer; money here is exact: only a JSON integer is."""
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", _is_exact_integer
    ),
)


@functools.cache
def _schemas() -> dict[str, dict[str, Any]]:
    """Each kind's schema with every ``$ref`` inlined (checked against the 2020-12 metaschema)."""
    root = schema_dir()
    schemas = {
        entry.name: json.loads(entry.read_text(encoding="utf-8"))
        for entry in root.iterdir()
        if entry.name.endswith(".json")
    }
    out = {}
    for kind, name in SCHEMA_FILES.items():
        jsonschema.Draft202012Validator.check_schema(schemas[name])
        # the same schema with every $ref replaced by what it points at: the same checks,
        # without a reference lookup for each card and amount of every message
        out[kind] = _inline(schemas[name], name, schemas)
    return out


@functools.cache
def _validators() -> dict[str, jsonschema.protocols.Validator]:
    """The reference validators (python-jsonschema): their errors name the deepest field."""
    return {kind: _Validator(schema) for kind, schema in _schemas().items()}


@functools.cache
def _compiled() -> dict[str, Any]:
    """The compiled validators (jsonschema-rs, in Rust): the same schemas, checked about a
    hundred times faster; every message of the link passes one on each side."""
    return {
        kind: jsonschema_rs.Draft202012Validator(schema, validate_formats=False)
        for kind, schema in _schemas().items()
    }


def _inline(node: Any, file: str, schemas: dict[str, Any]) -> Any:
    """``node`` with each ``{"$ref": "other.json#/$defs/x"}`` (or ``#/$defs/x``, or a whole
    file) replaced by its target, itself inlined. The schemas hold no recursive reference."""
    if isinstance(node, list):
        return [_inline(item, file, schemas) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _inline(v, file, schemas) for k, v in node.items() if k != "$ref"}
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return out
    target_file, _, pointer = ref.partition("#")
    target_file = target_file or file
    target: Any = schemas[target_file]
    for part in filter(None, pointer.split("/")):
        target = target[part]
    target = _inline(target, target_file, schemas)
    if isinstance(target, dict):
        target = {k: v for k, v in target.items() if k not in ("$schema", "$defs", "title")}
    clash = set(out) & set(target) - {"description"}
    if clash:  # both constrain one keyword: keep both, as $ref beside keywords does
        out.setdefault("allOf", []).append(target)
        return out
    return {**target, **out}


def _path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        missing = re.match(r"'([^']+)'", error.message)
        if missing:
            parts.append(missing.group(1))
    elif error.validator == "additionalProperties":
        extra = re.findall(r"'([^']+)'", error.message)
        if extra:
            parts.append(extra[0])
    return ".".join(parts) or "message"


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """The most specific cause: inside allOf/if-then, the error about the field itself."""
    while error.context:
        error = max(error.context, key=lambda e: len(e.absolute_path))
    return error


def _has_float(value: Any) -> bool:
    """Whether a JSON float is anywhere in ``value`` (no schema of the link has one)."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, float):
            return True
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return False


def validate(kind: str, message: Any, *, floats: bool | None = None) -> None:
    """Check ``message`` against the schema of ``kind``; raise LinkMessageError naming the
    field and what is wrong (the first problem, deepest field first).

    Two validators check it. The compiled one (jsonschema-rs) decides alone for a message
    without a float, which is every true message: where JSON Schema counts 5.0 as an integer,
    exact money does not, and only the reference one (python-jsonschema, with that rule) is
    asked then. A refusal's wording comes from the reference validator, which names the
    deepest field; where only the compiled one refuses (its regexes: ``$`` does not match
    before a final newline, as Python's does), its own words are used.
    ``floats``: whether the message holds a float, if the caller knows (it parsed it).
    """
    compiled = _compiled()
    if kind not in compiled:
        raise LinkMessageError(
            kind, "kind", f"unknown message kind {kind!r}; known: {', '.join(ALL_KINDS)}"
        )
    try:
        fast_ok: bool | None = compiled[kind].is_valid(message)
    except (ValueError, TypeError, OverflowError):  # not JSON data at all: the reference says
        fast_ok = None
    if floats is None:
        floats = _has_float(message)
    if not fast_ok or floats:
        errors = list(_validators()[kind].iter_errors(message))
        if errors:
            error = _deepest(
                max(errors, key=lambda e: (len(e.absolute_path), e.validator != "required"))
            )
            raise LinkMessageError(kind, _path(error), error.message)
        if fast_ok is False:
            first = next(iter(compiled[kind].iter_errors(message)))
            path = ".".join(str(p) for p in first.instance_path) or "message"
            raise LinkMessageError(kind, path, first.message)
    if kind == "meter":
        num, den = (int(n) for n in _FRACTION.match(message["fraction"]).groups())
        if num >= den:
            raise LinkMessageError(
                kind, "fraction", f"{message['fraction']!r} is not a proper fraction of a cent"
            )


# -- parsing what arrives --------------------------------------------------------------------


def _route(topic: str) -> tuple[str, str | None, str | None]:
    """(kind, table_id, pool) of a topic, or LinkMessageError naming the topic."""
    levels = topic.split("/")
    if levels[:2] != ["bj", f"v{VERSION}"]:
        found = "/".join(levels[:2])
        raise LinkMessageError(
            None, "topic", f"{topic!r} is not a {PREFIX}/... topic (found {found!r})"
        )
    rest = levels[2:]
    if rest == ["jackpot", "status"]:
        return "jackpot_status", None, None
    if len(rest) == 2 and rest[0] == "meters":
        meter_topic(rest[1])
        return "meter", None, rest[1]
    if len(rest) == 3 and rest[0] in ("table", "jackpot"):
        side, table_id, kind = rest
        kinds = (*TABLE_KINDS, *FRAME_KINDS, "status") if side == "table" else CONTROLLER_KINDS
        if kind in kinds:
            _check_table_id(table_id)
            return kind, table_id, None
    raise LinkMessageError(None, "topic", f"{topic!r} is not a jackpot link topic")


#: The most digits a JSON integer on the link may have (2^53 - 1 has 16): a longer one is
#: refused before Python converts it (a 5,000-digit integer is an attack, not money).
MAX_INT_DIGITS = 20
#: The deepest nesting a link message may have (the deepest schema is 5 levels).
MAX_DEPTH = 16


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON money")


def _depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests (a scalar is 1, ``{"a": 1}`` is 2), level by level without
    recursion, looking into containers only; stops past ``limit``."""
    depth, level = 1, [value]
    while level:
        below: list[Any] = []
        deeper = False
        for item in level:
            if isinstance(item, dict):
                children: Any = item.values()
            elif isinstance(item, list):
                children = item
            else:  # only the top can be a scalar
                break
            for child in children:
                deeper = True
                if isinstance(child, (dict, list)):
                    below.append(child)
        if not deeper:
            break
        depth += 1
        if depth > limit:
            break
        level = below
    return depth


#: Every byte to ``.``, the digits to ``0``: a run of more than MAX_INT_DIGITS digits is then
#: a substring search (a regular expression took longer than parsing the message).
_DIGITS = bytes.maketrans(bytes(range(256)), b"." * 48 + b"0" * 10 + b"." * 198)
_LONG_RUN = b"0" * (MAX_INT_DIGITS + 1)


#: Every byte but the brackets deleted (``bytes.translate``).
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _nests_below(outside: bytes, limit: int) -> bool:
    """Whether JSON text whose part outside strings is ``outside`` (its brackets all
    structure: :func:`controller.json_text.plain_read`) nests containers fewer than
    ``limit`` deep, so that its :func:`_depth` (one more, for what the deepest holds) is at
    most ``limit``: each pass drops the innermost pairs, one level, until none is left."""
    brackets = outside.translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return True
        # "[]" and "{}" marked first, then dropped: "{[]}" loses one level a pass, not two
        brackets = brackets.replace(b"[]", b"-").replace(b"{}", b"-").replace(b"-", b"")
    return False


def _loads(kind: str | None, payload: bytes, floats: FloatWatch | None = None) -> Any:
    """UTF-8 JSON, or LinkMessageError: never any other exception, whatever the bytes
    (huge integers, NaN, nesting deeper than Python's stack).

    orjson reads it where that is provably what the standard library reads and it holds no
    float (:func:`controller.json_text.plain_read`: a frame of 30 rows, 600 -> 110 us; then
    one of 20 rows, 218 -> 160 us with the depth check, the text outside strings not copied);
    the standard library reads the rest, with the checks below, and words every refusal."""
    raw = bytes(payload)
    plain = plain_read(raw)
    if plain is not None:  # no float, no integer of more than 18 digits: only the depth
        message, brackets = plain
        if (
            not _nests_below(brackets, MAX_DEPTH)
            if brackets is not None
            else raw.count(b"{") + raw.count(b"[") >= MAX_DEPTH
        ) and _depth(message, MAX_DEPTH) > MAX_DEPTH:
            raise LinkMessageError(kind, "json", f"nested deeper than {MAX_DEPTH} levels")
        return message
    return _loads_std(kind, raw, floats)


def _loads_std(kind: str | None, raw: bytes, floats: FloatWatch | None = None) -> Any:
    """:func:`_loads` by the standard library alone (what it was before orjson read it)."""
    try:
        text = raw.decode("utf-8")
        # each integer is looked at only where a long run of digits is (perhaps in a string)
        long_int = _LONG_RUN in raw.translate(_DIGITS)
        # the C parser meets deep nesting with RecursionError (Python's limit, far below the
        # thread's stack), caught here; _depth then holds messages to MAX_DEPTH
        message = json.loads(
            text,
            parse_int=_parse_int if long_int else None,
            parse_constant=_no_constant,
            parse_float=floats.seen if floats is not None else None,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # JSONDecodeError too
        problem = f"not UTF-8 JSON a link message can be ({exc})"
        raise LinkMessageError(kind, "json", problem[:300]) from None
    # fewer brackets than MAX_DEPTH (strings' included) cannot nest deeper: no need to look
    if raw.count(b"{") + raw.count(b"[") >= MAX_DEPTH and _depth(message, MAX_DEPTH) > MAX_DEPTH:
        raise LinkMessageError(kind, "json", f"nested deeper than {MAX_DEPTH} levels")
    return message


def parse_message(
    topic: str, payload: bytes, *, floats: FloatWatch | None = None
) -> tuple[str, str | None, dict[str, Any]]:
    """Check one received MQTT message: ``(kind, table_id, message)``.

    ``table_id`` is None on controller-wide topics (meters, jackpot status). Refused with
    LinkMessageError: a topic outside the layout, bytes that are not a UTF-8 JSON object, a
    version other than 1, a message whose ``table`` (or ``pool``, or ``kind``) is not the
    topic's (a table publishing as another), anything its schema refuses. A ``batch``
    frame's rows are each checked so too, and their order
    (:func:`controller.link.frames.check_rows`); its signature is the receiver's to check.
    ``floats``: a :class:`FloatWatch` to learn whether the message held a float (then it
    was refused: no schema of the link has one), else one of its own.
    """
    kind, table_id, pool = _route(topic)
    if floats is None:
        floats = FloatWatch()
    message = _loads(kind, payload, floats)
    if not isinstance(message, dict):
        raise LinkMessageError(kind, "json", f"a message is a JSON object, not {message!r:.40}")
    if message.get("v") != VERSION:
        raise LinkMessageError(
            kind, "v", f"version {message.get('v')!r} on a v{VERSION} topic; expected {VERSION}"
        )
    if table_id is not None and message.get("table") != table_id:
        raise LinkMessageError(
            kind,
            "table",
            f"message says table {message.get('table')!r} on {table_id!r}'s topic {topic!r}",
        )
    if pool is not None and message.get("pool") != pool:
        raise LinkMessageError(
            kind, "pool", f"message says pool {message.get('pool')!r} on {pool!r}'s topic"
        )
    if (kind in TABLE_KINDS or kind in FRAME_KINDS) and message.get("kind") != kind:
        raise LinkMessageError(
            kind, "kind", f"message says kind {message.get('kind')!r} on a {kind!r} topic"
        )
    validate(kind, message, floats=floats.seen_any)
    if kind in FRAME_KINDS:  # each row as a single message is checked, and their order
        from controller.link.frames import check_rows  # frames.py builds on this module

        check_rows(table_id, message, floats.seen_any)
    return kind, table_id, message
