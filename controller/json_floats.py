"""Noting whether JSON text held a float, while it is parsed.

No message of the link may hold one (money is integer cents): the outbox notes it when it
reads a stored row back, the link's parser when a message arrives, so the schema check needs
no second walk of the data to know.
"""

from __future__ import annotations


class FloatWatch:
    """A ``parse_float`` hook for ``json.loads`` (``parse_float=watch.seen``) that notes
    whether a float was parsed (``seen_any``)."""

    __slots__ = ("seen_any",)

    def __init__(self) -> None:
        self.seen_any = False

    def seen(self, text: str) -> float:
        self.seen_any = True
        return float(text)
