"""What ran a benchmark, for the line just before its figures: the interpreter, the CPUs and
the load.

Figures of different interpreters or days are not comparable: the same code replays 1.1-1.4
times as fast on Debian's own ``/usr/bin/python3`` (the tables'; built with profile-guided
optimisation) as on pyenv's build, and this project's 2-core machine ran the same code tens of
percent slower on some days than on others (issue 32; docs/runtime.md "Benchmarks").
"""

from __future__ import annotations

import os
import platform
import sys


def cpu_model() -> str:
    """The first CPU's model name from ``/proc/cpuinfo`` (``?`` where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model"):
                    return value.strip()
    except OSError:
        pass
    return "?"


def describe() -> str:
    """``ran on: python 3.11.2 /usr/bin/python3.11, 2 CPUs (AMD EPYC), load 0.93``: the
    interpreter the venv was made from (resolved), the CPUs and the 1-minute load now."""
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    return (
        f"ran on: python {platform.python_version()} {base}, {os.cpu_count()} CPUs "
        f"({cpu_model()}), load {os.getloadavg()[0]:.2f}"
    )
