"""``table-controller`` commands that watch a device for a technician: ``shoe-watch`` (the
card-reading shoe, ``hardware/shoe-protocol.md``) and ``camera-watch``. The parser is
``controller.cli``'s."""

from __future__ import annotations

import argparse
import json
import sys

SHOE_WORDS = {
    "online": "shoe online",
    "offline": "shoe OFFLINE",
    "missed_frames": "frames missed (a card may be missing)",
    "shuffle": "shuffled",
    "new_shoe": "new shoe",
    "door_open": "door opened",
    "door_closed": "door closed",
    "cut_card": "cut card out",
    "fault": "shoe FAULT",
    "fault_cleared": "shoe fault cleared",
}
"""A shoe event's name in the text mode of ``shoe-watch`` (others: underscores as spaces)."""


def shoe_watch_text(line: dict) -> str:
    """One ``shoe-watch`` line (a decoded event, or an error) in words, for ``--text``.

    >>> shoe_watch_text({"type": "card", "card": "QH", "source": "shoe", "t": 5})
    'card Q\u2665 (QH)'
    >>> shoe_watch_text({"type": "error", "error": "bad_checksum", "detail": "frame discarded"})
    'ERROR bad checksum: frame discarded'
    >>> shoe_watch_text({"type": "shoe", "event": "door_open", "detail": ""})
    'door opened'
    """
    from controller.recall import card_text

    kind = line.get("type")
    detail = line.get("detail") or ""
    if kind == "card":
        return f"card {card_text(str(line.get('card')), True)} ({line.get('card')})"
    if kind == "out_of_order_card":
        from controller.recall import out_of_order_words

        return out_of_order_words(line)
    if kind == "error":
        text = f"ERROR {str(line.get('error')).replace('_', ' ')}"
    elif kind == "shoe":
        event = str(line.get("event"))
        text = SHOE_WORDS.get(event, event.replace("_", " "))
    else:
        fields = [f"{k} {v}" for k, v in line.items() if k not in ("type", "t") and v != ""]
        text = " ".join([str(kind).replace("_", " "), *fields])
        detail = ""
    return f"{text}: {detail}" if detail else text


def _shoe_port_missing(url: str) -> str | None:
    """Why a shoe ``url`` that is a device path cannot be a port (None: it may be one)."""
    import os
    import stat

    if "://" in url:
        return None  # socket://, spy://, loop://: the reader says what fails
    try:
        mode = os.stat(url).st_mode
    except FileNotFoundError:
        return (
            f"no serial port at {url}: check the shoe's cable and power, and the port's name "
            "(ls -l /dev/serial/by-id/; the udev rule makes /dev/bj-shoe)"
        )
    except OSError as exc:
        return f"cannot look at {url}: {exc.strerror}"
    if not stat.S_ISCHR(mode):
        return f"{url} is not a serial port (not a character device): give the shoe's port"
    return None


def cmd_shoe_watch(args: argparse.Namespace) -> int:
    import queue
    import time

    from drivers.shoe import ShoeReader

    missing = _shoe_port_missing(args.url)
    if missing:
        print(f"shoe-watch: {missing}", file=sys.stderr)
        return 1
    lines: queue.Queue[tuple[bool, dict]] = queue.Queue()
    count = 0
    opened = False
    try:
        with ShoeReader(
            args.url,
            lambda event: lines.put((True, event.to_dict())),
            heartbeat_timeout_ms=args.heartbeat_timeout_ms,
            baudrate=args.baud,
            on_problem=lambda problem: lines.put((False, {"type": "error", **problem})),
        ) as reader:
            while args.count is None or count < args.count:
                opened = opened or bool(reader.health().get("connected"))
                try:
                    is_event, line = lines.get(timeout=0.2)
                except queue.Empty:
                    continue
                if not is_event and line.get("error") == "open_failed" and not opened:
                    # never opened: a port that is not there, or not ours (a watcher that
                    # retried for ever would only repeat it)
                    print(
                        f"shoe-watch: cannot open the shoe's port {args.url}: "
                        f"{line.get('detail') or 'open failed'}",
                        file=sys.stderr,
                    )
                    return 1
                if args.text:
                    stamp = time.strftime("%H:%M:%S")
                    print(f"{stamp}  {shoe_watch_text(line)}", flush=True)
                else:
                    print(json.dumps(line), flush=True)
                count += is_event
    except KeyboardInterrupt:
        pass
    return 0


def cmd_camera_watch(args: argparse.Namespace) -> int:
    import queue

    from drivers.camera import CameraReader

    cards: queue.Queue[dict] = queue.Queue()
    count = 0
    try:
        with CameraReader(args.source, lambda event: cards.put(event.to_dict())) as camera:
            while args.count is None or count < args.count:
                try:
                    line = cards.get(timeout=0.2)
                except queue.Empty:
                    if camera.wait(0):  # a file or image folder has ended
                        break
                    continue
                print(json.dumps(line), flush=True)
                count += 1
            print(json.dumps({"type": "health", **camera.health()}), file=sys.stderr)
    except KeyboardInterrupt:
        pass
    return 0
