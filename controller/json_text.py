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

``tests/test_json_text.py`` holds every form to the standard library's bytes over random
data and over every row the golden replay writes.
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


def canonical(data: Any) -> bytes:
    """``data`` as canonical JSON bytes (sorted keys, no spaces, ASCII only): byte for byte
    ``json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
    allow_nan=False).encode("ascii")``; ``ValueError`` for NaN or an infinity, as there."""
    try:
        text = _dumps(data, default=_refuse, option=_SORTED)
    except TypeError:
        pass
    else:
        if text.isascii() and b"\x7f" not in text and b"null" not in text and _plain(text):
            return text
    return _CANONICAL(data).encode("ascii")
