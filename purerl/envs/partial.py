"""Partially observable variants of gymnax tasks: what a policy must remember to act well.

``CartPole-NoVelocity-v1`` is CartPole-v1 showing the cart position and pole angle only (its
velocities must be inferred from earlier observations); ``Breakout-MinAtar-Flicker`` hides each
observation of Breakout-MinAtar behind zeros with probability ``flicker_prob`` (0.5 by default),
as the flickering Atari games of Hausknecht & Stone 2015 ("Deep Recurrent Q-Learning for
Partially Observable MDPs"). Dynamics, rewards, time limits and options (the gymnax
``EnvParams`` fields) are the full task's. Both are small wrappers over any environment:
``KeepObs`` and ``Flicker``.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from purerl.core.env import Environment, EnvSpec, Step
from purerl.core.types import Array, Key
from purerl.envs.gymnax import make_gymnax
from purerl.envs.wrappers import Wrapper

FLICKER_STREAM = 0x0F11C4E2
"""Folded into a step's key for the flicker draw, so the wrapped environment gets the very key
it would get unwrapped (``flicker_prob=0`` plays the plain game step for step)."""


@dataclasses.dataclass(frozen=True)
class KeepObs(Wrapper):
    """Shows only the entries ``keep`` of the observation's last axis (``obs`` and ``final_obs``).

    ``env_id`` names the result in its spec (default: the wrapped environment's id).
    """

    keep: tuple[int, ...] = ()
    env_id: str | None = None

    def __post_init__(self):
        size = self.env.spec.obs_shape[-1] if self.env.spec.obs_shape else 0
        if not self.keep or len(set(self.keep)) != len(self.keep):
            raise ValueError(f"KeepObs takes distinct indices to keep, got {self.keep}")
        if not all(0 <= i < size for i in self.keep):
            raise ValueError(f"KeepObs indices {self.keep} exceed observations of size {size}")

    @property
    def spec(self) -> EnvSpec:
        inner = self.env.spec
        obs_shape = inner.obs_shape[:-1] + (len(self.keep),)
        return dataclasses.replace(inner, id=self.env_id or inner.id, obs_shape=obs_shape)

    def project(self, obs: Array) -> Array:
        """``[..., n] -> [..., len(keep)]``."""
        return obs[..., jnp.asarray(self.keep)]

    def reset(self, key: Key, params: Any) -> tuple[Any, Array]:
        state, obs = self.env.reset(key, params)
        return state, self.project(obs)

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        state, step = self.env.step(key, state, action, params)
        return state, step._replace(
            obs=self.project(step.obs), final_obs=self.project(step.final_obs)
        )


@dataclasses.dataclass(frozen=True)
class Flicker(Wrapper):
    """Replaces each observation by zeros with probability ``prob``, drawn from the key given.

    A step's ``obs`` and ``final_obs`` are hidden together (one frame per step); the first
    observation from ``reset`` flickers too. Single or vectorised environments: each env draws
    its own. ``env_id`` names the result in its spec (default: the wrapped environment's id).
    """

    prob: float = 0.5
    env_id: str | None = None

    def __post_init__(self):
        check_probability("Flicker prob", self.prob)

    @property
    def spec(self) -> EnvSpec:
        return dataclasses.replace(self.env.spec, id=self.env_id or self.env.spec.id)

    def hide(self, key: Key, *observations: Array) -> list[Array]:
        """``observations`` with the same random envs zeroed in each (batch shape leading)."""
        first = observations[0]
        batch_shape = first.shape[: first.ndim - len(self.env.spec.obs_shape)]
        hidden = jax.random.bernoulli(
            jax.random.fold_in(key, FLICKER_STREAM), self.prob, batch_shape
        )
        hidden = hidden.reshape(batch_shape + (1,) * len(self.env.spec.obs_shape))
        return [jnp.where(hidden, jnp.zeros_like(obs), obs) for obs in observations]

    def reset(self, key: Key, params: Any) -> tuple[Any, Array]:
        state, obs = self.env.reset(key, params)
        return state, self.hide(key, obs)[0]

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        state, step = self.env.step(key, state, action, params)
        obs, final_obs = self.hide(key, step.obs, step.final_obs)
        return state, step._replace(obs=obs, final_obs=final_obs)


def check_probability(what: str, value: Any) -> float:
    """``value`` as a float, or ValueError saying it must be a probability."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{what} takes a probability in [0, 1], got {value!r}")
    return float(value)


def gymnax_base(env_id: str, base_id: str, options: dict[str, Any]) -> Environment:
    """gymnax's ``base_id`` with ``options`` (fields of its ``EnvParams``); errors name
    ``env_id``."""
    try:
        return make_gymnax(base_id, **options)
    except ValueError as err:
        raise ValueError(f"{env_id} ({base_id} underneath): {err}") from err


CARTPOLE_POSITIONS = (0, 2)
"""Cart position and pole angle in CartPole's ``[x, x_dot, theta, theta_dot]``."""


def make_cartpole_no_velocity(env_id: str, **options: Any) -> Environment:
    """CartPole-v1 showing ``[x, theta]``; ``options`` are fields of its ``EnvParams``."""
    base = gymnax_base(env_id, "CartPole-v1", options)
    return KeepObs(base, keep=CARTPOLE_POSITIONS, env_id=env_id)


def make_flicker(env_id: str, flicker_prob: Any = 0.5, **options: Any) -> Environment:
    """The gymnax game ``env_id`` names before ``-Flicker``, its observations hidden with
    probability ``flicker_prob`` (0.5, Hausknecht & Stone's); ``options`` go to the game."""
    prob = check_probability(f"{env_id} option flicker_prob", flicker_prob)
    base = gymnax_base(env_id, env_id.removesuffix("-Flicker"), options)
    return Flicker(base, prob=prob, env_id=env_id)


PARTIAL_ENVS: dict[str, Callable[..., Environment]] = {
    "CartPole-NoVelocity-v1": make_cartpole_no_velocity,
    "Breakout-MinAtar-Flicker": make_flicker,
}
"""Each id's builder: ``builder(env_id, **options)`` returns one auto-resetting environment."""


def make_partial(env_id: str, **options: Any) -> Environment:
    """Builds the partially observable task ``env_id`` (a key of ``PARTIAL_ENVS``).

    Raises:
        ValueError: an option the task does not take, or a ``flicker_prob`` outside [0, 1].
    """
    return PARTIAL_ENVS[env_id](env_id, **options)
