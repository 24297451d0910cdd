"""The replay recipe of DQN, SAC and TD3 (discrete and continuous actions).

Not an algorithm itself (it is not in the registry). One ``update`` (``make_update``) runs
``Cadence.iterations`` iterations of: ``Cadence.env_steps`` steps of every environment with the
algorithm's ``act(state, obs, key, iteration) -> actions``, written to the replay buffer in
device memory (actions in the space's dtype: int32 Discrete, float32 Box); then, once past the
``learning_starts`` warm-up, its learning phase ``learn(state, key, iteration) -> (params,
target_params, opt_state, metrics)``. ``iteration`` counts the run's iterations from 0, derived
from the update count, so it is the same for every seed and chunking. A skipped learning phase
reports NaN for each metric; an update's metric is the mean over the iterations that computed
it (``mean_where_defined``, NaN if none did); ``optim/gradient_steps`` counts the gradient steps
taken, and ``update_metrics(state, iterations_done)`` adds the algorithm's own (``optim/lr``).
With ``lookahead`` 1 next observations are read from the following buffer slot, not stored.

DQN acts epsilon-greedily and takes one gradient step per learning phase (``algos.dqn``); SAC
and TD3 act uniformly at random during the warm-up, then take ``gradient_steps`` steps on fresh
minibatches per vector step (``algos.continuous``, what the two share).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.config import (
    ConfigError,
)
from purerl.core import buffers
from purerl.core.env import ActionSpace, Box, Environment, action_dtype
from purerl.core.ops.sgd import fold_in_axis, pmean
from purerl.core.rollout import PolicyStep, collect
from purerl.core.stats import summarize
from purerl.core.types import Array, Key, Metrics, PyTree, Transition

SMOKE = {
    "num_envs": 4,
    "rollout_len": 8,
    "buffer_size": 64,
    "batch_size": 16,
    "learning_starts": 32,
    "hidden_sizes": (16,),
    "total_timesteps": 4 * 8 * 6,
}
"""The sizes of a replay algorithm's smoke configuration (``AlgoSpec.smoke``): six updates, of
which the first only collects and the others learn."""

MAX_STEPS = 2**31 - 1
"""Environment and gradient steps are counted in int32 inside the update."""

LOCKSTEP = ("buffer.position", "buffer.size")
"""Every seed writes one block of steps per iteration, so the buffer's position and fill advance
with the update count: one copy serves all vmapped seeds, and under vmap a write goes to one
position for every seed (a slice update, not a scatter; docs/notes)."""


def check_replay(cfg: Any, gradient_steps: int = 1) -> None:
    """The checks every replay configuration needs (``tau``, buffer and batch sizes, the int32
    counters, ``learning_starts``); ``gradient_steps`` per environment step at most."""
    if not 0.0 < cfg.tau <= 1.0:
        raise ConfigError(f"--tau must lie in (0, 1], got {cfg.tau}")
    if cfg.buffer_size % cfg.num_envs:
        raise ConfigError(
            f"--buffer-size {cfg.buffer_size} is not a multiple of --num-envs "
            f"{cfg.num_envs}; each environment keeps buffer_size / num_envs steps"
        )
    if cfg.batch_size > cfg.buffer_size:
        raise ConfigError(
            f"--batch-size {cfg.batch_size} exceeds --buffer-size {cfg.buffer_size}; "
            "lower the batch or grow the buffer"
        )
    if cfg.learning_starts < 0:
        raise ConfigError(
            f"--learning-starts must be 0 or more environment steps, got {cfg.learning_starts}"
        )
    run_steps = cfg.num_updates * cfg.env_steps_per_update
    if cfg.total_timesteps > MAX_STEPS or run_steps * gradient_steps > MAX_STEPS:
        raise ConfigError(
            f"--total-timesteps {cfg.total_timesteps:,} is beyond the {MAX_STEPS:,} "
            "environment or gradient steps an int32 counter holds; split the run"
        )
    if run_steps and cfg.learning_starts >= run_steps:
        raise ConfigError(
            f"--learning-starts {cfg.learning_starts} is not below the run's "
            f"{run_steps} steps: it would never learn"
        )


class ReplayItem(NamedTuple):
    """One stored transition, ``[B, ...]`` per step; actions in the action space's dtype."""

    obs: Array
    action: Array
    reward: Array
    terminated: Array
    valid: Array
    next_obs: Array | tuple
    """The observation the step reached (its final one when the episode ended); ``()`` with
    ``lookahead`` 1, where it is read from the following slot instead."""


class Cadence(NamedTuple):
    """How one update interleaves acting and learning (static counts)."""

    iterations: int
    """Iterations in one update (one metrics row)."""
    env_steps: int
    """Steps of every environment in one iteration, collected before its learning phase."""
    warmup_iterations: int
    """Iterations of the run that only collect (its first ``learning_starts`` steps)."""
    gradient_steps: int = 1
    """Gradient steps in one learning phase."""

    @classmethod
    def from_config(cls, cfg: Any, env_steps: int = 1, gradient_steps: int = 1) -> Cadence:
        """The cadence of ``cfg`` (``num_envs``, ``rollout_len``, ``learning_starts``) with
        ``env_steps`` steps of every environment per iteration. An iteration learns once the
        environment steps after it exceed ``learning_starts``: ``(iteration + 1) * steps >
        learning_starts``, that is ``iteration >= learning_starts // steps``."""
        warmup = cfg.learning_starts // (cfg.num_envs * env_steps)
        return cls(cfg.rollout_len // env_steps, env_steps, warmup, gradient_steps)


def check_env(env: Environment, name: str, discrete: bool = False) -> None:
    if env.spec.num_envs is None:
        raise ConfigError(
            f"{name} needs a vectorised environment; make {env.spec.id} with num_envs"
        )
    if discrete and not env.spec.discrete:
        raise ConfigError(f"{name} needs discrete actions; {env.spec.id} has continuous ones")
    if not discrete and not isinstance(env.spec.action_space, Box):
        raise ConfigError(f"{name} needs continuous (Box) actions; {env.spec.id} has discrete ones")


def init_buffer(cfg: Any, env: Environment, obs: Array, lookahead: int = 0) -> buffers.ReplayBuffer:
    """An empty buffer of ``cfg.buffer_size`` transitions for observations like ``obs``."""
    num_envs, space = jax.tree.leaves(obs)[0].shape[0], env.spec.action_space
    shape = space.shape if isinstance(space, Box) else ()
    action = jnp.zeros((num_envs, *shape), action_dtype(space))
    flags = jnp.zeros((num_envs,), bool)
    example = ReplayItem(
        obs, action, jnp.zeros((num_envs,), jnp.float32), flags, flags, () if lookahead else obs
    )
    return buffers.init_buffer(example, cfg.buffer_size // env.spec.num_envs)


def replay_item(traj: Transition, space: ActionSpace, lookahead: int) -> ReplayItem:
    """What the buffer stores of a rollout (leaves ``[T, B, ...]``)."""
    return ReplayItem(
        traj.obs,
        traj.action.astype(action_dtype(space)),
        traj.reward.astype(jnp.float32),
        traj.terminated,
        traj.valid,
        () if lookahead else traj.final_obs,
    )


def sample(buffer: buffers.ReplayBuffer, key: Key, num: int, lookahead: int = 0) -> ReplayItem:
    """``num`` transitions drawn uniformly (leaves ``[num, ...]``); with ``lookahead`` 1 their
    next observations are read from the following slot."""
    index = buffers.sample_index(buffer, key, num, lookahead)
    batch = buffers.gather(buffer, index)
    if lookahead:
        batch = batch._replace(next_obs=buffers.gather(buffer, index, 1).obs)
    return batch


Learned = tuple[PyTree, PyTree, Any, Metrics]
"""What a learning phase returns: ``(params, target_params, opt_state, metrics)``."""
Act = Callable[[Any, Array, Key, Array], Array]
Learn = Callable[[Any, Key, Array], Learned]
UpdateMetrics = Callable[[Any, Array], Metrics]


def make_update(
    cadence: Cadence,
    env: Environment,
    env_params: Any,
    act: Act,
    learn: Learn,
    update_metrics: UpdateMetrics,
    axis_name: str | None = None,
    lookahead: int = 0,
) -> Callable[[Any, Key], tuple[Any, Metrics]]:
    """The ``update(state, key)`` of an off-policy algorithm (see the module docstring).

    The state is a NamedTuple with ``params``, ``target_params``, ``opt_state``, ``env_state``,
    ``obs``, ``buffer`` (``init_buffer``), ``step`` and ``hparams``.
    """
    space = env.spec.action_space
    skip = functools.partial(skip_learning, learn)

    def iteration(state, inputs: tuple[Array, Key]):
        index, key = inputs
        act_key, learn_key = jax.random.split(key)
        policy = functools.partial(policy_step, act, state, index)
        rollout = collect(
            env, env_params, policy, state.env_state, state.obs, act_key, cadence.env_steps
        )
        items = replay_item(rollout.transitions, space, lookahead)
        state = state._replace(
            env_state=rollout.env_state, obs=rollout.obs, buffer=buffers.add(state.buffer, items)
        )
        learning = index >= cadence.warmup_iterations
        params, target_params, opt_state, metrics = jax.lax.cond(
            learning, learn, skip, state, learn_key, index
        )
        state = state._replace(params=params, target_params=target_params, opt_state=opt_state)
        return state, (metrics, learning, rollout.transitions.episode)

    def update(state, key: Key) -> tuple[Any, Metrics]:
        first = state.step * cadence.iterations
        index = first + jnp.arange(cadence.iterations, dtype=jnp.int32)
        keys = jax.random.split(fold_in_axis(key, axis_name), cadence.iterations)
        state, (metrics, learned, episodes) = jax.lax.scan(iteration, state, (index, keys))
        metrics = mean_where_defined(pmean(metrics, axis_name))
        metrics["optim/gradient_steps"] = learned.sum() * cadence.gradient_steps
        metrics.update(update_metrics(state, first + cadence.iterations))
        episodes = summarize(episodes, axis_name)
        return state._replace(step=state.step + 1), {**metrics, **episodes}

    return update


def policy_step(act: Act, state: Any, iteration: Array, obs: Array, key: Key) -> PolicyStep:
    """``act`` as ``collect``'s policy."""
    return PolicyStep(act(state, obs, key, iteration))


def skip_learning(learn: Learn, state: Any, key: Key, iteration: Array) -> Learned:
    """What ``learn`` returns, without learning: the state's networks, NaN metrics."""
    *_, metrics = jax.eval_shape(learn, state, key, iteration)
    return state.params, state.target_params, state.opt_state, nan_like(metrics)


def mean_where_defined(metrics: Metrics) -> Metrics:
    """Means over the leading axis of each metric, skipping NaN entries: steps that did not
    compute it (no gradient step yet, or no policy update at a delayed step). NaN if none did."""

    def mean(values: Array) -> Array:
        defined = ~jnp.isnan(values)
        count = defined.sum()
        total = jnp.where(defined, values, 0.0).sum()
        return jnp.where(count > 0, total / jnp.maximum(count, 1), jnp.nan)

    return {name: mean(values) for name, values in metrics.items()}


def nan_like(metrics: Metrics) -> Metrics:
    """NaN metrics shaped like ``metrics``: what a skipped step reports (``mean_where_defined``
    leaves them out)."""
    return jax.tree.map(lambda m: jnp.full_like(m, jnp.nan), metrics)
