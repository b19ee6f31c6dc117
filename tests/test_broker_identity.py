"""Client ids are bound to broker users (config/mosquitto/README.md, "Client ids are bound to
users"): one user's password cannot take another client's id, so it can neither kick that
client off nor wipe its persistent session and the messages queued in it.

Real Mosquitto on a free loopback port with the production ACL and the listener settings of
``config/mosquitto/mosquitto.conf`` (tests/mqtt_broker.py). Victims connect as the real code
does: client id = username, ``clean_start`` false, a session expiry.
"""

from __future__ import annotations

import pytest
from mqtt_broker import (  # noqa: F401
    CONTROLLER,
    PRODUCTION_CONF,
    SIGN,
    TABLES,
    BrokerClient,
    broker,
    broker_factory,
)

from controller.demo.files import broker_config, listener_settings

T7, T8 = TABLES
DAY = 86_400
BRIDGE_CONF = PRODUCTION_CONF.parent / "bridge-property.example.conf"


def contribution(table: str) -> str:
    return f"bj/v1/table/{table}/contribution"


def persistent(broker, user: str) -> BrokerClient:  # noqa: F811
    """``user`` connected as the code connects: its own name as client id, session kept a day."""
    return broker.client(user, clean_start=False, session_expiry=DAY)


def listening_controller(broker) -> BrokerClient:  # noqa: F811
    ctl = persistent(broker, CONTROLLER)
    assert ctl.subscribe("bj/v1/table/+/#").value == 1
    return ctl


@pytest.mark.parametrize("user", [SIGN, T8])
def test_a_sign_or_table_using_the_controllers_client_id_does_not_kick_it_off(
    broker,  # noqa: F811
    user,
):
    ctl = listening_controller(broker)
    attacker = broker.client(user, client_id=CONTROLLER)
    attacker.subscribe("bj/v1/table/+/#")  # Mosquitto grants it; the ACL filters delivery
    table = broker.client(T7)
    assert table.publish(contribution(T7), b'{"seq": 1}').value == 0
    msg = ctl.get()
    assert msg is not None and msg.payload == b'{"seq": 1}'
    assert ctl.disconnects == [], "the controller was disconnected"
    assert attacker.drain() == []


@pytest.mark.parametrize("user", [SIGN, T8])
def test_a_sign_or_table_using_the_controllers_client_id_leaves_its_session_and_queue(
    broker,  # noqa: F811
    user,
):
    listening_controller(broker).close()  # away: the broker queues for it
    table = broker.client(T7)
    for seq in (1, 2, 3):
        assert table.publish(contribution(T7), f"{seq}").value == 0
    # first try to take the session over, then to wipe it
    for clean_start in (False, True):
        attacker = broker.client(
            user, client_id=CONTROLLER, clean_start=clean_start, session_expiry=DAY
        )
        assert attacker.drain() == [], f"clean_start {clean_start}: got the controller's queue"
        attacker.close()
    ctl = persistent(broker, CONTROLLER)
    assert [m.payload for m in ctl.drain()] == [b"1", b"2", b"3"]
    assert table.publish(contribution(T7), b"4").value == 0  # its subscription is there too
    msg = ctl.get()
    assert msg is not None and msg.payload == b"4"


@pytest.mark.parametrize("user", [T8, SIGN])
def test_another_table_or_a_sign_cannot_take_a_tables_client_id(broker, user):  # noqa: F811
    ctl = broker.client(CONTROLLER)
    t7 = persistent(broker, T7)
    assert t7.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
    attacker = broker.client(user, client_id=T7, clean_start=False, session_expiry=DAY)
    attacker.subscribe(f"bj/v1/jackpot/{T7}/#")  # granted, then filtered by the ACL
    assert ctl.publish(f"bj/v1/jackpot/{T7}/ack", b'{"seq": 1}').value == 0
    msg = t7.get()
    assert msg is not None and msg.payload == b'{"seq": 1}'
    assert t7.disconnects == [], "the table was disconnected"
    assert attacker.drain() == []
    attacker.close()
    # while the table is away, its queued award survives the attempts
    t7.close()
    assert ctl.publish(f"bj/v1/jackpot/{T7}/award", b"award").value == 0
    for clean_start in (False, True):
        attacker = broker.client(user, client_id=T7, clean_start=clean_start, session_expiry=DAY)
        assert attacker.drain() == [], f"clean_start {clean_start}: got the table's award"
        attacker.close()
    t7 = persistent(broker, T7)
    assert [m.payload for m in t7.drain()] == [b"award"]


def test_no_credentials_cannot_take_an_id_even_on_a_listener_open_to_anonymous_clients(
    broker_factory,  # noqa: F811
):
    """Refused on the production listener (allow_anonymous false); and still refused where a
    listener was opened to anonymous clients by mistake, because a client id needs a user."""
    for options in ({}, {"allow_anonymous": "true"}):
        b = broker_factory(listener_options=options)
        ctl = listening_controller(b)
        with pytest.raises(ConnectionRefusedError, match="135"):
            b.client(None, client_id=CONTROLLER, timeout=15.0)
        with pytest.raises(ConnectionRefusedError, match="135"):
            b.client(None, client_id=CONTROLLER, clean_start=False, timeout=15.0)
        assert b.client(T7).publish(contribution(T7), b"after").value == 0
        msg = ctl.get()
        assert msg is not None and msg.payload == b"after", options
        assert ctl.disconnects == [], options


def listeners(text: str) -> list[dict[str, str]]:
    """The options of each listener block of a Mosquitto config."""
    blocks: list[dict[str, str]] = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "listener":
            blocks.append({})
        elif blocks:
            blocks[-1][words[0]] = " ".join(words[1:])
    return blocks


def test_every_listener_binds_client_ids_to_users(broker, tmp_path):  # noqa: F811
    production = listeners(PRODUCTION_CONF.read_text(encoding="utf-8"))
    assert len(production) == 2
    for block in production:
        assert block["use_username_as_clientid"] == "true"
        assert block["allow_anonymous"] == "false"
    assert listener_settings() == {"use_username_as_clientid": "true"}
    # the tests and the demo run the same binding
    for conf in (broker.conf_path.read_text(), broker_config(tmp_path, 1883)):
        (block,) = listeners(conf)
        assert block["use_username_as_clientid"] == "true"
        assert block["allow_anonymous"] == "false"
    # a bridge logs in to the central broker as its own user, under that very id
    bridge = dict(
        line.split(maxsplit=1)
        for line in BRIDGE_CONF.read_text(encoding="utf-8").splitlines()
        if line.startswith("remote_")
    )
    assert bridge["remote_clientid"] == bridge["remote_username"]
