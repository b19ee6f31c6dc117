"""The main game's rules as the expected-value analysis reads them, from a profile.

:func:`game_of` turns a :class:`~controller.rules.profile.HouseRules` into a
:class:`Game`: every key of every rule section is either read here (it changes
the figure), or listed in :data:`NO_EFFECT` with the reason it cannot change the
main game's expected value at a full shoe with insurance never taken. A key in
neither (a key added to the profile format later) is refused with a
:class:`~controller.errors.ProfileError` naming it, so the analysis never
silently ignores a rule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from controller.errors import ProfileError
from controller.rules.profile import SECTIONS, HouseRules

READ = {
    "shoe": {"decks"},
    "dealer": {"soft_17", "peek", "ends_on_16", "blackjack_takes", "hole_card"},
    "blackjack": {"pays"},
    "double": {"allowed_on", "on_two_card_21", "after_split", "amount"},
    "split": {
        "match",
        "max_hands",
        "max_hands_aces",
        "split_aces_one_card",
        "two_card_21_beats_dealer_21",
    },
    "surrender": {"allowed", "after_split"},
    "double_up": {"offered", "amount", "after_split", "after_split_aces"},
}
"""Keys that enter the analysis (``amount`` keys enter as: the best amount is all or nothing)."""

NO_EFFECT = {
    "game": {
        "name": "a name",
        "title": "a name",
        "sources": "the rule cards' names",
    },
    "shoe": {
        "reshuffle_after": "the figure is for the first round after a shuffle (full shoe)",
        "burn_after_shuffle": "an unseen burn card does not change the odds of the cards after it",
    },
    "blackjack": {
        "paid_at_once_against_2_to_9": "when a natural is paid, not what it pays",
        "even_money": "even money is never taken (it is insurance)",
    },
    "insurance": {
        "offered": "insurance is never taken",
        "amount": "insurance is never taken",
        "pays": "insurance is never taken",
    },
    "mystery": {
        "offered": "a side bet's bonus, not the main game",
        "eligible_wagers": "a side bet's bonus, not the main game",
    },
}
"""Keys that cannot change the main game's expected value here, and why."""


@dataclass(frozen=True)
class Game:
    """The main game's rules, one field per rule that moves the expected value."""

    decks: int = 6
    hit_soft_17: bool = False
    ends_on_16: bool = False
    peek: bool = True
    original_bets_only: bool = False
    """Without a peek, a dealer blackjack takes the original wager only, every other wager
    returned (the published "OBO" model; a profile cannot ask for it, see :func:`game_of`)."""
    blackjack_pays: Fraction = Fraction(3, 2)
    double_totals: frozenset[int] | None = None
    double_on_21: bool = False
    double_after_split: bool = True
    split_by_rank: bool = False
    max_hands: int = 3
    max_hands_aces: int = 2
    aces_one_card: bool = True
    two_card_21_wins: bool = False
    surrender: bool = True
    surrender_after_split: bool = False
    double_up: bool = False
    double_up_after_split: bool = True
    double_up_after_split_aces: bool = False
    shoe: tuple[int, ...] | None = None
    """Counts of each value, ace first, instead of ``decks`` full decks (tests: tiny shoes)."""

    @property
    def split_limit_aces(self) -> int:
        return min(self.max_hands_aces, self.max_hands)


def check_keys(rules: HouseRules, source: str) -> None:
    """Refuse a profile with a rule key this analysis neither reads nor knows to be inert."""
    for section, cls in SECTIONS.items():
        for field in dataclasses.fields(cls):
            if "kind" not in field.metadata:
                continue
            known = READ.get(section, set()) | set(NO_EFFECT.get(section, {}))
            if field.name not in known:
                raise ProfileError(
                    source,
                    section,
                    field.name,
                    "the main game's expected value does not know this rule: no analysis",
                )


def game_of(rules: HouseRules) -> Game:
    """The :class:`Game` of a profile (its deck count as set, e.g. by ``with_decks``)."""
    check_keys(rules, rules.name)
    dealer, double, split = rules.dealer, rules.double, rules.split
    if dealer.peek == "none" and dealer.blackjack_takes == "original_wager":
        raise ProfileError(
            rules.name,
            "dealer",
            "blackjack_takes",
            "'original_wager' without a peek is not analysed: the table settles a busted "
            "hand (doubled or split) before the dealer's blackjack, so its extra wagers are "
            "lost, which the analysis's original-bets-only model (extra wagers returned) "
            "does not count; use 'all_wagers' or a peek",
        )
    totals = {"any_two": None, "9_10_11": frozenset({9, 10, 11}), "10_11": frozenset({10, 11})}
    peek = dealer.peek == "electronic"
    return Game(
        decks=rules.shoe.decks,
        hit_soft_17=dealer.hit_soft_17,
        ends_on_16=dealer.ends_on_16,
        peek=peek,
        original_bets_only=not peek and dealer.blackjack_takes == "original_wager",
        blackjack_pays=rules.blackjack.pays.ratio,
        double_totals=totals[double.allowed_on],
        double_on_21=double.on_two_card_21,
        double_after_split=double.after_split,
        split_by_rank=split.match == "rank",
        max_hands=split.max_hands,
        max_hands_aces=split.max_hands_aces,
        aces_one_card=split.split_aces_one_card,
        two_card_21_wins=split.two_card_21_beats_dealer_21,
        surrender=rules.surrender.allowed == "late",
        surrender_after_split=rules.surrender.after_split,
        double_up=rules.double_up.offered,
        double_up_after_split=rules.double_up.after_split,
        double_up_after_split_aces=rules.double_up.after_split_aces,
    )


def assumptions(game: Game) -> list[str]:
    """What the figures assume, in words, for the output and the docs."""
    notes = [
        f"{game.decks} deck{'s' if game.decks != 1 else ''}, first round after a shuffle (full "
        "shoe), one player; insurance and even money never taken; side bets excluded",
        "expected value per initial main wager, player's view; house edge = -EV; doubles, "
        "splits and Double Up wagers are part of the round",
        "dealer "
        + ("hits" if game.hit_soft_17 else "stands on")
        + " soft 17"
        + (
            "; a dealer 16 ends the game (player 21 paid, all else pushes)"
            if game.ends_on_16
            else ""
        ),
        (
            "dealer peeks: the player's decisions are made knowing the dealer has no blackjack "
            "(exact, by dealing the hole card after the player's cards)"
            if game.peek
            else "no peek: a dealer blackjack takes "
            + ("the original wager only" if game.original_bets_only else "every wager")
            + "; surrender only against 2-9 (the dealer cannot have blackjack)"
        ),
        "a double or Double Up wager is the whole original wager when made: with an 'up_to' "
        "amount the best choice is all or nothing (the expected value is linear in it)",
        "splits: each split hand is played best for its own cards with the pair cards that "
        "began the split hands so far removed (resplit pair cards counted exactly as hands "
        "form, in the order they are dealt); the cards other split hands drew are not removed "
        "(as in the usual combinatorial analysers, e.g. MGP's CA); a pair is resplit whenever "
        "it may be once split",
    ]
    notes.append(
        "basic strategy: one action per hard or soft total, pair and up card, chosen by the "
        "summed value of the hands of that total (docs/par-sheet.md); the optimal strategy: "
        "each decision best for the cards of the hand and the up card"
    )
    if game.split_by_rank:
        notes.append(
            "split by rank: ten-value cards pair only with the same rank; resplitting tens "
            "counts the same rank's cards less those out (the up card's rank averaged)"
        )
    return notes
