"""Recall, history and the log: ``/api/rounds``, ``/api/rounds/search``,
``/api/rounds/older``, ``/api/rounds/N/script``, ``/api/history``, ``/api/log`` (a mixin of
:class:`~controller.web.exchange.Exchange`).

Recall reads the journal's files itself, read-only
(:class:`~controller.journal.library.JournalLibrary`: the live file and the gaming-day files
kept beside it), and shows local times in the zone of the table's gaming day.
"""

from __future__ import annotations

import logging
import re
from http import HTTPStatus
from typing import Any

from controller.errors import JournalError
from controller.journal.library import FoundRound, local_to_utc_ms

LOG_LEVELS = {
    "all": (0, 1000),
    "info": (0, logging.WARNING),
    "warning": (logging.WARNING, 1000),
    "error": (logging.ERROR, 1000),
}
"""What /api/log may pick: ``level`` -> (lowest level, below this one)."""
HISTORY_HOURS = (1, 72)
"""The hours /api/history may cover (the store keeps 72)."""


def recall_hands(layout: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """Every hand of a recalled round as the page draws it (the dealer first): ``who``,
    ``cards`` (as recorded, ``10H``), ``total``, ``soft``, ``bust`` and what was done;
    None when the round's events do not replay."""
    from controller.rules.cards import parse_cards
    from controller.rules.hand import hand_total

    if layout is None:
        return None

    def hand(who: str, cards: list[str], **extra: Any) -> dict[str, Any]:
        total = hand_total(parse_cards(cards)) if cards else None
        return {
            "who": who,
            "cards": cards,
            "total": None if total is None else total.total,
            "soft": bool(total and total.soft),
            "bust": bool(total and total.is_bust),
            **extra,
        }

    dealer = layout.get("dealer") or {}
    out = [hand("Dealer", [c for c in dealer.get("cards") or [] if c != "back"])]
    for spot in layout.get("spots") or []:
        hands = spot.get("hands") or []
        for n, one in enumerate(hands):
            who = f"Spot {spot['spot']}" + (f" hand {n + 1}" if len(hands) > 1 else "")
            done = [
                word
                for key, word in (
                    ("double_down", "doubled"),
                    ("double_up", "doubled up"),
                    ("surrendered", "surrendered"),
                )
                if one.get(key)
            ]
            out.append(hand(who, list(one.get("cards") or []), done=done))
    return out


class RecallRoutes:
    """Game recall across the journal's files, the charts' history, the recent log."""

    def _log(self) -> None:
        """``?level=all|info|warning|error``: the log records kept, oldest first (warnings
        and errors are kept apart from the prompts: :mod:`controller.runtime.logring`), and
        how many of each are ``kept``."""
        source = self.web.source
        level = self._query("level", "all")
        if level not in LOG_LEVELS:
            self._error(
                HTTPStatus.BAD_REQUEST,
                f"level must be one of {', '.join(LOG_LEVELS)}, e.g. level=warning",
            )
            return
        low, below = LOG_LEVELS[level]
        number = logging.getLevelNamesMapping()
        records = [
            r for r in source.recent_log() if low <= number.get(str(r.get("level")), 0) < below
        ]
        kept = getattr(source, "log_kept", None)
        self._json(
            HTTPStatus.OK,
            {"records": records, "level": level, "kept": kept() if callable(kept) else None},
        )

    def _history(self) -> None:
        """``?hours=H`` (1 to 72, default 6): the charts' lines from the daemon's history."""
        text = self._query("hours", "6")
        low, high = HISTORY_HOURS
        try:
            hours = float(text)
        except ValueError:
            hours = -1.0
        if not low <= hours <= high:
            self._error(
                HTTPStatus.BAD_REQUEST,
                f"hours must be a number of hours from {low} to {high}, e.g. hours=6 "
                f"(got {text[:20]!r})",
            )
            return
        source = getattr(self.web.source, "history_series", None)
        if source is None:
            self._error(HTTPStatus.NOT_FOUND, "this table keeps no history")
            return
        answer = source(hours)
        if not answer.get("ok"):
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(answer.get("error")))
            return
        self._json(HTTPStatus.OK, answer)

    def _older(self) -> None:
        """``?before=N``: the 10 settled rounds before round N, newest first (paging back
        through every file the journal keeps)."""
        before = self._query("before")
        if not re.fullmatch(r"\d{1,9}", before):
            self._error(HTTPStatus.BAD_REQUEST, "before must be a round number, e.g. before=120")
            return
        try:
            found = self.web.library.older_rounds(int(before), 10)
        except JournalError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
            return
        self._json(HTTPStatus.OK, {"ok": True, "rounds": self._recalled(found)})

    def _recalled(self, found: list[FoundRound]) -> list[dict[str, Any]]:
        """Recall records as the page shows them: each with its hands and its actions step
        by step (each with its time of day, spot and hand, and cards: replayed from the
        round's events, one at a time: :func:`controller.recall_steps.round_steps`), its
        text, its local time and the file it is in."""
        from controller.errors import TableControllerError
        from controller.games import load_game
        from controller.recall import format_round, round_times
        from controller.recall_steps import round_steps

        zone = self.web.zone
        rules: dict[str, Any] = {}
        out = []
        for item in found:
            record, name = item.record, item.file.name
            game = record["game"]
            if game not in rules:
                rules[game] = load_game(game)
            try:
                layout, steps = round_steps(record, rules[game])
            except (TableControllerError, KeyError, TypeError) as exc:
                layout, steps = None, []
                text = format_round(record, zone=zone, file=name, suits=True)
                text += f"\n  (hands not shown: the events do not replay: {exc})"
            else:
                text = format_round(record, layout, zone=zone, file=name, suits=True)
            out.append(
                {
                    **record,
                    "text": text,
                    "hands": recall_hands(layout),
                    "steps": steps,
                    "when": round_times(record, zone),
                    "file": name,
                }
            )
        return out

    def _rounds(self) -> None:
        try:
            found = self.web.library.last_rounds(10)
        except JournalError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
            return
        self._json(HTTPStatus.OK, {"rounds": self._recalled(found)})

    def _search(self) -> None:
        """``?round=N``, or ``?at=YYYY-MM-DD HH:MM`` (the rounds nearest that local time)
        with ``&to=...`` for the rounds settled in a range; across the journal's files."""
        number, at, to = (self._query(key) for key in ("round", "at", "to"))
        library, zone = self.web.library, self.web.zone
        if number and not re.fullmatch(r"\d{1,9}", number):
            self._error(HTTPStatus.BAD_REQUEST, "round must be a round number, e.g. 1234")
            return
        if not number and not at:
            self._error(
                HTTPStatus.BAD_REQUEST,
                "give round=N, or at=YYYY-MM-DD HH:MM (local time), with to=... for a range",
            )
            return
        try:
            since = local_to_utc_ms(at, zone) if at and not number else None
            until = local_to_utc_ms(to, zone) if to and since is not None else None
        except JournalError as exc:  # a time not written as asked, a zone not known
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
            return
        try:
            if number:
                one = library.find_round(int(number))
                found = [one] if one is not None else []
                nothing = f"no record of round {number} in any journal file"
            elif until is not None:
                found = library.rounds_between(since, until, 50)
                nothing = f"no round settled from {at} to {to}"
            else:
                found = library.nearest(since, 5)
                nothing = "no round with a time of day is recorded"
            rounds = self._recalled(found)
            problems = [f"{f.name}: {f.problem}" for f in library.problems()]
        except JournalError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
            return
        if not rounds:
            self._json(
                HTTPStatus.NOT_FOUND,
                {"ok": False, "error": nothing, "rounds": [], "unreadable": problems},
            )
            return
        self._json(
            HTTPStatus.OK,
            {
                "ok": True,
                "rounds": rounds,
                "unreadable": problems,
                "at_utc_ms": since,  # the typed local times, for the page to say them
                "to_utc_ms": until,
            },
        )

    def _script(self, number: int) -> None:
        """A settled round's event script from whichever file holds it, with its local date
        and time (and UTC, and the file) as comment lines after the header."""
        from controller.recall import script_with_times
        from controller.table.script import round_script

        try:
            found = self.web.library.find_round(number)
        except JournalError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))
            return
        if found is None:
            self._error(
                HTTPStatus.NOT_FOUND,
                f"no record of round {number} in any journal file (a round in progress is "
                "recorded when it is settled)",
            )
            return
        script = script_with_times(
            round_script(found.record), found.record, self.web.zone, found.file.name
        )
        table = self.web.source.identity()["table"]
        self._send(
            HTTPStatus.OK,
            script.encode(),
            "application/x-ndjson; charset=utf-8",
            {"Content-Disposition": f'attachment; filename="{table}-round-{number}.jsonl"'},
        )
