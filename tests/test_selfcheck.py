"""The daemons' software self-check (issue 29 item 4; N.J.A.C. 13:69E-1.28H): the periodic
checker driven by an injected verify function and clock (no sleeping), and what the table
does with each result: a failure latches the ``software`` fault naming the file (no new
round), a pass says the fault is gone, every result kept in the journal's meta with its time.
The installed bundle's case is in test_verify.py (it reuses that module's install)."""

from __future__ import annotations

from controller.games import load_game
from controller.journal import JournaledTable
from controller.runtime.software import SoftwareWatch
from controller.selfcheck import META_KEY, SelfCheck
from controller.table import events as ev
from controller.table.settings import TableSettings
from controller.verify import Result

BAD = "/opt/table-controller/venv/lib/python3.11/site-packages/paho/mqtt/client.py"


class Clock:
    def __init__(self) -> None:
        self.s = 1000.0

    def __call__(self) -> float:
        return self.s

    def utc_ms(self) -> int:
        return int(self.s * 1000)


def checker(results: list[Result], clock: Clock, every_s: float = 3600) -> SelfCheck:
    return SelfCheck("table", every_s, verify=lambda: results.pop(0), monotonic=clock,
                     utc_ms=clock.utc_ms)  # fmt: skip


def test_the_check_runs_at_start_then_each_interval_and_every_result_is_handed_over():
    clock = Clock()
    results = [
        Result("0.4.0 (manifest sha256:ab)", files=12),
        Result("0.4.0 (manifest sha256:ab)", [f"{BAD}: its SHA-256 differs from the signed list"]),
    ]
    check = checker(results, clock)
    assert check.first.state == "ok" and check.first.utc_ms == 1_000_000
    clock.s += 3599
    assert check.tick(clock()) is None  # not due yet: verify is not called
    clock.s += 1
    found = check.tick(clock())
    assert found is not None and found.failed and BAD in found.text()
    assert [c.state for c in check.take()] == ["ok", "failed"] and check.take() == []
    assert check.health()["result"] == "failed" and check.health()["every_s"] == 3600


def test_a_check_that_cannot_run_is_a_failure_not_a_silent_pass():
    def broken() -> Result:
        raise PermissionError("site-packages: permission denied")

    check = SelfCheck("jackpot", verify=broken, monotonic=Clock())
    assert check.first.failed and "permission denied" in check.first.text()


def test_a_failure_latches_the_software_fault_and_no_round_starts_until_it_checks(tmp_path):
    rules = load_game("pa-standard")
    table = JournaledTable(tmp_path / "journal.sqlite", rules, TableSettings(spots=2))
    try:
        clock = Clock()
        failed = Result(None, [f"{BAD}: its SHA-256 differs from the signed list"])
        check = checker([failed, Result("0.4.0 (manifest sha256:ab)", files=9)], clock)
        watch = SoftwareWatch(check, table.journal, latched=False)
        (fault,) = watch(5)  # the start's result: the first event of the run
        assert fault == ev.TableFault("software", fault.detail, True, t=5) and BAD in fault.detail
        table.handle(fault)
        assert table.state.faults["software"] == (fault.detail, True)
        refused = table.handle(ev.Lockout(t=6))  # no new round while it is latched
        assert not refused.accepted and "faulted (software:" in refused.reason
        kept = table.journal.meta()[META_KEY]
        assert kept["result"] == "failed" and kept["problems"] == [failed.problems[0]]
        assert kept["utc"] == "1970-01-01T00:16:40Z"
        clock.s += 3600
        check.tick(clock())
        (gone,) = watch(7)
        assert gone.active is False
        table.handle(gone)
        assert table.journal.meta()[META_KEY]["result"] == "ok"
        assert table.journal.meta()[META_KEY]["build"] == "0.4.0 (manifest sha256:ab)"
    finally:
        table.close()


def test_the_controller_refuses_to_operate_on_a_failure_and_alarms_hourly(tmp_path):
    import json

    from link_keys import jackpot_config

    from jackpot.alarms import AlarmLog
    from jackpot.ledger import Ledger
    from jackpot.selfcheck import SoftwareAlarm, refusal

    config, path = jackpot_config(), tmp_path / "ledger.db"
    clock = Clock()
    failed = Result(None, [f"{BAD}: missing"])
    check = checker([failed, Result("0.4.0 (manifest sha256:ab)", files=9), failed], clock)
    why = refusal(check, path, lambda: Ledger(path, config))
    assert why is not None and f"{BAD}: missing" in why and "not operating" in why
    with Ledger(path, config) as ledger:
        assert json.loads(ledger.meta(META_KEY))["result"] == "failed"
    with AlarmLog(path) as alarms:
        assert [(r.kind, r.detail) for r in alarms.rows()] == [("software", failed_text(why))]
    raised = []
    pump = SoftwareAlarm(check)  # the start's result is already kept
    with Ledger(path, config) as ledger:
        for _hour in range(2):
            clock.s += 3600
            check.tick(clock())
            pump.pump(ledger, lambda *alarm: raised.append(alarm))
            kept = json.loads(ledger.meta(META_KEY))
            assert kept["utc_ms"] == clock.utc_ms()
    assert kept["result"] == "failed" and raised == [("software", None, None, failed_text(why))]


def failed_text(why: str) -> str:
    return why.split("; not operating")[0]
