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
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from purerl.algos import AlgoSpec
from purerl.algos.onpolicy import (
    SMOKE,
    Behaviour,
    Learner,
    OnPolicyConfig,
    OnPolicyState,
    make_onpolicy,
)
from purerl.config import Activation, ConfigError, require_unit_interval, traced
from purerl.core.algo import Algo, hparams_class
from purerl.core.distributions import epsilon_greedy
from purerl.core.env import Environment
from purerl.core.nets import make_q_network
from purerl.core.ops.losses import masked_mean, td_loss
from purerl.core.ops.optim import Optimizer, linear_schedule
from purerl.core.ops.returns import compute_lambda_returns
from purerl.core.rollout import PolicyStep, RolloutValues
from purerl.core.types import Array, Key, Metrics, Transition


@dataclasses.dataclass(frozen=True)
class PQNConfig(OnPolicyConfig):
    """PQN hyperparameters; defaults are CleanRL's classic-control settings (the presets in
    ``purerl/presets/pqn.py`` start from them)."""

    num_envs: int = 4
    """Parallel environments per agent."""
    lr: float = traced(2.5e-4)
    """Learning rate."""
    optimizer: Optimizer = "radam"
    """radam (as PQN's reference implementations) or adam."""
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

    def check(self) -> None:
        super().check()
        require_unit_interval(self, "q_lambda", "eps_start", "eps_end", "exploration_fraction")


PQNHparams = hparams_class(PQNConfig, "PQNHparams")
"""The traced hyperparameters: ``PQNConfig``'s fields marked ``traced``."""


class PQNBatch(NamedTuple):
    """Training data: ``[T, B, ...]`` as collected, ``[N, ...]`` flat."""

    obs: Array
    action: Array
    target: Array
    valid: Array


def greedy_value(q_values: Array) -> Array:
    """The value of a state under the greedy policy: its largest Q-value ``[N]``."""
    return q_values.max(axis=-1)


def training_data(traj: Transition, values: RolloutValues, hparams: Any) -> PQNBatch:
    """Q(lambda) targets of a rollout's actions (truncated episodes bootstrap)."""
    targets = compute_lambda_returns(
        traj.reward,
        values.values,
        values.next_values,
        traj.terminated,
        traj.terminated | traj.truncated,
        hparams.gamma,
        hparams.q_lambda,
    )
    return PQNBatch(traj.obs, traj.action, jax.lax.stop_gradient(targets), traj.valid)


def pqn_loss(q_values: Array, batch: PQNBatch, hparams: Any = None) -> tuple[Array, Metrics]:
    """Half squared error of ``Q(s, a)`` to its Q(lambda) target, over valid entries, from the
    network's Q-values ``[N, A]`` on a flat minibatch."""
    q_taken = jnp.take_along_axis(q_values, batch.action[:, None], axis=-1)[:, 0]
    loss = td_loss(q_taken, batch.target, batch.valid, "mse")
    return loss, {"loss/td": loss, "q/taken": masked_mean(q_taken, batch.valid)}


def epsilon_at(hparams: Any, total_timesteps: int, steps: Array) -> Array:
    decay_steps = hparams.exploration_fraction * total_timesteps
    return linear_schedule(hparams.eps_start, hparams.eps_end, decay_steps)(steps)


def make_pqn(
    cfg: PQNConfig,
    env: Environment,
    env_params: Any = None,
    axis_name: str | None = None,
    torso: nn.Module | None = None,
) -> Algo[OnPolicyState]:
    """Builds PQN for a vectorised environment with discrete actions (see ``make_ppo``)."""
    if not env.spec.discrete:
        raise ConfigError(f"PQN needs discrete actions; {env.spec.id} has continuous ones")
    masked = env.spec.masked

    def behaviour(state: OnPolicyState) -> Behaviour:
        # One epsilon per update, from the steps done before it (per agent).
        epsilon = epsilon_at(state.hparams, cfg.total_timesteps, state.step * cfg.batch_size)

        def act(q_values: Array, key: Key) -> PolicyStep:
            return PolicyStep(epsilon_greedy(q_values, epsilon, masked).sample(key))

        return Behaviour(act, {"optim/epsilon": epsilon})

    learner = Learner(
        name="PQN",
        make_network=make_q_network,
        value_of=greedy_value,
        behaviour=behaviour,
        training_data=training_data,
        loss=pqn_loss,
        policy=lambda q_values, hparams: epsilon_greedy(q_values, hparams.eps_end, masked),
        optimizer=cfg.optimizer,
    )
    return make_onpolicy(cfg, env, learner, PQNHparams, env_params, axis_name, torso)


SPEC = AlgoSpec(
    name="pqn",
    summary="Parallelised Q-learning: no replay buffer, Q(lambda) targets, LayerNorm",
    config_cls=PQNConfig,
    hparams_cls=PQNHparams,
    build=make_pqn,
    presets_module="purerl.presets.pqn",
    smoke=PQNConfig(**SMOKE),
)
