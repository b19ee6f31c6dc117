"""The jackpot controller's heartbeat (issue 28 item 3): its signed retained
``bj/v1/jackpot/status`` ``online`` again every ``[status] heartbeat_ms`` (2 s by default),
which the tables watch. A real Mosquitto and a real SQLite ledger; the heartbeat is read the
way a table reads it (a live subscription at QoS 0, the signature checked)."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest
from link_keys import controller_signer, controller_verifier, jackpot_config, jackpot_config_text
from mqtt_broker import CONTROLLER, TABLES, broker  # noqa: F401

from controller.link.messages import JACKPOT_STATUS_TOPIC, parse_message
from jackpot.pools import JackpotConfigErrors, parse_config
from jackpot.service import JackpotService

TEXT = jackpot_config_text()


def test_the_heartbeat_is_2_s_unless_the_config_says():
    assert parse_config(TEXT, "j.toml").status_heartbeat_ms == 2000
    config = parse_config(TEXT + "\n[status]\nheartbeat_ms = 500\n", "j.toml")
    assert config.status_heartbeat_ms == 500


@pytest.mark.parametrize(
    ("lines", "key", "words"),
    [
        ("heartbeat_ms = 100", "heartbeat_ms", "from 500 to 30000"),
        ('heartbeat_ms = "2s"', "heartbeat_ms", "whole number of ms"),
        ("heartbeat_s = 2", "heartbeat_s", "unknown key"),
    ],
)
def test_a_wrong_heartbeat_is_refused_naming_section_and_key(lines, key, words):
    with pytest.raises(JackpotConfigErrors) as caught:
        parse_config(TEXT + f"\n[status]\n{lines}\n", "j.toml")
    (error,) = caught.value.errors
    assert (error.section, error.key) == ("status", key) and words in str(error), str(error)


def test_the_controller_says_online_again_every_heartbeat_signed(tmp_path, broker):  # noqa: F811
    table = broker.client(TABLES[0])
    assert table.subscribe(JACKPOT_STATUS_TOPIC, qos=0).value == 0
    config = replace(jackpot_config(), status_heartbeat_ms=500)
    svc = JackpotService(
        config,
        tmp_path / "ledger.sqlite",
        broker.host,
        broker.port,
        CONTROLLER,
        broker.passwords[CONTROLLER],
        signer=controller_signer(),
        backoff=(0.05, 0.5),
    )
    try:
        assert svc.wait_online(10)
        assert svc.heartbeat_s == 0.5
        live = []
        deadline = time.monotonic() + 30
        while len(live) < 4 and time.monotonic() < deadline:
            got = table.get(timeout=1)
            if got is not None and not got.retain:
                live.append(got)
        assert len(live) == 4, "four live statuses: the connect's and three heartbeats"
        bodies = []
        for got in live:
            kind, _, body = parse_message(got.topic, got.payload)
            assert kind == "jackpot_status" and body["state"] == "online"
            controller_verifier().verify(got.topic, body, kind)
            bodies.append(body)
        assert len({b["boot"] for b in bodies}) == 1
        sent = [b["sent_t"] for b in bodies]
        assert sent == sorted(sent) and len(set(sent)) == 4
    finally:
        svc.close()
    # its clean stop says offline, live
    got = table.get(timeout=10)
    while got is not None and json.loads(got.payload)["state"] == "online":
        got = table.get(timeout=10)
    assert got is not None and json.loads(got.payload)["state"] == "offline"
