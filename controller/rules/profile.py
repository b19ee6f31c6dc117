"""House-rule profiles: one TOML document per game, checked key by key.

A profile says everything the table needs to know about a game: the shoe, how
the dealer plays, blackjack, insurance, doubling, splitting, surrender, the
Double Up wager and every side bet with its paytable. Keys a rule card leaves
open have documented defaults (``docs/profiles.md``, made by
``table-controller profile-keys``). A side bet is offered only when its section
is present.

This module is pure: :func:`parse_profile` takes TOML text and the name of
where it came from; finding and reading files is :mod:`controller.games`.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from controller.errors import ProfileError
from controller.rules.pays import Odds
from controller.rules.schema import KeyDoc, Where, describe, key, read_section
from controller.rules.sidebets.blackjack_tie import BlackjackTieRules
from controller.rules.sidebets.blazing_7s import Blazing7sRules
from controller.rules.sidebets.bonus_16 import Bonus16Rules
from controller.rules.sidebets.ez_bust import EzBustRules
from controller.rules.sidebets.lucky_ladies import LuckyLadiesRules
from controller.rules.sidebets.xtreme import XtremeRules


@dataclass(frozen=True)
class GameInfo:
    """``[game]``: what the profile is."""

    name: str = key("", "profile name, as given to --game (defaults to the file name)")
    title: str = key("", "the game's name for people (prompts, par sheets)")
    sources: tuple[str, ...] = key((), "the rule cards this profile implements")


@dataclass(frozen=True)
class ShoeRules:
    """``[shoe]``."""

    decks: int = key(6, "52-card decks in the shoe", minimum=1, maximum=8)
    reshuffle_after: Fraction = key(
        Fraction(3, 4),
        "share of the shoe dealt before the cut card calls a reshuffle",
        minimum=Fraction(1, 4),
        maximum=Fraction(9, 10),
    )
    burn_after_shuffle: bool = key(
        True,
        "after a shuffle or a new shoe the dealer burns one card before the first round: no "
        "more bets is refused until it came out of the shoe; off: no burn card is expected",
    )


@dataclass(frozen=True)
class DealerRules:
    """``[dealer]``."""

    soft_17: str = key("stand", "dealer stands or hits on a soft 17", choices=("stand", "hit"))
    hole_card: str = key(
        "face_down",
        "'face_down': the dealer's second card is dealt face down in the initial deal; "
        "'after_players': it is dealt only when the players are done",
        choices=("face_down", "after_players"),
    )
    peek: str = key(
        "electronic",
        "'electronic': with an ace or ten-value up, a reader tells only whether the dealer "
        "has blackjack, before the players act; 'none': nobody knows until the dealer's turn",
        choices=("electronic", "none"),
    )
    ends_on_16: bool = key(
        False, "a dealer total of 16 ends the game (Double Up Blackjack rule 10)"
    )
    blackjack_takes: str = key(
        "all_wagers",
        "without a peek, what a dealer blackjack takes from a hand that doubled or split: "
        "'all_wagers', or 'original_wager' only (the rest is returned)",
        choices=("all_wagers", "original_wager"),
    )

    @property
    def hit_soft_17(self) -> bool:
        return self.soft_17 == "hit"

    def check(self) -> tuple[str, str] | None:
        if self.hole_card == "after_players" and self.peek == "electronic":
            return "peek", 'an electronic peek needs a hole card; set peek = "none"'
        return None


@dataclass(frozen=True)
class BlackjackRules:
    """``[blackjack]``: the natural."""

    pays: Odds = key(Odds(3, 2), "what a natural pays", choices=(Odds(3, 2), Odds(6, 5)))
    paid_at_once_against_2_to_9: bool = key(
        True,
        "a natural against a 2-9 up card is paid and removed before any third card; "
        "against an ace or ten-value it waits for the dealer's second card or peek",
    )
    even_money: bool = key(
        True, "a player with blackjack may take even money when the dealer shows an ace"
    )


@dataclass(frozen=True)
class InsuranceRules:
    """``[insurance]``."""

    offered: bool = key(True, "insurance is offered when the dealer shows an ace")
    amount: str = key(
        "up_to_half",
        "'up_to_half' of the initial wager, or 'fixed_half' exactly",
        choices=("up_to_half", "fixed_half"),
    )
    pays: Odds = key(Odds(2, 1), "what winning insurance pays")


@dataclass(frozen=True)
class DoubleRules:
    """``[double]``: doubling down."""

    allowed_on: str = key(
        "any_two", "which two-card totals may double", choices=("any_two", "9_10_11", "10_11")
    )
    on_two_card_21: bool = key(False, "a two-card 21 (for example split ace and ten) may double")
    after_split: bool = key(True, "the first two cards of a split hand may double")
    amount: str = key(
        "up_to",
        "the additional wager is 'up_to' the original wager, or 'equal' to it",
        choices=("up_to", "equal"),
    )


@dataclass(frozen=True)
class SplitRules:
    """``[split]``."""

    match: str = key(
        "value",
        "'value': any two cards of the same value split (J-K); 'rank': only the same rank (J-J)",
        choices=("value", "rank"),
    )
    max_hands: int = key(
        3, "most hands a spot may split into (1: no splitting)", minimum=1, maximum=8
    )
    max_hands_aces: int = key(
        2, "most hands a pair of aces may split into (2: aces split once)", minimum=1, maximum=8
    )
    split_aces_one_card: bool = key(
        True, "each split ace receives one card only (no hit, no double)"
    )
    two_card_21_beats_dealer_21: bool = key(
        False,
        "a split hand's 21 in two cards beats a dealer's 21 of three or more cards and is paid "
        "1 to 1 (it is no blackjack); false: the two 21s push",
    )


@dataclass(frozen=True)
class SurrenderRules:
    """``[surrender]``."""

    allowed: str = key(
        "late",
        "'late': after the dealer checked for blackjack, on the first two cards, half the "
        "wager back; 'none'",
        choices=("late", "none"),
    )
    after_split: bool = key(False, "a split hand may surrender")


@dataclass(frozen=True)
class DoubleUpRules:
    """``[double_up]``: Double Up Blackjack's extra wager (seed 003 rules 4-8)."""

    offered: bool = key(False, "the Double Up wager is offered")
    amount: str = key(
        "equal",
        "'equal' to the original wager, or 'up_to' it (rule 4a, at the licensee's discretion)",
        choices=("equal", "up_to"),
    )
    after_split: bool = key(True, "split hands may Double Up (rule 4: 'including split hands')")
    after_split_aces: bool = key(
        True,
        "split aces may Double Up (rule 4: 'any 2-card hand, including split hands'; rule 15 "
        "forbids only hitting and doubling down after split aces); false closes them",
    )


@dataclass(frozen=True)
class SideBets:
    """``[side_bets.*]``: a side bet is offered only if its section is present."""

    lucky_ladies: LuckyLadiesRules | None = None
    twenty_one_plus_three_xtreme: XtremeRules | None = None
    blazing_7s: Blazing7sRules | None = None
    ez_bust: EzBustRules | None = None
    bonus_16: Bonus16Rules | None = None
    blackjack_tie: BlackjackTieRules | None = None

    def offered(self) -> tuple[str, ...]:
        """Names of the side bets this game offers."""
        return tuple(f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None)


SIDE_BET_SECTIONS: dict[str, type] = {
    "lucky_ladies": LuckyLadiesRules,
    "twenty_one_plus_three_xtreme": XtremeRules,
    "blazing_7s": Blazing7sRules,
    "ez_bust": EzBustRules,
    "bonus_16": Bonus16Rules,
    "blackjack_tie": BlackjackTieRules,
}

PROGRESSIVE_WAGERS = frozenset({"blazing_7s"})
"""Side bets that are progressive wagers (they feed a meter)."""


@dataclass(frozen=True)
class MysteryRules:
    """``[mystery]``: eligibility for the Must-Hit-By Mystery bonus (seeds 000, 001)."""

    offered: bool = key(False, "the table takes part in the Must-Hit-By Mystery bonus")
    eligible_wagers: tuple[str, ...] = key(
        ("blazing_7s",),
        "progressive wagers that make a player eligible (the card's 'Five Card Progressive "
        "wager' is this table's progressive side bet)",
    )


SECTIONS: dict[str, type] = {
    "game": GameInfo,
    "shoe": ShoeRules,
    "dealer": DealerRules,
    "blackjack": BlackjackRules,
    "insurance": InsuranceRules,
    "double": DoubleRules,
    "split": SplitRules,
    "surrender": SurrenderRules,
    "double_up": DoubleUpRules,
    "mystery": MysteryRules,
}


@dataclass(frozen=True)
class HouseRules:
    """A complete house-rule profile."""

    game: GameInfo
    shoe: ShoeRules
    dealer: DealerRules
    blackjack: BlackjackRules
    insurance: InsuranceRules
    double: DoubleRules
    split: SplitRules
    surrender: SurrenderRules
    double_up: DoubleUpRules
    mystery: MysteryRules
    side_bets: SideBets

    @property
    def name(self) -> str:
        return self.game.name

    def with_decks(self, decks: int) -> HouseRules:
        """The same profile dealt from ``decks`` decks (for par sheets)."""
        shoe = read_section(ShoeRules, {"decks": decks}, Where("--decks", "shoe"))
        shoe = dataclasses.replace(self.shoe, decks=shoe.decks)
        return dataclasses.replace(self, shoe=shoe)


def parse_profile(text: str, source: str, *, default_name: str = "") -> HouseRules:
    """Parse and check profile TOML ``text``; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(source, "", None, f"not valid TOML: {exc}") from None
    allowed = set(SECTIONS) | {"side_bets"}
    for name in data:
        if name not in allowed:
            raise ProfileError(
                source,
                name,
                None,
                f"unknown section; allowed sections: {', '.join(sorted(allowed))}",
            )
    top = Where(source, "")
    sections = {
        name: read_section(cls, data.get(name), top.child(name)) for name, cls in SECTIONS.items()
    }
    if not sections["game"].name:
        sections["game"] = dataclasses.replace(sections["game"], name=default_name)
    side_bets = _read_side_bets(data.get("side_bets"), top.child("side_bets"))
    mystery = sections["mystery"]
    offered_progressives = sorted(PROGRESSIVE_WAGERS & set(side_bets.offered()))
    for wager in mystery.eligible_wagers if mystery.offered else ():
        if wager not in offered_progressives:
            raise ProfileError(
                source,
                "mystery",
                "eligible_wagers",
                f"'{wager}' is not a progressive side bet of this profile; progressive side "
                f"bets offered here: {', '.join(offered_progressives) or 'none'}",
            )
    if mystery.offered and not mystery.eligible_wagers:
        raise ProfileError(
            source,
            "mystery",
            "eligible_wagers",
            "the mystery bonus needs at least one eligible wager",
        )
    return HouseRules(side_bets=side_bets, **sections)


def _read_side_bets(table: object, where: Where) -> SideBets:
    if table is None:
        return SideBets()
    if not isinstance(table, dict):
        raise where.error(None, "must be a table of side bet sections")
    unknown = sorted(set(table) - set(SIDE_BET_SECTIONS))
    if unknown:
        raise where.error(
            None, f"unknown side bet '{unknown[0]}'; side bets: {', '.join(SIDE_BET_SECTIONS)}"
        )
    bets = {
        name: read_section(SIDE_BET_SECTIONS[name], section, where.child(name))
        for name, section in table.items()
    }
    return SideBets(**bets)


def describe_keys() -> Iterator[KeyDoc]:
    """Every profile key with its default, what is allowed and what it means."""
    for name, cls in SECTIONS.items():
        yield from describe(cls, name)
    for name, cls in SIDE_BET_SECTIONS.items():
        yield from describe(cls, f"side_bets.{name}")


def profile_keys_markdown() -> str:
    """The key reference of ``docs/profiles.md`` (``table-controller profile-keys``)."""
    lines = ["| section | key | default | allowed | meaning |", "|---|---|---|---|---|"]
    for doc in describe_keys():
        cells = [f"`[{doc.section}]`", f"`{doc.name}`", f"`{doc.default}`", doc.allowed, doc.doc]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
