"""The camera reader, on generated frames of cards on the felt.

Every frame is drawn here: a 640x480 felt with its printed layout (betting
circles, "BLACKJACK PAYS 3 TO 2"), a card face carrying a QR code (segno's
matrix) or a Code128 barcode (python-barcode's module pattern) inside its white
quiet zone, rotated, then blurred (defocus, motion) and given sensor noise. The
codes are as large as ``hardware/camera.md`` asks a mounted camera to see them:
QR at 5 px per module, Code128 at 3 px per narrow bar and 150 px tall.
``bench/camera_decode.py`` draws its frames with the same functions.

What a dealer relies on: every card passing under the camera is read once (not
once per frame, and again when it comes back), whatever its angle; an empty
table, the layout or a stray barcode is never a card.
"""

from __future__ import annotations

import doctest
import json
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
import segno
from barcode import Code128
from pyzbar import pyzbar

import drivers.camera
from controller.table.events import CardDrawn
from drivers.camera import (
    CameraError,
    CameraReader,
    CardDecoder,
    ImageReplaySource,
    PassTracker,
    open_source,
)

FRAME_SIZE = (640, 480)
FELT_BGR = (40, 100, 30)
CENTRE = (330, 260)


# --- drawing frames ------------------------------------------------------------------


def qr_code(text: str, module: int = 5) -> np.ndarray:
    """A QR code of ``text`` (grayscale), ``module`` px per module, 4-module white quiet zone."""
    matrix = np.array(list(segno.make(text, error="m", micro=False).matrix), dtype=np.uint8)
    image = np.where(matrix > 0, 0, 255).astype(np.uint8)
    image = np.kron(image, np.ones((module, module), np.uint8))
    return np.pad(image, 4 * module, constant_values=255)


def code128(text: str, module: int = 3, height: int = 150) -> np.ndarray:
    """A Code128 barcode of ``text`` (grayscale), ``module`` px per narrow bar, with a
    10-module white quiet zone all round."""
    pattern = Code128(text).build()[0]
    row = np.repeat(np.array([0 if bit == "1" else 255 for bit in pattern], np.uint8), module)
    return np.pad(np.tile(row, (height, 1)), 10 * module, constant_values=255)


def felt() -> np.ndarray:
    """The empty table as the camera sees it: green felt with the printed layout."""
    width, height = FRAME_SIZE
    frame = np.empty((height, width, 3), np.uint8)
    frame[:] = FELT_BGR
    for spot in range(5):
        cv2.ellipse(frame, (80 + spot * 120, 380), (40, 40), 0, 0, 360, (200, 200, 190), 2)
    font = cv2.FONT_HERSHEY_SIMPLEX
    cv2.putText(frame, "BLACKJACK PAYS 3 TO 2", (120, 60), font, 1.0, (60, 190, 230), 2)
    cv2.putText(frame, "INSURANCE PAYS 2 TO 1", (150, 110), font, 0.8, (220, 220, 220), 2)
    return frame


def table_frame(
    *cards: tuple[np.ndarray, tuple[int, int], float],
    dim: float = 1.0,
    shadow: float = 1.0,
    falloff: float = 1.0,
    blur: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
) -> np.ndarray:
    """A BGR frame of the felt with each ``(code, centre, angle in degrees)`` laid on it.

    Then the light: all of it times ``dim``, the left of the frame's centre line
    (half the card) times ``shadow`` (a hand over it), a linear fall-off to ``falloff``
    at the left edge; then the lens, a Gaussian blur of sigma ``blur`` px; then the
    sensor, Gaussian noise of sigma ``noise`` levels.
    """
    frame = felt()
    for code, (x, y), angle in cards:
        face = cv2.cvtColor(code, cv2.COLOR_GRAY2BGR) if code.ndim == 2 else code
        height, width = face.shape[:2]
        warp = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1.0)
        warp[0, 2] += x - width / 2
        warp[1, 2] += y - height / 2
        cv2.warpAffine(
            face, warp, FRAME_SIZE, dst=frame, borderMode=cv2.BORDER_TRANSPARENT
        )  # draws the card only, over the felt
    if (dim, shadow, falloff) != (1.0, 1.0, 1.0):
        light = dim * np.linspace(falloff, 1.0, FRAME_SIZE[0], dtype=np.float32)
        light[: CENTRE[0]] *= shadow
        frame = (frame * light[None, :, None]).astype(np.uint8)
    if blur:
        frame = cv2.GaussianBlur(frame, (0, 0), blur)
    if noise:
        grain = np.random.default_rng(seed).standard_normal(frame.shape, dtype=np.float32)
        frame = np.clip(frame + noise * grain, 0, 255).astype(np.uint8)
    return frame


def card_frame(text: str, symbology: str = "qr", angle: float = 0.0, **look) -> np.ndarray:
    code = qr_code(text) if symbology == "qr" else code128(text)
    return table_frame((code, CENTRE, angle), **look)


def read(frame: np.ndarray, decoder: CardDecoder | None = None) -> list[str]:
    return [str(card) for card in (decoder or CardDecoder()).decode(frame).cards]


# --- decoding one frame ----------------------------------------------------------------

LOOKS = {
    "sharp": {},
    "defocused": {"blur": 1.2},
    "noisy": {"noise": 12.0},
    "in uneven light": {"falloff": 0.45, "noise": 4.0},
}
HARD_LOOKS = {
    "out of focus": {"blur": 1.6},
    "blurred and noisy": {"blur": 1.0, "noise": 8.0},
    "half in shadow": {"shadow": 0.5, "noise": 5.0},
    "dim": {"dim": 0.45, "blur": 1.0, "noise": 4.0},
}
ANGLES = [0, 10, 20, 30, -25]


@pytest.mark.parametrize("look", LOOKS)
@pytest.mark.parametrize("angle", ANGLES)
@pytest.mark.parametrize("symbology", ["qr", "code128"])
def test_a_card_is_read_in_one_frame_at_any_angle(symbology, angle, look):
    for text in ("QH", "10D", "AS"):
        frame = card_frame(text, symbology, angle, seed=angle % 7, **LOOKS[look])
        assert read(frame) == [text], f"{text} as {symbology} at {angle} degrees, {look}"


@pytest.mark.parametrize("look", HARD_LOOKS)
@pytest.mark.parametrize("angle", ANGLES)
@pytest.mark.parametrize("symbology", ["qr", "code128"])
def test_a_card_sliding_past_in_poor_conditions_is_one_card(symbology, angle, look):
    # a frame here and there may be lost; over the 4 frames of a card sliding by it is read
    text = ("QH", "10D", "AS", "7C", "KD")[ANGLES.index(angle)]
    code = qr_code(text) if symbology == "qr" else code128(text)
    frames = [
        table_frame((code, (280 + 30 * i, 250), angle + 3 * i), seed=i, **HARD_LOOKS[look])
        for i in range(4)
    ]
    sink, _ = run_reader(FrameList(frames))
    assert sink.cards == [text]


def test_each_pass_reads_what_the_other_misses():
    half, adaptive = CardDecoder(["half"]), CardDecoder(["adaptive"])
    # dim and out of focus: too little contrast for the adaptive threshold
    faint = card_frame("QH", "qr", 15, dim=0.35, blur=2.0)
    assert (read(faint, half), read(faint, adaptive)) == (["QH"], [])
    # half the card in shadow: the half-size pass loses it, a local threshold does not
    shaded = card_frame("QH", "qr", 20, shadow=0.5, noise=5.0)
    assert (read(shaded, half), read(shaded, adaptive)) == ([], ["QH"])
    assert read(faint) == read(shaded) == ["QH"]


def test_the_frame_is_read_in_grayscale_not_one_channel():
    # blue ink on a white card: the blue channel (all pyzbar reads of a colour image) is blank
    code = cv2.cvtColor(qr_code("KS"), cv2.COLOR_GRAY2BGR)
    code[np.all(code == 0, axis=2)] = (255, 0, 0)
    frame = table_frame((code, CENTRE, 15))
    assert pyzbar.decode(frame) == []  # pyzbar given colour reads the blue channel only
    assert read(frame) == ["KS"]


@pytest.mark.parametrize(
    "frame",
    [
        felt(),
        table_frame(noise=12.0, seed=3),
        table_frame(blur=1.5, noise=8.0, seed=4),
        table_frame((np.full((220, 160), 255, np.uint8), CENTRE, 20)),  # a card face down
        np.zeros((480, 640, 3), np.uint8),
    ],
    ids=["felt", "noisy felt", "blurred noisy felt", "blank card", "black"],
)
def test_a_frame_without_a_card_reads_nothing(frame):
    reading = CardDecoder().decode(frame)
    assert reading.cards == () and reading.other == ()


def test_two_cards_in_view_are_both_read():
    frame = table_frame((qr_code("QH"), (170, 250), 10), (code128("7D"), (470, 250), -20))
    assert sorted(read(frame)) == ["7D", "QH"]


def test_a_card_carrying_both_codes_is_one_card():
    frame = table_frame((qr_code("9S"), (170, 250), 5), (code128("9S"), (470, 250), 5))
    assert read(frame) == ["9S"]


def test_ten_may_be_written_t_and_is_the_same_card():
    assert read(card_frame("TD", "code128", 10)) == ["10D"]


@pytest.mark.parametrize("text", ["HELLO", "QX", "1H", "https://example.com"])
def test_a_barcode_that_is_not_a_card_is_never_a_card(text):
    reading = CardDecoder().decode(card_frame(text, "qr", 10))
    assert reading.cards == ()
    assert reading.other == (text,)


# --- one event per card passing ----------------------------------------------------------


def test_a_card_in_view_for_five_frames_is_one_pass_and_again_after_it_left():
    tracker = PassTracker(forget_after_frames=3)
    frames = [["QH"]] * 5 + [[]] * 3 + [["QH"]] * 2
    arrivals = [tracker.update(seen, now_ms=33 * i) for i, seen in enumerate(frames)]
    assert [i for i, arrived in enumerate(arrivals) if arrived] == [0, 8]


def test_a_card_lost_for_fewer_frames_than_configured_is_still_one_pass():
    tracker = PassTracker(forget_after_frames=3)
    frames = [["QH"], [], [], ["QH"], [], ["QH"]]  # motion blur loses it now and then
    assert sum(len(tracker.update(seen, 0)) for seen in frames) == 1


def test_absence_may_also_be_required_in_milliseconds():
    tracker = PassTracker(forget_after_frames=1, forget_after_ms=200)
    assert tracker.update(["QH"], 0) == ["QH"]
    assert tracker.update([], 100) == []
    assert tracker.update(["QH"], 150) == []  # back within 200 ms: the same pass
    assert tracker.update([], 300) == []
    assert tracker.update([], 350) == []  # gone for 200 ms: forgotten
    assert tracker.update(["QH"], 400) == ["QH"]


def test_different_cards_overlapping_in_view_each_count_once():
    tracker = PassTracker(forget_after_frames=2)
    frames = [["QH"], ["QH", "7D"], ["7D", "QH"], ["7D"], [], [], ["7D"]]
    arrivals = [tracker.update(seen, 0) for seen in frames]
    assert arrivals == [["QH"], ["7D"], [], [], [], [], ["7D"]]


# --- the reader end to end, on image files --------------------------------------------------


class Sink:
    """Collects the reader's events, as the runtime's queue would."""

    def __init__(self):
        self.events: list[CardDrawn] = []

    def __call__(self, event):
        self.events.append(event)

    @property
    def cards(self) -> list[str]:
        return [str(event.card) for event in self.events]


def write_frames(folder: Path, frames: list[np.ndarray]) -> Path:
    folder.mkdir(exist_ok=True)
    for i, frame in enumerate(frames):
        assert cv2.imwrite(str(folder / f"frame{i:04d}.png"), frame)
    return folder


class FrameList:
    """Frames held in memory, replayed once: an image replay without the files."""

    live = False
    spec = "frames in memory"

    def __init__(self, frames):
        self.frames = list(frames)

    def read(self):
        return self.frames.pop(0) if self.frames else None

    def reopen(self):
        return False

    def close(self):
        self.frames = []


def run_reader(source, **options) -> tuple[Sink, dict]:
    sink = Sink()
    ticks = iter(range(10_000, 10**9, 33))
    lock = threading.Lock()

    def clock() -> int:
        with lock:
            return next(ticks)

    with CameraReader(source, sink, clock, **options) as reader:
        assert reader.wait(timeout=30), "the replay did not end"
        health = reader.health()
    return sink, health


def test_reader_replays_a_deal_from_image_files(tmp_path):
    empty = felt()
    qh = [
        card_frame("QH", "qr", angle, blur=0.8, noise=6.0, seed=i)
        for i, angle in enumerate((0, 8, 16, 24, 30))
    ]
    seven = card_frame("7D", "code128", -15, noise=6.0)
    frames = [empty, *qh, empty, empty, empty, seven, seven, empty, empty, empty, qh[2]]
    folder = write_frames(tmp_path / "frames", frames)

    sink, health = run_reader(str(folder), forget_after_frames=3)

    assert sink.cards == ["QH", "7D", "QH"]  # the queen in view 5 frames is one card
    assert all(event.source == "camera" for event in sink.events)
    times = [event.t for event in sink.events]
    assert times == sorted(times) and times[0] >= 10_000  # stamped by the injected clock
    assert health["frames"] == len(frames)
    assert health["cards"] == 3 and health["decoded"] == 8
    assert health["last_message_age_ms"] >= 0
    assert "QH" not in json.dumps(health)  # health is shown on pages: never a card (hole card)
    assert health["errors"] == {}
    assert health["state"] == "ended" and health["connected"] is False
    assert health["source"] == str(folder)


def test_reader_counts_a_stray_barcode_and_a_broken_file_but_sends_no_card(tmp_path):
    folder = write_frames(tmp_path / "frames", [card_frame("LOT 42", "code128")] * 3)
    (folder / "frame0001.png").write_text("not an image")  # 2 frames and a broken file
    sink, health = run_reader(str(folder / "*.png"))
    assert sink.events == []
    assert health["errors"] == {"not_a_card": 1, "bad_frame": 1}
    assert health["last_not_a_card"] == "LOT 42"
    assert health["frames"] == 2


def test_a_card_left_under_a_looping_camera_is_one_card_until_closed(tmp_path):
    folder = write_frames(tmp_path / "frames", [card_frame("AS", "qr", 12)])
    sink = Sink()
    reader = CameraReader(open_source(folder, loop=True), sink)
    while reader.health()["frames"] < 20:
        assert not reader.wait(timeout=0.01), "a looping replay must not end"
    reader.close()
    reader.close()  # twice is fine
    assert reader.wait(timeout=0)
    assert sink.cards == ["AS"]
    assert reader.health()["state"] == "closed"


def test_reader_reads_a_video_file(tmp_path):
    path = tmp_path / "deal.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, FRAME_SIZE)
    assert writer.isOpened()
    for frame in [felt()] * 2 + [card_frame("JC", "code128", 10)] * 4 + [felt()] * 6:
        writer.write(frame)
    writer.write(card_frame("JC", "qr", -10))
    writer.release()
    sink, health = run_reader(str(path), forget_after_frames=5)
    assert sink.cards == ["JC", "JC"]
    assert health["frames"] == 13


class UnpluggedOnce:
    """A live camera (real frames) that stops once, as when its cable is pulled and put back."""

    live = True
    spec = "0"

    def __init__(self, frames):
        self.frames = list(frames)
        self.unplugged = False
        self.reopened = 0
        self.closed = False

    def read(self):
        if len(self.frames) == 3 and not self.unplugged:
            self.unplugged = True
            return None
        return self.frames.pop(0) if self.frames else None

    def reopen(self):
        self.reopened += 1
        return bool(self.frames)

    def close(self):
        self.closed = True


def test_a_live_camera_that_stops_is_reopened_and_keeps_reading():
    frames = [card_frame("2H", "qr")] * 3 + [card_frame("3H", "qr")] * 3
    camera = UnpluggedOnce(frames)
    sink = Sink()
    with CameraReader(camera, sink, reopen_delays_s=[0.01]) as reader:
        # after its last frame the camera stays away: the reader keeps trying
        while reader.health()["errors"].get("reopen_failed", 0) < 2:
            assert not reader.wait(timeout=0.01), "a live camera is retried, never given up"
        health = reader.health()
    assert sink.cards == ["2H", "3H"]
    assert health["frames"] == 6
    assert health["errors"]["read_failed"] == 2  # the pull, then the end of its frames
    assert health["state"] == "reconnecting" and health["connected"] is False
    assert reader.health()["state"] == "closed" and camera.closed


def test_a_sink_that_fails_does_not_stop_the_camera(tmp_path):
    folder = write_frames(tmp_path / "f", [card_frame("4S", "qr"), felt(), card_frame("5S", "qr")])
    seen = []

    def sink(event):
        seen.append(str(event.card))
        raise RuntimeError("queue full")

    with CameraReader(str(folder), sink, forget_after_frames=1) as reader:
        assert reader.wait(timeout=30)
        assert reader.health()["errors"] == {"sink_error": 2}
    assert seen == ["4S", "5S"]


# --- opening sources --------------------------------------------------------------------


def test_sources_that_cannot_open_say_what_to_check(tmp_path):
    with pytest.raises(CameraError, match=r"'/no/such/frames'.*device index.*stream URL"):
        open_source("/no/such/frames")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CameraError, match="no image files"):
        open_source(tmp_path / "empty")
    with pytest.raises(CameraError, match="matches no files"):
        open_source(str(tmp_path / "*.png"))
    (tmp_path / "notes.mp4").write_text("not a video")
    with pytest.raises(CameraError, match=r"notes\.mp4.*FFmpeg"):
        open_source(tmp_path / "notes.mp4")
    with pytest.raises(CameraError, match=r"'/dev/video97'.*plugged in"):
        open_source("/dev/video97")
    with pytest.raises(CameraError, match="decoding passes"):
        CardDecoder(["sharpen"])


def test_a_folder_replays_in_name_order(tmp_path):
    write_frames(tmp_path, [felt(), card_frame("QH")])
    source = open_source(tmp_path)
    assert isinstance(source, ImageReplaySource)
    assert [p.name for p in source.paths] == ["frame0000.png", "frame0001.png"]
    assert source.read().shape == (480, 640, 3)


def test_doctests():
    assert doctest.testmod(drivers.camera, optionflags=doctest.ELLIPSIS).failed == 0


def test_camera_watch_prints_each_card_once_as_json(tmp_path):
    """The technician's tool: one JSON line per card passing, health on stderr."""
    from conftest import run_cli

    frames = [felt()] * 2 + [card_frame("QH")] * 4 + [felt()] * 6 + [card_frame("7D")] * 3
    folder = write_frames(tmp_path / "frames", frames)
    done = run_cli("camera-watch", str(folder))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(line["type"], line["card"], line["source"]) for line in lines] == [
        ("card", "QH", "camera"),
        ("card", "7D", "camera"),
    ]
    health = json.loads(done.stderr.strip().splitlines()[-1])
    assert health["type"] == "health" and health["frames"] == len(frames)
