"""The table's outbox rows read back and signed with orjson, where that gives the very data
and bytes the standard library gives (issue 32, the publisher's CPU a message).

A row of the outbox is JSON text with no float (money is integer cents) that the publisher
reads back, checks and signs. The standard library did both: ``json.loads`` with a
:class:`~controller.json_floats.FloatWatch` (16-20 us for a 900-character row on the 2-core
machine), and :func:`controller.json_text.canonical`, which writes every text holding
``null`` (every round result: ``"void":null``) or ``e-`` again with the standard library's
encoder, in case it hides a NaN or a small float (26 us a row on average, 6 by orjson).

- :func:`loads`: ``(data, floats)``, as ``json.loads(text, parse_float=watch.seen)`` and
  ``watch.seen_any``. orjson parses the text (8 us) when the text can hold neither a float
  nor an integer past 64 bits (which orjson would read as a float): a byte table maps the
  text to the classes that matter, and a float is a run of digits after ``:``, ``,``, ``[``,
  ``-``, blanks or the start, followed by ``.``, ``e`` or ``E``; a run of 19 digits or more
  anywhere (a hash in a string, now and then) also goes to the standard library. Any text
  orjson refuses (NaN, a lone surrogate, bad JSON) is read by the standard library, which
  accepts or refuses it as before. One difference is left: orjson reads nesting up to 1,024
  levels, the standard library as deep as Python's recursion limit allows from where it is
  called (about 900 in a test); no row is near either (the deepest schema is 5 levels, and
  the link refuses more than 16);
- :func:`canonical`: for data known to hold no float, orjson's sorted text when it is
  printable ASCII (the standard library's otherwise): without floats, NaN and the
  infinities, the two forms differ only in non-ASCII characters, DEL and integers past 64
  bits, which orjson refuses (:mod:`controller.json_text`).

``tests/test_json_rows.py`` holds both to the standard library's results over random data and
every row a replayed session writes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from controller import json_text
from controller.json_floats import FloatWatch


def _classes() -> bytes:
    table = bytearray(b"x" * 256)
    for byte in b"0123456789":
        table[byte] = ord("0")
    for byte in b".eE":
        table[byte] = ord(".")
    for byte in b":,[-\x20\t\r\n":
        table[byte] = ord(":")
    return bytes(table)


#: Each byte of UTF-8 JSON to its class: ``0`` a digit, ``.`` what makes a number a float,
#: ``:`` what may stand before a number (or its sign), ``x`` anything else.
_CLASSES = _classes()
#: A number with a fraction or an exponent, in the classes' text (``:`` put first).
_FLOAT = re.compile(rb":0+\.")
#: 19 digits in a row: perhaps an integer past 64 bits, which orjson reads as a float.
_LONG = b"0" * 19


def _plain(text: str) -> bool:
    """Whether ``text`` (JSON) can hold no float and no integer past 64 bits."""
    classes = b":" + text.encode("utf-8", "surrogatepass").translate(_CLASSES)
    return _LONG not in classes and _FLOAT.search(classes) is None


def loads(text: str) -> tuple[Any, bool]:
    """``text`` parsed, and whether it held a float: ``json.loads(text,
    parse_float=watch.seen)`` and ``watch.seen_any`` (the same data, types and errors)."""
    if _plain(text):
        try:
            return orjson.loads(text), False
        except orjson.JSONDecodeError:
            pass  # the standard library accepts it (NaN, a lone surrogate) or says why not
    floats = FloatWatch()
    data = json.loads(text, parse_float=floats.seen)
    return data, floats.seen_any


def canonical(data: Any) -> bytes:
    """``data``, which holds no float (:func:`loads` said so, or the caller built it of
    integers and text), as :func:`controller.link.signing.canonical` writes it: byte for byte
    ``json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
    allow_nan=False).encode("ascii")`` (:func:`controller.json_text.canonical` told that
    the data holds no float)."""
    return json_text.canonical(data, floats=False)
