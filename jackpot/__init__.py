"""The central jackpot controller (issue #5; its own package since issue #19): pools from
config, the ledger, the meters. A separate product on its own host: from the table's
``controller`` package it takes only the link contract (``controller.link``), the game
profiles and rules it proves messages against, and small shared utilities
(tests/test_purity.py).

``jackpot.pools`` is pure (config dataclasses, exact meter arithmetic);
``jackpot.ledger`` is the SQLite ledger every table message is applied to.
See docs/jackpot/controller.md.
"""
