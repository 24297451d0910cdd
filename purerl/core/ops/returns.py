"""Advantage and return estimators over time-major ``[T, B]`` rollouts."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from purerl.core.types import Array


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


def compute_lambda_returns(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    done: Array,
    gamma: float | Array,
    lam: float | Array,
) -> Array:
    """TD(lambda) returns, episode-aware: Q(lambda) targets when the values are ``max_a Q``.

    ``G_t = r_t + gamma * (1 - terminated_t) * ((1 - lam * c_t) * next_values_t +
    lam * c_t * G_{t+1})`` with ``c_t = 1 - done_t`` (Sutton and Barto 2018, eq. 12.3 in
    recursive form; Peng and Williams 1996 for the Q version, as PQN uses it): a terminated step
    does not bootstrap, a truncated one bootstraps from its final observation's value, no return
    flows across an episode boundary, and the last step bootstraps fully from
    ``next_values``. These are exactly the targets of ``compute_gae`` (advantages + values)
    whenever ``values[t + 1] == next_values[t]`` within an episode, which holds for values and
    next values taken from one pass over the rollout (``purerl.core.rollout.rollout_values``), so
    they are computed by it.

    Args:
        rewards, values, next_values, terminated, done: ``[T, B]``, as for ``compute_gae``.
        gamma: discount.
        lam: lambda; 0 gives one-step targets, 1 Monte Carlo returns to the rollout's end.

    Returns:
        ``[T, B]`` float32 returns.
    """
    _, targets = compute_gae(rewards, values, next_values, terminated, done, gamma, lam)
    return targets


def q_learning_targets(
    rewards: Array,
    terminated: Array,
    next_q_target: Array,
    gamma: float | Array,
    next_q_online: Array | None = None,
) -> Array:
    """One-step Q-learning targets ``r + gamma * (1 - terminated) * Q'(s', a*)``.

    Plain DQN (Mnih et al. 2015, eq. 2) takes ``a* = argmax_a Q'(s', a)`` of the target network;
    Double DQN (van Hasselt et al. 2016, eq. 4) picks ``a*`` with the online network
    (``next_q_online``) and evaluates it with the target network. A truncated step is not
    terminated, so it bootstraps from ``s'``, its final observation.

    Args:
        rewards: ``[N]`` float.
        terminated: ``[N]`` bool, ``s'`` is terminal.
        next_q_target: ``[N, A]`` target-network values of ``s'``.
        gamma: discount.
        next_q_online: ``[N, A]`` online-network values of ``s'`` for Double DQN, else None.

    Returns:
        ``[N]`` float32 targets (no gradient flows through them).
    """
    chex.assert_rank([rewards, terminated, next_q_target], [1, 1, 2])
    chex.assert_equal_shape_prefix([rewards, terminated, next_q_target], 1)
    if next_q_online is None:
        next_value = next_q_target.max(axis=-1)
    else:
        chex.assert_equal_shape([next_q_online, next_q_target])
        best = jnp.argmax(next_q_online, axis=-1)
        next_value = jnp.take_along_axis(next_q_target, best[:, None], axis=-1)[:, 0]
    not_terminal = 1.0 - terminated.astype(jnp.float32)
    targets = rewards.astype(jnp.float32) + gamma * not_terminal * next_value
    return jax.lax.stop_gradient(targets)


def clipped_double_q_targets(
    rewards: Array,
    terminated: Array,
    next_q: Array,
    gamma: float | Array,
    next_log_prob: Array | None = None,
    alpha: float | Array = 0.0,
) -> Array:
    """Clipped double-Q targets ``r + gamma * (1 - terminated) * (min_i Q'_i(s', a') - alpha *
    log pi(a' | s'))``.

    TD3 (Fujimoto et al. 2018, eq. 10) takes the minimum over twin target critics at the
    smoothed target action; SAC (Haarnoja et al. 2018, eq. 3 with the twin critics of its
    appendix) also subtracts the entropy term of the next action sampled from the policy. A
    truncated step is not terminated, so it bootstraps from ``s'``, its final observation.

    Args:
        rewards: ``[N]`` float.
        terminated: ``[N]`` bool, ``s'`` is terminal.
        next_q: ``[E, N]`` target-critic values of ``(s', a')``, one row per critic.
        gamma: discount.
        next_log_prob: ``[N]`` ``log pi(a' | s')`` for the soft (SAC) target, else None.
        alpha: entropy coefficient (used with ``next_log_prob``).

    Returns:
        ``[N]`` float32 targets (no gradient flows through them).
    """
    chex.assert_rank([rewards, terminated, next_q], [1, 1, 2])
    chex.assert_equal_shape([rewards, terminated, next_q[0]])
    next_value = next_q.min(axis=0)
    if next_log_prob is not None:
        chex.assert_equal_shape([next_log_prob, rewards])
        next_value = next_value - alpha * next_log_prob
    not_terminal = 1.0 - terminated.astype(jnp.float32)
    targets = rewards.astype(jnp.float32) + gamma * not_terminal * next_value
    return jax.lax.stop_gradient(targets)
