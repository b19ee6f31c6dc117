"""What the dealer display and /metrics show (controller.web.views), from real rounds.

Each test plays a round on a real :class:`~controller.table.machine.Table` (PA standard)
and turns its effects into the dealer feed exactly as ``TableRuntime._carry_out`` does:
``{**effect_dict(effect, t), "round": <round number after the event>}`` for prompts,
alarms, refusals and settlements. The status is built as ``TableRuntime._publish_status``
builds it. Deal order with three spots: spot 1, 2, 3, the dealer's up card, spot 1, 2, 3,
the hole card.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter, deque
from concurrent.futures import Future
from typing import Any

import pytest

from controller.games import load_game
from controller.journal import JournaledTable
from controller.rules.cards import parse_cards
from controller.runtime.loop import FEED_LENGTH, TableRuntime, effect_dict
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Alarm, Prompt, Refused, Settled, Step
from controller.web.views import dealer_view, metrics_text, pay_line

RULES = load_game("pa-standard")
FEED_KINDS = (Prompt, Alarm, Refused, Settled)
# spot 1: 9H KH (19), spot 2: 10S 7C (17), spot 3: 8D 7H (15); dealer 7D up, KC in the hole
DEAL_3 = "9H 10S 8D 7D KH 7C 7H KC"


class Floor:
    """A real table, the dealer feed the runtime would keep for it, and its status."""

    def __init__(self, spots: int = 3, feed_length: int | None = None):
        self.table = Table(RULES, TableSettings(spots=spots))
        self.feed: deque[dict[str, Any]] | list[dict[str, Any]] = (
            deque(maxlen=feed_length) if feed_length else []
        )
        self.t = 10_000
        self.effects: list[Any] = []

    def do(self, event: ev.Event, *, accepted: bool = True) -> Step:
        self.t += 25
        event = dataclasses.replace(event, t=self.t)
        step = self.table.handle(event)
        assert step.accepted is accepted, f"{event}: {step.reason}"
        self.effects.extend(step.effects)
        for effect in step.effects:
            if isinstance(effect, FEED_KINDS):
                item = effect_dict(effect, event.t)
                item["round"] = self.table.state.round_number
                self.feed.append(item)
        return step

    def bets(self, *spots: int) -> None:
        for spot in spots:
            self.do(ev.BetSensor(spot, "main", True))

    def deal(self, text: str) -> list[Step]:
        return [self.do(ev.CardDrawn(card)) for card in parse_cards(text)]

    def status(self, **extra: Any) -> dict[str, Any]:
        state = self.table.state
        return {
            "snapshot": self.table.snapshot(),
            "round_in_progress": self.table.round_in_progress,
            "faults": {k: {"detail": d, "active": a} for k, (d, a) in sorted(state.faults.items())},
            "journal_fault": None,
            "jackpot_link": state.jackpot_link,
            "events_handled": 17,
            "events_refused": 2,
            "events_dropped": 0,
            "journal_events": 17,
            "queue": 0,
            "t": self.t,
            **extra,
        }

    def view(self, **extra: Any) -> dict[str, Any]:
        return dealer_view("BJ-07", self.status(**extra), list(self.feed))


def prompt_texts(step: Step) -> list[str]:
    return [e.text for e in step.effects if isinstance(e, Prompt)]


def settled(effects: list[Any]) -> list[Settled]:
    return [e for e in effects if isinstance(e, Settled)]


def three_spot_round() -> Floor:
    floor = Floor()
    floor.bets(1, 2, 3)
    floor.do(ev.WagerAmount(1, "main", 2500))
    floor.do(ev.Lockout())
    floor.deal(DEAL_3)
    return floor


# -- next steps and refusals -----------------------------------------------------------------


def test_next_is_the_newest_steps_prompts():
    floor = Floor()
    floor.bets(1, 2, 3)
    assert floor.view()["next"] == ["Place your bets"]  # no prompt yet: the phase says it
    step = floor.do(ev.Lockout())
    assert floor.view()["next"] == prompt_texts(step) == ["No more bets: deal spot 1 first"]
    floor.deal("9H 10S 8D 7D")  # cards that prompt nothing: the last prompt stands
    assert floor.view()["next"] == ["No more bets: deal spot 1 first"]
    *_, hole = floor.deal("KH 7C 7H KC")
    assert floor.view()["next"] == prompt_texts(hole)
    assert len(prompt_texts(hole)) == 2  # both prompts of the hole card's step, in order
    step = floor.do(ev.Next())
    assert floor.view()["next"] == prompt_texts(step)
    assert floor.view()["next"][-1].startswith("Spot 2 to act on 17")


def test_a_refusal_shows_until_the_next_prompt():
    floor = Floor()
    floor.bets(1, 2, 3)
    floor.do(ev.Lockout())
    assert floor.view()["refused"] is None
    step = floor.do(ev.WagerAmount(1, "main", 5000), accepted=False)
    view = floor.view()
    assert view["refused"] == step.reason and "locked" in view["refused"]
    assert view["next"] == ["No more bets: deal spot 1 first"]  # still the thing to do
    floor.deal("9H 10S 8D 7D KH 7C 7H")  # accepted, but no new prompt: still shown
    assert floor.view()["refused"] == step.reason
    floor.deal("KC")  # the hole card prompts: the refusal is old news
    assert floor.view()["refused"] is None


def test_the_newest_of_two_refusals_is_shown():
    floor = Floor()
    floor.bets(1)
    floor.do(ev.Lockout())
    floor.do(ev.WagerAmount(1, "main", 5000), accepted=False)
    second = floor.do(ev.Burn(), accepted=False)
    assert floor.view()["refused"] == second.reason != ""


# -- the pay list --------------------------------------------------------------------------


def test_pay_lists_this_rounds_settlements_with_their_amounts():
    floor = three_spot_round()
    assert floor.view()["pay"] == []
    for _ in range(3):
        floor.do(ev.Next())
    view = floor.view()
    assert view["phase"] == "settled" and view["round"] == 1
    lines = settled(floor.effects)
    assert [(x.spot, x.outcome) for x in lines] == [(1, "win"), (2, "push"), (3, "lose")]
    assert view["pay"] == [
        {
            "spot": 1,
            "hand": 0,
            "wager": "main wager",
            "what": "pay",
            "amount": lines[0].paid,
            "text": "Pay spot 1 main wager 1 to 1: $25.00",
        },
        {
            "spot": 2,
            "hand": 0,
            "wager": "main wager",
            "what": "push",
            "amount": lines[1].stake,
            "text": "Push spot 2 main wager: $10.00 stays with the player",
        },
        {
            "spot": 3,
            "hand": 0,
            "wager": "main wager",
            "what": "take",
            "amount": lines[2].stake,
            "text": "Take spot 3 main wager $10.00",
        },
    ]
    assert [line["amount"] for line in view["pay"]] == [2500, 1000, 1000]
    # the display says what the table prompted, word for word
    pay_prompts = [e.text for e in floor.effects if isinstance(e, Prompt) and e.code == "pay"]
    assert [line["text"] for line in view["pay"]] == pay_prompts


def test_pay_empties_when_the_next_round_opens_and_shows_only_that_rounds_lines():
    floor = three_spot_round()
    for _ in range(3):
        floor.do(ev.Next())
    assert len(floor.view()["pay"]) == 3
    floor.do(ev.EndRound())
    view = floor.view()
    assert view["round"] == 2 and view["phase"] == "betting"
    assert view["pay"] == []
    assert view["next"] == ["Place your bets: round 2"]  # end round's prompt is round 2's
    # round 2: spot 2 alone, voided by the supervisor: one line, round 1's are not back
    floor.do(ev.BetSensor(1, "main", False))
    floor.do(ev.BetSensor(3, "main", False))
    floor.do(ev.Lockout())
    floor.deal("5H 6D")
    floor.do(ev.SupervisorKey(True))
    floor.do(ev.VoidRound("camera jam"))
    (line,) = floor.view()["pay"]
    assert (line["spot"], line["what"], line["amount"]) == (2, "return", 1000)
    assert line["text"] == "Return spot 2 main wager $10.00 (round void)"


def test_a_side_bet_settled_at_the_deal_is_on_the_pay_list_at_once():
    floor = Floor(spots=1)
    floor.do(ev.BetSensor(1, "main", True))
    floor.do(ev.BetSensor(1, "blazing_7s", True))
    floor.do(ev.Lockout())
    floor.deal("7H 7D 7S 9C")  # three 7's of mixed suits: a fixed pay
    view = floor.view()
    assert view["phase"] == "players"
    (seven,) = settled(floor.effects)
    assert view["pay"] == [
        {
            "spot": 1,
            "hand": None,
            "wager": "Blazing 7's",
            "what": "pay",
            "amount": seven.paid,
            "text": "Pay spot 1 Blazing 7's $1,000: $1,000.00",
        }
    ]
    assert seven.paid == 100_000


def test_a_surrender_is_a_return_of_half():
    floor = Floor(spots=1)
    floor.bets(1)
    floor.do(ev.Lockout())
    floor.deal("10S 7D 6C 9C")  # 16 against a 7
    floor.do(ev.Surrender(0))
    (line,) = settled(floor.effects)
    item = next(i for i in floor.feed if i["kind"] == "settled")
    assert pay_line(item) == {
        "spot": 1,
        "hand": 0,
        "wager": "main wager",
        "what": "return",
        "amount": line.returned,
        "text": "Take half of spot 1 main wager: return $5.00",
    }
    assert line.returned == 500
    assert floor.view()["pay"] == [pay_line(item)]


def test_a_meter_win_is_a_meter_line_never_an_amount_to_pay():
    floor = Floor(spots=1)
    floor.do(ev.BetSensor(1, "main", True))
    floor.do(ev.BetSensor(1, "blazing_7s", True))
    floor.do(ev.Lockout())
    floor.deal("7D 7D 7D 9C")  # three suited 7's: a share of the meter
    (line,) = floor.view()["pay"]
    assert line["what"] == "meter"
    assert line["spot"] == 1 and line["wager"] == "Blazing 7's"
    assert "hand pay" in line["text"] and "wins 100% of the Blazing 7's meter" in line["text"]
    assert settled(floor.effects)[0].paid == 0


def test_a_second_hand_is_named_in_the_text():
    item = effect_dict(
        Settled(1, "main", 1000, "win", 1000, 0, "20 beats 19", hand=1, pays="1 to 1"), 5
    )
    line = pay_line({**item, "round": 3})
    assert (line["hand"], line["what"], line["amount"]) == (1, "pay", 1000)
    assert line["text"] == "Pay spot 1 hand 2 main wager 1 to 1: $10.00"


# -- alarms --------------------------------------------------------------------------------


def test_alarms_list_the_journal_fault_then_faults_then_open_table_alarms():
    floor = Floor()
    floor.bets(1)
    floor.do(ev.Lockout())
    floor.do(ev.BetSensor(2, "main", True))  # a late bet: an open table alarm
    floor.do(ev.TableFault("shoe", "offline for 30 s"))
    floor.do(ev.TableFault("camera", "no frames", active=True))
    floor.do(ev.TableFault("camera", active=False))  # gone, but latched
    view = floor.view(journal_fault="database or disk is full")
    codes = [a["code"] for a in view["alarms"]]
    assert codes == [
        "journal_fault",
        "fault_camera",
        "fault_shoe",
        *[a["code"] for a in floor.table.snapshot()["alarms"]],
    ]
    assert codes[3:5] == ["late_bet", "table_fault"]
    by_code = {a["code"]: a for a in view["alarms"]}
    assert "database or disk is full" in by_code["journal_fault"]["text"]
    assert "offline for 30 s" in by_code["fault_shoe"]["text"]
    assert by_code["fault_shoe"]["action"] == "Call a technician"
    assert "(now gone)" in by_code["fault_camera"]["text"]
    assert "supervisor key" in by_code["fault_camera"]["action"]
    assert by_code["late_bet"]["spot"] == 2
    assert set(by_code["late_bet"]) == {"code", "text", "action", "spot"}


@pytest.mark.parametrize("kind", ["resend_malformed", "ack_refused", "signature", "x_unknown"])
def test_a_refused_link_messages_own_words_never_reach_the_dealers_screen(kind):
    """Issue 26 item 6: a malformed resend's refusal quoted "'PAY SPOT 3 $25,000 NOW' is
    not of type 'integer'" on the dealer's alarm band. The dealer's screen says what kind of
    message was refused, in the table's fixed words (the log keeps the detail, escaped and
    cut); nothing the view adds brings the words back."""
    floor = Floor()
    floor.bets(1)
    forged = "'PAY SPOT 3 $25,000 NOW' is not of type 'integer'"
    floor.do(ev.LinkAlarm(kind, forged))
    view = floor.view()
    shown = json.dumps([view["alarm_lines"], view["alarms"], view["prompt"], view["recent"]])
    assert "PAY SPOT" not in shown and "25,000" not in shown, shown
    (line,) = [a for a in view["alarm_lines"] if a["code"] == f"link_{kind}"]
    assert line["text"] and line["action"].startswith("Call a technician")


def test_no_faults_and_no_alarm_list_is_no_alarm():
    floor = Floor()
    assert floor.view()["alarms"] == []
    snap = floor.table.snapshot()
    del snap["alarms"]  # a snapshot from before the alarm register
    view = dealer_view("BJ-07", {"snapshot": snap}, [])
    assert view["alarms"] == [] and view["round"] == 1


def test_an_empty_status_still_gives_a_page():
    view = dealer_view("BJ-07", {}, [])
    assert view["table"] == "BJ-07"
    assert (view["round"], view["next"], view["pay"], view["alarms"]) == (None, [], [], [])
    assert view["spots"] == [] and view["dealer"]["cards"] == []


# -- the hole card -------------------------------------------------------------------------


def test_the_hole_card_stays_face_down_until_the_dealers_turn():
    floor = three_spot_round()
    for _ in range(2):
        view = floor.view()
        assert view["dealer"] == {"cards": ["7D", "back"], "total": None, "showing": "7D"}
        assert "KC" not in json.dumps(view)  # nowhere: not in a prompt, total or spot
        assert [s["hands"][0]["cards"] for s in view["spots"]] == [
            ["9H", "KH"],
            ["10S", "7C"],
            ["8D", "7H"],
        ]
        floor.do(ev.Next())
    floor.do(ev.Next())  # the dealer's turn
    view = floor.view()
    assert view["dealer"]["cards"] == ["7D", "KC"] and view["dealer"]["total"] == 17


# -- /metrics ------------------------------------------------------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"')


def unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value)


def parse_sample(line: str) -> tuple[str, dict[str, str], float]:
    """One sample line of the Prometheus text format 0.0.4, or AssertionError."""
    m = re.match(NAME, line)
    assert m, line
    name, rest = m.group(), line[m.end() :]
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        rest = rest[1:]
        while not rest.startswith("}"):
            lm = LABEL.match(rest)
            assert lm, f"bad label in {line!r}"
            assert lm.group(1) not in labels, line
            labels[lm.group(1)] = unescape(lm.group(2))
            rest = rest[lm.end() :]
            if rest.startswith(","):
                rest = rest[1:]
        rest = rest[1:]
    assert rest.startswith(" ") and rest.count(" ") == 1, line
    value = float(rest[1:])
    assert math.isfinite(value), line
    return name, labels, value


def parse_metrics(text: str) -> list[tuple[str, str, Any]]:
    """(line kind, family, detail) for every line; fails on a line of no known shape."""
    assert text.endswith("\n") and "\n\n" not in text
    out = []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            _, _, name, help_text = line.split(" ", 3)
            assert re.fullmatch(NAME, name) and help_text, line
            out.append(("help", name, help_text))
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("gauge", "counter"), line
            out.append(("type", name, kind))
        else:
            name, labels, value = parse_sample(line)
            out.append(("sample", name, (labels, value)))
    return out


HEALTH = {
    "link": {
        "connected": True,
        "depth": 3,
        "last_ack": None,
        "last_ack_age_s": None,
        "next_seq": 9,
        "stopped_at": None,
        "errors": {"timeout": 2},
    },
    "shoe": {
        "name": "shoe",
        "connected": True,
        "errors": {"crc": 4, "resync": 1},
        "last_message_age_ms": 1500,
    },
    "camera": {"name": "camera", "connected": False, "errors": {}, "last_message_age_ms": None},
    "gpio": None,
}
WEB = {"logins": 1, "login_failures": 5, "throttled": 2, "refused": 0, "sessions": 1, "streams": 2}


def bundle(floor: Floor, **identity: Any) -> dict[str, Any]:
    """As ``WebServer.bundle`` builds it from the daemon's ``identity()`` and the runtime."""
    ident = {
        "table": "BJ-07",
        "property": "Riverside",
        "game": "pa-standard",
        "version": "1.4.0",
        "config_checksum": "sha256:9f2c",
        "started": 1_700_000_000.0,
        **identity,
    }
    return {
        **ident,
        "uptime_s": 3723.5,
        "status": floor.status(),
        "feed": list(floor.feed),
        "health": HEALTH,
        "light_test": None,
    }


@pytest.fixture
def faulted() -> Floor:
    floor = three_spot_round()
    floor.do(ev.TableFault("shoe", "offline for 30 s"))
    return floor


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(name, sorted labels): value}; a series given twice fails."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for kind, name, detail in parse_metrics(text):
        if kind == "sample":
            labels, value = detail
            key = (name, tuple(sorted(labels.items())))
            assert key not in out, f"{key} twice"
            out[key] = value
    return out


def test_every_metrics_line_is_help_type_or_a_valid_sample(faulted):
    text = metrics_text(bundle(faulted), WEB)
    lines = parse_metrics(text)
    assert len(lines) > 40
    # the table's own figures, and prometheus_client's standard process metrics beside them
    assert all(name.startswith(("table_controller_", "process_")) for _k, name, _d in lines)
    names = {name for kind, name, _d in lines if kind == "sample"}
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total"} <= names
    assert "process_start_time_seconds" in names and "process_open_fds" in names


def test_each_family_has_one_help_and_one_type_before_its_samples(faulted):
    lines = parse_metrics(metrics_text(bundle(faulted), WEB))
    helps = Counter(name for kind, name, _ in lines if kind == "help")
    types = {name: d for kind, name, d in lines if kind == "type"}
    assert Counter(name for kind, name, _ in lines if kind == "type") == helps
    assert set(helps.values()) == {1}
    declared: set[str] = set()
    for kind, name, _ in lines:
        if kind == "type":
            declared.add(name)
        elif kind == "sample":
            assert name in declared, f"{name} before its TYPE"
    assert {name for kind, name, _ in lines if kind == "sample"} == set(helps)
    for name, kind in types.items():  # counters, and only counters, end in _total
        assert (kind == "counter") == name.endswith("_total"), name


def test_each_familys_lines_are_one_group(faulted):
    lines = parse_metrics(metrics_text(bundle(faulted), WEB))
    order = [name for _, name, _ in lines]
    groups = [name for i, name in enumerate(order) if i == 0 or order[i - 1] != name]
    assert len(groups) == len(set(groups)), groups


def test_metrics_values_come_from_the_status_health_and_web_counters(faulted):
    got = samples(metrics_text(bundle(faulted), WEB))
    p = "table_controller_"
    assert (
        got[
            (
                p + "info",
                (
                    ("config_checksum", "sha256:9f2c"),
                    ("game", "pa-standard"),
                    ("table", "BJ-07"),
                    ("version", "1.4.0"),
                ),
            )
        ]
        == 1
    )
    assert got[(p + "uptime_seconds", ())] == 3723.5
    assert got[(p + "round", ())] == 1
    assert got[(p + "round_in_progress", ())] == 1
    assert got[(p + "events_total", ())] == 17
    assert got[(p + "events_refused_total", ())] == 2
    assert got[(p + "journal_writable", ())] == 1
    assert got[(p + "fault", (("kind", "shoe"),))] == 1
    assert got[(p + "alarms_open", ())] == len(faulted.table.snapshot()["alarms"]) == 1
    assert got[(p + "outbox_depth", ())] == 3
    assert got[(p + "driver_errors_total", (("driver", "link"), ("kind", "timeout")))] == 2
    assert got[(p + "driver_errors_total", (("driver", "shoe"), ("kind", "crc")))] == 4
    assert got[(p + "driver_connected", (("driver", "camera"),))] == 0
    assert got[(p + "driver_last_message_age_seconds", (("driver", "shoe"),))] == 1.5
    assert got[(p + "web_login_failures_total", ())] == 5
    assert got[(p + "web_streams", ())] == 2


def test_none_values_and_absent_parts_are_left_out(faulted):
    text = metrics_text(bundle(faulted), {"logins": 0})
    names = {name for name, _labels in samples(text)}
    p = "table_controller_"
    assert p + "outbox_last_ack" not in names  # no ack yet this run
    assert p + "outbox_last_ack_age_seconds" not in names
    assert p + "web_sessions" not in names and p + "web_streams" not in names
    assert p + "web_logins_total" in names  # 0 is a value, not None
    assert 'driver="camera"' not in "".join(
        line for line in text.splitlines() if "last_message_age" in line
    )
    assert 'driver="gpio"' not in text  # no GPIO on this table
    assert "None" not in text and "nan" not in text.lower()


def test_a_journal_fault_makes_journal_writable_zero(faulted):
    b = bundle(faulted)
    b["status"]["journal_fault"] = "database or disk is full"
    assert samples(metrics_text(b, WEB))[("table_controller_journal_writable", ())] == 0


def test_label_values_are_escaped(faulted):
    odd = 'BJ "7"\\east\nwing'
    text = metrics_text(bundle(faulted, table=odd, version='1.4"rc'), WEB)
    (info,) = [line for line in text.splitlines() if line.startswith("table_controller_info")]
    assert 'table="BJ \\"7\\"\\\\east\\nwing"' in info
    assert "\n" not in info
    _name, labels, value = parse_sample(info)
    assert labels["table"] == odd and labels["version"] == '1.4"rc' and value == 1


def test_a_pay_list_survives_a_full_tables_round(tmp_path):
    """A full table: 7 spots with every side bet, through the real runtime, whose feed keeps
    only FEED_LENGTH items: the pay list still holds every settlement of the round."""
    table = JournaledTable(tmp_path / "journal.sqlite", RULES, TableSettings(spots=7))
    t = [10_000]

    def clock() -> int:
        t[0] += 5
        return t[0]

    runtime = TableRuntime(table, clock=clock, tick_ms=10**9)
    effects: list[Any] = []

    def do(event: ev.Event) -> None:
        reply: Future[Step] = Future()
        runtime.submit(event, reply)
        runtime.drain()
        step = reply.result(0)
        assert step.accepted, f"{event}: {step.reason}"
        effects.extend(step.effects)

    circles = ("main", "lucky_ladies", "twenty_one_plus_three_xtreme", "blazing_7s")
    for spot in range(1, 8):
        for circle in circles:
            do(ev.BetSensor(spot, circle, True))
    do(ev.Lockout())
    for card in parse_cards("10H 10S 10D 10C 10H 10S 10D 9C 9H 9S 9D 9C 9H 9S 8D 7C"):
        do(ev.CardDrawn(card))
    for _ in range(7):
        do(ev.Next())
    do(ev.CardDrawn(parse_cards("5C")[0]))  # the dealer draws to 20
    assert table.state.phase.value == "settled"
    lines = settled(effects)
    assert len(lines) == 28 and len(runtime.recent()) == FEED_LENGTH < 80  # the feed overflowed
    view = dealer_view("BJ-07", runtime.status(), runtime.recent())
    assert [(x["spot"], x["wager"]) for x in view["pay"]] == [
        (x.spot, pay_line(effect_dict(x, 0))["wager"]) for x in lines
    ]
    do(ev.EndRound())  # the next round's display starts with an empty pay list
    assert dealer_view("BJ-07", runtime.status(), runtime.recent())["pay"] == []
    table.close()


def test_the_dealer_bar_says_the_jackpot_controller_is_not_answering():
    """Issue 28 item 3: the bar says why the link is down, in fixed words."""
    from controller.web.views import jackpot_link_words

    assert jackpot_link_words({"jackpot_link": True}) is None
    assert jackpot_link_words({"jackpot_link": False}) == (
        "Jackpot link down: no progressive wagers"
    )
    silent = {"jackpot_link": False, "jackpot_link_why": "controller_silent"}
    assert jackpot_link_words(silent) == (
        "Jackpot link down: the jackpot controller is not answering. No progressive wagers"
    )
    odd = {"jackpot_link": False, "jackpot_link_why": "PAY SPOT 3 $25,000 NOW"}
    assert jackpot_link_words(odd) == "Jackpot link down: no progressive wagers"
