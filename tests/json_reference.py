"""The tests' reference for reading JSON on the link: ``plain_loads``, the reading that
``controller.json_text.plain_read`` replaced there (issue 32), kept here with no production
caller: tests/test_json_plain_read.py holds ``plain_read`` to it, and
tests/test_link_reading.py holds it to ``json.loads``."""

from __future__ import annotations

from typing import Any

import orjson

#: Every byte to ``.``, the digits to ``0``: a run of digits is then a substring search.
_DIGITS = bytes.maketrans(bytes(range(256)), b"." * 48 + b"0" * 10 + b"." * 198)
#: 19 digits: the shortest run that may be an integer past 64 bits (2^63 has 19 digits).
_LONG_RUN = b"0" * 19


def plain_loads(raw: bytes) -> tuple[Any, bytes] | None:
    """``(value, outside)``: ``raw`` read by orjson, and its text outside strings (quotes
    and brackets included), where that value is provably ``json.loads(raw.decode("utf-8"))``
    and holds no float, no NaN or infinity, and no integer of 19 digits or more. None
    otherwise, or where orjson refuses the text: read it with the standard library.

    Provably: ``raw`` is ASCII (valid UTF-8, decoded to the same characters) and holds no
    backslash (no escape: every quote opens or closes a string, so the text outside strings
    is every other piece between quotes); outside strings it holds no ``.``, no ``E`` and no
    ``e`` but those of ``true`` and ``false`` (no float: a JSON number with a fraction or an
    exponent has one of them; ``NaN`` and ``Infinity`` orjson refuses), and no run of 19
    digits (orjson reads an integer past 64 bits as a float; the standard library as an int).
    What is left, objects, arrays, plain strings, integers, ``true``, ``false`` and
    ``null``, both read alike (duplicate keys: the last value, at the first key's place;
    a control character in a string, a trailing comma, a leading zero: both refuse).

    >>> plain_loads(b'{"a":[1,true,null,"x.5"]}')
    ({'a': [1, True, None, 'x.5']}, b'{"":[1,true,null,""]}')
    >>> [plain_loads(t) for t in (b'[1.5]', b'[1e3]', b'"\\\\u00e9"', b'[NaN]', b'[1,]')]
    [None, None, None, None, None]
    """
    if not raw.isascii() or b"\\" in raw:
        return None
    outside = b'""'.join(raw.split(b'"')[::2])
    if (
        b"." in outside
        or b"E" in outside
        or outside.count(b"e") != outside.count(b"true") + outside.count(b"false")
        or _LONG_RUN in outside.translate(_DIGITS)
    ):
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value, outside
