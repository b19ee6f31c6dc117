"""The light test (:meth:`TableRuntime.start_light_test`): each light on, then off, one
after the other, on the table loop's clock; only between rounds and with no fault latched
(asked during a round it runs at the round break). :class:`LightTests` is the part of
:class:`~controller.runtime.loop.TableRuntime` that runs it (its attributes are the
runtime's: ``_lamp_test``, ``_light_test``, ``_light_test_pending``, ``table``, ``clock``)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Protocol

log = logging.getLogger("table-controller")


class LampTest(Protocol):
    """What the light test drives (``GpioDriver``)."""

    def light_names(self) -> tuple[str, ...]: ...

    def test_light(self, name: str, state: str) -> bool: ...

    def end_light_test(self) -> None: ...


LIGHT_TEST_ON_MS = 600
LIGHT_TEST_OFF_MS = 200
"""Each light is on this long, then off this long, one after the other."""


@dataclasses.dataclass
class LightTest:
    """A light test in progress: ``steps`` of (light, state, hold ms)."""

    by: str
    steps: list[tuple[str, str, int]]
    index: int = 0
    next_ms: int = 0
    result: str = ""

    def to_dict(self) -> dict[str, Any]:
        light = self.steps[self.index][0] if self.index < len(self.steps) else None
        return {
            "running": not self.result,
            "by": self.by,
            "light": light,
            "lights": len(self.steps) // 2,
            "done": self.index // 2,
            "result": self.result or None,
            "pending": False,
        }


class LightTests:
    """The light test's part of :class:`~controller.runtime.loop.TableRuntime`."""

    def start_light_test(self, by: str) -> tuple[bool, str]:
        """Each light on, then off, one after the other; only between rounds and with no
        fault latched: asked during a round it is queued and runs at the round break (the
        answer says ``queued``). Returns (accepted, what happened or why not). Any
        thread."""
        return self.call(lambda: self._start_light_test(by))

    def light_test_state(self) -> dict[str, Any] | None:
        pending = self._light_test_pending
        if pending is not None:
            names = self._lamp_test.light_names() if self._lamp_test is not None else ()
            return {
                "running": False,
                "pending": True,
                "by": pending,
                "light": None,
                "lights": len(names),
                "done": 0,
                "result": None,
                "waiting_for": "the fault to be cleared"
                if self._fault_reason() is not None
                else "the round break",
            }
        test = self._light_test
        return None if test is None else test.to_dict()

    def _start_light_test(self, by: str) -> tuple[bool, str]:
        lamps = self._lamp_test
        names = lamps.light_names() if lamps is not None else ()
        if not names:
            return False, "light test refused: this table has no lights in its pin map"
        if self._light_test is not None and not self._light_test.result:
            return False, f"light test refused: {self._light_test.by} is running one now"
        if self._light_test_pending is not None:
            return False, (
                f"light test refused: {self._light_test_pending} queued one already; it runs "
                "at the round break"
            )
        reason = self._fault_reason()
        if reason is not None:
            return False, (
                f"light test refused: a fault holds the lights safe ({reason}); fix and "
                "clear it first"
            )
        if self.table.round_in_progress:
            snap = self.table.snapshot()
            self._light_test_pending = by
            log.info("light test queued by %s for the break after round %s", by, snap["round"])
            self._publish_status()
            return True, (
                f"light test queued: round {snap['round']} is in progress "
                f"({str(snap['phase']).replace('_', ' ')}); it runs at the round break"
            )
        steps: list[tuple[str, str, int]] = []
        for name in names:
            steps += [(name, "on", LIGHT_TEST_ON_MS), (name, "off", LIGHT_TEST_OFF_MS)]
        self._light_test = LightTest(by, steps, next_ms=self.clock())
        log.info("light test started by %s: %d lights", by, len(names))
        self._step_light_test(self.clock())
        return True, f"light test started: {len(names)} lights, each on then off"

    def _step_light_test(self, now: int) -> None:
        test = self._light_test
        lamps = self._lamp_test
        assert test is not None and lamps is not None
        stop = None
        if self.table.round_in_progress:
            stop = "stopped: a round started (lights back to the table)"
        elif self._fault_reason() is not None:
            stop = "stopped: a fault was latched (lights safe)"
        if stop is None and now < test.next_ms:
            return
        if stop is None and test.index < len(test.steps):
            name, state, hold = test.steps[test.index]
            if not lamps.test_light(name, state):
                stop = f"stopped: light {name} could not be set"
            else:
                test.index += 1
                test.next_ms = now + hold
                return
        test.result = (
            stop or "finished: each light was switched on, then off (report any that stayed dark)"
        )
        lamps.end_light_test()
        log.info("light test by %s %s", test.by, test.result)
