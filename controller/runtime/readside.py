"""What a running table shows: the read side of :class:`~controller.runtime.daemon.TableDaemon`.

:class:`TableReads` is the part of the daemon that the web pages
(:class:`controller.web.server.TableSource`), the control socket's ``status`` and the
charts' history recorder read: the table's identity, its runtime status with the meters,
the clock and the self-check, the feed, the parts' health, what is wrong now (``/healthz``,
:mod:`.health`), the table's times, rounds from the journal, the kept log and the history's
series. It only reads: every event the table hears goes through the runtime's queue
(:mod:`controller.runtime.daemon`). A mixin: it reads the attributes the daemon opens
(``config``, ``runtime``, ``publisher``, ``shoe``, ``camera``, ``gpio``, ``clock``, ``utc``,
``clock_watch``, ``software``, ``log_ring``, ``history``, ``link_watch``...,
:mod:`controller.runtime.assembly`).
"""

from __future__ import annotations

from typing import Any

from controller import build
from controller.runtime import health
from controller.table import events as ev


class TableReads:
    """The daemon's reads, for the web pages, the control socket and the history recorder
    (rounds from the journal are read on a connection of their own: any thread)."""

    STALE_LOOP_MS = 5000

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

    def light_test_state(self) -> dict[str, Any] | None:
        return self.runtime.light_test_state()

    def recent_log(self) -> list[dict[str, Any]]:
        """The log records kept (:class:`.logring.RecentLog`: warnings and errors apart from
        the others), oldest first."""
        return self.log_ring.records()

    def log_kept(self) -> dict[str, int]:
        return self.log_ring.kept()

    def wait_change(self, timeout_s: float) -> None:
        self.runtime.wait_change(timeout_s)

    # -- the charts' history ------------------------------------------------------------

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
