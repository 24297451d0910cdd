"""The Ray Tune trainable: one trial trains one batch of configurations and reports per chunk.

This module imports nothing but the standard library at the top, and configurations reach it
as plain dicts, on purpose: importing purerl's environments (gymnax) creates JAX's CPU client,
after which neither ``configure_jax`` (async dispatch off, see ``purerl.runtime``) nor the XLA
memory variables of a GPU share take effect. A trial applies both first, then imports the rest.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from purerl.search.sweep import ChunkProgress


def report_metrics(progress: ChunkProgress, num_configs: int, steps_per_update: int) -> dict:
    """What a trial reports after a chunk; ``return`` is what ASHA compares."""
    import numpy as np

    returns = np.where(progress.diverged, np.nan, progress.recent_returns)
    finite = returns[np.isfinite(returns)]
    steps = steps_per_update * progress.updates_done
    return {
        "return": float(finite.mean()) if finite.size else float("nan"),
        "updates": progress.updates_done,
        "env_steps": steps // len(returns),
        "returns": [float(r) if math.isfinite(r) else None for r in returns],
        "diverged": [bool(d) for d in progress.diverged],
        "steps_per_second": steps / max(progress.train_time_s, 1e-9),
        "compile_time_s": progress.wall_time_s - progress.train_time_s,
        "num_configs": num_configs,
    }


def train_trial(
    config: dict,
    *,
    algo_name: str,
    batches: list[list[dict[str, Any]]],
    env_vars: dict[str, str],
    updates_per_chunk: int | None,
) -> None:
    """Trains batch ``config["batch"]`` (configurations as ``dataclasses.asdict`` dicts),
    calling ``ray.tune.report`` with ``report_metrics`` after every chunk."""
    os.environ.update(env_vars)
    from purerl.runtime import configure_jax

    configure_jax()
    from ray import tune

    from purerl import algos
    from purerl.run.rundir import from_json
    from purerl.search.sweep import run_batch

    spec = algos.get(algo_name)
    configs = [
        spec.config_cls(**{k: from_json(v) for k, v in fields.items()})
        for fields in batches[config["batch"]]
    ]
    steps_per_update = configs[0].env_steps_per_update * len(configs) * configs[0].num_seeds

    def report(progress: ChunkProgress) -> None:
        tune.report(report_metrics(progress, len(configs), steps_per_update))

    run_batch(spec, configs, updates_per_chunk, on_chunk=report)
