"""The shoe reader against the simulator, through a real pseudo-terminal: one test per fault.

Each test starts ``shoe-sim`` as its own process (heartbeat every 100 ms), opens a
:class:`ShoeReader` on the pty it prints, drives the simulator with the commands a
technician would type, and checks what the table would be told. The simulator's
answers (``sent card QH seq 0C``) say what really went down the line, so every test
can check that no card reached the table that the shoe did not send.
"""

from __future__ import annotations

import binascii
import doctest
import json
import os
import queue
import subprocess
import sys
import threading
import time
import tty
from collections.abc import Callable
from pathlib import Path

import pytest

import drivers.shoe
from controller.rules.cards import parse_card
from controller.table.events import CardDrawn, Event, OutOfOrderCard, ShoeEvent
from drivers.shoe import ShoeError, ShoeReader, backoff_ms

REPO = Path(__file__).resolve().parent.parent
HEARTBEAT_MS = 100
WAIT_S = 5.0


class Sim:
    """A running ``shoe-sim`` process: send commands, wait for its answers."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "drivers.shoe_sim", "--heartbeat-ms", str(HEARTBEAT_MS), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            cwd=REPO,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.path = self.expect("/")

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = WAIT_S) -> str:
        """The next answer starting with ``prefix`` (earlier ones are kept in ``seen``)."""
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"shoe-sim never answered {prefix!r}; it said {self.seen}"
                ) from None
            self.seen.append(line)
            if line.startswith(prefix):
                return line

    def cards_sent(self) -> list[str]:
        return [line.split()[2] for line in self.seen if line.startswith("sent card ")]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send("quit")
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Events:
    """The sink: what the table would be told, in order."""

    def __init__(self) -> None:
        self.queue: queue.Queue[Event] = queue.Queue()
        self.seen: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.queue.put(event)

    def wait_for(self, match: Callable[[Event], bool], timeout: float = WAIT_S) -> Event:
        end = time.monotonic() + timeout
        for event in self.seen:
            if match(event):
                return event
        while True:
            try:
                event = self.queue.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no such event; the reader sent {self.seen}") from None
            self.seen.append(event)
            if match(event):
                return event

    def drain(self, settle: float = 0.3) -> list[Event]:
        """Everything so far, after ``settle`` seconds of quiet."""
        while True:
            try:
                self.seen.append(self.queue.get(timeout=settle))
            except queue.Empty:
                return self.seen

    def cards(self) -> list[str]:
        return [str(e.card) for e in self.drain() if isinstance(e, CardDrawn)]

    def shoe(self, kind: str) -> list[ShoeEvent]:
        return [e for e in self.drain() if isinstance(e, ShoeEvent) and e.event == kind]


def card(text: str):
    return lambda e: isinstance(e, CardDrawn) and e.card == parse_card(text)


def shoe(kind: str):
    return lambda e: isinstance(e, ShoeEvent) and e.event == kind


@pytest.fixture
def rig():
    """``rig(*sim_args, **reader_options)`` -> (sim, reader, events), the shoe online."""
    made: list = []

    def start(*args: str, url: str | None = None, **options):
        sim = Sim(*args)
        made.append(sim)
        events = Events()
        options.setdefault("heartbeat_timeout_ms", 600)
        reader = ShoeReader(url or sim.path, events, **options)
        made.append(reader)
        events.wait_for(shoe("online"))
        return sim, reader, events

    yield start
    for thing in reversed(made):
        thing.close()


def test_cards_arrive_in_order_as_shoe_cards_with_the_clock_time(rig):
    ticks = iter(range(1000, 10**9, 10))
    sim, reader, events = rig("--cards", "QH,7D,AS,10C", clock=lambda: next(ticks))
    sim.send("deal 4")
    sim.expect("sent card 10C")
    events.wait_for(card("10C"))
    dealt = [e for e in events.drain() if isinstance(e, CardDrawn)]
    assert [str(e.card) for e in dealt] == ["QH", "7D", "AS", "10C"]
    assert all(e.source == "shoe" and e.t >= 1000 for e in dealt)
    assert [e.t for e in dealt] == sorted(e.t for e in dealt)
    health = reader.health()
    assert health["connected"] and health["errors"] == {}


def test_every_shoe_message_reaches_the_table_and_the_health_page(rig):
    sim, reader, events = rig("--decks", "2", "--firmware", "ACME 2.3")
    for command in ("version", "door open", "door closed", "fault JAM feed roller", "clear", "cut"):
        sim.send(command)
    events.wait_for(shoe("cut_card"))
    assert reader.health()["firmware"] == "ACME 2.3"
    sim.send("shuffle")
    sim.expect("sent shuffle end")
    events.wait_for(shoe("shuffle"))
    sim.send("new-shoe")
    events.wait_for(shoe("new_shoe"))
    kinds = [(e.event, e.detail) for e in events.drain() if isinstance(e, ShoeEvent)]
    assert kinds == [
        ("online", ""),
        ("door_open", ""),
        ("door_closed", ""),
        ("fault", "JAM feed roller"),
        ("fault_cleared", ""),
        ("cut_card", ""),
        ("shuffle", ""),
        ("new_shoe", "2 decks"),
    ]
    assert reader.health()["shuffling"] is False


def test_garbage_is_counted_and_discarded_and_never_a_card(rig):
    sim, reader, events = rig("--seed", "3")
    for _ in range(5):
        sim.send("garbage 200")
        sim.send("deal")
    sim.send("status")
    sim.expect("status")
    sent = sim.cards_sent()
    assert len(sent) == 5
    events.wait_for(card(sent[-1]))
    assert events.cards() == sent
    health = reader.health()
    assert health["errors"]["garbage_bytes"] == 1000
    assert "missed_frames" not in health["errors"]
    assert events.shoe("missed_frames") == []


def test_a_bad_checksum_is_counted_never_a_card_and_the_lost_card_is_an_alarm(rig):
    sim, reader, events = rig("--cards", "QH,7D,AS")
    sim.send("deal")
    sim.send("bad-checksum")
    sim.send("deal")
    corrupted = sim.expect("sent card 7D")
    assert corrupted.endswith("with bad checksum")
    seq = corrupted.split()[4]
    sim.send("deal")
    events.wait_for(card("AS"))
    assert events.cards() == ["QH", "AS"]  # 7D never reaches the table
    (alarm,) = events.shoe("missed_frames")
    assert alarm.detail == f"missing frame {seq}"
    assert reader.health()["errors"]["bad_checksum"] == 1


def test_a_lower_case_or_padded_card_is_counted_discarded_and_an_unreadable_card_alarm(
    tmp_path,
):
    """The grammar is upper case: ``CARD,qh`` and ``CARD,QH `` with good checksums come from a
    shoe that breaks the protocol. Never a card; counted as bad_message; the card that came
    out is an alarm at once; the sequence stays in step (no later "missing frame")."""

    def frame(seq: int, word: str, payload: str) -> bytes:
        body = f"{seq:02X},{word},{payload}".encode("ascii")
        return b"$" + body + b"*%04X\r\n" % binascii.crc_hqx(body, 0xFFFF)

    master, slave = os.openpty()
    tty.setraw(slave)
    problems: list[dict] = []
    events = Events()
    reader = ShoeReader(os.ttyname(slave), events, on_problem=problems.append)
    try:
        os.write(master, frame(0, "VER", "ACME 2.3"))
        events.wait_for(shoe("online"))
        for seq, payload in ((1, "qh"), (2, "QH "), (3, "7D")):
            os.write(master, frame(seq, "CARD", payload))
        os.write(master, frame(3, "HB", ""))
        events.wait_for(card("7D"))
        assert events.cards() == ["7D"]
        alarms = [e.detail for e in events.shoe("missed_frames")]
        assert len(alarms) == 2 and all(a.startswith("unreadable card: frame 0") for a in alarms)
        assert "'qh' is not a card" in alarms[0] and "'QH ' is not a card" in alarms[1]
        assert reader.health()["errors"] == {"bad_message": 2}
        assert [p["error"] for p in problems] == ["bad_message", "bad_message"]
    finally:
        reader.close()
        os.close(master)
        os.close(slave)


def test_a_dropped_frame_is_a_missed_frames_alarm_not_a_guess(rig):
    sim, reader, events = rig("--cards", "QH,7D,AS")
    sim.send("drop")
    sim.send("deal")
    seq = sim.expect("dropped card QH").split()[4]
    alarm = events.wait_for(shoe("missed_frames"))  # the next heartbeat already tells
    assert alarm.detail == f"missing frame {seq}"
    sim.send("deal 2")
    events.wait_for(card("AS"))
    assert events.cards() == ["7D", "AS"]
    assert len(events.shoe("missed_frames")) == 1
    assert reader.health()["errors"]["missed_frames"] == 1


def test_a_duplicated_frame_is_ignored_and_counted(rig):
    sim, reader, events = rig("--cards", "QH,7D")
    sim.send("dup")
    sim.send("deal 2")
    assert sim.expect("sent card QH").endswith("twice")
    events.wait_for(card("7D"))
    assert events.cards() == ["QH", "7D"]
    assert events.shoe("missed_frames") == []
    assert reader.health()["errors"] == {"duplicate": 1}


def test_an_older_frame_sent_again_is_never_a_card_drawn_only_a_card_to_hold(rig):
    """Issue 26: frame 01 sent again after 03 was read as "254 frames lost" and dealt."""
    sim, reader, events = rig("--cards", "QH,7D,AS,KC")
    sim.send("deal 3")
    seq = sim.expect("sent card QH").split()[4]
    events.wait_for(card("AS"))
    sim.send(f"replay {seq}")
    assert sim.expect("replayed ") == f"replayed card QH seq {seq}"
    held = events.wait_for(lambda e: isinstance(e, OutOfOrderCard))
    assert (str(held.card), held.frame, held.again) == ("QH", int(seq, 16), True)
    sim.send("deal")
    events.wait_for(card("KC"))
    assert events.cards() == ["QH", "7D", "AS", "KC"]  # the count did not move: no gap
    assert events.shoe("missed_frames") == []
    assert reader.health()["errors"] == {"out_of_order": 1}
    sim.send("replay zz")
    assert "replay needs one sequence number in hex" in sim.expect("error:")
    sim.send("replay 7F")
    assert "no frame was made with number 7F yet" in sim.expect("error:")


def test_a_shoe_restarted_while_unplugged_is_read_again_from_its_heartbeat(rig, tmp_path):
    """A USB shoe power-cycled: its VER 00 went out before the port reopened. Its
    heartbeat 00 is behind the old count; after being offline the reader takes the count
    again from it (an alarm), and the next card is dealt, not held."""
    link = tmp_path / "shoe"
    sim, reader, events = rig(
        "--cards", "QH,7D,AS,KC,2S", "--link", str(link), url=str(link), reconnect_min_ms=100
    )
    sim.send("deal 3")  # numbers 01-03
    events.wait_for(card("AS"))
    sim.send("hangup 600")
    sim.send("restart")
    assert sim.expect("lost version") == "lost version SIM 1.0 seq 00 (hung up)"
    events.wait_for(shoe("offline"))
    events.wait_for(shoe("online"), timeout=WAIT_S)
    again = events.wait_for(shoe("missed_frames"))
    assert "count taken again from the shoe's heartbeat: 00 after 03" in again.detail
    sim.send("deal")
    events.wait_for(card("KC"))
    assert events.cards() == ["QH", "7D", "AS", "KC"]
    assert not [e for e in events.drain() if isinstance(e, OutOfOrderCard)]
    assert reader.health()["errors"]["sequence_error"] == 1
    assert "out_of_order" not in reader.health()["errors"]


def test_silence_past_the_heartbeat_timeout_is_offline_then_online(rig):
    sim, reader, events = rig("--cards", "QH,7D", heartbeat_timeout_ms=400)
    sim.send("silence 1200")
    sim.send("deal")
    sim.expect("held card QH")
    offline = events.wait_for(shoe("offline"))
    assert "no message from the shoe for" in offline.detail
    assert reader.health()["state"] == "offline"
    events.wait_for(card("QH"))  # sent when the silence ends
    kinds = [getattr(e, "event", "card") for e in events.drain()]
    assert kinds == ["online", "offline", "online", "card"]
    assert reader.health()["errors"] == {"heartbeat_timeout": 1}


def test_hang_up_and_reopen_reconnects_with_backoff_and_tells_both_ways(rig, tmp_path):
    link = tmp_path / "shoe"
    draws = []

    def rng() -> float:
        draws.append(1)
        return 0.0

    sim, reader, events = rig(
        "--cards",
        "QH,7D,AS",
        "--link",
        str(link),
        url=str(link),
        rng=rng,
        reconnect_min_ms=100,
        reconnect_max_ms=400,
    )
    assert os.readlink(link) == sim.path
    sim.send("hangup 600")
    sim.send("deal")  # drawn while unplugged: lost on the way
    lost_seq = sim.expect("lost card QH").split()[4]
    offline = events.wait_for(shoe("offline"))
    assert offline.detail.startswith("port error")
    new_pty = sim.expect("reopened ").split()[1]
    assert os.readlink(link) == new_pty  # the kernel may hand out the same number again
    events.wait_for(shoe("online"), timeout=WAIT_S)
    alarm = events.wait_for(shoe("missed_frames"))
    assert alarm.detail == f"missing frame {lost_seq}"
    sim.send("deal")
    events.wait_for(card("7D"))
    assert [getattr(e, "event", str(getattr(e, "card", ""))) for e in events.drain()] == [
        "online",
        "offline",
        "online",
        "missed_frames",
        "7D",
    ]
    health = reader.health()
    assert health["reconnects"] == 1 and health["connected"]
    assert health["errors"]["disconnect"] == 1
    # 600 ms closed, retries after 50, 100, 200, 200 ... ms: a few failed, none hammering
    assert 1 <= health["errors"]["open_failed"] <= 8
    assert len(draws) == health["errors"]["open_failed"] + 1


def test_a_shoe_missing_at_start_up_is_offline_and_retried_not_an_exception(tmp_path):
    events = Events()
    missing = tmp_path / "no-such-shoe"
    with ShoeReader(str(missing), events, reconnect_min_ms=50, reconnect_max_ms=50) as reader:
        offline = events.wait_for(shoe("offline"))
        assert str(missing) in offline.detail
        # retried every 50 ms: three failures come soon (polled: a busy machine may give
        # the reader thread little time)
        deadline = time.monotonic() + 10
        while reader.health()["errors"]["open_failed"] < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reader.health()["errors"]["open_failed"] >= 3
        assert reader.health()["connected"] is False
    reader.close()  # a second close is harmless


def test_a_second_reader_on_the_same_shoe_is_refused_and_the_first_keeps_every_card(rig):
    sim, _reader, events = rig("--cards", "QH,7D")
    other = Events()
    with ShoeReader(sim.path, other, reconnect_min_ms=100) as second:
        refused = other.wait_for(shoe("offline"))
        assert "another program is reading the shoe" in refused.detail
        sim.send("deal 2")
        events.wait_for(card("7D"))
        assert events.cards() == ["QH", "7D"]
        assert other.cards() == []
        assert second.health()["errors"]["open_failed"] >= 1


def test_backoff_doubles_to_its_ceiling_and_jitter_spreads_it_over_the_upper_half():
    assert doctest.testmod(drivers.shoe).failed == 0
    assert [backoff_ms(n, 200, 5000, 0.0) for n in range(7)] == [
        100,
        200,
        400,
        800,
        1600,
        2500,
        2500,
    ]
    assert [backoff_ms(n, 200, 5000, 0.999) for n in range(7)] == [
        199,
        399,
        799,
        1599,
        3198,
        4997,
        4997,
    ]
    assert backoff_ms(10_000, 200, 5000, 0.5) == 3750  # no overflow after a night unplugged


def test_a_url_pyserial_cannot_parse_is_a_clear_error():
    with pytest.raises(ShoeError, match=r"shoe URL 'tcp://shoe:4000'.*socket://HOST:PORT"):
        ShoeReader("tcp://shoe:4000", Events())


def test_the_simulator_refuses_bad_commands_with_what_to_do():
    sim = Sim("--cards", "QH")
    try:
        sim.send("dael 2")
        assert "unknown command 'dael'" in sim.expect("error:")
        sim.send("deal 2")
        sim.expect("sent card QH")
        assert "the shoe is empty: send shuffle or new-shoe" in sim.expect("error:")
        sim.send("door ajar")
        assert "door takes open or closed" in sim.expect("error:")
    finally:
        sim.close()
    bad = subprocess.run(
        [sys.executable, "-m", "drivers.shoe_sim", "--cards", "QH,ZZ"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
    )
    assert bad.returncode == 2 and "--cards: unknown card 'ZZ'" in bad.stderr


def test_shoe_watch_prints_one_json_line_per_event_and_per_error():
    sim = Sim("--cards", "QH,7D")
    try:
        watch = subprocess.Popen(
            [sys.executable, "-m", "controller", "shoe-watch", sim.path, "--count", "3"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert watch.stdout is not None
        first = json.loads(watch.stdout.readline())
        assert first["type"] == "shoe" and first["event"] == "online"
        sim.send("bad-checksum")
        sim.send("cut")
        sim.send("deal 2")
        out, err = watch.communicate(timeout=10)
    finally:
        sim.close()
    assert watch.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    errors = [line for line in lines if line["type"] == "error"]
    events = [line for line in lines if line["type"] != "error"]
    assert [e["card"] for e in events if e["type"] == "card"] == ["QH"]
    assert events[0]["type"] == "shoe" and events[0]["event"] == "missed_frames"
    assert [e["error"] for e in errors] == ["bad_checksum"]


def test_a_card_reaches_the_sink_before_the_bookkeeping_and_an_alarm_after_its_count():
    """The sink runs on the reader's thread: a clean frame's card is handed over before the
    health's bookkeeping (off the dealer prompt's path: the health still shows the frame
    before it), a frame with a problem is counted before its alarm is handed over."""
    sim = Sim("--cards", "QH,7D,AS")
    heard: list[tuple[Event, dict]] = []
    holder: list[ShoeReader] = []
    online = threading.Event()

    def sink(event: Event) -> None:
        if holder:
            heard.append((event, holder[0].health()))
        if isinstance(event, ShoeEvent) and event.event == "online":
            online.set()

    reader = ShoeReader(sim.path, sink, heartbeat_timeout_ms=600)
    holder.append(reader)
    try:
        assert online.wait(WAIT_S)
        sim.send("deal")
        qh_seq = sim.expect("sent card QH").split()[4]
        sim.send("drop")
        sim.send("deal 2")
        sim.expect("sent card AS")
        deadline = time.monotonic() + WAIT_S
        while not any(isinstance(e, CardDrawn) and str(e.card) == "AS" for e, _ in heard):
            assert time.monotonic() < deadline, heard
            time.sleep(0.01)
    finally:
        reader.close()
        sim.close()
    qh = next(h for e, h in heard if isinstance(e, CardDrawn) and str(e.card) == "QH")
    assert qh["last_seq"] != qh_seq  # QH was heard before its frame was booked
    assert reader.health()["last_seq"] != qh["last_seq"]
    alarm = next(h for e, h in heard if isinstance(e, ShoeEvent) and e.event == "missed_frames")
    assert alarm["errors"].get("missed_frames") == 1  # counted before it was heard
