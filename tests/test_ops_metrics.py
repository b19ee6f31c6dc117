"""The metrics as operators use them: ops/prometheus/alerts.yml and
ops/grafana/table-controller.json name only metrics that a live scrape has.

A real table (``table-controller run`` with its web server, tests/table_rig.py), a real
Mosquitto, shoe-sim and a real ``jackpot-controller`` process (its ``/metrics`` on a free port
named in its log): a round with a Blazing 7's wager goes through the ledger, the shoe sends
garbage and hangs up long enough to latch a fault, then both ``/metrics`` are scraped over
HTTP and parsed by prometheus_client's own parser. Also: each collector keeps a registry of
its own.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import prometheus_client
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from table_rig import ROOT, TABLE, Rig, free_port
from test_web_server import started_broker

from controller.web.metrics import TableMetrics
from jackpot.metrics import JackpotMetrics
from jackpot.pools import JackpotConfigError, parse_config

ALERTS = ROOT / "ops" / "prometheus" / "alerts.yml"
DASHBOARD = ROOT / "ops" / "grafana" / "table-controller.json"
#: made by Prometheus itself for every target, never scraped
SYNTHETIC = {"up"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset"}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: its identifiers less strings, label
    matchers, ranges, grouping clauses, functions and keywords."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        if e[m.end() :].lstrip().startswith("(") or m.group() in KEYWORDS:
            continue  # a function or aggregation, or a keyword
        names.add(m.group())
    return names


def test_metric_names_reads_promql_as_prometheus_would():
    expr = 'sum by (kind, outcome) (rate(x_total{a="b",c=~"d|e"}[5m])) > 0 and on(i) y / 1e3'
    assert metric_names(expr) == {"x_total", "y"}
    assert metric_names('up{job="t"} == 0') == {"up"}
    assert metric_names("increase(z[$__rate_interval]) offset 1h") == {"z"}


def alert_rules() -> list[dict]:
    data = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    panels = list(data["panels"])
    for p in data["panels"]:
        panels += p.get("panels", [])
    exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
    for var in data["templating"]["list"]:
        m = re.fullmatch(r"label_values\((\w+),\s*\w+\)", var["query"]["query"])
        assert m, var
        exprs.append(m[1])
    return exprs


def test_the_alert_rules_are_well_formed_and_cover_what_operators_asked_for():
    rules = alert_rules()
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names))
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        assert metric_names(rule["expr"]), rule["alert"]
        if "for" in rule:
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule
    named = {n for r in rules for n in metric_names(r["expr"])}
    for asked in (
        "table_controller_link_connected",  # link down
        "table_controller_outbox_last_ack_age_seconds",  # outbox age
        "table_controller_fault",  # faults
        "table_controller_driver_errors_total",  # shoe errors
        "jackpot_controller_messages_total",  # ledger refusals
        "jackpot_controller_alarms_open",  # jackpot alarms
    ):
        assert asked in named, asked


def test_the_dashboard_is_importable_grafana_json():
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert data["uid"] and data["title"] and data["schemaVersion"] >= 30
    assert data["__inputs"][0]["pluginId"] == "prometheus"
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids))
    for p in data["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        if p["type"] != "row":
            assert p["targets"] and p["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
    assert len(dashboard_exprs()) > 20


# -- the live scrape -------------------------------------------------------------------------


def get(port: int, path: str = "/metrics") -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.getheader("content-type", ""), answer.read().decode()
    finally:
        conn.close()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value}, parsed by prometheus_client's parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def names_of(got: dict) -> set[str]:
    return {name for name, _labels in got}


def wait_for(predicate, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def settled_scrapes(rig: Rig, port: int, jackpot_port: int, timeout: float = 60.0):
    """Both scrapes, read together at a moment when nothing was on its way between the table
    and the jackpot controller: (table status, table text, jackpot text).

    The table keeps talking after the fixture's last wait (the shoe's cable comes back 3 s
    after the hangup: a significant event, one more message), so a scrape read once can catch
    a message in the outbox, or applied by the ledger while its ack is still on its way back
    to the table. Read the table's status, both scrapes, the status again; keep them when the
    link's figures did not move in between (no message written or acked meanwhile), the outbox
    was empty and the ledger's last applied seq is the table's last ack; else read again."""
    deadline = time.monotonic() + timeout
    while True:
        before = rig.status()
        status, ctype, table_text = get(port)
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
        status, ctype, jackpot_text = get(jackpot_port)
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
        after = rig.status()
        link_before, link_after = before["health"]["link"], after["health"]["link"]
        table, jackpot = samples(table_text), samples(jackpot_text)
        seen = {
            "acked": (link_before["last_ack"], link_after["last_ack"]),
            "depth": (link_before["depth"], link_after["depth"]),
            "outbox_depth": table.get(("table_controller_outbox_depth", ())),
            "ledger_seq": jackpot.get(("jackpot_controller_table_last_seq", (("table", TABLE),))),
        }
        if (
            seen["acked"][0] == seen["acked"][1] == seen["ledger_seq"]
            and seen["depth"] == (0, 0)
            and seen["outbox_depth"] == 0
        ):
            return after, table_text, jackpot_text
        if time.monotonic() > deadline:
            raise AssertionError(f"the table and the ledger never settled together: {seen}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A table that played a Blazing 7's round, saw shoe garbage and latched a shoe fault, and the
    jackpot controller that applied its messages: (rig, table scrape, jackpot scrape), read
    together (:func:`settled_scrapes`; ``rig.settled`` is the table's status of that moment).
    One for the module: its tests only read the scrapes and the logs."""
    tmp = tmp_path_factory.mktemp("ops-metrics")
    with started_broker(tmp) as broker:
        port = free_port()
        rig = Rig(tmp, broker, web=f'bind = "127.0.0.1"\nport = {port}')
        config = rig.config.read_text(encoding="utf-8")  # a shoe fault latches after 1 s, not 30
        rig.config.write_text(config.replace("fault_after_s = 30", "fault_after_s = 1"))
        try:
            rig.start_table()
            rig.wait(lambda a: (a["health"].get("link") or {}).get("connected"), "the link")
            rig.wait(lambda a: a["status"]["jackpot_link"], "progressive wagers open")
            rig.bets()
            rig.play_round()
            rig.wait(lambda a: a["health"]["link"]["depth"] == 0, "the outbox drained")
            rig.shoe.stdin.write("garbage 64\n")
            rig.wait(lambda a: sum(a["health"]["shoe"]["errors"].values()) > 0, "shoe errors")
            rig.shoe.stdin.write("hangup 3000\n")  # the shoe's cable out for 3 s
            rig.wait(lambda a: "shoe" in a["status"]["faults"], "the shoe fault latched")
            # the shoe's offline report and the fault are significant events: their messages
            # reach the jackpot controller too (issue 28 item 4) before the figures are read
            rig.wait(
                lambda a: a["health"]["link"]["depth"] == 0, "the events delivered", timeout=60
            )
            found = wait_for(
                lambda: re.search(
                    r"metrics at http://127\.0\.0\.1:(\d+)/metrics", rig.log("jackpot")
                ),
                "the jackpot controller's metrics address in its log",
            )
            rig.settled, table_text, jackpot_text = settled_scrapes(rig, port, int(found[1]))
            rig.scrapes = (table_text, jackpot_text)
            yield rig, samples(table_text), samples(jackpot_text)
        finally:
            rig.stop()


def test_every_metric_the_alerts_and_the_dashboard_name_is_in_a_live_scrape(live):
    _rig, table, jackpot = live
    scraped = names_of(table) | names_of(jackpot) | SYNTHETIC
    for rule in alert_rules():
        missing = metric_names(rule["expr"]) - scraped
        assert not missing, f"alert {rule['alert']}: {sorted(missing)} not scraped"
    for expr in dashboard_exprs():
        missing = metric_names(expr) - scraped
        assert not missing, f"dashboard {expr!r}: {sorted(missing)} not scraped"


def test_the_live_figures_are_the_tables_and_the_ledgers(live):
    rig, table, jackpot = live
    t, j = "table_controller_", "jackpot_controller_"
    answer = rig.settled  # the table's status read with the scrapes, not a later one
    # the table: its identity, link, the shoe's fault and errors; process metrics beside
    (info,) = [dict(labels) for name, labels in table if name == t + "info"]
    assert info["table"] == TABLE and info["config_checksum"] == answer["config_checksum"]
    # the build id: in the control socket's status, /metrics of both, the table's birth message
    # as the jackpot controller heard it (issue 29 item 1; N.J.A.C. 13:69E-1.28B(d))
    built = {"version": answer["version"], "build": answer["build"]}
    assert answer["build"] == f"{answer['version']} (unverified build)"  # a checkout
    assert table[(t + "build_info", tuple(sorted(built.items())))] == 1
    assert jackpot[(j + "build_info", tuple(sorted(built.items())))] == 1
    heard = rf"table {TABLE} online \(boot \d+, build {re.escape(answer['build'])}\)"
    assert re.search(heard, rig.log("jackpot"))
    assert table[(t + "link_connected", ())] == 1
    assert table[(t + "fault", (("kind", "shoe"),))] in (0, 1)
    shoe_errors = sum(
        v for (name, labels), v in table.items()
        if name == t + "driver_errors_total" and ("driver", "shoe") in labels
    )  # fmt: skip
    assert shoe_errors >= 1
    assert table[(t + "outbox_depth", ())] == 0
    assert table[("process_resident_memory_bytes", ())] > 1_000_000
    # the jackpot controller: what the ledger applied, from which table, the meters
    assert jackpot[(j + "connected", ())] == 1
    applied = jackpot[(j + "messages_total", (("kind", "contribution"), ("outcome", "applied")))]
    assert applied >= 1
    assert jackpot[(j + "messages_total", (("kind", "round_result"), ("outcome", "applied")))]
    last_ack = answer["health"]["link"]["last_ack"]
    assert jackpot[(j + "table_last_seq", (("table", TABLE),))] == last_ack >= 2
    assert jackpot[(j + "table_last_seq", (("table", "hcy-bj-01"),))] == 0  # never heard
    assert 0 <= jackpot[(j + "table_last_message_age_seconds", (("table", TABLE),))] < 60
    assert (j + "table_last_message_age_seconds", (("table", "hcy-bj-01"),)) not in jackpot
    # $10,000 seed + $0.75 per $5 Blazing 7's wager
    assert jackpot[(j + "meter_cents", (("pool", "blazing_7s"),))] == 1_000_000 + 75 * applied
    # one: the table's latched shoe fault, reported to the center for a person (issue 28)
    assert jackpot[(j + "alarms_open", ())] == 1
    assert f"ALARM event_table_fault from {TABLE}" in rig.log("jackpot")
    assert jackpot[("process_start_time_seconds", ())] > 1_600_000_000


PROMTOOL = shutil.which("promtool")
NO_PROMTOOL = "promtool is not installed (Debian: apt install prometheus)"


@pytest.mark.skipif(PROMTOOL is None, reason=NO_PROMTOOL)
def test_promtool_accepts_the_alert_rules():
    done = subprocess.run([PROMTOOL, "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in done.stdout


@pytest.mark.skipif(PROMTOOL is None, reason=NO_PROMTOOL)
def test_promtool_finds_no_naming_problem_in_either_scrape(live):
    for text in live[0].scrapes:
        done = subprocess.run(
            [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True
        )
        assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


# -- registries, config ------------------------------------------------------------------------


def test_each_server_has_its_own_registry_never_the_global_one():
    bundles = [
        {"table": name, "game": "pa-standard", "version": "1", "config_checksum": "c",
         "uptime_s": 1.0, "status": {"events_handled": n}}
        for name, n in (("bj-1", 3), ("bj-2", 5))
    ]  # fmt: skip
    a, b = (TableMetrics(lambda bundle=bundle: (bundle, {})) for bundle in bundles)
    assert "table_controller_events_total 3.0" in a.text()
    assert "table_controller_events_total 5.0" in b.text()
    health = {"connected": True, "boot": 4, "counts": {"applied": 2, "ack": 2},
              "alarm_counts": {}, "open_alarms": 1, "messages": {}, "tables": {},
              "meters": {"blazing_7s": 1_000_075}}  # fmt: skip
    one, two = JackpotMetrics(lambda: health), JackpotMetrics(lambda: health)
    assert one.text().count("jackpot_controller_meter_cents") == two.text().count(
        "jackpot_controller_meter_cents"
    )
    got = samples(one.text())
    assert got[("jackpot_controller_events_total", (("event", "ack"),))] == 2
    assert ("jackpot_controller_events_total", (("event", "applied"),)) not in got  # messages
    global_names = {m.name for m in prometheus_client.REGISTRY.collect()}
    assert not any(n.startswith(("table_controller", "jackpot_controller")) for n in global_names)


def test_a_taken_metrics_port_is_an_oserror_the_controller_survives():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        metrics = JackpotMetrics(dict, process=False)
        with pytest.raises(OSError):
            metrics.serve("127.0.0.1", held.getsockname()[1])
        metrics.close()  # nothing to stop: safe
    host, port = metrics.serve("127.0.0.1", 0)
    try:
        assert host == "127.0.0.1" and port > 0
    finally:
        metrics.close()
        metrics.close()


def jackpot_text(extra: str) -> str:
    return (ROOT / "config" / "jackpot.example.toml").read_text(encoding="utf-8") + extra


def test_the_metrics_section_of_the_jackpot_config():
    default = parse_config(jackpot_text(""), "j.toml")
    assert (default.metrics_address, default.metrics_port) == ("127.0.0.1", 9471)
    given = parse_config(jackpot_text('\n[metrics]\naddress = "10.0.5.2"\nport = 9500\n'), "j")
    assert (given.metrics_address, given.metrics_port) == ("10.0.5.2", 9500)
    for extra, words in [
        ("\n[metrics]\nport = 70000\n", "key 'port': 70000: must be a TCP port"),
        ('\n[metrics]\nport = "9471"\n', "key 'port'"),
        ("\n[metrics]\naddress = 127\n", "key 'address': must be the address"),
        ('\n[metrics]\nbind = "0.0.0.0"\n', "key 'bind': unknown key; allowed keys here: "
         "address, port"),
    ]:  # fmt: skip
        with pytest.raises(JackpotConfigError) as err:
            parse_config(jackpot_text(extra), "j.toml")
        assert "[metrics]" in str(err.value) and words in str(err.value), str(err.value)


def test_the_docs_describe_the_metrics_section_and_every_metric():
    docs = (ROOT / "docs" / "jackpot" / "controller.md").read_text(encoding="utf-8")
    assert "`[metrics]`" in docs and "`address`" in docs and "`port`" in docs
    example = (ROOT / "config" / "jackpot.example.toml").read_text(encoding="utf-8")
    assert "# [metrics]" in example
    health = {"connected": True, "boot": 1, "counts": {"ack": 1}, "alarm_counts": {"x": 1},
              "open_alarms": 0, "messages": {("contribution", "applied"): 1},
              "tables": {TABLE: {"last_seq": 1, "age_s": 0.5}}, "meters": {"p": 1}}  # fmt: skip
    names = names_of(samples(JackpotMetrics(lambda: health, process=False).text()))
    for name in names:
        assert f"`{name}`" in docs, name
    web = (ROOT / "docs" / "web.md").read_text(encoding="utf-8")
    bundle = {"table": TABLE, "game": "pa-standard", "version": "1", "config_checksum": "c",
              "uptime_s": 1.0,
              "status": {"snapshot": {"round": 3, "alarms": []}, "round_in_progress": True,
                         "events_handled": 1, "events_refused": 0, "events_dropped": 0,
                         "journal_events": 1, "journal_fault": None, "queue": 0,
                         "jackpot_link": True, "faults": {"shoe": {"active": True}}},
              "health": {"link": {"connected": True, "depth": 1, "last_ack": 4,
                                  "last_ack_age_s": 2.0, "errors": {"timeout": 1}},
                         "shoe": {"connected": True, "last_message_age_ms": 5,
                                  "errors": {"crc": 1}}}}  # fmt: skip
    counters = {"logins": 0, "login_failures": 0, "throttled": 0, "sessions": 0, "streams": 0,
                "refused": 0, "login_refused_table_wide": 0, "front_evicted": 0,
                "front_connections_refused": 0, "front_timed_out": 0,
                "front_bad_requests": 0}  # fmt: skip
    table = names_of(samples(TableMetrics(lambda: (bundle, counters)).text()))
    assert len(table) == 38  # every family of docs/web.md, process_* included
    for name in table:  # "All prefixed `table_controller_`: ... `fault{kind}`, ..."
        short = name.removeprefix("table_controller_")
        assert re.search(rf"`{re.escape(short)}[`{{]", web), name
    ops = (ROOT / "ops" / "README.md").read_text(encoding="utf-8")
    assert "alerts.yml" in ops and "table-controller.json" in ops
    for rule in alert_rules():
        assert f"`{rule['alert']}`" in ops, rule["alert"]
    assert Path(DASHBOARD).is_file()
