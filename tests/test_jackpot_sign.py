"""``jackpot-sign``: the pure screen, and end to end against a real Mosquitto as a sign user."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from link_keys import CONTROLLER_KID, controller_signer, controller_verifier, table_signer
from mqtt_broker import CONTROLLER, ROOT, SIGN, broker  # noqa: F401

from controller.link.messages import JACKPOT_STATUS_TOPIC, meter_topic, validate
from jackpot.sign import Board, SignClient, render, run

NOW = 1_700_000_000_000
B7 = {"v": 1, "pool": "blazing_7s", "amount": 1_234_567, "fraction": "1/3", "seq": 42, "sent_t": 1}
MYSTERY = {
    "v": 1,
    "pool": "mystery",
    "amount": 61_234,
    "fraction": "0/1",
    "seq": 9,
    "must_hit_by": 100_000,
    "sent_t": 1,
}
ONLINE = {"v": 1, "state": "online", "boot": 3, "sent_t": 1}
OFFLINE = {"v": 1, "state": "offline", "boot": 3, "sent_t": 2}


def test_messages_used_here_follow_the_contract():
    for kind, message in (("meter", B7), ("meter", MYSTERY)):
        validate(kind, message)
    validate("jackpot_status", ONLINE)
    validate("jackpot_status", OFFLINE)


def test_live_screen_shows_each_meter_in_dollars_and_cents_with_its_sequence():
    screen = render({"blazing_7s": B7, "mystery": MYSTERY}, ONLINE, NOW)
    assert "OFFLINE" not in screen
    b7 = next(line for line in screen.splitlines() if line.startswith("Blazing 7's"))
    assert "$12,345.67" in b7 and "seq 42" in b7
    mystery = next(line for line in screen.splitlines() if line.startswith("Must-Hit-By"))
    assert "$612.34" in mystery and "seq 9" in mystery
    assert "must hit by $1,000.00" in screen
    assert "2023-11-14 22:13:20 UTC" in screen
    assert screen.splitlines()[-1] == "live"


def test_offline_status_no_status_and_lost_connection_never_show_a_meter_as_live():
    for status, connected, why in (
        (OFFLINE, True, "the jackpot controller is offline"),
        (None, True, "no status from the jackpot controller yet"),
        (ONLINE, False, "connection to the broker lost"),
    ):
        screen = render({"blazing_7s": B7}, status, NOW, connected=connected)
        assert "OFFLINE" in screen
        assert screen.splitlines()[-1] == f"OFFLINE: {why}"
        assert "$" not in screen and "seq" not in screen  # no amount at all


def signed(topic: str, message: dict) -> bytes:
    """``message`` as the jackpot controller sends it: signed with its key."""
    return json.dumps(controller_signer().sign(topic, message)).encode()


def test_board_validates_keeps_the_latest_sequence_and_a_new_boot_replaces_meters():
    board = Board(controller_verifier(), connected=True)
    assert board.receive(JACKPOT_STATUS_TOPIC, signed(JACKPOT_STATUS_TOPIC, ONLINE)) is None
    assert board.receive(meter_topic("blazing_7s"), signed(meter_topic("blazing_7s"), B7)) is None
    older = {**B7, "amount": 5, "seq": 41}
    got = board.receive(meter_topic("blazing_7s"), signed(meter_topic("blazing_7s"), older))
    assert "not after" in got
    assert board.meters["blazing_7s"]["amount"] == 1_234_567
    # malformed, wrong topic, a float amount, a mystery trigger: refused, nothing changed
    bad = [
        (meter_topic("blazing_7s"), b"not json"),
        (meter_topic("mystery"), json.dumps(B7).encode()),
        (meter_topic("blazing_7s"), json.dumps({**B7, "amount": 1.5, "seq": 50}).encode()),
        (meter_topic("blazing_7s"), json.dumps({**B7, "trigger": 1, "seq": 51}).encode()),
        ("bj/v1/jackpot/hcm-bj-07/ack", b"{}"),
        # a forger with a broker password but not the controller's key: nothing shown
        (meter_topic("blazing_7s"), json.dumps({**B7, "amount": 10**12, "seq": 52}).encode()),
        (
            meter_topic("blazing_7s"),
            json.dumps(
                table_signer("hcm-bj-07").sign(
                    meter_topic("blazing_7s"), {**B7, "amount": 10**12, "seq": 53}
                )
            ).encode(),
        ),
        (
            meter_topic("blazing_7s"),
            json.dumps(
                {
                    **json.loads(signed(meter_topic("blazing_7s"), {**B7, "seq": 54})),
                    "amount": 10**12,
                }
            ).encode(),
        ),
        (meter_topic("mystery"), signed(meter_topic("blazing_7s"), {**B7, "seq": 55})),
    ]
    for topic, payload in bad:
        assert board.receive(topic, payload) is not None
    assert board.refused == len(bad) and list(board.meters) == ["blazing_7s"]
    assert board.meters["blazing_7s"]["seq"] == 42
    reboot = {**ONLINE, "boot": 4}
    board.receive(JACKPOT_STATUS_TOPIC, signed(JACKPOT_STATUS_TOPIC, reboot))
    assert board.meters == {}
    topic = meter_topic("blazing_7s")
    assert board.receive(topic, signed(topic, {**B7, "seq": 1})) is None
    assert "$12,345.67" in board.screen(NOW)


def test_a_replayed_status_of_an_earlier_boot_does_not_clear_the_meters():
    """Old genuine messages replayed with the controller's broker rights: a status of an
    earlier boot is ignored (it would clear the meters), and so is an older meter."""
    board = Board(controller_verifier(), connected=True)
    topic = meter_topic("blazing_7s")
    assert board.receive(JACKPOT_STATUS_TOPIC, signed(JACKPOT_STATUS_TOPIC, ONLINE)) is None
    assert board.receive(topic, signed(topic, B7)) is None
    earlier = {**ONLINE, "boot": ONLINE["boot"] - 1}
    why = board.receive(JACKPOT_STATUS_TOPIC, signed(JACKPOT_STATUS_TOPIC, earlier))
    assert why is not None and "older than boot" in why
    assert board.meters["blazing_7s"]["amount"] == B7["amount"]
    old_meter = {**B7, "amount": 5_200_000, "seq": B7["seq"] - 10}
    assert "not after" in board.receive(topic, signed(topic, old_meter))
    assert "$12,345.67" in board.screen(NOW)


# -- end to end -----------------------------------------------------------------------------


def run_sign(broker, tmp_path: Path) -> subprocess.CompletedProcess:  # noqa: F811
    password = tmp_path / "sign.pw"
    password.write_text(broker.passwords[SIGN] + "\n", encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "jackpot.sign",
            "--host",
            "127.0.0.1",
            "--port",
            str(broker.port),
            "--username",
            SIGN,
            "--password-file",
            str(password),
            "--once",
            "--timeout",
            "10",
            "--controller-key",
            f"{CONTROLLER_KID}={controller_signer().public_key}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )


def publish_retained(broker, messages) -> None:  # noqa: F811
    controller = broker.client(CONTROLLER)
    try:
        for topic, message in messages:
            rc = controller.publish(topic, signed(topic, message), qos=1, retain=True)
            assert not rc.is_failure, (topic, rc)
    finally:
        controller.close()


def test_sign_once_shows_the_retained_meters_then_offline(broker, tmp_path):  # noqa: F811
    publish_retained(
        broker,
        [
            (JACKPOT_STATUS_TOPIC, ONLINE),
            (meter_topic("blazing_7s"), B7),
            (meter_topic("mystery"), MYSTERY),
        ],
    )
    done = run_sign(broker, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "$12,345.67" in done.stdout and "seq 42" in done.stdout
    assert "$612.34" in done.stdout
    assert "OFFLINE" not in done.stdout
    assert done.stdout.rstrip().splitlines()[-1] == "live"

    publish_retained(broker, [(JACKPOT_STATUS_TOPIC, OFFLINE)])
    done = run_sign(broker, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OFFLINE: the jackpot controller is offline" in done.stdout
    assert "$12,345.67" not in done.stdout


def test_sign_with_a_wrong_password_is_refused(broker, tmp_path):  # noqa: F811
    broker.passwords[SIGN] = "wrong"
    done = run_sign(broker, tmp_path)
    assert done.returncode == 1
    assert "refused" in done.stderr
    assert "OFFLINE: connection to the broker lost" in done.stdout


class _Seen(Exception):
    pass


def test_live_sign_goes_offline_when_the_broker_connection_is_lost(broker, tmp_path):  # noqa: F811
    publish_retained(broker, [(JACKPOT_STATUS_TOPIC, ONLINE), (meter_topic("blazing_7s"), B7)])
    screens: list[str] = []
    deadline = time.monotonic() + 20

    def show(screen: str) -> None:
        screens.append(screen)
        if screen.rstrip().endswith("live") and broker.running:
            broker.kill()  # kill -9: no will from the controller, the sign's link is gone
        if "connection to the broker lost" in screen or time.monotonic() > deadline:
            raise _Seen

    client = SignClient("127.0.0.1", broker.port, SIGN, broker.passwords[SIGN])
    with pytest.raises(_Seen):
        run(client, show, controller_verifier(), every_second=True)
    live = [s for s in screens if s.rstrip().endswith("live")]
    assert live and "$12,345.67" in live[0]
    assert "OFFLINE: connection to the broker lost" in screens[-1]
    assert "$12,345.67" not in screens[-1]
