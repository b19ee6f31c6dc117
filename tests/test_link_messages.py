"""The jackpot link contract (v1): real messages against the schemas, forgeries refused.

Every scenario script with a progressive wager or a hit claim is replayed; each Publish effect
the table emits is wrapped in the envelope and checked against controller/link/schemas, and parsed
back from its topic as the jackpot controller would. Malformed and forged messages are refused
with the field named. docs/jackpot/asyncapi.yaml is parsed (a tiny parser for the plain YAML
subset it keeps to: PyYAML is not a dependency) and checked against the code: every channel,
every schema file, every QoS and retained flag.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.errors import TableControllerError
from controller.games import load_game
from controller.link import messages
from controller.link.messages import (
    LinkMessageError,
    envelope,
    meter_topic,
    parse_message,
    topic_for,
    validate,
)
from controller.table.effects import Publish
from controller.table.script import parse_script, replay

ROOT = Path(__file__).resolve().parent.parent
JACKPOT = ROOT / "docs" / "jackpot"
SCHEMAS = ROOT / "controller" / "link" / "schemas"
SCENARIOS = sorted((ROOT / "docs" / "scenarios").glob("*.jsonl"))
TABLE = "hcm-bj-07"


def _publishes(path: Path) -> list[Publish]:
    script = parse_script(path.read_text(encoding="utf-8"), str(path))
    result = replay(script, load_game(script.header["game"]))
    assert not result.failures, result.failures
    return [e for _, step in result.steps for e in step.effects if isinstance(e, Publish)]


@pytest.fixture(scope="module")
def real_publishes() -> dict[str, list[Publish]]:
    return {path.stem: _publishes(path) for path in SCENARIOS}


def _wire(table: str, boot: int, publishes: list[Publish]) -> list[tuple[str, bytes]]:
    out = []
    for seq, publish in enumerate(publishes, start=1):
        message = envelope(table, boot, seq, publish, 1_700_000_000_000 + seq)
        out.append((topic_for(table, publish.topic), json.dumps(message).encode()))
    return out


# -- real messages -------------------------------------------------------------------------


def test_every_publish_of_every_scenario_validates_and_parses_back(real_publishes):
    kinds: dict[str, int] = {}
    for name, publishes in real_publishes.items():
        for topic, data in _wire(TABLE, 3, publishes):
            kind, table, message = parse_message(topic, data)
            assert table == TABLE, name
            assert message["kind"] == kind
            kinds[kind] = kinds.get(kind, 0) + 1
    # the scenarios exercise every kind a table emits today (award_confirm is not emitted yet)
    assert {"contribution", "round_result", "hit_claim"} <= set(kinds), kinds
    assert kinds["round_result"] >= 40


def test_blazing_7s_scenario_contributions_and_hit_claim(real_publishes):
    name = next(n for n in real_publishes if n.startswith("27-blazing-7s"))
    wire = _wire("hcm-bj-12", 1, real_publishes[name])
    parsed = [parse_message(topic, data) for topic, data in wire]
    contributions = [m for k, _, m in parsed if k == "contribution"]
    claims = [m for k, _, m in parsed if k == "hit_claim"]
    assert len(contributions) == 6  # two rounds, three Blazing 7's wagers each
    assert all(m["payload"]["stake"] == 500 and m["payload"]["mystery"] for m in contributions)
    assert claims[0]["payload"]["meter"] == "100% of meter"
    assert claims[0]["payload"]["cards"] == ["7D", "7D"]
    assert claims[0]["key"] == "round-1/spot-1/blazing_7s/claim"
    assert [m["seq"] for _, _, m in parsed] == list(range(1, len(parsed) + 1))
    assert len({m["key"] for _, _, m in parsed}) == len(parsed)  # keys unique per table


def test_envelope_copies_the_payload():
    publish = Publish("contribution", "k", _contribution_payload())
    message = envelope(TABLE, 1, 1, publish, 0)
    message["payload"]["stake"] = 1
    assert publish.payload["stake"] == 500


def test_envelope_without_a_copy_still_refuses_a_float_for_cents():
    """The publisher wraps payloads it just read from the outbox without copying them: the
    checks are the same (500.0 is not an exact number of cents)."""
    payload = _contribution_payload()
    assert (
        envelope(TABLE, 1, 1, Publish("contribution", "k", payload), 0, copy=False)["payload"]
        is payload
    )
    payload["stake"] = 500.0
    with pytest.raises(LinkMessageError, match="integer"):
        envelope(TABLE, 1, 1, Publish("contribution", "k", payload), 0, copy=False)


def test_envelope_refuses_a_kind_a_table_does_not_publish():
    with pytest.raises(LinkMessageError, match="kind"):
        envelope(TABLE, 1, 1, Publish("ack", "k", {}), 0)


# -- malformed and forged ------------------------------------------------------------------


def _contribution_payload() -> dict[str, Any]:
    return {
        "round": 4,
        "game": "pa-standard",
        "spot": 2,
        "wager": "blazing_7s",
        "pool": "blazing_7s",
        "stake": 500,
        "mystery": True,
    }


def _good() -> dict[str, Any]:
    publish = Publish(
        "contribution", "round-4/spot-2/blazing_7s/contribution", _contribution_payload()
    )
    return envelope(TABLE, 2, 17, publish, 1_700_000_000_000)


def _bytes(message: Any) -> bytes:
    return json.dumps(message).encode()


CONTRIBUTION_TOPIC = f"bj/v1/table/{TABLE}/contribution"


def _set(message: dict, path: str, value: Any) -> dict:
    out = copy.deepcopy(message)
    *parents, last = path.split(".")
    target = out
    for part in parents:
        target = target[part]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value
    return out


_DELETE = object()

MALFORMED = [
    ("payload.stake", 500.0, "payload.stake", "integer"),  # cents are exact integers
    ("payload.stake", "500", "payload.stake", "integer"),
    ("payload.stake", 0, "payload.stake", "minimum"),
    ("payload.stake", True, "payload.stake", "integer"),
    ("payload.pool", _DELETE, "payload.pool", "required"),
    ("payload.trigger", 61234, "payload.trigger", "not allowed"),
    ("payload.pool", "blazing/7s", "payload.pool", "match"),
    ("seq", 0, "seq", "minimum"),
    ("boot", -1, "boot", "minimum"),
    ("key", "", "key", "match"),
    ("sent_t", 1.5, "sent_t", "integer"),
    ("extra", 1, "extra", "not allowed"),
    ("payload.mystery", "yes", "payload.mystery", "boolean"),
]


@pytest.mark.parametrize(("path", "value", "field", "words"), MALFORMED)
def test_malformed_contribution_is_refused_naming_the_field(path, value, field, words):
    with pytest.raises(LinkMessageError) as caught:
        parse_message(CONTRIBUTION_TOPIC, _bytes(_set(_good(), path, value)))
    assert caught.value.field == field, str(caught.value)
    assert caught.value.kind == "contribution"
    assert words in str(caught.value)
    assert isinstance(caught.value, TableControllerError) and isinstance(caught.value, ValueError)


def test_a_table_publishing_as_another_is_refused():
    forged = _bytes(_good())  # says hcm-bj-07
    with pytest.raises(LinkMessageError) as caught:
        parse_message("bj/v1/table/hcm-bj-08/contribution", forged)
    assert caught.value.field == "table"
    assert "hcm-bj-07" in str(caught.value) and "hcm-bj-08" in str(caught.value)


def test_a_message_on_another_kinds_topic_is_refused():
    with pytest.raises(LinkMessageError) as caught:
        parse_message(f"bj/v1/table/{TABLE}/hit_claim", _bytes(_good()))
    assert caught.value.field == "kind"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"{not json", "json"),
        (b"\xff\xfe", "json"),
        (b"[1, 2]", "json"),
        (_bytes(_set(_good(), "v", 2)), "v"),
        (_bytes(_set(_good(), "v", _DELETE)), "v"),
        (_bytes(_set(_good(), "v", "1")), "v"),
        # bytes that crash a parser or overflow SQLite are refused like any bad message
        (b'{"v": 1, "seq": ' + b"9" * 5000 + b"}", "json"),
        (b"[" * 3000 + b"]" * 3000, "json"),
        (b'{"a":' * 3000 + b"1" + b"}" * 3000, "json"),
        (b'{"v": 1, "table": "hcm-bj-07", "seq": NaN}', "json"),
        (b'{"v": 1, "table": "hcm-bj-07", "seq": -Infinity}', "json"),
        (_bytes(_set(_good(), "seq", 2**63)), "seq"),
        (_bytes(_set(_good(), "boot", 2**53)), "boot"),
        (_bytes(_set(_good(), "payload.round", 2**53)), "payload.round"),
        (_bytes(_set(_good(), "sent_t", 10**16)), "sent_t"),
    ],
)
def test_bad_json_and_wrong_version_are_refused(data, field):
    with pytest.raises(LinkMessageError) as caught:
        parse_message(CONTRIBUTION_TOPIC, data)
    assert caught.value.field == field


@pytest.mark.parametrize(
    "topic",
    [
        "bj/v2/table/hcm-bj-07/contribution",
        "bj/v1/table/hcm-bj-07/ack",  # controller kinds travel on bj/v1/jackpot/...
        "bj/v1/jackpot/hcm-bj-07/contribution",
        "bj/v1/table/HCM-BJ-07/contribution",
        "bj/v1/table/hcm-bj-07/contribution/extra",
        "bj/v1/meters/Blazing 7s",
        "bj/v1/table/jackpot-controller/contribution",
        "other/topic",
    ],
)
def test_topics_outside_the_layout_are_refused(topic):
    with pytest.raises(LinkMessageError) as caught:
        parse_message(topic, _bytes(_good()))
    assert caught.value.field in ("topic", "table", "pool")


def test_topic_for_refuses_bad_table_ids_and_kinds():
    for bad in ("hcm/bj/07", "hcm-bj-+", "hcm-bj-#", "", "x", "jackpot-controller", "sign-lobby"):
        with pytest.raises(LinkMessageError, match="table"):
            topic_for(bad, "contribution")
    with pytest.raises(LinkMessageError, match="kind"):
        topic_for(TABLE, "meter")
    with pytest.raises(LinkMessageError, match="pool"):
        meter_topic("a/b")


def test_a_hit_claim_needs_exactly_the_first_two_cards():
    payload = {
        "round": 9,
        "game": "pa-standard",
        "spot": 1,
        "wager": "blazing_7s",
        "pool": "blazing_7s",
        "stake": 500,
        "line": "Three 7's - Diamonds",
        "meter": "100% of meter",
        "cards": ["7D", "7D"],
        "up_card": "7D",
    }
    good = envelope(TABLE, 1, 5, Publish("hit_claim", "round-9/claim", payload), 0)
    validate("hit_claim", good)
    for cards, words in ((["7D"], "short"), (["7D", "7D", "7D"], "long"), (["7X", "7D"], "match")):
        with pytest.raises(LinkMessageError) as caught:
            validate("hit_claim", _set(good, "payload.cards", cards))
        assert caught.value.field.startswith("payload.cards"), str(caught.value)
        assert words in str(caught.value)


# -- controller -> table and signs --------------------------------------------------------


def test_controller_messages():
    ack = {"v": 1, "table": TABLE, "seq": 41, "sent_t": 5}
    assert parse_message(topic_for(TABLE, "ack"), _bytes(ack))[:2] == ("ack", TABLE)
    resend = {"v": 1, "table": TABLE, "from": 42, "sent_t": 5}
    assert parse_message(topic_for(TABLE, "resend"), _bytes(resend))[0] == "resend"
    award = {
        "v": 1,
        "table": TABLE,
        "award_id": f"{TABLE}/57",
        "state": "offered",
        "claim_seq": 57,
        "claim_key": "round-9/spot-1/blazing_7s/claim",
        "round": 9,
        "spot": 1,
        "pool": "blazing_7s",
        "meter": "100% of meter",
        "amount": 1_234_567,
        "order": 1,
        "meter_before": 1_234_567,
        "sent_t": 5,
    }
    validate("award", award)
    with pytest.raises(LinkMessageError) as caught:  # the table checks the share of it
        validate("award", {k: v for k, v in award.items() if k != "meter_before"})
    assert caught.value.field == "meter_before"
    refused = {k: v for k, v in award.items() if k not in ("order", "meter_before")}
    refused |= {"state": "refused"}
    with pytest.raises(LinkMessageError):
        validate("award", refused | {"amount": 1_234_567, "reason": "not three 7's"})
    validate("award", refused | {"amount": 0, "reason": "the cards are not three 7's"})
    with pytest.raises(LinkMessageError) as caught:
        validate("award", refused | {"amount": 0})
    assert caught.value.field == "reason"
    with pytest.raises(LinkMessageError) as caught:
        parse_message(topic_for("hcm-bj-08", "award"), _bytes(award))
    assert caught.value.field == "table"


def test_table_status_birth_and_will():
    birth = {"v": 1, "table": TABLE, "boot": 8, "state": "online", "sent_t": 1}
    assert parse_message(topic_for(TABLE, "status"), _bytes(birth))[0] == "status"
    will = birth | {"state": "offline", "clean": False}
    validate("status", will)
    with pytest.raises(LinkMessageError):
        validate("status", birth | {"state": "offline"})  # offline says whether clean


def test_meters_for_signs_carry_an_exact_fraction_and_never_a_trigger():
    meter = {"v": 1, "pool": "mystery", "amount": 61_234, "fraction": "1/3", "seq": 9, "sent_t": 1}
    kind, table, parsed = parse_message(meter_topic("mystery"), _bytes(meter))
    assert (kind, table, parsed["fraction"]) == ("meter", None, "1/3")
    validate("meter", meter | {"must_hit_by": 100_000})
    for bad, field in (
        ({"fraction": "3/3"}, "fraction"),
        ({"fraction": "0.33"}, "fraction"),
        ({"amount": 612.34}, "amount"),
        ({"trigger": 75_000}, "trigger"),
        ({"must_hit_by": 0}, "must_hit_by"),
    ):
        with pytest.raises(LinkMessageError) as caught:
            validate("meter", meter | bad)
        assert caught.value.field == field, str(caught.value)
    with pytest.raises(LinkMessageError) as caught:
        parse_message(meter_topic("blazing_7s"), _bytes(meter))
    assert caught.value.field == "pool"
    status = {"v": 1, "state": "offline", "boot": 3, "sent_t": 0}
    assert parse_message(messages.JACKPOT_STATUS_TOPIC, _bytes(status))[0] == "jackpot_status"


def test_no_schema_has_a_field_for_the_mystery_trigger():
    for path in SCHEMAS.glob("*.json"):
        assert "trigger" not in re.sub(r'"description": "[^"]*"', "", path.read_text()), path.name


def test_unknown_kind_is_refused():
    with pytest.raises(LinkMessageError, match="unknown message kind"):
        validate("jackpot", {})


# -- the AsyncAPI document agrees with the code --------------------------------------------


def _scalar(text: str) -> Any:
    if text.startswith("'"):
        assert text.endswith("'") and len(text) > 1, text
        return text[1:-1].replace("''", "'")
    if text.startswith('"'):
        return json.loads(text)
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    assert not text.startswith(("[", "{", "|", ">", "&", "*", "!")), f"outside the subset: {text}"
    return text


def _block(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[Any, int]:
    """Parse the block at ``indent`` starting at line ``i``: a mapping or a list."""
    if lines[i][1].startswith("- "):
        items = []
        while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
            rest = lines[i][1][2:]
            if re.match(r"^[^'\"]*?: |^[^'\"]*:$", rest):  # "- key: value": a mapping item
                lines[i] = (indent + 2, rest)
                value, i = _block(lines, i, indent + 2)
            else:
                value, i = _scalar(rest), i + 1
            items.append(value)
        return items, i
    mapping: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent:
        key, sep, rest = lines[i][1].partition(":")
        assert sep and not key.startswith("- "), f"line {lines[i]}: not a mapping entry"
        key = _scalar(key.strip())
        assert key not in mapping, f"duplicate key {key}"
        rest = rest.strip()
        if rest:
            mapping[key], i = _scalar(rest), i + 1
        else:
            i += 1
            nxt = lines[i][0] if i < len(lines) else -1
            assert nxt > indent or (nxt == indent and lines[i][1].startswith("- ")), key
            mapping[key], i = _block(lines, i, nxt)
    return mapping, i


def load_plain_yaml(text: str) -> Any:
    lines = []
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        assert "\t" not in raw, "tabs"
        lines.append((len(raw) - len(raw.lstrip(" ")), stripped))
    doc, end = _block(lines, 0, 0)
    assert end == len(lines), f"unparsed from {lines[end]}"
    return doc


def test_the_tiny_yaml_parser():
    text = "a: 1\nb:\n  c: 'it''s'\n  d:\n    - x\n    - $ref: '#/y'\n      e: true\n# c\n"
    assert load_plain_yaml(text) == {
        "a": 1,
        "b": {"c": "it's", "d": ["x", {"$ref": "#/y", "e": True}]},
    }


@pytest.fixture(scope="module")
def asyncapi() -> dict[str, Any]:
    return load_plain_yaml((JACKPOT / "asyncapi.yaml").read_text(encoding="utf-8"))


def _resolve(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = doc
    for part in ref[2:].split("/"):
        assert part in node, f"{ref}: no {part!r}"
        node = node[part]
    return node


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_asyncapi_is_3_0_and_every_reference_resolves(asyncapi):
    assert asyncapi["asyncapi"] == "3.0.0"
    assert asyncapi["servers"]["property"]["protocolVersion"] == "5"
    files = set()
    for ref in _refs(asyncapi):
        if ref.startswith("#/"):
            _resolve(asyncapi, ref)
        else:
            assert (JACKPOT / ref).is_file(), f"{ref} does not exist"
            files.add((JACKPOT / ref).resolve())
    schemas = {p.resolve() for p in SCHEMAS.glob("*.json")}
    used_indirectly = {(SCHEMAS / n).resolve() for n in ("common.json", "envelope.json")}
    assert files | used_indirectly == schemas  # no schema left out of the document


def _address(kind: str) -> str:
    if kind == "meter":
        return "bj/v1/meters/{pool}"
    if kind == "jackpot_status":
        return messages.JACKPOT_STATUS_TOPIC
    return topic_for("hcm-bj-07", kind).replace("hcm-bj-07", "{table_id}")


def test_every_kind_has_its_channel_message_schema_and_delivery(asyncapi):
    channels = asyncapi["channels"]
    by_address = {c["address"]: (name, c) for name, c in channels.items()}
    assert len(by_address) == len(channels) == len(messages.ALL_KINDS)
    for kind in messages.ALL_KINDS:
        address = _address(kind)
        assert address in by_address, f"{kind}: no channel {address}"
        name, channel = by_address[address]
        for param in re.findall(r"{(\w+)}", address):
            assert param in channel["parameters"], f"{name}: parameter {param}"
        assert list(channel["messages"]) == [kind]
        message = _resolve(asyncapi, channel["messages"][kind]["$ref"])
        schema = message["payload"]["schema"]["$ref"]
        assert schema == f"../../controller/link/schemas/{messages.SCHEMA_FILES[kind]}"
        ops = [
            op
            for op in asyncapi["operations"].values()
            if op["channel"]["$ref"] == f"#/channels/{name}"
        ]
        assert {op["action"] for op in ops} == {"send", "receive"}, name
        qos, retain = messages.DELIVERY[kind]
        for op in ops:
            got = op["bindings"]["mqtt"]["qos"]
            # a receiver may subscribe below the publish QoS and say why (the tables take the
            # controller's heartbeat at QoS 0: a queued heartbeat is no heartbeat)
            assert got == qos or (op["action"] == "receive" and got < qos), name
            assert got == qos or f"QoS {got}" in op["summary"], name
            assert op["bindings"]["mqtt"]["retain"] is retain, name


def test_schemas_load_from_outside_the_checkout_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert messages.schema_dir().joinpath("envelope.json").is_file()
    validate("contribution", _good())


# -- the two validators ----------------------------------------------------------------------


def test_a_trailing_newline_is_not_a_match():
    """Python's ``$`` matches before a final newline; the compiled validator's does not, and
    it decides: ``round-1/...\\n`` is not a key (the reference validator alone accepted it)."""
    message = _set(_good(), "key", _good()["key"] + "\n")
    assert not list(messages._validators()["contribution"].iter_errors(message))
    with pytest.raises(LinkMessageError) as caught:
        parse_message(CONTRIBUTION_TOPIC, _bytes(message))
    assert caught.value.field == "key" and "does not match" in str(caught.value)


def test_the_fast_path_and_the_reference_agree_on_every_malformed_case():
    """Each MALFORMED case, and the good message, gets the same verdict from jsonschema-rs
    (a message without floats) as from python-jsonschema; only floats need the reference."""
    compiled, reference = messages._compiled()["contribution"], messages._validators()
    good = _good()
    assert compiled.is_valid(good) and not list(reference["contribution"].iter_errors(good))
    for path, value, _field, _words in MALFORMED:
        bad = _set(good, path, value)
        has_float = messages._has_float(bad)
        assert list(reference["contribution"].iter_errors(bad)), path
        if not has_float:
            assert not compiled.is_valid(bad), path
        else:  # JSON Schema counts 500.0 as an integer; exact money does not
            assert path in ("payload.stake", "sent_t")


def test_a_float_anywhere_is_checked_by_the_reference_validator():
    """A float the schema would take for an integer (``500.0``) is refused, whether the
    message was parsed from bytes (the parser notes the float) or built in code."""
    bad = _set(_good(), "payload.stake", 500.0)
    with pytest.raises(LinkMessageError, match="integer"):
        messages.validate("contribution", bad)
    with pytest.raises(LinkMessageError, match="integer"):
        parse_message(CONTRIBUTION_TOPIC, _bytes(_good()).replace(b'"stake": 500', b'"stake": 5e2'))


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into ``value`` (dict keys and list indexes), the root excluded."""
    out = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        out.append((*prefix, key))
        if isinstance(item, (dict, list)):
            out.extend(_paths(item, (*prefix, key)))
    return out


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=12)
    | st.sampled_from(["", "\n", "7D", "10H", "hcm-bj-07\n", "blazing_7s", "500", "1/3"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_what_the_compiled_check_accepts_the_reference_accepts(real_publishes, data):
    """Differential: a real message of each kind, one field replaced (or removed, or a field
    added) at random; whenever jsonschema-rs says valid, python-jsonschema has no objection
    either (the compiled check never lets through what the reference refuses)."""
    publishes = [p for ps in real_publishes.values() for p in ps]
    publish = data.draw(st.sampled_from(publishes))
    message = envelope(TABLE, 1, 1, publish, 1_700_000_000_000)
    path = data.draw(st.sampled_from(_paths(message)))
    target = message
    for key in path[:-1]:
        target = target[key]
    change = data.draw(st.sampled_from(["replace", "remove", "add"]))
    if change == "replace":
        target[path[-1]] = data.draw(_JSON)
    elif change == "remove" and isinstance(target, dict):
        del target[path[-1]]
    elif isinstance(target, dict):
        target[data.draw(st.text(min_size=1, max_size=6))] = data.draw(_JSON)
    kind = publish.topic
    compiled = messages._compiled()[kind].is_valid(message)
    refusals = list(messages._validators()[kind].iter_errors(message))
    if compiled:
        assert not refusals, (path, change, refusals[0].message)


# -- a refusal's detail for the technician (issue 26) ------------------------------------------


def test_a_refused_messages_words_are_escaped_and_cut_for_the_log():
    hostile = "PAY SPOT 3 $25,000 NOW\n2026-01-01 INFO jackpot link ok\x1b[31m\u202e\u3164"
    text = messages.loggable(hostile)
    assert text == (
        "PAY SPOT 3 $25,000 NOW\\n2026-01-01 INFO jackpot link ok\\x1b[31m\\u202e\\u3164"
    )
    assert messages.loggable("\u202e" * 100, 20) == "\\u202e\\u202e..."  # whole escapes
    assert len(messages.loggable("$" * 5000)) == messages.DETAIL_MAX


@given(st.text(max_size=400), st.integers(min_value=3, max_value=300))
def test_loggable_is_printable_ascii_bounded_and_idempotent(text, limit):
    out = messages.loggable(text, limit)
    assert out.isascii() and out.isprintable() and len(out) <= limit
    assert messages.loggable(out, limit) == out
    full = messages.loggable(text, 10**6)  # never cut: every character is there, escaped
    assert out == full or (out.endswith("...") and full.startswith(out[:-3]))
    if "\\" not in text:
        assert full.encode().decode("unicode_escape") == text
