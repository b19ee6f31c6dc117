"""Fault watchers: health samples in, table events out (pure; time is passed in, in ms).

The runtime samples each driver's and the jackpot link's health on every tick and hands
the samples here; a watcher answers with the :class:`~controller.table.events.TableFault`
or :class:`~controller.table.events.JackpotLink` events the table must hear. Nothing here
reads a clock or touches a device, so every rule below is tested with plain numbers.

- :class:`DriverWatch`: a driver (shoe, camera, GPIO) that stays disconnected for
  ``fault_after_ms`` latches a fault of its kind; when it is back the table hears that the
  condition is gone (the latch stays until the supervisor key clears it).
- :class:`LinkWatch`: the jackpot link is *up* while the publisher is connected and the
  controller acknowledges: a row waiting ``ack_timeout_ms`` without any acknowledgement
  counts as down (a broker that accepts messages nobody applies is no link). The table hears
  ``JackpotLink(False)`` at once (no progressive wagers); down for ``fault_after_ms`` also
  latches a ``link`` fault (0: never). With ``controller_timeout_ms`` it also needs the
  jackpot controller's signed heartbeat: a status ``offline``, or no heartbeat for that long
  (none at all, once the start's grace is over), is the link down at once, whatever the
  broker says (issue 28 item 3; N.J.A.C. 13:69E-1.39B(d)3). The event says why
  (:data:`LINK_WHY`).
"""

from __future__ import annotations

from controller.table.events import LINK_WHY, Event, JackpotLink, TableFault

__all__ = ["LINK_WHY", "DriverWatch", "LinkWatch"]


def _seconds(ms: int) -> str:
    return f"{ms // 1000} s"


class DriverWatch:
    """Latches a ``kind`` fault after the driver has been disconnected ``fault_after_ms``."""

    def __init__(self, kind: str, fault_after_ms: int, *, now_ms: int, reported: bool = False):
        self.kind = kind
        self.fault_after_ms = fault_after_ms
        self.lost_since: int | None = None
        self.reported = reported  # the table holds an active fault of this kind
        self._start = now_ms

    def update(self, now_ms: int, connected: bool, detail: str = "") -> list[Event]:
        """One health sample; returns the events for the table (usually none)."""
        if connected:
            self.lost_since = None
            if self.reported:
                self.reported = False
                return [TableFault(self.kind, detail, active=False, t=now_ms)]
            return []
        if self.lost_since is None:
            self.lost_since = now_ms
        lost_for = now_ms - self.lost_since
        if not self.reported and lost_for >= self.fault_after_ms:
            self.reported = True
            what = detail or "not connected"
            return [TableFault(self.kind, f"{what} for {_seconds(lost_for)}", t=now_ms)]
        return []


class LinkWatch:
    """Decides whether the jackpot link is up, from the publisher's health.

    ``up`` starts as the table's last known state (replayed from the journal); for
    ``grace_ms`` after start a link not yet connected is not called down (connecting takes
    a moment), unless the table already believes it down.
    """

    def __init__(
        self,
        ack_timeout_ms: int,
        fault_after_ms: int,
        *,
        now_ms: int,
        up: bool = True,
        reported: bool = False,
        grace_ms: int = 10_000,
        controller_timeout_ms: int | None = None,
    ):
        self.ack_timeout_ms = ack_timeout_ms
        self.controller_timeout_ms = controller_timeout_ms
        self.why: str | None = None  # why the link is down (a LINK_WHY code), None while up
        self.fault_after_ms = fault_after_ms
        self.up = up
        self.reported = reported
        self.down_since: int | None = None if up else now_ms
        self.grace_until = now_ms + grace_ms
        self._last_ack: int | None = None
        self._waiting_since: int | None = None

    def check(
        self,
        now_ms: int,
        connected: bool,
        depth: int,
        last_ack: int,
        controller: str | None = None,
        heard_ms: int | None = None,
        clock_problem: bool = False,
    ) -> str | None:
        """None if the link is up, else why not (a :data:`LINK_WHY` code). ``controller``:
        the controller's last status (``online``, ``offline``, None: none heard);
        ``heard_ms``: how long ago its last heartbeat came (None: none yet);
        ``clock_problem``: the table's clock is unsynchronised and the config refuses
        progressive wagers then (issue 28 item 6)."""
        if depth > 0:
            if self._waiting_since is None or last_ack != self._last_ack:
                self._waiting_since = now_ms
        else:
            self._waiting_since = None
        self._last_ack = last_ack
        waited = 0 if self._waiting_since is None else now_ms - self._waiting_since
        if not connected:
            return "not_connected"
        if self.controller_timeout_ms is not None:
            if controller == "offline":
                return "controller_offline"
            if heard_ms is None or heard_ms >= self.controller_timeout_ms:
                return "controller_silent"
        if clock_problem:
            return "clock_unsynchronised"
        if waited >= self.ack_timeout_ms:
            return "no_ack"
        return None

    def update(
        self,
        now_ms: int,
        connected: bool,
        depth: int,
        last_ack: int,
        controller: str | None = None,
        heard_ms: int | None = None,
        clock_problem: bool = False,
    ) -> list[Event]:
        """One sample of the publisher's health; returns the events for the table."""
        why = self.check(now_ms, connected, depth, last_ack, controller, heard_ms, clock_problem)
        healthy = why is None
        out: list[Event] = []
        if healthy != self.up and (healthy or now_ms >= self.grace_until or not self.up):
            self.up = healthy
            self.down_since = None if healthy else now_ms
            out.append(JackpotLink(healthy, why=why, t=now_ms))
        if not self.up:
            self.why = why or self.why
        else:
            self.why = None
        if self.up and self.reported:
            self.reported = False
            out.append(TableFault("link", "", active=False, t=now_ms))
        elif (
            not self.up
            and not self.reported
            and self.fault_after_ms > 0
            and self.down_since is not None
            and now_ms - self.down_since >= self.fault_after_ms
        ):
            self.reported = True
            words = LINK_WHY.get(self.why or "", "not connected")
            out.append(
                TableFault(
                    "link",
                    f"jackpot link down ({words}) for {_seconds(now_ms - self.down_since)}",
                    t=now_ms,
                )
            )
        return out
