"""Trained policies as plain callables: ``purerl.load(run_dir)`` and ``TrainOutput.policy()``.

>>> policy = purerl.load("runs/ppo-CartPole-v1-20261123-120000")
>>> action = policy(obs)               # one observation [*obs_shape] -> one action
>>> actions = policy(batch_of_obs)     # [B, *obs_shape] -> [B, ...]

A structured observation (a dict, NamedTuple or dataclass of arrays) is given as the
environment gives it, each leaf with or without the batch axis; where it carries an
``action_mask``, only legal actions are chosen.

Observations are raw, as the environment emits them: a policy trained with
``normalize_obs`` standardises them with the statistics it was trained with. NumPy in gives
NumPy out, so the policy drives any simulator.

A recurrent policy (``--network gru`` or ``lstm``) remembers what it saw between calls, for each
row of the batch; tell it where episodes begin:

>>> policy.reset()                     # every row starts a new episode at the next call
>>> policy.reset(done)                 # only the rows where ``done`` [B] is set
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np

from purerl.algos import Algo, AlgoSpec, policy_step
from purerl.config import ConfigError
from purerl.core.ops.normalize import normalize
from purerl.core.types import Array, Key
from purerl.envs.wrappers import NormalizeObsState


class Policy:
    """One trained agent's policy.

    Args of ``__call__``:
        obs: one observation ``[*obs_shape]`` or a batch ``[B, *obs_shape]`` (every leaf of a
            structured one alike).
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
        obs_shape: Any,
        greedy: bool = True,
    ):
        self.spec = spec
        self.config = config
        self.state = state
        self.obs_shape = obs_shape
        """One observation's shape, or a tree of them for a structured observation."""
        self.greedy = greedy
        env_state = state.env_state
        self.obs_stats = env_state.obs_stats if isinstance(env_state, NormalizeObsState) else None
        self.key = jax.random.key(0)
        self.algo = algo
        self.memory = None
        """A recurrent policy's memory of the rows of the last batch (None: fresh episodes)."""

        def act(state: Any, obs: Array, key: Key, greedy: bool, memory: Any) -> Any:
            if self.obs_stats is not None:
                obs = normalize(self.obs_stats, obs)
            actions, memory = policy_step(algo, state, obs, key, greedy, memory)
            if memory is not None:  # the rows' next observations continue their episodes
                memory = memory._replace(start=jax.numpy.zeros_like(memory.start))
            return actions, memory

        self.act = jax.jit(act, static_argnums=3)

    @property
    def recurrent(self) -> bool:
        """Whether the policy carries a memory between calls."""
        return self.algo.initial_memory is not None

    def reset(self, done: Any = None) -> None:
        """Starts new episodes: in every row, or only where ``done`` ``[B]`` is set. A
        feed-forward policy has nothing to forget."""
        if self.memory is None or done is None:
            self.memory = None
            return
        done = jax.numpy.asarray(done, bool).reshape(self.memory.start.shape)
        self.memory = self.memory._replace(start=self.memory.start | done)

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
        # Every algorithm state holds its next observations [B, ...].
        obs_shape = jax.tree.map(lambda x: tuple(x.shape[1:]), state.obs)
        return cls(spec, config, algo, state, obs_shape, greedy)

    def batched(self, obs: Any) -> tuple[Any, bool]:
        """``obs`` as arrays with a batch axis, and whether it came with one.

        Raises:
            ValueError: observations of another structure or shape than the policy's.
        """
        shapes, treedef = jax.tree.flatten(self.obs_shape, is_leaf=is_shape)
        leaves = [obs]
        if not jax.tree_util.treedef_is_leaf(treedef):
            leaves, given = jax.tree.flatten(obs)
            if given != treedef:
                raise ValueError(f"observations must be laid out as {self.obs_shape}")
        leaves = [jax.numpy.asarray(leaf) for leaf in leaves]
        batch = leaves[0].ndim > len(shapes[0])
        for leaf, shape in zip(leaves, shapes, strict=True):
            if leaf.shape[leaf.ndim - len(shape) :] != shape or leaf.ndim != len(shape) + batch:
                raise ValueError(f"observations must end in shape {shape}, got {leaf.shape}")
        leaves = leaves if batch else [leaf[None] for leaf in leaves]
        return jax.tree.unflatten(treedef, leaves), batch

    def __call__(self, obs: Any, key: Key | None = None, greedy: bool | None = None) -> Any:
        greedy = self.greedy if greedy is None else greedy
        as_numpy = not isinstance(jax.tree.leaves(obs)[0], jax.Array)
        obs, batch = self.batched(obs)
        if key is None:
            self.key, key = jax.random.split(self.key)
        num = jax.tree.leaves(obs)[0].shape[0]
        memory = None
        if self.recurrent:
            memory = self.memory
            if memory is None or memory.start.shape[0] != num:
                memory = self.algo.initial_memory(num)
        actions, memory = self.act(self.state, obs, key, greedy, memory)
        self.memory = memory
        actions = actions if batch else actions[0]
        return np.asarray(actions) if as_numpy else actions


def is_shape(x: Any) -> bool:
    """A tuple of ints: one leaf's shape in ``Policy.obs_shape``."""
    return isinstance(x, tuple) and all(isinstance(n, int) for n in x)


def load(
    run_dir: str | Path,
    checkpoint: str | int = "latest",
    seed_index: int = 0,
    greedy: bool = True,
    env: Any = None,
    trust_run_code: bool = False,
    network: Any = None,
) -> Policy:
    """The trained policy of a run directory's checkpoint (``latest``, ``best`` or an update
    count, as a string or an int), for seed ``seed_index`` of the run. ``latest`` is the newest
    readable checkpoint; newer unreadable ones are passed over with a ``UserWarning`` naming
    each.

    Loading a run runs none of its code. A run trained on an environment object needs it again
    as ``env``; a run on a ``module:factory`` needs that string again as ``env`` (the module is
    then looked for on ``sys.path`` and in the current directory), or ``trust_run_code=True``,
    which imports and calls the factory the run's config.json names, from ``sys.path`` as it is:
    only for runs you trust. A network of yours likewise: the module object again as
    ``network`` for a run trained with one, or the run's ``module:attr`` string again (or
    ``trust_run_code=True``).

    Raises:
        CheckpointError: no such run or checkpoint, or an unreadable one.
        UntrustedCodeError: a run on a factory (or a ``module:attr`` network), with neither
            ``env`` (``network``) nor ``trust_run_code``.
        ConfigError: ``checkpoint`` neither of those; ``env`` or ``network`` missing for a run
            trained on an object, or not that run's.
    """
    from purerl.run.evaluate import load_agents

    if isinstance(checkpoint, int) and not isinstance(checkpoint, bool):
        checkpoint = str(checkpoint)
    if not isinstance(checkpoint, str):
        raise ConfigError(
            f"checkpoint must be 'latest', 'best' or an update count, got {checkpoint!r}"
        )
    run = load_agents(Path(run_dir), checkpoint, env, trust_run_code, network=network)
    for err in run.skipped:
        warnings.warn(f"skipped checkpoint {err.step}: {err.reason}", stacklevel=2)
    return Policy.from_agents(run.spec, run.cfg, run.algo, run.agents, seed_index, greedy)
