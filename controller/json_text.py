"""JSON text in the two forms the product writes, made by orjson where that gives the very
bytes the standard library gives, and by the standard library where it might not.

- :func:`compact`: ``json.dumps(data, separators=(",", ":"), ensure_ascii=False)``, the
  form of every journal row (``controller.journal.store.dumps``);
- :func:`canonical`: ``json.dumps(data, sort_keys=True, separators=(",", ":"),
  ensure_ascii=True, allow_nan=False)``, what a link message's signature covers
  (``controller.link.signing.canonical``).

Why orjson (issue 32, "Prompts in 2 ms"): a settled round's record is about 17 kB of JSON,
written inside the dealer's settling draw before its commit; the standard library's C
encoder takes 180 us for it on the 2-core machine, orjson 25 us. orjson is kept (Rust, wheels
for aarch64 and armv7 on PyPI) and does the same job on a Pi.

Where the two libraries could differ, the standard library writes the text:

- anything orjson refuses (an int past 64 bits, a key that is not a str, a type it does not
  know: ``TypeError``), and subclasses of str, int, dict and list, dataclasses and dates,
  which orjson is told to pass through (``OPT_PASSTHROUGH_*``) so they reach the fallback;
- a float that orjson writes in another form: those from 1e-9 to 1e-4 in size (the standard
  library writes ``1e-05``, orjson ``0.00001``; ``1.5e-07``, ``1.5e-7``). Their text holds
  ``0.0000`` or ``e-`` followed by one digit, and any text holding ``0.0000`` or ``e-`` is
  written again by the standard library (two byte searches, 1 us for a round's record; a
  string may hold them too, which only costs that row the slower encoder);
- NaN and the infinities, which orjson writes as ``null``: :func:`canonical` writes any text
  holding ``null`` again with the standard library, which refuses them (``ValueError``), so a
  signature is never made over a NaN read as null. :func:`compact` does not look (a round's
  record always holds ``null``): the journal's rows hold no float at all (every number in
  them is an integer: cents, ms, counts, and the events are checked field by field), and the
  standard library would write ``NaN``, which is not JSON either;
- for :func:`canonical`, any character outside printable ASCII in the output (orjson writes
  UTF-8 and DEL as they are, the canonical form escapes them).

- :func:`canonical` of data its caller knows holds no float (``floats=False``: it parsed it
  and noticed none): NaN, the infinities and floats written otherwise cannot be in it, so a
  ``null``, ``0.0000`` or ``e-`` in the text (a round result's ``null`` fields, a wager's
  ``e-`` in a string) does not send it to the standard library.

Reading (:func:`plain_read`, issue 32 item 1: a batch frame of 30 rows took the standard
library's parser 600 us, orjson 110 us): orjson reads a text only where what it gives is
provably ``json.loads(raw.decode("utf-8"))``'s, and no float, NaN, infinity or long integer
is in it; anything else (and anything orjson refuses) is the caller's to read with the
standard library, which says why it refuses. orjson reads an integer past 64 bits as a
float, and a lone surrogate escape it refuses: the text holds neither where it is read.

``tests/test_json_text.py`` holds every form to the standard library's bytes over random
data and over every row the golden replay writes; ``tests/test_json_plain_read.py`` holds
:func:`plain_read` to ``plain_loads`` (the reading it replaced, kept as the tests' reference
in ``tests/json_reference.py``), which ``tests/test_link_reading.py`` holds to ``json.loads``
over random texts and their mutations.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
).encode

_PASS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
_SORTED = _PASS | orjson.OPT_SORT_KEYS
_dumps = orjson.dumps


def _refuse(value: Any) -> Any:
    """orjson's ``default``: whatever it passes through goes to the standard library."""
    raise TypeError


def _plain(text: bytes) -> bool:
    """Whether orjson's ``text`` can hold no float written otherwise than by the standard
    library (see above)."""
    return b"0.0000" not in text and b"e-" not in text


def compact(data: Any) -> str:
    """``data`` as compact JSON text, non-ASCII as it is: byte for byte ``json.dumps(data,
    separators=(",", ":"), ensure_ascii=False)``."""
    try:
        text = _dumps(data, default=_refuse, option=_PASS)
    except TypeError:
        return _COMPACT(data)
    return text.decode() if _plain(text) else _COMPACT(data)


def canonical(data: Any, *, floats: bool | None = None) -> bytes:
    """``data`` as canonical JSON bytes (sorted keys, no spaces, ASCII only): byte for byte
    ``json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
    allow_nan=False).encode("ascii")``; ``ValueError`` for NaN or an infinity, as there.
    ``floats=False``: the caller knows ``data`` holds no float (it parsed it and noticed
    none), so the text is not looked at for one."""
    try:
        text = _dumps(data, default=_refuse, option=_SORTED)
    except TypeError:
        pass
    else:
        if (
            text.isascii()
            and b"\x7f" not in text
            and (floats is False or (b"null" not in text and _plain(text)))
        ):
            return text
    return _CANONICAL(data).encode("ascii")


#: 19 digits: the shortest run that may be an integer past 64 bits (2^63 has 19 digits).
_LONG_RUN = b"0" * 19


#: JSON's whitespace, ``-`` and the digits, deleted by :data:`_NUMBERS` (``bytes.translate``).
_WS_SIGN_DIGITS = b" \t\n\r-0123456789"
#: ``[``, ``:`` and ``,`` (what a value can follow) to ``:``; ``.``, ``e`` and ``E`` to
#: ``.``; every other byte to ``x``. With whitespace, ``-`` and the digits deleted, a number
#: with a fraction or an exponent, ``-1.5``, ``3e8``, after ``[``, ``:`` or ``,`` reads
#: ``:.`` (one search: 20 us for a frame of 20 rows).
_NUMBERS = bytes.maketrans(
    bytes(range(256)),
    bytes(58 if b in b"[:," else 46 if b in b".eE" else 120 for b in range(256)),
)
#: The digits to ``0``, ``[``, ``:`` and ``,`` to ``:``, every other byte to ``x``; JSON's
#: whitespace and ``-`` deleted: an integer of 19 digits or more after ``[``, ``:`` or ``,``
#: reads ``:`` and 19 ``0``.
_INTEGERS = bytes.maketrans(
    bytes(range(256)),
    bytes(48 if 48 <= b <= 57 else 58 if b in b"[:," else 120 for b in range(256)),
)
_LONG_INTEGER = b":" + _LONG_RUN
#: Every byte but quotes and brackets deleted (``bytes.translate``).
_NOT_QUOTES_BRACKETS = bytes(b for b in range(256) if b not in b'"[]{}')


def plain_read(raw: bytes) -> tuple[Any, bytes | None] | None:
    """``plain_loads`` (tests/json_reference.py) without copying the text outside strings
    (a batch frame of 20 rows, with the depth check: 218 -> 160 us): ``(value, brackets)``,
    ``brackets`` being the brackets outside strings, in order, where no string holds one
    (else None); None where ``plain_loads`` is, and where a string holds what looks like a
    float or a long integer after ``[``, ``:`` or ``,`` (``"a:1.5"``; the caller then reads
    the text with the standard library, which gives the same value or refusal, slower).

    A float outside strings: JSON puts a value only at the start, after ``[``, ``:`` or
    ``,`` and whitespace; a number with a fraction or an exponent is ``-``, digits, then
    ``.``, ``e`` or ``E``: with whitespace, ``-`` and digits deleted, ``:.``
    (:data:`_NUMBERS`), or ``.`` at the start. An integer of 19 digits or more
    likewise reads ``:`` and 19 ``0`` (:data:`_INTEGERS`). ``true`` and ``false`` follow
    ``:`` with a letter that is not ``e`` (``:xxx.``). A text whose value orjson gives
    holds no other float (``NaN``, ``Infinity``: orjson refuses them), so these two searches
    are ``plain_loads``' looser: whatever it refuses, this refuses.

    The brackets: with every byte but quotes and brackets deleted, a string with no bracket
    is ``""``; where deleting the ``""`` pairs leaves no quote, each pair was one string's
    two quotes (the quotes alternate open and close; pairs of adjacent ones that cover them
    all can only be the first with the second, the third with the fourth...), so no
    string held a bracket and what is left is the text's brackets outside strings.

    >>> plain_read(b'{"a":[1,true,null,"x.5"]}')
    ({'a': [1, True, None, 'x.5']}, b'{[]}')
    >>> [plain_read(t) for t in (b'[1.5]', b'[ -1E3]', b'-0.5', b'[1234567890123456789]')]
    [None, None, None, None]
    >>> plain_read(b'["a:1.5"]'), plain_read(b'["[",1]')
    (None, (['[', 1], None))
    """
    if not raw.isascii() or b"\\" in raw:
        return None
    numbers = raw.translate(_NUMBERS, _WS_SIGN_DIGITS)
    if (
        b":." in numbers
        or numbers.startswith(b".")
        or _LONG_INTEGER in (integers := raw.translate(_INTEGERS, b" \t\n\r-"))
        or integers.startswith(_LONG_RUN)
    ):
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    brackets = raw.translate(None, _NOT_QUOTES_BRACKETS).replace(b'""', b"")
    return value, (None if b'"' in brackets else brackets)
