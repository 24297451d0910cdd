"""Rollout collection: act, step the environment, record, for ``T`` steps in one ``lax.scan``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.core.env import Environment, Step
from purerl.core.types import Array, Key, PyTree, Transition


class PolicyStep(NamedTuple):
    """An action batch ``[B, ...]`` and whatever the policy wants stored with it."""

    action: Array
    extras: PyTree = ()


ActFn = Callable[[Array, Key], PolicyStep]
"""``act(obs [B, ...], key) -> PolicyStep``."""


class Memory(NamedTuple):
    """A recurrent policy's memory between two steps, ``[B, ...]``."""

    hidden: PyTree
    """The cell's state after the last step, not yet reset for a new episode."""
    start: Array
    """bool: the next observation is the first of an episode (the policy resets ``hidden``
    to its initial value before reading it)."""


RecurrentActFn = Callable[[Any, Array, Key], tuple[PyTree, PolicyStep]]
"""``act(memory, obs [B, ...], key) -> (hidden after the step, PolicyStep)``: a policy with
memory (a ``Memory``), or without it in the same signature (memory and hidden ``()``)."""


class Rollout(NamedTuple):
    """Where the environments stand after a rollout, and the transitions ``[T, B, ...]``."""

    env_state: Any
    obs: Array
    transitions: Transition
    memory: Memory | tuple | None = None
    """The policy's memory after the rollout (``()`` for a policy without memory that took the
    memory signature, None for an ``ActFn``)."""
    memories: Memory | tuple | None = None
    """The memory each step started from, ``[T, B, ...]``: where the update replays from."""


def episode_starts(out: Step, autoreset: str) -> Array:
    """Whether each observation in ``out.obs`` begins an episode: after an episode's last step
    where the environment resets in the same step, after a reset step (``valid`` False)
    where it resets on the next one."""
    if autoreset == "same_step":
        return out.terminated | out.truncated
    return ~out.valid


def collect(
    env: Environment,
    env_params: Any,
    act: ActFn | RecurrentActFn,
    env_state: Any,
    obs: Array,
    key: Key,
    num_steps: int,
    memory: Memory | tuple | None = None,
) -> Rollout:
    """Runs ``act`` and ``env.step`` for ``num_steps`` steps of a batched environment.

    Args:
        env: a vectorised environment (``spec.num_envs`` set).
        env_params: its parameters.
        act: the behaviour policy: an ``ActFn``, or a ``RecurrentActFn`` when ``memory`` is given.
        env_state, obs: where the environments stand (``obs`` is ``[B, *obs_shape]``).
        key: used up by the rollout (one subkey per step for acting, one for the environment).
        num_steps: ``T``.
        memory: a recurrent policy's memory before the first step; it is carried from step to
            step, marked where episodes start, and recorded at each step (``Rollout.memories``).
            ``()`` drives a policy without memory through the same signature.

    Returns:
        The final environment state and observation, and ``Transition`` leaves ``[T, B, ...]``.
    """
    if memory is not None:
        return collect_with_memory(env, env_params, act, env_state, obs, key, num_steps, memory)

    def step(carry, step_key):
        env_state, obs = carry
        act_key, env_key = jax.random.split(step_key)
        policy = act(obs, act_key)
        env_state, out = env.step(env_key, env_state, policy.action, env_params)
        return (env_state, out.obs), to_transition(obs, policy, out)

    (env_state, obs), transitions = jax.lax.scan(
        step, (env_state, obs), jax.random.split(key, num_steps)
    )
    return Rollout(env_state, obs, transitions)


def to_transition(obs: Array, policy: PolicyStep, out: Step) -> Transition:
    return Transition(
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


def collect_with_memory(
    env: Environment,
    env_params: Any,
    act: RecurrentActFn,
    env_state: Any,
    obs: Array,
    key: Key,
    num_steps: int,
    memory: Memory | tuple,
) -> Rollout:
    """``collect`` for a policy that takes a memory (``()`` for none; see there)."""

    def step(carry, step_key):
        env_state, obs, memory = carry
        act_key, env_key = jax.random.split(step_key)
        hidden, policy = act(memory, obs, act_key)
        env_state, out = env.step(env_key, env_state, policy.action, env_params)
        next_memory = remember(memory, hidden, out, env.spec.autoreset)
        return (env_state, out.obs, next_memory), (to_transition(obs, policy, out), memory)

    (env_state, obs, memory), (transitions, memories) = jax.lax.scan(
        step, (env_state, obs, memory), jax.random.split(key, num_steps)
    )
    return Rollout(env_state, obs, transitions, memory, memories)


def remember(memory: Memory | tuple, hidden: PyTree, out: Step, autoreset: str) -> Any:
    """The memory after a step: the cell's state ``hidden``, marked where the next observation
    begins an episode (the policy forgets the last one there); ``()`` stays ``()``."""
    if not isinstance(memory, Memory):
        return memory
    return Memory(hidden, episode_starts(out, autoreset))


def concatenate(first: PyTree, second: PyTree) -> PyTree:
    """Observations (each leaf of a structured one) joined along their leading axis."""
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), first, second)


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
    visited = concatenate(traj.obs, jax.tree.map(lambda x: x[None], rollout.obs))
    if autoreset == "same_step":
        visited = concatenate(visited, traj.final_obs)
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), visited)
    all_values = value_fn(flat).reshape(-1, num_envs)
    values, next_values = all_values[:num_steps], all_values[1 : num_steps + 1]
    if autoreset == "same_step":
        final_values = all_values[num_steps + 1 :]
        next_values = jnp.where(traj.terminated | traj.truncated, final_values, next_values)
    return RolloutValues(values, next_values)


def recurrent_rollout_values(
    value_fn: Callable[[PyTree, Array, Array], Array],
    rollout: Rollout,
    values: Array,
    autoreset: str,
) -> RolloutValues:
    """``rollout_values`` for a recurrent policy that recorded each step's value as it acted
    (``values`` ``[T, B]``). ``value_fn(hidden [N, ...], obs [N, ...], start [N]) -> [N]`` is one
    step of the network from the cell's state; it is called once, batched, for the observation
    after the rollout and for the final observations of finished episodes, each read from the
    state the cell reached on the step before (where it resets on the same step)."""
    traj = rollout.transitions
    num_steps, num_envs = values.shape
    hidden, obs, start = rollout.memory.hidden, rollout.obs, rollout.memory.start
    if autoreset == "same_step":
        # The state after each step is the one the next step started from (the last: after).
        after = jax.tree.map(
            lambda seq, last: jnp.concatenate([seq[1:], last[None]]).reshape(
                (num_steps * num_envs,) + last.shape[1:]
            ),
            rollout.memories.hidden,
            rollout.memory.hidden,
        )
        hidden = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), hidden, after)
        final_obs = jax.tree.map(
            lambda x: x.reshape((num_steps * num_envs,) + x.shape[2:]), traj.final_obs
        )
        obs = concatenate(obs, final_obs)
        start = jnp.concatenate([start, jnp.zeros(num_steps * num_envs, bool)])
    computed = value_fn(hidden, obs, start)
    next_values = jnp.concatenate([values[1:], computed[None, :num_envs]])
    if autoreset == "same_step":
        final_values = computed[num_envs:].reshape(num_steps, num_envs)
        next_values = jnp.where(traj.terminated | traj.truncated, final_values, next_values)
    return RolloutValues(values, next_values)
