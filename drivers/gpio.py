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
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpiozero import LED, DigitalInputDevice, GPIOZeroError

from controller.errors import TableControllerError
from controller.table import events as ev
from controller.table.effects import LIGHT_STATES, Effect, Light
from drivers.base import Clock, DriverHealth, EventSink, monotonic_ms
from drivers.gpio_pins import InputPin, LightPin, PinMap

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
    "insurance": lambda spot, t: ev.Insurance(spot, t=t),
    "even_money": lambda spot, t: ev.EvenMoney(spot, t=t),
    "ez_bust": lambda spot, t: ev.EzBust(spot, t=t),
}
"""Console button -> its event; ``spot`` is 0 (the spot in action) unless per-spot."""


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
    """Drive a mock input pin to the level its wiring gives when ``active``."""
    active_low = spec.pull_up is True or (spec.pull_up is None and not spec.active_high)
    if active != active_low:
        pin.drive_high()
    else:
        pin.drive_low()


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

    def event(self, level: bool, t: int) -> ev.Event | None:
        spec = self.spec
        if spec.kind == "sensor":
            return ev.BetSensor(spec.spot, spec.circle, level, t=t)
        if spec.kind == "switch":
            return ev.SupervisorKey(level, t=t)
        return BUTTON_EVENTS[spec.name](spec.spot, t) if level else None


class GpioDriver:
    """Inputs to events, light effects to outputs, for one table.

    ``sink`` receives the events (it must only enqueue: it is called on the GPIO
    library's thread too); ``clock`` is the runtime's monotonic ms clock;
    ``pin_factory`` is gpiozero's (None: gpiozero's default, from
    ``GPIOZERO_PIN_FACTORY``); every device is created with it.
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
        believed = dict(believed or {})
        try:
            for spec in pin_map.inputs:
                device = self._device(
                    spec.section,
                    spec,
                    lambda s=spec: DigitalInputDevice(
                        f"GPIO{s.pin}",
                        pull_up=s.pull_up,
                        active_state=None if s.pull_up is not None else s.active_high,
                        bounce_time=None,
                        pin_factory=pin_factory,
                    ),
                )
                if hold_believed and believed.get(f"{spec.section}.{spec.key}"):
                    # a simulation: the chips did not move while the controller was down
                    _drive(device.pin, spec, True)
                self._inputs.append(_Input(spec, device))
            for light in pin_map.lights:
                led = self._device(
                    "lights",
                    light,
                    lambda s=light: LED(
                        f"GPIO{s.pin}",
                        active_high=s.active_high,
                        initial_value=False,
                        pin_factory=pin_factory,
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
                else:  # sensors and the key: reported if not what the table believes
                    believed_level = believed.get(f"{inp.spec.section}.{inp.spec.key}", False)
                    inp.stable, inp.since = level, now
                    inp.report_start = level != believed_level
        self._health.set(connected=True, faulted=None)

    def _device(self, section: str, spec: InputPin | LightPin, make: Callable[[], Any]) -> Any:
        try:
            return make()
        except GPIOZeroError as exc:
            raise GpioError(
                f"[gpio.{section}] '{spec.key}' on GPIO {spec.pin}: the GPIO library refused "
                f"the pin ({type(exc).__name__}: {exc}); check no other program or key uses it, "
                "and on a PC set GPIOZERO_PIN_FACTORY=mock"
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
                continue
            if confirmed_at > now:
                continue
            inp.report_start = False
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
        if not hasattr(pin, "drive_high"):
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
                    "pin": inp.spec.pin,
                    "active": live,
                    "confirmed": inp.stable,
                    "edges": inp.edges,
                    "rejected": inp.rejected,
                }
            snap["inputs"] = inputs
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

    def __enter__(self) -> GpioDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
