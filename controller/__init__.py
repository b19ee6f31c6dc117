"""Blackjack table controller.

``controller.rules`` is the pure rules library (cards, hands, house-rule
profiles, settlement, side bets); it imports no hardware, network or clock.
"""


def __getattr__(name: str) -> str:
    """``__version__``: the version with its commit (controller/build.py), read when asked."""
    if name == "__version__":
        from controller.build import version

        return version()
    raise AttributeError(f"module 'controller' has no attribute {name!r}")
