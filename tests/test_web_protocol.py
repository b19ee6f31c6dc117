"""The strict request reading (controller.web.protocol): what is read one way only, and
what is refused with which status. Pure: bytes in, a head or a BadRequest out."""

from __future__ import annotations

import pytest

from controller.web.protocol import (
    MAX_BODY,
    MAX_HEAD,
    MAX_HEADERS,
    BadRequest,
    head_end,
    parse_head,
)


def test_a_browsers_request_is_read_as_sent():
    head = parse_head(
        b"POST /login HTTP/1.1\r\nHost: t7:8080\r\nContent-Type: application/json\r\n"
        b"content-length: 31\r\nCookie: a=1; tc_session=x\r\n\r\n"
    )
    assert (head.method, head.target, head.version) == ("POST", "/login", (1, 1))
    assert head.content_length == 31 and head.keep_alive
    assert head.headers.get("CONTENT-TYPE") == "application/json"
    assert head.headers.get("cookie") == "a=1; tc_session=x"


@pytest.mark.parametrize(
    ("raw", "keep"),
    [
        (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", False),
        (b"GET / HTTP/1.0\r\n\r\n", False),
        (b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", True),
        (b"GET / HTTP/1.1\n\n", True),  # bare LF line ends are read too
    ],
)
def test_keep_alive_follows_the_version_and_connection(raw, keep):
    assert parse_head(raw).keep_alive is keep


@pytest.mark.parametrize(
    ("raw", "status", "says"),
    [
        (
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
            400,
            "more than one",
        ),
        (b"POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n", 400, "a number of bytes"),
        (b"POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\n", 400, "a number of bytes"),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "Transfer-Encoding"),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            400,
            "Transfer-Encoding",
        ),
        (b"GET / HTTP/1.1\r\nContent-Length: 1\r\n\r\n", 400, "has no body"),
        (b"HEAD / HTTP/1.1\r\nContent-Length: 1\r\n\r\n", 400, "has no body"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "Host"),
        (b"GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400, "folded"),
        (b"GET / HTTP/1.1\r\nX : a\r\n\r\n", 400, "no space before the colon"),
        (b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, "bare CR"),
        (b"GET / HTTP/2.0\r\n\r\n", 505, "HTTP/1.0 and HTTP/1.1"),
        (b"DELETE / HTTP/1.1\r\n\r\n", 405, "GET, HEAD or POST"),
        (b"GET http://evil/ HTTP/1.1\r\n\r\n", 400, "starting with /"),
        (b"GET /\r\n\r\n", 400, "METHOD PATH HTTP/1.1"),
        (b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1), 413, "0 to"),
        (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * (MAX_HEADERS + 1) + b"\r\n", 431, "headers"),
        (b"GET /" + b"a" * MAX_HEAD + b" HTTP/1.1\r\n\r\n", 431, "head is over"),
    ],
)
def test_what_could_be_read_two_ways_is_refused(raw, status, says):
    with pytest.raises(BadRequest) as info:
        parse_head(raw)
    assert info.value.status == status and says in info.value.message
    assert isinstance(info.value, ValueError)


def test_a_body_of_exactly_the_limit_is_accepted():
    raw = b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % MAX_BODY
    assert parse_head(raw).content_length == MAX_BODY


def test_the_head_ends_at_its_first_blank_line():
    assert head_end(b"GET / HTTP/1.1\r\nHost: t\r\n") == -1
    data = b"GET / HTTP/1.1\r\nHost: t\r\n\r\nGET /x HTTP/1.1\r\n\r\n"
    assert data[: head_end(data)].endswith(b"Host: t\r\n\r\n")
    assert head_end(b"GET / HTTP/1.1\nHost: t\n\nrest") == len(b"GET / HTTP/1.1\nHost: t\n\n")
