"""Jittered exponential backoff, shared by every link that reconnects (shoe, MQTT).

Pure: the caller draws ``r`` from its own random source, so tests fix it.

>>> [jittered_backoff(n, 0.2, 5.0, 0.0) for n in range(7)]
[0.1, 0.2, 0.4, 0.8, 1.6, 2.5, 2.5]
>>> jittered_backoff(10_000, 0.2, 5.0, 0.5)  # no overflow after a night offline
3.75
"""

from __future__ import annotations


def jittered_backoff(attempt: int, low: float, high: float, r: float) -> float:
    """Delay before retry ``attempt`` (0 first), in the caller's unit: doubling from ``low``
    up to ``high``, then jittered into its upper half by ``r`` in [0, 1) so a room of
    tables that lost the network together does not retry at the same moment."""
    ceiling = min(high, low * 2 ** min(attempt, 30))
    return ceiling / 2 + r * ceiling / 2
