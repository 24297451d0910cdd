"""The Ray Tune trainable: one trial trains one batch of configurations and reports per chunk.

This module imports nothing but the standard library at the top, and configurations reach it
as plain dicts, on purpose: importing purerl's environments (gymnax) creates JAX's CPU client,
after which neither ``configure_jax`` (async dispatch off, see ``purerl.run.runtime``) nor the XLA
memory variables of a GPU share take effect. A trial applies both first, then imports the rest.
"""

from __future__ import annotations

import os
from typing import Any


def train_trial(
    config: dict,
    *,
    algo_name: str,
    batches: list[list[dict[str, Any]]],
    env_vars: dict[str, str],
    updates_per_chunk: int | None,
) -> None:
    """Trains batch ``config["batch"]`` (configurations as ``dataclasses.asdict`` dicts),
    calling ``ray.tune.report`` after every chunk (``ray_backend.report_metrics``)."""
    os.environ.update(env_vars)
    from purerl.run.runtime import configure_jax

    configure_jax()
    from ray import tune

    from purerl import algos
    from purerl.run.rundir import from_json
    from purerl.search.ray_backend import report_metrics
    from purerl.search.sweep import ChunkProgress, run_batch

    spec = algos.get(algo_name)
    configs = [
        spec.config_cls(**{k: from_json(v) for k, v in fields.items()})
        for fields in batches[config["batch"]]
    ]
    steps_per_update = configs[0].env_steps_per_update * len(configs) * configs[0].num_seeds

    def report(progress: ChunkProgress) -> None:
        tune.report(report_metrics(progress, len(configs), steps_per_update))

    run_batch(spec, configs, updates_per_chunk, on_chunk=report)
