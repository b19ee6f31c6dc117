"""Interned cards (issue 32 item 3, sixth round): ``Card(rank, suit)`` is the one card of that
rank and suit, whichever way it is made, so a card hashes by identity (in C) and still
equals, hashes and orders as the dataclass did."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from controller.rules.cards import ALL_CARDS, Card, Rank, Suit, parse_card, parse_cards


def test_every_way_of_making_a_card_gives_the_same_object():
    for card in ALL_CARDS:
        assert Card(card.rank, card.suit) is card
        assert Card(rank=card.rank, suit=card.suit) is card
        assert parse_card(str(card)) is card
        assert copy.copy(card) is card and copy.deepcopy(card) is card
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            assert pickle.loads(pickle.dumps(card, protocol)) is card
        assert dataclasses.replace(card) is card
    assert parse_cards("QH,qh,QH") == (ALL_CARDS[11 + 26],) * 3


def test_equal_cards_hash_alike_and_unequal_ones_stay_unequal():
    seen: dict[Card, int] = {}
    for card in ALL_CARDS * 2:
        seen[Card(card.rank, card.suit)] = seen.get(card, 0) + 1
    assert len(seen) == 52 and set(seen.values()) == {2}
    assert len({hash(card) for card in ALL_CARDS}) == 52
    assert Card(Rank.TEN, Suit.SPADES) != Card(Rank.TEN, Suit.HEARTS)
    assert Card(Rank.TEN, Suit.SPADES) != Card(Rank.KING, Suit.SPADES)
    assert sorted(parse_cards("KS,2H,2C,AD")) == list(parse_cards("AD,2C,2H,KS"))


def test_a_card_made_with_an_int_rank_is_the_enum_card_and_leaves_it_unchanged():
    queen = Card(Rank.QUEEN, Suit.HEARTS)
    assert Card(12, Suit.HEARTS) is queen  # type: ignore[arg-type]
    assert type(queen.rank) is Rank and queen.rank is Rank.QUEEN
    assert repr(queen) == "Card(rank=<Rank.QUEEN: 12>, suit=<Suit.HEARTS: 'H'>)"


def test_a_card_stays_frozen():
    card = parse_card("AS")
    with pytest.raises(dataclasses.FrozenInstanceError):
        card.rank = Rank.TWO  # type: ignore[misc]
    assert dataclasses.fields(Card)[0].name == "rank" and card.value == 1


def test_a_card_s_points_slot_is_its_value_and_no_field():
    for card in ALL_CARDS:
        assert card.points == card.value == min(int(card.rank), 10)
    assert [f.name for f in dataclasses.fields(Card)] == ["rank", "suit"]
    assert dataclasses.asdict(parse_card("KD")) == {"rank": Rank.KING, "suit": Suit.DIAMONDS}


def _require_before(cards, count, what):
    from controller.errors import CardError

    if isinstance(cards, tuple | list) and len(cards) == count:
        for card in cards:
            if not isinstance(card, Card):
                break
        else:
            return None
    raise CardError(f"{what} must be exactly {count} cards, got {cards!r}")


def test_require_cards_answers_as_the_loop_did():
    from controller.rules.sidebets import require_cards

    qh, ks = parse_cards("QH,KS")
    odd = Card(14, Suit.SPADES)  # type: ignore[arg-type]  # a Card, though no card of a deck
    for cards, count in [
        ((qh, ks), 2),
        ([qh, ks], 2),
        ((qh,), 1),
        ((qh, ks), 1),
        ((qh,), 2),
        ((), 0),
        ((qh, "KS"), 2),
        ((qh, [ks]), 2),
        ((qh, odd), 2),
        ("QH", 2),
        (None, 1),
        ((qh, 7), 2),
    ]:
        answers = []
        for check in (require_cards, _require_before):
            try:
                answers.append(("ok", check(cards, count, "cards")))
            except Exception as exc:  # the type and words are compared
                answers.append((type(exc), str(exc)))
        assert answers[0] == answers[1], cards
