"""The light test's steps (:meth:`TableRuntime.start_light_test`): each light on, then off,
one after the other, on the table loop's clock."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol


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
