"""Shoe frame-to-event latency through a real pseudo-terminal.

Opens a raw pty as ``shoe-sim`` does, puts a :class:`drivers.shoe.ShoeReader` on
its slave side, writes card frames one at a time into the master and times each
from just before the write to the moment the reader hands the card event to its
sink (both ends on :func:`time.perf_counter_ns`, in this process). Frames are
spaced by ``--gap-ms`` so each is timed alone, as cards come out of a shoe.

    .venv/bin/python bench/shoe_latency.py [--frames 2000] [--gap-ms 2]

The last line is ``p50_ms=... p99_ms=... frames=...`` (plus the worst case); exit
1 if any card is lost, duplicated or out of order.
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.rules.cards import ALL_CARDS
from controller.table.events import CardDrawn, Event
from drivers.shoe import ShoeReader
from drivers.shoe_protocol import Message, encode_message
from drivers.shoe_sim import open_pty


def percentile(sorted_values: list[float], p: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2000, help="card frames to time")
    parser.add_argument("--gap-ms", type=float, default=2.0, help="pause between frames")
    args = parser.parse_args(argv)
    if args.frames < 1 or args.gap_ms < 0:
        parser.error("--frames must be >= 1 and --gap-ms >= 0")

    master, slave, path = open_pty()
    os.set_blocking(master, True)  # a burst (--gap-ms 0) waits for the reader, not lost
    arrived: queue.Queue[tuple[int, Event]] = queue.Queue()

    def sink(event: Event) -> None:
        arrived.put((time.perf_counter_ns(), event))

    frames = [
        encode_message(Message((i + 1) % 256, "card", card=ALL_CARDS[i % 52]))
        for i in range(args.frames)
    ]
    sent_at: list[int] = []
    latencies: list[float] = []
    cards: list[CardDrawn] = []
    with ShoeReader(path, sink, heartbeat_timeout_ms=60_000) as reader:
        time.sleep(0.2)  # the reader opens the port (and flushes it) before the first frame
        done = threading.Event()

        def collect() -> None:
            while len(cards) < args.frames:
                try:
                    t, event = arrived.get(timeout=5)
                except queue.Empty:
                    break
                if isinstance(event, CardDrawn):
                    latencies.append((t - sent_at[len(cards)]) / 1e6)
                    cards.append(event)
            done.set()

        collector = threading.Thread(target=collect)
        collector.start()
        for frame in frames:
            sent_at.append(time.perf_counter_ns())
            os.write(master, frame)
            if args.gap_ms:
                time.sleep(args.gap_ms / 1000)
        done.wait(timeout=10)
        collector.join()
        health = reader.health()
    os.close(master)
    os.close(slave)

    expected = [ALL_CARDS[i % 52] for i in range(args.frames)]
    if [e.card for e in cards] != expected:
        print(f"FAILED: {len(cards)} of {args.frames} cards arrived in order; health {health}")
        return 1
    latencies.sort()
    print(
        f"pty {path}, {args.frames} card frames, {args.gap_ms} ms apart, errors {health['errors']}"
    )
    print(
        f"p50_ms={percentile(latencies, 50):.3f} p99_ms={percentile(latencies, 99):.3f} "
        f"max_ms={latencies[-1]:.3f} frames={len(latencies)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
