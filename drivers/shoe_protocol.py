"""The card-reading shoe's wire protocol: framing, messages and sequence checks. Pure.

No serial port, no clock, no threads: bytes in, frames out (as Klipper's
``msgproto`` does), so the parser can be fuzzed. ``hardware/shoe-protocol.md``
is the specification; this module is its reference implementation, used by the
reader (:mod:`drivers.shoe`) and the simulator (:mod:`drivers.shoe_sim`).

A frame is one line of printable ASCII::

    $0C,CARD,QH*8C07\\r\\n
    ^ ^  ^    ^  ^
    | |  |    |  CRC-16/CCITT-FALSE of "0C,CARD,QH", 4 upper-case hex digits
    | |  |    payload (0-40 characters, no '$' or '*')
    | |  message type
    | sequence number, 2 upper-case hex digits
    start character

>>> encode_frame(12, "CARD", "QH")
b'$0C,CARD,QH*8C07\\r\\n'
>>> parser = FrameParser()
>>> parser.feed(b"xx$0C,CARD,Q")
[Discard(reason='garbage', data=b'xx')]
>>> parser.feed(b"H*8C07\\r\\n")
[Frame(seq=12, word='CARD', payload='QH')]
>>> decode_message(Frame(12, "CARD", "QH"))
Message(seq=12, kind='card', card=Card(rank=<Rank.QUEEN: 12>, suit=<Suit.HEARTS: 'H'>), text='')
"""

from __future__ import annotations

import binascii
import contextlib
import re
from dataclasses import dataclass

from controller.errors import CardError, TableControllerError
from controller.rules.cards import Card, parse_card
from controller.table.events import CardDrawn, Event, OutOfOrderCard, ShoeEvent

START = 0x24
"""``$``: every frame starts with it, and it appears nowhere else in a frame."""
MAX_PAYLOAD = 40
MAX_WORD = 8
MAX_FRAME = 1 + 2 + 1 + MAX_WORD + 1 + MAX_PAYLOAD + 1 + 4 + 2
"""60 bytes: the longest frame, start character to line feed."""
SEQ_MODULO = 256

WORDS = ("CARD", "SHUF", "NEWSHOE", "CUT", "DOOR", "FAULT", "CLEAR", "HB", "VER")
"""The message types (the frame's second field)."""

_FRAME_RE = re.compile(
    rb"\$([0-9A-F]{2}),([A-Z]{1,%d}),([\x20-\x23\x25-\x29\x2b-\x7e]{0,%d})\*([0-9A-F]{4})\r\n\Z"
    % (MAX_WORD, MAX_PAYLOAD)
)
_PAYLOAD_RE = re.compile(rf"[\x20-\x23\x25-\x29\x2b-\x7e]{{0,{MAX_PAYLOAD}}}\Z")
_WORD_RE = re.compile(rf"[A-Z]{{1,{MAX_WORD}}}\Z")
_CARD_RE = re.compile(r"(?:A|[2-9]|10|T|J|Q|K)[CDHS]\Z")
"""A ``CARD`` payload: rank then suit, upper case, nothing around them (``QH``, ``10D``, ``TD``)."""
_CARDS = {
    rank + suit: parse_card(rank + suit)
    for rank in ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "T", "J", "Q", "K")
    for suit in "CDHS"
}
"""Every ``CARD`` payload :data:`_CARD_RE` admits, and its card (the usual frame's lookup)."""


class ShoeProtocolError(TableControllerError, ValueError):
    """A message that breaks the shoe protocol (to encode, or received with a good checksum)."""


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor).

    >>> hex(crc16(b"123456789"))
    '0x29b1'
    """
    return binascii.crc_hqx(data, 0xFFFF)


# -- frames ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """One intact frame: its sequence number, message type word and payload text."""

    seq: int
    word: str
    payload: str = ""


@dataclass(frozen=True, slots=True)
class Discard:
    """Bytes the parser threw away: ``garbage`` (not a frame) or ``bad_checksum``."""

    reason: str
    data: bytes


def encode_frame(seq: int, word: str, payload: str = "", *, corrupt: bool = False) -> bytes:
    """The bytes of one frame; ``corrupt`` gives it a wrong checksum (the simulator's fault)."""
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq < SEQ_MODULO:
        raise ShoeProtocolError(f"sequence number must be 0-255, got {seq!r}")
    if not isinstance(word, str) or not _WORD_RE.match(word):
        raise ShoeProtocolError(f"message type must be 1-{MAX_WORD} capital letters, got {word!r}")
    if not isinstance(payload, str) or not _PAYLOAD_RE.match(payload):
        raise ShoeProtocolError(
            f"payload {payload!r} must be at most {MAX_PAYLOAD} printable ASCII characters "
            "without '$' or '*'"
        )
    if word == "CARD" and not _CARD_RE.match(payload):
        raise ShoeProtocolError(
            f"a CARD payload is one card, upper case, like 'QH' or '10D'; got {payload!r}"
        )
    body = f"{seq:02X},{word},{payload}".encode("ascii")
    check = crc16(body) ^ (0x5A5A if corrupt else 0)
    return b"$" + body + b"*%04X\r\n" % check


def check_frame(buf: bytes | bytearray) -> tuple[int, str]:
    """Look at the start of ``buf``: what is there?

    Returns ``(n, "frame")`` for an intact frame of ``n`` bytes, ``(0, "need_more")``
    when the bytes so far may still become a frame, or ``(n, "garbage")`` /
    ``(n, "bad_checksum")`` when the first ``n`` bytes must be discarded to
    resynchronise (up to the next start character).

    >>> check_frame(b"$0C,CARD,QH*8C07\\r\\n$01")
    (18, 'frame')
    >>> check_frame(b"$0C,CARD,QH*7C")
    (0, 'need_more')
    >>> check_frame(b"$0C,CA$0D")
    (6, 'garbage')
    >>> check_frame(b"$0C,CARD,QH*8C08\\r\\n")
    (18, 'bad_checksum')
    """
    size = len(buf)
    if not size:
        return 0, "need_more"
    if buf[0] != START:
        start = buf.find(b"$")
        return (size if start < 0 else start), "garbage"
    limit = min(size, MAX_FRAME)
    next_start = buf.find(b"$", 1, limit)
    end = buf.find(b"\n", 1, limit)
    if next_start >= 0 and (end < 0 or next_start < end):
        return next_start, "garbage"  # a frame cut short by the next start character
    if end < 0:
        if size < MAX_FRAME:
            return 0, "need_more"
        return MAX_FRAME, "garbage"  # too long to be a frame
    length = end + 1
    match = _FRAME_RE.match(bytes(buf[:length]))
    if match is None:
        return length, "garbage"
    if crc16(bytes(buf[1 : length - 7])) != int(match.group(4), 16):
        return length, "bad_checksum"
    return length, "frame"


def parse_frame(raw: bytes) -> Frame:
    """The fields of an intact frame (as :func:`check_frame` found it)."""
    match = _FRAME_RE.match(raw)
    if match is None:
        raise ShoeProtocolError(f"not a frame: {raw!r}")
    return Frame(int(match.group(1), 16), match.group(2).decode(), match.group(3).decode())


class FrameParser:
    """Incremental parser: feed it bytes as they arrive, get frames and discards back.

    Bytes of a frame not yet complete stay in the buffer; consecutive garbage is
    reported as one :class:`Discard`.
    """

    def __init__(self) -> None:
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        """Bytes held waiting for the rest of a frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Frame | Discard]:
        if not self._buf:  # the usual read: one whole frame, matched once (the prompt's path)
            match = _FRAME_RE.match(data)
            if match is not None and crc16(data[1:-7]) == int(match.group(4), 16):
                return [Frame(int(match.group(1), 16), match[2].decode(), match[3].decode())]
        self._buf += data
        out: list[Frame | Discard] = []
        while self._buf:
            n, what = check_frame(self._buf)
            if what == "need_more":
                break
            chunk = bytes(self._buf[:n])
            del self._buf[:n]
            if what == "frame":
                out.append(parse_frame(chunk))
            elif out and isinstance(out[-1], Discard) and out[-1].reason == what == "garbage":
                out[-1] = Discard("garbage", out[-1].data + chunk)
            else:
                out.append(Discard(what, chunk))
        return out

    def flush(self) -> Discard | None:
        """Drop a partial frame (the link went down); returns it as garbage, if any."""
        if not self._buf:
            return None
        chunk, self._buf = bytes(self._buf), bytearray()
        return Discard("garbage", chunk)


# -- messages --------------------------------------------------------------------------------

KINDS = (
    "card",
    "shuffle_start",
    "shuffle_end",
    "new_shoe",
    "cut_card",
    "door_open",
    "door_closed",
    "fault",
    "fault_cleared",
    "heartbeat",
    "version",
    "unknown",
)
_FIXED = {
    ("SHUF", "START"): "shuffle_start",
    ("SHUF", "END"): "shuffle_end",
    ("DOOR", "OPEN"): "door_open",
    ("DOOR", "CLOSED"): "door_closed",
    ("CUT", ""): "cut_card",
    ("CLEAR", ""): "fault_cleared",
    ("HB", ""): "heartbeat",
}
_WIRE = {kind: key for key, kind in _FIXED.items()}


@dataclass(frozen=True, slots=True)
class Message:
    """A decoded frame: ``kind`` is one of :data:`KINDS`; ``card`` for a card,
    ``text`` for a fault, a firmware version, a new shoe's deck count or an unknown
    message's type and payload."""

    seq: int
    kind: str
    card: Card | None = None
    text: str = ""


def decode_message(frame: Frame) -> Message:
    """What a frame says. A known type with a payload it cannot carry (``CARD,ZZ``, and
    ``CARD,qh`` or ``CARD,QH `` too: the grammar is upper case without spaces) is a
    :class:`ShoeProtocolError`; an unknown type decodes as ``unknown``."""
    word, payload = frame.word, frame.payload
    where = f"frame {frame.seq:02X} ({word},{payload})"
    if word == "CARD":
        # the grammar to the letter: parse_card alone would also take 'qh' or 'QH '
        if not _CARD_RE.match(payload):
            raise ShoeProtocolError(
                f"{where}: {payload!r} is not a card (rank A, 2-10 or T, J, Q, K then suit C, D, "
                "H, S, upper case, nothing else)"
            )
        try:
            return Message(frame.seq, "card", card=parse_card(payload))
        except CardError:  # pragma: no cover - the pattern admits only cards
            raise ShoeProtocolError(f"{where}: {payload!r} is not a card") from None
    if word == "FAULT":
        return Message(frame.seq, "fault", text=payload.strip() or "fault")
    if word == "VER":
        return Message(frame.seq, "version", text=payload.strip())
    if word == "NEWSHOE":
        return Message(frame.seq, "new_shoe", text=payload.strip())
    kind = _FIXED.get((word, payload))
    if kind is not None:
        return Message(frame.seq, kind)
    if word in WORDS:
        allowed = [p or "(empty)" for w, p in _FIXED if w == word]
        raise ShoeProtocolError(f"{where}: {word} carries {' or '.join(allowed)}")
    return Message(frame.seq, "unknown", text=f"{word},{payload}")


def encode_message(message: Message, *, corrupt: bool = False) -> bytes:
    """The frame of a message (the simulator's side)."""
    if message.kind == "card":
        if not isinstance(message.card, Card):
            raise ShoeProtocolError("a card message needs a card")
        return encode_frame(message.seq, "CARD", str(message.card), corrupt=corrupt)
    words = {"fault": "FAULT", "version": "VER", "new_shoe": "NEWSHOE"}
    if message.kind in words:
        return encode_frame(message.seq, words[message.kind], message.text, corrupt=corrupt)
    if message.kind in _WIRE:
        word, payload = _WIRE[message.kind]
        return encode_frame(message.seq, word, payload, corrupt=corrupt)
    raise ShoeProtocolError(f"unknown message kind {message.kind!r}; kinds: {', '.join(KINDS)}")


def to_event(message: Message, t: int | None = None) -> Event | None:
    """The table event a message becomes, or None (heartbeat, version, shuffle start).

    >>> to_event(Message(3, "door_open"), t=500)
    ShoeEvent(event='door_open', detail='', t=500)
    """
    kind = message.kind
    if kind == "card":
        assert message.card is not None
        return CardDrawn(message.card, "shoe", t=t)
    if kind == "shuffle_end":
        return ShoeEvent("shuffle", t=t)
    if kind == "new_shoe":
        detail = f"{message.text} decks" if message.text.isdigit() else message.text
        return ShoeEvent("new_shoe", detail, t=t)
    if kind in ("cut_card", "door_open", "door_closed", "fault_cleared"):
        return ShoeEvent(kind, t=t)
    if kind == "fault":
        return ShoeEvent("fault", message.text, t=t)
    return None


# -- sequence numbers ------------------------------------------------------------------------

MAX_AHEAD = 32
"""How far ahead of the last number a frame may be and still be taken as the shoe's: up to
31 frames lost between. A number 33 to 255 after the last (1 to 223 before it) is *behind*:
an old frame sent again or out of order, never acted on. While the shoe is online no more
than a few frames can go missing (every good frame restarts the heartbeat timeout, and a
shoe draws a few cards a second at most); after it was offline the next heartbeat takes the
count again (:meth:`SequenceCheck.lost_contact`)."""


@dataclass(frozen=True, slots=True)
class SeqVerdict:
    """What the sequence number of a frame says: ``duplicate`` (the previous frame resent:
    ignore it), ``missing`` (numbers never received before it), ``note`` (a restart, or the
    count taken again after the shoe was offline), ``behind`` (not the shoe's next message:
    an old number, or the last number with another message; never act on it), ``again``
    (behind, and the very frame received before under its number) and ``last`` (the count's
    last number when the frame came)."""

    duplicate: bool = False
    missing: tuple[int, ...] = ()
    note: str = ""
    behind: bool = False
    again: bool = False
    last: int | None = None


def describe_missing(missing: tuple[int, ...]) -> str:
    """``"missing frame 0C"``, ``"missing frames 0C, 0D"``, ``"missing frames 0C-1F (20)"``."""
    names = [f"{n:02X}" for n in missing]
    if len(names) == 1:
        return f"missing frame {names[0]}"
    if len(names) <= 6:
        return f"missing frames {', '.join(names)}"
    return f"missing frames {names[0]}-{names[-1]} ({len(names)})"


def _span(first: int, count: int) -> tuple[int, ...]:
    return tuple((first + i) % SEQ_MODULO for i in range(count))


class SequenceCheck:
    """Follows the shoe's sequence numbers.

    Every message but a heartbeat takes the next number (mod 256); a heartbeat
    repeats the number of the last message sent, so a lost last card shows at
    the next heartbeat. ``VER`` numbered 00 is the shoe's first frame after
    power-up: a new count, not a gap. The previous frame sent again is a
    duplicate. A frame up to :data:`MAX_AHEAD` numbers after the last is the shoe's
    (with the numbers between missing); any other number, or the last number with
    another message, is *behind*: the count does not move and the frame must not be
    acted on. After :meth:`lost_contact` the next heartbeat takes the count again.

    >>> check = SequenceCheck()
    >>> [check.check(Frame(n, "CARD", "QH")).missing for n in (0x0C, 0x0D, 0x0F)]
    [(), (), (14,)]
    >>> v = check.check(Frame(0x0D, "CARD", "QH"))
    >>> v.behind, v.again, f"{v.last:02X}", f"{check.last:02X}"
    (True, True, '0F', '0F')
    """

    def __init__(self) -> None:
        self.last: int | None = None
        self._previous: Frame | None = None
        self._received: dict[int, Frame] = {}  # the last frame taken under each number
        self._resync = False

    def lost_contact(self) -> None:
        """The reader lost the shoe (offline): it may have restarted or sent on meanwhile,
        so the next heartbeat, which carries the shoe's last number, takes the count
        again if it does not fit the old one."""
        if self.last is not None:
            self._resync = True

    def check(self, frame: Frame) -> SeqVerdict:
        last, seq = self.last, frame.seq
        heartbeat = frame.word == "HB"
        if not heartbeat and frame == self._previous:
            return SeqVerdict(duplicate=True, last=last)
        if last is None:
            self._take(frame)
            return SeqVerdict()
        if frame.word == "VER" and seq == 0:
            self._received.clear()
            self._take(frame)
            return SeqVerdict(note="" if last == SEQ_MODULO - 1 else "restart", last=last)
        ahead = (seq - last) % SEQ_MODULO
        lost = ahead if heartbeat else ahead - 1  # a heartbeat repeats the last number sent
        if 0 <= lost < MAX_AHEAD and (ahead or heartbeat):
            self._take(frame)
            return SeqVerdict(missing=_span((last + 1) % SEQ_MODULO, lost), last=last)
        if heartbeat and self._resync:  # the shoe's own word for where its count is
            self._received.clear()
            self._take(frame)
            return SeqVerdict(
                note=f"count taken again from the shoe's heartbeat: {seq:02X} after {last:02X} "
                "(the shoe restarted, or sent messages while it was offline)",
                last=last,
            )
        return SeqVerdict(behind=True, again=self._received.get(seq) == frame, last=last)

    def in_order(self, frame: Frame) -> bool:
        """Take ``frame`` if it is the message numbered next after the last (and not the
        previous frame sent again): what :meth:`check` says of it too, in three comparisons
        (the usual frame). False, with nothing taken, for any other: :meth:`check` judges it."""
        last = self.last
        if last is None or frame.seq != (last + 1) % SEQ_MODULO or frame == self._previous:
            return False
        self._take(frame)
        return True

    def _take(self, frame: Frame) -> None:
        self.last = frame.seq
        self._resync = False
        if frame.word != "HB":
            self._previous = frame
            self._received[frame.seq] = frame


# -- frames to table events ------------------------------------------------------------------


@dataclass(slots=True)
class Decoded:
    """What one intact frame gives: ``events`` for the table, in order; ``counts`` for the
    reader's health (kind, n); ``problems`` for its problem log (kind, detail)."""

    events: list[Event]
    counts: list[tuple[str, int]]
    problems: list[tuple[str, str]]


class ShoeDecoder:
    """Intact frames in, table events out: the reader's logic without its port or thread,
    so it can be fuzzed (:mod:`drivers.shoe` feeds it). It never decides what a card
    means for the table: a card whose frame is behind the count becomes an
    :class:`~controller.table.events.OutOfOrderCard` (the card and why), never a
    :class:`~controller.table.events.CardDrawn`; the table holds it for the dealer.

    ``firmware`` and ``shuffling`` follow the shoe's ``VER`` and ``SHUF`` messages.

    >>> d = ShoeDecoder()
    >>> [type(e).__name__ for n in (1, 2, 1) for e in d.decode(Frame(n, "CARD", "QH"), t=5).events]
    ['CardDrawn', 'CardDrawn', 'OutOfOrderCard']
    """

    def __init__(self) -> None:
        self.seq = SequenceCheck()
        self.firmware: str | None = None
        self.shuffling = False

    def lost_contact(self) -> None:
        """The reader went offline (see :meth:`SequenceCheck.lost_contact`)."""
        self.seq.lost_contact()

    def decode(self, frame: Frame, t: int | None = None) -> Decoded:
        if frame.word == "CARD":  # the usual frame, a card in sequence: its event at once
            card = _CARDS.get(frame.payload)
            if card is not None and self.seq.in_order(frame):
                return Decoded([CardDrawn(card, "shoe", t=t)], [], [])
        out = Decoded([], [], [])
        verdict = self.seq.check(frame)
        if verdict.duplicate:
            out.counts.append(("duplicate", 1))
            out.problems.append(("duplicate", f"frame {frame.seq:02X} ({frame.word}) ignored"))
            return out
        if verdict.behind:
            self._behind(frame, verdict, t, out)
            return out
        if verdict.note == "restart":
            out.counts.append(("restart", 1))
            out.problems.append(("restart", "the shoe restarted (VER with sequence 00)"))
        elif verdict.note:
            out.counts.append(("sequence_error", 1))
            out.events.append(ShoeEvent("missed_frames", verdict.note, t=t))
        if verdict.missing:
            out.counts.append(("missed_frames", len(verdict.missing)))
            out.events.append(ShoeEvent("missed_frames", describe_missing(verdict.missing), t=t))
        try:
            message = decode_message(frame)
        except ShoeProtocolError as exc:
            out.counts.append(("bad_message", 1))
            out.problems.append(("bad_message", str(exc)))
            if frame.word == "CARD":  # a card came out and we cannot say which
                out.events.append(ShoeEvent("missed_frames", f"unreadable card: {exc}", t=t))
            return out
        if message.kind == "unknown":
            out.counts.append(("unknown_message", 1))
            out.problems.append(("unknown_message", f"frame {frame.seq:02X}: {message.text}"))
        elif message.kind == "version":
            self.firmware = message.text
        elif message.kind in ("shuffle_start", "shuffle_end"):
            self.shuffling = message.kind == "shuffle_start"
        event = to_event(message, t)
        if event is not None:
            out.events.append(event)
        return out

    def _behind(self, frame: Frame, verdict: SeqVerdict, t: int | None, out: Decoded) -> None:
        """A frame behind the count: counted and logged; a card goes to the table to be
        held, another message is named (by its type only: no payload text reaches the
        dealer) and ignored; a heartbeat says nothing to the table."""
        assert verdict.last is not None
        last, again = verdict.last, " again" if verdict.again else ""
        where = f"frame {frame.seq:02X} after {last:02X}"
        out.counts.append(("out_of_order", 1))
        out.problems.append(
            ("out_of_order", f"{where}{again}, not acted on: {frame.word},{frame.payload}")
        )
        if frame.word == "HB":
            return
        card = None
        if frame.word == "CARD":
            with contextlib.suppress(ShoeProtocolError):
                card = decode_message(frame).card
        if card is not None:
            out.events.append(OutOfOrderCard(card, frame.seq, last, verdict.again, t=t))
            return
        word = frame.word if frame.word in WORDS else "an unknown message"
        out.events.append(ShoeEvent("out_of_order", f"{word}{again}, {where}", t=t))
