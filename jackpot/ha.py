"""A hot standby: the jackpot controller runs its service only while it holds the lease.

:class:`HaService` is what ``jackpot-controller`` runs when its config has an ``[ha]``
section (docs/jackpot/failover.md). One supervisor thread:

- as a **standby**, asks the database for the lease every sixth of the lease
  (:meth:`~jackpot.leader.Elector.try_lead`); it has no MQTT connection and writes nothing;
- once elected (a new epoch), starts a :class:`~jackpot.service.JackpotService` with its own
  client id and broker user, whose ledger carries the epoch's fence
  (:meth:`~jackpot.leader.Elector.fence_for`): the service connects to its persistent
  session, subscribes, and for every table's retained birth asks for a resend from the
  ledger's ack + 1, so whatever the old leader received but never committed comes again
  (and what it did commit comes back as a duplicate, never applied twice);
- as the **active** controller, renews the lease every third of it; when the fence refuses a
  transaction (another controller took over: this one was paused or cut off), when a renewal
  finds the lease gone, or when the lease runs out without a renewal, it stops the service at
  once, without the offline goodbye (the new leader is online) and without a PUBACK for
  anything it did not commit (the broker or the tables send it again), and is a standby again;
- on a clean stop (SIGTERM), closes the service and gives the lease up, so a standby takes
  over at its next try instead of waiting for the lease to run out.

``health()`` is the running service's, plus ``role`` (``active``/``standby``), ``epoch``,
``takeovers`` and ``leader`` (the lease's holder as last seen).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from jackpot.leader import ElectionError, Elector, Fence
from jackpot.pools import JackpotConfig
from jackpot.service import JackpotService
from jackpot.store import is_dsn

log = logging.getLogger("jackpot.ha")

#: The supervisor's own tick while active (seconds): how fast a fenced service is stopped.
TICK_S = 0.05
#: After a term that failed (the service did not start, or its thread died within
#: :data:`SHORT_TERM_S`), this controller waits before asking for the lease again: the
#: first wait, doubled each failure in a row, up to the cap (seconds). Without it, two
#: controllers that cannot start (a bad key, a full disk) took a new epoch every tick.
RETRY_FIRST_S, RETRY_CAP_S = 1.0, 60.0
SHORT_TERM_S = 60.0


class HaService:
    """``JackpotService``'s arguments, run as one of several controllers on one PostgreSQL
    ledger; ``config.ha`` names this controller and the lease. ``service_factory(fence)``
    starts the service (tests pass one; the default is :class:`JackpotService` with
    ``client_id=username``); ``elector`` replaces the default :class:`Elector`.

    The interface is the one ``jackpot-controller``'s main loop uses: :meth:`health`,
    :meth:`wait_online`, :meth:`close`, ``boot`` and ``_thread``."""

    def __init__(
        self,
        config: JackpotConfig,
        ledger: str,
        host: str,
        port: int,
        username: str,
        password: str,
        *,
        service_factory: Callable[[Fence], Any] | None = None,
        elector: Elector | None = None,
        **service_kwargs: Any,
    ) -> None:
        if config.ha is None:
            raise ValueError(f"{config.source}: no [ha] section: nothing to elect")
        if not is_dsn(ledger):
            raise ValueError(
                f"[ha] needs the ledger in PostgreSQL (--ledger postgresql://...), not "
                f"{ledger}: the election and its fence live in the ledger's database"
            )
        self.config = config
        self.elector = elector or Elector(ledger, config.ha.name, config.ha.lease_ms)
        lease_s = self.elector.lease_ms / 1000
        self.renew_s = lease_s / 3
        self.poll_s = max(0.1, lease_s / 6)

        def default_factory(fence: Fence) -> Any:
            kwargs = {"client_id": username, **service_kwargs}
            return JackpotService(
                config, ledger, host, port, username, password, fence=fence, **kwargs
            )

        self._factory = service_factory or default_factory
        self._lock = threading.Lock()
        self._service: Any = None
        self._role = "standby"
        self._epoch: int | None = None
        self._leader = ""
        self._takeovers = 0
        self._failed_terms = 0  # failed terms in a row
        self._retry_at = 0.0  # monotonic: no bid for the lease before
        self._term_started = 0.0
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="jackpot-ha", daemon=True)
        self._thread.start()

    # -- any thread ------------------------------------------------------------------------

    @property
    def boot(self) -> int:
        service = self._service
        return service.boot if service is not None else 0

    @property
    def role(self) -> str:
        return self._role

    def health(self) -> dict[str, Any]:
        """The active service's health (a standby's: nothing connected, no counts) with
        ``role``, ``epoch``, ``takeovers`` and ``leader``."""
        with self._lock:
            service, extra = (
                self._service,
                {
                    "role": self._role,
                    "epoch": self._epoch,
                    "takeovers": self._takeovers,
                    "leader": self._leader,
                    "failed_terms": self._failed_terms,
                    "retry_in_s": max(0.0, self._retry_at - time.monotonic()),
                },
            )
        if service is not None:
            return {**service.health(), **extra}
        return {
            "connected": False,
            "boot": 0,
            "counts": {},
            "alarm_counts": {},
            "alarms": [],
            "open_alarms": 0,
            "messages": {},
            "tables": {t: {"last_seq": 0, "age_s": None} for t in sorted(self.config.tables)},
            "meters": {},
            **extra,
        }

    def wait_active(self, timeout: float = 10.0) -> bool:
        """True once this controller leads and its service is online."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            service = self._service
            if service is not None and service.wait_online(0.05):
                return True
            time.sleep(0.05)
        return False

    def wait_online(self, timeout: float = 10.0) -> bool:
        return self.wait_active(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the service (offline goodbye), give the lease up. Safe twice."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._thread.join(timeout + 5.0)

    def __enter__(self) -> HaService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the supervisor thread -------------------------------------------------------------

    def _set(self, **state: Any) -> None:
        with self._lock:
            for key, value in state.items():
                setattr(self, f"_{key}", value)

    def _run(self) -> None:
        elector, complained = self.elector, ""
        try:
            while not self._stop.is_set():
                try:
                    if self._service is None:
                        self._stand_by()
                    else:
                        self._lead()
                    complained = ""
                except ElectionError as exc:
                    if str(exc) != complained:  # once per distinct trouble, not every tick
                        complained = str(exc)
                        log.warning("election: %s", exc)
                    if self._service is not None and not elector.holds():
                        self._step_down("the lease ran out without a renewal")
                    self._stop.wait(self.poll_s)
        except Exception:
            log.exception("the jackpot controller's supervisor failed")
            raise
        finally:
            service = self._service
            if service is not None:
                service.close()  # a clean stop: the offline goodbye, then the lease
                self._set(service=None, role="standby", epoch=None)
                elector.resign()
            elector.close()

    def _failed_term(self, why: str) -> None:
        """A term that failed: wait longer before the next bid, each time in a row."""
        self._failed_terms += 1
        delay = min(RETRY_CAP_S, RETRY_FIRST_S * 2 ** (self._failed_terms - 1))
        self._retry_at = time.monotonic() + delay
        log.warning("%s: %d failed terms in a row; next bid for the lease in %.0f s",
                    why, self._failed_terms, delay)  # fmt: skip

    def _stand_by(self) -> None:
        if time.monotonic() < self._retry_at:  # after a failed term: let another one lead
            lease = self.elector.lease()
            self._set(leader=lease.holder)
            self._stop.wait(self.poll_s)
            return
        epoch = self.elector.try_lead()
        if epoch is None:
            lease = self.elector.lease()
            if lease.holder != self._leader:
                log.info("standby: %s leads (epoch %d)", lease.holder or "nobody", lease.epoch)
            self._set(leader=lease.holder)
            self._stop.wait(self.poll_s)
            return
        started = time.monotonic()
        fence = self.elector.fence_for(epoch)
        log.warning("elected: %s leads at epoch %d; starting the service", fence.name, epoch)
        try:
            service = self._factory(fence)
        except Exception:
            log.exception("could not start the service at epoch %d; giving the lease up", epoch)
            fence.lost.set()
            self.elector.resign()
            self._failed_term(f"the service did not start at epoch {epoch}")
            return
        with self._lock:
            self._service, self._role, self._epoch = service, "active", epoch
            self._leader, self._fence = fence.name, fence
            self._takeovers += 1
            self._next_renew = started + self.renew_s
            self._term_started = started
        log.info("active at epoch %d (boot %d)", epoch, service.boot)

    def _lead(self) -> None:
        fence: Fence = self._fence
        if fence.lost.is_set():
            self._step_down("the ledger's fence refused a write: another controller took over")
            return
        if not self.elector.holds():
            self._step_down("the lease ran out without a renewal")
            return
        if not self._service._thread.is_alive():  # its log says why; another one takes over
            self._step_down("the service thread died")
            if time.monotonic() - self._term_started < SHORT_TERM_S:
                self._failed_term("the service thread died soon after it started")
            return
        if time.monotonic() >= self._next_renew:
            self._next_renew = time.monotonic() + self.renew_s
            if not self.elector.renew():
                self._step_down("the lease is no longer ours (expired or taken)")
                return
        self._stop.wait(TICK_S)

    def _step_down(self, why: str) -> None:
        """Stop the service at once: no goodbye (the status topic is the new leader's), no
        PUBACK for what it did not commit; then a standby."""
        fence: Fence = self._fence
        fence.lost.set()  # before anything else: no transaction of this term commits now
        if time.monotonic() - self._term_started >= SHORT_TERM_S:
            self._failed_terms = 0  # a term that ran well: the failures before it are old
        service = self._service
        log.warning("stepping down from epoch %d: %s", fence.epoch, why)
        service.close(goodbye=False)
        self._set(service=None, role="standby", epoch=None)
        self.elector.epoch = None
