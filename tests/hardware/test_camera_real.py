"""The camera reader on the table's real camera. Skipped unless ``CAMERA_SOURCE`` names it::

    CAMERA_SOURCE=/dev/video0 .venv/bin/python -m pytest -q -s tests/hardware/test_camera_real.py

``CAMERA_SOURCE`` takes what the table config takes: a device index or path, a stream
URL (``tcp://``, ``rtsp://``), or a folder of images. Without more variables the test
checks the camera delivers frames at a usable rate with no card in view (nothing must
be read). ``CAMERA_CARDS=QH,7D`` then asks a technician to pass those cards under the
camera, one at a time, and checks each is read exactly once. ``CAMERA_MIN_FPS`` (default
15) is the frame rate the mounting needs. See tests/hardware/README.md, "Camera".
"""

from __future__ import annotations

import os
import queue
import time

import pytest

from controller.rules.cards import parse_cards
from controller.table.events import CardDrawn, Event
from drivers.camera import CameraReader

SOURCE = os.environ.get("CAMERA_SOURCE")
pytestmark = pytest.mark.skipif(not SOURCE, reason="set CAMERA_SOURCE to the camera to test")


@pytest.fixture
def reader():
    events: queue.Queue[Event] = queue.Queue()
    with CameraReader(SOURCE, events.put) as camera:
        yield camera, events


def test_the_camera_delivers_frames_and_reads_nothing_on_an_empty_layout(reader):
    camera, events = reader
    input("\nClear the area under the camera, then press Enter ")
    time.sleep(5.0)
    health = camera.health()
    minimum = float(os.environ.get("CAMERA_MIN_FPS", "15"))
    assert health["frames"] > 0, f"no frame from {SOURCE}: {health}"
    assert health["fps"] is not None and health["fps"] >= minimum, (
        f"{health['fps']} frames/s is below the {minimum} the mounting needs: {health}"
    )
    assert events.empty(), f"a card was read on an empty layout: {events.get()}"


@pytest.mark.skipif(not os.environ.get("CAMERA_CARDS"), reason="set CAMERA_CARDS=QH,7D,...")
def test_each_card_passed_under_the_camera_is_read_once(reader):
    _, events = reader
    for card in parse_cards(os.environ["CAMERA_CARDS"].split(",")):
        input(f"\nPass {card} under the camera once, then press Enter ")
        time.sleep(1.0)
        seen = []
        while not events.empty():
            seen.append(events.get())
        cards = [e.card for e in seen if isinstance(e, CardDrawn)]
        assert cards == [card], f"passing {card} read {[str(c) for c in cards]}"
