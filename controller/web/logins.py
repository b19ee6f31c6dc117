"""Which login attempts get their password checked, and in what order (issue 26 item 4).

A password check (scrypt: 16 MiB and tens of milliseconds, more on a Pi) is the one thing a
stranger can make this server do that costs real time. Per address,
:class:`~.auth.LoginThrottle` slows a guesser down; an audit sent 240 wrong guesses from 60
loopback addresses at once, and every one was checked while the technician's right password
waited 33 s behind them. Across addresses:

- **a table-wide budget**: a check for a client that has failed (a wrong password on record
  or more than one attempt since its last success, pending ones too) takes a token from one
  bucket, :attr:`LoginBudget.burst` at first, then one every :attr:`LoginBudget.every_s`.
  No token: ``429``, unchecked and not queued. A client that has not failed takes a token if
  one is left, and is checked without one;
- **an order**: at most ``checks`` run at once; when one ends the next is, first, a request
  that comes with a live session (a known-good browser), then a client that has not failed,
  then failing clients, fewest failures first; within each, in arrival order. A waiting
  attempt's place is read when a check ends, so an address that sends a second guess while
  its first waits goes behind every client that has not failed;
- **a kept slot**: ``kept`` of the checks take only a known-good session or a client that
  has not failed, so failing clients never hold every check;
- the checks run in threads of their own: the request's handler thread hands its attempt
  over and is free (the front awaits the answer), so waiting guesses hold no handler thread.

What is left: an attacker's *first* guess from each address it has never used is a client
that has not failed, like the technician's; the technician waits behind at most one check
per such address (and the connection limits bound those, docs/web.md).

Time comes from ``clock`` (monotonic seconds), so the budget is tested without waiting.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from controller.web.auth import LoginThrottle

log = logging.getLogger("table-controller.web")

CHECKS = 2
"""Password checks at once (16 MiB of memory each)."""
KEPT = 1
"""Of those, kept for a known-good session or a client that has not failed."""


@dataclass(slots=True)
class LoginBudget:
    """Checks for failing clients, table-wide: ``burst`` at first, then one every
    ``every_s`` seconds (at most ``burst`` saved up).

    >>> b = LoginBudget(burst=2, every_s=6.0)
    >>> [b.take(now=100.0) for _ in range(3)], b.wait_s(now=100.0), b.take(now=106.0)
    ([True, True, False], 6.0, True)
    """

    burst: int = 10
    every_s: float = 6.0
    tokens: float = field(init=False, default=-1.0)
    last: float = field(init=False, default=0.0)

    def _refill(self, now: float) -> None:
        if self.tokens < 0:
            self.tokens, self.last = float(self.burst), now
            return
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) / self.every_s)
        self.last = now

    def take(self, now: float) -> bool:
        """One check's token, if there is one."""
        self._refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def wait_s(self, now: float) -> float:
        """Seconds until the next token."""
        self._refill(now)
        return max(0.0, (1.0 - self.tokens) * self.every_s)


class Refused(NamedTuple):
    """An attempt not checked: wait ``wait_s`` (s); ``table_wide``: the budget was spent (else
    the address's own wait)."""

    wait_s: float
    table_wide: bool


KNOWN_GOOD, NOT_FAILED, FAILING = 0, 1, 2
"""An attempt's class, in the order checks are given."""


@dataclass(slots=True, eq=False)
class _Attempt:
    seq: int
    address: str
    session: bool
    work: Callable[[], Any]
    future: Future[Any]


class LoginChecks:
    """Password checks for logins: :meth:`submit` decides whether an attempt is checked,
    threads of its own run the checks in the order above. ``counters``: ``started`` checks,
    ``submitted``, ``refused_table_wide`` and ``refused_address`` attempts."""

    def __init__(
        self,
        throttle: LoginThrottle,
        *,
        checks: int = CHECKS,
        kept: int = KEPT,
        budget: LoginBudget | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not 0 <= kept < checks:
            raise ValueError(f"kept must be 0 to {checks - 1} of {checks} checks, got {kept}")
        self.throttle = throttle
        self.budget = budget or LoginBudget()
        self.clock = clock
        self.counters = {
            "submitted": 0,
            "started": 0,
            "refused_table_wide": 0,
            "refused_address": 0,
        }
        self._seq = itertools.count(1)
        self._waiting: list[_Attempt] = []
        self._cond = threading.Condition()
        self._closed = False
        self._spent_logged = False
        self._threads = [
            threading.Thread(
                target=self._work, args=(n < kept,), name=f"web-login-{n}", daemon=True
            )
            for n in range(checks)
        ]
        for thread in self._threads:
            thread.start()

    def submit(
        self, address: str, *, session: bool, work: Callable[[], Any]
    ) -> Future[Any] | Refused:
        """Queue ``work`` (the check and its answer, run in a check thread) for an attempt
        from ``address`` (``session``: it came with a live session cookie); its future, or
        :class:`Refused` when it is not checked."""
        with self._cond:
            self.counters["submitted"] += 1
            now = self.clock()
            tries = self.throttle.saw(address, now)
            wait = self.throttle.wait_s(address, now)
            if wait <= 0:
                if session:
                    kind = KNOWN_GOOD
                elif tries <= 1 and not self.throttle.failures(address):
                    kind = NOT_FAILED
                    self.budget.take(now)  # counted if a token is left, checked anyway
                else:
                    kind = FAILING
                    if not self.budget.take(now):
                        return self._spent(now)
                self._spent_logged = False
                wait = self.throttle.admit(address, now)  # a failure until it succeeds
            if wait > 0:
                self.counters["refused_address"] += 1
                return Refused(wait, False)
            attempt = _Attempt(next(self._seq), address, session, work, Future())
            self._waiting.append(attempt)
            self._cond.notify_all()
            log.debug("web: login from %s queued (%s)", address, kind)
            return attempt.future

    def _spent(self, now: float) -> Refused:
        self.counters["refused_table_wide"] += 1
        wait = self.budget.wait_s(now)
        if not self._spent_logged:
            self._spent_logged = True
            log.warning(
                "web: wrong passwords from several clients used the table's login budget "
                "(%d checks, then one every %g s): clients that failed wait",
                self.budget.burst,
                self.budget.every_s,
            )
        return Refused(wait, True)

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def kind(self, attempt: _Attempt) -> int:
        """An attempt's class now (:data:`KNOWN_GOOD`, :data:`NOT_FAILED`, :data:`FAILING`)."""
        if attempt.session:
            return KNOWN_GOOD
        address = attempt.address  # its own pending attempt counts one try and one failure
        clean = self.throttle.tries(address) <= 1 and self.throttle.failures(address) <= 1
        return NOT_FAILED if clean else FAILING

    def _pick(self, kept: bool) -> _Attempt | None:
        best, best_key = None, None
        for attempt in self._waiting:
            kind = self.kind(attempt)
            if kept and kind == FAILING:
                continue
            failures = self.throttle.failures(attempt.address) if kind == FAILING else 0
            key = (kind, failures, attempt.seq)
            if best_key is None or key < best_key:
                best, best_key = attempt, key
        return best

    def _work(self, kept: bool) -> None:
        while True:
            with self._cond:
                attempt = None
                while not self._closed and (attempt := self._pick(kept)) is None:
                    self._cond.wait()
                if attempt is None:
                    return
                self._waiting.remove(attempt)
                self.counters["started"] += 1
            if not attempt.future.set_running_or_notify_cancel():
                continue
            try:
                attempt.future.set_result(attempt.work())
            except BaseException as exc:  # the handler's own error: its request answers 500
                attempt.future.set_exception(exc)

    def close(self) -> None:
        """Stop: waiting attempts are cancelled, checks under way finish. Safe twice."""
        with self._cond:
            self._closed = True
            waiting, self._waiting = self._waiting, []
            self._cond.notify_all()
        for attempt in waiting:
            attempt.future.cancel()
