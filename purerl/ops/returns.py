"""Advantage and return estimators over time-major ``[T, B]`` rollouts."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from purerl.types import Array


def compute_gae(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    done: Array,
    gamma: float | Array,
    gae_lambda: float | Array,
) -> tuple[Array, Array]:
    """Generalised advantage estimation (Schulman et al. 2016, eq. 16), episode-aware.

    ``delta_t = r_t + gamma * (1 - terminated_t) * next_values_t - values_t`` and
    ``A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}``: a terminated step does not
    bootstrap, a truncated one bootstraps from ``next_values_t`` (the value of its final
    observation), and no advantage flows across an episode boundary.

    Args:
        rewards: ``[T, B]`` float.
        values: ``[T, B]`` value of the observation each step acted on.
        next_values: ``[T, B]`` value of the observation each step reached (before any reset).
        terminated: ``[T, B]`` bool, episode ended in a terminal state.
        done: ``[T, B]`` bool, episode ended for any reason (terminated or truncated).
        gamma: discount.
        gae_lambda: GAE lambda.

    Returns:
        ``(advantages, targets)``, each ``[T, B]`` float32, with ``targets = advantages + values``.
    """
    chex.assert_rank(rewards, 2)
    chex.assert_equal_shape([rewards, values, next_values, terminated, done])
    not_terminal = 1.0 - terminated.astype(jnp.float32)
    continues = 1.0 - done.astype(jnp.float32)
    deltas = rewards + gamma * not_terminal * next_values - values
    decay = gamma * gae_lambda * continues

    def backward(advantage_tp1, inputs):
        delta_t, decay_t = inputs
        advantage_t = delta_t + decay_t * advantage_tp1
        return advantage_t, advantage_t

    _, advantages = jax.lax.scan(
        backward, jnp.zeros_like(rewards[0]), (deltas, decay), reverse=True
    )
    return advantages, advantages + values


def next_step_values(values: Array, last_value: Array) -> Array:
    """Shifts ``[T, B]`` values one step forward, appending ``last_value`` (``[B]``)."""
    chex.assert_rank([values, last_value], [2, 1])
    return jnp.concatenate([values[1:], last_value[None]], axis=0)
