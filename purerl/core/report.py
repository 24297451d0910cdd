"""What the loop reports: a ``ChunkReport`` per chunk to each ``Sink``, and the one in-jit
escape hatch (``emit``).

Sinks live in the run layer: ``purerl.run.rundir.MetricsWriter`` writes ``metrics.jsonl``,
``purerl.run.sinks.ProgressSink`` shows progress, TensorBoard and W&B sinks log.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import jax
import numpy as np


class ChunkReport(NamedTuple):
    """Metrics of one chunk on the host: every value ``[num_seeds, chunk_len]``."""

    first_update: int
    """Updates done before this chunk."""
    metrics: dict[str, np.ndarray]
    wall_time_s: float
    """Since the run started (compile included)."""
    train_time_s: float
    """Spent running this process's chunks so far (compile and checkpoint saves excluded)."""
    evals: dict[str, np.ndarray] | None = None
    """Evaluation metrics ``[num_seeds]`` each (``eval/return``, ...) of the agents after the
    chunk's last update, when the run evaluated there (``purerl.core.loop.Evaluation``)."""


class Sink(Protocol):
    """Receives reports as the run goes; ``close`` gets the summary."""

    def write(self, report: ChunkReport) -> None: ...

    def close(self, summary: dict[str, Any]) -> None: ...


def emit(fn, *args) -> None:
    """Calls host function ``fn(*args)`` from inside jitted code (debug callback, unordered).

    The only sanctioned side effect inside jit; under ``vmap`` it fires once per mapped
    element, so pass an index (the seed) to tell them apart.
    """
    jax.debug.callback(fn, *args)
