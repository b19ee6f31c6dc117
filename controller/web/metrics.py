"""The table's ``/metrics``: prometheus_client collectors over the figures the web server
already has (the runtime's status, the drivers' health, the server's own counters).

:class:`TableCollector` turns one ``(bundle, web)`` pair (``WebServer.bundle()``,
``WebServer.web_counters()``) into metric families at each scrape; nothing is kept between
scrapes, so a restart and a scrape never disagree. :class:`TableMetrics` is one registry of its
own (never prometheus_client's global one: several servers, in tests, each have theirs) with the
table's collector and the standard ``process_*`` collector. Names: docs/web.md ("Metrics").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

PREFIX = "table_controller_"
#: Content-Type of :meth:`TableMetrics.text` (the Prometheus text format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Source = Callable[[], tuple[dict[str, Any], dict[str, Any]]]


def _number(value: Any) -> float | None:
    """A sample's value, or None for no sample (None, NaN, infinities)."""
    if value is None:
        return None
    value = float(value)  # a bool is 0 or 1
    return value if math.isfinite(value) else None


class _Families:
    """Families by name, in the order first met; a family without samples is left out."""

    def __init__(self) -> None:
        self._by_name: dict[str, Metric] = {}

    def add(
        self,
        name: str,
        kind: str,
        help_text: str,
        value: Any,
        labels: dict[str, Any] | None = None,
    ) -> None:
        number = _number(value)
        if number is None:
            return
        labels = labels or {}
        family = self._by_name.get(name)
        if family is None:
            make = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            family = make(PREFIX + name, help_text, labels=sorted(labels))
            self._by_name[name] = family
        family.add_metric([str(labels[k]) for k in sorted(labels)], number)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._by_name.values())


def table_families(bundle: dict[str, Any], web: dict[str, Any]) -> list[Metric]:
    """The table's metric families from ``bundle`` (``WebServer.bundle()``) and ``web`` (the
    server's counters). A figure that is None (no ack yet, no such driver) has no sample."""
    m = _Families()
    status = bundle["status"]
    snap = status.get("snapshot") or {}
    m.add(
        "info",
        "gauge",
        "The table, its software version and the checksum of its config.",
        1,
        {
            "table": bundle["table"],
            "game": bundle["game"],
            "version": bundle["version"],
            "config_checksum": bundle["config_checksum"],
        },
    )
    m.add(
        "build_info",
        "gauge",
        "The build: version and build id (the release manifest's SHA-256, or 'unverified build').",
        1,
        {"version": bundle["version"], "build": bundle.get("build") or bundle["version"]},
    )
    software = status.get("software") or {}
    if software.get("result"):  # the self-check (issue 29 item 4; N.J.A.C. 13:69E-1.28H)
        m.add(
            "software_verified",
            "gauge",
            "1: the installed files checked against the signed release manifest at the last "
            "self-check; 0: they did not, or an unverified build (no manifest).",
            software["result"] == "ok",
            {"result": software["result"]},
        )
        m.add(
            "software_checked_timestamp_seconds",
            "gauge",
            "UTC time of the last software self-check.",
            None if software.get("utc_ms") is None else software["utc_ms"] / 1000,
        )
    m.add("uptime_seconds", "gauge", "Seconds since the controller started.", bundle["uptime_s"])
    m.add("round", "gauge", "The round number on the layout.", snap.get("round"))
    m.add(
        "round_in_progress", "gauge", "1 while a round is dealt.", status.get("round_in_progress")
    )
    m.add("events", "counter", "Events journaled since start.", status.get("events_handled"))
    m.add("events_refused", "counter", "Events refused.", status.get("events_refused"))
    m.add(
        "events_dropped",
        "counter",
        "Events dropped while the journal could not be written.",
        status.get("events_dropped"),
    )
    m.add("journal_events", "gauge", "Events in the journal file.", status.get("journal_events"))
    m.add(
        "journal_writable",
        "gauge",
        "0 while the journal cannot be written.",
        not status.get("journal_fault"),
    )
    m.add("event_queue", "gauge", "Events waiting for the table loop.", status.get("queue"))
    m.add(
        "jackpot_link_up",
        "gauge",
        "1 while progressive wagers are taken.",
        status.get("jackpot_link"),
    )
    for kind, fault in sorted((status.get("faults") or {}).items()):
        m.add(
            "fault",
            "gauge",
            "A latched fault (1: its condition is still present).",
            bool(fault["active"]),
            {"kind": kind},
        )
    m.add("alarms_open", "gauge", "Alarms not yet acknowledged.", len(snap.get("alarms") or []))
    health = bundle.get("health") or {}
    link = health.get("link")
    if link:
        m.add("link_connected", "gauge", "1 while connected to the broker.", link["connected"])
        m.add(
            "outbox_depth",
            "gauge",
            "Messages not yet acknowledged by the jackpot controller.",
            link["depth"],
        )
        m.add(
            "outbox_last_ack",
            "gauge",
            "Sequence number of the last acknowledged message.",
            link.get("last_ack"),
        )
        m.add(
            "outbox_last_ack_age_seconds",
            "gauge",
            "Seconds since the last acknowledgement.",
            link.get("last_ack_age_s"),
        )
        for kind, n in sorted((link.get("errors") or {}).items()):
            m.add(
                "driver_errors",
                "counter",
                "Errors by driver and kind.",
                n,
                {"driver": "link", "kind": kind},
            )
    for name in ("shoe", "camera", "gpio"):
        part = health.get(name)
        if not part:
            continue
        m.add(
            "driver_connected",
            "gauge",
            "1 while the driver's device answers.",
            part.get("connected"),
            {"driver": name},
        )
        age = part.get("last_message_age_ms")
        m.add(
            "driver_last_message_age_seconds",
            "gauge",
            "Seconds since the driver's last good message.",
            None if age is None else age / 1000,
            {"driver": name},
        )
        for kind, n in sorted((part.get("errors") or {}).items()):
            m.add(
                "driver_errors",
                "counter",
                "Errors by driver and kind.",
                n,
                {"driver": name, "kind": kind},
            )
    m.add("web_logins", "counter", "Successful technician logins.", web.get("logins"))
    m.add("web_login_failures", "counter", "Wrong passwords.", web.get("login_failures"))
    m.add(
        "web_login_throttled",
        "counter",
        "Login attempts refused unchecked (too soon).",
        web.get("throttled"),
    )
    m.add(
        "web_login_budget_refused",
        "counter",
        "Login attempts of failing clients refused unchecked: the table-wide budget was spent.",
        web.get("login_refused_table_wide"),
    )
    for key, help_text in (
        ("evicted", "Idle stranger connections closed to make room (never the dealer's)."),
        ("connections_refused", "Connections refused: the server was full."),
        ("timed_out", "Connections closed for a request head that took too long."),
        ("bad_requests", "Requests answered 400 for a malformed request."),
    ):
        m.add(f"web_{key}", "counter", help_text, web.get(f"front_{key}"))
    m.add("web_sessions", "gauge", "Technicians logged in.", web.get("sessions"))
    m.add("web_streams", "gauge", "Live pages connected.", web.get("streams"))
    m.add(
        "web_requests_refused",
        "counter",
        "Actions refused for a missing login or CSRF token.",
        web.get("refused"),
    )
    history = bundle.get("history") or {}
    if history:
        m.add(
            "history_samples_written",
            "counter",
            "Samples the history for the charts wrote.",
            history.get("samples_written"),
        )
        m.add(
            "history_ok",
            "gauge",
            "1 while the history for the charts is written, 0 when it cannot be.",
            not history.get("problem"),
        )
    return list(m)


class TableCollector(Collector):
    """A custom collector: ``source()`` gives ``(bundle, web)`` at each scrape."""

    def __init__(self, source: Source) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        bundle, web = self._source()
        yield from table_families(bundle, web)


class TableMetrics:
    """A registry of its own with the table's collector over ``source`` and, with
    ``process`` (default), the standard ``process_*`` metrics of this process."""

    def __init__(self, source: Source, *, process: bool = True) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(TableCollector(source))
        if process:
            ProcessCollector(registry=self.registry)

    def text(self) -> str:
        """One scrape in the Prometheus text format 0.0.4 (:data:`CONTENT_TYPE`)."""
        return generate_latest(self.registry).decode("utf-8")


def metrics_text(bundle: dict[str, Any], web: dict[str, Any]) -> str:
    """One scrape of ``bundle`` and ``web`` with the process metrics, in a registry made for
    it (a server that scrapes often may keep a :class:`TableMetrics` instead)."""
    return TableMetrics(lambda: (bundle, web)).text()
