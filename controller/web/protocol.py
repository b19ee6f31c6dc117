"""HTTP/1.1 requests as the table's web server accepts them: strict, small, pure.

The pages need ``GET``, ``HEAD`` and ``POST`` with a JSON or form body of at most
:data:`MAX_BODY` bytes, nothing more, so anything a proxy and this server could read two
ways is refused instead of guessed at (RFC 9112 section 6.3 lets a server refuse it):

- more than one ``Content-Length`` (even equal ones), or one that is not a plain number;
- any ``Transfer-Encoding`` (no browser sends a chunked request body to these pages);
- a body on ``GET`` or ``HEAD``;
- a folded header line, a space before the colon, a bare CR, a second ``Host``;
- a request line or head longer than the limits below.

Each refusal is a :class:`BadRequest` with the status to answer and what the client did
wrong; the server answers it and closes the connection (the rest of the bytes cannot be
trusted to be the next request).

>>> head = parse_head(b"GET /dealer HTTP/1.1\\r\\nHost: t7\\r\\n\\r\\n")
>>> head.method, head.target, head.keep_alive, head.content_length
('GET', '/dealer', True, 0)
>>> parse_head(b"POST /login HTTP/1.1\\r\\nContent-Length: 2\\r\\nContent-Length: 2\\r\\n\\r\\n")
Traceback (most recent call last):
...
controller.web.protocol.BadRequest: 400: more than one Content-Length: send exactly one
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from controller.errors import TableControllerError

MAX_LINE = 8 * 1024
"""Longest request line (bytes)."""
MAX_HEAD = 16 * 1024
"""Longest request line and headers together (bytes)."""
MAX_HEADERS = 64
MAX_BODY = 16 * 1024
"""Largest request body (bytes): a login or an action is a few dozen."""
METHODS = ("GET", "HEAD", "POST")

_TOKEN = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_REQUEST_LINE = re.compile(rb"^([A-Z]+) (\S+) HTTP/(\d)\.(\d)$")
_VALUE_OK = re.compile(rb"^[\t\x20-\x7e\x80-\xff]*$")


class BadRequest(TableControllerError, ValueError):
    """A request this server refuses to read: ``status`` to answer, then close."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class Headers:
    """A request's headers: names matched without regard to case, the order kept."""

    def __init__(self, items: list[tuple[str, str]] | None = None):
        self.items = list(items or [])

    def get(self, name: str, default: str | None = None) -> str | None:
        key = name.lower()
        for k, v in self.items:
            if k.lower() == key:
                return v
        return default

    def all(self, name: str) -> list[str]:
        key = name.lower()
        return [v for k, v in self.items if k.lower() == key]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None


@dataclass(slots=True)
class Head:
    """A request's line and headers, checked; ``content_length`` bytes of body follow."""

    method: str
    target: str
    version: tuple[int, int]
    headers: Headers = field(default_factory=Headers)
    content_length: int = 0
    keep_alive: bool = True


def head_end(buffer: bytes | bytearray) -> int:
    """Where the head in ``buffer`` ends (the index after its blank line), or -1."""
    crlf = buffer.find(b"\r\n\r\n")
    lf = buffer.find(b"\n\n")
    ends = [i + 4 for i in (crlf,) if i >= 0] + [i + 2 for i in (lf,) if i >= 0]
    return min(ends) if ends else -1


def parse_head(raw: bytes) -> Head:
    """The request head ``raw`` (up to and including its blank line), checked as above."""
    if len(raw) > MAX_HEAD:
        raise BadRequest(431, f"the request head is over {MAX_HEAD} bytes: send a shorter one")
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if lines and lines[-1] in (b"", b"\r"):
        lines.pop()
    lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    if not lines:
        raise BadRequest(400, "no request line: send METHOD PATH HTTP/1.1")
    if any(b"\r" in line or b"\0" in line for line in lines):
        raise BadRequest(400, "a bare CR or NUL in the request head")
    first = lines[0]
    if len(first) > MAX_LINE:
        raise BadRequest(414, f"the request line is over {MAX_LINE} bytes")
    m = _REQUEST_LINE.match(first)
    if m is None:
        raise BadRequest(400, "the request line must be METHOD PATH HTTP/1.1")
    method, target = m.group(1).decode(), m.group(2).decode("latin-1")
    version = (int(m.group(3)), int(m.group(4)))
    if version not in ((1, 0), (1, 1)):
        raise BadRequest(505, "only HTTP/1.0 and HTTP/1.1 are served")
    if method not in METHODS:
        raise BadRequest(405, f"method {method} is not served: use GET, HEAD or POST")
    if not target.startswith("/"):
        raise BadRequest(400, "the request target must be a path starting with /")
    if len(lines) - 1 > MAX_HEADERS:
        raise BadRequest(431, f"more than {MAX_HEADERS} headers: send fewer")
    items = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            raise BadRequest(400, "a folded header line (starting with a space): not accepted")
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.match(name):
            raise BadRequest(400, "a header line must be NAME: VALUE (no space before the colon)")
        value = value.strip(b" \t")
        if not _VALUE_OK.match(value):
            raise BadRequest(400, f"header {name.decode()} has a control character")
        items.append((name.decode(), value.decode("latin-1")))
    headers = Headers(items)
    if len(headers.all("Host")) > 1:
        raise BadRequest(400, "more than one Host header")
    if headers.all("Transfer-Encoding"):
        raise BadRequest(
            400, "Transfer-Encoding is not accepted: send the body with one Content-Length"
        )
    lengths = headers.all("Content-Length")
    if len(lengths) > 1:
        raise BadRequest(400, "more than one Content-Length: send exactly one")
    length = 0
    if lengths:
        if not re.fullmatch(r"[0-9]{1,9}", lengths[0]):
            raise BadRequest(400, "Content-Length must be a number of bytes")
        length = int(lengths[0])
    if length and method in ("GET", "HEAD"):
        raise BadRequest(400, f"a {method} request has no body: send it without one")
    if length > MAX_BODY:
        raise BadRequest(413, f"the body must be 0 to {MAX_BODY} bytes")
    connection = {t.strip().lower() for v in headers.all("Connection") for t in v.split(",")}
    keep_alive = "close" not in connection and (version == (1, 1) or "keep-alive" in connection)
    return Head(method, target, version, headers, length, keep_alive)
