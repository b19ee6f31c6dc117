"""The link's parser reads with orjson only where that is the standard library's reading.

``plain_loads`` (tests/json_reference.py) gives orjson's value where it is provably
``json.loads``'s (no float, no long integer, no escape, ASCII), and
``controller.link.messages._loads`` then checks the depth from the text outside strings; the
rest goes to the standard library as before (``_loads_std``). Held here over random texts,
their mutations, duplicate keys, deep nesting with brackets in strings, and real frames:
the same value (types included) and the same floats noticed, or the same refusal, word for
word.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_reference import plain_loads

from controller.json_floats import FloatWatch
from controller.link import messages
from controller.link.messages import MAX_DEPTH, LinkMessageError


def same(a, b) -> bool:
    """Equal, and of the same types all the way down (True is not 1, 1.0 is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def outcome(read, raw: bytes):
    watch = FloatWatch()
    try:
        return "ok", read("contribution", raw, watch), watch.seen_any
    except LinkMessageError as exc:
        return "refused", str(exc), exc.field


def assert_read_alike(raw: bytes) -> None:
    new, old = outcome(messages._loads, raw), outcome(messages._loads_std, raw)
    assert new[0] == old[0], (raw, new, old)
    if new[0] == "ok":
        assert same(new[1], old[1]), raw
        assert new[2] == old[2], raw
    else:
        assert new[1:] == old[1:], raw


def check_plain(raw: bytes) -> None:
    got = plain_loads(raw)
    if got is None:
        return
    value, outside = got
    expected = json.loads(raw.decode("utf-8"), parse_constant=lambda c: pytest.fail(c))
    assert same(value, expected), raw
    # the text outside strings: every string emptied, nothing else changed
    assert outside == strings_emptied(raw)


def strings_emptied(raw: bytes) -> bytes:
    out, inside = bytearray(), False
    for byte in raw:
        if byte == ord('"'):
            inside = not inside
            out.append(byte)
        elif not inside:
            out.append(byte)
    return bytes(out)


keys = st.text(alphabet='abkeq.E-0[]{}"\\ ', max_size=5)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.integers(-1000, 1000)
    | st.integers(10**17, 10**19 + 10)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet='ae.E5-[]{}:,"\\ \t\x01\x7f\u00e9\ud800', max_size=8)
    | st.text(max_size=6)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=25,
)


def encodings(value, rnd: random.Random) -> list[bytes]:
    out = []
    for kw in (
        {"separators": (",", ":")},
        {"indent": rnd.choice([None, 1, "\t"])},
        {"ensure_ascii": False, "separators": (",", ":")},
        {"sort_keys": True, "separators": (", ", ": ")},
    ):
        try:
            text = json.dumps(value, **kw)
        except (ValueError, UnicodeEncodeError):
            continue
        out.append(text.encode("utf-8", "surrogatepass"))
    return out


def mutations(raw: bytes, rnd: random.Random) -> list[bytes]:
    out = []
    for _ in range(6):
        if not raw:
            break
        i = rnd.randrange(len(raw) + 1)
        piece = rnd.choice(
            [b'"', b"\\", b".", b"e", b"E", b"1", b"-", b"[", b"]", b"{", b"}", b",", b":",
             b" ", b"\x00", b"\x0b", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80", b"\xef\xbb\xbf",
             b"NaN", b"Infinity", b"9" * 19, b"true", b"nul", b'"a":1,']
        )  # fmt: skip
        cut = rnd.randrange(3)
        out.append(raw[:i] + piece + raw[i + cut :])
    return out


@settings(max_examples=600, deadline=None)
@given(values, st.randoms(use_true_random=False))
def test_orjson_reads_only_what_the_standard_library_reads_alike(value, rnd) -> None:
    for raw in encodings(value, rnd):
        for text in [raw, *mutations(raw, rnd)]:
            check_plain(text)
            assert_read_alike(text)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1,"a":2,"b":3}',
        b'{"a":{"x":1},"b":0,"a":[2]}',
        b'{"n":18446744073709551616}',
        b'{"n":-9223372036854775809}',
        b'{"n":123456789012345678}',
        b'{"n":1234567890123456789}',
        b'{"n":' + b"9" * 21 + b"}",
        b'{"n":' + b"9" * 5000 + b"}",
        b'{"f":5.0}',
        b'{"f":5e0}',
        b'{"f":5E+2}',
        b'{"f":-0.0}',
        b'{"c":NaN}',
        b'{"c":-Infinity}',
        b'{"s":"\\u00e9"}',
        b'{"s":"\\ud800"}',
        b'{"s":"\xed\xa0\x80"}',
        b'{"s":"\xc3\xa9"}',
        b'\xef\xbb\xbf{"a":1}',
        b'{"s":"a\x01b"}',
        b'{"s":"a\x7fb"}',
        b'{"a":1}\x00',
        b'{"a":1} ',
        b' \t\r\n{"a":1}',
        b'\x0c{"a":1}',
        b'{"a":01}',
        b'{"a":-0}',
        b'{"a":[1,]}',
        b'{"a":tru}',
        b'{"a":true,"b":false,"c":null,"e":"e"}',
        b'{"a":"',
        b"",
        b"[]",
        b'"x"',
        b"1",
    ],
)
def test_the_edges_are_read_alike(raw) -> None:
    check_plain(raw)
    assert_read_alike(raw)


def nested(depth: int, rnd: random.Random) -> bytes:
    """``depth`` containers, each perhaps with a string of brackets beside what it holds."""
    text = rnd.choice(["1", "[]", "{}", '"]]]]"', '"[[[["'])
    for _ in range(depth):
        noise = rnd.choice(["", '"]]]",', '"[[[",', '"}{",', '"]" ,', '"{{{{",', "1,"])
        if rnd.random() < 0.5:
            text = f"[{noise}{text}]"
        else:
            key = rnd.choice(['"a"', '"]["', '"}}"'])
            text = "{" + (f'"k":{noise[:-1]},' if noise else "") + f"{key}:{text}" + "}"
    return text.encode()


@pytest.mark.parametrize("depth", range(MAX_DEPTH - 4, MAX_DEPTH + 4))
def test_depth_is_judged_alike_whatever_the_strings_hold(depth) -> None:
    rnd = random.Random(depth)
    for _ in range(300):
        raw = nested(depth, rnd)
        check_plain(raw)
        assert_read_alike(raw)
        # as a frame's rows are: inside an object and a list, beside others
        assert_read_alike(b'{"rows":[' + raw + b',{"x":"]]]]]]]]]]]]]]]]"}]}')


def test_a_deep_message_is_refused_alike() -> None:
    for raw in (b"[" * 17 + b"]" * 17, b"[" * 16 + b"1" + b"]" * 16, b"[" * 5000 + b"]" * 5000):
        assert outcome(messages._loads, raw)[0] == "refused"
        assert_read_alike(raw)
    assert outcome(messages._loads, b"[" * 15 + b"1" + b"]" * 15)[0] == "ok"


@pytest.fixture(scope="module")
def frames(tmp_path_factory, pa) -> list[bytes]:
    from _journal_feeder import SETTINGS, session_events
    from link_keys import table_signer

    from controller.journal import JournaledTable
    from controller.journal.outbox import Outbox
    from controller.link.frames import wire_frame
    from controller.link.messages import envelope
    from controller.table.effects import Publish

    path = tmp_path_factory.mktemp("reading") / "t.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in session_events("pa-standard", 7, 25):
            table.handle(event)
    with Outbox(path) as box:
        rows = [
            envelope("hcm-bj-07", 2, r.seq, Publish(topic=r.kind, key=r.key, payload=r.payload),
                     1_770_000_000_000 + r.seq)
            for r in box.pending()
        ]  # fmt: skip
    signer = table_signer("hcm-bj-07")
    return [
        wire_frame(signer, "hcm-bj-07", 2, 1_770_000_000_000, rows[i : i + 16])
        for i in range(0, len(rows), 16)
    ]


def test_real_frames_are_read_by_orjson_as_the_standard_library_reads_them(frames) -> None:
    for raw in frames:
        assert plain_loads(raw) is not None  # the fast path, as a table sends them
        check_plain(raw)
        assert_read_alike(raw)
