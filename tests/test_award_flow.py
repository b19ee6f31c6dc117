"""The award flow end to end (docs/jackpot/README.md "Award flow"): a real Mosquitto
(tests/mqtt_broker.py), a real ``JackpotService`` and SQLite ledger, a real ``JournaledTable``
and ``TablePublisher``. A Must-Hit-By Mystery hit is forced by the ledger's injected trigger
draw (the first trigger is the seed, so the first Mystery contribution hits); the award
reaches the table through the publisher's ``on_award``, and the test hands it to the table as
the runtime does.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import time
from pathlib import Path

import pytest
from _journal_feeder import SETTINGS, session_events
from link_keys import controller_signer, controller_verifier, jackpot_config, table_signer
from mqtt_broker import CONTROLLER, CONTROLLER_TWIN, TABLES, broker  # noqa: F401

from controller.journal import JournaledTable
from controller.journal.outbox import Outbox
from controller.link.awards import award_event
from controller.link.messages import topic_for, validate
from controller.link.publisher import TablePublisher
from controller.table import events as ev
from controller.table.effects import Prompt
from jackpot.ledger import Ledger
from jackpot.service import JackpotService

ROOT = Path(__file__).resolve().parent.parent
CONFIG = jackpot_config()
T7, T8 = TABLES
TRIGGER_OFFSET = 61_357


def wait_for(predicate, timeout: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def depth(path: Path) -> int:
    box = Outbox(path)
    try:
        return box.depth()
    finally:
        box.close()


def codes(step) -> list[str]:
    return [e.code for e in step.effects if isinstance(e, Prompt)]


def service(broker, ledger: Path) -> JackpotService:  # noqa: F811
    """The service, its first Mystery trigger at the seed (the first contribution hits)."""
    draws = itertools.chain([0], itertools.repeat(TRIGGER_OFFSET))
    svc = JackpotService(
        CONFIG,
        ledger,
        broker.host,
        broker.port,
        CONTROLLER,
        broker.passwords[CONTROLLER],
        signer=controller_signer(),
        backoff=(0.05, 0.5),
        randbelow=lambda n: next(draws),
    )
    assert svc.wait_online(10), "the service did not come online"
    return svc


class Runtime:
    """What the table's runtime does with the link: a journaled table, its publisher, and
    the awards the publisher hands over, queued for the table's thread."""

    def __init__(self, broker, box: Path, pa):  # noqa: F811
        self.table = JournaledTable(box, pa, SETTINGS)
        self.awards: queue.Queue[ev.JackpotAward] = queue.Queue()
        self.pub = TablePublisher(
            box,
            T7,
            broker.host,
            broker.port,
            T7,
            broker.passwords[T7],
            signer=table_signer(T7),
            verifier=controller_verifier(),
            backoff=(0.05, 0.5),
            on_award=self.awards.put,
        )

    def next_award(self, timeout: float = 15.0) -> ev.JackpotAward:
        try:
            return self.awards.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no award reached the table") from None

    def close(self) -> None:
        self.pub.close()
        self.table.close()


@pytest.fixture
def setup(tmp_path, broker, pa):  # noqa: F811
    ledger = tmp_path / "ledger.db"
    svc = service(broker, ledger)
    box = tmp_path / "t.journal"
    runtimes: list[Runtime] = []

    def start() -> Runtime:
        runtimes.append(Runtime(broker, box, pa))
        return runtimes[-1]

    try:
        yield ledger, box, start
    finally:
        for runtime in runtimes:
            runtime.close()
        svc.close()


def play_until_offered(runtime: Runtime) -> tuple[ev.JackpotAward, int]:
    """Play Blazing 7's rounds; the first Mystery contribution hits. Hand the award to the
    table: the dealer prompt. Returns the award and the step's time."""
    for event in session_events("pa-standard", 3, 4):
        runtime.table.handle(event)
    award = runtime.next_award()
    assert (award.state, award.pool, award.amount, award.line) == (
        "offered",
        "mystery",
        25_000,
        "100% of meter",
    )
    assert award.award_id.startswith(f"{T7}/")
    step = runtime.table.handle(award)
    assert step.accepted and codes(step) == ["jackpot_award"]
    assert [a["award_id"] for a in runtime.table.snapshot()["awards"]] == [award.award_id]
    return award, award.t


def ledger_awards(path: Path) -> dict[str, str]:
    with Ledger(path, CONFIG) as led:
        return {a.award_id: a.state for a in led.awards(T7)}


def test_hit_award_prompt_confirm_commit_ack(setup, broker):  # noqa: F811
    ledger, box, start = setup
    runtime = start()
    award, t = play_until_offered(runtime)
    assert ledger_awards(ledger) == {award.award_id: "offered"}
    assert runtime.table.handle(ev.SupervisorKey(True, t=t + 1000)).accepted
    step = runtime.table.handle(ev.ConfirmAward(award.award_id, t=t + 2000))
    assert step.accepted and codes(step) == ["jackpot_confirmed"]
    # the award_confirm goes through the outbox and the publisher; the service commits, acks
    committed = runtime.next_award()
    assert (committed.award_id, committed.state) == (award.award_id, "committed")
    wait_for(lambda: depth(box) == 0, what="the award_confirm acknowledged")
    assert codes(runtime.table.handle(committed)) == ["jackpot_committed"]
    assert runtime.table.snapshot()["awards"] == []
    assert ledger_awards(ledger) == {award.award_id: "committed"}
    assert runtime.pub.alarms == []


def test_an_award_offered_again_after_a_restart_is_handled_once(setup, broker):  # noqa: F811
    ledger, box, start = setup
    runtime = start()
    award, _ = play_until_offered(runtime)
    wait_for(lambda: depth(box) == 0, what="the stream acknowledged")
    runtime.close()  # the table restarts before the dealer confirms
    runtime = start()
    assert [a["award_id"] for a in runtime.table.snapshot()["awards"]] == [award.award_id]
    again = runtime.next_award()  # the controller re-offers it on the table's birth
    assert (again.award_id, again.state, again.amount) == (award.award_id, "offered", 25_000)
    step = runtime.table.handle(again)
    assert step.accepted and step.effects == ()
    assert [a["award_id"] for a in runtime.table.snapshot()["awards"]] == [award.award_id]
    with pytest.raises(queue.Empty):
        runtime.awards.get(timeout=0.5)  # offered once per birth, not more
    assert runtime.pub.alarms == []
    assert ledger_awards(ledger) == {award.award_id: "offered"}


def award_message(**changes) -> dict:
    message = {"v": 1, "table": T7, "award_id": f"{T7}/9", "state": "offered", "claim_seq": 9,
               "claim_key": "round-3/spot-2/mystery", "round": 3, "spot": 2, "pool": "mystery",
               "meter": "100% of meter", "amount": 25_000, "order": 1, "meter_before": 25_000,
               "sent_t": 1}  # fmt: skip
    message.update(changes)
    return message


def signed(message: dict, topic: str = topic_for(T7, "award")) -> bytes:
    """``message`` signed with the controller's key, as the jackpot controller sends it."""
    return json.dumps(controller_signer().sign(topic, message)).encode()


def test_a_malformed_award_or_another_tables_is_an_alarm_and_nothing_else(setup, broker):  # noqa: F811
    *_, start = setup
    runtime = start()
    controller = broker.client(CONTROLLER_TWIN)  # the controller's rights; the real one runs
    topic = topic_for(T7, "award")
    try:
        validate("award", award_message())
        wait_for(lambda: runtime.pub.health()["connected"], what="the table online")
        for _ in range(20):  # until the table's subscription is live
            assert controller.publish(topic, signed(award_message())).value in (0, 16)
            with contextlib.suppress(queue.Empty):
                first = runtime.awards.get(timeout=0.5)
                break
        else:
            raise AssertionError("no award reached the table")
        assert first == award_event(award_message(), first.t)
        bad = [
            b"{not json",
            signed(award_message(table=T8)),  # another table's, on T7's topic
            signed(award_message(state="paid")),
            json.dumps(award_message(amount=250.0)).encode(),
            signed(award_message(extra=1)),
        ]
        for payload in bad:
            assert controller.publish(topic, payload).value in (0, 16)
        unsigned = json.dumps(award_message(award_id=f"{T7}/11")).encode()
        forged = json.loads(signed(award_message(award_id=f"{T7}/12")))
        forged["amount"] = 2_500_000  # changed after signing
        by_table = json.dumps(table_signer(T7).sign(topic, award_message(award_id=f"{T7}/13")))
        not_signed = [unsigned, json.dumps(forged).encode(), by_table.encode()]
        for payload in not_signed:
            assert controller.publish(topic, payload).value in (0, 16)
        last = award_message(award_id=f"{T7}/10")
        assert controller.publish(topic, signed(last)).value in (0, 16)
        got = runtime.next_award()
        while got.award_id == first.award_id:  # more copies, if an earlier send was in time
            got = runtime.next_award()
        assert got.award_id == f"{T7}/10"  # in order: the bad ones were seen
    finally:
        controller.close()
    assert runtime.awards.empty()
    kinds = [a.kind for a in runtime.pub.alarms]
    assert kinds == ["award_malformed"] * len(bad) + ["signature"] * len(not_signed)
    assert T8 in runtime.pub.alarms[1].detail
    assert "unsigned" in runtime.pub.alarms[len(bad)].detail
    assert "does not match" in runtime.pub.alarms[len(bad) + 1].detail
    assert "not trusted" in runtime.pub.alarms[len(bad) + 2].detail
    assert runtime.pub.health()["errors"] == {
        "award_malformed": len(bad),
        "signature": len(not_signed),
    }


def test_award_event_maps_the_schema_to_the_event():
    for state, extra in (("offered", {}), ("committed", {}), ("refused", {"reason": "no"})):
        message = award_message(state=state, **extra)
        if state == "refused":
            message["amount"] = 0
            del message["order"], message["meter_before"]
        validate("award", message)
        assert award_event(message, 77) == ev.JackpotAward(
            f"{T7}/9",
            3,
            2,
            "mystery",
            message["amount"],
            "100% of meter",
            state,
            77,
            claim_key="round-3/spot-2/mystery",
            meter_before=None if state == "refused" else 25_000,
        )
