"""The Must-Hit-By Mystery's draws: drawn, committed, sealed, revealed.

Each trigger is a row of the ledger's ``draws`` table (pool, cycle), written in the
transaction that draws it:

- ``commitment``: SHA-256 of the text ``"{trigger_cents}:{salt_hex}"`` (the trigger in whole
  cents, a colon, the 32 hex digits of a 16-byte random salt), in hex. Written at the draw,
  never changed: an auditor checks it against the trigger and salt revealed later
  (``printf '%s' '79321:9f...' | sha256sum``);
- ``sealed``: while the draw is live, the trigger and salt encrypted with AES-256-GCM under
  the **trigger key**, a 32-byte key in a file outside the ledger (mode 0600, beside the
  controller's signing key), with the pool and cycle as associated data (a sealed value
  cannot be moved to another draw). The plaintext has a fixed width (a version byte, the
  trigger as an 8-byte unsigned integer, the 16 salt bytes), so every seal has the same
  length whatever the trigger's digits. A copy or backup of the ledger holds only the
  commitment and this ciphertext: the live trigger cannot be read from it;
- once the draw ends (``ended``: ``hit``, or ``redrawn`` when an audited change of the range
  or the meter replaced it), ``trigger_cents`` and ``salt`` are written in the clear, the
  ciphertext is erased, and ``award_id`` names the award a hit paid.

Why a key file and not a separate store: the PostgreSQL ledger is shared by a hot standby
(docs/jackpot/failover.md); a trigger in a file on the active controller's host would not
fail over, while the sealed column travels with the database and its replication, and both
controllers hold the same key file. Why AES-GCM: authenticated (a changed ciphertext is
refused, never decrypted to another trigger), in ``cryptography`` already (the link's
Ed25519), and AES has hardware support on the Pi 4's and x86's CPUs.

The draw: :func:`draw_cents` takes a whole number of cents uniformly in ``[low, high]`` as
``low + randbelow(high - low + 1)`` with ``secrets.randbelow`` (Python's CSPRNG over the
kernel's ``getrandom(2)``; rejection sampling on ``getrandbits``, so no modulo bias).
docs/jackpot/controller.md ("The Mystery's random number generator") is the lab's
description.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import secrets
import stat
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from jackpot.store import LedgerError

#: The environment variable naming the trigger key file (before the default).
TRIGGER_KEY_ENV = "JACKPOT_TRIGGER_KEY"
DEFAULT_TRIGGER_KEY = "/etc/jackpot-controller/mystery-trigger.key"
TRIGGER_KEY_NAME = "mystery-trigger.key"
_KEY_HEADER = "jackpot-controller mystery trigger key v1"
SALT_BYTES = 16
#: The first byte of a sealed trigger's plaintext: version 2, fixed width (1 + 8 + 16 bytes).
#: Version 1 (``"{trigger}:{salt_hex}"`` in ASCII, whose length gave away the trigger's number
#: of digits) is still opened; it starts with a digit, never this byte.
SEAL_V2 = b"\x02"
SEALED_PLAIN_BYTES = 1 + 8 + SALT_BYTES


class TriggerKeyError(LedgerError):
    """The trigger key file is missing, unreadable, open to others, or not the ledger's."""


def draw_cents(low: int, high: int, randbelow: Callable[[int], int] = secrets.randbelow) -> int:
    """A whole number of cents uniformly in ``[low, high]`` (both included)."""
    if not 0 <= low <= high:
        raise ValueError(f"no cents to draw in [{low}, {high}]")
    offset = randbelow(high - low + 1)
    if not 0 <= offset <= high - low:  # a generator that broke its contract draws nothing
        raise ValueError(f"randbelow({high - low + 1}) gave {offset}")
    return low + offset


def next_low(must_hit_from: int, meter: Fraction) -> int:
    """The lowest trigger a draw may give with the meter at ``meter``: never below the meter
    (rounded up to the cent), so no award is below what a sign showed."""
    return max(must_hit_from, math.ceil(meter))


def commitment(trigger: int, salt_hex: str) -> str:
    """SHA-256 of ``"{trigger}:{salt_hex}"``, in hex.

    >>> commitment(79321, "00" * 16)[:16]
    'e3214f427274db08'
    """
    return hashlib.sha256(f"{trigger}:{salt_hex}".encode("ascii")).hexdigest()


class TriggerKey:
    """The key sealing the live triggers; ``fingerprint`` names it in the ledger's ``meta``
    (``trigger_key``) so a wrong file is refused with a clear message."""

    def __init__(self, path: Path, key: bytes) -> None:
        if len(key) != 32:
            raise TriggerKeyError(f"{path}: a trigger key is 32 bytes, not {len(key)}")
        self.path = path
        self._aead = AESGCM(key)
        self.fingerprint = hashlib.sha256(b"fingerprint:" + key).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"TriggerKey({str(self.path)!r}, fingerprint={self.fingerprint})"

    @classmethod
    def create(cls, path: str | os.PathLike[str]) -> TriggerKey:
        """A new random key in a new file (0600); never overwrites one."""
        path = Path(path)
        key = secrets.token_bytes(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise TriggerKeyError(
                f"{path} already exists: a trigger key is never overwritten"
            ) from None
        except OSError as exc:
            raise TriggerKeyError(
                f"cannot write the Mystery trigger key {path}: {exc.strerror or exc}; make it "
                f"where the controller may: jackpot-controller trigger-key --out {path}"
            ) from None
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(f"{_KEY_HEADER}\n{base64.b64encode(key).decode()}\n")
            handle.flush()
            os.fsync(handle.fileno())
        return cls(path, key)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TriggerKey:
        path = Path(path)
        try:
            mode = path.stat().st_mode
            lines = path.read_text(encoding="ascii").split()
        except (OSError, UnicodeDecodeError) as exc:
            raise TriggerKeyError(
                f"cannot read the Mystery trigger key {path}: {getattr(exc, 'strerror', exc)}"
            ) from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise TriggerKeyError(
                f"the Mystery trigger key {path} is mode {stat.S_IMODE(mode):04o}: others may "
                f"read it; chmod 600 {path}"
            )
        try:
            if " ".join(lines[:-1]) != _KEY_HEADER:
                raise ValueError("no header")
            key = base64.b64decode(lines[-1], validate=True)
        except (ValueError, IndexError):
            raise TriggerKeyError(f"{path} is not a Mystery trigger key file") from None
        return cls(path, key)

    def seal(self, pool: str, cycle: int, trigger: int, salt_hex: str) -> str:
        """The trigger and salt encrypted at a fixed width (:data:`SEAL_V2`, 8-byte trigger,
        16-byte salt): a seal's length says nothing of the trigger's number of digits."""
        plain = SEAL_V2 + trigger.to_bytes(8, "big") + bytes.fromhex(salt_hex)
        if len(plain) != SEALED_PLAIN_BYTES:
            raise ValueError(f"a salt is {SALT_BYTES} bytes, not {len(salt_hex) // 2}")
        nonce = secrets.token_bytes(12)
        sealed = self._aead.encrypt(nonce, plain, _aad(pool, cycle))
        return base64.b64encode(nonce + sealed).decode("ascii")

    def open(self, pool: str, cycle: int, sealed: str) -> tuple[int, str]:
        """The trigger and salt of a sealed draw; :class:`TriggerKeyError` if this key did not
        seal it (or it was changed)."""
        try:
            raw = base64.b64decode(sealed, validate=True)
            plain = self._aead.decrypt(raw[:12], raw[12:], _aad(pool, cycle))
            if len(plain) == SEALED_PLAIN_BYTES and plain[:1] == SEAL_V2:
                return int.from_bytes(plain[1:9], "big"), plain[9:].hex()
            trigger, salt = plain.decode("ascii").split(":")  # sealed before the fixed width
            return int(trigger), salt
        except (InvalidTag, ValueError):
            raise TriggerKeyError(
                f"the live {pool} draw (cycle {cycle}) does not open with the trigger key "
                f"{self.path}: the key is not the one that sealed it, or the ledger was altered; "
                "restore the key file that sealed it (or the ledger from a backup)"
            ) from None


def _aad(pool: str, cycle: int) -> bytes:
    return f"jackpot mystery draw {pool}/{cycle}".encode()


def key_path(config: Any, signing_key: str | None = None) -> Path:
    """Where the trigger key is: ``[ledger] trigger_key``, else ``$JACKPOT_TRIGGER_KEY``, else
    ``mystery-trigger.key`` beside the controller's signing key (``signing_key``, else
    ``[link] signing_key``), else :data:`DEFAULT_TRIGGER_KEY`."""
    if getattr(config, "trigger_key", None):
        return Path(config.trigger_key)
    if os.environ.get(TRIGGER_KEY_ENV):
        return Path(os.environ[TRIGGER_KEY_ENV])
    beside = signing_key or getattr(config, "link_signing_key", None)
    if beside:
        return Path(beside).parent / TRIGGER_KEY_NAME
    return Path(DEFAULT_TRIGGER_KEY)


class Draws:
    """The draws of a ledger, inside the ledger's transactions (``db``: its store).
    ``key``: the :class:`TriggerKey`, or a path loaded (or created, when the ledger has no
    live draw yet) at the first use."""

    def __init__(self, db: Any, key: TriggerKey | Path, randbelow: Callable[[int], int]):
        self._db = db
        self._key = key
        self._randbelow = randbelow
        # inside a batch (:meth:`hold`): each pool's live draw (cycle, sealed), read once
        self._live: dict[str, tuple[int, str]] | None = None
        # inside a batch: each live draw's trigger once opened, by (pool, cycle, sealed); an
        # AES-GCM open (about 4 us) a Mystery contribution before, once a draw a batch now
        self._opened: dict[tuple[str, int, str], int] = {}

    def hold(self) -> None:
        """From now on keep each live draw's row once read (the ledger's batch, which
        holds the meter rows: no one else draws meanwhile) until :meth:`release`."""
        self._live = {}
        self._opened.clear()

    def known(self, rows: list[tuple[str, int, str]]) -> None:
        """Inside a batch (after :meth:`hold`): every live draw's (pool, cycle, sealed),
        read with what the batch starts from (PostgreSQL: no round trip of its own)."""
        self._live = {pool: (cycle, sealed) for pool, cycle, sealed in rows}
        self._opened.clear()

    def release(self) -> None:
        """Read every live draw again from now on (after a batch, or a rollback)."""
        self._live = None
        self._opened.clear()  # no trigger kept between batches

    def key(self) -> TriggerKey:
        if isinstance(self._key, TriggerKey):
            return self._key
        path = self._key
        row = self._db.execute("SELECT value FROM meta WHERE key='trigger_key'").fetchone()
        # a ledger that sealed nothing yet makes its key; one that did needs that very key
        exists = path.exists() or row is not None
        try:
            key = TriggerKey.load(path) if exists else TriggerKey.create(path)
        except TriggerKeyError as exc:
            if row is None:
                raise
            raise TriggerKeyError(
                f"{exc}; this ledger's Mystery draws are sealed with the key of fingerprint "
                f"{row[0]}: restore that key file (or name it with --trigger-key or [ledger] "
                "trigger_key); a new key would not open them"
            ) from None
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('trigger_key', ?)", (key.fingerprint,))
        elif row[0] != key.fingerprint:
            raise TriggerKeyError(
                f"the Mystery trigger key {path} (fingerprint {key.fingerprint}) is not the one "
                f"this ledger's live draws are sealed with ({row[0]}): restore that key file "
                "(or name it with --trigger-key or [ledger] trigger_key)"
            )
        self._key = key
        return key

    def draw(self, pool: str, cycle: int, low: int, high: int, now: int | None, day: str | None):
        """Draw, commit and seal the trigger of ``pool``'s ``cycle`` in ``[low, high]``."""
        trigger = draw_cents(low, high, self._randbelow)
        salt = secrets.token_hex(SALT_BYTES)
        sealed = self.key().seal(pool, cycle, trigger, salt)
        self._db.execute(
            "INSERT INTO draws (pool, cycle, drawn_utc, gaming_day, low, high, commitment,"
            " sealed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (pool, cycle, now, day, low, high, commitment(trigger, salt), sealed),
        )
        del trigger
        if self._live is not None:
            self._live[pool] = (cycle, sealed)

    def check(self) -> None:
        """At opening: if any draw is live, load the key, compare its fingerprint and open
        every live draw, so a missing, wrong or altered key refuses the start
        (:class:`TriggerKeyError`) instead of every Mystery contribution after it. Nothing is
        drawn again: a draw that does not open stays as it is until its key is restored."""
        for pool, cycle, sealed in self._db.execute(
            "SELECT pool, cycle, sealed FROM draws WHERE ended IS NULL AND sealed IS NOT NULL"
            " ORDER BY pool"
        ).fetchall():
            self.key().open(pool, cycle, sealed)

    def live(self, pool: str) -> tuple[int, int]:
        """``(trigger, cycle)`` of the pool's live draw (inside ``apply`` only)."""
        row = None if self._live is None else self._live.get(pool)
        if row is None:
            row = self._db.execute(
                "SELECT cycle, sealed FROM draws WHERE pool=? AND ended IS NULL", (pool,)
            ).fetchone()
            if row is None:
                raise LedgerError(f"{self._db.location}: the Mystery pool {pool} has no live draw")
            if self._live is not None:
                self._live[pool] = (row[0], row[1])
        if self._live is None:
            trigger, _salt = self.key().open(pool, row[0], row[1])
            return trigger, row[0]
        which = (pool, row[0], row[1])
        trigger = self._opened.get(which)
        if trigger is None:
            trigger = self._opened[which] = self.key().open(pool, row[0], row[1])[0]
        return trigger, row[0]

    def end(self, pool: str, how: str, now: int | None, award_id: str | None = None) -> int:
        """End the live draw (``hit`` or ``redrawn``): reveal trigger and salt, erase the
        ciphertext; returns its cycle."""
        row = self._db.execute(
            "SELECT cycle, sealed FROM draws WHERE pool=? AND ended IS NULL", (pool,)
        ).fetchone()
        if row is None:
            return 0
        trigger, salt = self.key().open(pool, row[0], row[1])
        self._db.execute(
            "UPDATE draws SET ended=?, ended_utc=?, trigger_cents=?, salt=?, sealed=NULL,"
            " award_id=? WHERE pool=? AND cycle=?",
            (how, now, trigger, salt, award_id, pool, row[0]),
        )
        if self._live is not None:
            self._live.pop(pool, None)
        self._opened.pop((pool, row[0], row[1]), None)
        return row[0]

    def seal_plain(self) -> None:
        """Seal the live draws a migration carried over in the clear (schema 2 kept the
        trigger in ``mystery``): a commitment with a new salt, the trigger sealed."""
        for pool, cycle, trigger in self._db.execute(
            "SELECT pool, cycle, trigger_cents FROM draws WHERE ended IS NULL AND sealed IS NULL"
        ).fetchall():
            salt = secrets.token_hex(SALT_BYTES)
            self._db.execute(
                "UPDATE draws SET commitment=?, sealed=?, trigger_cents=NULL WHERE pool=? AND"
                " cycle=?",
                (commitment(trigger, salt), self.key().seal(pool, cycle, trigger, salt), pool,
                 cycle),
            )  # fmt: skip
