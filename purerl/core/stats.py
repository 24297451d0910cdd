"""Episode statistics as pure functions.

Returns and lengths are reported for whole episodes as the environment defines them
(``done``), from the reward given (the raw score where an adapter keeps one apart from a
clipped training reward), whatever auto-resets happen in between.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.types import Array, EpisodeStats, Metrics


class EpisodeAccumulator(NamedTuple):
    """Running return and length of the episode in progress, per environment."""

    returns: Array
    lengths: Array


def init_accumulator(shape: tuple[int, ...]) -> EpisodeAccumulator:
    return EpisodeAccumulator(jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.int32))


def accumulate(
    acc: EpisodeAccumulator, reward: Array, done: Array, counted: Array | bool = True
) -> tuple[EpisodeAccumulator, EpisodeStats]:
    """Adds one step and reports the episodes it finished.

    Args:
        acc: running totals, shape ``S`` (``[]`` or ``[B]``).
        reward: reward of this step, shape ``S``.
        done: the episode ended at this step, shape ``S``.
        counted: whether this step counts towards the length (False for reset-only steps).

    Returns:
        The totals for the next step (zeroed where an episode ended) and this step's report.
    """
    returns = acc.returns + reward.astype(jnp.float32)
    lengths = acc.lengths + jnp.asarray(counted, jnp.int32)
    report = EpisodeStats(
        done=done,
        returns=jnp.where(done, returns, 0.0),
        lengths=jnp.where(done, lengths, 0),
    )
    return EpisodeAccumulator(jnp.where(done, 0.0, returns), jnp.where(done, 0, lengths)), report


def summarize(episodes: EpisodeStats, axis_name: str | None = None) -> Metrics:
    """Reduces the reports of a rollout (any shape) to per-update metrics.

    ``episode/return`` and ``episode/length`` are means over the finished episodes and NaN when
    none finished; ``episode/count`` says how many there were, so that means over several
    updates can be weighted correctly.
    """
    sums = (episodes.done.sum(), episodes.returns.sum(), episodes.lengths.sum())
    if axis_name is not None:
        # Data parallel: the episodes of every device's environments count together.
        sums = jax.lax.psum(sums, axis_name)
    count, returns, lengths = sums
    denom = jnp.maximum(count, 1)
    nan_if_none = jnp.where(count > 0, 1.0, jnp.nan)
    return {
        "episode/return": returns / denom * nan_if_none,
        "episode/length": lengths / denom * nan_if_none,
        "episode/count": count,
    }


FINAL_WINDOW_EPISODES = 100
"""The final return of a seed is its mean over at least this many last finished episodes."""


def recent_mean_return(
    returns: np.ndarray, counts: np.ndarray, min_episodes: int = FINAL_WINDOW_EPISODES
) -> np.ndarray:
    """Mean return over at least the last ``min_episodes`` finished episodes, per seed.

    Whole updates are taken, counting back from the last one, until they hold
    ``min_episodes`` episodes (or the run has no more).

    Args:
        returns: ``[S, U]`` per-update mean returns (NaN where no episode finished).
        counts: ``[S, U]`` number of episodes behind each mean.
        min_episodes: how many episodes the window must at least hold.

    Returns:
        ``[S]`` means; NaN for a seed that finished no episode.
    """
    returns = np.asarray(returns, np.float64)
    counts = np.asarray(counts, np.float64)
    out = np.full(returns.shape[0], np.nan)
    for seed, (r, c) in enumerate(zip(returns, counts, strict=True)):
        from_end = np.cumsum(c[::-1])
        if from_end.size == 0 or from_end[-1] == 0:
            continue
        reached = np.nonzero(from_end >= min_episodes)[0]
        window = (reached[0] if reached.size else from_end.size - 1) + 1
        r_w, c_w = r[-window:], c[-window:]
        out[seed] = np.sum(np.where(c_w > 0, r_w * c_w, 0.0)) / np.sum(c_w)
    return out
