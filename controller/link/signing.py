"""End-to-end signatures on the jackpot link: Ed25519, one key per table and per controller.

Broker passwords and TLS protect one hop. A signature proves who wrote a message across every
hop (a property broker, a bridge, the central broker), so a leaked broker password or a
compromised bridge can no longer forge money. Every link message carries two top-level fields:

- ``kid``: the id of the signing key (``hcm-bj-07-2026a``), so keys can be rotated: the
  verifier holds every key id it accepts, old and new, for the change-over;
- ``sig``: the Ed25519 signature, base64 (RFC 4648, with padding), of :func:`signed_bytes`.

What is signed is the topic and the message without ``sig`` as canonical JSON (sorted keys, no
spaces, ASCII), so a message cannot be moved to another topic (another table, another kind)
and no field can be changed, added or removed. Ed25519 signatures are deterministic: the same
message signed twice (an outbox row resent) gives the same bytes.

Keys: a private key is a PKCS#8 PEM file, mode 0600 (:func:`save_signing_key`; the
``table-controller link-key`` and ``jackpot-controller link-key`` commands make one); a public
key is written in configs as the base64 of its 32 raw bytes (:func:`public_key_text`).

Uses the ``cryptography`` package (OpenSSL underneath; wheels for aarch64, the 64-bit Pi).
See docs/jackpot/README.md ("Signatures") and docs/jackpot/threat-model.md.

>>> key = new_signing_key()
>>> signer = Signer("t1", key)
>>> msg = signer.sign("bj/v1/jackpot/hcm-bj-07/ack", {"v": 1, "table": "hcm-bj-07", "seq": 3})
>>> sorted(msg)
['kid', 'seq', 'sig', 'table', 'v']
>>> verifier = Verifier({"t1": parse_public_key(public_key_text(key))})
>>> verifier.verify("bj/v1/jackpot/hcm-bj-07/ack", msg)
't1'
>>> verifier.verify("bj/v1/jackpot/hcm-bj-08/ack", {**msg, "table": "hcm-bj-08"})
Traceback (most recent call last):
...
controller.link.signing.SignatureError: ack: sig: the signature does not match the message \
(key 't1'): forged or changed on the way
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json  # noqa: F401 (the doctests read what wire writes)
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from controller import json_text
from controller.errors import TableControllerError
from controller.link.messages import LinkMessageError

#: What is prefixed to every signed message: a signature for this link can never be taken
#: for a signature of something else made with the same key.
DOMAIN = b"bj-jackpot-link-v1\n"
#: The two fields a signature adds to a message.
SIG_FIELDS = ("kid", "sig")
KEY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_B64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


class SignatureError(LinkMessageError):
    """A link message that is unsigned, signed by an unknown key, or whose signature does not
    match: refused like any forged message. ``field`` is ``sig`` or ``kid``."""


class SigningKeyError(TableControllerError, ValueError):
    """A key file or public key text that cannot be used; the message names it and what to do."""


def canonical(message: Mapping[str, Any]) -> bytes:
    """The message as canonical JSON: sorted keys, no spaces, ASCII only: byte for byte
    ``json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
    allow_nan=False)``, written by orjson where that is the same
    (:func:`controller.json_text.canonical`)."""
    return json_text.canonical(message)


def unsigned(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` without ``kid`` and ``sig``."""
    return {k: v for k, v in message.items() if k not in SIG_FIELDS}


def signed_bytes(topic: str, message: Mapping[str, Any]) -> bytes:
    """What the signature covers: the domain, the topic, and the message (its ``kid``
    included, its ``sig`` left out) as canonical JSON."""
    body = {k: v for k, v in message.items() if k != "sig"}
    return DOMAIN + topic.encode("utf-8") + b"\n" + canonical(body)


#: The fields of an enveloped message that make its content: what a resend must repeat.
CONTENT_FIELDS = ("v", "table", "seq", "key", "kind", "payload")


def digest(message: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of an enveloped message's content (:data:`CONTENT_FIELDS` as canonical
    JSON). ``boot`` and ``sent_t`` are left out, as are ``kid`` and ``sig``: a resend after a
    restart carries the new boot and time, and may be signed with a rotated key, yet it is the
    same message."""
    return hashlib.sha256(
        canonical({k: message[k] for k in CONTENT_FIELDS if k in message})
    ).hexdigest()


# -- keys ------------------------------------------------------------------------------------


def new_signing_key() -> Ed25519PrivateKey:
    """A new private key from the operating system's secure random source."""
    return Ed25519PrivateKey.generate()


def public_key_text(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The public key as configs write it: base64 of its 32 raw bytes."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def parse_public_key(text: Any) -> Ed25519PublicKey:
    """A public key from its config text (base64 of 32 bytes); SigningKeyError otherwise."""
    if not isinstance(text, str) or not _B64.match(text.strip()):
        raise SigningKeyError(
            f"{text!r:.60} is not a public key: write the base64 text printed by 'link-key'"
        )
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SigningKeyError(f"public key {text!r:.60} is not valid base64: {exc}") from None
    if len(raw) != 32:
        raise SigningKeyError(
            f"public key {text!r:.60} holds {len(raw)} bytes; an Ed25519 key is 32"
        )
    return Ed25519PublicKey.from_public_bytes(raw)


def check_key_id(key_id: Any) -> str:
    if not isinstance(key_id, str) or not KEY_ID.match(key_id):
        raise SigningKeyError(
            f"key id {key_id!r} must be 1-64 letters, digits, '.', '_' or '-' ({KEY_ID.pattern})"
        )
    return key_id


def save_signing_key(path: str | os.PathLike[str], key: Ed25519PrivateKey) -> Path:
    """Write ``key`` to a new file at ``path``, mode 0600; never overwrites a key."""
    path = Path(path)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SigningKeyError(
            f"{path} already exists: a signing key is never overwritten; move it away first "
            "(and remove its public key from the configs that trust it)"
        ) from None
    except OSError as exc:
        raise SigningKeyError(f"cannot write the signing key {path}: {exc}") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(path, 0o600)
    return path


def load_signing_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """Read a private key file; refused if group or others may read it."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except OSError as exc:
        raise SigningKeyError(
            f"cannot read the signing key {path}: {exc.strerror or exc}; make one with 'link-key'"
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SigningKeyError(
            f"the signing key {path} is mode {stat.S_IMODE(mode):04o}: others may read it; "
            f"chmod 600 {path}"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"{path} is not a PEM private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


# -- signing and checking --------------------------------------------------------------------


class Signer:
    """Signs link messages with one private key, named ``key_id`` in every message."""

    def __init__(self, key_id: str, key: Ed25519PrivateKey):
        self.key_id = check_key_id(key_id)
        self._key = key

    def __repr__(self) -> str:
        return f"Signer({self.key_id!r})"

    @property
    def public_key(self) -> str:
        return public_key_text(self._key)

    def sign(self, topic: str, message: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``message`` with ``kid`` and ``sig`` (any old ones replaced)."""
        out = unsigned(message)
        out["kid"] = self.key_id
        out["sig"] = self.sign_bytes(signed_bytes(topic, out))
        return out

    def sign_bytes(self, data: bytes) -> str:
        """The base64 signature of ``data`` (already prefixed with :data:`DOMAIN`: a batch
        frame's header, controller/link/frames.py)."""
        return base64.b64encode(self._key.sign(data)).decode("ascii")

    def wire(self, topic: str, message: Mapping[str, Any]) -> bytes:
        """``message`` signed, as the JSON bytes to publish: the canonical text that was
        signed with ``sig`` added as its last field (one encoding, not two; a receiver
        reads JSON, so the order of fields is free).

        >>> key = new_signing_key()
        >>> topic, ack = "bj/v1/jackpot/hcm-bj-07/ack", {"v": 1, "table": "hcm-bj-07", "seq": 3}
        >>> data = Signer("t1", key).wire(topic, ack)
        >>> Verifier({"t1": key.public_key()}).verify(topic, json.loads(data))
        't1'
        >>> json.loads(data) == Signer("t1", key).sign(topic, ack)
        True
        """
        return self.wire_known(topic, message, None)

    def wire_known(self, topic: str, message: Mapping[str, Any], floats: bool | None) -> bytes:
        """:meth:`wire`, for a message whose caller knows whether it holds a float
        (``floats`` False: it parsed it and noticed none, so the canonical text is orjson's
        without looking for one, :func:`controller.json_text.canonical`); the same bytes."""
        out = unsigned(message)
        out["kid"] = self.key_id
        body = json_text.canonical(out, floats=floats)
        sig = self.sign_bytes(DOMAIN + topic.encode("utf-8") + b"\n" + body)
        return body[:-1] + b',"sig":"' + sig.encode("ascii") + b'"}'


class Verifier:
    """Checks signatures against the public keys one sender may use (``{kid: key}``)."""

    def __init__(self, keys: Mapping[str, Ed25519PublicKey]):
        self.keys = dict(keys)

    def __repr__(self) -> str:
        return f"Verifier({sorted(self.keys)!r})"

    def verify(self, topic: str, message: Mapping[str, Any], kind: str | None = None) -> str:
        """The key id that signed ``message`` on ``topic``; SignatureError if it is unsigned,
        names a key this verifier does not hold, or the signature does not match."""
        kind = kind or message.get("kind") or topic.rsplit("/", 1)[-1]
        return self.verify_bytes(
            kind, message.get("kid"), message.get("sig"), signed_bytes(topic, message)
        )

    def verify_bytes(self, kind: str | None, kid: Any, sig: Any, data: bytes) -> str:
        """The key id ``kid`` if ``sig`` is its valid signature of ``data`` (the signed
        bytes, :data:`DOMAIN` first); SignatureError as :meth:`verify` otherwise."""
        if kid is None and sig is None:
            raise SignatureError(kind, "sig", "unsigned: every link message must be signed")
        if not isinstance(kid, str) or kid not in self.keys:
            known = ", ".join(sorted(self.keys)) or "none"
            raise SignatureError(
                kind, "kid", f"key {kid!r:.70} is not trusted for this sender (trusted: {known})"
            )
        if not isinstance(sig, str) or not _B64.match(sig):
            raise SignatureError(kind, "sig", "not a base64 Ed25519 signature")
        try:
            raw = base64.b64decode(sig, validate=True)
            self.keys[kid].verify(raw, data)
        except (InvalidSignature, binascii.Error, ValueError):
            raise SignatureError(
                kind,
                "sig",
                f"the signature does not match the message (key {kid!r}): forged or changed "
                "on the way",
            ) from None
        return kid


def make_link_key(path: str | os.PathLike[str], key_id: str, owner: str | None = None) -> str:
    """Make a new private key file at ``path`` (0600; ``owner``: a user to give it to, as
    root) for ``key_id``; returns the public key text to list in the peers' configs."""
    check_key_id(key_id)
    key = new_signing_key()
    path = save_signing_key(path, key)
    if owner:
        import pwd

        try:
            entry = pwd.getpwnam(owner)
            os.chown(path, entry.pw_uid, entry.pw_gid)
        except (KeyError, OSError) as exc:
            path.unlink()
            raise SigningKeyError(f"cannot give {path} to user {owner!r}: {exc}") from None
    return public_key_text(key)
