"""controller.json_text writes the very bytes the standard library writes, whatever the data
(orjson where it gives the same, the standard library where it might not). The journal's
rows over whole replays are held to their old digests by test_table_replay_golden."""

from __future__ import annotations

import dataclasses
import enum
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller import json_text


def stdlib_compact(data):
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def stdlib_canonical(data):
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


finite = st.floats(allow_nan=False, allow_infinity=False)
small = st.builds(lambda m, e: float(f"{m}e{e}"), st.integers(1, 99999), st.integers(-14, -3))
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # past 64 bits: orjson refuses
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.text()  # control characters, quotes, backslashes, DEL, U+2028, astral planes
    | st.text(alphabet=st.characters(max_codepoint=0x80))
    | finite
    | small  # the sizes orjson writes otherwise (0.00001, not 1e-05)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_both_forms_are_the_standard_librarys_bytes(data) -> None:
    assert json_text.compact(data) == stdlib_compact(data)
    assert json_text.canonical(data) == stdlib_canonical(data)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.integers() | st.booleans() | st.none(), st.integers(), max_size=4))
def test_keys_that_are_not_strings_are_written_as_the_standard_library_writes_them(data):
    assert json_text.compact(data) == stdlib_compact(data)
    try:
        expected = stdlib_canonical(data)
    except TypeError:  # keys of mixed types cannot be sorted: refused the same way
        with pytest.raises(TypeError):
            json_text.canonical(data)
    else:
        assert json_text.canonical(data) == expected


class Suit(str, enum.Enum):  # noqa: UP042 (what a str-and-Enum member writes)
    HEARTS = "hearts"


class Count(enum.IntEnum):
    TWO = 2


class Key(str):
    pass


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize(
    "data",
    [
        {"suit": Suit.HEARTS, "n": Count.TWO},
        {Key("k"): Key("v"), "list": [Key("a")]},
        {"e-mail": "one-two", "x": "0.00001"},  # text a float's form could be in: re-encoded
        {"del": "\x7f", "nul": "\x00", "ls": "\u2028", "astral": "\U0001f0a1", "q": '"\\'},
        {"t": 1e-05, "u": 1.5e-07, "big": 1e16, "neg": -0.0, "tiny": 5e-324},
    ],
    ids=["enums", "str-subclasses", "float-like-text", "escapes", "floats"],
)
def test_the_awkward_cases_are_the_standard_librarys_bytes(data) -> None:
    assert json_text.compact(data) == stdlib_compact(data)
    assert json_text.canonical(data) == stdlib_canonical(data)


def test_what_the_standard_library_refuses_is_refused() -> None:
    with pytest.raises(TypeError):
        json_text.compact({"point": Point(1)})  # orjson would write a dataclass
    with pytest.raises(TypeError):
        json_text.canonical({"point": Point(1)})
    with pytest.raises(ValueError):
        json_text.canonical({"x": math.nan})
    with pytest.raises(ValueError):
        json_text.canonical({"x": math.inf})


def test_the_journals_form_writes_nan_as_null_which_it_never_holds() -> None:
    """The one documented difference: the journal's rows hold no float (every number is an
    integer), and NaN is not JSON in either form."""
    assert json_text.compact({"x": math.nan}) == '{"x":null}'


no_floats = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text()
    | st.sampled_from(["null", "e-5", "0.00001", "1e-05", "side-bet"]),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(no_floats)
def test_canonical_of_data_known_to_hold_no_float_is_the_standard_librarys(data) -> None:
    assert json_text.canonical(data, floats=False) == stdlib_canonical(data)
