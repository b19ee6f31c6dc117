"""The diagnostics page's login: password hashes, attempt throttling, sessions, CSRF.

The config holds only a hash (``[web] password_hash``), made by
``table-controller hash-password``: ``scrypt$N$r$p$SALT$KEY`` with SALT and KEY in
unpadded URL-safe base64. Everything here takes its clock as an argument (seconds, a
monotonic reading), so the policies are tested without waiting.

>>> stored = hash_password("felt-green-42", n=2**10)
>>> stored.startswith("scrypt$1024$8$1$")
True
>>> verify_password("felt-green-42", stored), verify_password("felt-green-43", stored)
(True, False)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import unicodedata
from dataclasses import dataclass, field

from controller.errors import TableControllerError
from controller.names import invisible

SCRYPT_N = 2**14
"""scrypt cost (16 MiB of memory per check; bench/web_pages.py measures the time)."""
SCRYPT_R = 8
SCRYPT_P = 1
MAX_MEMORY = 2**26
"""scrypt's memory limit for making and checking a hash (bytes); a hash whose cost needs
more than half of it is refused by :func:`parse_hash` (so at check-config, not at login)."""
MIN_PASSWORD = 10
"""Characters a new password needs (``hash-password`` refuses shorter ones)."""


class PasswordHashError(TableControllerError, ValueError):
    """A ``password_hash`` that is not one ``hash-password`` printed."""


class LoginNameError(TableControllerError, ValueError):
    """A technician's name the login refuses (the message says why and what to give)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """The text for ``[web] password_hash``: a fresh 16-byte salt, a 32-byte scrypt key."""
    salt = secrets.token_bytes(16)
    key = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=MAX_MEMORY)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(key)}"


@dataclass(frozen=True, slots=True)
class PasswordHash:
    n: int
    r: int
    p: int
    salt: bytes
    key: bytes


def parse_hash(stored: str) -> PasswordHash:
    """Check a stored hash; :class:`PasswordHashError` says what is wrong with it."""
    parts = stored.split("$")
    advice = "print a new one with `table-controller hash-password` and paste it whole"
    if parts[0] != "scrypt":
        raise PasswordHashError(
            f"password_hash must start with scrypt$ (got {parts[0][:12]!r}...): {advice}"
        )
    if len(parts) != 6:
        raise PasswordHashError(
            f"password_hash must look like scrypt$N$r$p$SALT$KEY (6 fields), got {len(parts)} "
            f"field(s): {advice}"
        )
    try:
        n, r, p = (int(x) for x in parts[1:4])
        salt, key = _unb64(parts[4]), _unb64(parts[5])
    except ValueError:
        raise PasswordHashError(
            f"password_hash has a field that does not decode: {advice}"
        ) from None
    if n < 2**10 or n & (n - 1) or not 1 <= r <= 32 or not 1 <= p <= 16:
        raise PasswordHashError(
            f"password_hash cost N={n} r={r} p={p} is out of range (N a power of two >= 1024, "
            f"r 1..32, p 1..16): {advice}"
        )
    if 128 * r * n > MAX_MEMORY // 2:
        raise PasswordHashError(
            f"password_hash cost N={n} r={r} needs {128 * r * n // 2**20} MiB per login, more "
            f"than this controller allows ({MAX_MEMORY // 2 // 2**20} MiB): {advice}"
        )
    if len(salt) < 8 or len(key) < 16:
        raise PasswordHashError(f"password_hash salt or key is too short: {advice}")
    return PasswordHash(n, r, p, salt, key)


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored`` (constant time in the key comparison)."""
    h = parse_hash(stored)
    key = hashlib.scrypt(
        password.encode(), salt=h.salt, n=h.n, r=h.r, p=h.p, dklen=len(h.key), maxmem=MAX_MEMORY
    )
    return hmac.compare_digest(key, h.key)


# -- the name typed with the password ------------------------------------------------------

NAME_MAX = 40
"""Characters of a technician's name or badge at most."""
NAME_MARKS = " .'@-_"
"""What a name may hold besides letters, digits and their accents."""
_ASK = (
    "give your name or badge number: 1 to 40 letters and digits that show, with spaces or "
    ". ' @ - _ between them"
)


def technician_name(raw: object) -> str:
    """The name typed at login as it is recorded (trimmed, NFC): letters and digits that
    print, their accents, spaces and ``. ' @ - _``, at least one letter or digit.
    :class:`LoginNameError` names the first character refused and what to give instead.

    >>> technician_name("  Ana 4411 "), technician_name("Jose\N{COMBINING ACUTE ACCENT}")
    ('Ana 4411', 'José')
    >>> technician_name("\N{HANGUL FILLER}" * 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    controller.web.auth.LoginNameError: the name holds U+3164 (HANGUL FILLER), which shows as ...
    """
    if not isinstance(raw, str):
        raise LoginNameError(_ASK)
    name = unicodedata.normalize("NFC", raw.strip())
    if len(name) > NAME_MAX:
        raise LoginNameError(f"the name is {len(name)} characters: {_ASK}")
    seen_letter = False
    for n, char in enumerate(name):
        code = f"U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')})"
        kind = unicodedata.category(char)
        if invisible(char):
            raise LoginNameError(f"the name holds {code}, which shows as nothing: {_ASK}")
        if kind[0] in "LN":
            seen_letter = True
        elif kind[0] == "M":
            if n == 0 or name[n - 1] in NAME_MARKS:
                raise LoginNameError(f"the name has an accent, {code}, on no letter: {_ASK}")
        elif char not in NAME_MARKS:
            raise LoginNameError(f"the name holds {code}: {_ASK}")
    if not seen_letter:
        raise LoginNameError(_ASK)
    return name


# -- throttling ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Record:
    failures: int = 0
    last_failure: float = 0.0
    tries: int = 0
    """Login attempts seen since the last success (refused ones too)."""


class LoginThrottle:
    """Wrong passwords slow the next attempt down, per client address.

    The first ``free`` failures cost nothing; after that each attempt must wait
    ``base_s * 2 ** (failures - free - 1)`` seconds (at most ``max_s``) after the last failure,
    and an attempt made earlier is refused unchecked (so the wait cannot be used to guess).
    A success forgets the address. ``total_failures`` counts every failure since start.

    >>> t = LoginThrottle(free=3, base_s=1.0, max_s=60.0)
    >>> for _ in range(5):
    ...     t.failed("10.0.0.9", now=100.0)
    >>> t.wait_s("10.0.0.9", now=100.0), t.wait_s("10.0.0.9", now=101.5), t.wait_s("10.0.0.7", 0)
    (2.0, 0.5, 0.0)
    """

    def __init__(self, *, free: int = 3, base_s: float = 1.0, max_s: float = 300.0):
        self.free = free
        self.base_s = base_s
        self.max_s = max_s
        self.total_failures = 0
        self._records: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def delay_s(self, failures: int) -> float:
        """The wait after ``failures`` consecutive failures."""
        if failures <= self.free:
            return 0.0
        return min(self.max_s, self.base_s * 2 ** (failures - self.free - 1))

    def wait_s(self, address: str, now: float) -> float:
        """Seconds ``address`` must still wait before its next attempt is checked."""
        with self._lock:
            rec = self._records.get(address)
            if rec is None:
                return 0.0
            return max(0.0, rec.last_failure + self.delay_s(rec.failures) - now)

    def admit(self, address: str, now: float) -> float:
        """Whether ``address`` may have a password checked now: 0.0 if so, else the seconds
        it must still wait. An admitted attempt counts as a failure at once (until
        :meth:`succeeded`), so attempts sent at the same moment meet the wait the earlier
        ones set: however many arrive together, ``free + 1`` are checked.

        >>> t = LoginThrottle(free=3)
        >>> [t.admit("10.0.0.9", now=5.0) for _ in range(6)]
        [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
        """
        with self._lock:
            rec = self._records.get(address)
            if rec is not None:
                wait = rec.last_failure + self.delay_s(rec.failures) - now
                if wait > 0:
                    return wait
            rec = self._record(address, now)
            rec.failures += 1
            rec.last_failure = now
            return 0.0

    def wrong(self, address: str, now: float) -> None:
        """An admitted attempt's password was wrong: the wait runs from ``now``."""
        with self._lock:
            self.total_failures += 1
            rec = self._record(address, now)
            rec.last_failure = max(rec.last_failure, now)

    def failed(self, address: str, now: float) -> None:
        """A wrong password that was not admitted first (counted and stamped at once)."""
        with self._lock:
            self.total_failures += 1
            rec = self._record(address, now)
            rec.failures += 1
            rec.last_failure = now

    def _record(self, address: str, now: float) -> _Record:
        rec = self._records.get(address)
        if rec is None:
            rec = self._records[address] = _Record(last_failure=now)
            if len(self._records) > 4096:  # a flood of addresses: forget the oldest
                oldest = min(self._records, key=lambda a: self._records[a].last_failure)
                del self._records[oldest]
        return rec

    def saw(self, address: str, now: float) -> int:
        """One more login attempt from ``address`` (checked or not): how many since its last
        success. A client with more than one has failed, or guesses several at once
        (:mod:`.logins` orders checks by it)."""
        with self._lock:
            rec = self._record(address, now)
            rec.tries += 1
            return rec.tries

    def tries(self, address: str) -> int:
        with self._lock:
            rec = self._records.get(address)
            return rec.tries if rec else 0

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._records.pop(address, None)

    def failures(self, address: str) -> int:
        with self._lock:
            rec = self._records.get(address)
            return rec.failures if rec else 0


# -- sessions --------------------------------------------------------------------------------


@dataclass(slots=True)
class Session:
    """One technician's login: ``token`` is the cookie, ``csrf`` must come with every action."""

    token: str
    csrf: str
    user: str
    address: str
    created: float
    last_seen: float
    actions: int = field(default=0)
    #: the account's role (``controller.accounts.ROLES``); ``legacy``: logged in with the old
    #: single ``[web] password_hash`` (``user`` is the name typed with it)
    role: str = "technician"
    legacy: bool = True

    @property
    def by(self) -> str:
        """Who, as the journal and the audit list name them: ``"supervisor jsmith"``."""
        return f"{self.role} {self.user}"


class Sessions:
    """Logged-in technicians, in memory (a restart logs everyone out).

    A session ends ``idle_s`` after its last request or ``max_s`` after login (a shift),
    whichever comes first; at most ``limit`` live at once (the oldest goes).
    """

    def __init__(self, *, idle_s: float = 900.0, max_s: float = 8 * 3600.0, limit: int = 32):
        self.idle_s = idle_s
        self.max_s = max_s
        self.limit = limit
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(
        self, user: str, address: str, now: float, role: str = "technician", legacy: bool = True
    ) -> Session:
        session = Session(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), user, address, now, now,
            role=role, legacy=legacy,
        )  # fmt: skip
        with self._lock:
            self._expire(now)
            while len(self._sessions) >= self.limit:
                oldest = min(self._sessions.values(), key=lambda s: s.last_seen)
                del self._sessions[oldest.token]
            self._sessions[session.token] = session
        return session

    def get(self, token: str | None, now: float) -> Session | None:
        """The live session for a cookie value (touching it), or None."""
        if not token:
            return None
        with self._lock:
            self._expire(now)
            for known, session in self._sessions.items():
                if hmac.compare_digest(known, token):
                    session.last_seen = now
                    return session
        return None

    def end(self, token: str) -> None:
        with self._lock:
            self._sessions.pop(token, None)

    def count(self, now: float) -> int:
        with self._lock:
            self._expire(now)
            return len(self._sessions)

    def _expire(self, now: float) -> None:
        dead = [
            t
            for t, s in self._sessions.items()
            if now - s.last_seen > self.idle_s or now - s.created > self.max_s
        ]
        for t in dead:
            del self._sessions[t]


def csrf_ok(session: Session, token: str | None) -> bool:
    """Whether an action's CSRF token is this session's."""
    return bool(token) and hmac.compare_digest(session.csrf.encode(), str(token).encode())
