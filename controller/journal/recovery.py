"""Crash recovery: a :class:`~controller.table.Table` behind its journal.

:class:`JournaledTable` commits each event (its round record, its outbox messages and, when
due, a checkpoint) before it returns the effects; opening it replays the journal from the
newest checkpoint and checks the replay against what was stored: the money and the game must
match (:func:`money_and_game_difference`), presentation may differ.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.errors import EventError, JournalError
from controller.journal import chain
from controller.journal.file import CLOCK_STEP_MS, Checkpoint, Journal
from controller.journal.store import WHAT_TO_DO, dumps
from controller.rules.profile import HouseRules
from controller.table import checkpoint as checkpoints
from controller.table import significant
from controller.table.effects import Publish, Record, Step
from controller.table.events import Event
from controller.table.machine import Table
from controller.table.settings import TableSettings
from controller.table.state import TableState

#: The effects of a round record that must match when it is replayed: the money and what the
#: jackpot controller was told. Prompts, alarms, lights and refusal texts are presentation: a
#: new software version may word them differently and still recover an old journal; recall
#: shows the stored record as it was shown.
GAME_EFFECTS = ("settled", "publish")


def money_and_game_difference(stored: dict[str, Any], replayed: dict[str, Any]) -> str | None:
    """What differs between a stored round record and its replay in the money and the game
    (the cards, events, settlements, publishes and their keys, the round's result), or None.
    Presentation (prompt and alarm wording) may differ."""
    ours = [e for e in stored.get("effects", []) if e.get("effect") in GAME_EFFECTS]
    theirs = [e for e in replayed.get("effects", []) if e.get("effect") in GAME_EFFECTS]
    for number, (was, now) in enumerate(zip(ours, theirs, strict=False), 1):
        if was != now:
            what = was.get("effect")
            if what == "settled":
                where = f"spot {was.get('spot')} {was.get('wager')}"
            else:
                where = str(was.get("key"))
            return (
                f"{what} {number} ({where}): journaled {dumps(was)[:200]}, now {dumps(now)[:200]}"
            )
    if len(ours) != len(theirs):
        return f"{len(ours)} settlements and publishes journaled, {len(theirs)} now"
    for key in sorted(set(stored) | set(replayed)):  # the cards, the events, the result
        if key != "effects" and stored.get(key) != replayed.get(key):
            return f"its {key} differs"
    return None


def _utc_now_ms() -> int:
    return time.time_ns() // 1_000_000


def journal_event(event: Event, now: int | None) -> Event:
    """The event as the journaled table handles and stores it: stamped with the table's
    clock ``now`` (ms) when it has no ``t`` of its own, or one earlier than ``now``, so
    that a replay, which lacks the ticks that changed nothing, keeps the same clock (round
    records carry it). An earlier ``t`` is normal: a debounced button is stamped with the
    moment it was confirmed, which may come before the last tick the table saw."""
    if now is not None and (event.t is None or event.t < now):
        return dataclasses.replace(event, t=now)
    return event


@dataclass(frozen=True, slots=True)
class Recovery:
    """What opening a journal replayed: ``events`` stored events through a fresh table,
    ``rounds`` round records checked against the replay.

    ``last_step`` is the replayed step of the last stored event: a crash may have come
    after it was journaled and before its effects were carried out, so the runtime
    carries them out again (lights and prompts are idempotent; publish requests are
    deduplicated by key). ``publishes`` are all the publish requests the stored events
    made, in order, for an outbox to reconcile by key.
    """

    events: int = 0
    rounds: int = 0
    last_step: Step | None = None
    publishes: tuple[Publish, ...] = ()
    checkpoint: int = 0  # the event whose checkpoint recovery started from (0: none)
    replayed: int = 0  # the events replayed after it


class JournaledTable:
    """A :class:`~controller.table.Table` whose every journaled event is on disk before
    :meth:`handle` returns its effects.

    Opening an existing journal replays it (crash recovery; :attr:`recovery`), from its
    newest checkpoint if it has one. The journal must have been written for ``rules.name``
    and ``settings``. ``checkpoint_every``: write a checkpoint with the first event journaled
    after each round's end (the end round, usually: the settling card's commit, which the
    dealer's prompt waits for, carries none) and at least every this many events (None: write
    none; recovery still uses those it finds).
    ``wall_clock()``: UTC milliseconds since the epoch, stored beside each event (default
    the system clock); a step of it against the table's clock is recorded, never obeyed.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        rules: HouseRules,
        settings: TableSettings | None = None,
        *,
        checkpoint_every: int | None = None,
        wall_clock: Callable[[], int] | None = None,
    ):
        self.rules = rules
        self.settings = settings or TableSettings()
        self.checkpoint_every = checkpoint_every
        self.wall_clock = wall_clock or _utc_now_ms
        self._clock_offset: int | None = None  # wall minus table clock at the last event
        self.journal = Journal(path, game=rules.name, settings=self.settings)
        self._table: Table | None = None
        self.recovery = Recovery()
        self.handled_ns = 0  # time.monotonic_ns() when the table's step was made (the trace)
        try:
            self._check_chain()
            self._rebuild()
        except BaseException:
            self.journal.close()
            raise

    # -- the one entry point --------------------------------------------------------

    def handle(self, event: Event) -> Step:
        """Apply one event and journal it; return its step only once it is on disk.

        Raises :class:`JournalError` if the journal cannot take it: the table is then
        rebuilt from the journal (as it was before the event) and the effects must not
        be carried out.
        """
        table = self._live()
        event = journal_event(event, table.state.now)
        round_number = table.state.round_number
        try:
            step = table.handle(event)
        except EventError:
            raise  # not a table event: refused before anything changed
        except BaseException:
            self._rebuild()  # the machine failed half-way: back to what is on disk
            raise
        self.handled_ns = time.monotonic_ns()
        if not step.journal:
            return step
        entry = event.to_dict()
        records = [e.data for e in step.effects if isinstance(e, Record) and e.record == "round"]
        utc_ms, clock_step, offset = self._wall_time(event.t)
        publishes = [significant.stamp(e, utc_ms) for e in step.effects if isinstance(e, Publish)]
        seq = self.journal.events_written + 1
        state = None
        every = self.checkpoint_every
        if every is not None and (self._round_ended or seq - self._checkpointed >= every):
            state = checkpoints.encode(table.state)
        try:
            self.journal.append(
                entry,
                round_number,
                step.accepted,
                records,
                publishes,
                state,
                utc_ms=utc_ms,
                clock_step=clock_step,
            )
        except JournalError as exc:
            try:
                self._rebuild()
            except BaseException as again:
                self._table = None
                raise JournalError(
                    f"journal {self.journal.path}: event {seq} ({event.TYPE}) was not recorded "
                    f"({exc.__cause__ or exc}) and the journal cannot be read back ({again}): "
                    "the table stops; its effects must not be carried out. Stop the game and "
                    "call a technician"
                ) from exc
            if self.journal.events_written >= seq:
                return step  # committed although the write reported an error (the rebuild
                # read any checkpoint it holds)
            raise JournalError(
                f"journal {self.journal.path}: event {seq} ({event.TYPE}) was not recorded "
                f"({exc.__cause__ or exc}); the table is as it was before it and its effects "
                f"were not carried out: {WHAT_TO_DO}"
            ) from exc
        if state is not None:
            self._checkpointed = seq
            self._round_ended = False
        if records:  # the round's checkpoint goes with the next event, not this one (its
            self._round_ended = True  # prompt waits for this commit)
        self._clock_offset = offset
        return step

    @property
    def stamps(self) -> dict[str, int]:
        """``time.monotonic_ns()`` at the stages of the last journaled event (benchmarks'
        trace): ``handled_ns`` the table's step made, ``encoded_ns`` its rows encoded (the
        transaction begins), ``begun_ns`` its ``BEGIN IMMEDIATE`` returned (the write lock
        held), ``commit_ns`` the rows written (COMMIT, with its fsync, begins)."""
        journal = self.journal
        return {
            "handled_ns": self.handled_ns,
            "encoded_ns": journal.encoded_ns,
            "begun_ns": journal.begun_ns,
            "commit_ns": journal.commit_ns,
        }

    def _wall_time(self, t: int | None) -> tuple[int, tuple[int, int] | None, int | None]:
        """The wall-clock time of an event stamped ``t`` (table clock, ms), the clock step
        since the last event of this run if there was one (``(step_ms, utc_before)``), and
        the new offset between the two clocks."""
        utc_ms = int(self.wall_clock())
        if t is None:
            return utc_ms, None, self._clock_offset
        offset = utc_ms - t
        last = self._clock_offset
        if last is not None and abs(offset - last) >= CLOCK_STEP_MS:
            return utc_ms, (offset - last, t + last), offset
        return utc_ms, None, offset

    def rotated(self) -> None:
        """The journal was rotated (:mod:`controller.journal.rotation`): the next checkpoint
        is due from here; the table itself is unchanged."""
        self._checkpointed = self.journal.events_written
        self.recovery = dataclasses.replace(self.recovery, checkpoint=self.journal.events_written)

    def _live(self) -> Table:
        if self._table is None:
            raise JournalError(
                f"journal {self.journal.path} could not be read back after a failed write: "
                "the table takes no events; restart the controller (it recovers from the journal)"
            )
        return self._table

    # -- recovery ------------------------------------------------------------------------

    def _rebuild(self) -> None:
        self._table = None
        self._table, self.recovery = self._replay()
        self._checkpointed = self.journal.events_written  # the next one is due from here
        self._round_ended = False
        # as on disk: a write that reported an error may still have committed its links
        try:
            self.journal.chain_head = chain.stored_head(self.journal.db)
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read journal {self.journal.path}: {exc}") from None

    def _check_chain(self) -> None:
        """Verify the file's hash chain before recovery trusts any checkpoint in it: a
        break refuses the file, naming the first row that does not verify."""
        journal = self.journal
        found = chain.check(journal.db, journal.path)
        journal._verified = found
        journal.chain_head = found.head

    def _start(self) -> tuple[Table, Checkpoint | None]:
        """A table at the newest checkpoint before the last event (so that the last event
        is replayed, for :attr:`Recovery.last_step`), else at the file's origin (a file
        that carries on from an older one), else a fresh one."""
        journal = self.journal
        last = journal._count()
        found = journal.latest_checkpoint(before=last) if last > 1 else None
        if found is not None:
            try:
                return checkpoints.restore(self.rules, self.settings, found.state), found
            except EventError:
                pass  # another format or damaged: replay from the origin or from event 1
        origin = journal.origin()
        if origin is None:
            return Table(self.rules, self.settings), None
        try:
            table = checkpoints.restore(self.rules, self.settings, origin.state)
        except EventError as exc:
            raise JournalError(
                f"journal {journal.path} starts from the state after event {origin.seq} "
                f"({origin.reason}, from {origin.previous}) and this software cannot read it "
                f"({exc}): open it with the software that wrote it ({origin.software}), or set "
                "the journal aside (docs/journal.md) so that a new file starts"
            ) from None
        return table, Checkpoint(origin.seq, origin.written, origin.software, origin.state)

    def _replay(self) -> tuple[Table, Recovery]:
        journal, path = self.journal, self.journal.path
        table, start = self._start()
        since_seq = start.seq if start else 0
        # the rounds settled after the start: from the start's round on (the primary key),
        # so a long history is never read
        first = table.state.round_number if start else 0
        try:
            stored = journal.db.execute(
                "SELECT round, seq, record FROM rounds WHERE round >= ? AND seq > ? ORDER BY seq",
                (first, since_seq),
            )
            pending = stored.fetchone()
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read journal {path}: {exc}") from None
        publishes: list[Publish] = []
        since = journal.outbox_since() or 0
        outboxed: list[tuple[int, Publish]] = []  # what the outbox got after the start
        last: Step | None = None
        count, rounds = since_seq, 0

        def diverged(seq: int, what: str) -> JournalError:
            return JournalError(
                f"journal {path}: replaying event {seq} {what}: the game profile "
                f"'{self.rules.name}' or the controller software has changed since the journal "
                "was written, or the file was altered. Open it with the profile and software "
                "that wrote it, or start a new journal file (recall still reads this one); "
                "call a technician if neither changed"
            )

        for entry in journal.entries(after=since_seq):
            if entry.seq != count + 1:
                raise JournalError(
                    f"journal {path}: event {count + 1} is missing (next is {entry.seq}); the "
                    "file is damaged: keep it for the investigation and call a technician"
                )
            step = table.handle(journal._parse(entry))
            count += 1
            links = None
            if step.accepted != entry.accepted:
                was = "accepted" if entry.accepted else "refused"
                raise diverged(entry.seq, f"({entry.event.get('type')}, {was} when journaled)")
            for effect in step.effects:
                if isinstance(effect, Publish):
                    effect = significant.stamp(effect, entry.utc_ms)
                    if effect.topic == "round_result":
                        links = self._round_links(entry.seq) if links is None else links
                        effect = chain.stamp(effect, links)
                    publishes.append(effect)
                    if entry.seq > since:
                        outboxed.append((entry.seq, effect))
                elif isinstance(effect, Record) and effect.record == "round":
                    number = effect.data["round"]
                    if pending is None or pending[1] != entry.seq or pending[0] != number:
                        raise diverged(entry.seq, f"settles round {number}, not as recorded")
                    difference = money_and_game_difference(
                        json.loads(pending[2]), json.loads(dumps(effect.data))
                    )
                    if difference is not None:
                        raise diverged(
                            entry.seq, f"settles round {number} differently ({difference})"
                        )
                    rounds += 1
                    pending = stored.fetchone()
            last = step
        if pending is not None:
            raise diverged(pending[1], f"does not settle round {pending[0]} as recorded")
        self._check_outbox(outboxed, start.written if start else 0)
        journal.events_written = count
        recovery = Recovery(count, rounds, last, tuple(publishes), since_seq, count - since_seq)
        return table, recovery

    def _round_links(self, seq: int) -> dict[int, str]:
        """The links of the round records event ``seq`` settled (a replayed ``round_result``
        carries its record's, as the written one did)."""
        try:
            return chain.round_links(self.journal.db, seq)
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read journal {self.journal.path}: {exc}") from None

    def _check_outbox(self, outboxed: list[tuple[int, Publish]], base: int = 0) -> None:
        """The outbox is what the replayed events wrote after the ``base`` messages written
        before the checkpoint: as many messages, and each one still pending from the replay
        equal to the publish request it was written for. Recovery never writes it (its rows
        were committed with their events)."""
        path = self.journal.path
        written, acked, rows = self.journal.outbox_rows()

        def damaged(what: str) -> JournalError:
            return JournalError(
                f"journal {path}: the outbox {what}: the file was altered or the software "
                "changed; keep it for the investigation and call a technician (do not delete "
                "the outbox: the jackpot controller has not acknowledged its messages)"
            )

        if written != base + len(outboxed):
            made = base + len(outboxed)
            raise damaged(f"holds {written} messages but the journal's events made {made}")
        if [row.seq for row in rows] != list(range(acked + 1, written + 1)):
            raise damaged(f"does not hold exactly messages {acked + 1} to {written}")
        for row in rows:
            if row.seq <= base:
                continue  # written before the checkpoint: checked when that was recovered
            event, publish = outboxed[row.seq - base - 1]
            if (row.event, row.kind, row.key, row.payload) != (
                event,
                publish.topic,
                publish.key,
                json.loads(dumps(publish.payload)),
            ):
                raise damaged(f"message {row.seq} ({row.key}) is not what event {event} made")

    @property
    def recovered(self) -> int:
        """How many stored events the last rebuild replayed."""
        return self.recovery.events

    # -- the table's public view --------------------------------------------------------

    @property
    def state(self) -> TableState:
        """The table's internal state (holds the hole card: never show it)."""
        return self._live().state

    def snapshot(self) -> dict[str, Any]:
        """The public view (hole card hidden until the dealer's turn)."""
        return self._live().snapshot()

    @property
    def round_in_progress(self) -> bool:
        return self._live().round_in_progress

    # -- recall and export ---------------------------------------------------------------

    def last_rounds(self, n: int = 10) -> list[dict[str, Any]]:
        """See :meth:`Journal.last_rounds`."""
        return self.journal.last_rounds(n)

    def round_record(self, number: int) -> dict[str, Any] | None:
        """See :meth:`Journal.round_record`."""
        return self.journal.round_record(number)

    def round_script(self, number: int) -> str:
        """See :meth:`Journal.round_script`."""
        return self.journal.round_script(number)

    def export_script(self) -> str:
        """See :meth:`Journal.export_script`."""
        return self.journal.export_script()

    def close(self) -> None:
        """Close the journal; safe to call twice."""
        self.journal.close()

    def __enter__(self) -> JournaledTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
