"""The jackpot controller's ``/metrics``: a prometheus_client collector over
:meth:`JackpotService.health` (the ledger's figures as the service thread keeps them: nothing
here touches the ledger file) and the standard ``process_*`` metrics, in a registry of its own,
served by prometheus_client's small HTTP server on ``[metrics] address``/``port``.

Names: docs/jackpot/controller.md ("Metrics").
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from controller import build

PREFIX = "jackpot_controller_"
#: health()["counts"] keys that are message outcomes: those are in messages_total instead.
MESSAGE_OUTCOMES = frozenset(
    {"applied", "refused", "duplicate", "conflict", "gap", "malformed", "unknown_table",
     "signature", "stale_status"}
)  # fmt: skip


def jackpot_families(health: dict[str, Any]) -> list[Metric]:
    """The controller's metric families from one :meth:`JackpotService.health` dict."""
    p = PREFIX
    info = GaugeMetricFamily(p + "info", "The controller's software version.", labels=["version"])
    info.add_metric([build.version()], 1)
    build_info = GaugeMetricFamily(
        p + "build_info", "The build: version and build id (the release manifest's SHA-256, "
        "or 'unverified build').", labels=["version", "build"],
    )  # fmt: skip
    build_info.add_metric([build.version(), build.software()], 1)
    software = health.get("software") or {}
    verified = GaugeMetricFamily(
        p + "software_verified", "1: the installed files checked against the signed release "
        "manifest at the last self-check; 0: they did not, or an unverified build.",
        labels=["result"],
    )  # fmt: skip
    if software.get("result"):
        verified.add_metric([software["result"]], software["result"] == "ok")
    elif not build.build_id().verified:  # a standby, or a service not started with a check
        verified.add_metric(["unverified"], 0)
    connected = GaugeMetricFamily(
        p + "connected", "1 while connected and subscribed to the broker.",
        value=bool(health["connected"]),
    )  # fmt: skip
    boot = GaugeMetricFamily(
        p + "boot", "The controller's boot counter (kept in the ledger file).", value=health["boot"]
    )
    active = GaugeMetricFamily(
        p + "active", "1 while this controller is the active one; a hot standby: 0 "
        "(docs/jackpot/failover.md).", value=health.get("role", "active") == "active",
    )  # fmt: skip
    messages = CounterMetricFamily(
        p + "messages",
        "Table messages since start by kind and outcome (applied, refused, duplicate, conflict, "
        "gap, malformed, unknown_table, signature; status: received, stale).",
        labels=["kind", "outcome"],
    )
    for (kind, outcome), n in sorted(health["messages"].items()):
        messages.add_metric([kind, outcome], n)
    events = CounterMetricFamily(
        p + "events",
        "Everything else the service counted since start (ack, award, meter, resend, connect, "
        "puback, not_sent, ledger_error, internal_error, table_online, table_offline...).",
        labels=["event"],
    )
    for event, n in sorted(health["counts"].items()):
        if event not in MESSAGE_OUTCOMES:
            events.add_metric([event], n)
    alarms_open = GaugeMetricFamily(
        p + "alarms_open",
        "Alarms in the alarm log no technician has acknowledged (jackpot-controller alarms).",
        value=health["open_alarms"],
    )
    alarms = CounterMetricFamily(
        p + "alarms", "Alarms raised since start by kind.", labels=["kind"]
    )
    for kind, n in sorted(health["alarm_counts"].items()):
        alarms.add_metric([kind], n)
    meters = GaugeMetricFamily(
        p + "meter_cents", "Each pool's meter, whole cents (as the signs show it).",
        labels=["pool"],
    )  # fmt: skip
    for pool, cents in sorted(health["meters"].items()):
        meters.add_metric([pool], cents)
    last_seq = GaugeMetricFamily(
        p + "table_last_seq",
        "Each configured table's last sequence number in the ledger (0: none yet).",
        labels=["table"],
    )
    age = GaugeMetricFamily(
        p + "table_last_message_age_seconds",
        "Seconds since each table's last signed message (tables heard since start).",
        labels=["table"],
    )
    for table, figures in sorted(health["tables"].items()):
        last_seq.add_metric([table], figures["last_seq"])
        seconds = figures["age_s"]
        if seconds is not None and math.isfinite(seconds):
            age.add_metric([table], seconds)
    return [info, build_info, verified, connected, boot, active, messages, events, alarms_open,
            alarms, meters, last_seq, age]  # fmt: skip


class JackpotCollector(Collector):
    """A custom collector: ``health()`` (:meth:`JackpotService.health`) at each scrape."""

    def __init__(self, health: Callable[[], dict[str, Any]]) -> None:
        self._health = health

    def collect(self) -> Iterator[Metric]:
        yield from jackpot_families(self._health())


class JackpotMetrics:
    """A registry of its own (never prometheus_client's global one) with the controller's
    collector over ``health`` and the process metrics; :meth:`serve` starts the HTTP server,
    :meth:`close` stops it (safe twice)."""

    def __init__(self, health: Callable[[], dict[str, Any]], *, process: bool = True) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(JackpotCollector(health))
        if process:
            ProcessCollector(registry=self.registry)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def text(self) -> str:
        """One scrape in the Prometheus text format 0.0.4."""
        return generate_latest(self.registry).decode("utf-8")

    def serve(self, address: str, port: int) -> tuple[str, int]:
        """Serve ``/metrics`` on ``address:port`` (port 0: a free one) from a daemon thread;
        returns the address and port bound. OSError when the address cannot be bound."""
        self._server, self._thread = start_http_server(port, address, registry=self.registry)
        host, bound = self._server.server_address[:2]
        return host, bound

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
