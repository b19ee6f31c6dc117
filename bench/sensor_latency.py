"""Sensor edge -> table event latency, on the Pi's pins and on MCP23017 expander pins.

Usage: .venv/bin/python bench/sensor_latency.py [--samples N] [--gap-ms MS] [--hz HZ]

Runs the real :class:`drivers.gpio.GpioDriver` twice, each time placing and removing chips
``--samples`` times on random circles of a seven-spot table, and times each edge until its
``BetSensor`` reaches the sink (the runtime's queue):

- **Pi pins**: seven main-circle sensors on gpiozero's MockFactory pins. A MockPin calls the
  driver in the thread that drives it, so this is the driver's own cost (on a Pi, lgpio's
  callback thread adds its wake-up).
- **expander pins**: the shipped pin map ``config/gpio.example.toml`` (seven spot boards, 28
  sensors, each board's interrupt on its own Pi pin) on simulated MCP23017s behind a
  :class:`~drivers.mcp23017_sim.SimulatedBus` that sleeps each transfer's time on the wire at
  ``--hz`` (400 kHz: 210 us for the 6-byte INTF/INTCAP/GPIO read). The path is the real one:
  the chip's interrupt output, the Pi input's edge, the bus worker's read, the edge callback.
  The worker's reconcile read of all seven chips (every 100 ms) and a lamp blinking on a board
  (as during a late bet) share the bus meanwhile.

Debounce is 0 here: a table's configured ``sensor_debounce_ms`` (150) comes on top, by design.
The sleep on a simulated transfer overshoots a little (the scheduler), so the expander figure
is an upper bound of the wire time. The last line is ``pi_p99_ms=... expander_p99_ms=...``; the
line before gives the p50s and sample counts.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpiozero.pins.mock import MockFactory  # noqa: E402

from controller.games import load_game  # noqa: E402
from controller.table import events as ev  # noqa: E402
from controller.table.effects import Light  # noqa: E402
from controller.table.machine import table_circles  # noqa: E402
from drivers.gpio import GpioDriver  # noqa: E402
from drivers.gpio_pins import parse_pin_map  # noqa: E402
from drivers.mcp23017 import ExpanderSpec  # noqa: E402
from drivers.mcp23017_sim import simulated_bus  # noqa: E402

CIRCLES = table_circles(load_game("pa-standard"))
PI_PINS = (4, 5, 6, 14, 15, 16, 17)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Sink:
    """Times each BetSensor against the moment its edge was made."""

    def __init__(self) -> None:
        self.started: dict[tuple[int, str, bool], int] = {}
        self.latencies_ms: list[float] = []
        self.done = threading.Event()
        self.expect: tuple[int, str, bool] | None = None

    def __call__(self, event: ev.Event) -> None:
        now = time.perf_counter_ns()
        if isinstance(event, ev.BetSensor):
            key = (event.spot, event.circle, event.on)
            start = self.started.pop(key, None)
            if start is not None:
                self.latencies_ms.append((now - start) / 1e6)
            if key == self.expect:
                self.done.set()


def run(driver: GpioDriver, sink: Sink, drive, inputs, samples: int, gap_s: float, rng) -> None:
    """Place or remove chips on a random circle ``samples`` times, one edge at a time."""
    placed: dict[tuple[int, str], bool] = {}
    for _ in range(samples):
        spot, circle = rng.choice(inputs)
        on = not placed.get((spot, circle), False)
        placed[(spot, circle)] = on
        sink.expect = (spot, circle, on)
        sink.done.clear()
        sink.started[(spot, circle, on)] = time.perf_counter_ns()
        drive(spot, circle, on)
        if not sink.done.wait(2.0):
            raise SystemExit(f"sensor_latency: no event for {sink.expect} in 2 s")
        time.sleep(gap_s * rng.uniform(0.5, 1.5))


def pi_pins(samples: int, gap_s: float, rng: random.Random) -> list[float]:
    raw = {
        "sensor_debounce_ms": 0,
        "sensors": {f"{spot}.main": pin for spot, pin in enumerate(PI_PINS, start=1)},
    }
    pin_map = parse_pin_map(raw, circles=CIRCLES, spots=7)
    factory = MockFactory()
    sink = Sink()
    driver = GpioDriver(pin_map, sink, pin_factory=factory)
    inputs = [(spot, "main") for spot in range(1, 8)]

    def drive(spot: int, circle: str, on: bool) -> None:
        pin = factory.pin(PI_PINS[spot - 1])
        pin.drive_low() if on else pin.drive_high()

    try:
        run(driver, sink, drive, inputs, samples, gap_s, rng)
    finally:
        driver.close()
        factory.close()
    return sink.latencies_ms


def expander_pins(samples: int, gap_s: float, hz: int, rng: random.Random) -> list[float]:
    raw = tomllib.loads((ROOT / "config" / "gpio.example.toml").read_text())["gpio"]
    raw["sensor_debounce_ms"] = 0
    pin_map = parse_pin_map(raw, circles=CIRCLES, spots=7)
    factory = MockFactory()
    specs = [ExpanderSpec(e.name, e.address, e.interrupt) for e in pin_map.expanders]
    bus = simulated_bus(specs, factory, hz=hz)
    sink = Sink()
    driver = GpioDriver(pin_map, sink, pin_factory=factory, buses={1: bus})
    where = {(p.spot, p.circle): p for p in pin_map.inputs if p.kind == "sensor"}
    address = {e.name: e.address for e in pin_map.expanders}

    def drive(spot: int, circle: str, on: bool) -> None:
        spec = where[(spot, circle)]
        bus.chips[address[spec.expander]].set_input(spec.line, False if on else None)

    try:
        driver.apply(Light("spot4.action", "blink"))  # a lamp blinking on a board meanwhile
        run(driver, sink, drive, sorted(where), samples, gap_s, rng)
        transfers = bus.transfers
        chips = driver.health()["expanders"].values()
    finally:
        driver.close()
        factory.close()
    interrupts = sum(c["interrupts"] for c in chips)
    missed = sum(c["missed_interrupts"] for c in chips)
    print(
        f"expander bus: {transfers} transfers at {hz} Hz, {interrupts} interrupts serviced, "
        f"{missed} edges found by the reconcile read instead"
    )
    return sink.latencies_ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000, help="edges per kind of pin")
    parser.add_argument("--gap-ms", type=float, default=4.0, help="mean pause between edges")
    parser.add_argument("--hz", type=int, default=400_000, help="the simulated I2C clock")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.samples < 10:
        parser.error("--samples must be at least 10")
    rng = random.Random(args.seed)
    gap_s = args.gap_ms / 1000
    pi = pi_pins(args.samples, gap_s, rng)
    expander = expander_pins(args.samples, gap_s, args.hz, rng)
    for name, values in (("pi", pi), ("expander", expander)):
        print(
            f"{name}: {len(values)} edges, mean {statistics.fmean(values):.3f} ms, "
            f"max {max(values):.3f} ms"
        )
    print(
        f"pi_p50_ms={percentile(pi, 0.5):.3f} expander_p50_ms={percentile(expander, 0.5):.3f} "
        f"pi_samples={len(pi)} expander_samples={len(expander)}"
    )
    print(f"pi_p99_ms={percentile(pi, 0.99):.3f} expander_p99_ms={percentile(expander, 0.99):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
