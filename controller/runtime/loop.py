"""The one place that owns the table: a queue in, effects out to adapters.

Driver threads, MQTT callbacks and the control socket only :meth:`TableRuntime.submit`
events. The loop (:meth:`TableRuntime.run`, on the daemon's main thread) takes them one at
a time, stamps ``t`` from the runtime's clock when it is missing, hands them to the
:class:`~controller.journal.JournaledTable` (on disk before any effect is carried out) and
carries out the effects:

- :class:`~controller.table.effects.Light`: the ``lights`` adapter (``GpioDriver.apply``);
- prompts, alarms, refusals and settlements: the dealer's feed (:meth:`recent`, the log);
- publish requests: the journal wrote them to the outbox in the same transaction, and the
  link's thread sends them from there: ``on_outbox()`` wakes it once the events waiting
  are handled (after their prompts, so the link's thread does not take the GIL from the
  loop before the dealer's display has its prompt).

With ``collect_garbage`` (the daemon), :meth:`TableRuntime.run` takes Python's cyclic garbage
collection into its own hands: the objects of the start-up are frozen (never scanned again)
and the collector runs only on the loop's thread, between events, once their prompts are out
(:data:`GC_EVERY`), where CPython would run it in whichever allocation crosses its
threshold: a dealer's prompt among them (a collection of the young generations took 1-10 ms
in the running daemon on a loaded machine, a full one 75 ms; docs/runtime.md, Benchmarks).

Every ``tick_ms`` it polls the inputs (GPIO debounce), samples the health of the drivers
and of the link through the watchers (:mod:`controller.runtime.watch`), hands the table a
``Tick`` and calls ``on_tick`` (the systemd watchdog). Faults latch in the table (journaled);
a journal that cannot be written latches here, in memory, until a ``TableFault`` records it.
While any fault is latched the lights are held in their safe state (``safe_state``).

With a ``rotator`` (:class:`~controller.runtime.rotator.JournalRotator`) the loop also rotates
the journal into gaming-day files, on its own thread and only between rounds: looked at
once a second from the tick, or at once when asked (:meth:`TableRuntime.rotate_journal`);
that, the WAL's checkpoint and a journal fault are :mod:`controller.runtime.upkeep`.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from controller.errors import EventError, JournalError
from controller.journal import JournaledTable
from controller.journal.file import WAL_CHECKPOINT_EVENTS
from controller.runtime.lighttest import (  # noqa: F401 - the tests' names, from here
    LIGHT_TEST_OFF_MS,
    LIGHT_TEST_ON_MS,
    LampTest,
    LightTest,
    LightTests,
)
from controller.runtime.recall import RecallLast, SettledRound
from controller.runtime.rotator import JournalRotator
from controller.runtime.upkeep import JournalUpkeep
from controller.table import events as ev
from controller.table.effects import (
    Alarm,
    AlarmCleared,
    Effect,
    Light,
    Prompt,
    Publish,
    Refused,
    Settled,
    Step,
)

log = logging.getLogger("table-controller")

FEED_LENGTH = 50
"""Prompts, alarms, refusals and settlements kept for the dealer display and diagnostics."""

GC_EVERY = 700
"""With ``collect_garbage``: the loop collects the youngest generation once this many
container objects were allocated (net) since the last collection, as CPython's own first
threshold; every 10th collection takes the middle generation too, every 100th all three."""


class RuntimeClock:
    """Monotonic milliseconds that never run behind the journal: after a restart (or a
    reboot, which restarts ``time.monotonic``) readings continue above the last ``t`` the
    journal holds, so event times only ever increase."""

    def __init__(self, not_before_ms: int | None = None, source: Callable[[], int] | None = None):
        self._source = source or (lambda: time.monotonic_ns() // 1_000_000)
        now = self._source()
        self._offset = (
            0 if not_before_ms is None or now > not_before_ms else not_before_ms + 1 - now
        )

    def __call__(self) -> int:
        return self._source() + self._offset


@dataclasses.dataclass
class _Item:
    event: ev.Event | None
    reply: Future[Any] | None = None
    call: Callable[[], Any] | None = None
    read_ns: int = 0  # the driver's read that made it (0: not known), for the trace
    queued_ns: int = 0


_FIELDS: dict[type, tuple[str, tuple[str, ...]]] = {}  # kind: (its name, its fields)
_PLAIN = (str, int, float, bool, type(None))


def effect_dict(effect: Effect, t: int | None) -> dict[str, Any]:
    """An effect as the dealer feed shows it: its kind, fields and the event time (the
    fields as ``dataclasses.asdict`` gives them; read one by one when they are plain
    values, as every feed effect's are: ``asdict`` copies deeply, at ten times the cost)."""
    kind = type(effect)
    known = _FIELDS.get(kind)
    if known is None:
        known = _FIELDS[kind] = (
            kind.__name__.lower(),
            tuple(f.name for f in dataclasses.fields(effect)),
        )
    name, names = known
    out: dict[str, Any] = {"kind": name, "t": t}
    for field in names:
        value = getattr(effect, field)
        if type(value) not in _PLAIN:
            return {"kind": name, "t": t, **dataclasses.asdict(effect)}
        out[field] = value
    return out


class TableRuntime(LightTests, JournalUpkeep):
    """Runs ``table``; see the module docstring.

    ``lights(effect)`` carries out a light; ``safe_state(reason | None)`` latches (a reason)
    or releases (None) the lights' safe state; ``polls`` run each tick with the clock
    reading (``GpioDriver.poll``); ``watches`` run each tick and return events for the table;
    ``healthy()`` says whether the watchdog may be pinged; ``on_tick(healthy)`` is called at
    the end of each tick; ``trace(record)`` (benchmarks) hears, for each journaled event,
    ``time.monotonic_ns()`` when its journal commit returned and when its effects were
    carried out, with the stages before (``bench/table_latency.py``) and the loop thread's
    CPU time from picking the event up to its effects; ``rotator`` rotates the journal
    between rounds (its :meth:`~controller.runtime.rotator.JournalRotator.status` is the
    status' ``journal``).
    ``recall_ms``: how long the console's ``recall_last`` shows the last settled round on
    the dealer display; ``hold_ms``: how long the settlement stays there after end round (0:
    not at all) (:mod:`controller.runtime.recall`; display only, nothing journaled).
    ``on_outbox()`` is called on the loop's thread after events that wrote outbox rows are
    handled, their effects carried out (``TablePublisher.wake``). ``collect_garbage``:
    :meth:`run` collects Python's cyclic garbage itself, between events (module docstring).
    ``reserve_wal``: bytes of the journal's WAL file :meth:`run` has written before the first
    event (:meth:`~controller.journal.file.Journal.reserve_wal`; 0: none).
    """

    def __init__(
        self,
        table: JournaledTable,
        *,
        clock: Callable[[], int],
        tick_ms: int = 100,
        lights: Callable[[Light], Any] | None = None,
        safe_state: Callable[[str | None], None] | None = None,
        polls: tuple[Callable[[int], None], ...] = (),
        watches: tuple[Callable[[int], list[ev.Event]], ...] = (),
        healthy: Callable[[], bool] | None = None,
        on_tick: Callable[[bool], None] | None = None,
        trace: Callable[[dict[str, Any]], None] | None = None,
        lamp_test: LampTest | None = None,
        rotator: JournalRotator | None = None,
        recall_ms: int = 30_000,
        hold_ms: int = 0,
        on_outbox: Callable[[], None] | None = None,
        collect_garbage: bool = False,
        reserve_wal: int = 0,
    ):
        self.table = table
        self.clock = clock
        self.tick_ms = tick_ms
        self._lights = lights
        self._safe_state = safe_state
        self._polls = polls
        self._watches = watches
        self._healthy = healthy
        self._on_tick = on_tick
        self._trace = trace
        self._lamp_test = lamp_test
        self._rotator = rotator
        self._on_outbox = on_outbox
        self._rows_written = False  # outbox rows the link's thread has not been told of
        self._collect_garbage = collect_garbage
        self._reserve_wal = reserve_wal
        self._gc_managed = False  # run() holds the collector (disabled, collected here)
        self.collections = 0  # garbage collections the loop made
        self.settled_round = SettledRound(recall_ms, hold_ms)
        self._light_test: LightTest | None = None
        self._light_test_pending: str | None = None  # who asked, for the next round break
        # SimpleQueue: put and get in C, no Condition in Python on the prompt's path (a
        # driver's thread queues, the loop takes: both sides of every card's hand-off)
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._feed: deque[dict[str, Any]] = deque(maxlen=FEED_LENGTH)
        self._feed_lock = threading.Lock()
        self._settlements: list[dict[str, Any]] = []  # the round's, however long the feed
        self.journal_fault: str | None = None
        self.dropped = 0
        self.events_handled = 0
        self.refused = 0
        self._safe: str | None = None
        self._next_tick = clock()
        self._status: dict[str, Any] = {}
        self._changed = threading.Condition()
        self._notified: tuple[Any, ...] = ()
        self._restore()

    # -- any thread ------------------------------------------------------------------

    def submit(
        self, event: ev.Event, reply: Future[Step] | None = None, *, read_ns: int = 0
    ) -> None:
        """Hand the loop an event (thread-safe; never blocks). ``reply`` gets its step;
        ``read_ns``: ``time.monotonic_ns()`` of the driver's read that made it (the trace)."""
        self._queue.put(_Item(event, reply, None, read_ns, time.monotonic_ns()))

    def call(self, fn: Callable[[], Any], timeout_s: float = 5.0) -> Any:
        """Run ``fn`` on the loop's thread, between two events, and return its result
        (any thread but the loop's; raises TimeoutError if the loop does not get to it)."""
        reply: Future[Any] = Future()
        self._queue.put(_Item(None, reply, fn))
        return reply.result(timeout_s)

    def wait_change(self, timeout_s: float) -> bool:
        """Wait until the loop publishes a new status after a journaled event (or the
        timeout, in seconds); True if one came. Any thread: the web pages' live streams."""
        with self._changed:
            return self._changed.wait(timeout_s)

    def recent(self) -> list[dict[str, Any]]:
        """The dealer feed: the last prompts, alarms, refusals and settlements, oldest first."""
        with self._feed_lock:
            return list(self._feed)

    def status(self) -> dict[str, Any]:
        """The table as the control socket and the web pages show it (a copy made by the
        loop after each step: the hole card is hidden until the dealer's turn).
        ``settlements`` holds every settled wager of the round on the layout (feed items),
        however many a full table makes; it empties at end round."""
        return self._status

    # -- the loop's thread -------------------------------------------------------------

    def _restore(self) -> None:
        """After start-up or recovery: show the lights the table holds, latch safe state."""
        if self._lights is not None:
            for name, state in sorted(self.table.state.lights.items()):
                self._lights(Light(name, state))
        rec = self.table.recovery
        if rec.events:
            log.info("recovered %d events and %d rounds from the journal", rec.events, rec.rounds)
        self._update_safe_state()
        self._publish_status()

    def run(self, stop: threading.Event) -> None:
        """Take events until ``stop`` is set, ticking every ``tick_ms`` (with
        ``collect_garbage``: collecting the garbage between events, the collector given
        back as it was when it returns). Before the first event, the journal writes a made-up
        settling event and rolls it back (:meth:`~controller.journal.file.Journal.warm`): the
        first round's settling card then finds its statements compiled, as every later one.
        With ``reserve_wal``, the WAL file is grown first, so that no commit of the first
        rounds grows it (:meth:`~controller.journal.file.Journal.reserve_wal`)."""
        if self._reserve_wal:
            self.table.journal.reserve_wal(self._reserve_wal)
        self.table.journal.warm()
        managed = self._collect_garbage and gc.isenabled()
        if managed:
            gc.collect()
            gc.freeze()  # the start-up's objects: never scanned again
            gc.disable()
            self._gc_managed = True
        try:
            while not stop.is_set():
                self.run_once()
        finally:
            if managed:
                self._gc_managed = False
                gc.unfreeze()
                gc.enable()

    def _collect(self) -> None:
        """One collection, if :data:`GC_EVERY` objects were allocated since the last: on
        the loop's thread, with the events waiting handled (``run`` with
        ``collect_garbage``)."""
        if self._gc_managed and gc.get_count()[0] >= GC_EVERY:
            self.collections += 1
            n = self.collections
            gc.collect(2 if n % 100 == 0 else 1 if n % 10 == 0 else 0)

    def run_once(self, max_wait_s: float | None = None) -> None:
        """Handle the events waiting (or wait up to the next tick for one), then tick if due."""
        now = self.clock()
        wait = max(0.0, (self._next_tick - now) / 1000)
        if max_wait_s is not None:
            wait = min(wait, max_wait_s)
        try:
            item = self._queue.get(timeout=wait)
        except queue.Empty:
            item = None
        while item is not None:
            self._handle(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                item = None
        self._wake_link()
        if self.clock() >= self._next_tick:
            self._tick()
            self._wake_link()
        self._collect()

    def drain(self) -> int:
        """Handle every event already queued (shutdown: finish writing); returns how many."""
        n = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                self._wake_link()
                return n
            self._handle(item)
            n += 1

    def _wake_link(self) -> None:
        """Tell the link's thread that outbox rows were written (``on_outbox``), once for
        the events handled since the last call."""
        if self._rows_written:
            self._rows_written = False
            if self._on_outbox is not None:
                try:
                    self._on_outbox()
                except Exception:  # the link looks at the outbox on its own timeout too
                    log.exception("waking the jackpot link failed")

    def _tick(self) -> None:
        now = self.clock()
        self._next_tick = now + self.tick_ms
        for poll in self._polls:
            try:
                poll(now)
            except Exception:  # a poll must not stop the table: counted in its own health
                log.exception("input poll failed")
        for watch in self._watches:
            for event in watch(now):
                self._handle(_Item(event))
        if self.journal_fault is not None:
            self._retry_journal(now)
        self._handle(_Item(ev.Tick(t=now)))
        if self._light_test is not None and not self._light_test.result:
            self._step_light_test(now)
        elif (
            self._light_test_pending is not None
            and not self.table.round_in_progress
            and self._fault_reason() is None
        ):
            by, self._light_test_pending = self._light_test_pending, None
            _started, message = self._start_light_test(by)
            log.info("queued light test at the round break: %s", message)
        if (
            self.journal_fault is None
            and self.table.journal.wal_events >= WAL_CHECKPOINT_EVENTS
            and not self.table.round_in_progress
        ):
            self._checkpoint_wal()
        if self._rotator is not None and self.journal_fault is None:
            before = self._rotator.error
            self._rotator.tick(now)
            self._rotation_warning(before)
        self._publish_status()
        if self._on_tick is not None:
            self._on_tick(self.is_healthy())

    def is_healthy(self) -> bool:
        """Whether the watchdog may be pinged: the journal is writable and ``healthy()``."""
        return self.journal_fault is None and (self._healthy is None or self._healthy())

    def _handle(self, item: _Item) -> None:
        picked_ns = time.monotonic_ns()
        cpu_ns = time.thread_time_ns() if self._trace is not None else 0
        if item.call is not None:
            try:
                result = item.call()
            except Exception as exc:
                if item.reply is not None:
                    item.reply.set_exception(exc)
                return
            if item.reply is not None:
                item.reply.set_result(result)
            return
        event = item.event
        assert event is not None
        if event.t is None:
            event = dataclasses.replace(event, t=self.clock())
        if isinstance(event, RecallLast):  # the dealer display's, never the table's
            log.info("%s", self.settled_round.press(event.t or 0, self.table.snapshot()))
            self._publish_status()
            if item.reply is not None:
                item.reply.set_result(Step(True, (), journal=False))
            return
        if self.journal_fault is not None and not isinstance(event, ev.Tick):
            self.dropped += 1
            log.error("journal not writable: %s dropped (%s)", event.TYPE, self.journal_fault)
            if item.reply is not None:
                item.reply.set_exception(JournalError(self.journal_fault))
            return
        try:
            step = self.table.handle(event)
        except JournalError as exc:
            self._journal_failed(str(exc))
            if item.reply is not None:
                item.reply.set_exception(exc)
            return
        except EventError as exc:  # not a table event: a bug in an adapter, never fatal
            log.error("not a table event: %s", exc)
            if item.reply is not None:
                item.reply.set_exception(exc)
            return
        committed_ns = time.monotonic_ns()
        if step.journal:
            self.events_handled += 1
            if not self._rows_written:
                self._rows_written = any(isinstance(e, Publish) for e in step.effects)
        if isinstance(event, ev.EndRound) and step.accepted:
            self.settled_round.ended(event.t or self.clock())
        lines: list[tuple[int, str, tuple[Any, ...]]] = []
        self._carry_out(event, step, lines)
        if self._trace is not None and step.journal:
            carried_out_ns = time.monotonic_ns()  # before the trace's own record is made
            self._trace(
                {
                    "event": event.TYPE,
                    "seq": self.table.journal.events_written,
                    "read_ns": item.read_ns,
                    "queued_ns": item.queued_ns,
                    "picked_ns": picked_ns,
                    **self.table.stamps,
                    "committed_ns": committed_ns,
                    "carried_out_ns": carried_out_ns,
                    "loop_cpu_ns": time.thread_time_ns() - cpu_ns,
                    "prompts": sum(isinstance(e, Prompt) for e in step.effects),
                }
            )
        if item.reply is not None:
            item.reply.set_result(step)
        for level, message, args in lines:  # the dealer's display and who asked come first
            log.log(level, message, *args)

    def _carry_out(
        self,
        event: ev.Event,
        step: Step,
        lines: list[tuple[int, str, tuple[Any, ...]]] | None = None,
    ) -> None:
        """Carry out ``step``'s effects. Its log lines go to ``lines`` when given, for the
        caller to write once the prompt is out (a log record costs about as much as the
        rest of the effects), else to the log at once."""
        if lines is None:
            lines = []
            self._carry_out(event, step, lines)
            for level, message, args in lines:
                log.log(level, message, *args)
            return
        if not step.accepted:
            self.refused += 1
        fed: list[tuple[Effect, dict[str, Any]]] = []
        for effect in step.effects:
            if isinstance(effect, Light):
                if self._lights is not None:
                    self._lights(effect)
            elif isinstance(effect, AlarmCleared):
                lines.append(
                    (
                        logging.INFO,
                        "alarm %d cleared by itself (%s): %s: %s",
                        (effect.alarm, effect.code, effect.reason, effect.text),
                    )
                )
            elif isinstance(effect, (Prompt, Alarm, Refused, Settled)):
                fed.append((effect, effect_dict(effect, event.t)))
                if isinstance(effect, Alarm):
                    lines.append(
                        (
                            logging.WARNING,
                            "alarm %s: %s; %s",
                            (effect.code, effect.text, effect.action),
                        )
                    )
                elif isinstance(effect, Refused):
                    lines.append((logging.WARNING, "refused %s: %s", (effect.event, effect.reason)))
                elif isinstance(effect, Prompt):
                    lines.append((logging.INFO, "prompt: %s", (effect.text,)))
        if fed:
            self._to_feed(fed)
        if step.effects:
            self._update_safe_state()
        if not isinstance(event, ev.Tick) and (step.effects or step.accepted):
            self._publish_status()  # before the reply: who asked sees the change at once

    def _to_feed(self, fed: list[tuple[Effect, dict[str, Any]]]) -> None:
        """Put a step's feed items on the dealer feed (and its settlements on the round's),
        in order, under one hold of the feed's lock. ``round``: the table's after the event
        (end round's "place your bets" is the next round's); ``seq``: the journaled event
        that made them."""
        number = self.table.state.round_number
        seq = self.table.journal.events_written
        with self._feed_lock:
            for effect, item in fed:
                item["round"] = number
                item["seq"] = seq
                self._feed.append(item)
                if isinstance(effect, Settled):
                    if self._settlements and self._settlements[0]["round"] != number:
                        self._settlements = []
                    self._settlements.append(item)

    def _fault_reason(self) -> str | None:
        if self.journal_fault is not None:
            return f"journal: {self.journal_fault}"
        faults = self.table.state.faults
        if faults:
            return "; ".join(f"{k}: {d}" if d else k for k, (d, _a) in sorted(faults.items()))
        return None

    def _update_safe_state(self) -> None:
        reason = self._fault_reason()
        if reason != self._safe:
            self._safe = reason
            if self._safe_state is not None:
                self._safe_state(reason)

    def _publish_status(self) -> None:
        state = self.table.state
        with self._feed_lock:
            settlements = list(self._settlements)
        snapshot = self.table.snapshot()
        now = self.clock()
        self.settled_round.seen(snapshot, settlements, now)
        self._status = {
            "snapshot": snapshot,
            "round_in_progress": self.table.round_in_progress,
            "faults": {k: {"detail": d, "active": a} for k, (d, a) in sorted(state.faults.items())},
            "settlements": [s for s in settlements if s["round"] == state.round_number],
            "journal_fault": self.journal_fault,
            "jackpot_link": state.jackpot_link,
            "events_handled": self.events_handled,
            "events_refused": self.refused,
            "events_dropped": self.dropped,
            "journal_events": self.table.journal.events_written,
            "journal": self._rotator.status() if self._rotator is not None else None,
            "queue": self._queue.qsize(),
            "t": now,
            **self.settled_round.status(now),
        }
        test = self._light_test
        journal = self._status["journal"] or {}
        key = (
            self.table.journal.events_written,
            journal.get("last_rotation"),
            journal.get("rotation_error"),
            journal.get("pending"),
            self.refused,
            self.dropped,
            self.journal_fault,
            None if test is None else (test.index, test.result),
            self._light_test_pending,
            self.settled_round.presses,
        )
        if key != self._notified:  # something a page shows changed: wake the live streams
            self._notified = key
            with self._changed:
                self._changed.notify_all()
