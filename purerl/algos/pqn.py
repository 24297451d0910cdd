"""PQN: parallelised Q-learning without a replay buffer (Gallici et al. 2024, "Simplifying Deep
Temporal Difference Learning"), as a recipe of shared building blocks.

One ``update`` collects ``rollout_len`` epsilon-greedy steps from ``num_envs`` environments,
computes Q(lambda) targets over the rollout with the current network (no target network, no
replay buffer: many environments decorrelate the data instead), and runs ``num_epochs`` passes
of ``num_minibatches`` regression steps of ``Q(s, a)`` towards them. LayerNorm in the
Q-network keeps this stable. Truncated episodes bootstrap from their final observation, and
EnvPool's reset steps are masked out, as for PPO.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.algos import AlgoSpec
from purerl.config import (
    Activation,
    CommonConfig,
    ConfigError,
    MemoryConfig,
    require_network,
    require_positive,
    require_unit_interval,
    traced,
)
from purerl.core.algo import Algo, concrete_hparams, hparams_class
from purerl.core.distributions import EpsilonGreedy
from purerl.core.env import Environment
from purerl.core.nets import QNetwork, RecurrentQNetwork, make_q_network
from purerl.core.ops.losses import masked_mean, td_loss
from purerl.core.ops.optim import Optimizer, current_lr, linear_schedule, make_optimizer
from purerl.core.ops.returns import compute_lambda_returns
from purerl.core.ops.sgd import (
    Sequences,
    flatten_time_batch,
    fold_in_axis,
    minibatch_epochs,
    pmean,
    replay_sequences,
    split_sequences,
    vary_over_axis,
)
from purerl.core.rollout import (
    Memory,
    PolicyStep,
    Rollout,
    RolloutValues,
    collect,
    fresh_memory,
    init_network,
    recurrent_rollout_values,
    rollout_values,
)
from purerl.core.stats import summarize
from purerl.core.types import Array, Key, Metrics, PyTree


@dataclasses.dataclass(frozen=True)
class PQNConfig(MemoryConfig, CommonConfig):
    """PQN hyperparameters; defaults are CleanRL's classic-control settings (the presets in
    ``purerl/presets/pqn.py`` start from them)."""

    num_envs: int = 4
    """Parallel environments per agent."""
    rollout_len: int = 128
    """Steps per environment between updates."""
    num_epochs: int = 4
    """Passes over each rollout."""
    num_minibatches: int = 4
    """Minibatches per pass; must divide num_envs * rollout_len."""
    lr: float = traced(2.5e-4)
    """Learning rate."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over the run."""
    optimizer: Optimizer = "radam"
    """radam (as PQN's reference implementations) or adam."""
    gamma: float = traced(0.99)
    """Discount factor."""
    q_lambda: float = traced(0.65)
    """Lambda of the Q(lambda) targets: 0 one-step Q-learning, 1 Monte Carlo returns."""
    eps_start: float = traced(1.0)
    """Exploration rate at the start."""
    eps_end: float = traced(0.05)
    """Exploration rate after the decay."""
    exploration_fraction: float = traced(0.5)
    """Share of total_timesteps over which epsilon decays linearly from eps_start to eps_end."""
    max_grad_norm: float = traced(10.0)
    """Gradients are rescaled so their global norm is at most this."""
    layer_norm: bool = True
    """LayerNorm before every hidden activation of the Q-network (what keeps PQN stable)."""
    hidden_sizes: tuple[int, ...] = (120, 84)
    """Hidden layer widths of the Q-network MLP."""
    activation: Activation = "relu"
    """Hidden activation."""

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def env_steps_per_update(self) -> int:
        return self.batch_size

    def check(self) -> None:
        require_positive(self, "rollout_len", "num_epochs", "num_minibatches", "lr")
        require_positive(self, "max_grad_norm")
        require_unit_interval(
            self, "gamma", "q_lambda", "eps_start", "eps_end", "exploration_fraction"
        )
        if self.batch_size % self.num_minibatches:
            raise ConfigError(
                f"--num-minibatches {self.num_minibatches} does not divide the batch of "
                f"{self.batch_size} (num_envs {self.num_envs} x rollout_len {self.rollout_len}); "
                "pick a divisor of the batch"
            )
        require_network(self)
        self.check_memory()


PQNHparams = hparams_class(PQNConfig, "PQNHparams")
"""The traced hyperparameters: ``PQNConfig``'s fields marked ``traced``."""


class PQNState(NamedTuple):
    params: PyTree
    opt_state: Any
    env_state: Any
    obs: Array
    """``[B, *obs_shape]`` observations to act on next."""
    step: Array
    """int32 count of updates done."""
    hparams: PQNHparams
    memory: Any = ()
    """A recurrent network's ``Memory`` ``[B, ...]`` between updates (``()`` for an MLP)."""


class PQNBatch(NamedTuple):
    """Flattened training data, ``[N, ...]`` with ``N = T * B``."""

    obs: Array
    action: Array
    target: Array
    valid: Array


def q_values_of(
    network: QNetwork | RecurrentQNetwork, params: PyTree, batch: PQNBatch | Sequences
) -> tuple[Array, PQNBatch]:
    """Action values on a minibatch, with its data flat ``[N]`` in the same order: a recurrent
    network replays each sequence from its recorded memory (time-major)."""
    if isinstance(batch, Sequences):
        (_, q_values), flat = replay_sequences(functools.partial(network.apply, params), batch)
        return q_values, flat
    return network.apply(params, batch.obs), batch


def pqn_loss(
    params: PyTree, batch: PQNBatch | Sequences, *, network: QNetwork | RecurrentQNetwork
) -> tuple[Array, Metrics]:
    """Half squared error of ``Q(s, a)`` to its Q(lambda) target, over valid entries."""
    q_values, batch = q_values_of(network, params, batch)
    q_taken = jnp.take_along_axis(q_values, batch.action[:, None], axis=-1)[:, 0]
    loss = td_loss(q_taken, batch.target, batch.valid, "mse")
    return loss, {"loss/td": loss, "q/taken": masked_mean(q_taken, batch.valid)}


def epsilon_at(hparams: PQNHparams, total_timesteps: int, steps: Array) -> Array:
    decay_steps = hparams.exploration_fraction * total_timesteps
    return linear_schedule(hparams.eps_start, hparams.eps_end, decay_steps)(steps)


def make_pqn(
    cfg: PQNConfig, env: Environment, env_params: Any = None, axis_name: str | None = None
) -> Algo[PQNState]:
    """Builds PQN for a vectorised environment with discrete actions (see ``make_ppo``)."""
    num_envs = env.spec.num_envs
    if num_envs is None:
        raise ConfigError(f"PQN needs a vectorised environment; make {env.spec.id} with num_envs")
    if not env.spec.discrete:
        raise ConfigError(f"PQN needs discrete actions; {env.spec.id} has continuous ones")
    if (num_envs * cfg.rollout_len) % cfg.num_minibatches:
        raise ConfigError(
            f"--num-minibatches {cfg.num_minibatches} does not divide the per-device batch of "
            f"{num_envs * cfg.rollout_len}"
        )
    recurrent = cfg.network != "mlp"
    cfg.check_sequences(num_envs)
    network = make_q_network(
        env.spec,
        cfg.hidden_sizes,
        cfg.activation,
        cfg.precision,
        cfg.layer_norm,
        cfg.network,
        cfg.rnn_size,
    )
    env_params = env.default_params if env_params is None else env_params
    anneal = (cfg.num_updates, cfg.num_epochs * cfg.num_minibatches) if cfg.anneal_lr else None

    def optimizer(hparams: PQNHparams):
        return make_optimizer(
            hparams.lr, hparams.max_grad_norm, anneal_over=anneal, kind=cfg.optimizer
        )

    initial_memory = functools.partial(fresh_memory, cfg.network, cfg.rnn_size)

    def init(key: Key) -> PQNState:
        net_key, env_key = jax.random.split(key)
        env_state, obs = env.reset(fold_in_axis(env_key, axis_name), env_params)
        memory = vary_over_axis(initial_memory(num_envs), axis_name) if recurrent else ()
        params = init_network(network, net_key, obs, memory)
        hparams = PQNHparams.from_config(cfg)
        return PQNState(
            params, optimizer(hparams).init(params), env_state, obs, jnp.int32(0), hparams, memory
        )

    def collect_with_values(
        state: PQNState, key: Key, epsilon: Array
    ) -> tuple[Rollout, RolloutValues]:
        if not recurrent:

            def policy(obs: Array, act_key: Key) -> PolicyStep:
                q_values = network.apply(state.params, obs)
                return PolicyStep(EpsilonGreedy(q_values, epsilon).sample(act_key))

            rollout = collect(
                env, env_params, policy, state.env_state, state.obs, key, cfg.rollout_len
            )
            greedy_value = lambda obs: network.apply(state.params, obs).max(axis=-1)  # noqa: E731
            return rollout, rollout_values(greedy_value, rollout, env.spec.autoreset)

        def recurrent_policy(memory: Memory, obs: Array, act_key: Key):
            hidden, q_values = network.apply(
                state.params, memory.hidden, obs[None], memory.start[None]
            )
            action = EpsilonGreedy(q_values, epsilon).sample(act_key)
            return hidden, PolicyStep(action, q_values.max(axis=-1))

        def greedy_value(hidden, obs, start):
            return network.apply(state.params, hidden, obs[None], start[None])[1].max(axis=-1)

        rollout = collect(
            env, env_params, recurrent_policy, state.env_state, state.obs, key, cfg.rollout_len,
            state.memory,
        )  # fmt: skip
        recorded = rollout.transitions.extras
        return rollout, recurrent_rollout_values(
            greedy_value, rollout, recorded, env.spec.autoreset
        )

    def update(state: PQNState, key: Key) -> tuple[PQNState, Metrics]:
        rollout_key, sgd_key = jax.random.split(fold_in_axis(key, axis_name))
        # One epsilon per update, from the steps done before it (per agent).
        epsilon = epsilon_at(state.hparams, cfg.total_timesteps, state.step * cfg.batch_size)
        rollout, values = collect_with_values(state, rollout_key, epsilon)
        traj = rollout.transitions
        targets = compute_lambda_returns(
            traj.reward,
            values.values,
            values.next_values,
            traj.terminated,
            traj.terminated | traj.truncated,
            state.hparams.gamma,
            state.hparams.q_lambda,
        )
        batch = PQNBatch(traj.obs, traj.action, jax.lax.stop_gradient(targets), traj.valid)
        if recurrent:
            memories = rollout.memories
            batch = split_sequences(batch, memories.hidden, memories.start, cfg.sequence_len)
        else:
            batch = flatten_time_batch(batch)
        params, opt_state, metrics = minibatch_epochs(
            sgd_key,
            state.params,
            state.opt_state,
            batch,
            functools.partial(pqn_loss, network=network),
            optimizer(state.hparams),
            cfg.num_epochs,
            cfg.num_minibatches,
            axis_name,
        )
        metrics = {**pmean(metrics, axis_name), **summarize(traj.episode, axis_name)}
        metrics["optim/lr"] = current_lr(
            state.hparams.lr, state.step * cfg.num_epochs * cfg.num_minibatches, anneal
        )
        metrics["optim/epsilon"] = epsilon
        memory = rollout.memory if recurrent else ()
        new_state = PQNState(
            params, opt_state, rollout.env_state, rollout.obs, state.step + 1, state.hparams, memory
        )
        return new_state, metrics

    def evaluate_act(
        state: PQNState, obs: Array, key: Key, greedy: bool, memory: Memory | None = None
    ) -> Any:
        if memory is None:
            dist = EpsilonGreedy(network.apply(state.params, obs), state.hparams.eps_end)
            return dist.mode() if greedy else dist.sample(key)
        hidden, q_values = network.apply(state.params, memory.hidden, obs[None], memory.start[None])
        dist = EpsilonGreedy(q_values, state.hparams.eps_end)
        return (dist.mode() if greedy else dist.sample(key)), hidden

    hparams = concrete_hparams(PQNHparams, cfg)
    return Algo(
        init, update, evaluate_act, hparams, initial_memory=initial_memory if recurrent else None
    )


SPEC = AlgoSpec(
    name="pqn",
    summary="Parallelised Q-learning: no replay buffer, Q(lambda) targets, LayerNorm",
    config_cls=PQNConfig,
    hparams_cls=PQNHparams,
    build=make_pqn,
    presets_module="purerl.presets.pqn",
    smoke=PQNConfig(
        num_envs=4,
        rollout_len=16,
        num_minibatches=2,
        num_epochs=2,
        hidden_sizes=(16,),
        total_timesteps=4 * 16 * 6,
    ),
)
