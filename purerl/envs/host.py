"""Simulators that live on the host, stepped from inside the compiled rollout.

EnvPool's pools and Gymnasium's vector environments step Python or C++ objects of this process.
``HostPool`` puts them inside ``jit`` and ``lax.scan`` through a JAX host callback
(``io_callback``): the actions of every agent leave the program, the pool steps once, and the
observations, rewards and episode ends come back. Such an environment is not a JAX value:
``pure`` is False, its state cannot be checkpointed (a resumed run starts fresh episodes) and it
cannot be vmapped like pure environments. For several seeds one pool of
``num_seeds x num_envs`` environments is built and the reset and step carry a custom ``vmap``
rule: under ``vmap`` over seeds the actions of all agents ``[S, B]`` are concatenated, the pool
is stepped once, and its outputs are split back to ``[S, B, ...]``. Agent ``s`` owns environments
``s * B .. s * B + B - 1``, seeded ``(seed + s) * B + j``, so agent ``s`` of a multi-seed run
sees the same environments as a single run with seed ``seed + s``.

One set of autoreset semantics (``autoreset="next_step"``, EnvPool's and Gymnasium's default):
a pool resets an environment on the step *after* its episode ended and ignores that step's
action; that step comes back with ``valid`` False and is masked out of learning. Its ``obs`` is
the first of the new episode, and the step before returned the episode's last observation,
which truncated episodes bootstrap from.

A subclass gives ``_host_reset()`` and ``_host_step(actions)`` (numpy in, numpy out, the whole
pool at once) and may replace ``_pool_step`` (EnvPool's XLA custom call does).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from purerl.core import stats
from purerl.core.env import Step
from purerl.core.types import Array, Key


class HostPoolState(NamedTuple):
    handle: Array
    """A token (EnvPool: the pool's XLA handle) whose value never changes; it orders the
    steps."""
    prev_done: Array
    """bool ``[B]``: the previous step ended an episode, so this one is a reset step."""
    accumulator: stats.EpisodeAccumulator
    """Raw score and length of each environment's game in progress."""


class RawStep(NamedTuple):
    """One pool step for one agent's environments, ``[B, ...]``."""

    obs: Array
    reward: Array
    terminated: Array
    truncated: Array
    score: Array
    """Raw (unclipped) reward."""
    game_over: Array
    """The whole game ended (all lives lost), or the episode was truncated."""


HOST_STEP_DTYPES = (np.float32, bool, bool, np.float32, bool)
"""The dtypes ``_host_step`` returns after the observations: reward, terminated, truncated,
score, lost (the game is over: for Atari all lives lost)."""


class HostPool:
    """A batched environment on the host; subclasses are frozen dataclasses with ``spec``
    (``spec.num_envs``: one agent's share), ``num_seeds``, ``handle`` and ``pure`` False."""

    spec: Any
    num_seeds: int
    handle: np.ndarray

    @property
    def default_params(self) -> Any:
        return None

    @property
    def pool_size(self) -> int:
        return self.num_seeds * self.spec.num_envs

    @property
    def draws_frames(self) -> bool:
        """``render_live`` draws the simulator (evaluation videos play step by step)."""
        return False

    def _obs_struct(self) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct((self.pool_size, *self.spec.obs_shape), self.spec.obs_dtype)

    def _host_reset(self) -> np.ndarray:
        raise NotImplementedError

    def _host_step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(obs, reward, terminated, truncated, score, lost)`` of the whole pool."""
        raise NotImplementedError

    def _callback_step(self, actions: Array) -> tuple[Array, ...]:
        size = self.pool_size
        shapes = (
            self._obs_struct(),
            *(jax.ShapeDtypeStruct((size,), dtype) for dtype in HOST_STEP_DTYPES),
        )
        return io_callback(self._host_step, shapes, actions, ordered=False)

    def _pool_step(self, handle: Array, actions: Array) -> tuple[Array, RawStep]:
        obs, reward, terminated, truncated, score, lost = self._callback_step(actions)
        dtype = self.spec.obs_dtype
        return handle, raw_step(dtype, obs, reward, terminated, truncated, score, lost)

    def reset(self, key: Key, params: Any) -> tuple[HostPoolState, Array]:
        """Resets the whole pool on the host; returns this agent's share of observations.

        The key's values are not used, but it must reach the seed-mapped reset: under ``vmap``
        it is what carries the seed axis (with no mapped input, JAX would run the unmapped
        reset once and copy agent 0's observations to every agent).
        """
        del params
        handle, obs = self._reset_obs(jax.random.key_data(key))
        num = self.spec.num_envs
        state = HostPoolState(handle, jnp.zeros(num, bool), stats.init_accumulator((num,)))
        return state, obs

    def step(
        self, key: Key, state: HostPoolState, action: Array, params: Any
    ) -> tuple[HostPoolState, Step]:
        del key, params
        handle, raw = self._step_agents(state.handle, action)
        valid = ~state.prev_done
        done = raw.terminated | raw.truncated
        accumulator, episode = stats.accumulate(state.accumulator, raw.score, raw.game_over, valid)
        step = Step(
            obs=raw.obs,
            reward=raw.reward,
            terminated=raw.terminated,
            truncated=raw.truncated,
            final_obs=raw.obs,
            valid=valid,
            episode=episode,
        )
        return HostPoolState(handle, done, accumulator), step

    def __post_init__(self):
        # Bound here so each adapter gets its own custom_vmap rules over its own pool.
        object.__setattr__(self, "_reset_obs", _seed_mapped_reset(self))
        object.__setattr__(self, "_step_agents", _seed_mapped_step(self))


def raw_step(
    obs_dtype: str,
    obs: Array,
    reward: Array,
    terminated: Array,
    truncated: Array,
    score: Array,
    lost: Array,
) -> RawStep:
    """A pool's outputs in purerl's types: truncation never set together with termination."""
    terminated, truncated = terminated.astype(bool), truncated.astype(bool)
    return RawStep(
        obs.astype(obs_dtype),
        reward.astype(jnp.float32),
        terminated,
        truncated & ~terminated,
        score.astype(jnp.float32),
        lost.astype(bool) | truncated,
    )


def _seed_mapped_reset(env: HostPool):
    num, seeds = env.spec.num_envs, env.num_seeds

    @jax.custom_batching.custom_vmap
    def reset_obs(key_data: Array) -> tuple[Array, Array]:
        # Traced unbatched inside vmapped scans too: only the shape matters there. Run
        # unbatched, it returns agent 0's share (the only agent when num_seeds is 1).
        obs = io_callback(env._host_reset, env._obs_struct())[:num]
        return jnp.asarray(env.handle), obs

    @reset_obs.def_vmap
    def reset_obs_over_seeds(axis_size, in_batched, key_data):
        _check_seeds(env, axis_size)
        obs = io_callback(env._host_reset, env._obs_struct())
        # A handle per agent (all equal) keeps the state mapped over seeds, so every later
        # step goes through the seed-mapped rule even if the actions happen not to be.
        handles = jnp.broadcast_to(jnp.asarray(env.handle), (seeds, *env.handle.shape))
        return (handles, obs.reshape(seeds, num, *env.spec.obs_shape)), (True, True)

    return reset_obs


def _seed_mapped_step(env: HostPool):
    num, seeds = env.spec.num_envs, env.num_seeds

    @jax.custom_batching.custom_vmap
    def step_agents(handle: Array, action: Array) -> tuple[Array, RawStep]:
        # As in reset: a shape-only trace under vmap, or the real step when num_seeds is 1.
        actions = jnp.tile(action, (seeds,) + (1,) * (action.ndim - 1))
        handle, raw = env._pool_step(handle, actions)
        return handle, jax.tree.map(lambda x: x[:num], raw)

    @step_agents.def_vmap
    def step_over_seeds(axis_size, in_batched, handle, action):
        _check_seeds(env, axis_size)
        handle_batched, action_batched = in_batched
        one_handle = handle[0] if handle_batched else handle
        if not action_batched:
            action = jnp.broadcast_to(action, (seeds, *action.shape))
        handle, raw = env._pool_step(one_handle, action.reshape(seeds * num, *action.shape[2:]))
        raw = jax.tree.map(lambda x: x.reshape(seeds, num, *x.shape[1:]), raw)
        handles = jnp.broadcast_to(handle, (seeds, *handle.shape))
        return (handles, raw), (True, jax.tree.map(lambda _: True, raw))

    return step_agents


def _check_seeds(env: HostPool, axis_size: int) -> None:
    if axis_size != env.num_seeds:
        raise ValueError(
            f"the {env.spec.id} pool was built for {env.num_seeds} seed(s) but is mapped over "
            f"{axis_size}; make it with num_seeds={axis_size}"
        )
