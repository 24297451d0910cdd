"""Loss terms, each a pure function of arrays with an optional validity mask."""

from __future__ import annotations

import typing
from typing import Literal

import chex
import jax.numpy as jnp

from purerl.core.ops.sgd import psum
from purerl.core.types import Array


def masked_mean(x: Array, mask: Array, axis_name: str | None = None) -> Array:
    """Mean of ``x`` over entries where ``mask`` is set (0 when none is).

    With ``axis_name`` the mean is over the entries of every device on that axis.
    """
    chex.assert_equal_shape([x, mask])
    mask = mask.astype(x.dtype)
    total, count = psum((jnp.sum(x * mask), jnp.sum(mask)), axis_name)
    return total / jnp.maximum(count, 1.0)


def normalize_advantages(
    advantages: Array, mask: Array, eps: float = 1e-8, axis_name: str | None = None
) -> Array:
    """Standardises advantages over the valid entries of a minibatch (on every device of
    ``axis_name``, so data-parallel shards are normalised as one minibatch)."""
    mean = masked_mean(advantages, mask, axis_name)
    var = masked_mean((advantages - mean) ** 2, mask, axis_name)
    return (advantages - mean) / (jnp.sqrt(var) + eps)


def ppo_policy_loss(
    log_prob: Array, old_log_prob: Array, advantages: Array, clip_eps: float | Array, mask: Array
) -> tuple[Array, dict[str, Array]]:
    """Clipped surrogate objective (Schulman et al. 2017, eq. 7), negated to be minimised.

    Returns:
        ``(loss, aux)`` where aux holds ``approx_kl`` (the low-variance estimator
        ``(r - 1) - log r``) and ``clip_frac`` (share of entries whose ratio left the clip range),
        both averaged over valid entries.
    """
    chex.assert_equal_shape([log_prob, old_log_prob, advantages, mask])
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    loss = -masked_mean(jnp.minimum(unclipped, clipped), mask)
    aux = {
        "approx_kl": masked_mean((ratio - 1.0) - log_ratio, mask),
        "clip_frac": masked_mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32), mask),
    }
    return loss, aux


def value_loss(
    values: Array,
    old_values: Array,
    targets: Array,
    mask: Array,
    clip_eps: float | Array | None = None,
) -> Array:
    """Half squared error to the targets; with ``clip_eps``, the pessimistic clipped variant.

    The clipped form keeps the new value within ``clip_eps`` of the value at collection time and
    takes the larger of the two errors (as in OpenAI baselines' PPO2).
    """
    chex.assert_equal_shape([values, old_values, targets, mask])
    error = (values - targets) ** 2
    if clip_eps is not None:
        clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
        error = jnp.maximum(error, (clipped - targets) ** 2)
    return 0.5 * masked_mean(error, mask)


TDLoss = Literal["huber", "mse"]
TD_LOSSES = typing.get_args(TDLoss)


def td_loss(q_taken: Array, targets: Array, mask: Array, kind: str = "huber") -> Array:
    """Mean regression loss of Q-values towards their targets over the valid entries.

    ``huber`` is the Huber loss with threshold 1, which equals clipping the TD error's gradient
    to [-1, 1] as in Mnih et al. (2015); ``mse`` is half the squared error.
    """
    chex.assert_equal_shape([q_taken, targets, mask])
    error = q_taken - targets
    if kind == "huber":
        abs_error = jnp.abs(error)
        per_entry = jnp.where(abs_error <= 1.0, 0.5 * error**2, abs_error - 0.5)
    elif kind == "mse":
        per_entry = 0.5 * error**2
    else:
        raise ValueError(f"td loss must be one of {TD_LOSSES}, got {kind!r}")
    return masked_mean(per_entry, mask)


def critics_loss(q_values: Array, targets: Array, mask: Array) -> Array:
    """Sum over an ensemble of critics of each one's mean squared error to shared targets, over
    the valid entries (twin critics: Fujimoto et al. 2018, Haarnoja et al. 2018).

    Args:
        q_values: ``[E, N]``, one row per critic.
        targets: ``[N]`` (gradients are not stopped here; targets come stopped).
        mask: ``[N]`` bool.

    Returns:
        Scalar ``sum_e mean_n (q_en - target_n)^2`` (full squared error, as CleanRL's
        ``F.mse_loss``), averaged over entries where ``mask`` is set.
    """
    chex.assert_rank(q_values, 2)
    chex.assert_equal_shape([q_values[0], targets, mask])
    per_critic = [masked_mean((q - targets) ** 2, mask) for q in q_values]
    return sum(per_critic[1:], per_critic[0])
