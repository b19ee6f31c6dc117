"""A round result's card check (jackpot/ledger_kinds.py ``_cards_problem``) says what the
dict-counting check before it said, word for word, on every kind of payload: possible
rounds, a spot listed twice, first two cards not in the hands, a card dealt too often."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jackpot.ledger_kinds import _cards_problem


def reference(result: dict[str, Any], decks: int) -> str | None:
    """The check as it was (commit 36f32af)."""
    counts: dict[str, int] = {}
    for card in result["dealer"]:
        counts[card] = counts.get(card, 0) + 1
    spots: set[int] = set()
    for spot in result["spots"]:
        if spot["spot"] in spots:
            return f"round {result['round']}: spot {spot['spot']} is listed twice"
        spots.add(spot["spot"])
        held: dict[str, int] = {}
        for hand in spot["hands"]:
            for card in hand:
                held[card] = held.get(card, 0) + 1
        first_two = spot["first_two"]
        if any(held.get(card, 0) < first_two.count(card) for card in first_two):
            return (
                f"round {result['round']}: spot {spot['spot']}'s first two cards "
                f"{spot['first_two']} are not in its hands {spot['hands']}"
            )
        for card, n in held.items():
            counts[card] = counts.get(card, 0) + n
    for card, count in sorted(counts.items()):
        if count > decks:
            return (
                f"round {result['round']}: card {card} was dealt {count} times; a {decks}-deck "
                f"shoe holds it {decks} times"
            )
    return None


cards = st.sampled_from(["AS", "AH", "7D", "7H", "KC", "10S", "2C"])
hands = st.lists(st.lists(cards, max_size=6), max_size=3)
spot = st.builds(
    lambda n, hs, two: {"spot": n, "first_two": two, "hands": hs},
    st.integers(1, 4),
    hands,
    st.lists(cards, max_size=2),
)


def from_hands(n: int, hs: list[list[str]]) -> dict[str, Any]:
    return {"spot": n, "first_two": hs[0][:2] if hs and hs[0] else [], "hands": hs}


honest = st.builds(from_hands, st.integers(1, 7), hands)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(cards, max_size=6),
    st.lists(spot | honest, max_size=5),
    st.integers(1, 8),
    st.integers(1, 10**6),
)
def test_the_card_check_says_what_it_said(dealer, spots, decks, rnd) -> None:
    result = {"round": rnd, "dealer": dealer, "spots": spots}
    assert _cards_problem(result, decks) == reference(result, decks)
