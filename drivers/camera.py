"""The camera reader: card barcodes seen by a camera, as ``CardDrawn(source="camera")``.

Each card carries its text (``QH``, ``10D``) as a QR code, a Code128 barcode or
both (``hardware/camera.md``). One thread reads frames, converts each to
grayscale, decodes QR and Code128 symbols with zbar (pyzbar) and hands one
:class:`~controller.table.events.CardDrawn` per card *passing* to the sink, not
one per frame. The reader only reads: comparing the camera with the shoe is the
table's business (``card_source = "both"``).

Frames come from :func:`open_source`:

- ``0`` or ``"0"`` (a device index) or ``/dev/video0``: a V4L2 camera;
- a video file, or a stream URL (``rtsp://``, ``http://``, ``https://``);
- a folder of images, a glob (``frames/*.png``) or one image file: replayed in
  name order, optionally looped. This stands in for the camera in tests and lets a
  technician replay frames saved in the field.

What the reader guarantees:

- a card read in consecutive frames is one event; the same card is eligible
  again only after it has been out of sight for ``forget_after_frames`` frames
  (and ``forget_after_ms``, when set). Two different cards in view each count;
- text that is not a card (another barcode, bytes that are not text) is counted
  in :meth:`CameraReader.health` as ``not_a_card``, once per appearance, never an
  event;
- a live camera that stops delivering frames is reopened with backoff; a file
  or image replay that ends stops the reader (``state: "ended"``).
"""

from __future__ import annotations

import glob
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import cv2
import numpy as np
from pyzbar import pyzbar

from controller.errors import CardError, TableControllerError
from controller.rules.cards import Card, parse_card
from controller.table.events import CardDrawn
from drivers.base import Clock, DriverHealth, EventSink, monotonic_ms

SYMBOLS = (pyzbar.ZBarSymbol.QRCODE, pyzbar.ZBarSymbol.CODE128)
"""The only symbologies decoded: fewer decoders enabled is fewer false reads."""

IMAGE_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm"}
)
STREAM_SCHEMES = ("rtsp://", "rtsps://", "http://", "https://", "udp://", "tcp://")
FRAME_SIZE = (640, 480)
"""What a camera is asked for; the decoding passes and the benchmark are tuned for it."""


class CameraError(TableControllerError, OSError):
    """A frame source that cannot be opened or read; the message names the source and
    what to check."""


class FrameError(CameraError):
    """One frame could not be read (an image file that is not an image); the reader
    counts it and goes on with the next."""


# --- frame sources -------------------------------------------------------------------


class FrameSource(Protocol):
    """Where frames come from: BGR (or grayscale) ``numpy`` arrays, one per :meth:`read`.

    ``live`` sources (a camera, a stream) are reopened when they stop; the others
    (a file, an image replay) end.
    """

    spec: str
    live: bool

    def read(self) -> np.ndarray | None:
        """The next frame, or None at the end (or when a live source stops)."""
        ...

    def reopen(self) -> bool:
        """Try to open a live source again; True when it is delivering again."""
        ...

    def close(self) -> None: ...


class CaptureSource:
    """A ``cv2.VideoCapture``: a camera by index or device path, a video file or a stream."""

    def __init__(self, target: int | str, spec: str, *, live: bool, size=FRAME_SIZE):
        self.spec = spec
        self.live = live
        self._target = target
        self._size = size
        self._capture: cv2.VideoCapture | None = None
        if not self._open():
            raise CameraError(f"camera source {spec!r}: could not open it; {_what_to_check(spec)}")

    def _open(self) -> bool:
        capture = cv2.VideoCapture(self._target)
        if not capture.isOpened():
            capture.release()
            return False
        if isinstance(self._target, int) or str(self._target).startswith("/dev/"):
            width, height = self._size
            capture.set(cv2.CAP_PROP_FRAME_WIDTH, width)
            capture.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
            capture.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # the newest frame, not a queue of old ones
        self._capture = capture
        return True

    def read(self) -> np.ndarray | None:
        if self._capture is None:
            return None
        try:
            ok, frame = self._capture.read()
        except cv2.error:  # a backend failing mid-stream: the same as a camera that stopped
            return None
        return frame if ok and frame is not None else None

    def reopen(self) -> bool:
        self.close()
        return self._open()

    def close(self) -> None:
        if self._capture is not None:
            self._capture.release()
            self._capture = None


class ImageReplaySource:
    """Image files replayed as frames, in the order given (``open_source`` sorts by name).

    With ``loop`` the replay starts again after the last file. An image file that
    cannot be decoded raises :class:`FrameError` for that frame only.
    """

    live = False

    def __init__(self, paths: Sequence[Path | str], spec: str, *, loop: bool = False):
        if not paths:
            raise CameraError(f"camera source {spec!r}: no image files in it")
        self.spec = spec
        self.paths = tuple(Path(p) for p in paths)
        self.loop = loop
        self._next = 0
        self._closed = False

    def read(self) -> np.ndarray | None:
        if self._closed:
            return None
        if self._next >= len(self.paths):
            if not self.loop:
                return None
            self._next = 0
        path = self.paths[self._next]
        self._next += 1
        frame = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if frame is None:
            raise FrameError(f"camera source {self.spec!r}: {path} is not an image OpenCV reads")
        return frame

    def reopen(self) -> bool:
        return False

    def close(self) -> None:
        self._closed = True


def open_source(
    spec: int | str | Path, *, loop: bool = False, size: tuple[int, int] = FRAME_SIZE
) -> FrameSource:
    """Open a frame source from configuration text (see the module docstring).

    >>> open_source("/no/such/place")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    drivers.camera.CameraError: camera source '/no/such/place': no such file, folder or device; ...
    """
    text = str(spec).strip()
    if isinstance(spec, int) or text.isdigit():
        return CaptureSource(int(text), text, live=True, size=size)
    if text.lower().startswith(STREAM_SCHEMES):
        return CaptureSource(text, text, live=True, size=size)
    path = Path(text).expanduser()
    if text.startswith("/dev/"):
        if not path.exists():
            raise CameraError(f"camera source {text!r}: no such device; {_what_to_check(text)}")
        return CaptureSource(text, text, live=True, size=size)
    if path.is_dir():
        images = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not images:
            suffixes = " ".join(sorted(IMAGE_SUFFIXES))
            raise CameraError(f"camera source {text!r}: no image files ({suffixes}) in the folder")
        return ImageReplaySource(images, text, loop=loop)
    if glob.has_magic(text):
        images = sorted(Path(p) for p in glob.glob(str(path)) if Path(p).is_file())
        if not images:
            raise CameraError(f"camera source {text!r}: the pattern matches no files")
        return ImageReplaySource(images, text, loop=loop)
    if path.is_file():
        if path.suffix.lower() in IMAGE_SUFFIXES:
            return ImageReplaySource([path], text, loop=loop)
        return CaptureSource(str(path), text, live=False, size=size)
    raise CameraError(
        f"camera source {text!r}: no such file, folder or device; expected a device index "
        "(0), /dev/videoN, a video file, a stream URL (rtsp://, http://), a folder of images "
        "or a glob such as frames/*.png"
    )


def _what_to_check(spec: str) -> str:
    if spec.isdigit() or spec.startswith("/dev/"):
        return (
            "check that the camera is plugged in (ls /dev/video*; v4l2-ctl --list-devices), "
            "that this user is in the 'video' group, and that no other program holds it"
        )
    if spec.lower().startswith(STREAM_SCHEMES):
        return "check the URL, that the camera answers on the network, and its user/password"
    return "check that it is a video file OpenCV's FFmpeg can read (mp4, avi, mkv)"


# --- decoding ------------------------------------------------------------------------

PASSES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "half": lambda gray: cv2.resize(gray, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA),
    "adaptive": lambda gray: cv2.adaptiveThreshold(
        gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY, 51, 25
    ),
    "smooth": lambda gray: cv2.GaussianBlur(gray, (3, 3), 0),
    "otsu": lambda gray: cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1],
    "full": lambda gray: gray,
}
"""Ways to prepare a grayscale frame for zbar; ``bench/camera_decode.py --passes`` times them.

``half``: shrunk by averaging 2x2 pixels, which halves the sensor noise zbar would
chase (the cheapest); ``adaptive``: full size, black where a pixel is 25 levels
darker than the mean of the 51x51 pixels round it, else white: bars stay black
under uneven light or shadow, plain felt and its noise turn white, which zbar
skips quickly. ``smooth`` (3x3 Gaussian), ``otsu`` (one global threshold, lost
in a shadow) and ``full`` (as captured, slow on a noisy frame) are there to try.
"""
DEFAULT_PASSES = ("half", "adaptive")


@dataclass(frozen=True, slots=True)
class Reading:
    """What one frame showed: the distinct ``cards`` read (in reading order) and the
    texts read that are not cards (``other``)."""

    cards: tuple[Card, ...]
    other: tuple[str, ...]


class CardDecoder:
    """Reads card barcodes in a frame: grayscale, then every one of ``passes``, the
    texts read by any pass put together.

    Every pass runs on every frame, even once a card is read: two cards may be in
    view and the second one read only by another pass. So a frame costs the same
    whatever it shows, and the frame rate does not drop when cards come.

    >>> CardDecoder().decode(np.full((480, 640, 3), 255, np.uint8))
    Reading(cards=(), other=())
    """

    def __init__(self, passes: Sequence[str] = DEFAULT_PASSES):
        unknown = [name for name in passes if name not in PASSES]
        if unknown or not passes:
            raise CameraError(
                f"decoding passes {list(passes)!r}: expected one or more of {sorted(PASSES)}"
            )
        self.passes = tuple(passes)
        self._prepare = tuple(PASSES[name] for name in self.passes)

    def decode(self, frame: np.ndarray) -> Reading:
        gray = to_gray(frame)
        cards: dict[Card, None] = {}
        other: dict[str, None] = {}
        for prepare in self._prepare:
            for symbol in pyzbar.decode(prepare(gray), symbols=SYMBOLS):
                text = symbol_text(symbol.data)
                try:
                    cards[parse_card(text)] = None
                except CardError:
                    other[text] = None
        return Reading(tuple(cards), tuple(other))


def to_gray(frame: np.ndarray) -> np.ndarray:
    """8-bit grayscale from a BGR, BGRA or grayscale frame (zbar reads one channel; given
    a colour image pyzbar would read only the blue one)."""
    if frame.dtype != np.uint8:
        frame = cv2.convertScaleAbs(frame, alpha=255.0 / max(1, int(frame.max())))
    if frame.ndim == 2:
        return frame
    if frame.ndim == 3 and frame.shape[2] == 1:
        return frame[:, :, 0]
    if frame.ndim == 3 and frame.shape[2] == 3:
        return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    if frame.ndim == 3 and frame.shape[2] == 4:
        return cv2.cvtColor(frame, cv2.COLOR_BGRA2GRAY)
    raise FrameError(f"a frame of shape {frame.shape} is not an image")


def symbol_text(data: bytes) -> str:
    """A symbol's bytes as text; bytes that are not UTF-8 as their repr (never a card)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return repr(data)


# --- one event per card passing --------------------------------------------------------


class PassTracker:
    """Turns what each frame shows into arrivals: a key seen in consecutive frames
    arrives once; it may arrive again only after it has been out of sight for
    ``forget_after_frames`` frames and, when set, ``forget_after_ms`` milliseconds.

    >>> tracker = PassTracker(forget_after_frames=2)
    >>> [tracker.update(seen, now_ms=0) for seen in (["QH"], ["QH", "7D"], [], ["QH"], [], [])]
    [['QH'], ['7D'], [], [], [], []]
    >>> tracker.update(["QH"], now_ms=0)
    ['QH']
    """

    def __init__(self, forget_after_frames: int = 5, forget_after_ms: int | None = None):
        if forget_after_frames < 1:
            raise CameraError(f"forget_after_frames={forget_after_frames}: must be 1 or more")
        if forget_after_ms is not None and forget_after_ms < 0:
            raise CameraError(f"forget_after_ms={forget_after_ms}: must be 0 or more")
        self.forget_after_frames = forget_after_frames
        self.forget_after_ms = forget_after_ms
        self._frame = 0
        self._last_seen: dict[str, tuple[int, int]] = {}  # key -> (frame number, ms)

    def update(self, seen: Iterable[str], now_ms: int) -> list[str]:
        """Keys that arrive with this frame (in the order seen)."""
        self._frame += 1
        arrived = []
        seen_now = set()
        for key in seen:
            if key in seen_now:
                continue
            seen_now.add(key)
            if key not in self._last_seen:
                arrived.append(key)
            self._last_seen[key] = (self._frame, now_ms)
        for key, (frame, ms) in list(self._last_seen.items()):
            if key in seen_now:
                continue
            gone_frames = self._frame - frame >= self.forget_after_frames
            gone_ms = self.forget_after_ms is None or now_ms - ms >= self.forget_after_ms
            if gone_frames and gone_ms:
                del self._last_seen[key]
        return arrived

    def in_view(self) -> list[str]:
        """Keys seen and not yet forgotten."""
        return sorted(self._last_seen)


# --- the reader ----------------------------------------------------------------------

RATE_WINDOW = 30
"""Frames over which ``fps`` and ``decode_ms`` are averaged."""
REOPEN_DELAYS_S = (0.5, 1.0, 2.0, 5.0)
"""Waits before each attempt to reopen a live camera (the last one repeats)."""


class CameraReader:
    """Reads cards from ``source`` on its own thread; events go to ``sink``.

    ``source`` is a :class:`FrameSource` or anything :func:`open_source` takes
    (opened now, so a camera that is not there fails at start-up); the reader owns
    it and releases it when it stops. ``clock`` stamps events (``t``) and measures
    ``fps``. ``health()`` shows ``frames`` read,
    ``decoded`` (frames where a card was read), ``cards`` (events), ``fps``,
    ``decode_ms``, the age of the last card read (``last_message_age_ms``; never the card
    itself: health is shown on pages, and the hole card must not be), and errors
    by kind: ``not_a_card``, ``bad_frame``, ``decode_error``, ``read_failed``
    (a live camera stopped), ``reopen_failed``, ``sink_error``.
    """

    def __init__(
        self,
        source: FrameSource | int | str | Path,
        sink: EventSink,
        clock: Clock = monotonic_ms,
        *,
        decoder: CardDecoder | None = None,
        forget_after_frames: int = 5,
        forget_after_ms: int | None = None,
        loop: bool = False,
        reopen_delays_s: Sequence[float] = REOPEN_DELAYS_S,
        name: str = "camera",
    ):
        self._tracker = PassTracker(forget_after_frames, forget_after_ms)
        self._others = PassTracker(forget_after_frames, forget_after_ms)
        if isinstance(source, (int, str, Path)):
            source = open_source(source, loop=loop)
        self._source = source
        self._sink = sink
        self._clock = clock
        self._decoder = decoder or CardDecoder()
        self._reopen_delays_s = tuple(reopen_delays_s) or (0.0,)
        self._health = DriverHealth(name, clock)
        self._health.set(
            connected=True,
            source=source.spec,
            state="running",
            frames=0,
            decoded=0,
            cards=0,
            fps=None,
            decode_ms=None,
        )
        self._frame_times: deque[int] = deque(maxlen=RATE_WINDOW)
        self._decode_s: deque[float] = deque(maxlen=RATE_WINDOW)
        self._counts = {"frames": 0, "decoded": 0, "cards": 0}
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"{name}-reader", daemon=True)
        self._thread.start()

    # -- public --

    def health(self) -> dict[str, Any]:
        return self._health.snapshot()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the reader to stop (a replay ended, or :meth:`close`); True if it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self, timeout: float = 2.0) -> None:
        """Stop the thread and release the camera; safe to call twice, and from the sink."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        # The thread releases the source itself when it leaves its loop: a capture must
        # not be released under a read that is still blocked in another thread.

    def __enter__(self) -> CameraReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the thread --

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    frame = self._source.read()
                except FrameError:
                    self._health.count("bad_frame")
                    continue
                if frame is None:
                    if not self._source.live or not self._reconnect():
                        break
                    continue
                self._frame(frame)
        finally:
            self._source.close()
            state = "closed" if self._stop.is_set() else "ended"
            self._health.set(connected=False, state=state)

    def _frame(self, frame: np.ndarray) -> None:
        started = time.perf_counter()
        try:
            reading = self._decoder.decode(frame)
        except (FrameError, cv2.error, pyzbar.PyZbarError):
            self._health.count("decode_error")
            reading = Reading((), ())
        self._decode_s.append(time.perf_counter() - started)
        now = self._clock()
        self._frame_times.append(now)
        self._counts["frames"] += 1
        if reading.cards:
            self._counts["decoded"] += 1
        texts = {str(card): card for card in reading.cards}
        for text in self._tracker.update(texts, now):
            self._emit(CardDrawn(texts[text], source="camera", t=now), text)
        for text in self._others.update(reading.other, now):
            self._health.count("not_a_card")
            self._health.set(last_not_a_card=text[:40])
        self._health.set(**self._counts, fps=self._fps(), decode_ms=self._decode_ms())

    def _emit(self, event: CardDrawn, text: str) -> None:
        self._counts["cards"] += 1
        self._health.message()  # the time only: never the card (it may be the hole card)
        try:
            self._sink(event)
        except Exception:  # the sink only enqueues; a failure must not stop the camera
            self._health.count("sink_error")

    def _reconnect(self) -> bool:
        """A live source stopped: reopen it with backoff until it delivers or we close."""
        self._health.count("read_failed")
        self._health.set(connected=False, state="reconnecting")
        attempt = 0
        while True:
            delay = self._reopen_delays_s[min(attempt, len(self._reopen_delays_s) - 1)]
            if self._stop.wait(delay):
                return False
            try:
                reopened = self._source.reopen()
            except CameraError:
                reopened = False
            if reopened:
                self._health.set(connected=True, state="running")
                return True
            self._health.count("reopen_failed")
            attempt += 1

    def _fps(self) -> float | None:
        times = self._frame_times
        span = times[-1] - times[0] if len(times) > 1 else 0
        return round((len(times) - 1) * 1000 / span, 1) if span > 0 else None

    def _decode_ms(self) -> float:
        return round(sum(self._decode_s) * 1000 / len(self._decode_s), 2)
