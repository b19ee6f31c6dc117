"""The PostgreSQL ledger's array dumpers (jackpot/store/postgres.py ``_TextArrayDumper``,
``_BigintArrayDumper``) send what psycopg's own list dumper sends for the same values: the
same bytes, the same type (``text[]``, ``bigint[]``), in binary. They pass through the
arrays ``_array`` built (tests/test_ledger_arrays.py holds those bytes to psycopg's)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.adapt import AdaptersMap, PyFormat, Transformer
from psycopg.types.numeric import Int8

from jackpot.store.postgres import (
    _array,
    _BigintArray,
    _BigintArrayDumper,
    _TextArray,
    _TextArrayDumper,
)


def ledgers_transformer() -> Transformer:
    """psycopg's adapters with the two dumpers registered, as ``PostgresStore`` does."""
    adapters = AdaptersMap(psycopg.adapters)
    adapters.register_dumper(_TextArray, _TextArrayDumper)
    adapters.register_dumper(_BigintArray, _BigintArrayDumper)
    return Transformer(adapters)


def psycopgs(values: list):
    dumper = Transformer().get_dumper(values, PyFormat.BINARY)
    return dumper.oid, dumper.format, bytes(dumper.dump(values))


@pytest.mark.parametrize(
    ("kind", "values", "as_psycopg"),
    [
        ("text", ["a"], None),
        ("text", ["pa-standard", None, "", "é €", '{"k":[1,"x"]}'], None),
        ("text", [None, "x"], None),
        ("int", [0], Int8),
        ("int", [1, None, -(2**63), 2**63 - 1, 125_000], Int8),
        ("int", [None, 7], Int8),
    ],
)
def test_the_dumped_arrays_are_psycopgs(kind, values, as_psycopg) -> None:
    array = _array(kind, values)
    dumper = ledgers_transformer().get_dumper(array, PyFormat.BINARY)
    got = dumper.oid, dumper.format, bytes(dumper.dump(array))
    if as_psycopg is not None:  # psycopg picks the smallest integer type for the first value
        values = [None if v is None else as_psycopg(v) for v in values]
    assert got == psycopgs(values)
