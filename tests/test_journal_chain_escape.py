"""The chain's links written without ``dumps`` (issue 32 item 4): the same bytes hashed as
``dumps(["event", ...])`` and ``dumps(["round", ...])`` for any text, every escape included."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from controller.journal import chain

GENESIS = chain.GENESIS
# every code point but the surrogates, which no UTF-8 text (and no journal row) holds
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


def stdlib_link(prev: str, item: list) -> str:
    text = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
    return chain._digest(prev, text)


@given(texts, st.integers(0, 10**12), st.integers(-1, 10**6), st.booleans(),
       st.one_of(st.none(), st.integers(0, 2**62)))  # fmt: skip
def test_event_link_hashes_the_standard_librarys_text(text, seq, number, accepted, utc_ms):
    expected = stdlib_link(GENESIS, ["event", seq, number, text, int(accepted), utc_ms])
    assert chain.event_link(GENESIS, seq, number, text, accepted, utc_ms) == expected


@given(texts, st.integers(-1, 10**6), st.integers(0, 10**12),
       st.one_of(st.none(), st.integers(0, 2**62)))  # fmt: skip
def test_round_link_hashes_the_standard_librarys_text(text, number, seq, utc_ms):
    expected = stdlib_link(GENESIS, ["round", number, seq, text, utc_ms])
    assert chain.round_link(GENESIS, number, seq, text, utc_ms) == expected


def test_every_code_point_is_escaped_as_the_standard_library_does():
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert chain._escaped(text) == json.dumps(text, ensure_ascii=False).encode()


def test_a_lone_surrogate_fails_as_before():
    for link in (
        lambda: chain.round_link(GENESIS, 1, 1, "\ud800", 5),
        lambda: chain.event_link(GENESIS, 1, 1, "\ud800", True, 5),
    ):
        try:
            link()
        except UnicodeEncodeError:
            continue
        raise AssertionError("a lone surrogate was hashed")
