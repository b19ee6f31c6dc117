"""The ledger's terms: every pool's and table's parameters, recorded, compared, changed.

N.J.A.C. 13:69E-1.39C(b)6 and (c) and 9 NYCRR 5321.18(b)(4) ask that a progressive's
parameters be recorded and that a change be prevented unless authorised. The ledger keeps
the **effective terms** in ``parameters`` (subject, term -> value) and every change in
``changes`` (controller's UTC time, gaming day, kind, who, who approved, why, the config's
SHA-256, and each term's old and new value):

- the first start (or the first after the schema 3 migration) records the config's terms
  (kind ``initial``);
- a controller whose config says otherwise refuses to start, before any broker connection:
  :func:`differences` lists each changed term, old -> new (docs/jackpot/controller.md,
  "Parameters");
- ``jackpot-controller parameters apply`` (:func:`apply_config`) applies a config as one
  transaction under the ledger's lock, with two different people's names and a reason
  (kind ``parameters``); it bumps ``meta.terms_change``, which every write transaction of a
  controller started on the older terms checks (its fence), so such a controller stops
  applying messages until restarted with the config applied.

Terms (all text; money in whole cents, a contribution as the exact fraction of the stake):
``controller gaming_day``; ``pool:NAME`` kind, status, contribution, seed, wagers and reset,
lines (progressive) or must_hit_from, must_hit_by (Mystery); ``property:ID`` name,
gaming_day, games; ``table:ID`` property, games, spots, keys (``kid=base64``, comma-separated; the
key history is ``table_keys``); ``game:NAME`` the wagers its profile fixes (``blazing_7s.stake``,
``blazing_7s.pool``, ``mystery``) for every game a property or table may run.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.errors import ProfileError
from controller.games import load_game
from controller.link.signing import public_key_text
from controller.rules.profile import PROGRESSIVE_WAGERS
from controller.web.auth import _invisible as invisible
from jackpot.money import dollars, percent
from jackpot.pools import JackpotConfig, MysteryPool, ProgressivePool
from jackpot.store import LedgerError

Terms = dict[tuple[str, str], str]

#: meta keys: the change whose terms are in force (a controller's fence compares it).
TERMS_KEY = "terms_change"
MONEY_TERMS = {"seed", "reset", "must_hit_from", "must_hit_by"}


class TermsChanged(LedgerError):
    """The config's terms differ from the ledger's: ``changes`` lists them."""

    def __init__(self, location: str, changes: list[Change], command: str):
        self.changes = changes
        lines = [f"{location}: the config's terms differ from the ledger's ({len(changes)}):"]
        lines += [f"  {change.line()}" for change in changes]
        lines.append(f"  apply them (two people, a reason): {command}")
        super().__init__("\n".join(lines))


class ChangeRefused(LedgerError):
    """An audited change the ledger refuses (nothing was written); the message says why."""


@dataclass(frozen=True)
class Change:
    """One term's change: ``old`` None for a new term, ``new`` None for one removed."""

    subject: str
    term: str
    old: str | None
    new: str | None

    def line(self) -> str:
        old, new = show(self.term, self.old), show(self.term, self.new)
        return f"{self.subject} {self.term}: {old} -> {new}"

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "term": self.term, "old": self.old, "new": self.new}


def show(term: str, value: str | None) -> str:
    """A term's value as a person reads it."""
    if value is None:
        return "(none)"
    if term in MONEY_TERMS or term.endswith(".stake"):
        return dollars(int(value))
    if term == "contribution":
        rate = Fraction(value)
        return f"{percent(rate)} of the stake ({dollars(rate * 500)} per $5)"
    if term == "keys":
        return ", ".join(k.split("=", 1)[0] for k in value.split(",") if k) or "no keys"
    return value


def config_terms(config: JackpotConfig) -> Terms:
    """The terms ``config`` sets (see the module's docstring)."""
    terms: Terms = {("controller", "gaming_day"): config.gaming_day.text()}
    for pool in config.pools.values():
        at = f"pool:{pool.name}"
        terms.update({(at, "kind"): pool.kind, (at, "status"): "active",
                      (at, "contribution"): str(pool.rate), (at, "seed"): str(pool.seed),
                      (at, "wagers"): ",".join(pool.wagers)})  # fmt: skip
        if isinstance(pool, ProgressivePool):
            terms[(at, "reset")] = str(pool.reset)
            terms[(at, "lines")] = "|".join(pool.lines)
        else:
            terms[(at, "must_hit_from")] = str(pool.must_hit_from)
            terms[(at, "must_hit_by")] = str(pool.must_hit_by)
    games: set[str] = set()
    for prop in config.properties.values():
        at = f"property:{prop.id}"
        terms[(at, "name")] = prop.name
        terms[(at, "gaming_day")] = prop.gaming_day.text()
        terms[(at, "games")] = ",".join(prop.games) if prop.games is not None else "any"
        games.update(prop.games or ())
    for table in sorted(config.tables):
        at = f"table:{table}"
        allowed = config.games_for(table)
        games.update(allowed or ())
        terms[(at, "property")] = table.split("-", 1)[0]
        terms[(at, "games")] = ",".join(allowed) if allowed is not None else "any"
        terms[(at, "spots")] = str(config.spots_for(table)[0])
        keys = config.table_keys.get(table, {})
        terms[(at, "keys")] = ",".join(f"{k}={public_key_text(keys[k])}" for k in sorted(keys))
    for game in sorted(games):
        terms.update(game_terms(game))
    return terms


def game_terms(game: str) -> Terms:
    """The wagers the profile ``game`` fixes: each progressive wager's stake and pool, and
    which wagers the Mystery takes."""
    at = f"game:{game}"
    try:
        profile = load_game(game)
    except ProfileError:
        return {(at, "profile"): "missing"}
    out: Terms = {}
    for wager in sorted(PROGRESSIVE_WAGERS):
        rules = getattr(profile.side_bets, wager, None)
        if rules is not None:
            out[(at, f"{wager}.stake")] = str(rules.wager)
            out[(at, f"{wager}.pool")] = rules.pool
    mystery = profile.mystery
    out[(at, "mystery")] = ",".join(mystery.eligible_wagers) if mystery.offered else "none"
    return out


def terms_digest(terms: Mapping[tuple[str, str], str]) -> str:
    """SHA-256 of the terms as canonical JSON (the ledger's record of what is in force)."""
    rows = sorted([s, t, v] for (s, t), v in terms.items())
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()


def ledger_terms(db: Any) -> Terms:
    return {(s, t): v for s, t, v in db.execute("SELECT subject, term, value FROM parameters")}


def retired_pools(terms: Mapping[tuple[str, str], str]) -> set[str]:
    return {s.split(":", 1)[1] for (s, t), v in terms.items() if t == "status" and v == "retired"}


def differences(recorded: Terms, wanted: Terms) -> list[Change]:
    """What differs, term by term; a retired pool's terms count only if the config names
    the pool again."""
    retired = {f"pool:{p}" for p in retired_pools(recorded)}
    named = {s for s, _ in wanted}
    recorded = {k: v for k, v in recorded.items() if k[0] not in retired or k[0] in named}
    keys = sorted(set(recorded) | set(wanted))
    return [
        Change(s, t, recorded.get((s, t)), wanted.get((s, t)))
        for s, t in keys
        if recorded.get((s, t)) != wanted.get((s, t))
    ]


def person(flag: str, raw: object) -> str:
    """A person's name as recorded: NFKC (full-width letters, composed accents, no-break
    spaces read as their plain forms), runs of white space made one space, trimmed. A
    character that prints as nothing (Unicode's default-ignorable code points, as a login name
    refuses them: controller/web/auth.py) or a control character is refused, named."""
    name = " ".join(unicodedata.normalize("NFKC", str(raw or "")).split())
    for char in name:
        code = f"U+{ord(char):04X}"
        if invisible(char) or unicodedata.category(char) in ("Cf", "Co", "Cn", "Cs"):
            raise ChangeRefused(
                f"{flag} {name!r} holds {code} ({unicodedata.name(char, 'unnamed')}), which "
                "shows as nothing: give the person's name as it prints"
            )
        if unicodedata.category(char) == "Cc":
            raise ChangeRefused(
                f"{flag} {name!r} holds {code}, a control character: give the person's name "
                "as it prints"
            )
    return name


def same_person(a: str, b: str) -> bool:
    """Do two recorded names (:func:`person`) name one person (case and width aside)?"""
    return unicodedata.normalize("NFKC", a.casefold()) == unicodedata.normalize(
        "NFKC", b.casefold()
    )


def check_names(by: str, approved_by: str, reason: str) -> tuple[str, str, str]:
    """Two different people and a reason, or :class:`ChangeRefused`. The names are compared
    and recorded as :func:`person` makes them."""
    by, approved_by = person("--by", by), person("--approved-by", approved_by)
    reason = str(reason or "").strip()
    if not by or not approved_by:
        raise ChangeRefused("--by and --approved-by must each name a person")
    if same_person(by, approved_by):
        raise ChangeRefused(
            f"--by {by!r} and --approved-by {approved_by!r} name the same person (case, width, "
            "accents and spaces aside): a change needs two different people"
        )
    if len(reason) < 5:
        raise ChangeRefused("--reason must say why (at least a few words)")
    return by, approved_by, reason


def refusal(changes: list[Change], config: JackpotConfig, meters: Mapping[str, Fraction],
            retire_command: str) -> str | None:  # fmt: skip
    """Why ``changes`` cannot be applied as a config, or None."""
    for change in changes:
        pool = change.subject.split(":", 1)[1] if change.subject.startswith("pool:") else None
        if pool is None:
            continue
        if change.term == "kind" and change.new is None:
            return (
                f"pool {pool} is in the ledger (meter {dollars(meters.get(pool, 0))}) but not in "
                f"the config: retire it first: {retire_command.format(pool=pool)}"
            )
        if change.term == "status" and change.old == "retired":
            return (
                f"pool {pool} was retired: remove it from the config (a retired pool does not "
                "come back; name a new pool)"
            )
        if change.term == "kind" and change.old is not None:
            return f"pool {pool} cannot change its kind: retire it and add a new pool"
    for pool in config.pools.values():
        if not isinstance(pool, MysteryPool) or pool.name not in meters:
            continue
        meter = meters[pool.name]
        if pool.must_hit_by <= meter:
            return (
                f"pool {pool.name}: must_hit_by {dollars(pool.must_hit_by)} is at or below its "
                f"meter {dollars(meter)}: the sign shows more; choose a must_hit_by above it "
                "(or correct the meter first)"
            )
    return None
