"""Cards, ranks, suits and shoe compositions.

Card text is rank then suit: ``QH``, ``10D`` or ``TD``, ``AS``. Parsing is
case-insensitive; formatting always gives the canonical form.

>>> parse_card("td")
Card(rank=<Rank.TEN: 10>, suit=<Suit.DIAMONDS: 'D'>)
>>> str(parse_card("QH")), str(parse_card("TD"))
('QH', '10D')
>>> parse_card("QH").value, parse_card("AS").value
(10, 1)
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from controller.errors import CardError


class Suit(enum.Enum):
    """A card suit; the value is its one-letter code."""

    CLUBS = "C"
    DIAMONDS = "D"
    HEARTS = "H"
    SPADES = "S"

    # Members are singletons equal only to themselves: hash them by identity, in C (the
    # default hashes the name in Python, for every card counted in the table's shoe count).
    __hash__ = object.__hash__

    @property
    def is_red(self) -> bool:
        return self in (Suit.DIAMONDS, Suit.HEARTS)

    @property
    def symbol(self) -> str:
        return {"C": "\u2663", "D": "\u2666", "H": "\u2665", "S": "\u2660"}[self.value]


class Rank(enum.IntEnum):
    """A card rank; the int value orders ranks with the ace low (1) and king high (13)."""

    ACE = 1
    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13

    @property
    def code(self) -> str:
        """Canonical text: ``A``, ``2`` .. ``10``, ``J``, ``Q``, ``K``."""
        return _RANK_CODES[self]

    @property
    def points(self) -> int:
        """Blackjack points with the ace counted as 1 (faces count 10)."""
        return _POINTS[self]

    @property
    def is_ten_value(self) -> bool:
        """10, jack, queen or king."""
        return self >= Rank.TEN


_RANK_CODES = {
    Rank.ACE: "A",
    Rank.TWO: "2",
    Rank.THREE: "3",
    Rank.FOUR: "4",
    Rank.FIVE: "5",
    Rank.SIX: "6",
    Rank.SEVEN: "7",
    Rank.EIGHT: "8",
    Rank.NINE: "9",
    Rank.TEN: "10",
    Rank.JACK: "J",
    Rank.QUEEN: "Q",
    Rank.KING: "K",
}
_POINTS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10)
"""Blackjack points by rank number (index 0 unused): ``min(rank, 10)``, looked up
because card values sit on the table state machine's hot path."""
RANK_POINTS = _POINTS
"""``RANK_POINTS[card.rank] == card.value``: hand totals read it directly (no property call
for each card counted)."""
_RANK_BY_TEXT = {code: rank for rank, code in _RANK_CODES.items()} | {"T": Rank.TEN}
_SUIT_BY_TEXT = {suit.value: suit for suit in Suit}
_INTERNED: dict[tuple[object, object], Card] = {}
"""Every :class:`Card` made, by the rank and suit it was made with."""


@dataclass(frozen=True)
class Card:
    """One playing card.

    Interned: ``Card(rank, suit)`` (and a copy or an unpickled card) is the one card of that
    rank and suit, so cards hash by identity, in C (the table counts every card drawn in a
    dict, and the dataclass's ``__hash__`` is a Python call that builds a tuple).

    >>> Card(Rank.QUEEN, Suit.HEARTS) is parse_card("qh")
    True
    """

    __slots__ = ("points", "rank", "suit")

    rank: Rank
    suit: Suit

    def __new__(cls, rank: Rank, suit: Suit) -> Card:
        card = _INTERNED.get((rank, suit))
        if card is None:  # once per rank and suit (and once per odd value given as either)
            card = _INTERNED[(rank, suit)] = object.__new__(cls)
            object.__setattr__(card, "rank", rank)
            object.__setattr__(card, "suit", suit)
            points = _POINTS[rank] if type(rank) is Rank else None  # a slot, not a field
            object.__setattr__(card, "points", points)
        return card

    def __init__(self, rank: Rank, suit: Suit) -> None:  # set once, by __new__
        pass

    # Equal cards are the same object (__new__): the identity hash agrees with equality.
    __hash__ = object.__hash__

    def __reduce__(self) -> tuple[type, tuple[Rank, Suit]]:  # copy and pickle: through __new__
        return (Card, (self.rank, self.suit))

    # ``points``: blackjack points with the ace counted as 1 (:attr:`value`), in a slot that
    # is no field (equality, repr and the fields stay ``rank`` and ``suit``): hand totals
    # read it for every card counted.

    @property
    def value(self) -> int:
        """Blackjack points with the ace counted as 1."""
        return _POINTS[self.rank]

    def __str__(self) -> str:
        return _RANK_CODES[self.rank] + self.suit._value_  # = rank.code + suit.value, faster

    def __lt__(self, other: Card) -> bool:  # suits have no natural order; sort by text
        return (self.rank, self.suit.value) < (other.rank, other.suit.value)


def parse_card(text: str) -> Card:
    """Parse card text such as ``QH``, ``10D``, ``TD`` or ``AS`` (any case).

    Raises :class:`CardError` naming the text when it is not a card.
    """
    if not isinstance(text, str):
        raise CardError(f"card text must be a string like 'QH' or '10D', got {text!r}")
    cleaned = text.strip().upper()
    rank = _RANK_BY_TEXT.get(cleaned[:-1])
    suit = _SUIT_BY_TEXT.get(cleaned[-1:])
    if rank is None or suit is None:
        raise CardError(
            f"unknown card {text!r}: expected a rank (A, 2-10 or T, J, Q, K) followed by a "
            "suit (C, D, H, S), for example 'QH', '10D', 'TD' or 'AS'"
        )
    return Card(rank, suit)


def parse_cards(text: str | Iterable[str]) -> tuple[Card, ...]:
    """Parse a comma- or space-separated list (``"QH,7D"``) or an iterable of card texts."""
    if isinstance(text, str):
        items = [item for item in text.replace(",", " ").split() if item]
    elif isinstance(text, Iterable):
        items = list(text)
    else:
        raise CardError(f"cards must be text like 'QH,7D' or a list of card texts, got {text!r}")
    return tuple(parse_card(item) for item in items)


def format_cards(cards: Iterable[Card]) -> str:
    """Canonical comma-separated text of cards, e.g. ``"QH,7D"``."""
    return ",".join(str(card) for card in cards)


ALL_CARDS: tuple[Card, ...] = tuple(Card(rank, suit) for suit in Suit for rank in Rank)
"""The 52 distinct cards of one deck."""


class ShoeComposition(Mapping[Card, int]):
    """How many of each of the 52 cards a shoe (or what is left of it) holds.

    Immutable: :meth:`without` returns a new composition.

    >>> shoe = ShoeComposition.of_decks(6)
    >>> len(shoe), shoe.total
    (52, 312)
    >>> shoe.without(parse_cards("QH,QH"))[parse_card("QH")]
    4
    """

    __slots__ = ("_counts", "_total")

    def __init__(self, counts: Mapping[Card, int]):
        strays = [item for item in counts if not isinstance(item, Card)]
        if strays:
            raise CardError(f"a shoe composition counts Card objects, not {strays[0]!r}")
        cleaned = {card: int(counts.get(card, 0)) for card in ALL_CARDS}
        for card, count in cleaned.items():
            if count < 0:
                raise CardError(f"a shoe cannot hold {count} of {card}")
        self._counts = cleaned
        self._total = sum(cleaned.values())

    @classmethod
    def of_decks(cls, decks: int) -> ShoeComposition:
        """A full shoe of ``decks`` 52-card decks."""
        if not isinstance(decks, int) or isinstance(decks, bool) or decks < 1:
            raise CardError(f"a shoe needs a whole number of decks >= 1, got {decks!r}")
        return cls(dict.fromkeys(ALL_CARDS, decks))

    def __getitem__(self, card: Card) -> int:
        return self._counts[card]

    def __iter__(self) -> Iterator[Card]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    @property
    def total(self) -> int:
        """Number of cards in the shoe."""
        return self._total

    def count_rank(self, rank: Rank) -> int:
        """Number of cards of ``rank``, all suits."""
        return sum(self._counts[Card(rank, suit)] for suit in Suit)

    def count_points(self, points: int) -> int:
        """Number of cards worth ``points`` (1 for aces, 10 for ten-value cards)."""
        return sum(n for card, n in self._counts.items() if card.value == points)

    def without(self, cards: Iterable[Card]) -> ShoeComposition:
        """The composition after ``cards`` are dealt; a card the shoe lacks is a CardError."""
        counts = dict(self._counts)
        for card in cards:
            if not isinstance(card, Card):
                raise CardError(f"the shoe deals Card objects, not {card!r}: parse the text first")
            if counts[card] == 0:
                raise CardError(f"the shoe holds no more {card}: was a card read twice?")
            counts[card] -= 1
        return ShoeComposition(counts)

    def __repr__(self) -> str:
        return f"ShoeComposition(total={self._total})"
