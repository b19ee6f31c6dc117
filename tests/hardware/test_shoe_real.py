"""The shoe reader on a real card-reading shoe. Skipped unless ``SHOE_URL`` names its port::

    SHOE_URL=/dev/serial/by-id/usb-ACME_Shoe_1234-if00 .venv/bin/python -m pytest -q -s \\
        tests/hardware/test_shoe_real.py

Without more variables only the link is checked (the shoe comes online by its
heartbeat and ten seconds pass without a bad frame). The rest needs a technician at
the shoe, prompted on the terminal (run with ``-s``):

- ``SHOE_CARDS=QH,7D,AS``: draw these cards, in this order, when asked;
- ``SHOE_DOOR=1``: open and close the shoe's door when asked;
- ``SHOE_REPLUG=1``: unplug the shoe's cable and plug it back in when asked.

``SHOE_HEARTBEAT_TIMEOUT_MS`` (default 3000) and ``SHOE_BAUD`` (default 115200)
match the reader to the shoe. With ``shoe-sim --link /tmp/shoe`` running and
``SHOE_URL=/tmp/shoe`` the suite checks itself on a PC (type the sim's commands
when prompted). See tests/hardware/README.md, section "Card-reading shoe".
"""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Callable

import pytest

from controller.rules.cards import parse_cards
from controller.table.events import CardDrawn, Event, ShoeEvent
from drivers.shoe import ShoeReader

URL = os.environ.get("SHOE_URL")
TIMEOUT_MS = int(os.environ.get("SHOE_HEARTBEAT_TIMEOUT_MS", "3000"))
BAUD = int(os.environ.get("SHOE_BAUD", "115200"))
CLEAN_S = 10
HUMAN_S = 60

pytestmark = [
    pytest.mark.hardware,
    pytest.mark.skipif(not URL, reason="set SHOE_URL to the shoe's port (/dev/serial/by-id/...)"),
]

LINK_ERRORS = ("garbage_bytes", "bad_checksum", "missed_frames", "bad_message", "duplicate")


class Events:
    def __init__(self) -> None:
        self.queue: queue.Queue[Event] = queue.Queue()
        self.seen: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.queue.put(event)

    def wait_for(self, match: Callable[[Event], bool], timeout: float, what: str) -> Event:
        end = time.monotonic() + timeout
        while True:
            try:
                event = self.queue.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"{what}: nothing in {timeout:.0f} s; saw {self.seen}"
                ) from None
            self.seen.append(event)
            if match(event):
                return event


def shoe(kind: str):
    return lambda e: isinstance(e, ShoeEvent) and e.event == kind


@pytest.fixture
def say(capsys):
    def tell(text: str) -> None:
        with capsys.disabled():
            print(f"\n>>> {text}", flush=True)

    return tell


@pytest.fixture
def online():
    """A reader on SHOE_URL, once the shoe has said something."""
    events = Events()
    reader = ShoeReader(URL, events, heartbeat_timeout_ms=TIMEOUT_MS, baudrate=BAUD)
    try:
        events.wait_for(shoe("online"), TIMEOUT_MS / 1000 + 2, "the shoe never came online")
        yield reader, events
    finally:
        reader.close()


def test_real_shoe_comes_online_and_its_link_stays_clean(online):
    reader, events = online
    time.sleep(CLEAN_S)
    health = reader.health()
    bad = {k: v for k, v in health["errors"].items() if k in LINK_ERRORS}
    assert bad == {}, f"errors on the link in {CLEAN_S} s: {bad} (cable, baud rate, grounding?)"
    assert health["connected"] and health["state"] == "online"
    assert health["last_message_age_ms"] < TIMEOUT_MS, "no heartbeat: is the shoe's firmware on?"
    drained = []
    while not events.queue.empty():
        drained.append(events.queue.get())
    assert not [e for e in drained if isinstance(e, ShoeEvent) and e.event == "offline"]


@pytest.mark.skipif(not os.environ.get("SHOE_CARDS"), reason="set SHOE_CARDS=QH,7D,... to deal")
def test_real_shoe_reads_every_card_drawn(online, say):
    reader, events = online
    expected = parse_cards(os.environ["SHOE_CARDS"])
    say(f"Draw these cards from the shoe, in order: {', '.join(map(str, expected))}")
    got = []
    for want in expected:
        event = events.wait_for(
            lambda e: isinstance(e, CardDrawn), HUMAN_S, f"waiting for {want} to be drawn"
        )
        got.append(event.card)
        say(f"read {event.card}")
    assert got == list(expected)
    assert not [e for e in events.seen if shoe("missed_frames")(e)]
    assert reader.health()["errors"].get("bad_checksum", 0) == 0


@pytest.mark.skipif(not os.environ.get("SHOE_DOOR"), reason="set SHOE_DOOR=1 to test the door")
def test_real_shoe_reports_its_door(online, say):
    _reader, events = online
    say("Open the shoe's door")
    events.wait_for(shoe("door_open"), HUMAN_S, "door open")
    say("Close the shoe's door")
    events.wait_for(shoe("door_closed"), HUMAN_S, "door closed")


@pytest.mark.skipif(not os.environ.get("SHOE_REPLUG"), reason="set SHOE_REPLUG=1 to test replug")
def test_real_shoe_unplugged_is_offline_and_replugged_is_online(online, say):
    reader, events = online
    say("Unplug the shoe's cable now")
    offline = events.wait_for(shoe("offline"), HUMAN_S, "offline after unplugging")
    say(f"Offline ({offline.detail}). Plug the cable back in")
    events.wait_for(shoe("online"), HUMAN_S, "online after plugging back in")
    assert reader.health()["connected"]
