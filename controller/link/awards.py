"""An ``award`` message from the jackpot controller, as the table's event.

Pure: no client, no clock. The publisher parses and validates the message first
(``parse_message``); :func:`award_event` only maps the schema's field names to the event's
(controller/link/schemas/award.json ``meter`` -> :class:`JackpotAward` ``line``; ``claim_key``
and ``meter_before``, absent from a refused award, as they are: the table checks them).

>>> award_event({"v": 1, "table": "hcm-bj-07", "award_id": "hcm-bj-07/12", "state": "offered",
...     "claim_seq": 12, "claim_key": "round-4/spot-3/blazing_7s/claim", "round": 4, "spot": 3,
...     "pool": "blazing_7s", "meter": "100% of meter", "amount": 1234567,
...     "meter_before": 1234567, "order": 1, "sent_t": 9}, t=10)
JackpotAward(award_id='hcm-bj-07/12', round=4, spot=3, pool='blazing_7s', amount=1234567, \
line='100% of meter', state='offered', t=10, claim_key='round-4/spot-3/blazing_7s/claim', \
meter_before=1234567)
"""

from __future__ import annotations

from typing import Any

from controller.table.events import JackpotAward


def award_event(message: dict[str, Any], t: int | None) -> JackpotAward:
    """The :class:`JackpotAward` event of a valid ``award`` message; ``t`` is the table's
    clock in ms when it arrived (the controller's ``sent_t`` is not the table's time)."""
    return JackpotAward(
        award_id=message["award_id"],
        round=message["round"],
        spot=message["spot"],
        pool=message["pool"],
        amount=message["amount"],
        line=message["meter"],
        state=message["state"],
        t=t,
        claim_key=message["claim_key"],
        meter_before=message.get("meter_before"),
    )
