"""What the table's side of the jackpot link reports: its alarms and its health.

Plain data, written by the link's thread (controller/link/publisher.py) under the
publisher's lock and read by any thread through ``TablePublisher.health()`` and ``alarms``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Alarm:
    """Something a technician must look at. ``kind``: ``puback``, ``suback``, ``invalid``,
    ``too_large``, ``ack_refused``, ``ack_malformed``, ``resend_refused`` (from beyond what
    the table wrote), ``resend_malformed``, ``award_malformed``, ``award_refused`` (the
    ``on_award`` callback raised), ``meter_malformed``, ``connect``, ``signature`` (an ack,
    resend, award or meter not signed by a key of the jackpot controller). ``detail`` is for
    the technician (the log): printable ASCII, at most ``DETAIL_MAX`` characters."""

    kind: str
    detail: str
    seq: int | None = None
    reason_code: int | None = None
    t: float = 0.0


@dataclass
class ControllerHeard:
    """What the table last heard of the jackpot controller's status (its heartbeat)."""

    state: str | None = None  # "online", "offline"; None: nothing heard since the start
    boot: int = 0
    sent_t: int = 0
    heard: float | None = None  # monotonic s of the last live heartbeat
    heartbeats: int = 0
    stale: int = 0  # statuses older than one already heard (a copy kept, a late will)


@dataclass
class LinkHealth:
    """What :meth:`TablePublisher.health` reports, kept by the link's thread under its lock."""

    connected: bool = False
    depth: int = 0
    last_ack: int = 0
    last_ack_t: float | None = None
    next_seq: int = 1
    stopped_at: int | None = None
    frames: int = 0  # batch frames sent
    framed_rows: int = 0  # the rows they carried
    errors: Counter[str] = field(default_factory=Counter)
    controller: ControllerHeard = field(default_factory=ControllerHeard)
