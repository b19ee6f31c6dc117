"""The table's journal: every event on disk before its effects are carried out.

One layer per module, each importing only the ones above it:

- :mod:`~controller.journal.store`: opening a journal file (WAL, ``synchronous = FULL``)
  and the constants of its format;
- :mod:`~controller.journal.outbox`: the messages for the jackpot controller, written in the
  transaction of the event that made them, until it acknowledges them;
- :mod:`~controller.journal.schema` and :mod:`~controller.journal.reads`: a journal file's
  tables (creating and migrating them, the runs of its writers) and reading it (events,
  recall's round records, event scripts);
- :mod:`~controller.journal.file`: :class:`Journal`, one journal file: opening it, its
  meta, origin and checkpoints, and appending an event (the prompt's hot path);
- :mod:`~controller.journal.recovery`: :class:`JournaledTable`, the table behind its journal,
  and crash recovery from the newest checkpoint.

``docs/journal.md`` describes the file, ``docs/outbox.md`` the outbox.
"""

from controller.journal.file import (
    CHECKPOINTS_KEPT,
    CLOCK_STEP_MS,
    Checkpoint,
    Journal,
    Origin,
)
from controller.journal.reads import RECALL_KEYS, JournalEntry
from controller.journal.recovery import (
    GAME_EFFECTS,
    JournaledTable,
    Recovery,
    journal_event,
    money_and_game_difference,
)
from controller.journal.store import FORMAT, SCHEMA_VERSION

__all__ = [
    "CHECKPOINTS_KEPT",
    "CLOCK_STEP_MS",
    "FORMAT",
    "GAME_EFFECTS",
    "RECALL_KEYS",
    "SCHEMA_VERSION",
    "Checkpoint",
    "Journal",
    "JournalEntry",
    "JournaledTable",
    "Origin",
    "Recovery",
    "journal_event",
    "money_and_game_difference",
]
