"""Camera decodes per second on 640x480 frames, on one core.

Run from the repository root: ``.venv/bin/python bench/camera_decode.py``. Not a test.
Needs the test extras (segno, python-barcode): the frames are drawn by the
functions of ``tests/test_camera.py``.

It draws ``--frames`` frames with a card (QR and Code128 in turn, a random card,
angle within +-30 degrees, blur up to 1.2 px, sensor noise up to 8 levels, a third
of them in uneven light) and as many frames of the empty table (felt and layout,
the same noise and light).

Pinned to one CPU with OpenCV on one thread, it times each decoding pass alone
(what every pass costs and the share of card frames it reads alone), then
:meth:`drivers.camera.CardDecoder.decode` with the passes used (grayscale
conversion included) ``--repeat`` times over each set, and reports the best.
Every frame decoded is checked: an empty frame that reads a card, or a card frame
that reads a wrong card, exits with status 1. ``read_pct`` is the share of card
frames read (a card passing under the camera is in view for several frames, so a
frame missed now and then loses nothing).

The last line is ``key=value`` pairs: ``fps=... empty_fps=... frames=... read_pct=...
passes=...``. The goal is ``fps`` and ``empty_fps`` of 60 or more.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import cv2  # noqa: E402
import numpy as np  # noqa: E402
from test_camera import code128, qr_code, table_frame  # noqa: E402

from drivers.camera import DEFAULT_PASSES, PASSES, CardDecoder  # noqa: E402

CARDS = [rank + suit for rank in ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
         for suit in "CDHS"]  # fmt: skip


def draw_frames(count: int, seed: int) -> tuple[list[np.ndarray], list[str], list[np.ndarray]]:
    """``count`` card frames, the card each shows, and ``count`` empty frames."""
    rng = np.random.default_rng(seed)
    cards, texts, empty = [], [], []
    for i in range(count):
        text = str(rng.choice(CARDS))
        code = qr_code(text) if i % 2 == 0 else code128(text)
        look = {
            "blur": float(rng.uniform(0.0, 1.2)),
            "noise": float(rng.uniform(0.0, 8.0)),
            "falloff": float(rng.uniform(0.5, 0.8)) if i % 3 == 0 else 1.0,
            "seed": i,
        }
        centre = (int(rng.integers(260, 400)), int(rng.integers(220, 270)))
        cards.append(table_frame((code, centre, float(rng.uniform(-30, 30))), **look))
        texts.append(text)
        empty.append(table_frame(**look))
    return cards, texts, empty


def measure(decoder: CardDecoder, frames, texts=None) -> tuple[float, float]:
    """Decodes per second over ``frames``, and the percent of them that read their card
    (``texts``; None for empty frames). Exits 1 on a wrong card or a card on an empty
    table: those would be wrong events, not just misses."""
    read = 0
    started = time.perf_counter()
    for i, frame in enumerate(frames):
        seen = [str(card) for card in decoder.decode(frame).cards]
        expected = [] if texts is None else [texts[i]]
        if seen and seen != expected:
            kind = "empty frame" if texts is None else f"frame of {texts[i]}"
            sys.exit(f"{kind} {i} read {seen} with passes {'+'.join(decoder.passes)}")
        read += bool(seen)
    elapsed = time.perf_counter() - started
    return len(frames) / elapsed, 100.0 * read / len(frames)


def one_core() -> str:
    cv2.setNumThreads(1)
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"cpu {cpu}"
    return "one OpenCV thread (no CPU pinning on this OS)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=200, help="frames of each kind")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs of the passes used")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument(
        "--passes",
        default=",".join(DEFAULT_PASSES),
        help=f"decoding passes, comma-separated, from {','.join(PASSES)}",
    )
    args = parser.parse_args(argv)
    passes = [name.strip() for name in args.passes.split(",") if name.strip()]
    decoder = CardDecoder(passes)

    where = one_core()
    cards, texts, empty = draw_frames(args.frames, args.seed)
    print(f"{args.frames} card frames and {args.frames} empty frames, 640x480, on {where}")
    print(f"{'passes':<22}{'card fps':>10}{'empty fps':>11}{'card ms':>9}{'read %':>8}")
    for name in PASSES:
        alone = CardDecoder([name])
        fps, pct = measure(alone, cards, texts)
        empty_fps, _ = measure(alone, empty)
        print(f"{name:<22}{fps:>10.1f}{empty_fps:>11.1f}{1000 / fps:>9.2f}{pct:>8.1f}")
    runs = [measure(decoder, cards, texts) for _ in range(args.repeat)]
    fps, read_pct = max(runs)
    empty_fps = max(measure(decoder, empty)[0] for _ in range(args.repeat))
    label = "+".join(passes) + " (used)"
    print(f"{label:<22}{fps:>10.1f}{empty_fps:>11.1f}{1000 / fps:>9.2f}{read_pct:>8.1f}")
    print(
        f"fps={fps:.1f} empty_fps={empty_fps:.1f} frames={2 * args.frames} "
        f"read_pct={read_pct:.1f} passes={','.join(passes)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
