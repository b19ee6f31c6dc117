"""The jackpot link: tables <-> the central jackpot controller over MQTT 5.

:mod:`controller.link.messages` is the contract in code (topics, envelope, schema checks,
parsing), pure and without an MQTT client. The contract for people is docs/jackpot/README.md,
for tools docs/jackpot/asyncapi.yaml and the JSON Schemas in controller/link/schemas/.
"""

from controller.link.messages import (
    LinkMessageError,
    envelope,
    meter_topic,
    parse_message,
    topic_for,
    validate,
)

__all__ = ["LinkMessageError", "envelope", "meter_topic", "parse_message", "topic_for", "validate"]
