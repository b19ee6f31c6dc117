"""The rules of each table message kind, as the ledger applies them (jackpot/ledger.py): a
contribution moves the meters (and may hit the Must-Hit-By Mystery), a round result is kept as
the proof of the round's cards, a hit claim is paid only on that proof, an award confirm
commits an offered award, an event is kept. Each refuses (:class:`Refused`) what is off the
game's terms, out of order or unproven, and does so before its first write: every check of a
kind runs before it writes a row or moves a meter, so a refused message has written nothing and
the ledger needs no savepoint a message (it records the refusal and goes on). A mixin of
:class:`~jackpot.ledger.Ledger`: its methods run inside the ledger's batch transaction and
write through the ledger's ``_move``, ``_set_meter``, ``_insert`` and ``_insert_award`` (so
the chains, the batch's kept meters and its rows written at its end stay right).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from fractions import Fraction
from typing import Any

from controller.errors import CardError, ProfileError
from controller.games import load_game
from controller.rules.cards import parse_cards
from controller.rules.pays import MeterShare
from controller.rules.profile import PROGRESSIVE_WAGERS, HouseRules
from controller.rules.sidebets import blazing_7s
from jackpot import chain as chains
from jackpot import events
from jackpot.draws import next_low
from jackpot.ledger_results import AWARD_COLUMNS, Award, Refused
from jackpot.pools import (
    ProgressivePool,
    contribution,
    mystery_ceiling_problem,
    mystery_step,
    parse_share,
    share_award,
)

#: The kinds whose own first statement asks whether the key was applied before (the ledger
#: asks it for the others).
KEY_ASKED_BY_KIND = ("contribution", "round_result")


class KindRules:
    """The kinds' rules (``_apply_<kind>``), mixed into the ledger."""

    def _key_replay(self, message: dict[str, Any], found: Any) -> None:
        """Refuse ``message`` if its key was applied before (``found``: the ledger's
        answer, truthy if so): a replay under a new sequence number."""
        if found or (message["table"], message["key"]) in self._batch_keys:
            reason = f"key {message['key']!r} was already applied (a replay)"
            raise Refused("key_replay", reason, self._claim_refusal(message, reason))

    # -- the terms of a table's game -------------------------------------------------------

    def _profile(self, table: str, game: str, alarm: str) -> HouseRules:
        """The profile ``game``, which ``table`` must be allowed to run."""
        allowed = self.config.games_for(table)
        if allowed is not None and game not in allowed:
            raise Refused(
                alarm,
                f"table {table} may run only {', '.join(allowed)}, not {game!r}: list the game "
                "under the table's or its property's games in the jackpot config if approved",
            )
        if game not in self._games:
            try:
                if game.endswith(".toml"):  # load_game would take it for a file path
                    raise ProfileError(game, "", None, "a profile name, not a file")
                self._games[game] = load_game(game)
            except ProfileError as exc:
                raise Refused(alarm, f"game {game!r} is not a known profile: {exc}") from None
        return self._games[game]

    def _wager_terms(
        self, table: str, p: dict[str, Any], alarm: str
    ) -> tuple[HouseRules, Any, ProgressivePool]:
        """The game's profile, its side bet for the payload's wager and the pool it feeds;
        the stake must be the wager the game fixes, the spot one the table has. Refused
        (``alarm``) otherwise."""
        if problem := self.config.spot_problem(table, p["spot"]):  # issue 26: spot 9 of 7
            raise Refused(alarm, problem)
        profile = self._profile(table, p["game"], alarm)
        game, wager = p["game"], p["wager"]
        rules = getattr(profile.side_bets, wager) if wager in PROGRESSIVE_WAGERS else None
        if rules is None:
            raise Refused(alarm, f"game {game!r} has no progressive wager {wager!r}")
        if rules.pool != p["pool"]:
            raise Refused(
                alarm, f"game {game!r} feeds its {wager} wager to pool {rules.pool!r}, "
                f"not {p['pool']!r}"
            )  # fmt: skip
        pool = self.config.pools.get(p["pool"])
        if not isinstance(pool, ProgressivePool) or wager not in pool.wagers:
            raise Refused(alarm, f"no progressive pool {p['pool']!r} fed by wager {wager!r}")
        if p["stake"] != rules.wager:  # the profile fixes the wager (Blazing 7's: $5)
            raise Refused(
                alarm, f"stake {p['stake']} cents is not the {rules.wager} cent {wager} "
                f"wager game {game!r} fixes"
            )  # fmt: skip
        return profile, rules, pool

    # -- the kinds ---------------------------------------------------------------------------

    def _apply_contribution(self, message: dict[str, Any]) -> list[Award]:
        table, seq, p = message["table"], message["seq"], message["payload"]
        terms = "contribution_terms"
        # the key's replay check and what the table reported and contributed so far, in one
        # statement (one round trip to PostgreSQL instead of five), checked in the order of
        # the rules below (the pool as the payload names it: the twin matters only once
        # _wager_terms found that very pool)
        # (PostgreSQL: read for the whole batch at its start, jackpot/ledger_facts.py)
        facts = self._facts
        if facts is not None and facts.known(message):
            replayed, reported, last_reported, latest, twin = facts.contribution(message)
        else:
            self._written("contributions", "round_results")
            replayed, reported, last_reported, latest, twin = self._db.execute(
                "SELECT EXISTS (SELECT 1 FROM applied WHERE table_id=? AND key=?),"
                " (SELECT seq FROM round_results WHERE table_id=? AND round=?),"
                " (SELECT MAX(round) FROM round_results WHERE table_id=?),"
                " (SELECT MAX(round) FROM contributions WHERE table_id=?),"
                " (SELECT seq FROM contributions"
                "  WHERE table_id=? AND round=? AND spot=? AND pool=?)",
                (table, message["key"], table, p["round"], table, table, table, p["round"],
                 p["spot"], p["pool"]),
            ).fetchone()  # fmt: skip
        self._key_replay(message, replayed)
        profile, _, pool = self._wager_terms(table, p, terms)
        eligible = profile.mystery.offered and p["wager"] in profile.mystery.eligible_wagers
        if p["mystery"] != eligible:
            raise Refused(
                terms, f"game {p['game']!r} makes the {p['wager']} wager "
                f"{'' if eligible else 'not '}eligible for the Mystery; the contribution says "
                f"mystery={json.dumps(p['mystery'])}"
            )  # fmt: skip
        mystery = self.config.mystery_for(p["wager"]) if eligible else None
        if eligible and mystery is None:
            raise Refused(terms, f"no Mystery pool is fed by wager {p['wager']!r}")
        if reported is not None:
            raise Refused(
                terms, f"round {p['round']} was already reported (seq {reported}): a "
                "contribution comes at no more bets, before the round's result"
            )  # fmt: skip
        if last_reported is not None and p["round"] < last_reported:
            raise Refused(
                terms, f"a contribution for round {p['round']} is before round "
                f"{last_reported}, which the table already reported: a table's rounds only "
                "go forward"
            )  # fmt: skip
        if latest is not None and p["round"] < latest:
            raise Refused(
                terms, f"a contribution for round {p['round']} after one for round {latest}: "
                "a table's rounds only go forward"
            )  # fmt: skip
        if twin is not None:
            raise Refused(
                "contribution_duplicate", f"round {p['round']} spot {p['spot']} already "
                f"contributed to {pool.name} (seq {twin}): one contribution per spot and round"
            )  # fmt: skip
        # the Mystery's checks too, before the first write: a refused contribution writes
        # nothing (the ledger keeps no savepoint a message)
        step = cycle = None
        if mystery is not None:
            added_mystery = contribution(mystery, p["stake"])
            meter = self._meter(mystery.name)
            if problem := mystery_ceiling_problem(mystery, added_mystery):
                raise Refused(
                    "mystery_ceiling",
                    f"{mystery.name}: {problem} ({mystery.must_hit_by} cents): the pool's "
                    "contribution is too large for its range; fix the jackpot config",
                )
            trigger, cycle = self.draws.live(mystery.name)
            try:
                step = mystery_step(mystery, meter, added_mystery, trigger)
            except ValueError as exc:  # only after a restart above a fresh trigger
                raise Refused("mystery_ceiling", f"{exc}: the contribution is refused") from None
            del trigger
        self._insert("contributions", (table, p["round"], p["spot"], pool.name, seq))
        if facts is not None:  # the batch's facts follow its own rows
            if facts.known(message):
                facts.contributed(table, p["round"], p["spot"], pool.name, seq)
            else:
                self._facts = None
        added = contribution(pool, p["stake"])
        self._move(pool.name, table, seq, "contribution", added)
        self._set_meter(pool.name, self._meter(pool.name) + added)
        if mystery is None:
            return []
        self._move(mystery.name, table, seq, "contribution", added_mystery)
        if not step.hit:
            self._set_meter(mystery.name, step.meter)
            return []
        self._move(mystery.name, table, seq, "award", Fraction(-step.award))
        self._move(mystery.name, table, seq, "seed", Fraction(mystery.seed))
        self._move(mystery.name, table, seq, "excess", step.excess)
        order = self._hits(mystery.name) + 1
        self._set_meter(mystery.name, step.meter, hit=True)
        # the next trigger: never below the meter now showing (rounded up), so no award is
        # less than what a sign displayed (docs/profiles.md, "Must-Hit-By Mystery")
        self.draws.end(mystery.name, "hit", self._now, f"{table}/{seq}")
        self._db.execute("UPDATE mystery SET cycle=? WHERE pool=?", (cycle + 1, mystery.name))
        low = next_low(mystery.must_hit_from, step.meter)
        self.draws.draw(mystery.name, cycle + 1, low, mystery.must_hit_by, self._now, self._day)
        award = Award(f"{table}/{seq}", table, "offered", seq, message["key"], p["round"],
                      p["spot"], mystery.name, "100% of meter", step.award, order, None,
                      step.award)  # fmt: skip
        self._insert_award(award)
        return [award]

    def _apply_round_result(self, message: dict[str, Any]) -> list[Award]:
        """Recorded as the proof of the round's cards; no money moves."""
        table, p = message["table"], message["payload"]
        # the key's replay check and the table's reports so far: one statement
        facts = self._facts
        if facts is not None and facts.known(message):
            replayed, reported, last = facts.round_result(message)
        else:
            self._written("round_results")
            replayed, reported, last = self._db.execute(
                "SELECT EXISTS (SELECT 1 FROM applied WHERE table_id=? AND key=?),"
                " (SELECT seq FROM round_results WHERE table_id=? AND round=?),"
                " (SELECT MAX(round) FROM round_results WHERE table_id=?)",
                (table, message["key"], table, p["round"], table),
            ).fetchone()
        self._key_replay(message, replayed)
        profile = self._profile(table, p["game"], "round_result_terms")
        for spot in sorted({s["spot"] for s in p["spots"] + p["settlements"]}):
            if problem := self.config.spot_problem(table, spot):
                raise Refused("round_result_terms", problem)
        if reported is not None:
            raise Refused(
                "round_result_duplicate",
                f"round {p['round']} was already reported (seq {reported}): one result a round",
            )
        _forward(last, p["round"], "round_result_order", "the result of")
        if problem := _cards_problem(p, profile.shoe.decks):
            raise Refused("round_result_cards", problem)
        self._insert("round_results", (table, p["round"], message["seq"]))
        if facts is not None:  # the batch's facts follow its own rows
            if facts.known(message):
                facts.reported(table, p["round"], message["seq"])
            else:
                self._facts = None
        return []

    @staticmethod
    def _claim_refusal(message: dict[str, Any], reason: str) -> tuple[Award, ...]:
        """The refused award that answers a hit claim (nothing for other kinds)."""
        if message["kind"] != "hit_claim":
            return ()
        table, seq, p = message["table"], message["seq"], message["payload"]
        return (Award(f"{table}/{seq}", table, "refused", seq, message["key"], p["round"],
                      p["spot"], p["pool"], p["meter"], 0, None, reason),)  # fmt: skip

    def _apply_hit_claim(self, message: dict[str, Any]) -> list[Award]:
        table, seq, p = message["table"], message["seq"], message["payload"]

        def refuse(alarm: str, reason: str) -> Refused:
            return Refused(alarm, reason, self._claim_refusal(message, reason))

        try:
            profile, rules, pool = self._wager_terms(table, p, "claim_terms")
        except Refused as exc:
            raise refuse(exc.alarm, exc.reason) from None
        if p["meter"] not in pool.lines:
            raise refuse("claim_terms", f"{p['meter']!r} is not a line of pool {pool.name!r}")
        if p["wager"] != blazing_7s.BET:  # pragma: no cover - the only progressive wager
            raise refuse("claim_terms", f"no evaluator for wager {p['wager']!r}")
        # the proof: the round as the table reported it before the claim (PostgreSQL: the
        # claim's three reads asked for the whole batch at its start, jackpot/ledger_facts.py)
        rnd, spot_no = p["round"], p["spot"]
        facts = None if self._facts is None else self._facts.claim(message, pool.name)
        row = self._batch_results.get((table, rnd))  # reported earlier in this batch
        if row is not None:
            row = (row,)
        elif facts is not None:
            row = None if facts[0] is None else (facts[0],)
        else:  # (a round result of this batch is in _batch_results: no need to write them)
            row = self._db.execute(
                "SELECT a.message FROM round_results r JOIN applied a"
                " ON a.table_id=r.table_id AND a.seq=r.seq WHERE r.table_id=? AND r.round=?",
                (table, rnd),
            ).fetchone()
        if row is None:
            raise refuse(
                "claim_unproven", f"round {rnd} has no round_result from {table}: a table "
                "publishes the round's result, with every spot's cards, before its claims"
            )  # fmt: skip
        result = json.loads(row[0])["payload"]
        if result["game"] != p["game"]:
            raise refuse("claim_unproven", f"round {rnd} was reported as {result['game']!r}")
        spot = next((s for s in result["spots"] if s["spot"] == spot_no), None)
        dealer = result["dealer"]
        if spot is None or p["cards"] != spot["first_two"] or dealer[:1] != [p["up_card"]]:
            shown = f"{spot['first_two'] if spot else 'no cards'} and up card {dealer[:1]}"
            raise refuse(
                "claim_cards", f"the claim's cards {p['cards']} and up card {p['up_card']} are "
                f"not round {rnd} spot {spot_no} as reported: {shown}"
            )  # fmt: skip
        if problem := _cards_problem(result, profile.shoe.decks):
            raise refuse("claim_cards", problem)
        if not any(
            (s["spot"], s["wager"], s.get("pool"), s.get("meter"), s["stake"], s["outcome"])
            == (spot_no, p["wager"], pool.name, p["meter"], p["stake"], "win")
            and s["reason"] == p["line"]
            for s in result["settlements"]
        ):
            raise refuse(
                "claim_unproven", f"round {rnd}'s result settled no {p['line']!r} "
                f"({p['meter']}) on spot {spot_no}'s {p['wager']} wager of pool {pool.name}"
            )  # fmt: skip
        if facts is not None:
            contributed, awarded = facts[1], facts[2]
        else:
            self._written("contributions")
            contributed = self._db.execute(
                "SELECT 1 FROM contributions WHERE table_id=? AND round=? AND spot=? AND pool=?",
                (table, rnd, spot_no, pool.name),
            ).fetchone()
            awarded = None
        if not contributed:
            raise refuse("claim_unproven", f"no contribution from round {rnd} spot {spot_no}")
        if facts is None:
            awarded = self._db.execute(
                "SELECT 1 FROM awards WHERE table_id=? AND round=? AND spot=? AND pool=?"
                " AND state!='refused'",
                (table, rnd, spot_no, pool.name),
            ).fetchone()
        if awarded:
            raise refuse("claim_duplicate", f"round {rnd} spot {spot_no} was already awarded")
        try:
            first_two = parse_cards(" ".join(p["cards"]))
            (up_card,) = parse_cards(p["up_card"])
            won = blazing_7s.evaluate(first_two, up_card, rules)
        except (CardError, ValueError) as exc:
            raise refuse("claim_cards", f"cards not evaluable: {exc}") from None
        if not won.wins or not isinstance(won.pays, MeterShare):
            raise refuse("claim_cards", f"the cards do not qualify for {p['meter']!r}: {won.label}")
        if won.pays.percent != parse_share(p["meter"]):
            raise refuse(
                "claim_cards", f"the cards make {won.label!r} ({won.pays}), not {p['meter']!r}"
            )
        meter = self._meter(pool.name)
        before = math.floor(meter)  # the whole cents the award is a share of
        amount = share_award(Fraction(before), won.pays.percent)
        if amount < 1:
            raise refuse("claim_terms", "the meter holds less than a cent")
        self._move(pool.name, table, seq, "award", Fraction(-amount))
        after = meter - amount
        if won.pays.percent == 100:
            self._move(pool.name, table, seq, "seed", Fraction(pool.reset))
            after += pool.reset
        order = self._hits(pool.name) + 1
        self._set_meter(pool.name, after, hit=True)
        offered = Award(f"{table}/{seq}", table, "offered", seq, message["key"], rnd, spot_no,
                        pool.name, p["meter"], amount, order, None, before)  # fmt: skip
        self._insert_award(offered)
        return [offered]

    def _apply_award_confirm(self, message: dict[str, Any]) -> list[Award]:
        p, alarm = message["payload"], "confirm_mismatch"
        row = self._db.execute(
            f"SELECT {AWARD_COLUMNS}, chain FROM awards WHERE award_id=?", (p["award_id"],)
        ).fetchone()
        if row is None:
            raise Refused(alarm, f"no award {p['award_id']!r}")
        award, link = Award(*row[:-1]), row[-1]
        if award.table != message["table"]:
            raise Refused(alarm, f"award {award.award_id!r} belongs to another table")
        if award.state != "offered":
            raise Refused(alarm, f"award {award.award_id!r} is {award.state}, not offered")
        if (p["amount"], p["pool"], p["round"], p["spot"]) != (
            award.amount, award.pool, award.round, award.spot
        ):  # fmt: skip
            raise Refused(alarm, f"the confirm does not match award {award.award_id!r}")
        self._db.execute(
            "UPDATE awards SET state='committed', confirm_seq=?, committed_utc=?,"
            " confirm_chain=? WHERE award_id=?",
            (message["seq"], self._now,
             None if link is None else chains.confirm_link(link, message["seq"], self._now),
             award.award_id),
        )  # fmt: skip
        return [Award(**{**vars(award), "state": "committed"})]

    def _apply_event(self, message: dict[str, Any]) -> list[Award]:
        """A table's significant event, kept in ``events`` (jackpot/events.py: refused on no
        term, both clocks stored); no meter moves."""
        events.record(self._db, message, self._now, self._day)
        return []


def _forward(last: int | None, rnd: int, alarm: str, what: str) -> None:
    """Refuse round ``rnd`` if it is before ``last``, the table's last reported round: a
    table's rounds only go forward (a stolen key cannot reopen a settled round, nor reuse an
    old round number)."""
    if last is not None and rnd < last:
        raise Refused(
            alarm, f"{what} round {rnd} is before round {last}, which the table already "
            "reported: a table's rounds only go forward"
        )  # fmt: skip


def _cards_problem(result: dict[str, Any], decks: int) -> str | None:
    """What makes a round_result payload's cards impossible in a shoe of ``decks`` decks:
    a spot listed twice, first two cards that are not among the spot's hands, or a card
    dealt (dealer and every hand) more often than the shoe holds it (the first such card in
    sorted order). None if possible. The cards are counted once, in C (``Counter``), and
    only where there are more of them than decks (15 -> 5 us a result)."""
    dealt = list(result["dealer"])
    spots: set[int] = set()
    for spot in result["spots"]:
        number = spot["spot"]
        if number in spots:
            return f"round {result['round']}: spot {number} is listed twice"
        spots.add(number)
        hands = spot["hands"]
        held = hands[0] if len(hands) == 1 else [card for hand in hands for card in hand]
        first_two = spot["first_two"]
        for card in first_two:
            if held.count(card) < first_two.count(card):
                return (
                    f"round {result['round']}: spot {number}'s first two cards "
                    f"{spot['first_two']} are not in its hands {spot['hands']}"
                )
        dealt += held
    if len(dealt) <= decks:  # no card can be dealt more often than decks
        return None
    counts = Counter(dealt)
    if max(counts.values()) <= decks:
        return None
    for card, count in sorted(counts.items()):
        if count > decks:
            return (
                f"round {result['round']}: card {card} was dealt {count} times; a {decks}-deck "
                f"shoe holds it {decks} times"
            )
    return None
