"""controller.json_rows reads an outbox row back as the standard library reads it (the same
data, the same types, the same float flag) and writes float-free data as the canonical bytes
the standard library writes, over random data and every row of played sessions."""

from __future__ import annotations

import json
import math

import pytest
from _journal_feeder import SETTINGS, session_events
from hypothesis import given, settings
from hypothesis import strategies as st

from controller import json_rows
from controller.games import load_game
from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.json_floats import FloatWatch
from controller.link.messages import envelope
from controller.table.effects import Publish


def stdlib_loads(text):
    floats = FloatWatch()
    return json.loads(text, parse_float=floats.seen), floats.seen_any


def stdlib_canonical(data):
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def typed(value):
    """``value`` with each scalar's type beside it: ``1``, ``1.0`` and ``True`` differ."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def same_read(text):
    """Both read ``text`` alike: the same data and flag, or both refuse it."""
    try:
        expected = stdlib_loads(text)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)) as got:
            json_rows.loads(text)
        assert str(got.value) == str(exc)  # the standard library's own words
        return
    data, floats = json_rows.loads(text)
    assert typed(data) == typed(expected[0])
    assert floats == expected[1]


integers = (
    st.integers(min_value=-(2**70), max_value=2**70)  # past 64 bits: orjson reads a float
    | st.integers(min_value=-(2**63) - 2, max_value=2**64 + 2)
    | st.integers(min_value=-(2**40), max_value=2**40)
)
scalars = (
    st.none()
    | st.booleans()
    | integers
    | st.text()  # control characters, quotes, backslashes, DEL, U+2028, astral planes
    | st.text(alphabet="0123456789.eE-:,[ ")  # text that looks like numbers
    | st.floats(allow_nan=False, allow_infinity=False)
)
float_free = st.none() | st.booleans() | integers | st.text() | st.text(alphabet="0123456789.eE-")
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=40,
)
float_free_values = st.recursive(
    float_free,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=40,
)


@settings(max_examples=500, deadline=None)
@given(values, st.sampled_from([(",", ":"), (", ", ": ")]), st.booleans())
def test_a_row_reads_as_the_standard_library_reads_it(data, separators, ascii_only) -> None:
    same_read(json.dumps(data, separators=separators, ensure_ascii=ascii_only))


@settings(max_examples=500, deadline=None)
@given(float_free_values)
def test_float_free_data_is_the_standard_librarys_canonical_bytes(data) -> None:
    assert json_rows.canonical(data) == stdlib_canonical(data)


@pytest.mark.parametrize(
    "text",
    [
        "1.5", "-0.0", "1e5", "[1E+2]", '{"a":-2.5e-3}', '{"a": 7.0}', "[0,\n3.25]",
        "123456789012345678901234567890", "-9223372036854775809", "18446744073709551616",
        "9223372036854775807", "-9223372036854775808", "18446744073709551615",
        '{"chain":"6fb4f569f0e3f87c5e7d1c5ad9189c5162057998b4a130f64af4aa8d113f1c30"}',
        '{"hash":"12345678901234567890123"}', '"a:1.5"', '"x-5e"',
        "NaN", "[Infinity]", "-Infinity", '"\\ud800"', '"\\udc00x"', '{"a":1,"a":2}',
        "", "[1,]", "{'a':1}", "[1] [2]", '"\x01"', "\ufeff1", "01",
        "[" * 2000 + "]" * 2000, "[" * 100 + "]" * 100,
    ],
)  # fmt: skip
def test_awkward_rows_read_as_the_standard_library_reads_them(text) -> None:
    same_read(text)


def test_what_orjson_would_write_otherwise_is_the_standard_librarys() -> None:
    data = {"e": "\u00e9", "del": "\x7f", "big": 2**70, "ls": "\u2028", "null": None}
    assert json_rows.canonical(data) == stdlib_canonical(data)


@pytest.fixture(scope="module")
def played_rows(tmp_path_factory):
    rows = []
    for game, seed in (("pa-standard", 11), ("pa-standard", 12)):
        path = tmp_path_factory.mktemp("rows") / "table.journal"
        with JournaledTable(path, load_game(game), SETTINGS) as table:
            for event in session_events(game, seed, 120):
                table.handle(event)
        with Outbox(path) as box:
            texts = box.db.execute("SELECT seq, kind, key, payload FROM outbox").fetchall()
        rows.extend(texts)
    return rows


def test_every_played_row_reads_and_signs_as_before(played_rows) -> None:
    """Each row of two played sessions: read as the standard library reads it, and its
    envelope, the bytes a frame's leaf and signature cover, as it writes them."""
    assert len(played_rows) > 400
    assert {kind for _, kind, _, _ in played_rows} >= {"contribution", "round_result"}
    for seq, kind, key, text in played_rows:
        same_read(text)
        data, floats = json_rows.loads(text)
        assert not floats
        message = envelope("hcm-bj-07", 3, seq, Publish(kind, key, data), 1770000000123)
        assert json_rows.canonical(message) == stdlib_canonical(message)
