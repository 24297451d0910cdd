"""Timing helpers shared by the benchmark scripts (see docs/measuring.md).

A runner is a function of the call index returning the seconds that call took; ``measure``
interleaves runners so that drift on a shared machine hits every row alike.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable

import jax

Runner = Callable[[int], float]


def measure(runners: dict[str, Runner], repeats: int) -> dict[str, list[float]]:
    """Warm-up call, then ``repeats`` timed calls, alternating between runners (A B A B ...)."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    for call in range(repeats + 1):
        for name, run in runners.items():
            seconds = run(call)
            if call > 0:
                times[name].append(seconds)
    return times


def timed(fn, *args) -> float:
    """Seconds one call of ``fn`` takes, waiting for its device results."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - start


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
