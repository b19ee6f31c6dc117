"""The web front's admission, without sockets: which connection is closed for a newcomer and
when one is refused (docs/web.md, "Limits"; issue 26 item 3). The front itself, over real
sockets, is tests/test_web_front.py."""

from __future__ import annotations

from controller.web.admission import DEALER_GROUP, Admission, Conn


class Transport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


class Writer:
    def __init__(self) -> None:
        self.transport = Transport()


def admission(**limits: int) -> Admission:
    bounds = {"max_connections": 4, "connections_per_address": 2, "dealer_connections": 2}
    return Admission(**(bounds | limits), counters={"evicted": 0})


def conn(adm: Admission, address: str) -> Conn:
    return Conn(Writer(), address, adm.group_of(address), 0.0)  # type: ignore[arg-type]


def test_an_address_past_its_cap_closes_its_own_oldest_idle_connection():
    adm = admission()
    first, second = conn(adm, "10.0.0.7"), conn(adm, "10.0.0.7")
    other = conn(adm, "10.0.0.8")
    assert adm.admit(first) is None and adm.admit(other) is None and adm.admit(second) is None
    third = conn(adm, "10.0.0.7")
    assert adm.admit(third) is None
    assert first.writer.transport.aborted and first not in adm.conns
    assert not other.writer.transport.aborted and not second.writer.transport.aborted
    assert adm.counters["evicted"] == 1


def test_a_connection_in_a_request_is_never_closed_for_a_newcomer():
    adm = admission()
    busy = [conn(adm, "10.0.0.7") for _ in range(2)]
    for c in busy:
        assert adm.admit(c) is None
        adm.mark(c, idle=False)
    refused = adm.admit(conn(adm, "10.0.0.7"))
    assert (
        refused
        == "2 connections from 10.0.0.7 are open, each in a request; close one and try again"
    )
    assert not any(c.writer.transport.aborted for c in busy) and adm.counters["evicted"] == 0
    adm.mark(busy[1], idle=True)  # its reply sent: it waits for the next request
    assert adm.admit(conn(adm, "10.0.0.7")) is None
    assert busy[1].writer.transport.aborted and not busy[0].writer.transport.aborted


def test_strangers_past_the_total_close_the_oldest_idle_stranger_never_the_dealers_screen():
    adm = admission(max_connections=3)
    screen = [conn(adm, "127.0.0.1"), conn(adm, "::1")]
    strangers = [conn(adm, f"10.0.0.{n}") for n in range(1, 4)]
    for c in [*screen, *strangers]:
        assert adm.admit(c) is None
    assert {c.group for c in screen} == {DEALER_GROUP}
    newcomer = conn(adm, "10.0.0.9")
    assert adm.admit(newcomer) is None
    assert strangers[0].writer.transport.aborted  # the oldest idle stranger
    assert not any(c.writer.transport.aborted for c in screen)
    assert len(adm.conns) == 5


def test_the_dealers_screen_past_its_own_cap_closes_only_its_own():
    adm = admission()
    stranger = conn(adm, "10.0.0.7")
    assert adm.admit(stranger) is None
    screen = [conn(adm, "127.0.0.1") for _ in range(2)]
    for c in screen:
        assert adm.admit(c) is None
    assert adm.admit(conn(adm, "::1")) is None
    assert screen[0].writer.transport.aborted and not stranger.writer.transport.aborted


def test_an_ipv6_client_counts_by_its_64_and_a_dropped_connection_frees_its_place():
    adm = admission(connections_per_address=1)
    a = conn(adm, "2001:db8:1:2::7")
    assert adm.admit(a) is None
    adm.mark(a, idle=False)
    assert adm.admit(conn(adm, "2001:db8:1:2::8")) is not None  # the same /64, in a request
    adm.drop(a)
    adm.drop(a)  # safe twice
    assert adm.admit(conn(adm, "2001:db8:1:2::8")) is None and len(adm.conns) == 1
