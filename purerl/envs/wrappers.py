"""Small composable wrappers over the ``Environment`` interface.

Each wrapper holds the environment it wraps and keeps its own data in a state record whose
``inner`` field is the wrapped environment's state. ``envs.make`` stacks them in this order:
adapter -> ``ClipAction`` -> ``Vectorize`` -> ``RecordEpisodeStats`` -> ``ScaleReward`` ->
``NormalizeObservation``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.core import stats
from purerl.core.env import Box, Environment, EnvSpec, InvalidEnvError, Step
from purerl.core.ops.normalize import (
    RunningMeanStd,
    init_running_stats,
    normalize,
    update_running_stats,
)
from purerl.core.types import Array, Key


@dataclasses.dataclass(frozen=True)
class Wrapper:
    """Forwards everything to ``env``; subclasses override what they change."""

    env: Environment

    @property
    def spec(self) -> EnvSpec:
        return self.env.spec

    @property
    def pure(self) -> bool:
        return self.env.pure

    @property
    def default_params(self) -> Any:
        return self.env.default_params

    def reset(self, key: Key, params: Any) -> tuple[Any, Array]:
        return self.env.reset(key, params)

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        return self.env.step(key, state, action, params)


@dataclasses.dataclass(frozen=True)
class AutoReset(Wrapper):
    """Resets an environment in the same step its episode ends.

    For environments whose own ``step`` does not reset: the wrapped ``step`` returns the
    observation it reached in ``obs``; this wrapper moves it to ``final_obs`` and puts the first
    observation of a fresh episode in ``obs`` wherever the episode ended.
    """

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        step_key, reset_key = jax.random.split(key)
        state, step = self.env.step(step_key, state, action, params)
        reset_state, reset_obs = self.env.reset(reset_key, params)
        done = step.terminated | step.truncated
        state = jax.tree.map(lambda r, s: jnp.where(done, r, s), reset_state, state)
        obs = jax.tree.map(lambda r, o: jnp.where(done, r, o), reset_obs, step.obs)
        return state, step._replace(obs=obs, final_obs=step.obs)


@dataclasses.dataclass(frozen=True)
class ClipAction(Wrapper):
    """Clips continuous actions into the action space's bounds before the environment sees them.

    The policy's unclipped sample is what learning uses; only the environment gets the clipped
    one.
    """

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        space = self.env.spec.action_space
        if not isinstance(space, Box):
            raise TypeError(f"ClipAction needs a Box action space, {self.spec.id} has {space}")
        low = jnp.asarray(space.low, jnp.float32)
        high = jnp.asarray(space.high, jnp.float32)
        return self.env.step(key, state, jnp.clip(action, low, high), params)


@dataclasses.dataclass(frozen=True)
class Vectorize(Wrapper):
    """Steps ``num_envs`` copies of a pure environment with ``jax.vmap``.

    Each copy gets its own key split from the one given; ``params`` are shared.
    """

    num_envs: int = 1

    def __post_init__(self):
        if not self.env.pure:
            raise TypeError(
                f"{self.env.spec.id} is not a pure JAX environment; it cannot be vmapped"
            )
        if self.env.spec.num_envs is not None:
            raise TypeError(f"{self.env.spec.id} is already vectorised")

    @property
    def spec(self) -> EnvSpec:
        return dataclasses.replace(self.env.spec, num_envs=self.num_envs)

    def reset(self, key: Key, params: Any) -> tuple[Any, Array]:
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self.env.reset, in_axes=(0, None))(keys, params)

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self.env.step, in_axes=(0, 0, 0, None))(keys, state, action, params)


class EpisodeStatsState(NamedTuple):
    inner: Any
    accumulator: stats.EpisodeAccumulator


@dataclasses.dataclass(frozen=True)
class RecordEpisodeStats(Wrapper):
    """Fills ``Step.episode`` with the return and length of every episode that ends.

    Works on single or vectorised environments; returns are of the reward the wrapped
    environment gives and an episode ends at ``terminated | truncated``.
    """

    def reset(self, key: Key, params: Any) -> tuple[EpisodeStatsState, Array]:
        inner, obs = self.env.reset(key, params)
        shape = () if self.spec.num_envs is None else (self.spec.num_envs,)
        return EpisodeStatsState(inner, stats.init_accumulator(shape)), obs

    def step(
        self, key: Key, state: EpisodeStatsState, action: Array, params: Any
    ) -> tuple[EpisodeStatsState, Step]:
        inner, step = self.env.step(key, state.inner, action, params)
        done = step.terminated | step.truncated
        accumulator, report = stats.accumulate(state.accumulator, step.reward, done, step.valid)
        return EpisodeStatsState(inner, accumulator), step._replace(episode=report)


class ScaleRewardState(NamedTuple):
    inner: Any
    discounted_return: Array
    """``[B]`` running discounted return of each env's current episode."""
    return_stats: RunningMeanStd


@dataclasses.dataclass(frozen=True)
class ScaleReward(Wrapper):
    """Divides rewards by the running standard deviation of the discounted return.

    Each env keeps ``G = gamma * G + reward`` over its current episode (reset after the step that
    ends it); every batch of ``G`` joins running statistics, and the reward is divided by their
    standard deviation and clipped to ``[-clip, clip]``. The scale changes what the agent learns
    from, never what is reported: stack it outside ``RecordEpisodeStats``, whose episode returns
    stay in the environment's own units. Statistics are part of the state, so a checkpoint
    carries them. Needs a vectorised environment.
    """

    gamma: float = 0.99
    clip: float = 10.0

    def __post_init__(self):
        if self.env.spec.num_envs is None:
            raise TypeError("ScaleReward needs a vectorised environment")

    def reset(self, key: Key, params: Any) -> tuple[ScaleRewardState, Array]:
        inner, obs = self.env.reset(key, params)
        returns = jnp.zeros((self.env.spec.num_envs,), jnp.float32)
        return ScaleRewardState(inner, returns, init_running_stats(())), obs

    def step(
        self, key: Key, state: ScaleRewardState, action: Array, params: Any
    ) -> tuple[ScaleRewardState, Step]:
        inner, step = self.env.step(key, state.inner, action, params)
        returns = state.discounted_return * self.gamma + step.reward
        return_stats = update_running_stats(state.return_stats, returns)
        scale = jnp.sqrt(return_stats.var + 1e-8)
        reward = jnp.clip(step.reward / scale, -self.clip, self.clip)
        done = step.terminated | step.truncated
        returns = jnp.where(done, 0.0, returns)
        return ScaleRewardState(inner, returns, return_stats), step._replace(reward=reward)


class NormalizeObsState(NamedTuple):
    inner: Any
    obs_stats: RunningMeanStd


@dataclasses.dataclass(frozen=True)
class NormalizeObservation(Wrapper):
    """Standardises observations with running statistics over all envs and steps seen.

    Statistics are updated with each batch before it is normalised (as Gymnasium's wrapper does)
    and are part of the state, so a checkpoint carries them. Needs a vectorised environment.
    """

    clip: float = 10.0

    def __post_init__(self):
        if self.env.spec.num_envs is None:
            raise TypeError("NormalizeObservation needs a vectorised environment")
        if self.env.spec.structure is not None:
            raise InvalidEnvError(
                f"--normalize-obs standardises one array; {self.env.spec.id} gives structured "
                "observations"
            )

    @property
    def spec(self) -> EnvSpec:
        return dataclasses.replace(self.env.spec, obs_dtype="float32")

    def reset(self, key: Key, params: Any) -> tuple[NormalizeObsState, Array]:
        inner, obs = self.env.reset(key, params)
        obs_stats = update_running_stats(init_running_stats(self.env.spec.obs_shape), obs)
        return NormalizeObsState(inner, obs_stats), normalize(obs_stats, obs, self.clip)

    def step(
        self, key: Key, state: NormalizeObsState, action: Array, params: Any
    ) -> tuple[NormalizeObsState, Step]:
        inner, step = self.env.step(key, state.inner, action, params)
        obs_stats = update_running_stats(state.obs_stats, step.obs)
        step = step._replace(
            obs=normalize(obs_stats, step.obs, self.clip),
            final_obs=normalize(obs_stats, step.final_obs, self.clip),
        )
        return NormalizeObsState(inner, obs_stats), step
