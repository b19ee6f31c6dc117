"""Bet sensors, console buttons and lights on the Pi's GPIO pins (gpiozero).

:class:`GpioDriver` turns input edges into table events and carries out the
table's :class:`~controller.table.effects.Light` effects. It holds no game
logic: a misdeal button is sent as :class:`Misdeal` whether or not the
supervisor key is on; the table decides.

Debounce is ours, from timestamps (gpiozero's MockPin has no bounce, so this
is the only debounce a test can prove). An edge callback, which runs on the
GPIO library's thread, records the level and the clock reading. A level is
confirmed once it has held for the input's debounce time; that is checked on
every edge of any input and on :meth:`GpioDriver.poll`, which the runtime calls
on each tick (or :meth:`GpioDriver.start_polling` runs a small thread). Each
confirmed event carries ``t`` = the moment it was confirmed (level start +
debounce), and the events are handed to the sink in ``t`` order. Chatter (edges
closer than the debounce time) restarts the wait, so one placement of chips is
one :class:`BetSensor` and one press is one button event.

At start-up a bet sensor or the supervisor key whose level differs from what the
table believes (``believed``: the recovered table's sensors and key; by default
every circle empty and the key off) is reported once it holds for the debounce
time: after a restart the table may believe chips are on a circle that was
cleared while the controller was down, and must hear that it is empty. With
``hold_believed`` (mock pins only) the believed inputs start active: in a
simulation the chips stay on the layout while the controller restarts. A button held at start-up is
not a press: it is counted as ``button_held_at_start`` and fires only after a
release and a new press.

On a fault :meth:`GpioDriver.fault` latches every light to its declared safe
state (spot lights off, lockout light on, tower light blinking, unless the pin
map says otherwise) until :meth:`GpioDriver.clear_fault`; the table's light
effects arriving meanwhile are kept and shown when the fault is cleared.
:meth:`GpioDriver.close` sets the safe state before it releases the pins.

Inputs and lights on MCP23017 I/O expanders (``[gpio.expanders]``) are the same gpiozero
devices on a :class:`drivers.mcp23017.MCP23017Factory` per I2C bus, so every rule above
holds for them unchanged. The driver opens each bus (``smbus2``; with gpiozero's
MockFactory a simulated bus with simulated chips wired to the mock interrupt pins, so the
demo runs a full table) unless ``buses`` hands them in. An expander that stops answering
(or whose interrupt line is lost) is sent to the table as ``TableFault("gpio", why)`` (the
table latches its safe state and raises the alarm); when every expander answers and
interrupts again, ``TableFault("gpio", active=False)`` (the latch stays until the supervisor
key clears it). Health shows ``connected`` false meanwhile and each expander's
``expanders`` entry.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpiozero import LED, DigitalInputDevice, GPIOZeroError
from gpiozero.pins.mock import MockFactory

from controller.errors import TableControllerError
from controller.runtime.recall import RecallLast
from controller.table import events as ev
from controller.table.effects import LIGHT_STATES, Effect, Light
from drivers.base import Clock, DriverHealth, EventSink, monotonic_ms
from drivers.gpio_pins import InputPin, LightPin, PinMap
from drivers.mcp23017 import MCP23017Factory
from drivers.mcp23017_chip import ExpanderSpec, I2CBus, open_bus
from drivers.mcp23017_pin import MCP23017Pin
from drivers.mcp23017_sim import simulated_bus

BUTTON_EVENTS: dict[str, Callable[[int, int], ev.Event]] = {
    "lockout": lambda spot, t: ev.Lockout(t=t),
    "next": lambda spot, t: ev.Next(t=t),
    "double": lambda spot, t: ev.Double(spot, t=t),
    "split": lambda spot, t: ev.Split(spot, t=t),
    "surrender": lambda spot, t: ev.Surrender(spot, t=t),
    "double_up": lambda spot, t: ev.DoubleUp(spot, t=t),
    "end_round": lambda spot, t: ev.EndRound(t=t),
    "burn": lambda spot, t: ev.Burn(t=t),
    "void_round": lambda spot, t: ev.VoidRound(t=t),
    "misdeal": lambda spot, t: ev.Misdeal(t=t),
    "jackpot_paid": lambda spot, t: ev.JackpotPaid(t=t),
    "recall_last": lambda spot, t: RecallLast(t=t),  # the dealer display's, not the table's
    "insurance": lambda spot, t: ev.Insurance(spot, t=t),
    "even_money": lambda spot, t: ev.EvenMoney(spot, t=t),
    "ez_bust": lambda spot, t: ev.EzBust(spot, t=t),
}
"""Console button -> its event; ``spot`` is 0 (the spot in action) unless per-spot.
``recall_last`` is no table event: the runtime shows the last settled round on the dealer
display again (controller/runtime/recall.py; issue 30)."""


class GpioError(TableControllerError, OSError):
    """A pin the GPIO library refused (in use, missing, no GPIO library at all)."""


PIN_FACTORIES = ("default", "mock", "lgpio", "rpigpio", "pigpio", "native")
"""``[gpio] pin_factory`` values: ``default`` lets gpiozero choose (``GPIOZERO_PIN_FACTORY``
or the first library found); ``mock`` is gpiozero's MockFactory, for simulation only."""


def make_pin_factory(name: str) -> Any:
    """The gpiozero pin factory called ``name`` (one of :data:`PIN_FACTORIES`); None for
    ``default``. A library that is not installed is a :class:`GpioError` saying what to do."""
    if name == "default":
        return None
    modules = {
        "mock": ("gpiozero.pins.mock", "MockFactory"),
        "lgpio": ("gpiozero.pins.lgpio", "LGPIOFactory"),
        "rpigpio": ("gpiozero.pins.rpigpio", "RPiGPIOFactory"),
        "pigpio": ("gpiozero.pins.pigpio", "PiGPIOFactory"),
        "native": ("gpiozero.pins.native", "NativeFactory"),
    }
    if name not in modules:
        raise GpioError(f"[gpio] pin_factory {name!r} is unknown; use one of {PIN_FACTORIES}")
    module, cls = modules[name]
    try:
        return getattr(importlib.import_module(module), cls)()
    except (ImportError, GPIOZeroError, OSError, RuntimeError) as exc:
        raise GpioError(
            f"[gpio] pin_factory {name!r} cannot start ({exc}); on a Pi install its library "
            '(hardware/install.md) or set pin_factory = "default"'
        ) from None


def _drive(pin: Any, spec: InputPin, active: bool) -> None:
    """Drive a mock input pin (or a simulated expander's line) to the level its wiring gives
    when ``active``: an active-low sensor pulls the line low, and lets it go (the pull-up
    takes it high) when inactive."""
    active_low = spec.pull_up is True or (spec.pull_up is None and not spec.active_high)
    if isinstance(pin, MCP23017Pin):
        chip = pin.factory.bus.chips[pin.address]  # a SimulatedBus
        if active_low:
            chip.set_input(pin.line, False if active else None)
        else:
            chip.set_input(pin.line, bool(active))
    elif active != active_low:
        pin.drive_high()
    else:
        pin.drive_low()


def _simulated(pin: Any) -> bool:
    if isinstance(pin, MCP23017Pin):
        return bool(getattr(pin.factory.bus, "simulated", False))
    return hasattr(pin, "drive_high")


@dataclass(slots=True)
class _Input:
    """One input's debounce state. ``stable``: the confirmed level (True = active);
    ``pending``: a different level seen at ``since`` and not yet confirmed."""

    spec: InputPin
    device: DigitalInputDevice
    stable: bool = False
    pending: bool | None = None
    since: int = 0
    edges: int = 0
    rejected: int = 0
    report_start: bool = False  # a sensor's or the key's start level, due at since + debounce
    at_start: bool = False  # the enclosure door's start level: journaled at every start

    def event(self, level: bool, t: int) -> ev.Event | None:
        spec = self.spec
        if spec.kind == "sensor":
            return ev.BetSensor(spec.spot, spec.circle, level, t=t)
        if spec.kind == "switch" and spec.name == "enclosure_door":
            return ev.EnclosureDoor(not level, at_start=self.at_start, t=t)  # active: shut
        if spec.kind == "switch":
            return ev.SupervisorKey(level, t=t)
        return BUTTON_EVENTS[spec.name](spec.spot, t) if level else None


class GpioDriver:
    """Inputs to events, light effects to outputs, for one table.

    ``sink`` receives the events (it must only enqueue: it is called on the GPIO
    library's thread too); ``clock`` is the runtime's monotonic ms clock;
    ``pin_factory`` is gpiozero's (None: gpiozero's default, from
    ``GPIOZERO_PIN_FACTORY``); every device is created with it. ``buses``: the I2C bus of
    each bus number of ``[gpio.expanders]`` (default: opened with smbus2, or simulated under
    MockFactory); ``reconcile_ms``: the expanders' reconcile read; ``fault_reported``: the
    table holds an active ``gpio`` fault (recovered from its journal).
    """

    def __init__(
        self,
        pin_map: PinMap,
        sink: EventSink,
        *,
        clock: Clock = monotonic_ms,
        pin_factory: Any = None,
        name: str = "gpio",
        believed: Mapping[str, bool] | None = None,
        hold_believed: bool = False,
        buses: Mapping[int, I2CBus] | None = None,
        reconcile_ms: int = 100,
        fault_reported: bool = False,
    ):
        self.pin_map = pin_map
        self._sink = sink
        self._clock = clock
        self._lock = threading.RLock()  # inputs' debounce state
        self._light_lock = threading.RLock()  # lights (a blink thread may loop back to inputs)
        self._health = DriverHealth(name, clock)
        self._inputs: list[_Input] = []
        self._lights: dict[str, tuple[LightPin, LED]] = {}
        self._shown: dict[str, str] = {}
        self._wanted: dict[str, str] = {}
        self._unwired: set[str] = set()
        self._fault: str | None = None
        self._closed = False
        self._last_check = clock()
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()
        self._expanders: dict[int, MCP23017Factory] = {}
        self._down: dict[str, str] = {}
        # the expander fault the table last heard ("" none); after a restart the table may
        # still hold one: it hears that it is gone once every expander answers
        self._sent_fault = "(reported before the restart)" if fault_reported else ""
        believed = dict(believed or {})
        try:
            self._open_expanders(pin_factory, buses or {}, reconcile_ms)
            factories = {e.name: self._expanders[e.bus] for e in pin_map.expanders}
            for spec in pin_map.inputs:
                device = self._device(
                    spec.section,
                    spec,
                    lambda s=spec: DigitalInputDevice(
                        s.where,
                        pull_up=s.pull_up,
                        active_state=None if s.pull_up is not None else s.active_high,
                        bounce_time=None,
                        pin_factory=factories[s.expander] if s.expander else pin_factory,
                    ),
                )
                if hold_believed and believed.get(f"{spec.section}.{spec.key}"):
                    # a simulation: the chips did not move while the controller was down
                    _drive(device.pin, spec, True)
                self._inputs.append(_Input(spec, device))
            for factory in self._expanders.values():
                factory.sync()  # levels driven above are read before the start levels
            for light in pin_map.lights:
                led = self._device(
                    "lights",
                    light,
                    lambda s=light: LED(
                        s.where,
                        active_high=s.active_high,
                        initial_value=False,
                        pin_factory=factories[s.expander] if s.expander else pin_factory,
                    ),
                )
                self._lights[light.light] = (light, led)
                self._shown[light.light] = "off"
        except BaseException:
            self._release()
            raise
        with self._lock:  # an edge from now on waits until every input has its start level
            now = clock()
            self._last_check = now
            for inp in self._inputs:
                inp.device.when_activated = lambda i=inp: self._edge(i, True)
                inp.device.when_deactivated = lambda i=inp: self._edge(i, False)
                level = bool(inp.device.is_active)
                if inp.spec.kind == "button":
                    inp.stable = level
                    if level:
                        self._health.count("button_held_at_start")
                elif inp.spec.name == "enclosure_door":  # its state at start: always journaled
                    inp.stable, inp.since = level, now
                    inp.report_start = inp.at_start = True
                else:  # sensors and the key: reported if not what the table believes
                    believed_level = believed.get(f"{inp.spec.section}.{inp.spec.key}", False)
                    inp.stable, inp.since = level, now
                    inp.report_start = level != believed_level
        self._health.set(connected=not self._down, faulted=None)
        self._send_fault()

    def _open_expanders(
        self, pin_factory: Any, buses: Mapping[int, I2CBus], reconcile: int
    ) -> None:
        """One :class:`MCP23017Factory` per I2C bus of the pin map."""
        if not self.pin_map.expanders:
            return
        pi = pin_factory
        if pi is None:
            from gpiozero import Device

            try:  # a traceback and a restart loop before issue 29: one line that says what
                Device.ensure_pin_factory()
            except GPIOZeroError as exc:
                raise GpioError(
                    f'[gpio] pin_factory "default": no GPIO library could start '
                    f"({type(exc).__name__}: {exc}); on a Pi install python3-lgpio "
                    '(hardware/install.md), on a PC set pin_factory = "mock" (a simulation)'
                ) from None
            pi = Device.pin_factory
        for number in sorted({e.bus for e in self.pin_map.expanders}):
            specs = [
                ExpanderSpec(e.name, e.address, e.interrupt)
                for e in self.pin_map.expanders
                if e.bus == number
            ]
            bus = buses.get(number)
            if bus is None and isinstance(pi, MockFactory):
                bus = simulated_bus(specs, pi)  # a simulation: chips behind the mock pins
            if bus is None:
                try:
                    bus = open_bus(number)
                except OSError as exc:
                    raise GpioError(f"[gpio.expanders] I2C bus {number}: {exc.strerror}") from None
            factory = self._device(
                "expanders",
                next(e for e in self.pin_map.expanders if e.bus == number),
                lambda b=bus, s=specs, n=number: MCP23017Factory(
                    b,
                    s,
                    pi_factory=pi,
                    bus_number=n,
                    on_fault=self._expander_fault,
                    reconcile_ms=reconcile,
                ),
            )
            self._expanders[number] = factory
            self._down.update(factory.down())

    def _expander_fault(self, name: str, detail: str | None) -> None:
        """An expander stopped (detail) or started again (None) answering, or its interrupt
        line was lost (``NAME.interrupt``): the bus's worker thread."""
        with self._lock:
            if detail is None:
                self._down.pop(name, None)
            else:
                self._down[name] = detail
            self._health.set(connected=not self._down)
            if detail is not None:
                lost = name.endswith(".interrupt")
                self._health.count("interrupt_lost" if lost else "expander_down")
            starting = not self._inputs and not self._lights
        if not starting:
            self._send_fault()

    def _send_fault(self) -> None:
        """Tell the table whether an expander is down (once per change)."""
        with self._lock:
            if self._closed:
                return
            detail = "; ".join(self._down[n] for n in sorted(self._down))
            if detail == self._sent_fault:
                return
            self._sent_fault = detail
            event = (
                ev.TableFault("gpio", detail, t=self._clock())
                if detail
                else ev.TableFault(
                    "gpio", "every expander answers and interrupts again", False, t=self._clock()
                )
            )
        try:
            self._sink(event)
        except Exception as exc:  # the sink must only enqueue
            self._health.count("sink_error")
            self._health.set(last_sink_error=f"{type(exc).__name__}: {exc}")

    def _device(self, section: str, spec: InputPin | LightPin, make: Callable[[], Any]) -> Any:
        try:
            return make()
        except GPIOZeroError as exc:
            key = getattr(spec, "key", None) or getattr(spec, "name", "")
            if getattr(spec, "expander", ""):
                where = f"expander {spec.expander} line {spec.line} ({spec.where})"
            else:  # a Pi pin, or an expander's interrupt pin
                where = f"GPIO {getattr(spec, 'pin', getattr(spec, 'interrupt', '?'))}"
            raise GpioError(
                f"[gpio.{section}] '{key}' on {where}: the GPIO library "
                f"refused the pin ({type(exc).__name__}: {exc}); check no other program or key "
                "uses it, and on a PC set GPIOZERO_PIN_FACTORY=mock"
            ) from exc

    # -- inputs -----------------------------------------------------------------

    def _edge(self, inp: _Input, level: bool) -> None:
        """An edge callback (GPIO library's thread): record, then confirm what is due."""
        t = self._clock()
        with self._lock:
            if self._closed:
                return
            self._settle(t)
            inp.edges += 1
            if level == inp.stable:
                if inp.pending is not None:
                    inp.rejected += 1
                inp.pending = None
                if inp.report_start:  # back to the start level: it must hold afresh
                    inp.since = t
            else:
                inp.pending, inp.since = level, t
            if inp.spec.debounce_ms == 0:
                self._settle(t)

    def poll(self, now_ms: int | None = None) -> None:
        """Confirm every level that has held for its debounce time by ``now_ms``
        (default: the clock) and hand the events to the sink."""
        with self._lock:
            if not self._closed:
                self._settle(self._clock() if now_ms is None else now_ms)

    def _settle(self, now: int) -> None:
        now = max(now, self._last_check)
        self._last_check = now
        due: list[tuple[int, int, ev.Event]] = []
        for order, inp in enumerate(self._inputs):
            confirmed_at = inp.since + inp.spec.debounce_ms
            if inp.pending is None:
                if inp.report_start and confirmed_at <= now:
                    inp.report_start = False
                    due.append((confirmed_at, order, inp.event(inp.stable, confirmed_at)))
                    inp.at_start = False
                continue
            if confirmed_at > now:
                continue
            inp.report_start = inp.at_start = False
            inp.stable, inp.pending = inp.pending, None
            event = inp.event(inp.stable, confirmed_at)
            if event is not None:
                due.append((confirmed_at, order, event))
        for _t, _order, event in sorted(due, key=lambda item: item[:2]):
            self._health.message()
            try:
                self._sink(event)
            except Exception as exc:  # the sink must only enqueue; never lose the others
                self._health.count("sink_error")
                self._health.set(last_sink_error=f"{type(exc).__name__}: {exc}")

    def start_polling(self, interval_ms: int = 10) -> None:
        """Poll from a small background thread every ``interval_ms`` until :meth:`close`
        (for a runtime that does not call :meth:`poll` on its ticks)."""
        if self._poller is not None or self._closed:
            return

        def run() -> None:
            while not self._stop.wait(interval_ms / 1000):
                self.poll()

        self._poller = threading.Thread(target=run, name="gpio-poll", daemon=True)
        self._poller.start()

    # -- lights -----------------------------------------------------------------

    def apply(self, effect: Effect) -> bool:
        """Carry out a light effect; False if this table has no light for it (or is closed).

        A light with no pin in the map is listed in health (``unwired_lights``: a table
        wires the lamps it has); an unknown state is counted (``bad_light_state``); never
        fatal. Effects other than lights are ignored.
        """
        if not isinstance(effect, Light):
            return False
        if effect.state not in LIGHT_STATES:
            self._health.count("bad_light_state")
            return False
        with self._light_lock:
            if self._closed:
                return False
            if effect.name not in self._lights:
                # a table wires the lamps it has: a circle without one is not an error
                if effect.name not in self._unwired:
                    self._unwired.add(effect.name)
                    self._health.set(unwired_lights=sorted(self._unwired))
                return False
            self._wanted[effect.name] = effect.state
            if self._fault is None:
                self._show(effect.name, effect.state)
        return True

    def _show(self, name: str, state: str) -> None:
        if self._shown.get(name) == state:
            return
        _spec, led = self._lights[name]
        if state == "on":
            led.on()
        elif state == "off":
            led.off()
        else:
            seconds = self.pin_map.blink_ms / 1000
            led.blink(on_time=seconds, off_time=seconds, background=True)
        self._shown[name] = state

    def safe_state(self) -> None:
        """Every light to its declared safe state now (not latched: see :meth:`fault`)."""
        with self._light_lock:
            if self._closed:
                return
            for name, (spec, _led) in self._lights.items():
                self._show(name, spec.safe)

    def fault(self, reason: str) -> None:
        """Latch the safe state: lights stay safe until :meth:`clear_fault`."""
        with self._light_lock:
            self._fault = reason
            self._health.set(faulted=reason)
            self.safe_state()

    def clear_fault(self) -> None:
        """An operator cleared the fault: show the lights the table last asked for."""
        with self._light_lock:
            self._fault = None
            self._health.set(faulted=None)
            if self._closed:
                return
            for name in self._lights:
                self._show(name, self._wanted.get(name, "off"))

    @property
    def faulted(self) -> str | None:
        return self._fault

    # -- the technician's light test (the runtime runs it between rounds) ----------------

    def light_names(self) -> tuple[str, ...]:
        """Every light of the pin map, sorted."""
        return tuple(sorted(self._lights))

    def test_light(self, name: str, state: str) -> bool:
        """Show ``state`` on light ``name`` for a test, leaving what the table asked for
        untouched (:meth:`end_light_test` shows it again). False while faulted or closed."""
        with self._light_lock:
            if self._closed or self._fault is not None or name not in self._lights:
                return False
            self._show(name, state)
        return True

    def end_light_test(self) -> None:
        """Back to the lights the table asked for (or the safe state while faulted)."""
        with self._light_lock:
            if self._closed:
                return
            for name, (spec, _led) in self._lights.items():
                self._show(name, spec.safe if self._fault else self._wanted.get(name, "off"))

    def simulate(self, name: str, active: bool) -> None:
        """Simulation only (gpiozero's MockFactory): make the input ``name`` (as in
        :meth:`health`, ``console.next`` or ``sensors.1.main``; a ``gpio.`` prefix is
        allowed) active or inactive, driving its mock pin to the level
        its wiring gives. Raises :class:`GpioError` on real pins or an unknown input."""
        wanted = name.removeprefix("gpio.")
        with self._lock:
            for inp in self._inputs:
                if f"{inp.spec.section}.{inp.spec.key}" == wanted:
                    break
            else:
                known = ", ".join(f"{i.spec.section}.{i.spec.key}" for i in self._inputs)
                raise GpioError(f"no input {name!r} in the pin map; inputs are: {known}")
        pin = inp.device.pin
        if not _simulated(pin):
            raise GpioError(
                f'input {name!r} is a real pin: simulated inputs need [gpio] pin_factory = "mock"'
            )
        _drive(pin, inp.spec, active)

    # -- health and life cycle --------------------------------------------------

    def health(self) -> dict[str, Any]:
        """For the diagnostics page: connected, errors by kind, every input's live and
        confirmed state with its edge and rejected-edge counts, every light's state."""
        snap = self._health.snapshot()
        with self._light_lock:
            snap["lights"] = dict(self._shown)
        with self._lock:
            inputs = {}
            for inp in self._inputs:
                try:
                    live = None if self._closed else bool(inp.device.is_active)
                except GPIOZeroError:
                    live = None
                inputs[f"{inp.spec.section}.{inp.spec.key}"] = {
                    "pin": inp.spec.where if inp.spec.expander else inp.spec.pin,
                    "active": live,
                    "confirmed": inp.stable,
                    "edges": inp.edges,
                    "rejected": inp.rejected,
                }
            snap["inputs"] = inputs
        if self._expanders:
            snap["expanders"] = {
                name: chip
                for factory in self._expanders.values()
                for name, chip in factory.health().items()
            }
        return snap

    def close(self) -> None:
        """Safe state, then release every pin. Safe to call twice."""
        with self._light_lock:
            if self._closed:
                return
            try:
                self.safe_state()
            finally:
                with self._lock:
                    self._closed = True
                self._stop.set()
                self._release()
                self._health.set(connected=False)
        if self._poller is not None and self._poller is not threading.current_thread():
            self._poller.join(timeout=1)

    def _release(self) -> None:
        for inp in self._inputs:
            if inp.device.when_activated is not None:  # gpiozero keeps handlers by id()
                inp.device.when_activated = None
                inp.device.when_deactivated = None
            inp.device.close()
        for _spec, led in self._lights.values():
            led.close()
        for factory in self._expanders.values():
            factory.close()

    def __enter__(self) -> GpioDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
