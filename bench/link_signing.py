"""What end-to-end signatures cost per jackpot link message, on one core.

Signs and verifies a real contribution envelope (from a played Blazing 7's round) and an ack
with controller.link.signing, as the table and the controller do for every message, and
measures the digest the ledger keeps of each applied message. Prints per-operation
microseconds (median of ``--repeat`` batches of ``--n`` operations) and, last line,
``key=value`` figures:

    .venv/bin/python bench/link_signing.py [--n 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.link.messages import envelope, topic_for
from controller.link.signing import (
    Signer,
    Verifier,
    digest,
    new_signing_key,
    parse_public_key,
)
from controller.table.effects import Publish

TABLE = "hcm-bj-07"


def timed(fn, n: int, repeat: int) -> float:
    """Median microseconds per call of ``fn`` over ``repeat`` batches of ``n``."""
    batches = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        batches.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(batches)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="operations per batch")
    parser.add_argument("--repeat", type=int, default=5, help="batches (the median is kept)")
    args = parser.parse_args(argv)
    table = Signer(f"{TABLE}-1", new_signing_key())
    trusted = Verifier({table.key_id: parse_public_key(table.public_key)})
    payload = {"round": 88, "game": "pa-standard", "spot": 2, "wager": "blazing_7s",
               "pool": "blazing_7s", "stake": 500, "mystery": True}  # fmt: skip
    publish = Publish("contribution", "round-88/spot-2/blazing_7s/contribution", payload)
    message = envelope(TABLE, 12, 4711, publish, 1_770_000_000_000)
    topic = topic_for(TABLE, "contribution")
    signed = table.sign(topic, message)
    ack_topic = topic_for(TABLE, "ack")
    ack = {"v": 1, "table": TABLE, "seq": 4711, "sent_t": 1_770_000_000_000}
    signed_ack = table.sign(ack_topic, ack)
    figures = {
        "sign_contribution_us": timed(lambda: table.sign(topic, message), args.n, args.repeat),
        "verify_contribution_us": timed(lambda: trusted.verify(topic, signed), args.n, args.repeat),
        "sign_ack_us": timed(lambda: table.sign(ack_topic, ack), args.n, args.repeat),
        "verify_ack_us": timed(lambda: trusted.verify(ack_topic, signed_ack), args.n, args.repeat),
        "digest_us": timed(lambda: digest(signed), args.n, args.repeat),
    }
    for name, value in figures.items():
        print(f"{name:24s} {value:8.1f} us")
    # per message on the link: the table signs it, the controller verifies it and digests it,
    # then signs its ack, which the table verifies
    per_message = sum(figures.values())
    line = " ".join(f"{k}={v:.1f}" for k, v in figures.items())
    print(f"{line} per_message_us={per_message:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
