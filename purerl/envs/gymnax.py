"""Adapter from gymnax (>= 1.0) environments to the purerl interface."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from purerl.core.types import Array, Key
from purerl.envs.base import EnvSpec, Step, action_space_from, no_episodes


@dataclasses.dataclass(frozen=True, eq=False)
class GymnaxEnv:
    """One gymnax environment.

    gymnax >= 1.0 auto-resets inside ``step`` and reports the pre-reset observation as
    ``info["final_observation"]``, which becomes ``Step.final_obs``. Where gymnax flags an
    episode as both terminated and truncated, termination wins (no bootstrap).
    """

    env: Any
    params: Any
    spec: EnvSpec
    pure: bool = True

    @property
    def default_params(self) -> Any:
        return self.params

    def reset(self, key: Key, params: Any) -> tuple[Any, Array]:
        obs, state = self.env.reset(key, params)
        return state, obs

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, action, params)
        reward = jnp.asarray(reward, jnp.float32)
        terminated = jnp.asarray(terminated, bool)
        return state, Step(
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=jnp.asarray(truncated, bool) & ~terminated,
            final_obs=info["final_observation"],
            valid=jnp.ones((), bool),
            episode=no_episodes(reward),
        )


def make_gymnax(env_id: str, **param_overrides: Any) -> GymnaxEnv:
    """Builds a gymnax environment; keyword arguments override fields of its ``EnvParams``.

    Raises:
        ValueError: an override names no field of the environment's parameters.
    """
    import gymnax

    env, params = gymnax.make(env_id)
    unknown = sorted(set(param_overrides) - set(dataclasses.asdict(params)))
    if unknown:
        fields = ", ".join(sorted(dataclasses.asdict(params)))
        raise ValueError(
            f"{env_id} has no parameter {', '.join(unknown)}; its parameters are: {fields}"
        )
    defaults = dataclasses.asdict(params)
    for name, value in param_overrides.items():
        problem = param_problem(value, defaults[name])
        if (
            problem is None
            and name == "max_steps_in_episode"
            and not np.all(np.asarray(value) >= 1)
        ):
            problem = f"must be at least 1, got {value!r}"
        if problem:
            raise ValueError(f"{env_id} parameter {name} {problem}")
    params = params.replace(**param_overrides)
    obs_space = env.observation_space(params)
    spec = EnvSpec(
        id=env_id,
        obs_shape=tuple(obs_space.shape),
        obs_dtype=np.dtype(obs_space.dtype).name,
        action_space=action_space_from(env.action_space(params)),
    )
    return GymnaxEnv(env, params, spec)


def param_problem(value: Any, default: Any) -> str | None:
    """Why ``value`` cannot replace the parameter whose default is ``default`` (None if it can):
    gymnax parameters are numbers and arrays, checked by kind and shape."""
    expected = np.asarray(default)
    try:
        given = np.asarray(value)
    except (ValueError, TypeError):
        return f"takes a number, got {value!r}"
    if given.shape != expected.shape:
        return f"takes shape {expected.shape}, got {value!r}"
    if expected.dtype.kind == "b":
        return None if given.dtype.kind == "b" else f"takes True or False, got {value!r}"
    if given.dtype.kind not in "biuf" or given.dtype.kind == "b":
        return f"takes a number, got {value!r}"
    if expected.dtype.kind in "iu" and given.dtype.kind == "f":
        return f"takes a whole number, got {value!r}"
    if not np.isfinite(given).all():
        return f"takes a finite number, got {value!r}"
    return None
