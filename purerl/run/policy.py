"""Trained policies as plain callables: ``purerl.load(run_dir)`` and ``TrainOutput.policy()``.

>>> policy = purerl.load("runs/ppo-CartPole-v1-20261123-120000")
>>> action = policy(obs)               # one observation [*obs_shape] -> one action
>>> actions = policy(batch_of_obs)     # [B, *obs_shape] -> [B, ...]

Observations are raw, as the environment emits them: a policy trained with
``normalize_obs`` standardises them with the statistics it was trained with. NumPy in gives
NumPy out, so the policy drives any simulator.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np

from purerl.algos import Algo, AlgoSpec
from purerl.core.ops.normalize import normalize
from purerl.core.types import Array, Key
from purerl.envs.wrappers import NormalizeObsState


class Policy:
    """One trained agent's policy.

    Args of ``__call__``:
        obs: one observation ``[*obs_shape]`` or a batch ``[B, *obs_shape]``.
        key: for sampled actions (``greedy=False``); default: an internal key stream.
        greedy: the most likely action (default: the policy's setting), else sampled as in
            training.
    """

    def __init__(
        self,
        spec: AlgoSpec,
        config: Any,
        algo: Algo,
        state: Any,
        obs_shape: tuple,
        greedy: bool = True,
    ):
        self.spec = spec
        self.config = config
        self.state = state
        self.obs_shape = tuple(obs_shape)
        self.greedy = greedy
        env_state = state.env_state
        self.obs_stats = env_state.obs_stats if isinstance(env_state, NormalizeObsState) else None
        self.key = jax.random.key(0)

        def act(state: Any, obs: Array, key: Key, greedy: bool) -> Array:
            if self.obs_stats is not None:
                obs = normalize(self.obs_stats, obs)
            return algo.act(state, obs, key, greedy)

        self.act = jax.jit(act, static_argnums=3)

    @classmethod
    def from_agents(
        cls,
        spec: AlgoSpec,
        config: Any,
        algo: Algo,
        agents: Any,
        seed_index: int = 0,
        greedy: bool = True,
    ) -> Policy:
        """The policy of seed ``seed_index`` of agents stacked over seeds."""
        num_seeds = agents.seed.shape[0]
        if not 0 <= seed_index < num_seeds:
            raise IndexError(f"seed_index must lie in [0, {num_seeds}), got {seed_index}")
        state = jax.tree.map(lambda x: x[seed_index], agents.state)
        obs_shape = state.obs.shape[1:]  # every algorithm state holds its next obs [B, ...]
        return cls(spec, config, algo, state, obs_shape, greedy)

    def __call__(self, obs: Any, key: Key | None = None, greedy: bool | None = None) -> Any:
        greedy = self.greedy if greedy is None else greedy
        as_numpy = not isinstance(obs, jax.Array)
        batch = np.ndim(obs) > len(self.obs_shape)
        obs = jax.numpy.asarray(obs)
        if obs.shape[obs.ndim - len(self.obs_shape) :] != self.obs_shape:
            raise ValueError(f"observations must end in shape {self.obs_shape}, got {obs.shape}")
        if key is None:
            self.key, key = jax.random.split(self.key)
        actions = self.act(self.state, obs if batch else obs[None], key, greedy)
        actions = actions if batch else actions[0]
        return np.asarray(actions) if as_numpy else actions


def load(
    run_dir: str | Path,
    checkpoint: str = "latest",
    seed_index: int = 0,
    greedy: bool = True,
    env: Any = None,
) -> Policy:
    """The trained policy of a run directory's checkpoint (``latest``, ``best`` or an update
    count), for seed ``seed_index`` of the run. ``latest`` is the newest readable checkpoint;
    newer unreadable ones are passed over with a ``UserWarning`` naming each. A run trained on
    an environment object needs it again as ``env`` (a ``module:factory`` run finds its own).

    Raises:
        CheckpointError: no such run or checkpoint, or an unreadable one.
        ConfigError: ``env`` missing for a run trained on an object, or not that run's.
    """
    from purerl.run.evaluate import load_agents

    run = load_agents(Path(run_dir), checkpoint, env)
    for err in run.skipped:
        warnings.warn(f"skipped checkpoint {err.step}: {err.reason}", stacklevel=2)
    return Policy.from_agents(run.spec, run.cfg, run.algo, run.agents, seed_index, greedy)
