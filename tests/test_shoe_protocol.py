"""The shoe's wire protocol: frames, messages and sequence numbers, with a fuzzed parser.

What a dealer relies on: a card on the display is a card the shoe sent. Garbage on
the line, a corrupted frame or a frame cut short never becomes a card, and every
intact frame after them is still read.
"""

from __future__ import annotations

import binascii
import doctest
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st
from test_purity import imported_modules

import drivers.shoe_protocol as proto
from controller.rules.cards import ALL_CARDS, parse_card
from controller.table import events as ev
from controller.table.events import CardDrawn, ShoeEvent
from controller.table.state import Phase
from drivers.shoe_protocol import (
    MAX_FRAME,
    Discard,
    Frame,
    FrameParser,
    Message,
    SequenceCheck,
    SeqVerdict,
    ShoeProtocolError,
    check_frame,
    decode_message,
    describe_missing,
    encode_frame,
    encode_message,
    to_event,
)


def test_the_module_examples_hold():
    assert doctest.testmod(proto).failed == 0


def test_only_the_reader_imports_serial():
    """The parser's purity is checked by tests/test_purity.py; the port is the reader's."""
    drivers = Path(proto.__file__).parent
    assert "serial" in imported_modules(drivers / "shoe.py")
    assert "serial" not in imported_modules(drivers / "shoe_sim.py")
    assert "serial" not in imported_modules(drivers / "shoe_protocol.py")


def frames_of(data: bytes, chunk: int | None = None) -> list[Frame | Discard]:
    parser = FrameParser()
    if chunk is None:
        return parser.feed(data)
    out: list[Frame | Discard] = []
    for i in range(0, len(data), chunk):
        out += parser.feed(data[i : i + chunk])
    return out


# -- framing ---------------------------------------------------------------------------------


def test_a_frame_is_one_printable_line_with_start_sequence_type_payload_and_crc():
    raw = encode_frame(12, "CARD", "10D")
    assert raw.startswith(b"$0C,CARD,10D*") and raw.endswith(b"\r\n")
    assert int(raw[13:17], 16) == proto.crc16(b"0C,CARD,10D")
    assert frames_of(raw) == [Frame(12, "CARD", "10D")]


def test_every_card_round_trips_and_becomes_a_shoe_card_event():
    for seq, card in enumerate(ALL_CARDS):
        (frame,) = frames_of(encode_message(Message(seq, "card", card=card)))
        message = decode_message(frame)
        assert message == Message(seq, "card", card=card)
        assert to_event(message, t=40) == CardDrawn(card, "shoe", t=40)


@pytest.mark.parametrize(
    ("message", "event"),
    [
        (Message(1, "shuffle_start"), None),
        (Message(2, "shuffle_end"), ShoeEvent("shuffle", t=7)),
        (Message(3, "new_shoe", text="6"), ShoeEvent("new_shoe", "6 decks", t=7)),
        (Message(4, "cut_card"), ShoeEvent("cut_card", t=7)),
        (Message(5, "door_open"), ShoeEvent("door_open", t=7)),
        (Message(6, "door_closed"), ShoeEvent("door_closed", t=7)),
        (Message(7, "fault", text="JAM feed roller"), ShoeEvent("fault", "JAM feed roller", t=7)),
        (Message(8, "fault_cleared"), ShoeEvent("fault_cleared", t=7)),
        (Message(9, "heartbeat"), None),
        (Message(10, "version", text="SIM 1.0"), None),
    ],
    ids=lambda v: getattr(v, "kind", ""),
)
def test_every_message_type_round_trips_to_its_table_event(message, event):
    (frame,) = frames_of(encode_message(message))
    assert decode_message(frame) == message
    assert to_event(decode_message(frame), t=7) == event


def test_every_prefix_of_a_frame_needs_more_bytes():
    raw = encode_frame(200, "FAULT", "JAM feed roller")
    for n in range(1, len(raw)):
        assert check_frame(raw[:n]) == (0, "need_more"), raw[:n]
    assert check_frame(raw) == (len(raw), "frame")


def test_garbage_before_a_frame_is_discarded_up_to_the_start_character():
    raw = encode_frame(1, "CARD", "QH")
    assert frames_of(b"\x00\xffnoise" + raw) == [
        Discard("garbage", b"\x00\xffnoise"),
        Frame(1, "CARD", "QH"),
    ]


def test_a_frame_cut_short_by_the_next_start_is_garbage_and_the_next_frame_survives():
    raw = encode_frame(2, "CARD", "7D")
    assert frames_of(raw[:9] + raw) == [Discard("garbage", raw[:9]), Frame(2, "CARD", "7D")]


def test_a_wrong_checksum_is_reported_as_such_and_never_a_card():
    bad = encode_frame(3, "CARD", "AS", corrupt=True)
    good = encode_frame(4, "CARD", "KS")
    assert frames_of(bad + good) == [Discard("bad_checksum", bad), Frame(4, "CARD", "KS")]


@pytest.mark.parametrize(
    "raw",
    [
        b"$0c,CARD,QH*8C07\r\n",  # lower-case sequence number
        b"$0C,card,QH*8C07\r\n",  # lower-case type
        b"$0C,CARD,QH*8C07\n",  # no carriage return
        b"$0C,CARD,QH*8c07\r\n",  # lower-case checksum
        b"$0C,CARD,QH,8C07\r\n",  # no '*'
        b"$0C,CARD,Q\x00*8C07\r\n",  # not printable
    ],
)
def test_malformed_lines_are_garbage(raw):
    n, what = check_frame(raw)
    assert (n, what) == (len(raw), "garbage")


def test_a_line_too_long_to_be_a_frame_is_garbage_without_waiting_for_its_end():
    data = b"$0C,CARD," + b"A" * 100
    n, what = check_frame(data)
    assert (n, what) == (MAX_FRAME, "garbage")
    assert frames_of(data + encode_frame(5, "CUT"))[-1] == Frame(5, "CUT", "")


def test_a_partial_frame_is_held_then_flushed_as_garbage_when_the_link_drops():
    parser = FrameParser()
    assert parser.feed(b"$0C,CARD,Q") == []
    assert parser.pending == 10
    assert parser.flush() == Discard("garbage", b"$0C,CARD,Q")
    assert parser.flush() is None


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ((256, "CARD", "QH"), "sequence number must be 0-255"),
        ((1, "card", "QH"), "capital letters"),
        ((1, "CARD", "Q$"), "without '$' or '*'"),
        ((1, "FAULT", "x" * 41), "at most 40"),
        ((1, "CARD", "qh"), "a CARD payload is one card, upper case"),
        ((1, "CARD", "QH "), "a CARD payload is one card, upper case"),
    ],
)
def test_encoding_an_impossible_frame_names_the_problem(args, problem):
    with pytest.raises(ShoeProtocolError, match=re.escape(problem)):
        encode_frame(*args)


# -- messages --------------------------------------------------------------------------------


def test_a_card_frame_with_no_card_in_it_is_a_protocol_error_naming_it():
    with pytest.raises(ShoeProtocolError, match=r"frame 0C \(CARD,ZZ\): 'ZZ' is not a card"):
        decode_message(Frame(12, "CARD", "ZZ"))


def test_a_known_type_with_a_wrong_payload_says_what_it_carries():
    with pytest.raises(ShoeProtocolError, match="DOOR carries OPEN or CLOSED"):
        decode_message(Frame(1, "DOOR", "AJAR"))


def test_an_unknown_type_decodes_as_unknown_for_newer_firmware():
    assert decode_message(Frame(1, "TEMP", "41C")) == Message(1, "unknown", text="TEMP,41C")


def test_ten_as_t_is_accepted_from_the_wire():
    assert decode_message(Frame(1, "CARD", "TD")).card == parse_card("10D")


def raw_frame(seq: int, word: str, payload: str) -> bytes:
    """A frame with a good checksum, whatever its payload (encode_frame refuses bad cards)."""
    body = f"{seq:02X},{word},{payload}".encode("ascii")
    return b"$" + body + b"*%04X\r\n" % binascii.crc_hqx(body, 0xFFFF)


@pytest.mark.parametrize("payload", ["qh", "QH ", " QH", "Qh", "qH", "10d", "td"])
def test_a_card_outside_the_upper_case_grammar_is_a_bad_message_never_a_card(payload):
    # the checksum is good and the frame intact: the payload breaks the card grammar
    (frame,) = frames_of(raw_frame(12, "CARD", payload))
    assert frame == Frame(12, "CARD", payload)
    with pytest.raises(ShoeProtocolError, match=re.escape(f"{payload!r} is not a card")):
        decode_message(frame)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=6))
def test_fuzz_a_card_payload_decodes_only_when_it_is_a_card_as_written(payload):
    written = {str(card) for card in ALL_CARDS} | {f"T{suit}" for suit in "CDHS"}
    try:
        message = decode_message(Frame(1, "CARD", payload))
    except ShoeProtocolError:
        assert payload not in written
    else:
        assert payload in written and str(message.card) == payload.replace("T", "10")


# -- sequence numbers ------------------------------------------------------------------------


def run_seq(*frames: Frame):
    check = SequenceCheck()
    return [check.check(f) for f in frames]


def test_numbers_in_order_are_clean_across_the_wrap():
    verdicts = run_seq(Frame(254, "CARD", "QH"), Frame(255, "CUT"), Frame(0, "CARD", "7D"))
    assert all(not v.missing and not v.duplicate and not v.note for v in verdicts)


def test_a_gap_names_every_missing_number():
    *_, verdict = run_seq(Frame(254, "CARD", "QH"), Frame(2, "CARD", "7D"))
    assert verdict.missing == (255, 0, 1)
    assert describe_missing(verdict.missing) == "missing frames FF, 00, 01"


def test_a_heartbeat_repeats_the_last_number_and_reveals_a_lost_last_card():
    verdicts = run_seq(
        Frame(5, "CARD", "QH"), Frame(5, "HB"), Frame(5, "HB"), Frame(6, "HB"), Frame(7, "CUT")
    )
    assert [v.missing for v in verdicts] == [(), (), (), (6,), ()]


def test_a_frame_sent_twice_is_a_duplicate_but_a_new_message_is_not():
    verdicts = run_seq(
        Frame(5, "CARD", "QH"), Frame(5, "HB"), Frame(5, "CARD", "QH"), Frame(6, "CARD", "QH")
    )
    assert [v.duplicate for v in verdicts] == [False, False, True, False]
    assert not verdicts[3].missing


def test_a_restarted_shoe_numbers_from_00_with_its_version_and_that_is_no_gap():
    *_, verdict = run_seq(Frame(40, "CARD", "QH"), Frame(0, "VER", "SIM 1.0"))
    assert verdict.missing == () and verdict.note == "restart"


def test_the_last_number_again_with_other_content_is_behind_not_a_new_message():
    check = SequenceCheck()
    check.check(Frame(9, "CARD", "QH"))
    verdict = check.check(Frame(9, "CARD", "2C"))
    assert verdict == SeqVerdict(behind=True, again=False, last=9)
    assert check.last == 9  # the count does not move
    assert check.check(Frame(10, "CARD", "5S")) == SeqVerdict(last=9)


def test_long_gaps_are_summarised():
    assert describe_missing(tuple(range(12, 32))) == "missing frames 0C-1F (20)"
    assert describe_missing((12,)) == "missing frame 0C"


# -- fuzz ------------------------------------------------------------------------------------

messages = st.one_of(
    st.builds(lambda c: ("CARD", str(c)), st.sampled_from(ALL_CARDS)),
    st.sampled_from(
        [("HB", ""), ("CUT", ""), ("DOOR", "OPEN"), ("SHUF", "END"), ("CLEAR", ""), ("VER", "X 2")]
    ),
    st.builds(
        lambda t: ("FAULT", t),
        st.text(st.characters(min_codepoint=0x41, max_codepoint=0x5A), min_size=1, max_size=40),
    ),
)


FRAME_TEXT = re.compile(rb"\$([0-9A-F]{2},[A-Z]{1,8},[ -#%-)+-~]{0,40})\*([0-9A-F]{4})\r\n")


def holds_a_valid_frame(data: bytes) -> bool:
    """The test's own oracle, independent of the parser: is there an intact frame in ``data``?
    (Noise that happens to be a frame with a right checksum is not noise.)"""
    return any(
        binascii.crc_hqx(m.group(1), 0xFFFF) == int(m.group(2), 16)
        for m in FRAME_TEXT.finditer(data)
    )


@st.composite
def noise(draw, sent: bytes) -> bytes:
    """Line noise: random bytes, a frame cut short, or a frame with one byte changed."""
    kind = draw(st.sampled_from(["bytes", "cut", "flip"]))
    if kind == "bytes":
        return draw(st.binary(max_size=80))
    if kind == "cut":
        return sent[: draw(st.integers(1, len(sent) - 1))]
    i = draw(st.integers(0, len(sent) - 1))
    new = draw(st.integers(0, 255).filter(lambda b: b != sent[i]))
    return sent[:i] + bytes([new]) + sent[i + 1 :]


@st.composite
def streams(draw):
    """A line carrying intact frames with noise between them; the frames sent intact."""
    items = draw(st.lists(st.tuples(st.integers(0, 255), messages), min_size=1, max_size=12))
    data = b""
    intact: list[Frame] = []
    for seq, (word, payload) in items:
        raw = encode_frame(seq, word, payload)
        if draw(st.booleans()):
            junk = draw(noise(raw))
            assume(not holds_a_valid_frame(junk))
            data += junk
        data += raw
        intact.append(Frame(seq, word, payload))
    if draw(st.booleans()):
        data += draw(st.binary(max_size=40))  # noise at the end, perhaps a partial frame
    return data, intact


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.one_of(st.none(), st.integers(1, 23)))
def test_fuzz_noise_never_makes_a_card_and_every_intact_frame_is_recovered(stream, chunk):
    data, intact = stream
    out = frames_of(data, chunk)
    assert [x for x in out if isinstance(x, Frame)] == intact
    sent_cards = [f.payload for f in intact if f.word == "CARD"]
    read_cards = [x.payload for x in out if isinstance(x, Frame) and x.word == "CARD"]
    assert read_cards == sent_cards


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(1, 17))
def test_fuzz_random_bytes_never_crash_and_are_all_accounted_for(data, chunk):
    parser = FrameParser()
    out = []
    for i in range(0, len(data), chunk):
        out += parser.feed(data[i : i + chunk])
    discarded = sum(len(x.data) for x in out if isinstance(x, Discard))
    framed = sum(len(encode_frame(x.seq, x.word, x.payload)) for x in out if isinstance(x, Frame))
    assert discarded + framed + parser.pending == len(data)
    assert parser.pending < MAX_FRAME


# -- frames behind the count: repeated, reordered, replayed (issue 26) ---------------------


def test_an_older_frame_again_is_behind_and_the_count_does_not_move():
    """The audit's case: frame 0C sent again after 28 was read as "254 frames lost"."""
    check = SequenceCheck()
    for n in range(0x0C, 0x29):
        check.check(Frame(n, "CARD", "10D" if n == 0x0C else "2C"))
    verdict = check.check(Frame(0x0C, "CARD", "10D"))
    assert verdict == SeqVerdict(behind=True, again=True, last=0x28)
    assert check.check(Frame(0x0D, "CARD", "9S")) == SeqVerdict(behind=True, last=0x28)
    assert check.check(Frame(0x29, "CARD", "5H")) == SeqVerdict(last=0x28)  # no gap


@pytest.mark.parametrize(
    ("ahead", "verdict"),
    [
        (1, SeqVerdict(last=0xF0)),
        (2, SeqVerdict(missing=(0xF1,), last=0xF0)),
        (32, SeqVerdict(missing=tuple((0xF1 + i) % 256 for i in range(31)), last=0xF0)),
        (33, SeqVerdict(behind=True, last=0xF0)),  # 223 behind, across the wrap
        (255, SeqVerdict(behind=True, last=0xF0)),  # the one before
    ],
)
def test_the_window_takes_up_to_31_lost_frames_and_the_rest_is_behind(ahead, verdict):
    check = SequenceCheck()
    check.check(Frame(0xF0, "CUT"))
    assert check.check(Frame((0xF0 + ahead) % 256, "CARD", "QH")) == verdict
    assert check.last == (0xF0 if verdict.behind else (0xF0 + ahead) % 256)


def test_a_heartbeat_behind_is_ignored_online_and_takes_the_count_again_after_offline():
    check = SequenceCheck()
    check.check(Frame(0x40, "CARD", "QH"))
    assert check.check(Frame(0x03, "HB")) == SeqVerdict(behind=True, last=0x40)
    assert check.last == 0x40
    check.lost_contact()  # a USB shoe power-cycled: its VER 00 went out before the port opened
    assert check.check(Frame(0x03, "CARD", "QH")).behind  # a card never takes the count again
    verdict = check.check(Frame(0x03, "HB"))
    assert "count taken again from the shoe's heartbeat: 03 after 40" in verdict.note
    assert check.check(Frame(0x04, "CARD", "7D")) == SeqVerdict(last=0x03)
    assert check.check(Frame(0x02, "HB")).behind  # online again: no more taking


def test_after_offline_a_frame_that_fits_the_old_count_keeps_it():
    check = SequenceCheck()
    check.check(Frame(0x40, "CARD", "QH"))
    check.lost_contact()
    assert check.check(Frame(0x42, "CARD", "7D")) == SeqVerdict(missing=(0x41,), last=0x40)
    assert check.check(Frame(0x10, "HB")).behind  # taken: the old count held


def test_a_restart_starts_a_new_count_and_forgets_the_old_frames():
    check = SequenceCheck()
    for n in range(0x30, 0x33):
        check.check(Frame(n, "CARD", "QH"))
    assert check.check(Frame(0, "VER", "SIM 1.0")).note == "restart"
    assert check.check(Frame(1, "CARD", "QH")) == SeqVerdict(last=0)
    assert check.check(Frame(0x31, "CARD", "QH")) == SeqVerdict(behind=True, last=1)


def test_the_decoder_holds_a_card_behind_and_names_another_message_by_its_type_only():
    decoder = proto.ShoeDecoder()
    decoder.decode(Frame(0x0C, "CARD", "10D"))
    decoder.decode(Frame(0x0D, "FAULT", "PAY SPOT 3 NOW"))
    decoder.decode(Frame(0x0E, "CLEAR"))
    card = decoder.decode(Frame(0x0C, "CARD", "10D"), t=9)
    assert card.events == [ev.OutOfOrderCard(parse_card("10D"), 0x0C, 0x0E, True, t=9)]
    assert card.counts == [("out_of_order", 1)]
    assert card.problems == [("out_of_order", "frame 0C after 0E again, not acted on: CARD,10D")]
    fault = decoder.decode(Frame(0x0D, "FAULT", "PAY SPOT 3 NOW"), t=9)
    assert fault.events == [ShoeEvent("out_of_order", "FAULT again, frame 0D after 0E", t=9)]
    other = decoder.decode(Frame(0x0A, "TEMP", "41C"), t=9)
    assert other.events == [ShoeEvent("out_of_order", "an unknown message, frame 0A after 0E", t=9)]
    assert decoder.decode(Frame(0x0A, "HB")).events == []
    assert decoder.decode(Frame(0x0E, "CLEAR")).counts == [("duplicate", 1)]
    assert decoder.decode(Frame(0x0F, "CARD", "QH"), t=9).events == [
        CardDrawn(parse_card("QH"), "shoe", t=9)
    ]


# Genuine messages (no VER, whose 00 restarts the count; no HB, made by `arrivals`)
shoe_messages = st.integers(0, 9).flatmap(
    lambda n: (
        st.builds(lambda c: ("CARD", str(c)), st.sampled_from(ALL_CARDS))
        if n < 7
        else st.sampled_from([("FAULT", "JAM"), ("CLEAR", ""), ("CUT", ""), ("DOOR", "OPEN")])
        if n < 9
        else st.sampled_from([("DOOR", "CLOSED"), ("SHUF", "END")])
    )
)


@st.composite
def arrivals(draw, max_messages: int = 30):
    """What reaches the reader: the shoe's messages numbered from a random start (so across
    the wrap), some lost, some reordered, some sent again later, heartbeats between. Returns
    (genuine frames, arrivals as (index into genuine, is_heartbeat))."""
    base = draw(st.integers(0, 255))
    sent = draw(st.lists(shoe_messages, min_size=1, max_size=max_messages))
    genuine = [Frame((base + i) % 256, w, p) for i, (w, p) in enumerate(sent)]
    order: list[tuple[int, bool]] = []
    for i in range(len(genuine)):
        if draw(st.integers(0, 9)) > 0:  # one in ten lost
            order.append((i, False))
        if draw(st.integers(0, 4)) == 0:
            order.append((i, True))  # a heartbeat after it
        if order and draw(st.integers(0, 3)) == 0:  # an older frame again, or a heartbeat
            order.append((draw(st.integers(0, i)), draw(st.booleans())))
    for _ in range(draw(st.integers(0, 4))):  # swap neighbours: frames out of order
        if len(order) > 1:
            k = draw(st.integers(0, len(order) - 2))
            order[k], order[k + 1] = order[k + 1], order[k]
    return genuine, order


@settings(max_examples=500, deadline=None)
@given(arrivals())
def test_fuzz_a_frame_behind_the_count_is_never_a_dealt_card(stream):
    """Repeated, reordered and replayed frames: a frame older than the newest frame taken
    never becomes a CardDrawn; its card comes as an OutOfOrderCard for the table to hold.
    Every other card arrives once, in order. (A run of at most 30 messages stays inside
    the window, so "newest taken" is the newest that arrived.)"""
    genuine, order = stream
    decoder = proto.ShoeDecoder()
    top = -1  # the newest index taken (a heartbeat takes its message's number)
    previous = None  # the index of the last message taken (its resend is a duplicate)
    taken: set[int] = set()
    dealt: list[int] = []
    for index, heartbeat in order:
        frame = Frame(genuine[index].seq, "HB") if heartbeat else genuine[index]
        last_seq = genuine[top].seq if top >= 0 else None
        out = decoder.decode(frame, t=index)
        cards = [e for e in out.events if isinstance(e, CardDrawn)]
        held = [e for e in out.events if isinstance(e, ev.OutOfOrderCard)]
        if heartbeat:
            assert not cards and not held
            top = max(top, index)
            continue
        if index > top:
            assert not held
            if frame.word == "CARD":
                assert cards == [CardDrawn(parse_card(frame.payload), "shoe", t=index)]
                dealt.append(index)
            top = previous = index
            taken.add(index)
        elif index == previous:
            assert out.events == [] and out.counts == [("duplicate", 1)]
        else:
            assert not cards, f"frame {frame} behind {last_seq:02X} was dealt"
            if frame.word == "CARD":
                card = parse_card(frame.payload)
                assert held == [
                    ev.OutOfOrderCard(card, frame.seq, last_seq, index in taken, t=index)
                ]
            assert ("out_of_order", 1) in out.counts
    assert dealt == sorted(set(dealt))


def layout_cards(table) -> int:
    rnd = table.state.round
    if rnd is None:
        return 0
    return len(rnd.dealer) + sum(len(h.cards) for s in rnd.spots.values() for h in s.hands)


@settings(max_examples=300, deadline=None)
@given(arrivals(max_messages=40), st.integers(1, 3))
def test_fuzz_no_repeated_reordered_or_during_fault_frame_is_dealt_at_the_table(stream, spots):
    """The same line through the decoder into a table that deals (bets placed, no more bets,
    a dealer who burns every held card at once): a card the shoe sent behind its count or
    while it reports a fault never reaches a hand, and always waits as a held card."""
    from controller.games import load_game
    from controller.table import Table, TableSettings

    genuine, order = stream
    table = Table(load_game("pa-standard"), TableSettings(spots=spots))
    decoder = proto.ShoeDecoder()

    def new_round() -> None:  # bets stay on; no more bets is refused in a fault
        if table.state.phase is Phase.BETTING:
            for spot in range(1, spots + 1):
                table.handle(ev.BetSensor(spot, "main", True))
            table.handle(ev.Lockout())

    new_round()
    checked = dealt = 0
    for index, heartbeat in order:
        frame = Frame(genuine[index].seq, "HB") if heartbeat else genuine[index]
        for event in decoder.decode(frame).events:
            faulted = bool(table.state.shoe_fault)
            on_layout, pending = layout_cards(table), len(table.state.pending)
            step = table.handle(event)
            dealt += layout_cards(table) > on_layout
            suspect = isinstance(event, ev.OutOfOrderCard) or (
                isinstance(event, CardDrawn) and faulted
            )
            if suspect:
                checked += 1
                assert step.accepted
                assert layout_cards(table) == on_layout, f"{event} was dealt"
                assert len(table.state.pending) == pending + 1
                assert table.state.pending_foreign[-1]
            while table.state.pending:  # the dealer's decision
                assert table.handle(ev.Burn()).accepted
            if table.state.phase is Phase.PLAYERS:
                table.handle(ev.Next())
            if table.state.phase is Phase.SETTLED:
                table.handle(ev.EndRound())
            new_round()
    hypothesis_event(f"suspect cards checked: {min(checked, 5)}+, dealt: {min(dealt, 5)}+")
