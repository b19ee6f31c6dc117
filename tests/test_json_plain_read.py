"""``controller.json_text.plain_read`` (issue 32, sixth round: a frame read without copying
the text outside strings) held to ``plain_loads`` (tests/json_reference.py), which it
replaces on the link: whatever it reads, ``plain_loads`` reads to the same value, and its
brackets are those outside strings; the link's own reading is held to the standard
library's in test_link_reading."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_reference import plain_loads
from test_link_reading import encodings, frames, mutations, nested, same, values  # noqa: F401

from controller import json_text

BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def check_read(raw: bytes) -> None:
    got = json_text.plain_read(raw)
    old = plain_loads(raw)
    if got is None:
        return
    assert old is not None, raw  # never looser than plain_loads
    value, brackets = got
    assert same(value, old[0]), raw
    outside_brackets = old[1].translate(None, BRACKETS)
    if brackets is None:  # only where a string holds a bracket
        assert raw.translate(None, BRACKETS) != outside_brackets, raw
    else:
        assert brackets == outside_brackets, raw


@settings(max_examples=600, deadline=None)
@given(values, st.randoms(use_true_random=False))
def test_plain_read_reads_what_plain_loads_reads(value, rnd) -> None:
    for raw in encodings(value, rnd):
        for text in [raw, *mutations(raw, rnd)]:
            check_read(text)


@pytest.mark.parametrize(
    "raw",
    [
        b"[1.5]", b"[ -1E3]", b"-0.5", b"0.5", b" \n-2e1", b"[1234567890123456789]",
        b"1234567890123456789", b"[-1234567890123456789]", b'{"a":\t-5e-3}',
        b'{"a":[1,\r\n 2.0]}', b'{"a":true,"b":false,"e":"e"}', b'["[",1]', b'["a:1.5"]',
    ],
)  # fmt: skip
def test_the_edges_are_read_as_plain_loads_reads_them(raw) -> None:
    check_read(raw)


def test_a_float_or_long_integer_is_never_read() -> None:
    for raw in (b"[1.5]", b'{"a": -1e3}', b"-0.5", b"[1234567890123456789]", b'{"a":[0,1E2]}'):
        assert json_text.plain_read(raw) is None


def test_brackets_in_strings_are_told() -> None:
    rnd = random.Random(7)
    for depth in range(1, 20):
        for _ in range(50):
            check_read(nested(depth, rnd))


def test_real_frames_take_the_fast_path_with_their_brackets(frames) -> None:  # noqa: F811
    for raw in frames:
        got = json_text.plain_read(raw)
        assert got is not None and got[1] is not None
        check_read(raw)
