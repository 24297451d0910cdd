"""Rollout collection: act, step the environment, record, for ``T`` steps in one ``lax.scan``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from purerl.envs.base import Environment
from purerl.types import Array, Key, PyTree, Transition


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
