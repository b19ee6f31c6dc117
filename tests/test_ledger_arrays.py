"""The PostgreSQL ledger's binary arrays (jackpot/store/postgres.py ``_array``) are the bytes
psycopg's own list dumper sends for the same values; other values are left to psycopg."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg.adapt import PyFormat, Transformer

from jackpot.store.postgres import _array, _BigintArray, _TextArray

psycopg_dump = Transformer().get_dumper


def dumped(values: list) -> bytes:
    return bytes(psycopg_dump(values, PyFormat.BINARY).dump(values))


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"))


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, min_size=1), st.lists(st.booleans()))
def test_text_arrays_are_psycopgs_bytes(values, nulls) -> None:
    values = [None if i and i < len(nulls) and nulls[i] else v for i, v in enumerate(values)]
    got = _array("text", values)
    assert isinstance(got, _TextArray)
    assert bytes(got) == dumped(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1), st.lists(st.booleans()))
def test_bigint_arrays_are_psycopgs_bytes(values, nulls) -> None:
    values = [None if i and i < len(nulls) and nulls[i] else v for i, v in enumerate(values)]
    got = _array("int", values)
    assert isinstance(got, _BigintArray)
    # psycopg picks the smallest integer type that holds the first value; the bytes of
    # a bigint[] are those of the values as 64-bit integers
    assert bytes(got) == dumped_as_bigint(values)


def dumped_as_bigint(values: list) -> bytes:
    from psycopg.types.numeric import Int8

    return dumped([None if v is None else Int8(v) for v in values])


@pytest.mark.parametrize(
    ("kind", "values"),
    [("text", ["a", 1]), ("text", [b"x"]), ("int", [1, "2"]), ("int", [True]), ("int", [2**70])],
)
def test_other_values_are_left_to_psycopg(kind, values) -> None:
    assert _array(kind, values) == values
    assert not isinstance(_array(kind, values), bytes)


def test_an_empty_array_has_its_element_type() -> None:
    assert bytes(_array("text", [])) == b"\0\0\0\0\0\0\0\0\0\0\0\x19"
    assert bytes(_array("int", [])) == b"\0\0\0\0\0\0\0\0\0\0\0\x14"
