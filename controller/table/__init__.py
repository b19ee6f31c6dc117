"""The table state machine (pure): events in, effects out.

See :mod:`controller.table.machine` for :class:`Table`, :mod:`.events` and
:mod:`.effects` for the data that crosses its edge.
"""

from controller.table.effects import Effect, Step
from controller.table.events import Event, parse_event
from controller.table.machine import Table, table_circles
from controller.table.settings import TableSettings

__all__ = ["Effect", "Event", "Step", "Table", "TableSettings", "parse_event", "table_circles"]
