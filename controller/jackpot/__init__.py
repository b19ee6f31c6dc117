"""The central jackpot controller (issue #5): pools from config, the ledger, the meters.

``controller.jackpot.pools`` is pure (config dataclasses, exact meter arithmetic);
``controller.jackpot.ledger`` is the SQLite ledger every table message is applied to.
See docs/jackpot/controller.md.
"""
