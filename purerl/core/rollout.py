"""Rollout collection: act, step the environment, record, for ``T`` steps in one ``lax.scan``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.core.types import Array, Key, PyTree, Transition
from purerl.envs.base import Environment


class PolicyStep(NamedTuple):
    """An action batch ``[B, ...]`` and whatever the policy wants stored with it."""

    action: Array
    extras: PyTree = ()


ActFn = Callable[[Array, Key], PolicyStep]
"""``act(obs [B, ...], key) -> PolicyStep``."""


class Rollout(NamedTuple):
    """Where the environments stand after a rollout, and the transitions ``[T, B, ...]``."""

    env_state: Any
    obs: Array
    transitions: Transition


def collect(
    env: Environment,
    env_params: Any,
    act: ActFn,
    env_state: Any,
    obs: Array,
    key: Key,
    num_steps: int,
) -> Rollout:
    """Runs ``act`` and ``env.step`` for ``num_steps`` steps of a batched environment.

    Args:
        env: a vectorised environment (``spec.num_envs`` set).
        env_params: its parameters.
        act: the behaviour policy.
        env_state, obs: where the environments stand (``obs`` is ``[B, *obs_shape]``).
        key: used up by the rollout (one subkey per step for acting, one for the environment).
        num_steps: ``T``.

    Returns:
        The final environment state and observation, and ``Transition`` leaves ``[T, B, ...]``.
    """

    def step(carry, step_key):
        env_state, obs = carry
        act_key, env_key = jax.random.split(step_key)
        policy = act(obs, act_key)
        env_state, out = env.step(env_key, env_state, policy.action, env_params)
        transition = Transition(
            obs=obs,
            action=policy.action,
            reward=out.reward,
            terminated=out.terminated,
            truncated=out.truncated,
            final_obs=out.final_obs,
            valid=out.valid,
            episode=out.episode,
            extras=policy.extras,
        )
        return (env_state, out.obs), transition

    (env_state, obs), transitions = jax.lax.scan(
        step, (env_state, obs), jax.random.split(key, num_steps)
    )
    return Rollout(env_state, obs, transitions)


class RolloutValues(NamedTuple):
    """State values along a rollout, ``[T, B]`` each."""

    values: Array
    """Value of the observation each step acted on."""
    next_values: Array
    """Value of the observation each step reached: its final observation, then the next one."""


def rollout_values(
    value_fn: Callable[[Array], Array], rollout: Rollout, autoreset: str
) -> RolloutValues:
    """Evaluates ``value_fn`` (observations ``[N, ...]`` to values ``[N]``) on a rollout's
    observations in one batched pass, keeping it out of the sequential environment loop.

    A step reaches ``obs[t + 1]`` unless its episode ended; then it reached ``final_obs[t]``,
    which a truncated episode bootstraps from. Where the environment resets on the following
    step (``autoreset == "next_step"``) the two coincide and final observations are skipped.
    """
    traj = rollout.transitions
    num_steps, num_envs = traj.reward.shape
    visited = jnp.concatenate([traj.obs, rollout.obs[None]])
    if autoreset == "same_step":
        visited = jnp.concatenate([visited, traj.final_obs])
    flat = visited.reshape((-1,) + visited.shape[2:])
    all_values = value_fn(flat).reshape(-1, num_envs)
    values, next_values = all_values[:num_steps], all_values[1 : num_steps + 1]
    if autoreset == "same_step":
        final_values = all_values[num_steps + 1 :]
        next_values = jnp.where(traj.terminated | traj.truncated, final_values, next_values)
    return RolloutValues(values, next_values)
