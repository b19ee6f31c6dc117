"""MCP23017 I/O expanders on I2C as a gpiozero pin factory.

A full seven-spot table has about 60 inputs and 40 lamps against the Pi's 26 GPIO pins;
the rest sit on MCP23017 expanders (16 lines each, addresses 0x20-0x27 on one I2C bus,
``hardware/gpio.md``). :class:`MCP23017Factory` is a gpiozero pin ``Factory`` for the
expanders of one I2C bus, so gpiozero's own devices (``DigitalInputDevice``, ``Button``,
``LED``) and :class:`drivers.gpio.GpioDriver` work on expander lines unchanged, through the
``pin_factory`` they are given, with the same debounce, lockout and late-bet rules as on
Pi pins. Why a pin factory over ``smbus2`` and not the kernel's ``mcp23017`` overlay:
``hardware/gpio.md``, "Why a pin factory".

The bus is injected: anything with smbus2's ``read_byte_data``, ``write_byte_data``,
``read_i2c_block_data`` and ``write_i2c_block_data`` (``smbus2.SMBus(1)`` on a Pi;
:class:`~drivers.mcp23017_sim.SimulatedBus` holding simulated chips in tests, the demo and the
benchmark). Each chip runs in IOCON bank 0 with its two interrupt outputs mirrored and open
drain, so INTA (or INTB) of any number of chips on one bus can share one Pi input (pulled
up; a chip pulls it low while it has an interrupt pending).

Interrupt-driven, not polled: the Pi input's falling edge (a gpiozero
``DigitalInputDevice`` on the Pi's own factory) wakes the bus's worker thread, which reads
``INTF``, ``INTCAP`` and ``GPIO`` of each chip on that line in one 6-byte transfer (reading
``INTCAP`` clears the interrupt). ``INTCAP`` is the port as it was when the interrupt
fired and ``GPIO`` as it is now, so a line that changed again while the interrupt was
pending yields both edges, in order. A chip's interrupt output stays low until read, so an
edge the Pi missed is not lost: a slow reconcile read of every chip (``reconcile_ms``,
default 100 ms) finds it (counted ``missed_interrupts``), and also finds a chip that stopped
answering or was reset by a power dip (its registers are checked once a second and written
again). Edge callbacks run on the worker thread; they must only record (as
:class:`~drivers.gpio.GpioDriver`'s do).

An I2C error is retried once; a chip that still does not answer is *down*: ``on_fault``
hears ``(name, detail)`` (the GPIO driver turns it into a ``gpio`` table fault: the table
latches its safe state), its inputs keep their last level, its outputs are written again
when it answers (``on_fault(name, None)``). A lost interrupt line (three changes in a row
found only by the reconcile read) is a fault the same way: the table still hears every change,
up to ``reconcile_ms`` late, but a technician must mend the wire. Nothing here raises into a
device: a lamp written while its chip is down is kept and shown when the chip is back.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from gpiozero import DigitalInputDevice
from gpiozero.exc import (
    PinInvalidPin,
)
from gpiozero.pins import BoardInfo, Factory, HeaderInfo, PinInfo

from drivers.mcp23017_chip import (
    GPINTEN,
    GPIO,
    GPPU,
    INTCON,
    INTF,
    IOCON,
    IOCON_VALUE,
    IODIR,
    IPOL,
    LINES,
    LOST_AFTER,
    OLAT,
    ChipDown,
    ChipState,
    ExpanderSpec,
    I2CBus,
    line_name,
)
from drivers.mcp23017_pin import MCP23017Pin


class MCP23017Factory(Factory):
    """gpiozero pins on the MCP23017s of one I2C bus: pin names ``NAME.GPA0`` to
    ``NAME.GPB7`` (or ``NAME.0`` to ``NAME.15``), NAME from ``chips``.

    ``bus``: an :class:`I2CBus`; ``pi_factory``: the gpiozero factory of the Pi pins the
    interrupt lines go to (None: gpiozero's default); ``on_fault(name, detail | None)``:
    a chip stopped (detail) or started again (None) answering, called on the worker thread;
    ``reconcile_ms``: how often every chip is read whatever the interrupts say (0: never;
    its register check runs every ``check_every`` reconciles). ``on_fault`` also hears
    ``("NAME.interrupt", detail | None)``: :data:`LOST_AFTER` changes in a row came only from
    the reconcile read (the interrupt line is lost), or an interrupt brought one again.
    """

    def __init__(
        self,
        bus: I2CBus,
        chips: Sequence[ExpanderSpec],
        *,
        pi_factory: Factory | None = None,
        bus_number: int = 1,
        on_fault: Callable[[str, str | None], None] | None = None,
        reconcile_ms: int = 100,
        check_every: int = 10,
    ):
        super().__init__()
        self.bus = bus
        self.bus_number = bus_number
        self.on_fault = on_fault
        self.reconcile_ms = reconcile_ms
        self.check_every = max(1, check_every)
        self._lock = threading.RLock()  # the bus and the register shadows
        self._chips = [ChipState(spec) for spec in chips]
        self._by_name = {c.spec.name: c for c in self._chips}
        self._pins: dict[tuple[str, int], MCP23017Pin] = {}
        self._infos: dict[tuple[str, int], PinInfo] = {}
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._closed = False
        self._reconciles = 0
        self.worker_errors = 0
        self.last_worker_error = ""
        self._board = self._make_board_info()
        self._interrupts: dict[int, DigitalInputDevice] = {}
        self._faults: list[tuple[str, str | None]] = []
        self._received: dict[int, int] = {}  # interrupt pin -> falling edges heard
        self._seen: dict[int, int] = {}  # ... and how many of them the worker has served
        for chip in self._chips:
            self._init_chip(chip)
        try:
            for number in sorted({c.spec.interrupt for c in self._chips}):
                device = DigitalInputDevice(f"GPIO{number}", pull_up=True, pin_factory=pi_factory)
                device.when_activated = lambda n=number: self._interrupt(n)
                self._interrupts[number] = device
        except BaseException:
            self._close_interrupts()
            raise
        self._worker = threading.Thread(
            target=self._run, name=f"mcp23017-i2c{bus_number}", daemon=True
        )
        self._worker.start()
        self._report_faults()

    # -- gpiozero's Factory -----------------------------------------------------------------

    def _make_board_info(self) -> BoardInfo:
        headers = {}
        for chip in self._chips:
            name = chip.spec.name
            pins = {}
            for line in range(LINES):
                dsname = line_name(line)
                info = PinInfo(
                    number=line + 1,
                    name=f"{name}.{dsname}",
                    names=frozenset({f"{name}.{dsname}", f"{name}.{line}"}),
                    pull="",
                    row=line % 8 + 1,
                    col=line // 8 + 1,
                    interfaces=frozenset({"gpio"}),
                )
                pins[line + 1] = info
                self._infos[(name, line)] = info
            headers[name] = HeaderInfo(name=name, rows=8, columns=2, pins=pins)
        return BoardInfo(
            revision="",
            model="MCP23017",
            pcb_revision="",
            released="",
            soc="MCP23017",
            manufacturer="Microchip",
            memory=0,
            storage="",
            usb=0,
            usb3=0,
            ethernet=0,
            eth_speed=0,
            wifi=False,
            bluetooth=False,
            csi=0,
            dsi=0,
            headers=headers,
            board="",
        )

    def _get_board_info(self) -> BoardInfo:
        return self._board

    def ticks(self) -> float:
        return time.monotonic()

    def ticks_diff(self, later: float, earlier: float) -> float:
        return later - earlier

    def pin(self, name: Any) -> MCP23017Pin:
        text = str(name)
        chip_name, dot, rest = text.rpartition(".")
        chip = self._by_name.get(chip_name) if dot else None
        line = None
        if chip is not None:
            if rest.isdigit() and int(rest) < LINES:
                line = int(rest)
            elif rest in {line_name(n) for n in range(LINES)}:
                line = next(n for n in range(LINES) if line_name(n) == rest)
        if chip is None or line is None:
            known = ", ".join(self._by_name) or "none"
            raise PinInvalidPin(
                f"{text!r} is no expander pin: use NAME.GPA0-NAME.GPB7 or NAME.0-NAME.15 "
                f"(expanders on I2C bus {self.bus_number}: {known})"
            )
        key = (chip_name, line)
        with self._lock:
            pin = self._pins.get(key)
            if pin is None:
                pin = self._pins[key] = MCP23017Pin(self, chip, line, self._infos[key])
        return pin

    def close(self) -> None:
        """Stop the worker, release the interrupt inputs; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._queue.put(("stop", None))
        if self._worker is not threading.current_thread():
            self._worker.join(timeout=2)
        self._close_interrupts()

    def _close_interrupts(self) -> None:
        for device in self._interrupts.values():
            device.when_activated = None
            device.close()
        self._interrupts.clear()

    # -- registers --------------------------------------------------------------------------

    def _transfer(self, chip: ChipState, fn: Callable[..., Any], *args: Any) -> Any:
        """One bus transfer with one retry; a second failure marks the chip down."""
        address = chip.spec.address
        try:
            return fn(address, *args)
        except OSError:
            chip.errors += 1
        try:
            return fn(address, *args)
        except OSError as exc:
            chip.errors += 1
            self._down(chip, exc)
            raise ChipDown(str(exc)) from None

    def _down(self, chip: ChipState, exc: OSError) -> None:
        if chip.up or not chip.error:
            reason = exc.strerror or str(exc)
            code = f"errno {exc.errno}: " if exc.errno else ""
            chip.error = (
                f"{chip.label} on I2C bus {self.bus_number} is not answering ({code}{reason}): "
                "check its power, its address straps and the SDA/SCL wiring"
            )
            chip.up = False
            self._faults.append((chip.spec.name, chip.error))

    def _init_chip(self, chip: ChipState) -> bool:
        """Write every register the factory owns (outputs' latch before their direction, so
        a lamp comes up as asked), then read the levels. False if the chip is down."""
        bus = self.bus
        with self._lock:
            try:
                self._transfer(chip, bus.write_byte_data, IOCON, IOCON_VALUE)
                self._transfer(chip, bus.write_i2c_block_data, OLAT, list(chip.olat))
                self._transfer(chip, bus.write_i2c_block_data, IPOL, [0, 0])
                self._transfer(chip, bus.write_i2c_block_data, INTCON, [0, 0])
                self._transfer(chip, bus.write_i2c_block_data, GPPU, list(chip.gppu))
                self._transfer(chip, bus.write_i2c_block_data, IODIR, list(chip.iodir))
                self._transfer(chip, bus.write_i2c_block_data, GPINTEN, list(chip.gpinten))
                block = self._transfer(chip, bus.read_i2c_block_data, INTF, 6)
            except ChipDown:
                return False
            chip.levels = block[4] | block[5] << 8
            if not chip.up:
                was_down = bool(chip.error)
                chip.up, chip.error = True, ""
                if was_down:
                    self._faults.append((chip.spec.name, None))
        return True

    def _set_bits(self, chip: ChipState, port: int, bit: int, **values: int) -> None:
        """Change one line's bits in the shadows and write the registers that changed (an
        output's latch before its direction)."""
        order = ("olat", "gppu", "iodir", "gpinten")
        address = {"olat": OLAT, "gppu": GPPU, "iodir": IODIR, "gpinten": GPINTEN}
        with self._lock:
            writes = []
            for name in order:
                if name not in values:
                    continue
                shadow = getattr(chip, name)
                new = shadow[port] & ~(1 << bit) | (values[name] & 1) << bit
                if new != shadow[port]:
                    shadow[port] = new
                    writes.append((address[name] + port, new))
            if not chip.up:
                return  # written when the chip answers again
            try:
                for register, value in writes:
                    self._transfer(chip, self.bus.write_byte_data, register, value)
                if values.get("iodir") == 1 or "gppu" in values:
                    self._refresh_level(chip, port, bit)
            except ChipDown:
                pass
        self._report_faults()

    def _refresh_level(self, chip: ChipState, port: int, bit: int) -> None:
        """Read the level of a line just configured as an input into the cache. Only that
        line's: a change on another line is the worker's to find and fire."""
        if not chip.up:
            return
        try:
            value = self._transfer(chip, self.bus.read_byte_data, GPIO + port)
        except ChipDown:
            return
        line = 8 * port + bit
        chip.levels = chip.levels & ~(1 << line) | (value >> bit & 1) << line

    # -- the worker: interrupts and the reconcile read ------------------------------------------

    def _run(self) -> None:
        """The bus's worker: interrupts as they come, the reconcile read every period (busy
        or not), ``sync`` markers in order."""
        period = self.reconcile_ms / 1000 if self.reconcile_ms else None
        due = time.monotonic() + period if period else None
        while True:
            timeout = None if due is None else max(0.0, due - time.monotonic())
            try:
                kind, arg = self._queue.get(timeout=timeout)
            except queue.Empty:
                kind, arg = "", None
            if kind == "stop":
                return
            try:
                if kind == "int":
                    self._service(arg)
                elif kind == "sync":
                    arg.set()
                if due is not None and time.monotonic() >= due:
                    due = max(due + period, time.monotonic())
                    self.reconcile()
            except Exception as exc:  # the worker must live (an edge callback failed)
                self.worker_errors += 1
                self.last_worker_error = f"{type(exc).__name__}: {exc}"

    def _interrupt(self, number: int) -> None:
        """The Pi input ``number`` fell (gpiozero's thread): wake the worker."""
        self._received[number] = self._received.get(number, 0) + 1
        self._queue.put(("int", number))

    def _service(self, interrupt: int) -> None:
        """The interrupt line ``interrupt`` fell: read every chip on it until it is high."""
        self._seen[interrupt] = self._received.get(interrupt, 0)
        chips = [c for c in self._chips if c.spec.interrupt == interrupt]
        device = self._interrupts.get(interrupt)
        for _ in range(4):
            for chip in chips:
                if chip.up:
                    chip.interrupts += 1
                    if self._read_chip(chip):
                        chip.lost_streak = 0
                        if chip.int_lost:
                            chip.int_lost = False
                            self._faults.append((f"{chip.spec.name}.interrupt", None))
            if device is None or not device.is_active:
                break
        self._report_faults()

    def reconcile(self) -> None:
        """Read every chip whatever its interrupt line says: an edge found here was missed
        by the interrupt (counted); a chip down is tried again; every ``check_every``-th
        time each chip's configuration is compared with what was written (a chip reset by a
        power dip is written again, counted as ``resets``)."""
        self._reconciles += 1
        check = self._reconciles % self.check_every == 0
        for chip in self._chips:
            if self._closed:
                return
            if not chip.up:
                before = chip.levels
                if self._init_chip(chip):
                    self._dispatch(chip, before, 0, 0, chip.levels)
                continue
            if check and not self._check_config(chip):
                continue
            pin = chip.spec.interrupt
            changed = self._read_chip(chip)
            # an edge the Pi heard is counted before the chip can be read (the chip raises
            # its output first): none on its way for this change means one was lost
            if changed and self._received.get(pin, 0) == self._seen.get(pin, 0):
                chip.missed += 1
                chip.lost_streak += 1
                if chip.lost_streak >= LOST_AFTER and not chip.int_lost:
                    chip.int_lost = True
                    self._faults.append(
                        (
                            f"{chip.spec.name}.interrupt",
                            f"{chip.label} on I2C bus {self.bus_number}: its interrupt line "
                            f"GPIO {pin} did not fall for the last {chip.lost_streak} changes "
                            "(the reconcile read found them): check the INTA wire and its "
                            "pull-up",
                        )
                    )
        self._report_faults()

    def sync(self, timeout: float = 2.0) -> bool:
        """Wait until the worker has handled everything queued before this call (tests)."""
        done = threading.Event()
        self._queue.put(("sync", done))
        return done.wait(timeout)

    def _check_config(self, chip: ChipState) -> bool:
        with self._lock:
            try:
                regs = self._transfer(chip, self.bus.read_i2c_block_data, IODIR, GPPU + 2)
            except ChipDown:
                return False
            wanted = [*chip.iodir, 0, 0, *chip.gpinten, None, None, 0, 0, IOCON_VALUE]
            wanted += [IOCON_VALUE, *chip.gppu]
            same = all(w is None or w == r for w, r in zip(wanted, regs, strict=True))
        if not same:
            chip.resets += 1
            before = chip.levels
            if self._init_chip(chip):
                self._dispatch(chip, before, 0, 0, chip.levels)
            return False
        return True

    def _read_chip(self, chip: ChipState) -> bool:
        """Read INTF, INTCAP and GPIO of both ports and fire the edges; True if a level
        changed."""
        with self._lock:
            try:
                block = self._transfer(chip, self.bus.read_i2c_block_data, INTF, 6)
            except ChipDown:
                return False
            before = chip.levels
            intf = block[0] | block[1] << 8
            intcap = block[2] | block[3] << 8
            now = block[4] | block[5] << 8
            chip.levels = now
        return self._dispatch(chip, before, intf, intcap, now)

    def _dispatch(self, chip: ChipState, before: int, intf: int, intcap: int, now: int) -> bool:
        """Fire the edges from ``before`` through the captured levels (ports whose INTF is
        set) to ``now``, on input lines with a device listening. Outside the lock."""
        ticks = self.ticks()
        inputs = chip.iodir[0] | chip.iodir[1] << 8
        captured_ports = (0x00FF if intf & 0x00FF else 0) | (0xFF00 if intf & 0xFF00 else 0)
        changed = False
        for line in range(LINES):
            if not inputs >> line & 1:
                continue
            steps = [before >> line & 1]
            if captured_ports >> line & 1:
                steps.append(intcap >> line & 1)
            steps.append(now >> line & 1)
            pin = self._pins.get((chip.spec.name, line))
            for previous, level in itertools.pairwise(steps):
                if previous == level:
                    continue
                changed = True
                if pin is not None:
                    pin._changed(ticks, bool(level))
        return changed

    def _report_faults(self) -> None:
        with self._lock:
            faults, self._faults = self._faults, []
        if self.on_fault is not None:
            for name, detail in faults:
                self.on_fault(name, detail)

    # -- health -------------------------------------------------------------------------------

    def down(self) -> dict[str, str]:
        """Chip name -> why, for every chip not answering."""
        return {c.spec.name: c.error for c in self._chips if not c.up}

    def health(self) -> dict[str, Any]:
        """Per chip: address, bus, interrupt pin, answering, the error, interrupts serviced,
        edges found by the reconcile read (``missed_interrupts``), resets, bus errors."""
        return {
            c.spec.name: {
                "address": f"0x{c.spec.address:02x}",
                "bus": self.bus_number,
                "interrupt": c.spec.interrupt,
                "answering": c.up,
                "error": c.error or None,
                "interrupts": c.interrupts,
                "missed_interrupts": c.missed,
                "resets": c.resets,
                "bus_errors": c.errors,
            }
            for c in self._chips
        }
