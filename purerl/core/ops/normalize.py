"""Running mean and variance for observation normalisation."""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax.numpy as jnp

from purerl.core.types import Array


class RunningMeanStd(NamedTuple):
    """Mean and variance of everything seen so far, per feature, with the count behind them."""

    mean: Array
    var: Array
    count: Array


def init_running_stats(shape: tuple[int, ...]) -> RunningMeanStd:
    # A tiny starting count keeps the first update well defined without biasing it.
    return RunningMeanStd(
        jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32), jnp.array(1e-4)
    )


def update_running_stats(stats: RunningMeanStd, batch: Array) -> RunningMeanStd:
    """Merges a batch ``[N, *shape]`` into the statistics.

    Parallel-variance combination of Chan, Golub and LeVeque (1979), eq. 2.1b.
    """
    chex.assert_rank(batch, stats.mean.ndim + 1)
    batch = batch.astype(jnp.float32)
    batch_count = batch.shape[0]
    batch_mean = batch.mean(axis=0)
    batch_var = batch.var(axis=0)
    delta = batch_mean - stats.mean
    total = stats.count + batch_count
    mean = stats.mean + delta * batch_count / total
    m2 = (
        stats.var * stats.count
        + batch_var * batch_count
        + delta**2 * stats.count * batch_count / total
    )
    return RunningMeanStd(mean, m2 / total, total)


def normalize(stats: RunningMeanStd, x: Array, clip: float = 10.0, eps: float = 1e-8) -> Array:
    """Standardises ``x`` (any leading axes) and clips it to ``[-clip, clip]``."""
    return jnp.clip((x - stats.mean) / jnp.sqrt(stats.var + eps), -clip, clip)
