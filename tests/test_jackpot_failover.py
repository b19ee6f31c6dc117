"""Hot standby and failover of the jackpot controller (docs/jackpot/failover.md).

Real parts throughout: PostgreSQL (tests/pg_server.py), Mosquitto (tests/mqtt_broker.py), and
for the process tests bench/jackpot_faults.py's :class:`HaFaultRun`: two real
``jackpot-controller`` processes (``[ha]`` names ``a`` and ``b``, broker users
``jackpot-controller`` and ``jackpot-controller-b``) on one PostgreSQL ledger while table
processes stream a Blazing 7's session. After each fault, once quiet: every (table, seq) the
tables' journals made is in the ledger once (none lost, none twice, in order), every outbox is
acknowledged, the ledger's contributions are the tables' and each pool's meter is the sum of
its movements (seed + contributions - awards).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from link_keys import controller_signer, jackpot_config, table_signer
from mqtt_broker import CONTROLLER, broker, find_mosquitto  # noqa: F401
from pg_server import SUPERUSER, PgServer, find_bindir, pg_dsn, pg_server  # noqa: F401

from controller.link.messages import topic_for, validate
from jackpot.ha import RETRY_FIRST_S, HaService
from jackpot.leader import ElectionError, Elector
from jackpot.ledger import Ledger, LedgerError, LedgerFenced, Status
from jackpot.metrics import JackpotMetrics
from jackpot.pools import HaConfig, load_config

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from jackpot_faults import HaFaultRun  # noqa: E402

CONFIG = load_config(ROOT / "config" / "jackpot.example.toml")
T1 = "hcm-bj-07"
LEASE_MS = 1500

needs_mosquitto = pytest.mark.skipif(find_mosquitto() is None, reason="mosquitto not installed")


def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def contrib(seq: int, rnd: int) -> dict:
    message = {"v": 1, "table": T1, "boot": 1, "seq": seq, "key": f"round-{rnd}/spot-1/b7/c",
               "kind": "contribution", "sent_t": 1_700_000_000_000 + seq,
               "payload": {"round": rnd, "game": "pa-standard", "spot": 1,
                           "wager": "blazing_7s", "pool": "blazing_7s", "stake": 500,
                           "mystery": True}}  # fmt: skip
    validate("contribution", message)
    return message


def ledger_state(dsn: str) -> tuple:
    # only reads: whichever config's terms the ledger recorded (the tests' keys or none)
    with Ledger(dsn, CONFIG, check_terms=False) as led:
        return led.applied(), {pool: led.meter(pool) for pool in CONFIG.pools}, led.ack(T1)


# -- the election and the fence, against a real PostgreSQL -----------------------------------


def test_one_leader_and_a_takeover_only_once_the_lease_ran_out(pg_dsn):  # noqa: F811
    # a 3 s lease: the checks that b cannot take it yet have 2.4 s of margin for a busy
    # machine to pause this process (with 1 s, a pause of 0.4 s failed them)
    a, b = Elector(pg_dsn, "a", 3000), Elector(pg_dsn, "b", 3000)
    try:
        assert a.try_lead() == 1 and a.holds()
        assert b.try_lead() is None  # a's lease runs
        lease = b.lease()
        assert (lease.holder, lease.epoch) == ("a", 1) and 0 < lease.remaining_ms <= 3000
        renewed = time.monotonic()
        assert a.renew()
        time.sleep(0.6)
        early = b.try_lead()  # renewed 0.6 s ago: still a's
        late = time.monotonic() - renewed
        assert early is None, f"b took a's 3 s lease {late:.1f} s after it was renewed"
        took = wait_for(b.try_lead, 10, "b to take the lease once it ran out")
        assert took == 2 and b.holds()
        assert not a.renew() and not a.holds()  # a learns it lost, at its next renewal
        assert a.try_lead() is None  # and cannot take it back while b renews
        b.resign()  # a clean stop gives it up at once
        assert a.try_lead() == 3
    finally:
        a.close()
        b.close()


def test_a_fenced_batch_commits_nothing(pg_dsn):  # noqa: F811
    a, b = Elector(pg_dsn, "a", 1000), Elector(pg_dsn, "b", 1000)
    try:
        fence = a.fence_for(a.try_lead())
        with Ledger(pg_dsn, CONFIG, fence=fence) as led:
            assert led.apply(contrib(1, 1)).status is Status.APPLIED
            before = ledger_state(pg_dsn)
            wait_for(take(b), 10, "b to take over")  # a is "paused": it renews nothing
            # the takeover ended a's session (tagged with epoch 1): its next batch fails...
            with pytest.raises(LedgerError, match="newer term of the jackpot controller"):
                led.apply_batch([contrib(2, 2), contrib(3, 3)])
            # ...and on a new session the fence, its first statement, refuses it
            with pytest.raises(LedgerFenced, match="led at epoch 1, the database has epoch 2"):
                led.apply_batch([contrib(2, 2), contrib(3, 3)])
            assert fence.lost.is_set()
            with pytest.raises(LedgerFenced, match="lost its lease"):  # no round trip now
                led.apply(contrib(2, 2))
        assert ledger_state(pg_dsn) == before  # nothing of the refused batch
        applied, _, ack = before
        assert [(t, s) for t, s, *_ in applied] == [(T1, 1)] and ack == 1
        # the new leader goes on from there: seq 2 is next, never a gap or a double
        with Ledger(pg_dsn, CONFIG, fence=b.fence_for(b.epoch)) as led:
            assert led.apply(contrib(2, 2)).status is Status.APPLIED
            assert led.apply(contrib(1, 1)).status is Status.DUPLICATE
    finally:
        a.close()
        b.close()


def test_a_takeover_waits_for_the_old_leaders_transaction_in_flight(pg_dsn):  # noqa: F811
    """The old leader's transaction that passed the fence commits (it was the leader); the
    takeover waits for it; every later transaction of the old leader is refused."""
    # b's lock timeout is a third of its lease: 10 s, so its wait on the lock outlasts a
    # busy machine's pause before the check that it still waits (with 1 s, a pause of 0.6 s
    # ended the wait with an error)
    a, b = Elector(pg_dsn, "a", 3000), Elector(pg_dsn, "b", 30000)
    db = psycopg.connect(pg_dsn)
    try:
        fence = a.fence_for(a.try_lead())
        db.execute("CREATE TABLE scratch (n int)")
        db.commit()
        cur = db.cursor()
        fence(cur)  # the old leader's transaction is in flight, past its fence
        cur.execute("INSERT INTO scratch VALUES (1)")
        a.resign()  # its lease runs out (as if paused)
        took: list = []
        taker = threading.Thread(target=lambda: took.append(b.try_lead()))
        started = time.monotonic()
        taker.start()
        time.sleep(0.4)
        assert taker.is_alive() and not took  # waiting on the epoch row's share lock
        db.commit()  # the old leader's write, begun under its epoch, commits
        taker.join(5)
        assert took == [2] and time.monotonic() - started >= 0.4
        cur = db.cursor()
        with pytest.raises(LedgerFenced):
            fence(cur)
        db.rollback()
        assert db.execute("SELECT count(*) FROM scratch").fetchone() == (1,)
    finally:
        db.close()
        a.close()
        b.close()


def test_a_leader_paused_inside_a_transaction_is_cut_off(pg_dsn):  # noqa: F811
    """SIGSTOP inside a transaction holds the epoch row's share lock. The takeover ends every
    session tagged with an older epoch (pg_terminate_backend) and goes through at once; the
    paused transaction can never commit. (The term's idle timeout, half the lease, would end
    it even before the lease runs out; here it is off, as behind a pooler that drops a
    connection's options, so only the takeover can end it.)"""
    a, b = Elector(pg_dsn, "a", 1000), Elector(pg_dsn, "b", 1000)
    fence = a.fence_for(a.try_lead())
    unbounded = dataclasses.replace(
        fence.session, settings=(("idle_in_transaction_session_timeout", "0"),)
    )
    db = psycopg.connect(pg_dsn, **session_kwargs(unbounded))
    try:
        db.execute("CREATE TABLE scratch (n int)")
        db.commit()
        cur = db.cursor()
        fence(cur)
        cur.execute("INSERT INTO scratch VALUES (1)")  # then it "pauses"
        # without the takeover ending the paused session, b would wait for ever: the wait's
        # bound is what the test proves (not a time, which a busy machine stretches)
        assert wait_for(take(b), 15, "b to take over from the paused leader") == 2
        with pytest.raises(psycopg.Error, match="administrator command"):
            db.commit()  # it wakes: its session was ended, nothing committed
        with psycopg.connect(pg_dsn) as check:
            assert check.execute("SELECT count(*) FROM scratch").fetchone() == (0,)
    finally:
        db.close()
        a.close()
        b.close()


def test_a_paused_session_nobody_may_end_is_cut_off_by_its_idle_timeout(pg_dsn):  # noqa: F811
    """A session of the old term the takeover cannot end (here: not tagged; in the field, of
    another database role without pg_signal_backend) still has the term's bounds: PostgreSQL
    ends it after half the lease idle in its transaction, and the takeover goes through."""
    a, b = Elector(pg_dsn, "a", 1000), Elector(pg_dsn, "b", 1000)
    fence = a.fence_for(a.try_lead())
    untagged = dataclasses.replace(fence.session, application_name="someone else")
    db = psycopg.connect(pg_dsn, **session_kwargs(untagged))
    try:
        cur = db.cursor()
        fence(cur)  # the share lock on the epoch row, then it "pauses"
        # without the idle timeout, b would wait for ever (lease 1 s + idle timeout 0.5 s +
        # retries on a quiet machine)
        assert wait_for(take(b), 15, "b to take over from the paused leader") == 2
        with pytest.raises(psycopg.Error, match="idle-in-transaction timeout"):
            db.commit()
    finally:
        db.close()
        a.close()
        b.close()


def test_a_takeover_ends_the_sessions_its_role_may_end(pg_server, pg_dsn, caplog):  # noqa: F811
    """PostgreSQL lets a role end its own sessions without superuser, another role's only with
    pg_signal_backend. A session of an older term under another role is named in the log (with
    the grant that would let the takeover end it) and left to its bounds; the takeover goes on.
    With the grant it is ended."""
    other = "jackpot_other"
    pg_server.sql(f"DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='{other}') "
                  f"THEN CREATE ROLE {other} LOGIN; END IF; END$$")  # fmt: skip
    a, b = Elector(pg_dsn, "a", 1000), Elector(pg_dsn, "b", 1000)
    fence = a.fence_for(a.try_lead())
    theirs = psycopg.connect(pg_dsn.replace("jackpot_test@", f"{other}@"), autocommit=True,
                             **session_kwargs(fence.session))  # fmt: skip
    ours = psycopg.connect(pg_dsn, autocommit=True, **session_kwargs(fence.session))
    try:
        assert wait_for(take(b), 5, "b to take over") == 2
        assert "grant this controller's database role pg_signal_backend" in caplog.text
        assert theirs.execute("SELECT 1").fetchone() == (1,)  # not ended
        with pytest.raises(psycopg.OperationalError):
            ours.execute("SELECT 1")  # ended: the same role
        pg_server.sql("GRANT pg_signal_backend TO jackpot_test")
        try:
            b.resign()
            assert wait_for(take(a), 5, "a to take over") == 3
        finally:
            pg_server.sql("REVOKE pg_signal_backend FROM jackpot_test")
        with pytest.raises(psycopg.OperationalError):
            theirs.execute("SELECT 1")  # ended: epoch 1 < 3
    finally:
        theirs.close()
        ours.close()
        a.close()
        b.close()


def session_kwargs(session) -> dict:
    """psycopg.connect's keywords for a term's session (as jackpot/store/postgres.py opens)."""
    return {"application_name": session.application_name, "options": session.options()}


def take(elector: Elector):
    """``elector.try_lead`` for wait_for: None while the lease is locked (an ElectionError)."""

    def attempt():
        try:
            return elector.try_lead()
        except ElectionError:
            return None

    return attempt


def test_ha_refuses_an_sqlite_ledger_and_a_config_without_ha(tmp_path):
    config = load_config(ROOT / "config" / "jackpot.example.toml")
    with pytest.raises(ValueError, match="no \\[ha\\] section"):
        HaService(config, "postgresql://x@127.0.0.1/x", "127.0.0.1", 1, "u", "p")
    with_ha = dataclasses.replace(config, ha=HaConfig("a", 3000))
    with pytest.raises(ValueError, match="needs the ledger in PostgreSQL"):
        HaService(with_ha, str(tmp_path / "ledger.db"), "127.0.0.1", 1, "u", "p")


def test_a_controller_that_cannot_start_backs_off_and_leaves_the_lease_to_another(pg_dsn):  # noqa: F811
    """A controller whose service cannot start (a bad key, a full disk...) gives the lease up
    and waits longer after each failed term (1 s, 2 s, 4 s...), so it does not take a new
    epoch every tick, and a healthy controller gets the lease in the gap."""
    config = dataclasses.replace(jackpot_config(), ha=HaConfig("a", LEASE_MS))
    starts: list[int] = []

    def broken(fence):
        starts.append(fence.epoch)
        raise OSError("No space left on device")

    began = time.monotonic()
    svc = HaService(config, pg_dsn, "127.0.0.1", 1, CONTROLLER, "x", service_factory=broken)
    try:
        wait_for(lambda: len(starts) >= 2, 10, "two failed starts")
        time.sleep(1.0)
        health = svc.health()
        ran_s = time.monotonic() - began
        assert health["role"] == "standby" and health["failed_terms"] == len(starts)
        # starts at 0 s, 1 s, 3 s, 7 s... (RETRY_FIRST_S doubled): at most 1 + log2(t + 1) by
        # t, counted from the time it ran (a busy machine may run the test late), not one
        # every 0.25 s (poll) as before
        assert len(starts) <= 1 + math.floor(math.log2(ran_s / RETRY_FIRST_S + 1)), ran_s
        assert health["retry_in_s"] > 0
        # a lease of its own long enough that its renewal after a second is certain
        healthy = Elector(pg_dsn, "b", 10 * LEASE_MS)
        try:
            epoch = wait_for(take(healthy), 10, "b to lead while a waits")
            assert epoch == max(starts) + 1  # no epoch churned between
            time.sleep(1.0)
            assert healthy.renew() and healthy.lease().holder == "b"
        finally:
            healthy.close()
    finally:
        svc.close()


class StalledElector(Elector):
    """An elector whose renewal hangs while ``stall`` is set, until ``release``: the
    supervisor thread is stuck (a long GC pause, a hung DNS lookup) while the service thread
    runs on. Everything else is the real election on the real database."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.stall, self.release = threading.Event(), threading.Event()

    def renew(self) -> bool:
        if self.stall.is_set():
            self.release.wait(30)
        return super().renew()


@needs_mosquitto
def test_the_fence_refuses_what_a_stale_leaders_service_receives(broker, pg_dsn):  # noqa: F811
    """The supervisor cannot step down in time (its thread is stuck) while the service goes on
    receiving: once another controller took over, every batch the service tries is refused
    by the fence inside the ledger transaction: nothing committed, no ack, no PUBACK."""
    config = dataclasses.replace(jackpot_config(), ha=HaConfig("a", LEASE_MS))
    stalled = StalledElector(pg_dsn, "a", LEASE_MS)
    other = Elector(pg_dsn, "b", LEASE_MS)
    table = broker.client(T1)
    topic = topic_for(T1, "contribution")

    def send(seq: int) -> None:
        body = json.dumps(table_signer(T1).sign(topic, contrib(seq, seq)))
        assert table.publish(topic, body).value == 0

    svc = HaService(config, pg_dsn, broker.host, broker.port, CONTROLLER,
                    broker.passwords[CONTROLLER], signer=controller_signer(), elector=stalled,
                    backoff=(0.05, 0.5))  # fmt: skip
    try:
        assert svc.wait_active(10) and svc.health()["role"] == "active"
        metrics = JackpotMetrics(svc.health, process=False)
        assert "jackpot_controller_active 1.0" in metrics.text()
        send(1)
        wait_for(lambda: svc.health()["tables"][T1]["last_seq"] == 1, 10, "seq 1 applied")
        # the term a holds when its supervisor sticks: on a busy machine a renewal may have
        # come too late before (a steps down and is elected again, an epoch later: CI of
        # 2026-11-29), so not always 1
        wait_for(lambda: svc.health()["role"] == "active", 10, "a active")
        stalled.stall.set()  # the supervisor's next renewal hangs
        held = stalled.epoch
        assert held is not None
        assert wait_for(other.try_lead, 10, "b to take over") == held + 1
        send(2)
        send(3)
        wait_for(lambda: svc.health()["counts"].get("ledger_error"), 10, "a refused batch")
        assert svc.health()["role"] == "active"  # the supervisor has not noticed yet
        applied, _, ack = ledger_state(pg_dsn)
        assert [(t, s) for t, s, *_ in applied] == [(T1, 1)] and ack == 1
        stalled.release.set()
        wait_for(lambda: svc.health()["role"] == "standby", 10, "a to step down")
        # a standby: no broker connection, and no alert for it (ops/prometheus/alerts.yml)
        text = metrics.text()
        assert "jackpot_controller_active 0.0" in text
        assert "jackpot_controller_connected 0.0" in text
        assert svc.health()["leader"] == "b" or svc.health()["epoch"] is None
    finally:
        stalled.release.set()
        svc.close()
        table.close()
        other.close()
    applied, _, ack = ledger_state(pg_dsn)
    assert [(t, s) for t, s, *_ in applied] == [(T1, 1)] and ack == 1


# -- two jackpot-controller processes on one ledger while tables stream ----------------------


def ha_run(tmp_path: Path, dsn: str, seed: int, **kwargs) -> HaFaultRun:
    (tmp_path / "run").mkdir(exist_ok=True)
    return HaFaultRun(tmp_path / "run", seed, dsn, lease_ms=LEASE_MS, tables=2,
                      rounds=kwargs.pop("rounds", 24), pace_ms=10, **kwargs)  # fmt: skip


def streaming(run: HaFaultRun, at_least: int = 10) -> None:
    """Wait until the tables have sent some messages and the ledger applied some."""

    def going():
        states = run.states().values()
        return all(written >= at_least for _, _, written, _ in states)

    wait_for(going, 30, "the tables to stream")


def settle_and_check(run: HaFaultRun) -> None:
    try:
        assert run.quiesce(90), run.problems
    finally:
        run.close()
    fig = run.check()
    assert fig.problems == []
    assert fig.sent > 0 and fig.applied == fig.sent
    assert (fig.lost, fig.duplicated) == (0, 0)
    return fig


def applied_now(run: HaFaultRun) -> int:
    """Rows in the ledger now (to show that a test's fault came mid-stream)."""
    return run._sql("SELECT count(*) FROM applied")[0][0]


def controller_log(run: HaFaultRun, name: str) -> str:
    return (run.workdir / f"controller-{name}.log").read_text(encoding="utf-8", errors="replace")


@needs_mosquitto
def test_kill_9_of_the_active_controller_mid_stream(tmp_path, pg_dsn):  # noqa: F811
    run = ha_run(tmp_path, pg_dsn, seed=11)
    try:
        run.start()
        streaming(run)
        first = run.active()
        at_fault = applied_now(run)
        run.fault("kill")  # kill -9, waits for the takeover, restarts it as a standby
        assert run.active() != first
        streaming(run, at_least=30)
    except BaseException:
        run.close()
        raise
    fig = settle_and_check(run)
    assert fig.applied > at_fault  # the new leader applied the rest of the stream
    assert fig.failovers >= 1
    # the failover's goal (5 s) is measured by bench/jackpot_faults.py --ha; here a
    # bound that only a failover waiting for something that never comes exceeds
    assert all(ms < 15000 for ms in fig.failover_ms), fig.failover_ms
    other = "b" if first == "a" else "a"
    assert "elected: " + other in controller_log(run, other)


@needs_mosquitto
def test_sigstop_the_active_controller_then_sigcont_it_wakes_and_steps_down(tmp_path, pg_dsn):  # noqa: F811
    """The paused leader wakes after another took over: it steps down from its epoch and
    commits nothing (whatever its service received meanwhile meets the fence: the test
    above shows a stale service's batch refused), and the stream goes on once each."""
    run = ha_run(tmp_path, pg_dsn, seed=12)
    try:
        run.start()
        streaming(run)
        first = run.active()
        epoch = run.lease()[0]
        at_fault = applied_now(run)
        run.fault("pause")  # SIGSTOP until the other took over, then SIGCONT
        assert run.active() != first and run.lease()[0] > epoch
        text = wait_for(
            lambda: "stepping down" in (t := controller_log(run, first)) and t,
            10, "the woken controller to step down",
        )  # fmt: skip
        # it stepped down from the epoch it held, and nothing it did after waking committed
        assert f"stepping down from epoch {epoch}" in text
        assert run.active() != first  # it did not take the lease back
    except BaseException:
        run.close()
        raise
    fig = settle_and_check(run)
    assert fig.applied > at_fault
    assert fig.failovers >= 1 and all(ms < 15000 for ms in fig.failover_ms), fig.failover_ms


@needs_mosquitto
def test_the_database_connection_lost_and_the_server_killed(tmp_path, pg_server, pg_dsn):  # noqa: F811
    run = ha_run(tmp_path, pg_dsn, seed=13, rounds=30)
    try:
        run.start()
        streaming(run)
        at_fault = applied_now(run)
        run.fault("db")  # pg_terminate_backend of every controller session
        streaming(run, at_least=25)
        pg_server.kill()  # kill -9 of the postmaster: every connection gone, no new ones
        time.sleep(LEASE_MS / 1000)
        pg_server.restart()
        streaming(run, at_least=40)
    except BaseException:
        run.close()
        raise
    fig = settle_and_check(run)
    assert fig.applied > at_fault


# -- PostgreSQL's own failover: a streaming standby, promoted ---------------------------------


def _standby_of(primary: PgServer) -> PgServer:
    """A streaming standby of ``primary`` (pg_basebackup -R) on a port of its own, started."""
    standby = PgServer()  # a folder, a port and a socket dir of its own; its cluster replaced
    shutil.rmtree(standby.data)
    standby._run("pg_basebackup", "-h", primary.host, "-p", primary.port, "-U", SUPERUSER,
                 "-D", standby.data, "-R", "-X", "stream", "-d",
                 "application_name=jackpot_standby")  # fmt: skip
    assert (standby.data / "standby.signal").exists()
    with open(standby.data / "postgresql.conf", "a", encoding="utf-8") as conf:
        conf.write(f"\nport = {standby.port}\nunix_socket_directories = '{standby.socket_dir}'\n")
    standby._run("pg_ctl", "-D", standby.data, "-l", standby.log_path, "-w", "-t", "30", "start")
    return standby


def _sql(dsn_or_server, sql: str, dbname: str = "postgres"):
    dsn = dsn_or_server if isinstance(dsn_or_server, str) else dsn_or_server.dsn(dbname, SUPERUSER)
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as db:
        cur = db.execute(sql)
        return cur.fetchall() if cur.description else None


@needs_mosquitto
@pytest.mark.skipif(find_bindir() is None, reason="PostgreSQL's server binaries not installed")
def test_a_synchronous_streaming_standby_promoted_and_the_controllers_go_on(tmp_path):
    primary = PgServer()
    with open(primary.data / "pg_hba.conf", "a", encoding="utf-8") as hba:
        hba.write(f"host replication all {primary.host}/32 trust\n")
    primary.start()
    standby = None
    run = None
    try:
        standby = _standby_of(primary)
        # synchronous: a commit (and so a PUBACK) waits for the standby's flush
        _sql(primary, "ALTER SYSTEM SET synchronous_standby_names = 'jackpot_standby'")
        _sql(primary, "SELECT pg_reload_conf()")
        wait_for(
            lambda: _sql(primary, "SELECT sync_state FROM pg_stat_replication") == [("sync",)],
            10, "the standby to stream synchronously",
        )  # fmt: skip
        dsn = primary.create_database()
        name = dsn.rsplit("/", 1)[1]
        both = (
            f"postgresql://jackpot_test@{primary.host}:{primary.port},"
            f"{standby.host}:{standby.port}/{name}?target_session_attrs=read-write"
        )
        run = ha_run(tmp_path, both, seed=14, rounds=30)
        run.start()
        streaming(run)
        # a write on the primary is on the standby (read-only there)
        on_standby = standby.dsn(name, SUPERUSER)
        wait_for(lambda: _sql(on_standby, "SELECT count(*) FROM applied")[0][0] > 0, 10,
                 "the standby to have the ledger's rows")  # fmt: skip
        assert _sql(on_standby, "SELECT pg_is_in_recovery()") == [(True,)]
        at_fault = _sql(on_standby, "SELECT count(*) FROM applied")[0][0]
        primary.kill()  # the primary's host dies
        standby._run("pg_ctl", "-D", standby.data, "-w", "-t", "30", "promote")
        assert _sql(on_standby, "SELECT pg_is_in_recovery()") == [(False,)]
        streaming(run, at_least=40)  # the controllers reconnect to the promoted one
        assert run.quiesce(90), run.problems
        run.close()
        # checked on the promoted server alone: nothing committed on the primary is missing
        # (the URL lists the dead primary first; libpq goes on to the promoted one)
        fig = run.check()
        assert fig.problems == [] and (fig.lost, fig.duplicated) == (0, 0)
        assert fig.sent > 0 and fig.applied == fig.sent
        assert fig.applied > at_fault  # applied on the promoted server
    finally:
        if run is not None:
            run.close()
        for server in (standby, primary):
            if server is not None:
                server.close()
