"""``table-controller run --config FILE``: the daemon a table's Pi runs all shift.

:func:`run_table` wires a checked :class:`~controller.config.TableConfig` into a running
table: the journal (recovering whatever a crash left), the jackpot link's publisher, the
shoe, the camera, the GPIO pins and the control socket, all feeding one
:class:`~controller.runtime.loop.TableRuntime` on the main thread. systemd (Type=notify) hears
READY once everything is open, WATCHDOG only while the loop runs and the table is healthy,
and STOPPING on SIGTERM. The journal rotates into gaming-day files (``[journal]``,
:mod:`controller.runtime.rotator`) on the loop's thread, between rounds; a rotation that a
kill interrupted leaves a ``.part`` file, removed at start-up before the journal is opened.
``TABLE_CONTROLLER_TRACE=FILE`` (benchmarks only) appends one JSON
line per journaled event with the monotonic times of its commit and of its effects.
A clean stop: the inputs close first, the events already queued are
journaled, the lights go to their safe state, the link publishes the table's death message
(retained ``status`` offline, ``clean: true``), and the journal closes last.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from controller import build
from controller.errors import JournalError
from controller.journal import JournaledTable, rotation
from controller.journal.store import fsync_path
from controller.runtime import health
from controller.runtime.control import ControlServer
from controller.runtime.logring import RecentLog
from controller.runtime.loop import RuntimeClock, TableRuntime, effect_dict
from controller.runtime.rotator import JournalRotator
from controller.runtime.watch import DriverWatch, LinkWatch
from controller.table import events as ev

log = logging.getLogger("table-controller")


def _notify(*lines: str) -> None:
    try:
        from controller import sdnotify
    except ImportError:  # pragma: no cover - the module ships with the package
        return
    sdnotify.notify(*lines)


def _watchdog_ms() -> int | None:
    try:
        from controller import sdnotify
    except ImportError:  # pragma: no cover
        return None
    return sdnotify.watchdog_interval_ms()


LINK_ALARM_EVERY_S = 60.0
"""At most one table alarm per kind of link alarm in this many seconds; the rest go to the log."""
LINK_ALARMS_NOT_AT_TABLE = ("connect",)
BY_MAX = 64
"""Characters in the name of who asked for a journal rotation."""
"""Link alarms that stay in the log: a broker that cannot be reached is the link watch's
(``jackpot_link`` down, then the ``link`` fault)."""


class LinkAlarmGate:
    """The publisher's ``on_alarm``: logs every alarm and submits a
    :class:`~controller.table.events.LinkAlarm` for the alarm register, at most one per kind
    per ``every_s`` (``clock``: seconds); the ones held back are counted in the log and in the
    next one's detail. The detail (which may quote a refused message) is escaped and cut
    (``controller.link.messages.loggable``) for the log and the journal; the dealer's words
    are fixed per kind (``controller.table.view.link_alarm_words``). Called on the
    publisher's thread."""

    def __init__(
        self,
        submit: Callable[[ev.Event], None],
        *,
        every_s: float = LINK_ALARM_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._submit = submit
        self.every_s = every_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self.held: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, alarm: Any) -> None:
        from controller.link.messages import loggable  # the link's modules load with it

        kind, detail = loggable(str(alarm.kind), 60), loggable(str(alarm.detail))
        log.warning("jackpot link %s: %s", kind, detail)
        if kind in LINK_ALARMS_NOT_AT_TABLE:
            return
        if not ev.LINK_ALARM_KIND.fullmatch(kind):  # the journal must read it back
            kind, detail = "other", f"{kind[:40]}: {detail}"
        now = self._clock()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self.every_s:
                self.held[kind] += 1
                log.warning(
                    "jackpot link %s: not raised at the table again within %g s (%d held back)",
                    kind,
                    self.every_s,
                    self.held[kind],
                )
                return
            self._last[kind] = now
            held = self.held.pop(kind, 0)
        if held:
            detail += f" ({held} more of this kind before it, in the log)"
        self._submit(ev.LinkAlarm(kind, detail))


def _utc_ms() -> int:
    return time.time_ns() // 1_000_000


class TableDaemon:
    """Everything a running table holds, opened in order and closed in reverse.

    ``utc()``: the wall clock, UTC ms since the epoch (default the system's), stamped beside
    each journaled event and deciding the gaming day; tests move it on. The loop runs on the
    thread that made the daemon (it owns the journal's connection)."""

    def __init__(self, config: Any, *, password: str, utc: Callable[[], int] | None = None):
        self.config = config
        self.utc = utc or _utc_ms
        self.parts: list[tuple[str, Callable[[], None]]] = []
        table = JournaledTable(
            config.journal_path,
            config.rules,
            config.settings,
            checkpoint_every=config.checkpoint_every_events,
            wall_clock=self.utc,
        )
        self.table = table
        self.parts.append(("journal", table.close))
        self._note_profile(table, config)
        try:  # only now: the journal's lock says no rotation of another process is under way
            for path in rotation.remove_partials(config.journal_path):
                log.warning("removed %s: a journal rotation was interrupted there", path)
        except JournalError as exc:
            log.error("%s", exc)
        self._power_loss = self._last_stop(table)  # before anything is journaled this run
        state = table.state
        self.clock = RuntimeClock(state.now)
        self._started_t = self.clock()  # the table's times from here on are this process's
        self.gpio = None
        self.shoe = None
        self.camera = None
        self.publisher = None
        self.control: ControlServer | None = None
        self.started_ms = self.clock()
        self._runtime: TableRuntime | None = None
        self._pending: list[ev.Event] = [self._power_loss] if self._power_loss else []
        self.web = None
        self.audit = self._open_audit()
        from controller.runtime.clockwatch import ClockWatcher

        self.clock_watch = ClockWatcher(config.clock)  # asked now: this run's record
        self.parts.append(("clock", self.clock_watch.close))
        clock = self.clock_watch.state
        if config.clock.check_every_s:
            table.journal.record_clock(clock.source, clock.synchronised, clock.offset_ms)
        self.software = self._start_selfcheck(table)  # before any event: the start's result
        self.history: Any = None
        self.history_problem = "not started"
        self.started_epoch = time.time()
        self.log_ring = RecentLog()
        logging.getLogger().addHandler(self.log_ring)
        self.parts.append(("log ring", lambda: logging.getLogger().removeHandler(self.log_ring)))
        try:
            self._open(password)
        except BaseException:
            self.close()
            raise

    # -- opening ------------------------------------------------------------------------

    CLEAN_STOP = "clean-stop"
    """The marker a clean stop leaves in ``data_dir`` (issue 28 item 5)."""

    def _last_stop(self, table: Any) -> ev.PowerLoss | None:
        """Was the last stop clean? The marker a clean stop left says so (it is removed
        now); none, with events in the journal, is a power loss (or a kill, a crash),
        journaled with the last event and its UTC time once the runtime runs."""
        marker = self.config.data_dir / self.CLEAN_STOP
        if marker.exists():
            marker.unlink()
            fsync_path(marker.parent)
            return None
        row = table.journal.db.execute(
            "SELECT seq, utc_ms FROM events ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None  # a new journal: nothing stopped before
        seq, utc_ms = row[0], row[1] or 0
        text = ""
        if utc_ms:
            text = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(utc_ms / 1000))
        log.warning(
            "the last stop was not clean (no %s marker): power loss? last event %d%s",
            self.CLEAN_STOP, seq, f" at {text}" if text else "",
        )  # fmt: skip
        return ev.PowerLoss(seq, utc_ms, text)

    def _start_selfcheck(self, table: Any) -> Any:
        """The software self-check (issue 29 item 4, controller/runtime/software.py): run now,
        before the loop (its fault, if any, is the first event this run journals), then
        every ``[software] verify_every_s`` on its own thread."""
        from controller.runtime.software import KIND, SoftwareWatch
        from controller.selfcheck import SelfCheck

        check = SelfCheck("table", self.config.software.verify_every_s)
        latched = table.state.faults.get(KIND, ("", False))[1]
        watch = SoftwareWatch(check, table.journal, latched=latched)
        self._pending.extend(watch(self.clock()))
        self.parts.append(("selfcheck", check.start().close))
        return watch

    def _open_audit(self) -> Any:
        """The audit list (``DATA_DIR/audit.sqlite``, controller/audit.py) and this start in
        it, with a ``config_changed`` row when the config's digest is not the last start's
        (issue 28 item 1). A list that cannot be opened is logged; the table plays on."""
        from controller.audit import AUDIT_NAME, AuditLog, record_start

        try:
            audit = AuditLog(self.config.data_dir / AUDIT_NAME)
            if record_start(audit, self.config.source, self.config.checksum):
                log.warning("the config %s changed since the last start (in the audit list)",
                            self.config.source)  # fmt: skip
            return audit
        except Exception:
            log.exception("the audit list cannot be written: logins and actions are not kept")
            return None

    def _sink(self, event: ev.Event) -> None:
        runtime = self._runtime
        if runtime is None:
            self._pending.append(event)  # a driver spoke before the runtime existed
        else:
            runtime.submit(event)

    def _open(self, password: str) -> None:
        from controller.config import link_keys
        from controller.link.brokers import BrokerList
        from controller.link.publisher import TablePublisher
        from drivers.gpio import GpioDriver, make_pin_factory

        cfg = self.config
        now = self.clock()
        self.signer, self.verifier = link_keys(cfg)
        self.publisher = TablePublisher(
            cfg.journal_path,
            cfg.table_id,
            cfg.mqtt.host,
            cfg.mqtt.port,
            cfg.mqtt.username or cfg.table_id,
            password,
            window=cfg.mqtt.window,
            keepalive=cfg.mqtt.keepalive_s,
            tls_ca=str(cfg.mqtt.tls_ca) if cfg.mqtt.tls_ca else None,
            brokers=BrokerList(cfg.mqtt.brokers or [(cfg.mqtt.host, cfg.mqtt.port)]),
            signer=self.signer,
            verifier=self.verifier,
            # the table's clock stamps an award (the publisher's t is wall time)
            on_award=lambda award: self._sink(dataclasses.replace(award, t=None)),
            on_alarm=LinkAlarmGate(self._sink),
        )
        self.parts.append(("publisher", self.publisher.close))
        self.pin_factory = make_pin_factory(cfg.gpio.pin_factory)
        if self.pin_factory is not None:  # closed after the pins (parts close in reverse)
            self.parts.append(("pin factory", self.pin_factory.close))
        state = self.table.state
        believed = {f"sensors.{spot}.{circle}": on for (spot, circle), on in state.sensors.items()}
        believed["console.supervisor_key"] = state.supervisor_key
        self.gpio = GpioDriver(
            cfg.gpio.pin_map,
            self._sink,
            clock=self.clock,
            pin_factory=self.pin_factory,
            believed=believed,
            hold_believed=cfg.gpio.pin_factory == "mock",
            # an expander fault latched before a restart is told gone once all answer
            fault_reported=state.faults.get("gpio", ("", False))[1],
        )
        self.parts.append(("gpio", self.gpio.close))
        if cfg.settings.card_source in ("shoe", "both"):
            from drivers.shoe import ShoeReader

            self.shoe = ShoeReader(
                cfg.shoe.url,
                self._sink,
                clock=self.clock,
                heartbeat_timeout_ms=cfg.shoe.heartbeat_timeout_ms,
                reconnect_min_ms=cfg.shoe.reconnect_min_ms,
                reconnect_max_ms=cfg.shoe.reconnect_max_ms,
            )
            self.parts.append(("shoe", self.shoe.close))
        if cfg.camera.enabled or cfg.settings.card_source in ("camera", "both"):
            from drivers.camera import CameraReader

            self.camera = CameraReader(
                cfg.camera.source,
                self._sink,
                self.clock,
                forget_after_frames=cfg.camera.forget_after_frames,
            )
            self.parts.append(("camera", self.camera.close))

        state = self.table.state
        watches: list[Callable[[int], list[ev.Event]]] = []
        link = LinkWatch(
            cfg.mqtt.ack_timeout_s * 1000,
            cfg.mqtt.link_fault_after_s * 1000,
            now_ms=now,
            up=state.jackpot_link,
            reported=state.faults.get("link", ("", False))[1],
            controller_timeout_ms=cfg.mqtt.controller_timeout_s * 1000,
        )
        publisher = self.publisher
        clock_watch, refuse = self.clock_watch, cfg.clock.refuse_progressive
        alarmed = {"clock": False}

        def link_watch(t: int) -> list[ev.Event]:
            h = publisher.health()
            c = h["controller"]  # its signed heartbeat (issue 28 item 3)
            heard = None if c["heard_age_s"] is None else int(c["heard_age_s"] * 1000)
            problem = clock_watch.problem  # the table's clock (issue 28 item 6)
            out = link.update(
                t, h["connected"], h["depth"], h["last_ack"], c["state"], heard,
                clock_problem=bool(problem) and refuse,
            )  # fmt: skip
            if problem and not alarmed["clock"] and not refuse:  # refusing says it already
                out.append(ev.LinkAlarm("clock_unsynchronised", problem, t=t))
            alarmed["clock"] = bool(problem)
            return out

        watches.append(link_watch)
        watches.append(self.software)  # each hourly result, on the loop's thread
        self.link_watch = link
        for kind, driver, fault_after_s in (
            ("shoe", self.shoe, cfg.shoe.fault_after_s),
            ("camera", self.camera, cfg.camera.fault_after_s),
        ):
            if driver is None:
                continue
            watch = DriverWatch(
                kind,
                fault_after_s * 1000,
                now_ms=now,
                reported=state.faults.get(kind, ("", False))[1],
            )

            def driver_watch(t: int, driver=driver, watch=watch) -> list[ev.Event]:
                h = driver.health()
                return watch.update(t, bool(h.get("connected")), str(h.get("state") or ""))

            watches.append(driver_watch)

        gpio = self.gpio

        def safe_state(reason: str | None) -> None:
            if reason is None:
                gpio.clear_fault()
            else:
                gpio.fault(reason)

        watchdog_ms = _watchdog_ms()
        self._last_ping = 0.0

        def on_tick(healthy: bool) -> None:
            if watchdog_ms and healthy:
                now_s = time.monotonic()
                if now_s - self._last_ping >= watchdog_ms / 2000:
                    self._last_ping = now_s
                    _notify("WATCHDOG=1")

        trace = None
        trace_path = os.environ.get("TABLE_CONTROLLER_TRACE")
        if trace_path:  # benchmarks only: one JSON line per journaled event, monotonic ns
            trace_file = open(trace_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
            self.parts.append(("trace", trace_file.close))

            def trace(record: dict[str, Any]) -> None:
                trace_file.write(json.dumps(record) + "\n")

        journal_cfg = cfg.journal
        self.rotator = JournalRotator(
            self.table,
            journal_cfg.gaming_day,
            keep_days=journal_cfg.keep_days,
            rotate_on_upgrade=journal_cfg.rotate_on_upgrade,
            utc=self.utc,
            keepalive=(lambda: _notify("WATCHDOG=1")) if watchdog_ms else None,
        )
        self.runtime = TableRuntime(
            self.table,
            clock=self.clock,
            tick_ms=cfg.tick_ms,
            lights=gpio.apply,
            safe_state=safe_state,
            polls=(gpio.poll,),
            watches=tuple(watches),
            healthy=self._threads_alive,
            on_tick=on_tick,
            trace=trace,
            lamp_test=gpio,
            rotator=self.rotator,
            recall_ms=cfg.web.recall_s * 1000,  # the dealer display's recall_last (issue 30)
            hold_ms=cfg.web.hold_settlement_s * 1000,
        )
        self._runtime = self.runtime
        for event in self._pending:
            self.runtime.submit(event)
        self._pending.clear()
        self.control = ControlServer(cfg.control.socket, self.handle_request)
        self.parts.append(("control socket", self.control.close))
        self._open_history()
        if cfg.web.enabled:
            from controller.accounts import AccountStore
            from controller.web.access import Access
            from controller.web.server import WebServer

            access = Access(AccountStore(cfg.web.users_file, cfg.web.password_hash), self.audit)
            self.web = WebServer(
                self, bind=cfg.web.bind, port=cfg.web.port, password_hash=cfg.web.password_hash,
                access=access,
            ).start()  # fmt: skip
            self.parts.append(("web", self.web.close))

    def _open_history(self) -> None:
        """The charts' history (``data_dir/history.sqlite``, :mod:`.history`): a table whose
        history cannot be opened plays on without it (logged; the page says why)."""
        from controller.journal.library import JournalLibrary
        from controller.runtime.history import HISTORY_NAME, HistoryRecorder, HistoryStore

        cfg = self.config
        try:
            store = HistoryStore(cfg.journal_path.with_name(HISTORY_NAME))
        except Exception as exc:
            self.history_problem = str(exc)
            log.error("history not kept: %s (the table plays on)", exc)
            return
        self.parts.append(("history file", store.close))
        self.history = HistoryRecorder(
            store,
            JournalLibrary(cfg.journal_path),
            self._history_now,
            rules=cfg.rules,
            utc=self.utc,
        ).start()
        self.parts.append(("history", self.history.close))

    def _history_now(self) -> dict[str, Any]:
        status = self.runtime.status()
        snap = status.get("snapshot") or {}
        link = self.publisher.health() if self.publisher is not None else {}
        # the progressive meters, once the table knows them: the status (as the dealer
        # display reads them, ``pool`` and ``amount``) or the link
        meters = status.get("meters") or getattr(self.publisher, "meters", None)
        if callable(meters):
            meters = meters()
        if isinstance(meters, list):
            meters = {
                m["pool"]: m.get("amount") for m in meters if isinstance(m, dict) and m.get("pool")
            }
        return {
            "round": snap.get("round"),
            "phase": snap.get("phase"),
            "link_up": status.get("jackpot_link"),
            "connected": link.get("connected"),
            "outbox": link.get("depth"),
            "shoe": self.shoe.health() if self.shoe is not None else None,
            "meters": meters if isinstance(meters, dict) else None,
        }

    def history_series(self, hours: float) -> dict[str, Any]:
        """The charts' lines over the last ``hours`` (:func:`.history.series`), with the
        recorder's state; ``ok`` False and ``error`` when no history is kept."""
        from controller.runtime.history import series

        recorder = self.history
        if recorder is None:
            return {"ok": False, "error": f"no history is kept: {self.history_problem}"}
        recorder.want_par(15.0)  # the first time: computed now (seconds), then kept
        rows = recorder.store.samples(self.utc() - int(hours * 3_600_000))
        return {
            "ok": True,
            "hours": hours,
            **recorder.state(),
            "par_ready": recorder.par is not None,
            # the main game's reference line once computed (never waited for here)
            **series(
                rows,
                recorder.par,
                main_edge=recorder.main_edge,
                main_problem=recorder.main_edge_problem,
            ),
        }

    def _threads_alive(self) -> bool:
        return all(part is None or part.alive() for part in (self.publisher, self.shoe))

    @staticmethod
    def _note_profile(table: JournaledTable, config: Any) -> None:
        """The journal's meta ``game_sha256``: the SHA-256 of the profile this run plays
        (issue 29 item 6; the runs' build ids say the software)."""
        digest = getattr(config, "game_sha256", "")
        if not digest:
            return
        before = table.journal.meta().get("game_sha256")
        if before != digest:
            if before:
                log.warning(
                    "the profile %s changed since the last run: sha256 %s, was %s",
                    config.game,
                    digest,
                    before,
                )
            table.journal.set_meta("game_sha256", digest)
        floor = config.journal.describe_floor()
        if floor:
            log.warning("%s", floor.removeprefix("; "))

    # -- health ------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {"link": self.publisher.health() if self.publisher else None}
        if out["link"] is not None:  # the limits the link watch judges by (docs/config.md)
            mqtt = self.config.mqtt
            out["link"]["controller_timeout_s"] = mqtt.controller_timeout_s
            out["link"]["ack_timeout_s"] = mqtt.ack_timeout_s
        for name in ("shoe", "camera", "gpio"):
            part = getattr(self, name)
            out[name] = part.health() if part is not None else None
        return out

    # -- what the web pages read (controller.web.server.TableSource) -----------------------

    def identity(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "table": cfg.table_id,
            "property": cfg.property,
            "game": cfg.game,
            "version": build.version(),
            "build": build.software(),  # the version and the release manifest's SHA-256
            "config_checksum": cfg.checksum,
            "started": round(self.started_epoch, 3),
        }

    def status(self) -> dict[str, Any]:
        """The table's runtime status, with ``meters``: the progressive meters the link
        last read (``pool``, ``amount`` in cents...; empty before any, or without a link)."""
        meters = self.publisher.meters() if self.publisher is not None else []
        status = {**self.runtime.status(), "meters": meters, "clock": self.clock_watch.health()}
        status["software"] = self.software.selfcheck.health()  # the self-check's last result
        watch = getattr(self, "link_watch", None)
        if watch is not None and not status.get("jackpot_link", True):
            status["jackpot_link_why"] = watch.why  # a LINK_WHY code: the pages' words
            status["jackpot_link_words"] = ev.LINK_WHY.get(watch.why or "", "")
        return status

    def feed(self) -> list[dict[str, Any]]:
        return self.runtime.recent()

    STALE_LOOP_MS = 5000

    def healthy(self) -> tuple[bool, list[str]]:
        """For ``/healthz``: the loop ticks, the journal is writable, the driver threads
        live, the shoe is online, the jackpot link is up, no fault is present or latched
        and no blocking alarm is active (:mod:`.health`)."""
        problems = health.problem_texts(self.problems())
        return not problems, problems

    def problems(self) -> list[health.Problem]:
        """What is wrong now (:func:`.health.table_problems`, and what only the daemon sees:
        the loop's ticks, its threads, the clock), for ``/healthz`` and the page's summary."""
        out: list[health.Problem] = []
        status = self.runtime.status()
        age = self.clock() - int(status.get("t") or 0)
        if age > self.STALE_LOOP_MS:
            stale = f"the table loop has not ticked for {age / 1000:.1f} s"
            out.append(health.Problem(stale, "loop"))
        if not self._threads_alive():
            out.append(health.Problem("a driver or link thread has stopped", "threads"))
        if self.clock_watch.problem:
            out.append(health.Problem(f"clock: {self.clock_watch.problem}", "clock"))
        watch = getattr(self, "link_watch", None)
        why = getattr(watch, "why", None)
        since = getattr(watch, "down_since", None)
        return out + health.table_problems(status, why, since)

    def times(self) -> dict[str, int]:
        """The table's clock and the wall clock now (ms), and the table's clock when this
        process started: the pages turn the table's times (alarms) into times of day."""
        return {"t": self.clock(), "utc_ms": self.utc(), "since_t": self._started_t}

    def last_rounds(self, n: int) -> list[dict[str, Any]]:
        from controller.journal import Journal

        with Journal(self.config.journal_path) as journal:  # its own connection: any thread
            return journal.last_rounds(n)

    def round_script(self, number: int) -> str:
        from controller.journal import Journal

        with Journal(self.config.journal_path) as journal:
            return journal.round_script(number)

    def submit_wait(self, event: ev.Event) -> Any:
        return self._submit_wait(event)

    def light_test(self, by: str) -> tuple[bool, str]:
        return self.runtime.start_light_test(by)

    def light_test_state(self) -> dict[str, Any] | None:
        return self.runtime.light_test_state()

    def rotate_journal(self, by: str) -> dict[str, Any]:
        """Start a new journal file on demand (the diagnostics page's button, the control
        socket's ``rotate-journal``): at once between rounds, else when the round in
        progress is settled; ``by``: who asked (logged, in the status). Returns ``ok`` and
        either ``rotated`` (bool), ``archive`` (file name or None), ``first_event``,
        ``last_event``, ``events``, ``gaming_day``, ``removed``, ``message``; or ``deferred``
        (a sentence: the round in progress); or ``error``. Any thread but the loop's."""
        by = str(by).strip()
        if not by or len(by) > BY_MAX:
            return {"ok": False, "error": f"say who asks: by must be 1 to {BY_MAX} characters"}
        return self.runtime.rotate_journal(by)

    def recent_log(self) -> list[dict[str, Any]]:
        """The log records kept (:class:`.logring.RecentLog`: warnings and errors apart from
        the others), oldest first."""
        return self.log_ring.records()

    def log_kept(self) -> dict[str, int]:
        return self.log_ring.kept()

    def wait_change(self, timeout_s: float) -> None:
        self.runtime.wait_change(timeout_s)

    # -- the control socket ---------------------------------------------------------------

    def handle_request(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        if op == "status":
            return {
                "ok": True,
                "table": self.config.table_id,
                "version": build.version(),
                "build": build.software(),
                "config_checksum": self.config.checksum,
                "status": self.status(),  # with the meters and why the link is down
                "feed": self.runtime.recent(),
                "health": self.health(),
            }
        if op == "wager":
            spot, circle, amount = request.get("spot"), request.get("circle"), request.get("amount")
            for name, value in (("spot", spot), ("amount", amount)):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    return {"ok": False, "error": f"wager: {name} must be a whole number >= 0"}
            if not isinstance(circle, str):
                return {"ok": False, "error": 'wager: circle must be text, e.g. "main"'}
            step = self._submit_wait(ev.WagerAmount(spot, circle, amount))
            return {
                "ok": True,
                "accepted": step.accepted,
                "effects": [effect_dict(e, None) for e in step.effects],
            }
        if op in ("input", "press"):
            name = request.get("name")
            if not isinstance(name, str):
                return {"ok": False, "error": f'{op}: name must be text, e.g. "console.next"'}
            if self.config.gpio.pin_factory != "mock":
                return {
                    "ok": False,
                    "error": f'{op} refused: simulated inputs need [gpio] pin_factory = "mock"; '
                    "this table has real pins",
                }
            if op == "input":
                active = request.get("active")
                if not isinstance(active, bool):
                    return {"ok": False, "error": "input: active must be true or false"}
                self.gpio.simulate(name, active)
                return {"ok": True}
            # held, then released, each longer than the debounce time: a shorter gap between
            # two presses is bounce, and the driver rightly counts it as one press
            hold_s = (self.config.gpio.pin_map.button_debounce_ms + 15) / 1000
            self.gpio.simulate(name, True)
            time.sleep(hold_s)
            self.gpio.simulate(name, False)
            time.sleep(hold_s)
            return {"ok": True}
        if op == "rotate-journal":
            by = request.get("by")
            if not isinstance(by, str):
                return {
                    "ok": False,
                    "error": 'rotate-journal: by must be text: who asks, e.g. "j.smith"',
                }
            return self.rotate_journal(by)
        return {
            "ok": False,
            "error": f"unknown op {op!r}; ops are status, wager, input, press, rotate-journal",
        }

    def _submit_wait(self, event: ev.Event, timeout: float = 5.0):
        reply: concurrent.futures.Future = concurrent.futures.Future()
        self.runtime.submit(event, reply)
        return reply.result(timeout)

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close every part in reverse order of opening; safe twice."""
        parts, self.parts = self.parts, []
        ordered = dict(reversed(parts))
        # inputs first, then write what they queued, then lights safe, link goodbye, journal
        for name in ("web", "control socket", "shoe", "camera"):
            if name in ordered:
                with contextlib.suppress(Exception):
                    ordered.pop(name)()
        if self._runtime is not None:
            with contextlib.suppress(Exception):
                n = self._runtime.drain()
                if n:
                    log.info("journaled %d queued events before stopping", n)
        clean = "journal" in ordered
        last = getattr(getattr(self.table, "journal", None), "events_written", None)
        for name, close in ordered.items():
            try:
                close()
            except Exception:
                clean = clean and name != "journal"
                log.exception("closing the %s failed", name)
        if clean:  # the next start knows this stop was clean (issue 28 item 5)
            marker = self.config.data_dir / self.CLEAN_STOP
            try:
                with open(marker, "w", encoding="utf-8") as handle:
                    json.dump({"last_event": last, "utc_ms": self.utc()}, handle)
                    handle.flush()
                    os.fsync(handle.fileno())
                fsync_path(marker.parent)
            except OSError:
                log.exception("cannot write %s: the next start will report a power loss", marker)


def run_table(config: Any, *, stop: threading.Event | None = None) -> int:
    """Run the table until SIGTERM/SIGINT (or ``stop``); returns the exit status."""
    from controller.config import check_paths, read_password

    problems = check_paths(config)
    if problems:
        for problem in problems:
            log.error("%s", problem)
        return 2
    password = read_password(config)
    config.data_dir.mkdir(parents=True, exist_ok=True)
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    daemon = TableDaemon(config, password=password)
    try:
        snap = daemon.table.snapshot()
        log.info(
            "table %s running %s: round %s, phase %s; control socket %s",
            config.table_id,
            config.game,
            snap["round"],
            snap["phase"],
            config.control.socket,
        )
        _notify("READY=1", f"STATUS=table {config.table_id} round {snap['round']}")
        daemon.runtime.run(stop)
        _notify("STOPPING=1")
        log.info("stopping: closing the inputs, the journal and the jackpot link")
    finally:
        daemon.close()
    return 0
