"""The forgery suite (issue 15): an attacker's messages against the real jackpot link.

A real Mosquitto with the production ACL and client ids bound to users (tests/mqtt_broker.py),
the real :class:`JackpotService` on a real ledger (each test twice: SQLite and PostgreSQL,
tests/pg_server.py), and (second test) a real
:class:`JournaledTable` with its real :class:`TablePublisher`, wired as the daemon wires them
(awards and link alarms become table events through ``LinkAlarmGate``). Every attempt is
made with the credentials an attacker could hold: a table's broker password (with or without
that table's signing key: a leaked password, or a stolen table), another table's, a sign's,
the controller's broker rights without its key, the controller's key itself (an insider), and
none at all. Each attempt asserts that it was refused where it should be, and that the
refusal was counted and raised as an alarm; at the end nothing that holds money changed: the
ledger's meters, movements, awards and applied messages, the table's journal and state, and
the dealer's prompts. ``ATTEMPTS`` counts them (the issue asks for at least 60).

docs/jackpot/threat-model.md names the check that stops each kind.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events
from link_keys import (
    controller_signer,
    controller_verifier,
    jackpot_config,
    table_signer,
)
from mqtt_broker import (  # noqa: F401
    CONTROLLER,
    CONTROLLER_TWIN,
    OBSERVER,
    SIGN,
    TABLES,
    broker,
)
from pg_server import ledger_at, pg_server  # noqa: F401

from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.frames import BATCH_BYTES, BATCH_ROWS, wire_frame
from controller.link.messages import JACKPOT_STATUS_TOPIC, meter_topic, topic_for
from controller.link.publisher import TablePublisher
from controller.link.signing import Signer, new_signing_key
from controller.runtime.daemon import LinkAlarmGate
from controller.table import events as ev
from controller.table.effects import Alarm, Prompt
from jackpot.service import JackpotService
from jackpot.sign import Board
from jackpot.store import open_store

T7, T8 = TABLES
CONFIG = jackpot_config()
NO_HIT = 70_000  # the Mystery trigger far above what the sessions contribute
STRANGER = Signer("hcm-bj-07-1", new_signing_key())  # T7's key id, someone else's key
ATTEMPTS: Counter[str] = Counter()  # by credentials, over the module


def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def ledger_money(path: Path | str) -> dict:
    """What holds money in the ledger: meters, movements, awards (a refused claim's award
    is recorded, for 0 cents), the trigger row, applied messages (not refused)."""
    db = open_store(path)
    try:
        return {
            "meters": db.execute("SELECT * FROM meters ORDER BY pool").fetchall(),
            "movements": db.execute("SELECT * FROM movements ORDER BY n").fetchall(),
            "awards": db.execute(
                f"SELECT * FROM awards WHERE state != 'refused' ORDER BY {db.award_order}"
            ).fetchall(),
            "refused_award_cents": db.execute(
                "SELECT COALESCE(SUM(amount), 0) FROM awards WHERE state = 'refused'"
            ).fetchone(),
            "mystery": db.execute("SELECT * FROM mystery ORDER BY pool").fetchall(),
            "applied": db.execute(
                "SELECT table_id, seq, key FROM applied WHERE outcome='applied' ORDER BY n"
            ).fetchall(),
        }
    finally:
        db.close()


def start_service(broker, ledger: Path) -> JackpotService:  # noqa: F811
    svc = JackpotService(
        CONFIG,
        ledger,
        broker.host,
        broker.port,
        CONTROLLER,
        broker.passwords[CONTROLLER],
        signer=controller_signer(),
        backoff=(0.05, 0.5),
        randbelow=lambda n: NO_HIT,
    )
    assert svc.wait_online(10), "the service did not come online"
    return svc


def alarms(svc: JackpotService) -> int:
    return sum(svc.health()["alarm_counts"].values())


def legit_stream(tmp_path: Path, pa, rounds: int = 8) -> list:
    """A real table's outbox rows for ``rounds`` rounds (kind, key, payload), in order."""
    path = tmp_path / "source.journal"
    with JournaledTable(path, pa, SETTINGS) as table:
        for event in session_events("pa-standard", 5, rounds):
            table.handle(event)
    box = Outbox(path)
    try:
        return box.pending()
    finally:
        box.close()


class RawTable:
    """A client holding T7's broker password; ``signer`` is the key it signs with (T7's own
    for a stolen table, another for a leaked password only, None: unsigned)."""

    def __init__(self, broker, signer: Signer | None):  # noqa: F811
        self.client = broker.client(T7)
        assert self.client.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
        self.signer = signer

    def envelope(self, seq: int, kind: str, key: str, payload: dict, boot: int = 1) -> dict:
        return {"v": 1, "table": T7, "boot": boot, "seq": seq, "key": key, "kind": kind,
                "sent_t": 1_770_000_000_000 + seq, "payload": payload}  # fmt: skip

    def send(self, kind: str, message: dict | bytes, signer: Signer | None = ..., table=T7):
        topic = topic_for(table, kind)
        signer = self.signer if signer is ... else signer
        if isinstance(message, bytes):
            data = message
        else:
            data = json.dumps(signer.sign(topic, message) if signer else message).encode()
        return self.client.publish(topic, data)

    def next_of(self, kind: str, match=lambda body: True, timeout: float = 5.0) -> dict:
        """The next ``kind`` message that ``match`` accepts (others are skipped)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.client.get(0.2)
            if m is not None and m.topic.endswith("/" + kind) and match(json.loads(m.payload)):
                return json.loads(m.payload)
        raise AssertionError(f"no {kind}")


def test_a_stolen_or_leaked_table_identity_moves_no_money_off_the_games_terms(
    tmp_path,
    pa,
    broker,  # noqa: F811
    ledger_at,  # noqa: F811
):
    ledger = ledger_at()
    rows = legit_stream(tmp_path, pa)
    svc = start_service(broker, ledger)
    table = RawTable(broker, table_signer(T7))
    try:
        # the table's real stream: applied and acked
        for seq, row in enumerate(rows, 1):
            message = table.envelope(seq, row.kind, row.key, row.payload)
            assert table.send(row.kind, message).value in (0, 16)
        assert wait_for(lambda: svc.health()["counts"].get("applied") == len(rows))
        assert table.next_of("ack", lambda a: a["seq"] == len(rows))
        seq = len(rows)
        before = ledger_money(ledger)
        results = [r for r in rows if r.kind == "round_result"]
        contribs = [r for r in rows if r.kind == "contribution"]
        assert results and contribs
        c0 = contribs[-1].payload
        r0 = results[-1].payload

        # -- a stolen table (its password and its key): the game's own terms refuse --------
        def contribution(**changes) -> dict:
            return {**c0, **changes}

        claim0 = {"round": r0["round"], "game": "pa-standard", "spot": 1,
                  "wager": "blazing_7s", "pool": "blazing_7s", "stake": 500,
                  "line": "Three 7's", "meter": "100% of meter", "cards": ["7D", "7D"],
                  "up_card": "7D"}  # fmt: skip
        spot_cards = r0["spots"][0]
        fresh_round = max(r.payload["round"] for r in results) + 50
        seven_row = ["7D"] * 40
        terms = [
            ("contribution", contribution(stake=10**15), "stake"),
            ("contribution", contribution(stake=499), "stake"),
            ("contribution", contribution(stake=1), "stake"),
            ("contribution", contribution(round=fresh_round, pool="mystery"), "pool"),
            ("contribution", contribution(round=fresh_round, wager="main", pool="main"), "wager"),
            ("contribution", contribution(round=fresh_round, game="no-such-game"), "game"),
            ("contribution", contribution(round=fresh_round, game="double-up"), "game"),
            ("contribution", contribution(), "round"),  # the same spot and round again
            ("hit_claim", claim0, "card"),  # invented qualifying cards
            ("hit_claim", {**claim0, "round": fresh_round}, "round"),  # no result reported
            (
                "hit_claim",
                {
                    **claim0,
                    "spot": spot_cards["spot"],
                    "cards": spot_cards["first_two"] or ["7D", "7H"],
                    "up_card": "7S",
                },
                "card",
            ),  # the spot's cards, another up card
            ("round_result", {**r0}, "round"),  # a round reported twice
            (
                "round_result",
                {
                    **r0,
                    "round": fresh_round + 1,
                    "dealer": seven_row[:21],
                    "settlements": [],
                    "stake": 0,
                    "paid": 0,
                    "returned": 0,
                },
                "shoe",
            ),  # more 7 of diamonds than the shoe holds
            (
                "award_confirm",
                {
                    "award_id": f"{T7}/1",
                    "round": 1,
                    "spot": 1,
                    "pool": "blazing_7s",
                    "amount": 1_000_000,
                    "confirmed_t": 1,
                },
                "award",
            ),
        ]
        for kind, payload, _word in terms:
            ATTEMPTS["a stolen table"] += 1
            seq += 1
            refused, alarmed = svc.health()["counts"].get("refused", 0), alarms(svc)
            key = f"forged/{seq}"
            assert table.send(kind, table.envelope(seq, kind, key, payload)).value in (0, 16)
            assert table.next_of("ack")["seq"] == seq  # the sequence is taken, refused
            wait_for(lambda r=refused: svc.health()["counts"].get("refused", 0) == r + 1)
            wait_for(lambda a=alarmed: alarms(svc) == a + 1, what=f"an alarm for {kind}")
        reasons = [a["detail"] for a in svc.health()["alarms"][-len(terms) :]]
        for (kind, _payload, word), reason in zip(terms, reasons, strict=True):
            assert word in reason.lower(), (kind, word, reason)

        # the same sequence number with other content; the same key under a new number
        for old in (1, 2, len(rows)):
            ATTEMPTS["a stolen table"] += 1
            alarmed = alarms(svc)
            row = rows[old - 1]
            changed = {**row.payload, "round": row.payload["round"] + 1000}
            table.send(row.kind, table.envelope(old, row.kind, row.key, changed))
            wait_for(lambda a=alarmed: alarms(svc) == a + 1, what="a seq_conflict alarm")
            assert svc.health()["alarms"][-1]["kind"] == "seq_conflict"
        ATTEMPTS["a stolen table"] += 1
        seq += 1
        alarmed = alarms(svc)
        row = contribs[0]
        table.send(row.kind, table.envelope(seq, row.kind, row.key, row.payload))
        assert table.next_of("ack")["seq"] == seq
        wait_for(lambda a=alarmed: alarms(svc) == a + 1, what="a replayed key's alarm")

        # -- a leaked password without the table's key: refused before the ledger -----------
        good = table.envelope(seq + 1, "contribution", "leak/1", contribution(round=fresh_round))
        moved = table_signer(T7).sign(topic_for(T7, "round_result"), good)
        tampered = {**table_signer(T7).sign(topic_for(T7, "contribution"), good),
                    "payload": contribution(round=fresh_round, stake=10**9)}  # fmt: skip
        leaked = [
            (good, None),  # unsigned
            (good, STRANGER),  # T7's key id, another key
            (good, table_signer(T8)),  # another table's key
            (good, controller_signer()),  # the controller's key is not a table's
            (moved, False),  # a true signature from another topic
            (tampered, False),  # changed after signing
            ({**good, "sig": "A" * 86 + "=="}, False),  # a signature of the right shape
            ({**good, "kid": "hcm-bj-07-9", "sig": good.get("sig", "B" * 86 + "==")}, False),
        ]
        for message, signer in leaked:
            ATTEMPTS["a leaked table password"] += 1
            counted = svc.health()["counts"].get("signature", 0)
            if signer is False:
                table.send("contribution", json.dumps(message).encode())
            else:
                table.send("contribution", message, signer=signer)
            wait_for(lambda c=counted: svc.health()["counts"].get("signature", 0) == c + 1)
            assert svc.health()["alarms"][-1]["kind"] == "signature"
        for state, clean in (("online", None), ("offline", False)):  # a forged birth or will
            ATTEMPTS["a leaked table password"] += 1
            counted = svc.health()["counts"].get("signature", 0)
            status = {"v": 1, "table": T7, "boot": 999, "state": state, "sent_t": 1}
            if clean is not None:
                status["clean"] = clean
            table.send("status", status, signer=STRANGER)
            wait_for(lambda c=counted: svc.health()["counts"].get("signature", 0) == c + 1)
        # malformed and misrouted: refused and alarmed, no sequence taken
        malformed = [
            b"{not json",
            json.dumps({**good, "v": 2}).encode(),
            json.dumps({**good, "table": T8}).encode(),
            json.dumps({**good, "payload": {**good["payload"], "stake": 500.0}}).encode(),
            json.dumps({**good, "payload": {**good["payload"], "trigger": 1}}).encode(),
            json.dumps({**good, "kind": "round_result"}).encode(),
        ]
        for data in malformed:
            ATTEMPTS["a leaked table password"] += 1
            counted = svc.health()["counts"].get("malformed", 0)
            table.send("contribution", data)
            wait_for(lambda c=counted: svc.health()["counts"].get("malformed", 0) == c + 1)
        # outside its topics: the broker refuses (135), nothing arrives
        for topic in (topic_for(T8, "contribution"), topic_for(T7, "ack"),
                      topic_for(T7, "award"), meter_topic("blazing_7s"),
                      JACKPOT_STATUS_TOPIC):  # fmt: skip
            ATTEMPTS["a leaked table password"] += 1
            assert table.client.publish(topic, json.dumps(good)).value == 135
        # a gap: held, a resend asked for, nothing applied
        ATTEMPTS["a stolen table"] += 1
        ahead = table.envelope(seq + 5, "contribution", "gap/1", contribution(round=fresh_round))
        table.send("contribution", ahead)
        assert table.next_of("resend")["from"] == seq + 1
    finally:
        table.client.close()
        svc.close()
    assert ledger_money(ledger) == before  # no meter, movement, award or application moved
    # the real stream goes on: the next true contribution is applied
    svc = start_service(broker, ledger)
    table = RawTable(broker, table_signer(T7))
    try:
        nxt = table.envelope(seq + 1, "contribution", "after/1", contribution(round=fresh_round))
        table.send("contribution", nxt)
        assert table.next_of("ack")["seq"] == seq + 1
    finally:
        table.client.close()
        svc.close()


class LiveTable:
    """A journaled table and its publisher, wired as the daemon wires them: awards and link
    alarms become table events, handled on this (the test's) thread."""

    def __init__(self, broker, path: Path, pa):  # noqa: F811
        self.path = path
        self.table = JournaledTable(path, pa, SETTINGS)
        self.events: queue.Queue[ev.Event] = queue.Queue()
        self.prompts: list[Prompt] = []
        self.alarms: list[Alarm] = []  # every alarm effect, merged in the register or not
        self.pub = TablePublisher(
            path,
            T7,
            broker.host,
            broker.port,
            T7,
            broker.passwords[T7],
            signer=table_signer(T7),
            verifier=controller_verifier(),
            backoff=(0.05, 0.5),
            on_award=self.events.put,
            on_alarm=LinkAlarmGate(self.events.put, every_s=0.0),
        )

    def pump(self, quiet: float = 0.4) -> None:
        """Hand what the link delivered to the table until it stays quiet."""
        while True:
            try:
                event = self.events.get(timeout=quiet)
            except queue.Empty:
                return
            step = self.table.handle(event)
            self.prompts += [e for e in step.effects if isinstance(e, Prompt)]
            self.alarms += [e for e in step.effects if isinstance(e, Alarm)]
            if isinstance(event, ev.LinkAlarm) and not any(
                isinstance(e, Alarm) for e in step.effects
            ):  # merged into the open alarm of its kind: still one more alarm raised
                self.alarms.append(Alarm(f"link_{event.kind}", event.detail, ""))

    def open_alarms(self) -> list[dict]:
        return self.table.snapshot()["alarms"]

    def close(self) -> None:
        self.pub.close()
        self.table.close()


def table_money(live: LiveTable) -> dict:
    snap = dict(live.table.snapshot())
    for key in ("alarms", "alarms_dropped"):
        snap.pop(key, None)
    box = Outbox(live.path)
    try:
        snap["outbox"] = (box.last_written(), box.last_acknowledged())
    finally:
        box.close()
    return snap


def test_forged_acks_awards_and_meters_reach_no_dealer_and_no_sign(
    tmp_path,
    pa,
    broker,  # noqa: F811
    ledger_at,  # noqa: F811
):
    ledger, path = ledger_at(), tmp_path / "t7.journal"
    svc = start_service(broker, ledger)
    live = LiveTable(broker, path, pa)
    sign = broker.client(OBSERVER)
    board = Board(controller_verifier(), connected=True)
    try:
        assert sign.subscribe("bj/v1/meters/#").value == 1
        assert sign.subscribe(JACKPOT_STATUS_TOPIC).value == 1
        for event in session_events("pa-standard", 3, 4):
            live.table.handle(event)
        wait_for(lambda: live.pub.health()["depth"] == 0, what="the outbox to drain")
        live.pump()
        for m in sign.drain(0.5):
            assert board.receive(m.topic, m.payload) is None  # the true meters are shown
        shown = {pool: m["amount"] for pool, m in board.meters.items()}
        assert shown
        money, table_before = ledger_money(ledger), table_money(live)
        written = table_before["outbox"][0]
        prompts_before = len(live.prompts)

        def table_alarm(what: str, send, code: str) -> None:
            """``send()`` must end as one more alarm at the table, of ``code``."""
            count = len(live.alarms)
            send()
            deadline = time.monotonic() + 8
            while len(live.alarms) <= count and time.monotonic() < deadline:
                live.pump(0.2)
            assert len(live.alarms) == count + 1, f"no table alarm for {what}"
            assert code in live.alarms[-1].code, (what, live.alarms[-1])
            assert code in {a["code"] for a in live.open_alarms()}  # a technician sees it

        # -- the controller's broker rights without its key (a leaked controller password) ---
        twin = broker.client(CONTROLLER_TWIN)
        award = {"v": 1, "table": T7, "award_id": f"{T7}/999", "state": "offered",
                 "claim_seq": 999, "claim_key": "round-2/spot-1/blazing_7s/claim", "round": 2,
                 "spot": 1, "pool": "blazing_7s", "meter": "100% of meter",
                 "amount": 1_000_000, "order": 1, "meter_before": 1_000_000,
                 "sent_t": 1}  # fmt: skip
        ack = {"v": 1, "table": T7, "seq": written + 50, "sent_t": 1}
        resend = {"v": 1, "table": T7, "from": 1, "sent_t": 1}
        a_topic, k_topic = topic_for(T7, "award"), topic_for(T7, "ack")
        signed_award = controller_signer().sign(a_topic, award)
        forged = [
            (a_topic, award),  # unsigned
            (a_topic, STRANGER.sign(a_topic, award)),
            (a_topic, table_signer(T7).sign(a_topic, award)),
            (a_topic, {**signed_award, "amount": 2_000_000, "meter_before": 2_000_000}),
            (k_topic, ack),
            (k_topic, STRANGER.sign(k_topic, ack)),
            (k_topic, {**controller_signer().sign(k_topic, {**ack, "seq": 1}), "seq": written}),
            (topic_for(T7, "resend"), resend),
            (topic_for(T7, "resend"), controller_signer().sign(k_topic, resend)),
        ]
        try:
            for topic, message in forged:
                ATTEMPTS["the controller's broker rights, not its key"] += 1
                send = lambda t=topic, m=message: twin.publish(t, json.dumps(m))  # noqa: E731
                table_alarm(topic, send, "link_signature")
            # meters and status for the signs: not signed by the controller, not shown
            refused = board.refused
            fake_meters = [
                (
                    meter_topic("blazing_7s"),
                    {
                        "v": 1,
                        "pool": "blazing_7s",
                        "amount": 150_000_000_000_000,
                        "fraction": "0/1",
                        "seq": 10**9,
                        "sent_t": 1,
                    },
                ),
                (
                    meter_topic("mystery"),
                    {
                        "v": 1,
                        "pool": "mystery",
                        "amount": 99_999,
                        "fraction": "0/1",
                        "seq": 10**9,
                        "must_hit_by": 100_000,
                        "sent_t": 1,
                    },
                ),
                (JACKPOT_STATUS_TOPIC, {"v": 1, "state": "offline", "boot": 99, "sent_t": 1}),
            ]
            signatures = live.pub.health()["errors"].get("signature", 0)
            for topic, message in fake_meters:
                for signer in (None, STRANGER):
                    ATTEMPTS["the controller's broker rights, not its key"] += 1
                    data = signer.sign(topic, message) if signer else message
                    assert twin.publish(topic, json.dumps(data), retain=True).value in (0, 16)
            for m in sign.drain(0.5):
                board.receive(m.topic, m.payload)
            assert board.refused == refused + 2 * len(fake_meters)
            assert {p: m["amount"] for p, m in board.meters.items()} == shown
            assert board.status["state"] == "online"
            # the table reads the meters too (its dealer display) and the controller's status
            # (its heartbeat, issue 28): the same four forged meters and two forged statuses
            # are refused there, it still shows the true meters and the controller online
            wait_for(
                lambda: live.pub.health()["errors"].get("signature", 0) == signatures + 6,
                what="the table to refuse the forged meters and statuses",
            )
            live.pump(0.3)
            assert {m["pool"]: m["amount"] for m in live.pub.meters()} == shown
            assert live.pub.health()["controller"]["state"] == "online"
        finally:
            twin.close()

        # -- the controller's own key (an insider): the table checks the award itself --------
        insider = broker.client(CONTROLLER_TWIN)
        try:
            unproven = [
                award,  # answers no claim this table made
                {
                    **award,
                    "claim_key": "round-1/spot-1/blazing_7s/contribution",
                    "pool": "mystery",
                    "amount": 99_999,
                    "meter_before": 99_999,
                },
                {**award, "state": "committed", "award_id": f"{T7}/998"},
            ]
            for message in unproven:
                ATTEMPTS["the controller's key (an insider)"] += 1
                data = json.dumps(controller_signer().sign(a_topic, message))
                send = lambda d=data: insider.publish(a_topic, d)  # noqa: E731
                table_alarm("an unproven award", send, "award_unproven")
            ATTEMPTS["the controller's key (an insider)"] += 1
            beyond = controller_signer().sign(k_topic, ack)  # an ack for what was never sent
            send = lambda: insider.publish(k_topic, json.dumps(beyond))  # noqa: E731
            table_alarm("an ack beyond the outbox", send, "link_ack_refused")
        finally:
            insider.close()

        # -- a sign's credentials and another table's: the broker refuses ------------------
        for user, topics in (
            (SIGN, (a_topic, k_topic, meter_topic("blazing_7s"), JACKPOT_STATUS_TOPIC,
                    topic_for(T7, "contribution"), f"bj/v1/table/{SIGN}/contribution")),
            (T8, (a_topic, k_topic, topic_for(T7, "contribution"), topic_for(T7, "status"),
                  meter_topic("blazing_7s"))),
        ):  # fmt: skip
            client = broker.client(user)
            try:
                for topic in topics:
                    ATTEMPTS[f"a {'sign' if user == SIGN else 'table'}'s password"] += 1
                    assert client.publish(topic, json.dumps(award)).value == 135, (user, topic)
            finally:
                client.close()
        # T8 is not a table of the link: its own stream is refused by the controller
        ATTEMPTS["a table's password"] += 1
        client = broker.client(T8)
        try:
            counted = svc.health()["counts"].get("unknown_table", 0)
            env = {"v": 1, "table": T8, "boot": 1, "seq": 1, "key": "k", "kind": "contribution",
                   "sent_t": 1, "payload": {"round": 1, "game": "pa-standard", "spot": 1,
                   "wager": "blazing_7s", "pool": "blazing_7s", "stake": 500,
                   "mystery": True}}  # fmt: skip
            topic = topic_for(T8, "contribution")
            client.publish(topic, json.dumps(table_signer(T8).sign(topic, env)))
            wait_for(lambda: svc.health()["counts"].get("unknown_table", 0) == counted + 1)
        finally:
            client.close()
        # -- no credentials, or a wrong password: no connection at all -------------------
        for user, password in ((None, None), (T7, "wrong"), (CONTROLLER, "guess"), (SIGN, "")):
            ATTEMPTS["none"] += 1
            with pytest.raises(ConnectionRefusedError):
                broker.client(user, client_id=f"intruder-{ATTEMPTS['none']}", password=password)
        live.pump()
        # nothing that holds money moved, and the dealer was never told to pay
        assert ledger_money(ledger) == money
        assert table_money(live) == table_before
        new = live.prompts[prompts_before:]
        assert not [p for p in new if p.code.startswith("jackpot")], new
        assert live.pub.health()["errors"].get("signature", 0) >= 9
    finally:
        sign.close()
        live.close()
        svc.close()


POISON = {
    "a 5,000-digit integer": b'{"v": 1, "seq": ' + b"9" * 5000 + b"}",
    "3,000 levels of nesting": b"[" * 3000 + b"]" * 3000,
    "NaN for money": b'{"v": 1, "table": "hcm-bj-07", "seq": NaN}',
    "a seq past 2^63": None,  # filled in the test: a valid message but for its seq
}


def test_poison_messages_stop_no_controller_table_or_sign(tmp_path, pa, broker, ledger_at):  # noqa: F811
    """Bytes that crash a JSON parser or overflow SQLite, retained so that they come back on
    every connect: each is refused and alarmed once, and everyone keeps working."""
    ledger, path = ledger_at(), tmp_path / "t7.journal"
    svc = start_service(broker, ledger)
    live = LiveTable(broker, path, pa)
    raw, twin = broker.client(T8), broker.client(CONTROLLER_TWIN)
    try:
        big = {"v": 1, "table": T8, "boot": 1, "seq": 2**63, "key": "k", "kind": "contribution",
               "sent_t": 1, "payload": {"round": 2**63, "game": "pa-standard", "spot": 1,
               "wager": "blazing_7s", "pool": "blazing_7s", "stake": 500,
               "mystery": True}}  # fmt: skip
        poison = {**POISON, "a seq past 2^63": json.dumps(big).encode()}
        wait_for(lambda: live.pub.health()["connected"], what="the table online")
        for name, data in poison.items():
            ATTEMPTS["poison (a table's or the controller's password)"] += 2
            malformed = svc.health()["counts"].get("malformed", 0)
            assert raw.publish(topic_for(T8, "contribution"), data, retain=True).value in (0, 16)
            wait_for(lambda m=malformed: svc.health()["counts"].get("malformed", 0) == m + 1,
                     what=f"the controller refusing {name}")  # fmt: skip
            count = len(live.alarms)
            assert twin.publish(topic_for(T7, "award"), data, retain=True).value in (0, 16)
            wait_for(lambda c=count: (live.pump(0.1), len(live.alarms) > c)[1],
                     what=f"the table refusing {name}")  # fmt: skip
            assert live.alarms[-1].code == "link_award_malformed"
            assert Board(controller_verifier()).receive(meter_topic("blazing_7s"), data)
        health = svc.health()
        assert health["connected"] and health["counts"].get("ledger_error", 0) == 0
        assert health["counts"].get("internal_error", 0) == 0
        assert {a["kind"] for a in health["alarms"]} == {"malformed"}
        assert live.pub.alive() and live.pub.health()["connected"]
        # both still do their work: the table's next round is applied and acknowledged
        for event in session_events("pa-standard", 11, 1):
            live.table.handle(event)
        rows = Outbox(path)
        try:
            written = rows.last_written()
        finally:
            rows.close()
        assert written >= 1
        wait_for(lambda: svc.health()["counts"].get("applied", 0) == written, what="applied")
        wait_for(lambda: live.pub.health()["last_ack"] == written, what="the table's round acked")
    finally:
        for topic in (topic_for(T8, "contribution"), topic_for(T7, "award")):
            client = raw if "table" in topic else twin
            client.publish(topic, b"", retain=True)  # clear the retained poison
        raw.close()
        twin.close()
        live.close()
        svc.close()


# -- issue 26: what a refusal shows the dealer, and a resend from beyond the outbox -------------

HOSTILE = "PAY SPOT 3 $25,000 NOW"
#: The hostile words as a refused message carries them: a forged log line, terminal colours,
#: a right-to-left override and enough text to fill any screen.
HOSTILE_TEXT = HOSTILE + "\njackpot link ok\x1b[31m\u202e" + "$" * 5000


def test_a_refused_messages_own_words_never_reach_the_dealer(tmp_path, pa, broker, caplog):  # noqa: F811
    """Issue 26 item 6: a malformed resend once put "'PAY SPOT 3 $25,000 NOW' is not of type
    'integer'" in the dealer's alarm band. Each kind of refusal says what kind of message was
    refused in fixed words; the log keeps the message's words, escaped and cut."""
    from controller.link.messages import DETAIL_MAX
    from controller.table.view import LINK_ALARM_WORDS
    from controller.web.views import dealer_view

    live = LiveTable(broker, tmp_path / "t7.journal", pa)
    twin = broker.client(CONTROLLER_TWIN)
    a_topic = topic_for(T7, "award")
    award = {"v": 1, "table": T7, "award_id": f"{T7}/999", "state": "offered",
             "claim_seq": 999, "claim_key": "round-2/spot-3/blazing_7s/claim", "round": 2,
             "spot": 3, "pool": "blazing_7s", "meter": "100% of meter", "amount": 2_500_000,
             "order": 1, "meter_before": 2_500_000, "sent_t": 1}  # fmt: skip
    named = Signer("PAY-SPOT-3-25000-NOW", new_signing_key())  # a key id that reads as an order
    hostile = [
        (topic_for(T7, "resend"), {"v": 1, "table": T7, "from": HOSTILE_TEXT, "sent_t": 1},
         "link_resend_malformed"),
        (topic_for(T7, "ack"), {"v": 1, "table": HOSTILE_TEXT, "seq": 1, "sent_t": 1},
         "link_ack_malformed"),
        (a_topic, named.sign(a_topic, award), "link_signature"),
        (meter_topic("blazing_7s"), {"v": 1, "pool": HOSTILE_TEXT, "amount": 1, "seq": 1,
         "fraction": "0/1", "sent_t": 1}, "link_meter_malformed"),
    ]  # fmt: skip
    try:
        wait_for(lambda: live.pub.health()["connected"], what="the table online")
        with caplog.at_level("WARNING", logger="table-controller"):
            for topic, message, code in hostile:
                ATTEMPTS["the controller's broker rights, not its key"] += 1
                count = len(live.alarms)
                assert twin.publish(topic, json.dumps(message)).value in (0, 16)
                wait_for(lambda c=count: (live.pump(0.1), len(live.alarms) > c)[1],
                         what=f"the table refusing {code}")  # fmt: skip
                assert live.alarms[-1].code == code
        # the dealer display's view and the alarm register: the kind's fixed words only
        status = {"snapshot": live.table.snapshot(), "jackpot_link": True}
        view = dealer_view(T7, status, [])
        for shown in (json.dumps(view), json.dumps(status["snapshot"]["alarms"])):
            for words in ("PAY SPOT", "PAY-SPOT", "25,000", "25000", "$$$", "\\u202e"):
                assert words not in shown, (words, shown)
        lines = {line["code"]: line["text"] for line in view["alarm_lines"]}
        assert lines == {
            "link_resend_malformed": LINK_ALARM_WORDS["resend_malformed"][0],
            "link_ack_malformed": LINK_ALARM_WORDS["ack_malformed"][0],
            "link_signature": "A jackpot award failed its signature check: it was refused",
            "link_meter_malformed": LINK_ALARM_WORDS["meter_malformed"][0],
        }
        # the technician's log has them, one line each, escaped and cut
        lines = [r.getMessage() for r in caplog.records if "jackpot link" in r.getMessage()]
        assert len(lines) == len(hostile), lines
        assert all(HOSTILE in line or "PAY-SPOT" in line for line in lines), lines
        for line in lines:
            assert line.isascii() and line.isprintable(), line
            assert len(line) < DETAIL_MAX + 60
        assert "\\njackpot link ok\\x1b[31m\\u202e$$" in lines[0]
        # the journal keeps the same escaped detail
        details = [e.event["detail"] for e in live.table.journal.entries()
                   if e.event["type"] == "link_alarm"]  # fmt: skip
        assert len(details) == len(hostile)
        assert all(d.isascii() and d.isprintable() and len(d) <= DETAIL_MAX for d in details)
    finally:
        twin.close()
        live.close()


@pytest.fixture
def rig(tmp_path, broker):  # noqa: F811
    from table_rig import Rig, free_port

    port = free_port()
    r = Rig(tmp_path, broker, web=f'bind = "127.0.0.1"\nport = {port}')
    r.url = f"http://127.0.0.1:{port}"
    try:
        r.start_table()
        r.wait_web(r.url)
        yield r
    finally:
        r.stop()


def test_a_resend_from_beyond_what_was_written_is_refused_and_the_table_plays_on(
    rig,
    broker,  # noqa: F811
):
    """Issue 26 item 5, on the real daemon, jackpot controller and broker: a resend signed
    with the controller's key from 1,000,000,000 once left the link down and progressive
    bets refused until a restart, with no alarm naming why. It is refused with an alarm the
    dealer sees in fixed words; the next round's Blazing 7's bet is accepted and its
    contribution reaches the ledger."""
    from table_rig import TABLE

    from controller.table.view import LINK_ALARM_WORDS

    def codes(answer: dict) -> set[str]:
        return {a["code"] for a in answer["status"]["snapshot"]["alarms"]}

    def link(answer: dict) -> tuple[int, int, bool]:
        health = answer["health"]["link"]
        return health["depth"], health["last_ack"], answer["status"]["jackpot_link"]

    rig.bets()
    rig.play_round()
    first = rig.wait(lambda a: link(a)[0] == 0 and link(a)[2], "round 1 acked", timeout=30)
    acked = link(first)[1]
    twin = broker.client(CONTROLLER_TWIN)
    try:
        topic = topic_for(TABLE, "resend")
        ATTEMPTS["the controller's key (an insider)"] += 2
        far = {"v": 1, "table": TABLE, "from": 1_000_000_000, "sent_t": 1}
        assert twin.publish(topic, json.dumps(controller_signer().sign(topic, far))).value == 0
        worded = {"v": 1, "table": TABLE, "from": HOSTILE, "sent_t": 1}
        assert twin.publish(topic, json.dumps(controller_signer().sign(topic, worded))).value == 0
    finally:
        twin.close()
    raised = {"link_resend_refused", "link_resend_malformed"}
    rig.wait(lambda a: raised <= codes(a), "the two refusals at the table")
    with urllib.request.urlopen(rig.url + "/api/dealer", timeout=30) as answer:
        dealer = json.loads(answer.read())
    lines = {line["code"]: line["text"] for line in dealer["alarm_lines"]}
    assert lines["link_resend_refused"] == LINK_ALARM_WORDS["resend_refused"][0]
    assert lines["link_resend_malformed"] == LINK_ALARM_WORDS["resend_malformed"][0]
    shown = json.dumps(dealer)
    assert HOSTILE not in shown and "1000000000" not in shown
    # the table plays on: round 2's Blazing 7's bet is taken and its contribution acked
    rig.play_round()
    done = rig.wait(lambda a: link(a)[0] == 0 and link(a)[1] > acked, "round 2 acked", timeout=30)
    assert link(done)[2] and "progressive_refused" not in codes(done)
    ledger = sqlite3.connect(f"file:{rig.ledger}?mode=ro", uri=True)
    try:
        keys = [k for (k,) in ledger.execute("SELECT key FROM applied WHERE table_id = ?",
                                            (TABLE,))]  # fmt: skip
    finally:
        ledger.close()
    assert "round-2/spot-1/blazing_7s/contribution" in keys, keys
    log = rig.log("table")
    assert "jackpot link resend_refused: resend from 1000000000 refused" in log


def test_the_suite_made_at_least_sixty_attempts():
    """Runs last in this module: the attempts above, by the credentials they used."""
    if len(ATTEMPTS) < 5:
        pytest.skip("run with the whole module")
    assert sum(ATTEMPTS.values()) >= 60, ATTEMPTS


# -- issue 32: batch frames, refused whole ---------------------------------------------------


def test_a_forged_truncated_reordered_oversized_or_mixed_frame_is_refused_whole(
    tmp_path,
    pa,
    broker,  # noqa: F811
    ledger_at,  # noqa: F811
):
    """A batch frame carries several rows under one signature (controller/link/frames.py).
    Each bad frame, sent with T7's broker password (with T7's key: a stolen table; without:
    a leaked password), is refused whole: no row of it reaches the ledger, even the rows that
    would pass alone; it is counted and raised as an alarm like a single forged message, and
    no ack moves. Then the true frames of the same rows are applied and acknowledged."""
    ledger = ledger_at()
    rows = legit_stream(tmp_path, pa, rounds=40)
    assert len(rows) > BATCH_ROWS + 1
    svc = start_service(broker, ledger)
    table = RawTable(broker, table_signer(T7))
    envelopes = [table.envelope(seq, r.kind, r.key, r.payload) for seq, r in enumerate(rows, 1)]
    first = envelopes[:10]

    def framed(batch, signer=None, table_id=T7, boot=1) -> bytes:
        signer = signer or table_signer(T7)
        return wire_frame(signer, table_id, boot, 1_770_000_000_000, batch)

    def edited(change, data=None) -> bytes:
        body = json.loads(data or framed(first))
        change(body)
        return json.dumps(body).encode()

    other_table = [{**e, "table": "hcm-bj-01"} for e in first]
    signed_alone = table_signer(T7).sign(topic_for(T7, first[3]["kind"]), first[3])
    later, other_sig = framed(envelopes[10:12]), json.loads(framed(envelopes[10:20]))["sig"]
    stolen = [  # T7's own key, frames that break the frame's rules: malformed
        ("reordered", framed(first[::-1]), "malformed"),
        ("a hole", framed(first[:4] + first[5:]), "malformed"),
        ("a row twice", framed(first + first[-1:]), "malformed"),
        ("mixed tables", framed(first[:5] + other_table[5:]), "malformed"),
        ("mixed boots", framed(first[:5] + [{**e, "boot": 2} for e in first[5:]]), "malformed"),
        ("another table's frame", framed(other_table, table_id="hcm-bj-01"), "malformed"),
        ("more rows than a frame holds", framed(envelopes[: BATCH_ROWS + 1]), "malformed"),
        ("more bytes than a frame holds", framed(first) + b" " * BATCH_BYTES, "malformed"),
        ("a row signed alone inside", framed([*first[:3], signed_alone, *first[4:]]), "malformed"),
    ]
    leaked = [  # no key of T7's: the signature refuses
        ("truncated", edited(lambda f: f["rows"].pop()), "signature"),
        ("the first row dropped", edited(lambda f: f["rows"].pop(0)), "signature"),
        ("a row changed", edited(lambda f: f["rows"][2].update(key="forged/1")), "signature"),
        ("spliced", edited(lambda f: f["rows"].extend(json.loads(later)["rows"])), "signature"),
        ("another frame's signature", edited(lambda f: f.update(sig=other_sig)), "signature"),
        ("unsigned", edited(lambda f: (f.pop("sig"), f.pop("kid"))), "signature"),
        ("T7's key id, another key", framed(first, STRANGER), "signature"),
        ("another table's key", framed(first, table_signer("hcm-bj-01")), "signature"),
        ("the controller's key", framed(first, controller_signer()), "signature"),
    ]
    try:
        wait_for(lambda: svc.health()["connected"], what="the service online")
        before = ledger_money(ledger)
        for credentials, cases in (("a stolen table", stolen),
                                   ("a leaked table password", leaked)):  # fmt: skip
            for name, data, outcome in cases:
                ATTEMPTS[credentials] += 1
                counted = svc.health()["counts"].get(outcome, 0)
                alarmed = alarms(svc)
                assert table.send("batch", data).value in (0, 16), name
                wait_for(lambda c=counted, o=outcome: svc.health()["counts"].get(o, 0) == c + 1,
                         what=f"{name} refused as {outcome}")  # fmt: skip
                wait_for(lambda a=alarmed: alarms(svc) == a + 1, what=f"an alarm for {name}")
                assert svc.health()["alarms"][-1]["kind"] == outcome, name
        # a frame on another table's topic: the broker refuses it (its ACL)
        ATTEMPTS["a leaked table password"] += 1
        assert table.client.publish(topic_for(T8, "batch"), framed(first)).value == 135
        health = svc.health()
        assert health["counts"].get("applied", 0) == 0 and "ack" not in health["counts"]
        assert ledger_money(ledger) == before  # not one row of any of them
        # the true frames of the same rows: applied in order, the highest sequence acked
        for start in range(0, len(envelopes), 10):  # 10 rows: well under BATCH_BYTES
            table.send("batch", framed(envelopes[start : start + 10]))
        wait_for(lambda: svc.health()["counts"].get("applied", 0) == len(envelopes),
                 what="the true frames applied")  # fmt: skip
        assert table.next_of("ack", lambda a: a["seq"] == len(envelopes))
        assert svc.health()["counts"]["frame"] >= 2
    finally:
        table.client.close()
        svc.close()
    applied = ledger_money(ledger)["applied"]
    assert [tuple(r) for r in applied] == [(T7, seq, e["key"]) for seq, e in
                                           enumerate(envelopes, 1)]  # fmt: skip
