"""One MCP23017 line as a gpiozero pin (:class:`MCP23017Pin`); the factory that makes them and
talks to the chips is :class:`drivers.mcp23017.MCP23017Factory`."""

from __future__ import annotations

from types import MethodType
from typing import TYPE_CHECKING, Any
from weakref import WeakMethod, ref

from gpiozero.exc import (
    PinFixedPull,
    PinInvalidBounce,
    PinInvalidEdges,
    PinInvalidFunction,
    PinInvalidPull,
    PinPWMUnsupported,
    PinSetInput,
)
from gpiozero.pins import Pin, PinInfo

from drivers.mcp23017_chip import ChipState

if TYPE_CHECKING:
    from drivers.mcp23017 import MCP23017Factory


class MCP23017Pin(Pin):
    """One expander line as a gpiozero pin: input (pull-up or floating) or output."""

    def __init__(self, factory: MCP23017Factory, chip: ChipState, line: int, info: PinInfo):
        super().__init__()
        self._factory = factory
        self._chip = chip
        self._line = line
        self._port, self._bit = divmod(line, 8)
        self._info = info
        self._edges = "both"
        self._bounce: float | None = None
        self._last_event = 0.0
        self._when_changed: Any = None

    def __repr__(self) -> str:
        return self._info.name

    @property
    def info(self) -> PinInfo:
        return self._info

    @property
    def factory(self) -> MCP23017Factory:
        return self._factory

    @property
    def line(self) -> int:
        return self._line

    @property
    def address(self) -> int:
        """The I2C address of this line's chip."""
        return self._chip.spec.address

    def close(self) -> None:
        """Back to an input with no pull-up and no interrupt, as the chip starts."""
        self.when_changed = None
        if self.function == "output" or self.pull != "floating":
            self._factory._set_bits(self._chip, self._port, self._bit, iodir=1, gppu=0)

    def _get_info(self) -> PinInfo:
        return self._info

    def _get_function(self) -> str:
        return "input" if self._chip.iodir[self._port] >> self._bit & 1 else "output"

    def _set_function(self, value: str) -> None:
        if value not in ("input", "output"):
            raise PinInvalidFunction(f"{self!r}: an MCP23017 line is an input or an output")
        self._factory._set_bits(self._chip, self._port, self._bit, iodir=int(value == "input"))

    def output_with_state(self, state: Any) -> None:
        self._factory._set_bits(self._chip, self._port, self._bit, olat=int(bool(state)), iodir=0)

    def input_with_pull(self, pull: str) -> None:
        self.function = "input"
        self.pull = pull

    def _get_state(self) -> bool:
        if self.function == "output":
            return bool(self._chip.olat[self._port] >> self._bit & 1)
        return bool(self._chip.levels >> self._line & 1)

    def _set_state(self, value: Any) -> None:
        if self.function != "output":
            raise PinSetInput(f"{self!r} is an input: cannot set its state")
        self._factory._set_bits(self._chip, self._port, self._bit, olat=int(bool(value)))

    def _get_pull(self) -> str:
        return "up" if self._chip.gppu[self._port] >> self._bit & 1 else "floating"

    def _set_pull(self, value: str) -> None:
        if self.function != "input":
            raise PinFixedPull(f"{self!r}: pull applies to an input")
        if value == "down":
            raise PinInvalidPull(
                f"{self!r}: the MCP23017 has pull-ups only (100 kOhm); an active-high sensor "
                "needs an external pull-down and pull_up = false is refused: use "
                "active_high = true"
            )
        if value not in ("up", "floating"):
            raise PinInvalidPull(f"{self!r}: pull must be up or floating")
        self._factory._set_bits(self._chip, self._port, self._bit, gppu=int(value == "up"))

    def _get_frequency(self) -> None:
        return None

    def _set_frequency(self, value: Any) -> None:
        if value is not None:
            raise PinPWMUnsupported(f"{self!r}: an MCP23017 line has no PWM")

    def _get_bounce(self) -> float | None:
        return self._bounce

    def _set_bounce(self, value: Any) -> None:
        if value is not None:
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise PinInvalidBounce("bounce must be None or a number of seconds") from None
            if value < 0:
                raise PinInvalidBounce("bounce must be 0 seconds or more")
        self._bounce = value

    def _get_edges(self) -> str:
        return self._edges

    def _set_edges(self, value: str) -> None:
        if value not in ("both", "rising", "falling", "none"):
            raise PinInvalidEdges("edges must be both, rising, falling or none")
        self._edges = value

    def _get_when_changed(self) -> Any:
        return None if self._when_changed is None else self._when_changed()

    def _set_when_changed(self, value: Any) -> None:
        if value is None:
            if self._when_changed is not None:
                self._factory._set_bits(self._chip, self._port, self._bit, gpinten=0)
            self._when_changed = None
            return
        enabled = self._when_changed is not None
        self._when_changed = WeakMethod(value) if isinstance(value, MethodType) else ref(value)
        if not enabled:
            self._factory._set_bits(self._chip, self._port, self._bit, gpinten=1)

    def _changed(self, ticks: float, level: bool) -> None:
        """An edge to ``level`` (the worker thread): gpiozero's when_changed, filtered by
        ``edges`` and ``bounce``."""
        wanted = {"both": (True, False), "rising": (True,), "falling": (False,), "none": ()}
        if level not in wanted[self._edges]:
            return
        if self._bounce is not None and ticks - self._last_event < self._bounce:
            return
        self._last_event = ticks
        method = self._get_when_changed()
        if method is None:
            if self._when_changed is not None:
                self.when_changed = None
            return
        method(ticks, level)
