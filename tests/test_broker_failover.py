"""Two central brokers: a broker loss mid-stream (issue 19 item 4, docs/jackpot/brokers.md).

Real parts only: two Mosquitto processes on free loopback ports (the central pair, A first,
same users and passwords), a real jackpot controller (SQLite ledger), real table publishers
over real journals (JournaledTable + Outbox + TablePublisher), a real sign client, and in the
bridged case a third Mosquitto, the property broker, bridged to both central brokers with
``config/mosquitto/bridge-property.example.conf`` itself (only the addresses and the password
replaced). Broker A is killed with SIGKILL mid-stream; everyone must move to B and go on; then
A comes back (the same port, its own persistence) and everyone must return to it. Through it
all, every (table, seq) is applied exactly once and in order, and every meter equals seed plus
contributions minus awards. The timings are printed (``pytest -s``).
"""

from __future__ import annotations

import queue
import re
import socket
import threading
import time
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events
from link_keys import controller_signer, controller_verifier, jackpot_config, table_signer
from mqtt_broker import CONTROLLER, SIGN, TABLES, MosquittoBroker, find_mosquitto
from test_jackpot_service import (
    EXAMPLE,
    TRIGGER_OFFSET,
    acked,
    depth,
    expected_contributions,
    fill,
    fixed,
    wait_for,
)

from controller.journal import JournaledTable
from controller.link.brokers import BrokerAddressError, BrokerList, parse_address
from controller.link.publisher import TablePublisher
from jackpot.ledger import Ledger
from jackpot.service import JackpotService
from jackpot.sign import Board, SignClient

ROOT = Path(__file__).resolve().parent.parent
BRIDGE_EXAMPLE = ROOT / "config" / "mosquitto" / "bridge-property.example.conf"
ACL_EXAMPLE = ROOT / "config" / "mosquitto" / "acl"
BRIDGE_USER = "bridge-hcm"
T7, T8 = TABLES
# the example's property hcm with table 8 too (the bridge example carries hcm-bj-07 and -08)
CONFIG = jackpot_config(
    EXAMPLE.read_text(encoding="utf-8").replace('"hcm-bj-07"]', '"hcm-bj-07", "hcm-bj-08"]')
)
ROUNDS = 100  # per table
FEED_S = 14.0  # the tables play their rounds over this long: the stream outlasts both moves

pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="mosquitto is not installed")


def bridge_acl() -> str:
    """The central broker's block for the property's bridge, uncommented from ``acl``."""
    text = ACL_EXAMPLE.read_text(encoding="utf-8")
    block = text[text.index(f"# user {BRIDGE_USER}") :]
    lines = [line[2:] for line in block.splitlines() if line.startswith("# ")]
    assert lines[0] == f"user {BRIDGE_USER}", "acl: the bridge block is missing"
    return "\n" + "\n".join(lines) + "\n"


def central_pair(tmp_path: Path) -> tuple[MosquittoBroker, MosquittoBroker]:
    """Brokers A and B: the same users, passwords and ACL (plus the bridge user), started."""
    a = MosquittoBroker(tmp_path / "central-a")
    b = MosquittoBroker(tmp_path / "central-b")
    a.passwords[BRIDGE_USER] = "bridge-" + a.passwords[CONTROLLER]
    b.passwords = dict(a.passwords)
    for broker in (a, b):
        broker._write_passwords()
        broker.acl_path.write_text(broker.acl_path.read_text() + bridge_acl(), encoding="utf-8")
        broker.start()
    return a, b


def property_broker(tmp_path: Path, a: MosquittoBroker, b: MosquittoBroker) -> MosquittoBroker:
    """The property's broker, bridged to A then B by the example bridge file."""
    p = MosquittoBroker(tmp_path / "property")
    p.passwords = {user: pw for user, pw in a.passwords.items() if user != BRIDGE_USER}
    p._write_passwords()
    text = BRIDGE_EXAMPLE.read_text(encoding="utf-8")
    assert re.search(r"^round_robin false$", text, re.M), "the example must prefer the first"
    text, n = re.subn(
        r"^address .*$", f"address {a.host}:{a.port} {b.host}:{b.port}", text, flags=re.M
    )
    assert n == 1
    text = text.replace("remote_password CHANGE-ME", f"remote_password {a.passwords[BRIDGE_USER]}")
    with p.conf_path.open("a", encoding="utf-8") as conf:
        conf.write("\n" + text)
    p.start()
    return p


class Feeder(threading.Thread):
    """A table playing ``ROUNDS`` rounds into its journal over about ``FEED_S`` seconds, as
    the table daemon does while its publisher streams the outbox."""

    def __init__(self, path: Path, pa, seed: int) -> None:
        super().__init__(daemon=True)
        self.path, self.pa, self.seed = path, pa, seed
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            events = list(session_events("pa-standard", self.seed, ROUNDS))
            pace = FEED_S / len(events)
            with JournaledTable(self.path, self.pa, SETTINGS) as table:
                for event in events:
                    table.handle(event)
                    time.sleep(pace)
        except BaseException as exc:  # the test reports it
            self.error = exc


def brokers(*bs: MosquittoBroker) -> BrokerList:
    return BrokerList([(b.host, b.port) for b in bs])


def publisher(box: Path, table: str, where: BrokerList, password: str) -> TablePublisher:
    return TablePublisher(
        box, table, *where.address, table, password,
        signer=table_signer(table), verifier=controller_verifier(),
        window=3, backoff=(0.05, 0.5), brokers=where,
    )  # fmt: skip


class Sign:
    """A real sign client and its board, fed from the client's events on demand."""

    def __init__(self, where: BrokerList, password: str) -> None:
        self.client = SignClient(*where.address, SIGN, password, brokers=where)
        self.board = Board(controller_verifier())
        self.client.start()

    def pump(self) -> Board:
        while True:
            try:
                kind, data = self.client.events.get_nowait()
            except queue.Empty:
                return self.board
            if kind == "connected":
                self.board.connected = True
            elif kind == "disconnected":
                self.board.connected = False
            elif kind == "message":
                self.board.receive(*data)


def on(client, broker: MosquittoBroker) -> bool:
    """Whether ``client`` (anything with ``brokers`` and a health) is connected to ``broker``."""
    connected = client.pump().connected if isinstance(client, Sign) else None
    where = (client.client if isinstance(client, Sign) else client).brokers
    if connected is None:
        connected = client.health()["connected"]
    return connected and where.address == (broker.host, broker.port)


def check_ledger(ledger: Path, streams: dict[str, list]) -> None:
    """Every (table, seq) applied once, in order; meters = seed + contributions - awards."""
    with Ledger(ledger, CONFIG) as led:
        rows = led.applied()
        for table, table_rows in streams.items():
            seqs = [seq for t, seq, *_ in rows if t == table]
            assert seqs == list(range(1, len(table_rows) + 1)), table
        assert all(outcome == "applied" for *_, outcome, _ in rows)
        everything = [row for table_rows in streams.values() for row in table_rows]
        for pool, total in expected_contributions(everything).items():
            moves = led.totals(pool)
            assert moves["contribution"] == total, pool
            held = sum(v for k, v in moves.items() if k != "excess")  # seed + contrib - awards
            assert led.meter(pool) == held, pool
        return {pool: reading.amount for pool, reading in led.meters().items()}


@pytest.mark.parametrize("topology", ["direct", "bridged"])
def test_a_central_broker_killed_mid_stream_everyone_moves_and_comes_back(tmp_path, pa, topology):
    """Direct: both tables connect to A or B themselves. Bridged: table 8 connects to its
    property broker only, whose bridge lists A then B (round_robin false)."""
    a, b = central_pair(tmp_path)
    parts: list = []
    started: list[MosquittoBroker] = [a, b]
    try:
        seeds = {T7: 3, T8: 5}
        # what each table will send: the same seeded session played into a scratch journal
        streams = {t: fill(tmp_path / f"{t}.scratch", pa, ROUNDS, s) for t, s in seeds.items()}
        boxes = {t: tmp_path / f"{t}.journal" for t in seeds}
        for t in seeds:  # the journal and its outbox exist before the publisher
            JournaledTable(boxes[t], pa, SETTINGS).close()
        ledger = tmp_path / "ledger.db"
        pw = a.passwords
        svc = JackpotService(
            CONFIG, ledger, a.host, a.port, CONTROLLER, pw[CONTROLLER],
            signer=controller_signer(), backoff=(0.05, 0.5), randbelow=fixed(TRIGGER_OFFSET),
            brokers=brokers(a, b),
        )  # fmt: skip
        parts.append(svc)
        assert svc.wait_online(10)
        pub7 = publisher(boxes[T7], T7, brokers(a, b), pw[T7])
        parts.append(pub7)
        if topology == "bridged":
            p = property_broker(tmp_path, a, b)
            started.append(p)
            pub8 = publisher(boxes[T8], T8, brokers(p), pw[T8])
        else:
            pub8 = publisher(boxes[T8], T8, brokers(a, b), pw[T8])
        parts.append(pub8)
        sign = Sign(brokers(a, b), pw[SIGN])
        parts.append(sign.client)
        n = {table: len(rows) for table, rows in streams.items()}
        feeders = [Feeder(boxes[t], pa, s) for t, s in seeds.items()]

        # mid-stream: a quarter of each table applied, then A dies without a word
        wait_for(lambda: all(acked(boxes[t]) >= n[t] // 4 for t in n), 30, "a quarter applied")
        killed = time.monotonic()
        a.kill()
        at_kill = {t: acked(boxes[t]) for t in n}
        assert all(at_kill[t] < n[t] for t in n), "the stream finished before the kill"

        movers = [svc, pub7, sign] + ([pub8] if topology == "direct" else [])
        wait_for(lambda: all(on(x, b) for x in movers), 30, "everyone on broker B")
        moved_s = time.monotonic() - killed
        wait_for(lambda: all(acked(boxes[t]) > at_kill[t] for t in n), 30, "progress on B")
        flowing_s = time.monotonic() - killed
        at_return = {t: acked(boxes[t]) for t in n}
        assert any(at_return[t] < n[t] for t in n), "the stream finished before A came back"

        # A comes back on its port with what it had saved: everyone returns to it
        a.start()
        back = time.monotonic()
        wait_for(lambda: all(on(x, a) for x in movers), 30, "everyone back on broker A")
        returned_s = time.monotonic() - back
        for feeder in feeders:
            feeder.join(60)
            assert feeder.error is None, feeder.error
        wait_for(lambda: all(depth(boxes[t]) == 0 for t in n), 60, "both streams applied")
        drained_s = time.monotonic() - back
        assert all(acked(boxes[t]) == n[t] for t in n)
        # every message applied: the meters move no more; the ledger has their final values
        # (the service's health is updated when it publishes them, which may come later)
        with Ledger(ledger, CONFIG) as led:
            final = {pool: reading.amount for pool, reading in led.meters().items()}

        def shown() -> bool:  # the last coalesced meters and the status reached the sign
            board = sign.pump()
            amounts = {pool: m["amount"] for pool, m in board.meters.items()}
            return amounts == final and (board.status or {}).get("state") == "online"

        wait_for(shown, 30, "the final meters on the sign")
        health = svc.health()
        board = sign.pump()
    finally:
        for part in reversed(parts):
            part.close() if hasattr(part, "close") else part.stop()
        for broker in started:
            broker.kill()

    meters = check_ledger(ledger, streams)
    counts = health["counts"]
    for bad in ("malformed", "conflict", "signature", "unknown_table", "internal_error"):
        assert counts.get(bad, 0) == 0, (bad, counts)
    assert counts["applied"] == sum(n.values())
    # no table saw a stale or refused ack, a refused publish or anything else to alarm about
    assert pub7.alarms == [] and pub8.alarms == [], (pub7.alarms, pub8.alarms)
    # the sign, back on A, shows the controller's final meters
    assert board.connected and board.status["state"] == "online"
    assert {pool: m["amount"] for pool, m in board.meters.items()} == meters
    if topology == "bridged":  # the bridge went A -> B -> A, as the clients did
        ports = re.findall(r"Connecting bridge (?:\(step 1\) )?central \([\d.]+:(\d+)\)", p.log())
        moves = [int(port) for i, port in enumerate(ports) if i == 0 or port != ports[i - 1]]
        assert moves[:3] == [a.port, b.port, a.port], (moves, a.port, b.port)
    print(
        f"\n{topology}: rows {n[T7]}+{n[T8]}, killed at {at_kill}; all on B in {moved_s:.2f} s, "
        f"progress on B {flowing_s:.2f} s after the kill; after A's return all back on A in "
        f"{returned_s:.2f} s, streams drained {drained_s:.2f} s; duplicates "
        f"{counts.get('duplicate', 0)}, resend asks {counts.get('resend', 0)}, "
        f"gaps {counts.get('gap', 0)}"
    )


# -- the rule itself, and the config ---------------------------------------------------------


def listening() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))
    server.listen()
    return server


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


def test_the_list_prefers_the_first_moves_on_failure_and_returns_when_it_accepts():
    now = [0.0]
    first, second = ("127.0.0.1", closed_port()), ("127.0.0.1", closed_port())
    bl = BrokerList([first, second], return_after=5.0, clock=lambda: now[0])
    assert bl.address == first and not bl.fresh_session()
    bl.connected()
    assert bl.failed() == first, "a lost connection is tried once more where it was"
    assert bl.failed() == second, "an attempt that fails moves on"
    bl.connected()
    assert bl.fresh_session() is False  # connected: the next attempt here is no switch
    assert not bl.back_to_first(), "not before return_after"
    now[0] = 5.0
    assert not bl.back_to_first()  # the probe starts, on its own thread
    wait_for(lambda: bl._probe is not None and bl._probe.done.is_set(), 15, "the probe")
    assert not bl.back_to_first() and bl.address == second, "the first still refuses"
    with listening() as server:
        moved = BrokerList([server.getsockname(), second], clock=lambda: now[0])
        moved.failed()  # the first refused once
        moved.connected()
        now[0] = 20.0
        assert not moved.back_to_first()
        wait_for(lambda: moved._probe.done.is_set(), 15, "the probe")
        assert moved.back_to_first() and moved.on_first
        assert moved.fresh_session(), "back on another broker: its old session is stale"
        assert not moved.back_to_first()  # once
    assert bl.failed() == second and bl.failed() == first  # round and round while all fail


def test_addresses_are_checked():
    assert parse_address("central-a.example", 8883) == ("central-a.example", 8883)
    assert parse_address("10.0.0.2:1884", 8883) == ("10.0.0.2", 1884)
    assert parse_address("[::1]:8883", 1883) == ("::1", 8883)
    assert parse_address("::1", 1883) == ("::1", 1883)
    for bad, why in (
        ("", "host name"),
        ("mqtts://a:8883", "no scheme"),
        ("a:0", "from 1 to 65535"),
        ("a:x", "from 1 to 65535"),
        (":8883", "host is missing"),
        ("[::1", "IPv6"),
    ):
        with pytest.raises(BrokerAddressError, match=why):
            parse_address(bad, 1883)
    with pytest.raises(BrokerAddressError, match="listed twice"):
        BrokerList([("a", 1), ("a", 1)])
    with pytest.raises(BrokerAddressError, match="at least one"):
        BrokerList([])


def test_a_table_config_lists_both_central_brokers(tmp_path):
    from test_config import errors_of, write

    from controller.config import load_table_config

    two = '["central-a.jackpot.example", "central-b.jackpot.example:8884"]'
    path = write(tmp_path, ('host = "hcm.jackpot.example"', f"host = {two}"))
    mqtt = load_table_config(path).mqtt
    assert mqtt.brokers == (
        ("central-a.jackpot.example", 8883),
        ("central-b.jackpot.example", 8884),
    )
    assert (mqtt.host, mqtt.port) == ("central-a.jackpot.example", 8883)
    single = load_table_config(write(tmp_path)).mqtt
    assert single.brokers == (("hcm.jackpot.example", 8883),)
    for value, problem in (
        ("[]", "a list of 1 to 8 broker addresses"),
        ('["a.example", 7]', "a list of 1 to 8 broker addresses"),
        ('["a.example", "a.example:8883"]', "lists a broker twice"),
        ('["a.example", "b.example:99999"]', "from 1 to 65535"),
    ):
        path = write(tmp_path, ('host = "hcm.jackpot.example"', f"host = {value}"))
        (error,) = errors_of(path)
        assert (error.section, error.key) == ("mqtt", "host") and problem in error.problem, error
    # plain TCP only when every broker is on this machine
    path = write(
        tmp_path,
        ('host = "hcm.jackpot.example"', 'host = ["127.0.0.1", "central-b.example"]'),
        ('tls_ca = "/etc/table-controller/ca.crt"', 'tls_ca = ""'),
        ("port = 8883", "port = 1883"),
    )
    (error,) = errors_of(path)
    assert error.key == "tls_ca" and "'central-b.example' in plain text" in error.problem


def test_the_jackpot_config_lists_the_central_brokers():
    from jackpot.pools import JackpotConfigError, parse_config

    text = EXAMPLE.read_text(encoding="utf-8")
    config = parse_config(
        text + '\n[mqtt]\nbrokers = ["central-a.example", "central-b.example:8884"]\n'
        'tls_ca = "/etc/jackpot-controller/ca.crt"\n', "j.toml"
    )  # fmt: skip
    assert config.mqtt_brokers == (("central-a.example", 8883), ("central-b.example", 8884))
    assert config.mqtt_tls_ca == "/etc/jackpot-controller/ca.crt"
    assert parse_config(text, "j.toml").mqtt_brokers == ()
    for body, problem in (
        ("brokers = []", "a list of 1 to 8 broker addresses"),
        ('brokers = ["a", "a:1883"]', "lists a broker twice"),
        ('brokers = ["mqtt://a"]', "no scheme"),
        ('brokers = ["a"]\nhost = "b"', "unknown key"),
    ):
        with pytest.raises(JackpotConfigError, match=problem):
            parse_config(text + f"\n[mqtt]\n{body}\n", "j.toml")
