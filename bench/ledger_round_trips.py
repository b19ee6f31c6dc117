"""What applying a burst costs the ledger: statements and round trips per contribution.

Counted, not estimated: the ledger (jackpot/ledger.py) applies a deterministic stream of
table messages (contributions, round results, now and then a claim of a meter line, from
three tables: tests/test_jackpot_ledger.py's ``feed_messages``) into a fresh ledger, in
batches of ``--batch`` messages (one ``apply_batch`` each, as the service applies a burst),
while psycopg's connection is watched:

- ``statements``: every statement the ledger's connection sends (``Cursor.execute``,
  each row of an ``executemany``; BEGIN, SAVEPOINT and COMMIT included);
- ``round trips``: every time the ledger waits for the server's answer before it can go
  on: a statement outside pipeline mode; inside it, a fetch of a result not yet read, a
  sync, and the end of the pipeline (psycopg's ``Connection.wait`` on the generators that
  read results).

Per contribution = the counts over the whole stream divided by its contributions (the stream
is about 60% contributions, as a table's backlog); ``cpu_us_per_message``: this process's CPU time
(user + system: the ledger's Python and psycopg) per message; ``server_cpu_us_per_message``:
the PostgreSQL server's processes' (its backend, WAL writer, ...) per message.

``--ledger postgresql``: a PostgreSQL server of the bench's own (tests/pg_server.py: fsync
on, on a free loopback port); ``--ledger sqlite``: a file (statements only: SQLite has no
round trips).

    .venv/bin/python bench/ledger_round_trips.py [--ledger postgresql|sqlite] [--messages N]
        [--batch N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import conftest  # noqa: F401  (the trigger key of this process)
from test_jackpot_ledger import CONFIG, feed_messages, fixed

from jackpot.ledger import Ledger

#: psycopg generators whose ``wait`` reads a result (a round trip inside pipeline mode).
_READS = {"_fetch_gen", "_sync_gen", "_exit_gen"}


@contextlib.contextmanager
def counting(counts: Counter) -> contextlib.AbstractContextManager:
    """Count statements and round trips of every psycopg connection meanwhile."""
    import psycopg

    real_execute, real_many = psycopg.Cursor.execute, psycopg.Cursor.executemany
    real_wait = psycopg.Connection.wait

    def execute(self, query, params=None, **kw):
        counts["statements"] += 1
        return real_execute(self, query, params, **kw)

    def executemany(self, query, params_seq, **kw):
        params_seq = list(params_seq)
        counts["statements"] += len(params_seq)
        return real_many(self, query, params_seq, **kw)

    def wait(self, gen, *args, **kw):
        name = getattr(gen, "__name__", "")
        if self._pipeline is None or name in _READS:
            counts["round_trips"] += 1
        return real_wait(self, gen, *args, **kw)

    psycopg.Cursor.execute, psycopg.Cursor.executemany = execute, executemany
    psycopg.Connection.wait = wait
    try:
        yield counts
    finally:
        psycopg.Cursor.execute, psycopg.Cursor.executemany = real_execute, real_many
        psycopg.Connection.wait = real_wait


def proc_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of the processes ``pids`` (those still alive)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def run(
    location: str | Path, messages: int, batch: int, server: Any = None
) -> tuple[Counter, int, float, float]:
    """(counts, contributions, CPU seconds here, CPU seconds of the server) of applying the
    stream in batches of ``batch``."""
    stream = feed_messages(messages)
    contributions = sum(m["kind"] == "contribution" for m in stream)
    clock = iter(range(1_800_000_000, 1_900_000_000)).__next__
    with Ledger(location, CONFIG, randbelow=fixed(400), clock=lambda: float(clock())) as led:
        counts: Counter = Counter()
        sqlite = led.dialect == "sqlite"
        if sqlite:  # statements through the ledger's own store
            real = led._db.execute

            def execute(sql, params=()):
                counts["statements"] += 1
                return real(sql, params)

            led._db.execute = execute
            real_many = led._db.executemany

            def executemany(sql, rows):  # each row a statement stepped, as for psycopg
                rows = list(rows)
                counts["statements"] += len(rows)
                return real_many(sql, rows)

            led._db.executemany = executemany
        with contextlib.nullcontext() if sqlite else counting(counts):
            pids = server._processes() if server is not None else []
            t0, s0 = time.process_time(), proc_cpu_s(pids)
            for start in range(0, len(stream), batch):
                led.apply_batch(stream[start : start + batch], checked=True)
            cpu, server_cpu = time.process_time() - t0, proc_cpu_s(pids) - s0
    return counts, contributions, cpu, server_cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ledger", choices=("postgresql", "sqlite"), default="postgresql")
    p.add_argument("--messages", type=int, default=1200, help="messages (default 1200)")
    p.add_argument("--batch", type=int, default=20, help="messages a batch (default 20)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ledger-trips-") as tmp, contextlib.ExitStack() as st:
        if args.ledger == "postgresql":
            from pg_server import PgServer

            server = PgServer()
            st.callback(server.close)
            server.start()
            where = [server.create_database(), server.create_database()]
        else:
            server = None
            where = [Path(tmp) / "one.db", Path(tmp) / "batch.db"]
        figures = {}
        for size, location in zip((1, args.batch), where, strict=True):
            counts, contributions, cpu, server_cpu = run(location, args.messages, size, server)
            per = {k: v / contributions for k, v in counts.items()}
            figures[size] = (per, cpu / args.messages * 1e6, server_cpu / args.messages * 1e6)
            print(f"{args.ledger}, batches of {size}: {args.messages} messages "
                  f"({contributions} contributions): {counts['statements']} statements, "
                  f"{counts['round_trips']} round trips; per contribution "
                  f"{per.get('statements', 0):.2f} statements, "
                  f"{per.get('round_trips', 0):.2f} round trips; CPU "
                  f"{figures[size][1]:.0f} us a message (server {figures[size][2]:.0f} us)",
                  flush=True)  # fmt: skip
    one, many = figures[1], figures[args.batch]
    print(
        f"statements_per_contribution={many[0].get('statements', 0):.2f} "
        f"round_trips_per_contribution={many[0].get('round_trips', 0):.2f} "
        f"cpu_us_per_message={many[1]:.0f} server_cpu_us_per_message={many[2]:.0f} "
        f"single_round_trips_per_contribution={one[0].get('round_trips', 0):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
