"""The broker config for the jackpot link, against a real Mosquitto (config/mosquitto/).

Each test starts its own Mosquitto on a free loopback port (tests/mqtt_broker.py) with the
repo's ACL file and the production queue limits; clients are paho-mqtt 2.x speaking MQTT 5, so a
publish refused by the ACL comes back as PUBACK reason code 135 (Not authorized).
"""

from __future__ import annotations

from mqtt_broker import (  # noqa: F401
    CONTROLLER,
    SIGN,
    TABLES,
    BrokerClient,
    broker,
    broker_factory,
    production_limits,
)

T7, T8 = TABLES
NOT_AUTHORIZED = 135
NO_SUBSCRIBERS = 16
DAY = 86_400


def contribution(table: str) -> str:
    return f"bj/v1/table/{table}/contribution"


def controller(broker, **kwargs) -> BrokerClient:  # noqa: F811
    """The jackpot controller, subscribed to every table stream at QoS 1."""
    c = broker.client(CONTROLLER, **kwargs)
    assert c.subscribe("bj/v1/table/+/#").value == 1
    return c


def test_a_table_publishes_its_own_topic_and_the_controller_receives_it(broker):  # noqa: F811
    ctl = controller(broker)
    table = broker.client(T7)
    rc = table.publish(contribution(T7), b'{"seq": 1}', qos=1)
    assert rc.value == 0
    msg = ctl.get()
    assert msg is not None
    assert (msg.topic, msg.payload, msg.qos) == (contribution(T7), b'{"seq": 1}', 1)


def test_a_table_publishing_as_another_table_is_refused_and_nothing_is_delivered(broker):  # noqa: F811
    ctl = controller(broker)
    forger = broker.client(T8)
    for topic in (contribution(T7), f"bj/v1/table/{T7}/hit_claim", "bj/v1/table/x/status"):
        rc = forger.publish(topic, b'{"seq": 99}')
        assert rc.value == NOT_AUTHORIZED, topic
        assert rc.is_failure
    # nor may a table speak for the controller
    assert forger.publish(f"bj/v1/jackpot/{T8}/award", b"{}").value == NOT_AUTHORIZED
    assert forger.publish("bj/v1/meters/blazing7", b"{}").value == NOT_AUTHORIZED
    assert ctl.drain() == []


def test_a_table_reads_only_what_is_addressed_to_it(broker):  # noqa: F811
    ctl = broker.client(CONTROLLER)
    t7, t8 = broker.client(T7), broker.client(T8)
    assert t7.subscribe(f"bj/v1/jackpot/{T7}/#").value == 1
    t8.subscribe(f"bj/v1/jackpot/{T7}/#")  # Mosquitto 2.0 grants it, then filters delivery
    t8.subscribe("bj/v1/table/#")
    assert ctl.publish(f"bj/v1/jackpot/{T7}/ack", b'{"seq": 1}').value == 0
    assert t7.get().topic == f"bj/v1/jackpot/{T7}/ack"
    t7.publish(contribution(T7), b"{}")
    assert t8.drain() == []


def test_the_controller_cannot_forge_a_table_message(broker):  # noqa: F811
    ctl = controller(broker)
    assert ctl.publish(contribution(T7), b"{}").value == NOT_AUTHORIZED
    # the patterns give every user a namespace under its own name; the ACL closes it
    assert ctl.publish(contribution(CONTROLLER), b"{}").value == NOT_AUTHORIZED
    assert ctl.drain() == []


def test_a_sign_cannot_publish_meters_nor_read_tables(broker):  # noqa: F811
    ctl = controller(broker)
    sign = broker.client(SIGN)
    assert sign.subscribe("bj/v1/meters/#").value == 1
    sign.subscribe("bj/v1/table/#")  # granted by Mosquitto 2.0, but nothing is delivered
    sign.subscribe(f"bj/v1/jackpot/{T7}/#")
    assert sign.publish("bj/v1/meters/blazing7", b'{"cents": 1}', retain=True).value == (
        NOT_AUTHORIZED
    )
    assert sign.publish("bj/v1/jackpot/status", b"online").value == NOT_AUTHORIZED
    assert sign.publish(contribution(SIGN), b"{}").value == NOT_AUTHORIZED
    broker.client(T7).publish(contribution(T7), b"{}")
    ctl.publish(f"bj/v1/jackpot/{T7}/ack", b"{}")
    assert [m.topic for m in ctl.drain()] == [contribution(T7)]
    assert sign.drain() == []


def test_a_retained_meter_reaches_a_sign_that_connects_later(broker):  # noqa: F811
    ctl = broker.client(CONTROLLER)
    meter = b'{"pool": "blazing7", "cents": 2500000, "seq": 41}'
    # 16 "No matching subscribers" is a success code: the retained copy is kept all the same
    assert ctl.publish("bj/v1/meters/blazing7", meter, retain=True).value == NO_SUBSCRIBERS
    assert not ctl.publish("bj/v1/jackpot/status", b"online", retain=True).is_failure
    sign = broker.client(SIGN)
    sign.subscribe("bj/v1/meters/#")
    sign.subscribe("bj/v1/jackpot/status")
    got = {m.topic: m for m in sign.drain()}
    assert got["bj/v1/meters/blazing7"].payload == meter
    assert got["bj/v1/meters/blazing7"].retain
    assert got["bj/v1/jackpot/status"].payload == b"online"


def test_a_table_reads_the_controllers_status_and_cannot_write_it(broker):  # noqa: F811
    """Issue 28 item 3: a table watches the controller's heartbeat on bj/v1/jackpot/status
    (config/mosquitto/acl grants the read); it cannot speak for the controller there."""
    ctl = broker.client(CONTROLLER)
    table = broker.client(T7)
    assert table.subscribe("bj/v1/jackpot/status", qos=0).value == 0
    assert not ctl.publish("bj/v1/jackpot/status", b"online", retain=True).is_failure
    assert table.publish("bj/v1/jackpot/status", b"offline", retain=True).value == NOT_AUTHORIZED
    got = table.get(timeout=10)  # the live status: the table's read is granted
    assert got is not None and (got.topic, got.payload) == ("bj/v1/jackpot/status", b"online")
    later = broker.client(T8)  # and the retained one is still the controller's
    later.subscribe("bj/v1/jackpot/status")
    got = later.get(timeout=10)
    assert got is not None and (got.payload, got.retain) == (b"online", True)


def persistent_controller(broker) -> BrokerClient:  # noqa: F811
    return broker.client(CONTROLLER, clean_start=False, session_expiry=DAY)


def test_a_persistent_controller_gets_what_was_published_while_it_was_away(broker):  # noqa: F811
    ctl = persistent_controller(broker)
    ctl.subscribe("bj/v1/table/+/#")
    ctl.close()
    table = broker.client(T7)
    for seq in range(5):
        assert table.publish(contribution(T7), f'{{"seq": {seq}}}').value == 0
    ctl = persistent_controller(broker)
    assert ctl.connack.value == 0
    assert [m.payload for m in ctl.drain()] == [f'{{"seq": {s}}}'.encode() for s in range(5)]


def test_the_session_and_its_queue_survive_a_broker_restart(broker):  # noqa: F811
    ctl = persistent_controller(broker)
    ctl.subscribe("bj/v1/table/+/#")
    ctl.close()
    table = broker.client(T7)
    for seq in range(3):
        assert table.publish(contribution(T7), f"{seq}").value == 0
    table.close()
    broker.restart()  # clean stop: Mosquitto saves its database (persistence true)
    ctl = persistent_controller(broker)
    assert [m.payload for m in ctl.drain()] == [b"0", b"1", b"2"]
    # the subscription itself came back too
    broker.client(T7).publish(contribution(T7), b"3")
    assert ctl.get().payload == b"3"


def test_a_clean_start_controller_loses_the_backlog(broker):  # noqa: F811
    """Why the controller must connect with clean_start false: the control for the test above."""
    ctl = persistent_controller(broker)
    ctl.subscribe("bj/v1/table/+/#")
    ctl.close()
    broker.client(T7).publish(contribution(T7), b"lost")
    ctl = broker.client(CONTROLLER, clean_start=True, session_expiry=DAY)
    ctl.subscribe("bj/v1/table/+/#")
    assert ctl.drain() == []


def test_the_production_queue_limits_are_set_on_purpose():
    limits = production_limits()
    # Mosquitto's defaults: 1000 messages, no byte limit, 20 in flight, no size limit.
    assert int(limits["max_queued_messages"]) >= 100_000
    assert 0 < int(limits["max_queued_bytes"]) <= 500_000_000
    assert limits["queue_qos0_messages"] == "false"
    assert int(limits["max_inflight_messages"]) > 0
    assert 0 < int(limits["message_size_limit"]) <= 1_048_576
    assert "persistent_client_expiration" in limits
    # Nagle off on the broker's side: with it on, a contribution waited up to 40 ms for the
    # controller's delayed TCP acknowledgement of the PUBACK before it (issue 32)
    assert limits["set_tcp_nodelay"] == "true"


def test_the_test_broker_runs_the_production_limits(broker):  # noqa: F811
    conf = broker.conf_path.read_text()
    for key, value in production_limits().items():
        assert f"\n{key} {value}\n" in conf


def test_beyond_the_queue_limit_messages_are_dropped_silently(broker_factory):  # noqa: F811
    """The documented behaviour: a full queue drops new messages, the publisher sees success.

    Here the limit is 10 (production: README.md, "Queue limits"); the 11th to 25th are lost
    to the controller, which is why tables keep every message in their outbox until the
    controller's application-level ack, and the controller asks for a resend on a gap.
    """
    b = broker_factory(max_queued_messages=10)
    ctl = persistent_controller(b)
    ctl.subscribe("bj/v1/table/+/#")
    ctl.close()
    table = b.client(T7)
    codes = [table.publish(contribution(T7), f"{seq}").value for seq in range(25)]
    assert codes == [0] * 25  # no error reaches the publisher
    ctl = persistent_controller(b)
    assert [int(m.payload) for m in ctl.drain()] == list(range(10))
    # the only trace is one line in the broker's log
    assert f"Outgoing messages are being dropped for client {CONTROLLER}" in b.log()


def test_a_wrong_password_is_refused(broker):  # noqa: F811
    try:
        broker.client(T7, password="not-the-password")
    except ConnectionRefusedError as refused:
        assert "135" in str(refused) or "134" in str(refused)
    else:
        raise AssertionError("the broker accepted a wrong password")
