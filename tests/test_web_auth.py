"""The diagnostics page's login (controller.web.auth): password hashes, the per-address
throttle, sessions and CSRF tokens. Every clock is an explicit ``now`` (seconds); scrypt
runs at N=1024 so the whole file takes well under a second."""

from __future__ import annotations

import base64

import pytest

from controller.web.auth import (
    SCRYPT_N,
    LoginThrottle,
    PasswordHashError,
    Sessions,
    csrf_ok,
    hash_password,
    parse_hash,
    verify_password,
)

FAST = 2**10
ADVICE = "table-controller hash-password"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture(scope="module")
def stored() -> str:
    return hash_password("felt-green-42", n=FAST)


def with_field(stored: str, index: int, value: str) -> str:
    parts = stored.split("$")
    parts[index] = value
    return "$".join(parts)


# -- password hashes -----------------------------------------------------------------------


def test_a_hash_verifies_its_password_and_no_other(stored):
    assert verify_password("felt-green-42", stored)
    assert not verify_password("felt-green-43", stored)
    assert not verify_password("", stored)
    assert not verify_password("felt-green-42 ", stored)


def test_a_unicode_password_round_trips():
    password = "fëlt-grün-♠A-🂡-42"
    stored = hash_password(password, n=FAST)
    assert verify_password(password, stored)
    assert not verify_password("felt-grun-♠A-🂡-42", stored)
    assert not verify_password(password.upper(), stored)


def test_the_hash_has_the_documented_shape_and_default_cost():
    n, r, p, salt, key = hash_password("felt-green-42").split("$")[1:]
    assert (int(n), int(r), int(p)) == (SCRYPT_N, 8, 1)
    assert len(unb64(salt)) == 16 and len(unb64(key)) == 32
    assert "=" not in salt + key  # unpadded, so the value pastes into TOML as is
    h = parse_hash(hash_password("felt-green-42", n=FAST))
    assert (h.n, h.r, h.p, len(h.salt), len(h.key)) == (FAST, 8, 1, 16, 32)


def test_two_hashes_of_one_password_differ_by_their_salt():
    one, two = (hash_password("felt-green-42", n=FAST) for _ in range(2))
    assert one != two
    assert one.split("$")[4] != two.split("$")[4]
    assert verify_password("felt-green-42", one) and verify_password("felt-green-42", two)


def test_a_hash_with_one_key_byte_changed_refuses_the_right_password(stored):
    key = bytearray(unb64(stored.split("$")[5]))
    key[7] ^= 0x01
    tampered = with_field(stored, 5, b64(bytes(key)))
    assert tampered != stored
    assert not verify_password("felt-green-42", tampered)


@pytest.mark.parametrize(
    ("index", "value", "says"),
    [
        (3, "0", "out of range"),  # p
        (3, "17", "out of range"),
        (2, "0", "out of range"),  # r
        (2, "33", "out of range"),
        (1, "1536", "out of range"),  # N not a power of two
        (1, "512", "out of range"),  # N below 1024
        (1, "0", "out of range"),
        (1, "-1024", "out of range"),
        (1, "lots", "does not decode"),
        (4, "abcde", "does not decode"),  # 5 base64 characters cannot be whole bytes
        (5, "abcde", "does not decode"),
        (4, b64(b"1234567"), "too short"),  # 7-byte salt
        (5, b64(b"0123456789abcde"), "too short"),  # 15-byte key
        (0, "bcrypt", "must start with scrypt$"),
    ],
)
def test_a_malformed_hash_says_what_is_wrong_and_how_to_fix_it(stored, index, value, says):
    bad = with_field(stored, index, value)
    with pytest.raises(PasswordHashError) as info:
        parse_hash(bad)
    assert says in str(info.value)
    assert ADVICE in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(PasswordHashError):
        verify_password("felt-green-42", bad)  # verifying never passes a bad hash


@pytest.mark.parametrize("cut", ["", "scrypt", "scrypt$1024$8$1$c2FsdHNhbHQ", "x$" * 6])
def test_a_hash_with_the_wrong_number_of_fields_is_refused(stored, cut):
    for bad in (cut, stored + "$extra", stored.rsplit("$", 1)[0]):
        with pytest.raises(PasswordHashError, match=r"6 fields|must start with scrypt\$") as info:
            parse_hash(bad)
        assert ADVICE in str(info.value)


def test_the_limits_themselves_are_accepted(stored):
    for index, value in ((2, "1"), (2, "32"), (3, "1"), (3, "16"), (1, "1024")):
        assert parse_hash(with_field(stored, index, value))


# -- throttle ------------------------------------------------------------------------------


def test_the_wait_doubles_after_three_free_failures():
    throttle = LoginThrottle(free=3, base_s=1.0, max_s=300.0)
    waits = []
    for k in range(10):
        now = 1000.0 + 1000 * k  # well after the previous wait, each time
        assert throttle.wait_s("10.0.0.9", now) == 0.0
        throttle.failed("10.0.0.9", now)
        waits.append(throttle.wait_s("10.0.0.9", now))
    assert waits == [0, 0, 0, 1, 2, 4, 8, 16, 32, 64]
    assert throttle.failures("10.0.0.9") == 10


def test_the_wait_counts_down_from_the_last_failure():
    throttle = LoginThrottle(free=3, base_s=1.0, max_s=300.0)
    for _ in range(6):
        throttle.failed("10.0.0.9", now=50.0)
    assert throttle.wait_s("10.0.0.9", 50.0) == 4.0
    assert throttle.wait_s("10.0.0.9", 52.5) == 1.5
    assert throttle.wait_s("10.0.0.9", 54.0) == 0.0
    assert throttle.wait_s("10.0.0.9", 500.0) == 0.0


def test_the_wait_is_capped_at_max_s():
    throttle = LoginThrottle(free=3, base_s=1.0, max_s=30.0)
    waits = []
    for k in range(12):
        throttle.failed("10.0.0.9", now=float(k))
        waits.append(throttle.wait_s("10.0.0.9", float(k)))
    assert waits == [0, 0, 0, 1, 2, 4, 8, 16, 30, 30, 30, 30]
    assert throttle.delay_s(1000) == 30.0  # no overflow however long the attack


def test_another_address_is_not_slowed_down():
    throttle = LoginThrottle()
    for _ in range(8):
        throttle.failed("10.0.0.9", now=10.0)
    assert throttle.wait_s("10.0.0.9", 10.0) > 0
    assert throttle.wait_s("10.0.0.7", 10.0) == 0.0
    assert throttle.failures("10.0.0.7") == 0


def test_a_success_forgets_the_address_but_not_the_total():
    throttle = LoginThrottle()
    for _ in range(6):
        throttle.failed("10.0.0.9", now=10.0)
    throttle.failed("10.0.0.7", now=10.0)
    throttle.succeeded("10.0.0.9")
    assert throttle.wait_s("10.0.0.9", 10.0) == 0.0
    assert throttle.failures("10.0.0.9") == 0
    assert throttle.failures("10.0.0.7") == 1
    assert throttle.total_failures == 7
    throttle.succeeded("10.0.0.1")  # never failed: nothing to forget, no error
    throttle.failed("10.0.0.9", now=11.0)
    assert throttle.failures("10.0.0.9") == 1 and throttle.wait_s("10.0.0.9", 11.0) == 0.0


def test_a_flood_of_addresses_forgets_the_one_that_failed_longest_ago():
    throttle = LoginThrottle()
    for i in range(4096):
        throttle.failed(f"10.1.{i // 256}.{i % 256}", now=float(i))
    throttle.failed("10.1.0.0", now=5000.0)  # the first address fails again: now recent
    assert throttle.failures("10.1.0.0") == 2
    throttle.failed("192.0.2.1", now=5001.0)  # the 4097th address
    assert throttle.failures("10.1.0.1") == 0  # the oldest last failure went
    assert throttle.failures("10.1.0.0") == 2
    assert throttle.failures("10.1.0.2") == 1
    assert throttle.failures("192.0.2.1") == 1
    assert throttle.total_failures == 4098


# -- sessions ------------------------------------------------------------------------------


def test_a_session_is_found_by_its_cookie():
    sessions = Sessions()
    one = sessions.create("tech", "10.0.0.9", now=100.0)
    two = sessions.create("tech", "10.0.0.7", now=101.0)
    assert (one.user, one.address, one.created, one.last_seen) == ("tech", "10.0.0.9", 100, 100)
    assert len({one.token, one.csrf, two.token, two.csrf}) == 4
    assert len(one.token) >= 40 and len(one.csrf) >= 40
    assert sessions.get(one.token, now=102.0) is one
    assert sessions.get(two.token, now=102.0) is two
    assert sessions.count(102.0) == 2


@pytest.mark.parametrize("cookie", [None, "", "not-a-session", "x" * 43])
def test_no_cookie_or_an_unknown_one_is_no_session(cookie):
    sessions = Sessions()
    sessions.create("tech", "10.0.0.9", now=0.0)
    assert sessions.get(cookie, now=1.0) is None


def test_a_token_one_character_off_is_no_session():
    sessions = Sessions()
    s = sessions.create("tech", "10.0.0.9", now=0.0)
    wrong = s.token[:-1] + ("A" if s.token[-1] != "A" else "B")
    assert sessions.get(wrong, now=1.0) is None
    assert sessions.get(s.token[:-1], now=1.0) is None


def test_a_session_ends_idle_s_after_its_last_request():
    sessions = Sessions(idle_s=100.0, max_s=10_000.0)
    s = sessions.create("tech", "10.0.0.9", now=0.0)
    assert sessions.get(s.token, now=100.0) is s  # exactly idle_s: still live
    assert s.last_seen == 100.0
    assert sessions.get(s.token, now=199.0) is s  # the request at 100 touched it
    assert sessions.get(s.token, now=299.5) is None  # 100.5 s idle
    assert sessions.count(299.5) == 0
    assert sessions.get(s.token, now=300.0) is None  # gone for good


def test_count_expires_idle_sessions_without_a_request():
    sessions = Sessions(idle_s=100.0)
    sessions.create("tech", "10.0.0.9", now=0.0)
    assert sessions.count(100.0) == 1
    assert sessions.count(100.5) == 0


def test_a_session_ends_max_s_after_login_however_active():
    sessions = Sessions(idle_s=100.0, max_s=1000.0)
    s = sessions.create("tech", "10.0.0.9", now=0.0)
    for now in range(90, 1000, 90):
        assert sessions.get(s.token, now=float(now)) is s
    assert sessions.get(s.token, now=1000.0) is s
    assert sessions.get(s.token, now=1000.5) is None  # 10 s after the last request


def test_past_the_limit_the_least_recently_seen_session_goes():
    sessions = Sessions(limit=3)
    a = sessions.create("a", "10.0.0.1", now=0.0)
    b = sessions.create("b", "10.0.0.2", now=1.0)
    c = sessions.create("c", "10.0.0.3", now=2.0)
    assert sessions.get(a.token, now=3.0) is a  # a is used again: b is now the stalest
    d = sessions.create("d", "10.0.0.4", now=4.0)
    assert sessions.count(4.0) == 3
    assert sessions.get(b.token, now=4.0) is None
    assert [sessions.get(x.token, now=4.0) for x in (a, c, d)] == [a, c, d]


def test_logout_ends_only_that_session():
    sessions = Sessions()
    a = sessions.create("a", "10.0.0.1", now=0.0)
    b = sessions.create("b", "10.0.0.2", now=0.0)
    sessions.end(a.token)
    sessions.end(a.token)  # twice: no error
    sessions.end("never-issued")
    assert sessions.get(a.token, now=1.0) is None
    assert sessions.get(b.token, now=1.0) is b
    assert sessions.count(1.0) == 1


# -- CSRF ----------------------------------------------------------------------------------


def test_only_the_sessions_own_csrf_token_passes():
    sessions = Sessions()
    mine = sessions.create("a", "10.0.0.1", now=0.0)
    other = sessions.create("b", "10.0.0.2", now=0.0)
    assert csrf_ok(mine, mine.csrf) is True
    assert csrf_ok(mine, other.csrf) is False
    assert csrf_ok(mine, mine.token) is False  # the cookie is not the CSRF token
    assert csrf_ok(mine, mine.csrf[:-1]) is False
    assert csrf_ok(mine, "") is False
    assert csrf_ok(mine, None) is False
    assert csrf_ok(mine, "é" + mine.csrf[1:]) is False  # non-ASCII: False, not an error
