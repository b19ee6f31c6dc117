"""A simulated MCP23017 at register level, its I2C bus and its interrupt outputs on mock pins.

What the tests, the demo and ``bench/sensor_latency.py`` put behind
:class:`drivers.mcp23017.MCP23017Factory` in place of ``smbus2.SMBus``: the registers the
factory uses (IODIR, IPOL, GPINTEN, DEFVAL, INTCON, IOCON bank 0, GPPU, INTF, INTCAP, GPIO,
OLAT), the interrupt output (mirrored, open drain or push-pull, its polarity), a bus that can
sleep each transfer's time on the wire and fail on demand, and :class:`InterruptLine`, which
drives the gpiozero mock pin an interrupt output is wired to.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from drivers.mcp23017_chip import (
    DEFVAL,
    GPINTEN,
    GPIO,
    GPPU,
    INTCAP,
    INTCON,
    INTF,
    IOCON,
    IOCON_INTPOL,
    IOCON_ODR,
    IODIR,
    IPOL,
    LINES,
    OLAT,
    REGISTERS,
    ExpanderSpec,
    line_name,
    transfer_seconds,
)


class SimulatedMCP23017:
    """One MCP23017 at register level (bank 0; what the factory uses of the chip).

    The world outside drives input lines with :meth:`set_input` (a sensor pulling the line
    low, ``None`` for a released line that the pull-up, when enabled, takes high) and reads
    output lines with :meth:`output`. Registers behave as in the datasheet: ``GPIO`` reads
    the pins (``IPOL`` inverts inputs) and writes ``OLAT``; an input with its ``GPINTEN``
    bit interrupts when it differs from its previous level (``INTCON`` 0) or from ``DEFVAL``
    (``INTCON`` 1): the first such event on a port sets ``INTF`` and copies the port into
    ``INTCAP``; later ones wait until ``INTCAP`` or ``GPIO`` of that port is read, which
    clears the interrupt (one still present against ``DEFVAL`` fires again at once). The
    interrupt output (``int_low``: INTA, or INTB when mirrored; open drain with
    ``IOCON.ODR``) is reported to every ``listeners`` callable, ``(chip, low)``, on each
    change, in order.
    """

    def __init__(self, address: int = 0x20):
        self.address = address
        self.listeners: list[Callable[[SimulatedMCP23017, bool], None]] = []
        self.answering = True
        self._lock = threading.Lock()
        self._inputs: list[bool | None] = [None] * LINES
        self.power_on_reset()

    def power_on_reset(self) -> None:
        """What a power dip does: every register to its reset value (all inputs, no
        interrupts, IOCON 0)."""
        with self._lock:
            self.reg = [0] * REGISTERS
            self.reg[IODIR] = self.reg[IODIR + 1] = 0xFF
            self._last = self._levels()
            self._pending = [False, False]
            self._notify(self._update_int())

    # the world's side

    def set_input(self, line: int, level: bool | None) -> None:
        """Drive ``line`` high (True), low (False) or release it (None: high with the
        pull-up, else low in this model)."""
        line_name(line)
        with self._lock:
            self._inputs[line] = level
            self._notify(self._sample())

    def output(self, line: int) -> bool | None:
        """The level the chip drives on ``line`` (None: the line is an input)."""
        port, bit = divmod(line, 8)
        with self._lock:
            if self.reg[IODIR + port] >> bit & 1:
                return None
            return bool(self.reg[OLAT + port] >> bit & 1)

    @property
    def int_low(self) -> bool:
        """The interrupt output is pulling its line low (open drain, or INTPOL 0)."""
        with self._lock:
            return self._int_low()

    def _int_low(self) -> bool:
        return self._int_active() and not (
            self.reg[IOCON] & IOCON_INTPOL and not self.reg[IOCON] & IOCON_ODR
        )

    # the bus's side

    def read(self, register: int) -> int:
        with self._lock:
            value = self._read(register)
            self._notify(self._sample())
        return value

    def write(self, register: int, value: int) -> None:
        with self._lock:
            self._write(register, value & 0xFF)
            self._notify(self._sample())

    def read_block(self, register: int, length: int) -> list[int]:
        """A sequential read (IOCON.SEQOP 0: the address pointer advances and wraps)."""
        with self._lock:
            out = []
            for i in range(length):
                out.append(self._read((register + i) % REGISTERS))
            self._notify(self._sample())
        return out

    def write_block(self, register: int, data: Iterable[int]) -> None:
        with self._lock:
            for i, value in enumerate(data):
                self._write((register + i) % REGISTERS, value & 0xFF)
            self._notify(self._sample())

    # inside (called with the lock held)

    def _levels(self) -> int:
        """The 16 pin levels: an output line reads its latch, an input what drives it."""
        levels = 0
        for line in range(LINES):
            port, bit = divmod(line, 8)
            if not self.reg[IODIR + port] >> bit & 1:
                level = bool(self.reg[OLAT + port] >> bit & 1)
            else:
                level = self._inputs[line]
                if level is None:
                    level = bool(self.reg[GPPU + port] >> bit & 1)
            levels |= int(level) << line
        return levels

    def _port(self, levels: int, port: int) -> int:
        raw = levels >> (8 * port) & 0xFF
        return raw ^ (self.reg[IPOL + port] & self.reg[IODIR + port])

    def _read(self, register: int) -> int:
        register = register % REGISTERS
        if register == IOCON + 1:
            register = IOCON
        port = register & 1
        if register in (GPIO, GPIO + 1):
            value = self._port(self._levels(), port)
            self._clear(port)
            return value
        if register in (INTCAP, INTCAP + 1):
            value = self.reg[register]
            self._clear(port)
            return value
        return self.reg[register]

    def _write(self, register: int, value: int) -> None:
        register = register % REGISTERS
        if register == IOCON + 1:
            register = IOCON
        if register in (INTF, INTF + 1, INTCAP, INTCAP + 1):
            return  # read-only
        if register in (GPIO, GPIO + 1):
            register += OLAT - GPIO
        self.reg[register] = value

    def _clear(self, port: int) -> None:
        self._pending[port] = False
        self.reg[INTF + port] = 0

    def _sample(self) -> bool:
        """Look at the pins after any change: raise interrupts; True if INT changed."""
        levels = self._levels()
        for port in (0, 1):
            enabled = self.reg[GPINTEN + port] & self.reg[IODIR + port]
            now = levels >> (8 * port) & 0xFF
            before = self._last >> (8 * port) & 0xFF
            against = self.reg[INTCON + port]
            changed = (now ^ before) & ~against
            differs = (now ^ self.reg[DEFVAL + port]) & against
            flags = (changed | differs) & enabled
            if flags and not self._pending[port]:
                self._pending[port] = True
                self.reg[INTF + port] = flags
                self.reg[INTCAP + port] = self._port(levels, port)
        self._last = levels
        return self._update_int()

    def _int_active(self) -> bool:
        return self._pending[0] or self._pending[1]

    def _update_int(self) -> bool:
        active = self._int_active()
        changed = active != getattr(self, "_int_was", False)
        self._int_was = active
        return changed

    def _notify(self, changed: bool) -> None:
        """Tell the listeners the interrupt output changed, in order: under the chip's lock
        (a listener must not touch this chip; :class:`InterruptLine` only drives a pin)."""
        if changed:
            low = self._int_low()
            for listener in list(self.listeners):
                listener(self, low)


class SimulatedBus:
    """An I2C bus holding :class:`SimulatedMCP23017` chips, with smbus2's methods.

    A transfer to an address with no chip, or to a chip with ``answering = False``, raises
    ``OSError(EREMOTEIO)`` as smbus2 does on a missing ACK. ``hz``: each transfer sleeps as
    long as it would take on the wire at that clock (None: no delay); one transfer at a
    time, as on a real bus. ``transfers`` counts them.
    """

    simulated = True

    def __init__(self, hz: int | None = None):
        self.chips: dict[int, SimulatedMCP23017] = {}
        self.hz = hz
        self.transfers = 0
        self._lock = threading.Lock()

    def add(self, address: int) -> SimulatedMCP23017:
        chip = self.chips[address] = SimulatedMCP23017(address)
        return chip

    def _chip(self, address: int) -> SimulatedMCP23017:
        chip = self.chips.get(address)
        if chip is None or not chip.answering:
            raise OSError(errno.EREMOTEIO, "Remote I/O error")
        return chip

    def _wire(self, data_bytes: int, read: bool) -> None:
        self.transfers += 1
        if self.hz:
            time.sleep(transfer_seconds(data_bytes, read=read, hz=self.hz))

    def read_byte_data(self, i2c_addr: int, register: int) -> int:
        with self._lock:
            self._wire(1, True)
            return self._chip(i2c_addr).read(register)

    def write_byte_data(self, i2c_addr: int, register: int, value: int) -> None:
        with self._lock:
            self._wire(1, False)
            self._chip(i2c_addr).write(register, value)

    def read_i2c_block_data(self, i2c_addr: int, register: int, length: int) -> list[int]:
        with self._lock:
            self._wire(length, True)
            return self._chip(i2c_addr).read_block(register, length)

    def write_i2c_block_data(self, i2c_addr: int, register: int, data: Sequence[int]) -> None:
        with self._lock:
            self._wire(len(data), False)
            self._chip(i2c_addr).write_block(register, data)

    def close(self) -> None:
        pass


class InterruptLine:
    """The open-drain line from chips' INT outputs to one Pi input (a gpiozero MockPin in a
    simulation): low while any chip pulls it low, else high (the pull-up). ``connected =
    False`` cuts the wire, so the Pi misses edges (a test of the reconcile read)."""

    def __init__(self, pin: Any, chips: Iterable[SimulatedMCP23017] = ()):
        self.pin = pin
        self.chips: list[SimulatedMCP23017] = []
        self.connected = True
        self._low: dict[int, bool] = {}  # id(chip) -> pulling low
        self._lock = threading.RLock()
        for chip in chips:
            self.attach(chip)

    def attach(self, chip: SimulatedMCP23017) -> None:
        self.chips.append(chip)
        self._low[id(chip)] = chip.int_low
        chip.listeners.append(self._changed)

    def _changed(self, chip: SimulatedMCP23017, low: bool) -> None:
        with self._lock:
            self._low[id(chip)] = low
            self.update()

    def update(self) -> None:
        """Drive the pin to the line's level (after ``connected`` is set again, say)."""
        with self._lock:
            if not self.connected or getattr(self.pin, "function", "input") != "input":
                return
            if any(self._low.values()):
                self.pin.drive_low()
            else:
                self.pin.drive_high()


def simulated_bus(
    chips: Sequence[ExpanderSpec], pi_factory: Any, *, hz: int | None = None
) -> SimulatedBus:
    """A :class:`SimulatedBus` with a chip at each address of ``chips`` whose interrupt
    outputs drive the mock pins they are wired to (``pi_factory``: gpiozero's
    MockFactory). Build it before the :class:`MCP23017Factory` that uses it."""
    bus = SimulatedBus(hz)
    lines: dict[int, InterruptLine] = {}
    for spec in chips:
        chip = bus.add(spec.address)
        line = lines.get(spec.interrupt)
        if line is None:
            line = lines[spec.interrupt] = InterruptLine(pi_factory.pin(f"GPIO{spec.interrupt}"))
        line.attach(chip)
    bus.lines = lines  # type: ignore[attr-defined]
    return bus
