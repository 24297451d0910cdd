"""The environment interface every adapter and wrapper implements.

An environment is an immutable object with pure ``reset`` and ``step`` functions; all mutable
data lives in the state it returns. Keys and environment parameters are explicit arguments, so
the same object can be stepped under ``jit``, ``vmap`` and ``lax.scan``.

Environments auto-reset: the ``Step`` of a finished episode already carries the first
observation of the next one in ``obs`` and the observation that ended the episode in
``final_obs``. A user's object of this interface (one pure environment, ``spec.num_envs``
None) trains as it is (``envs/custom.py``); one of the gymnax interface goes through
``envs/gymnax.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

import jax.numpy as jnp
import numpy as np

from purerl.config import ConfigError
from purerl.core.types import Array, EpisodeStats, Key

S = TypeVar("S")


class Step(NamedTuple):
    """What one call of ``step`` returns besides the new state.

    Shapes are per environment (``[]`` for a single env, ``[B]`` once vectorised), with the
    observation shape appended to ``obs`` and ``final_obs``.

    Attributes:
        obs: observation to act on next (first observation of a new episode after a reset).
        reward: float32 reward used for learning.
        terminated: bool, the episode reached a terminal state; do not bootstrap.
        truncated: bool, the episode was cut short (time limit); bootstrap from ``final_obs``.
            Never set together with ``terminated``.
        final_obs: observation this step reached, before any auto-reset.
        valid: bool, False where the step only reset the environment and ignored the action.
        episode: finished-episode report, filled in by ``RecordEpisodeStats``.
    """

    obs: Array
    reward: Array
    terminated: Array
    truncated: Array
    final_obs: Array
    valid: Array
    episode: EpisodeStats


@dataclasses.dataclass(frozen=True)
class Discrete:
    """``num_actions`` choices, actions are int32 in ``[0, num_actions)``."""

    num_actions: int


@dataclasses.dataclass(frozen=True)
class Box:
    """Real-valued actions of ``shape`` bounded elementwise by ``low`` and ``high``."""

    low: tuple[float, ...]
    high: tuple[float, ...]
    shape: tuple[int, ...]


ActionSpace = Discrete | Box


class InvalidEnvError(ConfigError):
    """An environment purerl cannot drive or cannot find again; the message says what is wrong
    and, where it can, the fix."""


def action_space_from(space: Any) -> ActionSpace:
    """Converts a gymnax or Gymnasium action space (anything with ``n``, or ``shape``, ``low``
    and ``high``) into ours; bounds are broadcast to the full shape and stored flat.

    Raises:
        InvalidEnvError: a space of another kind (Dict, Tuple, MultiDiscrete, MultiBinary).
    """
    if hasattr(space, "n") and tuple(getattr(space, "shape", ())) == ():
        return Discrete(int(space.n))
    if hasattr(space, "n") or not all(hasattr(space, name) for name in ("shape", "low", "high")):
        raise InvalidEnvError(
            f"action space {type(space).__name__} is not one purerl can drive: it acts in one "
            "Discrete space (with n) or one Box (with shape, low, high); flatten the others "
            "into one of these"
        )
    shape = tuple(space.shape)
    low = np.broadcast_to(np.asarray(space.low, np.float32), shape).ravel()
    high = np.broadcast_to(np.asarray(space.high, np.float32), shape).ravel()
    return Box(tuple(map(float, low)), tuple(map(float, high)), shape)


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Static description of an environment.

    Attributes:
        id: registered id, e.g. ``CartPole-v1``.
        obs_shape: shape of one observation (``()`` for a structured one).
        obs_dtype: dtype name of observations (``float32``, ``uint8``; ``structured``).
        action_space: ``Discrete`` or ``Box``.
        num_envs: parallel environments stepped per call, or None for a single environment.
        frame_skip: emulator frames per environment step (4 on Atari), for frame counts.
        autoreset: ``"same_step"`` when a finished episode's step already returns the next
            episode's first observation (``final_obs`` differs from ``obs`` there), or
            ``"next_step"`` when the environment resets on the following step instead (EnvPool):
            then ``final_obs`` equals ``obs`` and the reset step comes back with ``valid`` False.
        structure: for observations that are dicts, NamedTuples or dataclasses of arrays, their
            layout (``purerl.core.observations.Structure``); None for one array.
    """

    id: str
    obs_shape: tuple[int, ...]
    obs_dtype: str
    action_space: ActionSpace
    num_envs: int | None = None
    frame_skip: int = 1
    autoreset: Literal["same_step", "next_step"] = "same_step"
    structure: Any = None

    @property
    def discrete(self) -> bool:
        return isinstance(self.action_space, Discrete)

    @property
    def masked(self) -> bool:
        """Observations carry the legal actions (``purerl.core.observations``)."""
        return self.structure is not None and self.structure.masked


class Environment(Protocol[S]):
    """The interface of adapters and wrappers.

    ``pure`` is False for environments whose step has side effects outside JAX (EnvPool): those
    cannot be placed under ``vmap`` and ignore the keys they are given.
    """

    spec: EnvSpec
    pure: bool

    @property
    def default_params(self) -> Any: ...

    def reset(self, key: Key, params: Any) -> tuple[S, Array]:
        """Returns the initial state and observation."""
        ...

    def step(self, key: Key, state: S, action: Array, params: Any) -> tuple[S, Step]:
        """Advances one step (auto-resetting finished episodes)."""
        ...


def no_episodes(reward: Array) -> EpisodeStats:
    """An ``EpisodeStats`` reporting no finished episode, shaped like ``reward``."""
    return EpisodeStats(
        done=jnp.zeros(reward.shape, bool),
        returns=jnp.zeros(reward.shape, jnp.float32),
        lengths=jnp.zeros(reward.shape, jnp.int32),
    )


def action_dtype(space: ActionSpace) -> np.dtype:
    return np.dtype(np.int32) if isinstance(space, Discrete) else np.dtype(np.float32)
