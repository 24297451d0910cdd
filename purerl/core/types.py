"""Containers and aliases shared across purerl.

Leading axes are time-major wherever time appears: rollout arrays are ``[T, B, ...]`` with
``T`` steps per environment and ``B`` parallel environments.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeAlias

import jax

Array: TypeAlias = jax.Array
Key: TypeAlias = jax.Array
"""A typed PRNG key from ``jax.random.key``."""
PyTree: TypeAlias = Any
Metrics: TypeAlias = dict[str, jax.Array]
"""Flat, namespaced metric names (``loss/policy``, ``episode/return``) to scalar arrays."""


class EpisodeStats(NamedTuple):
    """Episodes that finished at one step, one entry per environment.

    ``done`` marks a finished episode; ``returns`` and ``lengths`` hold its undiscounted return and
    length there and are zero elsewhere. Shapes follow the reward: ``[B]`` per step, ``[T, B]``
    across a rollout.
    """

    done: Array
    returns: Array
    lengths: Array


class Transition(NamedTuple):
    """One environment step as stored by a rollout; every field is ``[T, B, ...]``.

    ``final_obs`` is the observation the step reached before any auto-reset, which is what a
    truncated episode bootstraps from. ``valid`` is False where the step only reset the
    environment (EnvPool ignores the action on the step after an episode ends); such steps are
    masked out of learning. ``extras`` holds what the acting policy recorded: for PPO the action's
    log-probability (values come after the rollout, from ``rollout.rollout_values``); DQN and
    PQN record nothing (``()``).
    """

    obs: Array
    action: Array
    reward: Array
    terminated: Array
    truncated: Array
    final_obs: Array
    valid: Array
    episode: EpisodeStats
    extras: PyTree
