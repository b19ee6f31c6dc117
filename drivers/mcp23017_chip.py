"""The MCP23017 as its datasheet describes it, for the pin factory (:mod:`drivers.mcp23017`)
and the register-level simulator (:mod:`drivers.mcp23017_sim`): the register map in IOCON
bank 0, the names of its 16 lines, the time a transfer takes on the wire, the bus it is
reached over (smbus2's register transfers), and what the factory keeps of each chip."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

# -- registers (IOCON.BANK = 0: A and B of each register side by side) ------------------------

IODIR, IPOL, GPINTEN, DEFVAL, INTCON, IOCON, GPPU, INTF, INTCAP, GPIO, OLAT = (
    0x00,
    0x02,
    0x04,
    0x06,
    0x08,
    0x0A,
    0x0C,
    0x0E,
    0x10,
    0x12,
    0x14,
)
"""Port A's address of each register; port B's is the next one (IOCON at 0x0A and 0x0B is
one register)."""

REGISTERS = 0x16
"""Registers 0x00-0x15 in bank 0."""

IOCON_BANK, IOCON_MIRROR, IOCON_SEQOP, IOCON_ODR, IOCON_INTPOL = 0x80, 0x40, 0x20, 0x04, 0x02
IOCON_VALUE = IOCON_MIRROR | IOCON_ODR
"""How the factory runs each chip: bank 0, sequential addresses, INTA and INTB mirrored,
open drain (active low, shareable)."""

ADDRESSES = range(0x20, 0x28)
"""A0-A2 strapped to 0 or 1: eight chips per bus."""

LINES = 16
"""GPA0-GPA7 are lines 0-7, GPB0-GPB7 lines 8-15."""

LOST_AFTER = 3
"""Changes in a row that only the reconcile read found: the chip's interrupt line is lost (a
fault, like a chip that does not answer), until an interrupt brings a change again."""

I2C_HZ = 400_000
"""The MCP23017's fast-mode clock (it does 1.7 MHz; the Pi's bus 1 runs 100 kHz unless
``dtparam=i2c_arm_baudrate=400000``: ``hardware/install.md``)."""


def line_name(line: int) -> str:
    """The datasheet's name of ``line`` (0-15).

    >>> line_name(0), line_name(7), line_name(8), line_name(15)
    ('GPA0', 'GPA7', 'GPB0', 'GPB7')
    """
    if not 0 <= line < LINES:
        raise ValueError(f"an MCP23017 line is 0 to {LINES - 1} (GPA0-GPB7), got {line!r}")
    return f"GP{'AB'[line // 8]}{line % 8}"


def transfer_seconds(data_bytes: int, *, read: bool, hz: int = I2C_HZ) -> float:
    """How long one register transaction of ``data_bytes`` takes on the wire at ``hz``:
    9 clocks per byte (8 bits and the ACK), a start and a stop; a read also sends the
    register address first and a repeated start.

    >>> round(transfer_seconds(6, read=True) * 1e6)  # INTF, INTCAP, GPIO of both ports
    210
    >>> round(transfer_seconds(1, read=False) * 1e6)  # one OLAT byte
    72
    """
    header = 2 + (1 if read else 0)  # address + register (+ address again to read)
    frames = header + data_bytes
    clocks = frames * 9 + 2 + (1 if read else 0)
    return clocks / hz


class I2CBus(Protocol):
    """What the factory needs of a bus: smbus2.SMBus's register transfers."""

    def read_byte_data(self, i2c_addr: int, register: int) -> int: ...

    def write_byte_data(self, i2c_addr: int, register: int, value: int) -> None: ...

    def read_i2c_block_data(self, i2c_addr: int, register: int, length: int) -> list[int]: ...

    def write_i2c_block_data(self, i2c_addr: int, register: int, data: Sequence[int]) -> None: ...


def open_bus(number: int) -> I2CBus:
    """``smbus2.SMBus(number)``: ``/dev/i2c-N``; an OSError says what to check."""
    try:
        from smbus2 import SMBus
    except ImportError as exc:  # pragma: no cover - smbus2 is a dependency
        raise OSError(f"smbus2 is not installed ({exc}): reinstall table-controller") from None
    try:
        return SMBus(number)
    except OSError as exc:
        raise OSError(
            exc.errno,
            f"cannot open /dev/i2c-{number} ({exc.strerror}): enable I2C "
            "(raspi-config nonint do_i2c 0, or dtparam=i2c_arm=on in /boot/firmware/config.txt "
            "and reboot) and run as a member of group i2c (hardware/install.md)",
        ) from None


@dataclass(frozen=True, slots=True)
class ExpanderSpec:
    """One chip of a bus: its name in the pin map, I2C address and the BCM pin its
    (mirrored, open-drain) interrupt output goes to."""

    name: str
    address: int
    interrupt: int


class ChipDown(OSError):
    """A chip did not answer twice in a row (inside the factory only)."""


@dataclass(slots=True)
class ChipState:
    """What the factory knows of one chip: the registers it wrote, the levels it last read, and
    its counters and faults."""

    spec: ExpanderSpec
    iodir: list[int] = field(default_factory=lambda: [0xFF, 0xFF])
    gppu: list[int] = field(default_factory=lambda: [0, 0])
    gpinten: list[int] = field(default_factory=lambda: [0, 0])
    olat: list[int] = field(default_factory=lambda: [0, 0])
    levels: int = 0xFFFF  # the last levels seen (GPIO); idle high until read
    up: bool = False
    error: str = ""
    interrupts: int = 0
    missed: int = 0
    resets: int = 0
    errors: int = 0
    lost_streak: int = 0  # changes in a row found by the reconcile read, none by an interrupt
    int_lost: bool = False

    @property
    def label(self) -> str:
        return f"expander {self.spec.name} (0x{self.spec.address:02x})"
