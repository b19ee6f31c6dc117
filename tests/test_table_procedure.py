"""The dealing procedure, as a dealer would walk through it.

Each test is a short round at the table: what the dealer (or a sensor, or the shoe) does,
and what the table must answer. Deal order with two spots: spot 1, spot 2, the dealer's
up card, spot 1, spot 2, the hole card. Amounts are cents; the default table minimum is
$10 (1000) and the side-bet minimum $1 (100).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from controller.games import load_game
from controller.rules.cards import parse_cards
from controller.rules.profile import HouseRules
from controller.table import Table, TableSettings
from controller.table import events as ev
from controller.table.effects import Alarm, Effect, Prompt, Publish, Settled, Step
from controller.table.state import Phase


class Dealer:
    """A table and the dealer's hands on it: every call is one event, checked accepted
    (or refused, with :meth:`refused`)."""

    def __init__(self, rules: HouseRules | str, spots: int = 2, **settings: object):
        self.rules = load_game(rules) if isinstance(rules, str) else rules
        self.table = Table(self.rules, TableSettings(spots=spots, **settings))  # type: ignore[arg-type]
        self.effects: list[Effect] = []  # every effect so far

    def do(self, event: ev.Event) -> Step:
        step = self.table.handle(event)
        assert step.accepted, f"{event} refused: {step.reason}"
        self.effects.extend(step.effects)
        return step

    def refused(self, event: ev.Event) -> str:
        """Press ``event`` and expect a refusal that changes nothing; return the reason."""
        before = self.snapshot()
        step = self.table.handle(event)
        assert not step.accepted, f"{event} was accepted: {step.effects}"
        assert step.reason
        assert self.snapshot() == before
        return step.reason

    def bets(self, *placed: str) -> None:
        """``"1 main"``, ``"1 blazing_7s"``: chips on the circles."""
        for item in placed:
            spot, circle = item.split()
            self.do(ev.BetSensor(int(spot), circle, True))

    def deal(self, text: str) -> list[Step]:
        return [self.do(ev.CardDrawn(card)) for card in parse_cards(text)]

    def card(self, text: str) -> Step:
        return self.do(ev.CardDrawn(parse_cards(text)[0]))

    def snapshot(self) -> dict:
        return self.table.snapshot()

    @property
    def phase(self) -> Phase:
        return self.table.state.phase

    def key_on(self) -> None:
        self.do(ev.SupervisorKey(True))


def prompts(effects: Iterable[Effect] | Step, code: str | None = None) -> list[str]:
    items = effects.effects if isinstance(effects, Step) else effects
    return [e.text for e in items if isinstance(e, Prompt) and code in (None, e.code)]


def alarms(effects: Iterable[Effect] | Step) -> list[Alarm]:
    items = effects.effects if isinstance(effects, Step) else effects
    return [e for e in items if isinstance(e, Alarm)]


def settled(effects: Iterable[Effect] | Step, wager: str | None = None) -> list[Settled]:
    items = effects.effects if isinstance(effects, Step) else effects
    return [e for e in items if isinstance(e, Settled) and wager in (None, e.wager)]


def publishes(effects: Iterable[Effect] | Step, topic: str) -> list[Publish]:
    items = effects.effects if isinstance(effects, Step) else effects
    return [e for e in items if isinstance(e, Publish) and e.topic == topic]


def wagers(dealer: Dealer, spot: int) -> dict[str, int]:
    for item in dealer.snapshot()["spots"]:
        if item["spot"] == spot:
            return item["wagers"]
    raise AssertionError(f"spot {spot} is not in the round")


# -- betting and lockout -------------------------------------------------------------------


def test_lockout_latches_the_side_bets_on_the_layout():
    d = Dealer("pa-standard")
    d.bets("1 main", "1 lucky_ladies", "1 blazing_7s", "2 main")
    d.do(ev.WagerAmount(1, "main", 2500))  # the dealer keys spot 1's $25
    step = d.do(ev.Lockout())
    assert prompts(step, "deal") == ["No more bets: deal spot 1 first"]
    assert wagers(d, 1) == {"main": 2500, "lucky_ladies": 100, "blazing_7s": 500}
    assert wagers(d, 2) == {"main": 1000}
    # the player takes the Lucky Ladies chips back after no more bets: the wager stands
    step = d.do(ev.BetSensor(1, "lucky_ladies", False))
    assert [a.code for a in alarms(step)] == ["bet_removed"]
    assert wagers(d, 1)["lucky_ladies"] == 100
    # amounts are locked too
    assert "locked" in d.refused(ev.WagerAmount(1, "main", 5000))
    # the round plays out: the Lucky Ladies wager is settled with the rest
    d.deal("9H 10S 7D KH 9S KC")  # spot 1: 9 K, spot 2: 10 9, dealer 7 up, K down
    d.do(ev.Next())
    d.do(ev.Next())
    assert d.phase is Phase.SETTLED
    lines = settled(d.effects, "lucky_ladies")
    assert [(x.spot, x.stake, x.outcome) for x in lines] == [(1, 100, "lose")]


def test_late_bet_is_an_alarm_and_never_a_wager():
    d = Dealer("pa-standard", spots=3)
    d.bets("1 main")
    d.do(ev.Lockout())
    # chips land on spot 1's Lucky Ladies and on spot 3 after no more bets
    step = d.do(ev.BetSensor(1, "lucky_ladies", True))
    assert [(a.code, a.spot) for a in alarms(step)] == [("late_bet", 1)]
    assert "not a wager" in alarms(step)[0].text
    assert "Return the chips" in alarms(step)[0].action
    step = d.do(ev.BetSensor(3, "main", True))
    assert [(a.code, a.spot) for a in alarms(step)] == [("late_bet", 3)]
    assert wagers(d, 1) == {"main": 1000}
    assert [s["spot"] for s in d.snapshot()["spots"]] == [1]
    # spot 3 gets no cards: the deal is spot 1, dealer, spot 1, hole card
    d.deal("10H 9D 8S 8C")
    assert d.snapshot()["spots"][0]["hands"][0]["cards"] == ["10H", "8S"]
    d.do(ev.Next())
    assert d.phase is Phase.SETTLED
    assert {(x.spot, x.wager) for x in settled(d.effects)} == {(1, "main")}


def test_a_chattering_sensor_is_one_wager():
    d = Dealer("pa-standard", spots=1)
    # the chips wobble on the circles while the player stacks them
    for on in (True, False, True, True, False, True):
        d.do(ev.BetSensor(1, "main", on))
        d.do(ev.BetSensor(1, "blazing_7s", on))
    step = d.do(ev.Lockout())
    assert wagers(d, 1) == {"main": 1000, "blazing_7s": 500}
    assert len(publishes(step, "contribution")) == 1
    d.deal("10H 9D 8S 8C")
    d.do(ev.Next())
    assert [x.wager for x in settled(d.effects)] == ["blazing_7s", "main"]


def test_one_contribution_per_locked_blazing_7s_wager_even_after_a_void():
    d = Dealer("pa-standard", spots=3)
    d.bets("1 main", "1 blazing_7s", "2 blazing_7s", "3 main", "3 blazing_7s")
    step = d.do(ev.Lockout())
    # spot 2 has no main wager: its Blazing 7's is no wager and contributes nothing
    assert [a.code for a in alarms(step)] == ["side_bet_without_main"]
    contributions = publishes(step, "contribution")
    assert [(p.payload["spot"], p.payload["stake"]) for p in contributions] == [(1, 500), (3, 500)]
    assert all(p.payload["pool"] == "blazing_7s" and p.payload["mystery"] for p in contributions)
    # two cards out, then the supervisor voids the round
    d.deal("7H 7D")
    d.key_on()
    d.do(ev.VoidRound("camera jam"))
    assert len(publishes(d.effects, "contribution")) == 2  # no second contribution
    returned = settled(d.effects, "blazing_7s")
    assert [(x.spot, x.outcome, x.returned) for x in returned] == [
        (1, "void", 500),
        (3, "void", 500),
    ]
    assert len(publishes(d.effects, "round_result")) == 1
    # the next round: the same chips, one new contribution each, under new keys
    d.do(ev.EndRound())
    step = d.do(ev.Lockout())
    keys = [p.key for p in publishes(step, "contribution")]
    assert keys == [
        "round-2/spot-1/blazing_7s/contribution",
        "round-2/spot-3/blazing_7s/contribution",
    ]


def test_wager_amounts_outside_the_limits_are_refused():
    d = Dealer("pa-standard", spots=1, main_minimum=1000, main_maximum=50000)
    assert "outside the table limits $10.00 to $500.00" in d.refused(ev.WagerAmount(1, "main", 500))
    assert "outside" in d.refused(ev.WagerAmount(1, "main", 50001))
    assert "fixed $5.00" in d.refused(ev.WagerAmount(1, "blazing_7s", 1000))
    assert "does not exist" in d.refused(ev.WagerAmount(2, "main", 1000))
    assert "no bet circle" in d.refused(ev.BetSensor(1, "bonus_16", True))


def test_blackjack_tie_bonuses_above_the_main_wager_refuse_the_lockout():
    d = Dealer("blackjack-tie", spots=1)
    d.bets("1 main", "1 blackjack_tie.tie_17", "1 blackjack_tie.tie_21")
    d.do(ev.WagerAmount(1, "blackjack_tie.tie_17", 600))
    d.do(ev.WagerAmount(1, "blackjack_tie.tie_21", 600))
    reason = d.refused(ev.Lockout())  # $12 of bonuses on a $10 main wager
    assert "spot 1" in reason
    d.do(ev.WagerAmount(1, "blackjack_tie.tie_21", 400))
    d.do(ev.Lockout())
    assert wagers(d, 1) == {
        "main": 1000,
        "blackjack_tie.tie_17": 600,
        "blackjack_tie.tie_21": 400,
    }


# -- cards nobody expects ------------------------------------------------------------------


def test_a_card_during_betting_waits_for_the_dealer_and_is_burned():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    step = d.card("5H")  # a card slides out while players still bet
    assert [a.code for a in alarms(step)] == ["unexpected_card"]
    assert "5H" in alarms(step)[0].text
    assert d.snapshot()["pending_cards"] == 1
    assert d.snapshot()["lights"]["alarm"] == "blink"
    # no lockout while it waits
    assert "waits for a decision" in d.refused(ev.Lockout())
    step = d.do(ev.Burn())
    assert prompts(step, "burn") == ["Burn card 5H"]
    assert d.snapshot()["pending_cards"] == 0
    assert "alarm" not in d.snapshot()["lights"]
    assert "no card waits" in d.refused(ev.Burn())
    d.do(ev.Lockout())


def test_after_a_shuffle_the_first_card_is_the_burn_card():
    d = Dealer("pa-standard", spots=1)
    step = d.do(ev.ShoeEvent("shuffle"))
    assert prompts(step, "shuffled") == ["Shoe shuffled: burn one card"]
    step = d.card("KD")
    assert prompts(step, "burn") == ["Burn card KD"]
    assert not alarms(step)
    assert d.snapshot()["pending_cards"] == 0
    # the next one is unexpected again
    assert [a.code for a in alarms(d.card("4D"))] == ["unexpected_card"]


@pytest.mark.parametrize("kind", ["shuffle", "new_shoe"])
def test_no_more_bets_waits_for_the_burn_card_after_a_shuffle(kind):
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    step = d.do(ev.ShoeEvent(kind))
    assert prompts(step, "shuffled")[0].endswith(": burn one card")
    assert d.snapshot()["shoe"]["burn_expected"] is True
    reason = d.refused(ev.Lockout())
    assert reason.startswith("no more bets refused: no burn card")
    assert reason.endswith("burn one card first")
    assert prompts(d.card("KD"), "burn") == ["Burn card KD"]
    assert d.snapshot()["shoe"]["burn_expected"] is False
    d.do(ev.Lockout())
    d.card("9C")
    assert d.snapshot()["spots"][0]["hands"][0]["cards"] == ["9C"]


def test_a_shuffle_noted_after_settlement_wants_its_burn_card_before_the_next_round():
    d = Dealer("double-up", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H 9D 8S 8C")
    d.do(ev.Next())
    assert d.phase is Phase.SETTLED
    d.do(ev.ShoeEvent("shuffle"))  # noted: the round's cards are still on the layout
    d.do(ev.EndRound())
    assert "burn one card first" in d.refused(ev.Lockout())
    d.card("2H")
    d.do(ev.Lockout())


@pytest.mark.parametrize("profile", ["online-6deck", "pa-standard without burn"])
def test_without_burn_after_shuffle_the_first_card_is_dealt(profile, edited):
    if profile == "online-6deck":
        rules = load_game(profile)
    else:
        rules = edited("pa-standard", ("burn_after_shuffle = true", "burn_after_shuffle = false"))
    assert rules.shoe.burn_after_shuffle is False
    d = Dealer(rules, spots=1)
    d.bets("1 main")
    step = d.do(ev.ShoeEvent("shuffle"))
    assert prompts(step, "shuffled") == ["Shoe shuffled"]
    assert d.snapshot()["shoe"]["burn_expected"] is False
    d.do(ev.Lockout())
    step = d.card("KD")  # spot 1's first card, not a burn card
    assert not prompts(step, "burn") and not alarms(step)
    assert d.snapshot()["spots"][0]["hands"][0]["cards"] == ["KD"]


def test_without_burn_after_shuffle_a_card_during_betting_is_unexpected():
    d = Dealer("online-6deck", spots=1)
    d.do(ev.ShoeEvent("new_shoe", "6 decks"))
    assert prompts(d.card("4D"), "burn") == []
    assert d.snapshot()["pending_cards"] == 1


def test_assign_during_the_initial_deal_and_a_foreign_card_cannot_be_assigned(edited):
    one_deck = edited("pa-standard", ("decks = 6", "decks = 1"))
    d = Dealer(one_deck, spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.card("QH")  # spot 1's first card
    # a second QH from a one-deck shoe: a foreign card
    step = d.card("QH")
    alarm = alarms(step)[0]
    assert alarm.code == "foreign_card" and "QH" in alarm.text
    assert "burn it" in alarm.action
    # the dealer keeps dealing: the next card queues behind it, unnamed (it could be the hole)
    step = d.card("9D")
    assert [a.code for a in alarms(step)] == ["unexpected_card"]
    assert "9D" not in json.dumps([e.to_dict() for e in step.effects])
    assert "foreign card" in d.refused(ev.Assign(0))
    assert "waits for a decision" in d.refused(ev.Next())
    step = d.do(ev.Burn())
    assert prompts(step, "decide") == ["A card still waits: burn it or assign it"]
    # the 9D was the dealer's up card
    assert "not waiting for a card" in d.refused(ev.Assign(2))
    assert "not waiting" in d.refused(ev.Assign(1, hand=1))
    step = d.do(ev.Assign(0))
    assert prompts(step, "assign") == ["A card assigned to the dealer"]
    assert d.snapshot()["dealer"]["cards"] == ["9D"]
    d.deal("8S 7C")  # spot 1's second card, the hole card
    assert d.phase is Phase.PLAYERS
    assert d.snapshot()["spots"][0]["hands"][0]["cards"] == ["QH", "8S"]
    assert d.snapshot()["dealer"]["cards"] == ["9D", "back"]


def test_a_card_after_the_round_is_settled_waits_for_a_decision():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H 9D 8S 8C")
    d.do(ev.Next())
    assert d.phase is Phase.SETTLED
    step = d.card("2S")
    assert [a.code for a in alarms(step)] == ["unexpected_card"]
    assert "waits for a decision" in d.refused(ev.EndRound())
    assert "not waiting" in d.refused(ev.Assign(0))
    d.do(ev.Burn())
    d.do(ev.EndRound())


# -- the shoe ------------------------------------------------------------------------------


def test_cut_card_lets_the_round_finish_then_lockout_waits_for_the_shuffle():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H 6D")
    step = d.do(ev.ShoeEvent("cut_card"))
    assert prompts(step, "cut_card") == ["Cut card out: finish this round, then shuffle"]
    d.deal("8S 10C")  # spot 1 18, dealer 6 + 10
    d.do(ev.Next())
    d.card("5C")  # dealer draws to 21
    assert d.phase is Phase.SETTLED
    step = d.do(ev.EndRound())
    assert prompts(step, "shuffle_now") == ["The cut card is out: shuffle before the next round"]
    assert "cut card is out" in d.refused(ev.Lockout())
    d.do(ev.ShoeEvent("shuffle"))
    assert d.snapshot()["shoe"]["dealt"] == 0
    d.card("2H")  # the burn card
    d.do(ev.Lockout())


def test_a_shuffle_reported_mid_round_waits_until_the_round_ends():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H 9D")
    step = d.do(ev.ShoeEvent("shuffle"))
    assert [a.code for a in alarms(step)] == ["shuffle_mid_round"]
    assert "Finish the round" in alarms(step)[0].action
    d.deal("8S 8C")  # the deal goes on: no burn card now
    assert d.phase is Phase.PLAYERS
    assert d.snapshot()["shoe"]["dealt"] == 4
    d.do(ev.Next())
    step = d.do(ev.EndRound())
    assert prompts(step, "shuffled") == ["Shoe shuffled: burn one card"]
    assert d.snapshot()["shoe"]["dealt"] == 0
    assert prompts(d.card("3D"), "burn") == ["Burn card 3D"]


@pytest.mark.parametrize(
    ("trouble", "words", "clear"),
    [
        (ev.ShoeEvent("door_open"), "door is open", ev.ShoeEvent("door_closed")),
        (ev.ShoeEvent("fault", "card jam"), "fault (card jam)", ev.ShoeEvent("fault_cleared")),
    ],
)
def test_an_open_door_or_a_shoe_fault_refuses_the_lockout(trouble, words, clear):
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(trouble)
    assert words in d.refused(ev.Lockout())
    d.do(clear)
    d.do(ev.Lockout())


def test_shoe_door_opened_mid_round_is_an_alarm():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    step = d.do(ev.ShoeEvent("door_open"))
    assert [a.code for a in alarms(step)] == ["shoe_door_open"]
    assert d.snapshot()["lights"]["alarm"] == "blink"


# -- void and misdeal ----------------------------------------------------------------------


def test_void_needs_the_key_and_returns_every_open_wager():
    d = Dealer("pa-standard")
    d.bets("1 main", "1 lucky_ladies", "1 twenty_one_plus_three_xtreme", "2 main", "2 blazing_7s")
    d.do(ev.WagerAmount(1, "main", 2000))
    d.do(ev.Lockout())
    d.deal("5H KS AD 6C AH 7D")  # spot 2 has blackjack against an ace: held
    assert d.phase is Phase.INSURANCE
    d.do(ev.Insurance(1, 1000))
    # settled already after the deal: 21+3 Xtreme and Blazing 7's
    assert {(x.spot, x.wager) for x in settled(d.effects)} == {
        (1, "twenty_one_plus_three_xtreme"),
        (2, "blazing_7s"),
    }
    assert "supervisor key" in d.refused(ev.VoidRound("dealer error"))
    assert "supervisor key" in d.refused(ev.Misdeal())
    d.key_on()
    step = d.do(ev.VoidRound("dealer error"))
    lines = settled(step)
    assert {(x.spot, x.wager, x.stake) for x in lines} == {
        (1, "main", 2000),
        (1, "insurance", 1000),
        (1, "lucky_ladies", 100),
        (2, "main", 1000),
    }
    assert all(x.outcome == "void" and x.returned == x.stake and x.paid == 0 for x in lines)
    assert "Return spot 1 main wager $20.00 (round void)" in prompts(step, "pay")
    result = publishes(step, "round_result")[0].payload
    assert result["void"] == "dealer error"
    assert d.phase is Phase.SETTLED
    assert "no round is in progress" in d.refused(ev.VoidRound())


def test_misdeal_during_the_initial_deal_returns_every_wager():
    d = Dealer("pa-standard")
    d.bets("1 main", "1 blazing_7s", "2 main")
    d.do(ev.Lockout())
    d.deal("5H KS 9D")
    d.key_on()
    step = d.do(ev.Misdeal())
    assert {(x.spot, x.wager, x.outcome) for x in settled(step)} == {
        (1, "main", "void"),
        (1, "blazing_7s", "void"),
        (2, "main", "void"),
    }
    assert prompts(step, "void") == ["Round 1 void (misdeal): every open wager is returned"]
    # a card drawn after the misdeal is not dealt to anyone
    assert [a.code for a in alarms(d.card("2C"))] == ["unexpected_card"]


def test_void_after_a_double_down_returns_the_double_too():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("6H 9D 5S 7C")
    d.do(ev.Double(1))
    d.key_on()
    step = d.do(ev.VoidRound())
    assert {(x.wager, x.stake, x.outcome) for x in settled(step)} == {
        ("main", 1000, "void"),
        ("double_down", 1000, "void"),
    }


# -- insurance, even money, peek -----------------------------------------------------------


def test_insurance_is_refused_after_the_next_card():
    d = Dealer("pa-standard")
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    step = d.deal("10H 9S AD 6C 9D 8C")[-1]
    assert prompts(step, "insurance_open") == ["Insurance open: dealer shows an ace"]
    # before anything else, spot 1 tries to act: press next first
    assert "insurance is open" in d.refused(ev.Double(1))
    # the dealer deals spot 1's hit: the window closes, the peek happens
    step = d.card("2S")
    assert prompts(step, "insurance_closed") == ["Insurance closed"]
    assert prompts(step, "dealer_checked") == ["Dealer does not have blackjack"]
    assert d.snapshot()["spots"][0]["hands"][0]["cards"] == ["10H", "6C", "2S"]
    reason = d.refused(ev.Insurance(2))
    assert "insurance window is not open" in reason
    assert "not open" in d.refused(ev.EvenMoney(2))


def test_insurance_limit_is_half_the_wager():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H AD 6C 9D")
    assert "at most half" in d.refused(ev.Insurance(1, 501))
    d.do(ev.Insurance(1, 500))
    assert "already has insurance" in d.refused(ev.Insurance(1, 100))


def test_blackjack_against_2_to_9_is_paid_at_once_and_against_an_ace_waits_for_the_peek():
    d = Dealer("pa-standard")
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    step = d.deal("AH 9S 7D KH 9C 10C")[-1]  # spot 1 blackjack, dealer 7 up
    assert prompts(step, "blackjack") == [
        "Spot 1: Blackjack against 7D: pay 3 to 2 now and remove the cards"
    ]
    [line] = settled(step)
    assert (line.spot, line.outcome, line.paid) == (1, "blackjack", 1500)
    # with an ace up the same blackjack is held until the peek
    d.do(ev.Next())
    d.do(ev.EndRound())
    d.do(ev.Lockout())
    step = d.deal("AH 9S AD KH 9C 8C")[-1]
    assert not settled(step)
    step = d.do(ev.Next())  # insurance closes, the peek: no blackjack
    assert prompts(step, "dealer_checked") == ["Dealer does not have blackjack"]
    assert [(x.spot, x.outcome, x.paid) for x in settled(step)] == [(1, "blackjack", 1500)]


def test_even_money_pays_a_blackjack_at_once_against_an_ace():
    d = Dealer("pa-standard")
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    step = d.deal("AH 9S AD KH 9C 8C")[-1]
    assert prompts(step, "even_money_offered") == ["Even money offered to spots 1"]
    assert "only on a blackjack" in d.refused(ev.EvenMoney(2))
    step = d.do(ev.EvenMoney(1))
    assert [(x.wager, x.outcome, x.paid) for x in settled(step)] == [("main", "blackjack", 1000)]


def test_dealer_blackjack_at_the_peek_settles_the_round():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    step = d.deal("10H KD 9C AS")[-1]  # dealer ten up, ace down
    assert prompts(step, "dealer_blackjack") == ["Dealer has blackjack"]
    assert d.phase is Phase.SETTLED
    assert [(x.wager, x.outcome) for x in settled(step)] == [("main", "lose")]
    assert d.snapshot()["dealer"]["cards"] == ["KD", "AS"]


# -- EZ Bust -------------------------------------------------------------------------------


def test_ez_bust_is_offered_only_with_2_to_6_up_and_closes_at_the_first_player_card():
    d = Dealer("pa-standard")
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    step = d.deal("10H 9S 5D 6C 9D 8C")[-1]
    assert prompts(step, "ez_bust_open") == ["EZ Bust offered to spots 1, 2"]
    d.do(ev.EzBust(2, 500))
    assert "outside the table's side-bet limits" in d.refused(ev.EzBust(1, 50))
    assert "already has an EZ Bust" in d.refused(ev.EzBust(2, 500))
    step = d.card("2S")  # spot 1 hits: the offer closes
    assert prompts(step, "ez_bust_closed") == ["EZ Bust closed"]
    assert "EZ Bust offer is not open" in d.refused(ev.EzBust(1, 500))


@pytest.mark.parametrize("up", ["7D", "AD", "KD"])
def test_no_ez_bust_offer_with_7_or_more_up(up):
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    step = d.deal(f"10H {up} 6C 9D")[-1]
    assert not prompts(step, "ez_bust_open")
    assert "EZ Bust offer is not open" in d.refused(ev.EzBust(1, 500))


def test_ez_bust_pushes_when_every_hand_busts():
    d = Dealer("pa-standard")
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    d.deal("10H 10S 5D 6C 4D 8C")  # dealer 5 up, 8 down (13: would have to draw)
    d.do(ev.EzBust(1, 500))
    d.do(ev.Next())
    d.card("KS")  # spot 1: 26, busts
    d.card("9S")  # spot 2: 23, busts
    assert d.phase is Phase.SETTLED  # the dealer does not play to completion
    assert not prompts(d.effects, "dealer_draws")
    [line] = settled(d.effects, "ez_bust")
    assert (line.outcome, line.returned, line.paid) == ("push", 500, 0)


def test_ez_bust_wins_when_the_dealer_busts():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H 6D 8C 10C")
    d.do(ev.EzBust(1, 500))
    d.do(ev.Next())
    d.do(ev.Next())  # spot 1 stands on 18
    step = d.card("9S")  # dealer 25
    [line] = settled(step, "ez_bust")
    assert (line.outcome, line.paid, line.returned) == ("win", 500, 500)


EZ_BUST_ALL_BUST = (
    "seed 000: If all players' hands bust, the dealer does not play its hand to completion and "
    "any undecided EZ Bust Blackjack bet is a push."
)


def test_ez_bust_a_paid_blackjack_is_no_bust_so_the_dealer_plays_out():
    d = Dealer("pa-standard")
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    # spot 1: A K (blackjack, paid 3 to 2 at once against 5 up); spot 2: 10 6; dealer 5 8
    d.deal("AH 10S 5D KC 6C 8C")
    assert [(x.wager, x.outcome) for x in settled(d.effects)] == [("main", "blackjack")]
    d.do(ev.EzBust(1, 500))
    d.do(ev.EzBust(2, 500))
    d.do(ev.Next())
    step = d.card("KS")  # spot 2: 26, busts; spot 1's blackjack is no bust
    assert d.phase is Phase.DEALER, EZ_BUST_ALL_BUST
    assert prompts(step, "dealer_draws") == ["Dealer draws on 13"]
    step = d.card("QD")  # dealer 23
    assert prompts(step, "dealer_stands") == ["Dealer breaks with 23"]
    lines = {(x.spot, x.outcome, x.paid, x.returned) for x in settled(step, "ez_bust")}
    assert lines == {(1, "win", 500, 500), (2, "win", 500, 500)}


def test_ez_bust_loses_when_the_dealer_played_out_for_a_blackjack_and_stood():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("AH 4D KC 8C")  # blackjack paid at once; dealer 4 8
    d.do(ev.EzBust(1, 500))
    d.do(ev.Next())
    assert d.phase is Phase.DEALER
    step = d.card("5S")  # 17: the dealer stands without busting
    [line] = settled(step, "ez_bust")
    assert (line.outcome, line.paid, line.returned) == ("lose", 0, 0)


def _surrender_then_bust(rules: HouseRules) -> Dealer:
    d = Dealer(rules)
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    d.deal("10H 10S 6D 6C 6H 9C")  # spot 1: 16, spot 2: 16, dealer 6 up, 9 down
    d.do(ev.EzBust(1, 500))
    d.do(ev.Next())
    d.do(ev.Surrender(1))
    d.card("KS")  # spot 2 busts
    return d


def test_ez_bust_a_surrendered_hand_is_no_bust_so_the_dealer_plays_out():
    """docs/profiles.md: a surrendered hand is given up, not broken."""
    d = _surrender_then_bust(load_game("pa-standard"))
    assert d.phase is Phase.DEALER, EZ_BUST_ALL_BUST
    step = d.card("QD")  # dealer 25
    [line] = settled(step, "ez_bust")
    assert (line.outcome, line.paid) == ("win", 500)


@pytest.mark.parametrize("reading", ["unless_all_bust_or_surrendered", "for_open_hands"])
def test_ez_bust_readings_where_the_dealer_stops_for_a_surrender(edited, reading):
    rules = edited(
        "pa-standard",
        ('dealer_plays_out = "unless_all_bust"', f'dealer_plays_out = "{reading}"'),
    )
    d = _surrender_then_bust(rules)
    assert d.phase is Phase.SETTLED
    [line] = settled(d.effects, "ez_bust")
    assert (line.outcome, line.returned, line.reason) == ("push", 500, "All player hands busted")


def test_ez_bust_the_earlier_reading_stops_for_a_paid_blackjack(edited):
    old, new = 'dealer_plays_out = "unless_all_bust"', 'dealer_plays_out = "for_open_hands"'
    rules = edited("pa-standard", (old, new))
    d = Dealer(rules, spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("AH 4D KC 8C")
    d.do(ev.EzBust(1, 500))
    d.do(ev.Next())
    assert d.phase is Phase.SETTLED
    [line] = settled(d.effects, "ez_bust")
    assert line.outcome == "push"


# -- player actions ------------------------------------------------------------------------


def test_surrender_is_refused_before_the_peek_in_a_no_peek_game(no_peek):
    rules = no_peek("original_wager")  # no hole card until the players are done
    d = Dealer(rules, spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H AS 6D")  # spot 1, dealer up, spot 1: no hole card
    assert d.phase is Phase.INSURANCE
    d.do(ev.Next())  # insurance closes; nobody knows whether the dealer has blackjack
    assert d.phase is Phase.PLAYERS
    reason = d.refused(ev.Surrender(1))
    assert "only after the dealer has checked for blackjack" in reason


def test_surrender_after_the_peek_returns_half():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H AS 6D 9C")
    assert "insurance is open" in d.refused(ev.Surrender(1))
    d.do(ev.Next())  # the peek: no blackjack
    step = d.do(ev.Surrender(1))
    [line] = settled(step)
    assert (line.outcome, line.returned, line.paid) == ("surrender", 500, 0)


def test_dealer_plays_out_for_16_bonus_when_every_player_busts():
    d = Dealer("double-up", spots=1)
    d.bets("1 main", "1 bonus_16")
    d.do(ev.Lockout())
    d.deal("10H 6S 6D 5C")  # player 16; dealer 6 up, 5 down
    step = d.card("KS")  # player breaks with 26
    assert [(x.wager, x.outcome) for x in settled(step)] == [("main", "lose")]
    assert prompts(step, "dealer_reveals") == ["Dealer turns the hole card: 6S 5C, 11"]
    assert prompts(step, "dealer_draws") == ["Dealer draws on 11"]
    step = d.card("5H")  # 16: the Double Up game ends on 16
    assert prompts(step, "dealer_stands") == ["Dealer stands on 16"]
    [line] = settled(step, "bonus_16")
    assert (line.stake, line.outcome, line.paid, line.pays) == (100, "win", 500, "5 to 1")


def test_without_16_bonus_the_dealer_does_not_play_when_every_player_busts():
    d = Dealer("double-up", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H 6S 6D 5C")
    step = d.card("KS")
    assert d.phase is Phase.SETTLED
    assert not prompts(step, "dealer_draws")
    assert [a.code for a in alarms(d.card("5H"))] == ["unexpected_card"]


def test_double_up_forces_the_hand_to_stand():
    d = Dealer("double-up")
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    d.deal("10H 9S 7D 7C 9D 10C")  # spot 1: 17, spot 2: 18, dealer 7 up
    assert "must equal the original wager" in d.refused(ev.DoubleUp(1, 500))
    step = d.do(ev.DoubleUp(1))
    assert prompts(step, "double_up") == ["Spot 1 Double Up $10.00: the hand stands"]
    # spot 1 is done: the next card and buttons belong to spot 2
    assert d.snapshot()["in_action"] == {"spot": 2, "hand": 0}
    assert "spot 1 is not in action; spot 2 is" in d.refused(ev.Double(1))
    d.card("2S")
    assert d.snapshot()["spots"][0]["hands"][0]["cards"] == ["10H", "7C"]
    assert d.snapshot()["spots"][1]["hands"][0]["cards"] == ["9S", "9D", "2S"]


DOUBLE_UP_RULE_4 = (
    "seed 003 rule 4: an optional Double Up wager [...] on any 2-card hand, including split "
    "hands, except for a natural blackjack"
)


def _split_to_21(hole: str) -> tuple[Dealer, Step]:
    """Double Up: spot 1 splits kings against a 9; hand 1 draws an ace: 21 in two cards."""
    d = Dealer("double-up", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal(f"KH 9S KD {hole}")  # spot 1: K K, dealer 9 up
    d.do(ev.Split(1))
    return d, d.card("AS")


def test_double_up_is_offered_on_a_split_two_card_21():
    d, step = _split_to_21("5C")
    assert d.snapshot()["in_action"] == {"spot": 1, "hand": 0}, DOUBLE_UP_RULE_4
    assert prompts(step, "action") == ["Spot 1 hand 1 to act on soft 21: stand, Double Up"]
    step = d.do(ev.DoubleUp(1))
    assert prompts(step, "double_up") == ["Spot 1 hand 1 Double Up $10.00: the hand stands"]
    assert prompts(step, "deal_card") == ["Deal spot 1 hand 2 its second card"]
    d.card("8H")  # hand 2: K 8, 18
    d.do(ev.Next())
    step = d.card("4D")  # dealer 9 5 4: 18
    lines = {(x.hand, x.wager, x.outcome, x.paid) for x in settled(step)}
    assert lines == {
        (0, "main", "win", 1000),
        (0, "double_up", "win", 1000),
        (1, "main", "push", 0),
    }
    # where no Double Up is offered the split 21 ends by itself, as before
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("10H 9S KD 7C")
    d.do(ev.Split(1))
    d.card("AS")
    assert d.snapshot()["in_action"] == {"spot": 1, "hand": 1}


def test_double_up_on_a_split_21_paid_when_the_dealer_ends_on_16():
    """Rule 10: "If the player has a total of 21, the dealer pay all active wagers including
    Double Up [...] even money"."""
    d, _ = _split_to_21("7C")
    d.do(ev.DoubleUp(1))
    d.card("7H")  # hand 2: K 7, 17
    step = d.do(ev.Next())  # dealer 9 7: 16 ends the game
    lines = {(x.hand, x.wager, x.outcome, x.paid, x.returned) for x in settled(step)}
    assert lines == {
        (0, "main", "win", 1000, 1000),
        (0, "double_up", "win", 1000, 1000),
        (1, "main", "push", 0, 1000),
    }


def test_a_split_21_that_stands_settles_without_a_double_up():
    d, _ = _split_to_21("7C")
    step = d.do(ev.Next())
    assert prompts(step, "stand") == ["Spot 1 hand 1 stands on 21"]
    assert d.snapshot()["in_action"] == {"spot": 1, "hand": 1}


def test_double_down_takes_one_card():
    d = Dealer("pa-standard")
    d.bets("1 main", "2 main")
    d.do(ev.Lockout())
    d.deal("6H 9S 7D 5C 9D 10C")  # spot 1: 11
    d.do(ev.Double(1, 500))  # "up to" the original wager
    assert "waiting for a card" in d.refused(ev.Next())
    d.card("2S")
    assert d.snapshot()["in_action"] == {"spot": 2, "hand": 0}
    hand = d.snapshot()["spots"][0]["hands"][0]
    assert (hand["cards"], hand["double_down"]) == (["6H", "5C", "2S"], 500)


def test_split_limits_pa_standard():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("8H 7D 8D 10C")
    d.do(ev.Split(1))
    d.card("8S")  # hand 1: 8 8 again
    d.do(ev.Split(1))  # three hands: the most pa-standard allows
    assert len(d.snapshot()["spots"][0]["hands"]) == 3
    d.card("8C")  # hand 1: 8 8 once more
    assert "at most 3 hands" in d.refused(ev.Split(1))
    assert "split hand cannot surrender" in d.refused(ev.Surrender(1))


def test_split_aces_once_one_card_each():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("AH 7D AD 10C")
    d.do(ev.Split(1))
    d.card("AS")  # hand 1: A A, but aces split once and take one card
    assert d.snapshot()["in_action"] == {"spot": 1, "hand": 1}
    d.card("KS")  # hand 2: A K is 21, not blackjack
    assert d.phase is Phase.DEALER or d.phase is Phase.SETTLED
    hands = d.snapshot()["spots"][0]["hands"]
    assert [h["cards"] for h in hands] == [["AH", "AS"], ["AD", "KS"]]


@pytest.mark.parametrize(("game", "allowed"), [("pa-standard", True), ("online-6deck", False)])
def test_split_ten_values_by_value_or_by_rank(game, allowed):
    d = Dealer(game, spots=1)
    d.bets("1 main")
    d.do(ev.Lockout())
    d.deal("KH 7D 10D 9C")
    if allowed:
        d.do(ev.Split(1))
    else:
        assert "same rank: KH and 10D are not" in d.refused(ev.Split(1))


def test_actions_out_of_turn_name_the_spot_in_action():
    d = Dealer("pa-standard", spots=3)
    d.bets("1 main", "2 main", "3 main")
    d.do(ev.Lockout())
    d.deal("10H 9S 8D 7C 5C 9D 2H 10C")  # dealer 7 up
    for button in (ev.Double, ev.Split, ev.Surrender, ev.DoubleUp):
        reason = d.refused(button(3))
        assert "spot 3 is not in action; spot 1 is" in reason, reason
    assert "not in action" in d.refused(ev.Double(7))
    d.do(ev.Next())  # spot 1 stands
    assert "spot 1 is not in action; spot 2 is" in d.refused(ev.Double(1))
    assert "no Double Up" in d.refused(ev.DoubleUp(2))


def test_buttons_before_the_deal_are_refused_with_the_phase():
    d = Dealer("pa-standard", spots=1)
    assert "no round is dealt" in d.refused(ev.Next())
    assert "no round has been dealt" in d.refused(ev.EndRound())
    assert "nothing to deal" in d.refused(ev.Lockout())
    d.bets("1 main")
    d.do(ev.Lockout())
    assert "initial deal is in progress" in d.refused(ev.Next())
    assert "no player is in action" in d.refused(ev.Double(1))
    assert "already locked" in d.refused(ev.Lockout())


def test_a_settled_round_shows_every_settlement_once_and_ends():
    d = Dealer("pa-standard", spots=1)
    d.bets("1 main", "1 lucky_ladies")
    d.do(ev.Lockout())
    d.deal("QH 10S QD 7C")  # spot 1: Q Q, 20 in two cards of different suits
    step = d.do(ev.Next())  # stand on 20; the dealer turns 10 7 and stands on 17
    assert prompts(step, "dealer_reveals") == ["Dealer turns the hole card: 10S 7C, 17"]
    lines = {x.wager: (x.outcome, x.pays, x.paid) for x in settled(d.effects)}
    assert lines == {"lucky_ladies": ("win", "4 to 1", 400), "main": ("win", "1 to 1", 1000)}
    assert "Pay spot 1 Lucky Ladies 4 to 1: $4.00" in prompts(d.effects, "pay")
    [result] = publishes(d.effects, "round_result")
    assert result.payload["round"] == 1
    assert prompts(step, "round_settled") == [
        "Round 1 settled: pay and collect, then press end round"
    ]
    step = d.do(ev.EndRound())
    assert d.phase is Phase.BETTING
    assert prompts(step, "place_bets") == ["Place your bets: round 2"]
