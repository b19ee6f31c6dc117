"""``jackpot-controller``: the central jackpot controller's command line.

``jackpot-controller --config FILE ...`` runs the controller (:class:`~jackpot.service.
JackpotService`, or :class:`~jackpot.ha.HaService` with ``[ha]``) under systemd: it checks the
config, the broker password file, the signing key and the ledger's terms before it connects to
any broker (each refusal one line on stderr, exit 2), then serves ``/metrics``, tells systemd
it is ready, pings its watchdog while the service thread lives and keeps the status line
current, and on SIGTERM publishes offline and stops. Its other commands: ``check-config``
(:mod:`jackpot.config_check`), ``link-key``, ``alarms``, ``ack-alarm``, ``backup`` (here), and
the accounting and audit commands of :mod:`jackpot.commands` (``parameters``, ``pool``,
``trigger-key``, ``report``, ``reconcile``, ``audit-signatures``, ``verify-ledger``).

The service and the high-availability supervisor do not import this module; it imports them
(``jackpot.service`` <- ``jackpot.ha`` <- ``jackpot.cli``: no circle).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

from controller import build, logs, sdnotify
from controller.errors import TableControllerError
from controller.link.brokers import BrokerList, parse_address
from controller.link.signing import Signer, SigningKeyError, load_signing_key, make_link_key
from jackpot import config_check
from jackpot.alarms import AlarmLog, AlarmLogError
from jackpot.commands import run as run_command
from jackpot.draws import key_path as trigger_key_path
from jackpot.ha import HaService
from jackpot.ledger import Ledger
from jackpot.metrics import JackpotMetrics
from jackpot.service import CLIENT_ID, DEFAULT_SIGNING_KEY, JackpotService
from jackpot.store import is_dsn, ledger_location

log = logging.getLogger("jackpot.cli")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jackpot-controller",
        description="The central jackpot controller: table streams in, ledger, meters out.",
    )
    p.add_argument("--version", action=build.VersionAction)
    p.add_argument("--config", required=True, help="pools and tables (jackpot.example.toml)")
    p.add_argument(
        "--ledger",
        help="the ledger: an SQLite file (created if absent) or a postgresql:// URL "
        "(default: the config's [ledger] dsn)",
    )
    p.add_argument(
        "--host",
        help="the broker, or several as host:port,host:port, the first preferred (default: "
        "[mqtt] brokers in the config, else 127.0.0.1; docs/jackpot/brokers.md)",
    )
    p.add_argument("--port", type=int, default=1883, help="the broker's port (default 1883)")
    p.add_argument("--username", default=CLIENT_ID, help=f"broker user (default {CLIENT_ID})")
    p.add_argument("--password-file", required=True, help="a file holding the broker password")
    p.add_argument(
        "--signing-key",
        help=f"the controller's Ed25519 key file (default: the config's [link] signing_key, "
        f"else {DEFAULT_SIGNING_KEY}); make it with: jackpot-controller link-key",
    )
    p.add_argument("--key-id", help="its key id (default: [link] key_id, else jackpot-1)")
    p.add_argument("--meter-rate", type=float, default=4.0, help="meter messages/s per pool")
    p.add_argument("--verify-every-s", type=int, default=3600, metavar="S",
                   help="seconds between the software self-checks while running, 60 to 86400 "
                   "(one runs at start; docs/release.md)")  # fmt: skip
    p.add_argument(
        "--trigger-key",
        help="the Mystery trigger key file (default: [ledger] trigger_key, else "
        "mystery-trigger.key beside the signing key; made at the first start if absent)",
    )
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default INFO)")
    return p


def link_key_main(argv: list[str]) -> int:
    """``jackpot-controller link-key --out PATH --key-id ID [--owner USER]``."""
    p = argparse.ArgumentParser(
        prog="jackpot-controller link-key",
        description="Make the controller's Ed25519 link signing key (0600) and print its "
        "public key for the tables' and signs' configs.",
    )
    p.add_argument("--out", default=DEFAULT_SIGNING_KEY, help=f"default {DEFAULT_SIGNING_KEY}")
    p.add_argument("--key-id", default="jackpot-1", help="default jackpot-1")
    p.add_argument("--owner", help="give the file to this user (as root): jackpot-controller")
    args = p.parse_args(argv)
    try:
        public = make_link_key(args.out, args.key_id, args.owner)
    except SigningKeyError as exc:
        p.exit(2, f"jackpot-controller link-key: {exc}\n")
    print(f"wrote the signing key {args.out} (mode 0600); keep it on this machine only")
    print(f"key id: {args.key_id}")
    print(f"public key: {public}")
    print("In each table's config, [mqtt]:")
    print(f'controller_keys = {{ "{args.key_id}" = "{public}" }}')
    print(f"For each sign: jackpot-sign --controller-key {args.key_id}={public}")
    return 0


def alarms_main(argv: list[str], acknowledge: bool) -> int:
    """``jackpot-controller alarms --ledger PATH [--all] [--json]`` and
    ``jackpot-controller ack-alarm --ledger PATH ID|all --by NAME``."""
    name = "ack-alarm" if acknowledge else "alarms"
    p = argparse.ArgumentParser(
        prog=f"jackpot-controller {name}",
        description="Acknowledge an alarm of the alarm log (ID, or all), with your name."
        if acknowledge
        else "The alarms of the jackpot controller's alarm log (in its ledger file), newest "
        "first: what was refused, from which table, how often.",
    )
    p.add_argument("--ledger", required=True, help="the ledger file the controller runs on")
    if acknowledge:
        p.add_argument("alarm", help="the alarm's id (from jackpot-controller alarms), or all")
        p.add_argument("--by", required=True, help="your name or badge, kept with the alarm")
    else:
        p.add_argument("--all", action="store_true", help="acknowledged ones too (history)")
        p.add_argument("--json", action="store_true", help="one JSON object per line")
    args = p.parse_args(argv)
    if not is_dsn(args.ledger) and not Path(args.ledger).is_file():
        p.exit(2, f"jackpot-controller {name}: no ledger file {args.ledger}\n")
    try:
        with AlarmLog(args.ledger) as alarm_log:
            if acknowledge:
                which = 0 if args.alarm == "all" else int(args.alarm)
                done = alarm_log.acknowledge(which, args.by)
                print(f"acknowledged {done} alarm(s) for {args.by.strip()}")
                return 0
            rows = alarm_log.rows(include_acked=args.all)
    except ValueError:
        p.exit(2, f"jackpot-controller {name}: {args.alarm!r} is not an alarm id or 'all'\n")
    except (AlarmLogError, sqlite3.Error) as exc:
        p.exit(2, f"jackpot-controller {name}: {exc}\n")
    for row in rows:
        if args.json:
            print(json.dumps(row.to_dict()))
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.last_t / 1000))
        state = f"acknowledged by {row.acked_by}" if row.acked_by else "OPEN"
        print(
            f"#{row.id} {when} {row.kind} from {row.table or '?'} (seq {row.seq}), "
            f"{row.count}x: {row.detail} [{state}]"
        )
        if row.count > 1 and row.first_detail != row.detail:
            print(f"    first (seq {row.first_seq}): {row.first_detail}")
    if not rows and not args.json:
        print("no open alarms" if not args.all else "no alarms")
    return 0


def backup_main(argv: list[str]) -> int:
    """``jackpot-controller backup --ledger PATH --to DIR [--keep N]``."""
    from jackpot.backup import BackupError, backup_ledger

    p = argparse.ArgumentParser(
        prog="jackpot-controller backup",
        description="A checked copy of the ledger (also while the controller runs) as "
        "DIR/ledger-<UTC time>.sqlite, keeping the newest N copies (docs/jackpot/controller.md).",
    )
    p.add_argument("--ledger", required=True, help="the ledger file the controller runs on")
    p.add_argument("--to", required=True, help="the backup folder")
    p.add_argument("--keep", type=int, default=14, help="copies kept, newest (default 14)")
    args = p.parse_args(argv)
    try:
        done = backup_ledger(args.ledger, args.to, keep=args.keep)
    except BackupError as exc:
        p.exit(2, f"jackpot-controller backup: {exc}\n")
    print(done.report())
    return 0


def _selfcheck(parser: argparse.ArgumentParser, args: argparse.Namespace, ledger, open_ledger):
    """The software self-check at start (jackpot/selfcheck.py): a failure exits 2 with one
    line, before any broker (N.J.A.C. 13:69E-1.28H; 9 NYCRR 5321.18(b)(3)(iv))."""
    from controller.selfcheck import EVERY_RANGE, SelfCheck
    from jackpot.selfcheck import SoftwareAlarm, refusal

    low, high = EVERY_RANGE
    if not low <= args.verify_every_s <= high:
        parser.exit(2, f"jackpot-controller: --verify-every-s {args.verify_every_s}: give "
                    f"{low} to {high} seconds\n")  # fmt: skip
    check = SelfCheck("jackpot", args.verify_every_s)
    try:
        why = refusal(check, ledger, open_ledger)
    except TableControllerError as exc:
        parser.exit(2, f"jackpot-controller: the software self-check's result: {exc}\n")
    if why:
        parser.exit(2, f"jackpot-controller: {why}\n")
    return SoftwareAlarm(check.start())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if (status := run_command(argv)) is not None:  # reports, audited changes, checks
        return status
    if argv[:1] == ["backup"]:
        return backup_main(argv[1:])
    if argv[:1] == ["verify"]:  # the installed files against the signed manifest
        from controller import verify

        return verify.main(argv[1:], "jackpot")
    if argv[:1] == ["link-key"]:
        return link_key_main(argv[1:])
    if argv[:1] == ["check-config"]:
        return config_check.main(argv[1:])
    if argv[:1] in (["alarms"], ["ack-alarm"]):
        return alarms_main(argv[1:], acknowledge=argv[0] == "ack-alarm")
    parser = _parser()
    args = parser.parse_args(argv)
    # journald: each line's priority (journalctl -p warning shows the alarms); a terminal: time
    logs.setup(getattr(logging, str(args.log_level).upper(), logging.INFO))
    # what check-config checks, every error of it (jackpot/config_check.py)
    config, errors = config_check.config_errors(args.config)
    if errors:
        parser.exit(2, "".join(f"jackpot-controller: bad config: {e}\n" for e in errors))
    try:
        password = config_check.read_password(args.password_file)
    except config_check.PasswordFileError as exc:
        parser.exit(2, f"jackpot-controller: {exc}\n")
    key_path = args.signing_key or config.link_signing_key or DEFAULT_SIGNING_KEY
    key_id = args.key_id or config.link_key_id or "jackpot-1"
    try:
        signer = Signer(key_id, load_signing_key(key_path))
    except SigningKeyError as exc:
        parser.exit(
            2,
            f"jackpot-controller: {exc}\n  make it with: jackpot-controller link-key --out "
            f"{key_path} --key-id {key_id}\n",
        )
    missing = sorted(t for t in config.tables if not config.table_keys.get(t))
    if missing:
        log.warning(
            "no public key in the config for %d table(s) (%s): every message from them is "
            "refused as unsigned",
            len(missing),
            ", ".join(missing[:10]),
        )
    if args.ledger is None and config.ledger_dsn is None:
        parser.exit(2, "jackpot-controller: say where the ledger is: --ledger FILE|URL, or "
                    f"[ledger] dsn in {args.config}\n")  # fmt: skip
    ledger = ledger_location(args.ledger or config.ledger_dsn)
    if not is_dsn(ledger) and not ledger.parent.is_dir():
        parser.exit(2, f"jackpot-controller: --ledger: no directory {ledger.parent}\n")
    trigger_key = args.trigger_key or trigger_key_path(config, key_path)
    # the terms before any broker: a config that differs from the ledger's starts nothing
    try:
        Ledger(ledger, config, trigger_key=trigger_key).close()
    except TableControllerError as exc:
        parser.exit(2, f"jackpot-controller: {exc}\n")
    selfcheck = _selfcheck(parser, args, ledger,
                           lambda: Ledger(ledger, config, trigger_key=trigger_key))  # fmt: skip
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        if args.host:  # several brokers, the first preferred: controller/link/brokers.py
            brokers = BrokerList([parse_address(a, args.port) for a in args.host.split(",")])
        else:
            brokers = BrokerList(config.mqtt_brokers or [("127.0.0.1", args.port)])
        make_service = JackpotService
        if config.ha is not None:  # one of several controllers: docs/jackpot/failover.md
            make_service = HaService
        service = make_service(
            config,
            ledger,
            *brokers.address,
            args.username,
            password,
            signer=signer,
            meter_rate=args.meter_rate,
            brokers=brokers,
            tls_ca=config.mqtt_tls_ca,
            trigger_key=trigger_key,
            selfcheck=selfcheck,
            freeze_heap=True,  # this process is the controller: its start-up heap frozen
        )
    except (TableControllerError, ValueError) as exc:
        parser.exit(2, f"jackpot-controller: {exc}\n")
    metrics = JackpotMetrics(service.health)
    try:
        host, port = metrics.serve(config.metrics_address, config.metrics_port)
        log.info("metrics at http://%s:%d/metrics", host, port)
    except OSError as exc:  # the money goes on without metrics; Prometheus sees it down
        log.error(
            "cannot serve /metrics on %s:%d (%s): running without metrics; set [metrics] "
            "address and port in %s", config.metrics_address, config.metrics_port, exc,
            args.config,
        )  # fmt: skip
    # Type=notify (systemd/jackpot-controller.service): ready once the ledger is open and the
    # thread runs (it connects and reconnects by itself); WATCHDOG=1 only while that thread
    # lives, so a dead thread ends in a restart instead of an idle process.
    notifier = sdnotify.Notifier()
    ping_s = (sdnotify.watchdog_interval_ms() or 0) / 2000  # twice per WatchdogSec
    broker = str(brokers)
    notifier.notify("READY=1", f"STATUS=started (boot {service.boot}), broker {broker}")
    last_ping, shown = 0.0, ""
    try:
        while not stop.wait(0.5):
            alive = service._thread.is_alive()
            role = service.health().get("role")  # [ha]: "active" or "standby"
            if not alive:
                state = "the service thread died: watchdog pings stopped"
            elif role == "standby":
                health = service.health()
                leader = health.get("leader") or "nobody yet"
                state = f"standby: {leader} leads; taking over if its lease runs out"
                if health.get("retry_in_s"):
                    state += f" (after a failed start, next try in {health['retry_in_s']:.0f} s)"
            elif service.health()["connected"]:
                state = f"connected to {broker}"
                health = service.health()
                if health["open_alarms"]:
                    counts = sorted(health["alarm_counts"].items())
                    kinds = ", ".join(f"{k} x{n}" for k, n in counts)
                    state += (
                        f"; {health['open_alarms']} OPEN ALARMS ({kinds or 'from before'}): "
                        f"jackpot-controller alarms --ledger {ledger}"
                    )
            else:
                state = f"waiting for the broker at {broker}"
            if state != shown:
                shown = state
                notifier.notify(f"STATUS={state}")
            if ping_s and alive and time.monotonic() - last_ping >= ping_s:
                last_ping = time.monotonic()
                notifier.notify("WATCHDOG=1")
    finally:
        notifier.notify("STOPPING=1", "STATUS=stopping: publishing offline")
        metrics.close()
        service.close()
        notifier.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
