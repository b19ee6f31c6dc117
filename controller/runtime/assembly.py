"""Assembling a running table at start: the parts :class:`~controller.runtime.daemon.TableDaemon`
opens, in order, and what it notes before anything is journaled.

Before the runtime exists: the game profile's digest in the journal's meta
(:func:`note_profile`), whether the last stop was clean (:func:`last_stop`, the marker
:data:`CLEAN_STOP`), the audit list (:func:`open_audit`) and the software self-check
(:func:`start_selfcheck`). Then :func:`open_parts`: the jackpot link's publisher (its alarms
through a :class:`LinkAlarmGate`), the pins, the shoe and the camera, the fault watches, the
journal rotator, the :class:`~controller.runtime.loop.TableRuntime`, the control socket, the
charts' history (:func:`open_history`) and the web pages. Each part is appended to the
daemon's ``parts`` as it opens, so a start that fails half-way closes what it opened.
systemd hears WATCHDOG (:func:`notify`) from the loop's ticks while the table is healthy.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from controller.journal import JournaledTable
from controller.journal.file import WAL_RESERVE_BYTES
from controller.journal.store import fsync_path
from controller.runtime.control import ControlServer
from controller.runtime.loop import TableRuntime
from controller.runtime.rotator import JournalRotator
from controller.runtime.watch import DriverWatch, LinkWatch
from controller.table import events as ev

log = logging.getLogger("table-controller")


def notify(*lines: str) -> None:
    """Tell systemd (``sd_notify``): READY, WATCHDOG, STOPPING, STATUS lines."""
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


CLEAN_STOP = "clean-stop"
"""The marker a clean stop leaves in ``data_dir`` (issue 28 item 5)."""


def note_profile(table: JournaledTable, config: Any) -> None:
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


def last_stop(config: Any, table: Any) -> ev.PowerLoss | None:
    """Was the last stop clean? The marker a clean stop left says so (it is removed
    now); none, with events in the journal, is a power loss (or a kill, a crash),
    journaled with the last event and its UTC time once the runtime runs."""
    marker = config.data_dir / CLEAN_STOP
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
        CLEAN_STOP, seq, f" at {text}" if text else "",
    )  # fmt: skip
    return ev.PowerLoss(seq, utc_ms, text)


def start_selfcheck(daemon: Any, table: Any) -> Any:
    """The software self-check (issue 29 item 4, controller/runtime/software.py): run now,
    before the loop (its fault, if any, is the first event this run journals, queued in
    ``daemon._pending``), then every ``[software] verify_every_s`` on its own thread."""
    from controller.runtime.software import KIND, SoftwareWatch
    from controller.selfcheck import SelfCheck

    check = SelfCheck("table", daemon.config.software.verify_every_s)
    latched = table.state.faults.get(KIND, ("", False))[1]
    watch = SoftwareWatch(check, table.journal, latched=latched)
    daemon._pending.extend(watch(daemon.clock()))
    daemon.parts.append(("selfcheck", check.start().close))
    return watch


def open_audit(config: Any) -> Any:
    """The audit list (``DATA_DIR/audit.sqlite``, controller/audit.py) and this start in
    it, with a ``config_changed`` row when the config's digest is not the last start's
    (issue 28 item 1). A list that cannot be opened is logged (None); the table plays on."""
    from controller.audit import AUDIT_NAME, AuditLog, record_start

    try:
        audit = AuditLog(config.data_dir / AUDIT_NAME)
        if record_start(audit, config.source, config.checksum):
            log.warning("the config %s changed since the last start (in the audit list)",
                        config.source)  # fmt: skip
        return audit
    except Exception:
        log.exception("the audit list cannot be written: logins and actions are not kept")
        return None


def open_parts(daemon: Any, password: str) -> None:
    """Open the daemon's parts in order (each appended to ``daemon.parts``, closed in
    reverse): the jackpot link's publisher, the pins, the shoe, the camera; the watches, the
    journal rotator and the :class:`~controller.runtime.loop.TableRuntime` (the events the
    drivers submitted before it existed go to it first); the control socket, the history
    and the web pages."""
    from controller.config import link_keys
    from controller.link.brokers import BrokerList
    from controller.link.publisher import TablePublisher
    from drivers.gpio import GpioDriver, make_pin_factory

    cfg = daemon.config
    now = daemon.clock()
    daemon.signer, daemon.verifier = link_keys(cfg)
    daemon.publisher = TablePublisher(
        cfg.journal_path,
        cfg.table_id,
        cfg.mqtt.host,
        cfg.mqtt.port,
        cfg.mqtt.username or cfg.table_id,
        password,
        window=cfg.mqtt.window,
        batch_rows=cfg.mqtt.batch_rows,
        keepalive=cfg.mqtt.keepalive_s,
        tls_ca=str(cfg.mqtt.tls_ca) if cfg.mqtt.tls_ca else None,
        brokers=BrokerList(cfg.mqtt.brokers or [(cfg.mqtt.host, cfg.mqtt.port)]),
        signer=daemon.signer,
        verifier=daemon.verifier,
        # the table's clock stamps an award (the publisher's t is wall time)
        on_award=lambda award: daemon._sink(dataclasses.replace(award, t=None)),
        on_alarm=LinkAlarmGate(daemon._sink),
    )
    daemon.parts.append(("publisher", daemon.publisher.close))
    daemon.pin_factory = make_pin_factory(cfg.gpio.pin_factory)
    if daemon.pin_factory is not None:  # closed after the pins (parts close in reverse)
        daemon.parts.append(("pin factory", daemon.pin_factory.close))
    state = daemon.table.state
    believed = {f"sensors.{spot}.{circle}": on for (spot, circle), on in state.sensors.items()}
    believed["console.supervisor_key"] = state.supervisor_key
    daemon.gpio = GpioDriver(
        cfg.gpio.pin_map,
        daemon._sink,
        clock=daemon.clock,
        pin_factory=daemon.pin_factory,
        believed=believed,
        hold_believed=cfg.gpio.pin_factory == "mock",
        # an expander fault latched before a restart is told gone once all answer
        fault_reported=state.faults.get("gpio", ("", False))[1],
    )
    daemon.parts.append(("gpio", daemon.gpio.close))
    if cfg.settings.card_source in ("shoe", "both"):
        from drivers.shoe import ShoeReader

        daemon.shoe = ShoeReader(
            cfg.shoe.url,
            daemon._shoe_sink,
            clock=daemon.clock,
            heartbeat_timeout_ms=cfg.shoe.heartbeat_timeout_ms,
            reconnect_min_ms=cfg.shoe.reconnect_min_ms,
            reconnect_max_ms=cfg.shoe.reconnect_max_ms,
        )
        daemon.parts.append(("shoe", daemon.shoe.close))
    if cfg.camera.enabled or cfg.settings.card_source in ("camera", "both"):
        from drivers.camera import CameraReader

        daemon.camera = CameraReader(
            cfg.camera.source,
            daemon._sink,
            daemon.clock,
            forget_after_frames=cfg.camera.forget_after_frames,
        )
        daemon.parts.append(("camera", daemon.camera.close))

    state = daemon.table.state
    watches: list[Callable[[int], list[ev.Event]]] = []
    link = LinkWatch(
        cfg.mqtt.ack_timeout_s * 1000,
        cfg.mqtt.link_fault_after_s * 1000,
        now_ms=now,
        up=state.jackpot_link,
        reported=state.faults.get("link", ("", False))[1],
        controller_timeout_ms=cfg.mqtt.controller_timeout_s * 1000,
    )
    publisher = daemon.publisher
    clock_watch, refuse = daemon.clock_watch, cfg.clock.refuse_progressive
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
    watches.append(daemon.software)  # each hourly result, on the loop's thread
    daemon.link_watch = link
    for kind, driver, fault_after_s in (
        ("shoe", daemon.shoe, cfg.shoe.fault_after_s),
        ("camera", daemon.camera, cfg.camera.fault_after_s),
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

    gpio = daemon.gpio

    def safe_state(reason: str | None) -> None:
        if reason is None:
            gpio.clear_fault()
        else:
            gpio.fault(reason)

    watchdog_ms = _watchdog_ms()
    daemon._last_ping = 0.0

    def on_tick(healthy: bool) -> None:
        if watchdog_ms and healthy:
            now_s = time.monotonic()
            if now_s - daemon._last_ping >= watchdog_ms / 2000:
                daemon._last_ping = now_s
                notify("WATCHDOG=1")

    trace = None
    trace_path = os.environ.get("TABLE_CONTROLLER_TRACE")
    if trace_path:  # benchmarks only: one JSON line per journaled event, monotonic ns
        trace_file = open(trace_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        daemon.parts.append(("trace", trace_file.close))

        collections: deque[tuple[int, int]] = deque(maxlen=64)  # (start, end) ns
        started = [0]

        def on_gc(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                started[0] = time.monotonic_ns()
            else:
                collections.append((started[0], time.monotonic_ns()))

        gc.callbacks.append(on_gc)
        daemon.parts.append(("trace gc", lambda: gc.callbacks.remove(on_gc)))

        def trace(record: dict[str, Any]) -> None:
            # the garbage collections (any thread's: each holds the GIL) inside the event's
            # path, from the driver's read (or its queueing) to its effects carried out
            begin = record["read_ns"] or record["queued_ns"]
            end = record["carried_out_ns"]
            record["gc_ns"] = sum(
                min(b, end) - max(a, begin) for a, b in collections if b > begin and a < end
            )
            trace_file.write(json.dumps(record) + "\n")

    journal_cfg = cfg.journal
    daemon.rotator = JournalRotator(
        daemon.table,
        journal_cfg.gaming_day,
        keep_days=journal_cfg.keep_days,
        rotate_on_upgrade=journal_cfg.rotate_on_upgrade,
        utc=daemon.utc,
        keepalive=(lambda: notify("WATCHDOG=1")) if watchdog_ms else None,
    )
    daemon.runtime = TableRuntime(
        daemon.table,
        clock=daemon.clock,
        tick_ms=cfg.tick_ms,
        lights=gpio.apply,
        safe_state=safe_state,
        polls=(gpio.poll,),
        watches=tuple(watches),
        healthy=daemon._threads_alive,
        on_tick=on_tick,
        trace=trace,
        lamp_test=gpio,
        rotator=daemon.rotator,
        recall_ms=cfg.web.recall_s * 1000,  # the dealer display's recall_last (issue 30)
        hold_ms=cfg.web.hold_settlement_s * 1000,
        on_outbox=daemon.publisher.wake,  # after the prompt: the link sends the rows
        collect_garbage=True,  # between events, never in a prompt's path
        reserve_wal=WAL_RESERVE_BYTES,  # no commit of the first rounds grows the WAL file
    )
    daemon._runtime = daemon.runtime
    for event in daemon._pending:
        daemon.runtime.submit(event)
    daemon._pending.clear()
    daemon.control = ControlServer(cfg.control.socket, daemon.handle_request)
    daemon.parts.append(("control socket", daemon.control.close))
    open_history(daemon)
    if cfg.web.enabled:
        from controller.accounts import AccountStore
        from controller.web.access import Access
        from controller.web.auth import LoginThrottle
        from controller.web.server import WebServer

        access = Access(AccountStore(cfg.web.users_file, cfg.web.password_hash), daemon.audit)
        daemon.web = WebServer(
            daemon, bind=cfg.web.bind, port=cfg.web.port, password_hash=cfg.web.password_hash,
            access=access, throttle=LoginThrottle(base_s=float(cfg.web.login_wait_s)),
        ).start()  # fmt: skip
        daemon.parts.append(("web", daemon.web.close))


def open_history(daemon: Any) -> None:
    """The charts' history (``data_dir/history.sqlite``, :mod:`.history`): a table whose
    history cannot be opened plays on without it (logged; the page says why)."""
    from controller.journal.library import JournalLibrary
    from controller.runtime.history import HISTORY_NAME, HistoryRecorder, HistoryStore

    cfg = daemon.config
    try:
        store = HistoryStore(cfg.journal_path.with_name(HISTORY_NAME))
    except Exception as exc:
        daemon.history_problem = str(exc)
        log.error("history not kept: %s (the table plays on)", exc)
        return
    daemon.parts.append(("history file", store.close))
    daemon.history = HistoryRecorder(
        store,
        JournalLibrary(cfg.journal_path),
        daemon._history_now,
        rules=cfg.rules,
        utc=daemon.utc,
    ).start()
    daemon.parts.append(("history", daemon.history.close))
