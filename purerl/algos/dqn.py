"""Deep Q-Networks (Mnih et al. 2015) with a replay buffer in device memory, as a recipe over
the replay loop of ``algos.offpolicy``.

DQN owns its configuration, the epsilon-greedy behaviour policy, the TD loss and its learning
phase. One ``update`` runs ``rollout_len // train_frequency`` iterations of: ``train_frequency``
epsilon-greedy steps of every environment, written to the replay buffer; then, once
``learning_starts`` environment steps have been taken, one gradient step on a uniformly sampled
minibatch and, every ``target_update_period`` environment steps, a (Polyak) target update.
Acting and learning interleave exactly as in the sequential algorithm; ``rollout_len`` only sets
how many iterations one update (one metrics row) spans.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from purerl.algos import AlgoSpec, offpolicy
from purerl.config import (
    Activation,
    CommonConfig,
    ConfigError,
    require_network,
    require_positive,
    require_unit_interval,
    traced,
)
from purerl.core import buffers
from purerl.core.algo import Algo, concrete_hparams, hparams_class
from purerl.core.distributions import epsilon_greedy
from purerl.core.env import Environment
from purerl.core.nets import QNetwork, make_q_network
from purerl.core.ops.losses import TDLoss, masked_mean, td_loss
from purerl.core.ops.optim import current_lr, linear_schedule, make_optimizer
from purerl.core.ops.returns import q_learning_targets
from purerl.core.ops.sgd import fold_in_axis, sgd_step
from purerl.core.rollout import PolicyStep
from purerl.core.types import Array, Key, Metrics, PyTree


@dataclasses.dataclass(frozen=True)
class DQNConfig(CommonConfig):
    """DQN hyperparameters; defaults are the CartPole-v1 preset."""

    num_envs: int = 10
    """Parallel environments per agent."""
    rollout_len: int = 50
    """Steps per environment in one update (one metrics row); a multiple of train_frequency."""
    train_frequency: int = 1
    """Steps per environment between gradient steps (each step is num_envs transitions)."""
    buffer_size: int = 10_000
    """Transitions the replay buffer holds; a multiple of num_envs."""
    batch_size: int = 128
    """Transitions per gradient step."""
    learning_starts: int = 10_000
    """Environment steps taken before the first gradient step."""
    target_update_period: int = 500
    """Environment steps between target-network updates."""
    tau: float = traced(1.0)
    """Target update rate: 1 copies the online network, below 1 is Polyak averaging."""
    lr: float = traced(2.5e-4)
    """Adam learning rate."""
    anneal_lr: bool = False
    """Decay the learning rate linearly to 0 over the run's gradient steps."""
    gamma: float = traced(0.99)
    """Discount factor."""
    eps_start: float = traced(1.0)
    """Exploration rate at the start."""
    eps_end: float = traced(0.05)
    """Exploration rate after the decay."""
    exploration_fraction: float = traced(0.5)
    """Share of total_timesteps over which epsilon decays linearly from eps_start to eps_end."""
    max_grad_norm: float = traced(10.0)
    """Gradients are rescaled so their global norm is at most this."""
    loss: TDLoss = "mse"
    """TD loss: mse (half squared error) or huber (threshold 1)."""
    double_q: bool = False
    """Double DQN targets: the online network picks the next action (van Hasselt et al. 2016)."""
    network: str = "mlp"
    """Torso: mlp (the MLP of hidden_sizes; the Nature CNN for pixels), or module:attr, a flax
    module of yours (a class, or a function returning one) that purerl adds its Q head to
    (docs/guide.md, "Your own network")."""
    hidden_sizes: tuple[int, ...] = (120, 84)
    """Hidden layer widths of the Q-network MLP (purerl's torso)."""
    layer_norm: bool = False
    """LayerNorm before every hidden activation of the Q-network (PQN's default; purerl's
    torso)."""
    activation: Activation = "relu"
    """Hidden activation (of purerl's torso)."""

    @property
    def cadence(self) -> offpolicy.Cadence:
        """Iterations of train_frequency steps per update, and those before learning starts."""
        return offpolicy.Cadence.from_config(self, self.train_frequency)

    @property
    def env_steps_per_iteration(self) -> int:
        return self.num_envs * self.train_frequency

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def num_gradient_steps(self) -> int:
        """Gradient steps in the whole run (iterations that end past learning_starts)."""
        iterations = self.num_updates * self.cadence.iterations
        return iterations - min(iterations, self.cadence.warmup_iterations)

    def check(self) -> None:
        require_positive(self, "rollout_len", "train_frequency", "buffer_size", "batch_size")
        require_positive(self, "target_update_period", "lr", "max_grad_norm")
        require_unit_interval(self, "gamma", "eps_start", "eps_end", "exploration_fraction")
        if self.rollout_len % self.train_frequency:
            raise ConfigError(
                f"--train-frequency {self.train_frequency} does not divide --rollout-len "
                f"{self.rollout_len}; pick a divisor"
            )
        offpolicy.check_replay(self)
        require_network(self)


DQNHparams = hparams_class(DQNConfig, "DQNHparams")
"""The traced hyperparameters: ``DQNConfig``'s fields marked ``traced``."""


class DQNState(NamedTuple):
    params: PyTree
    target_params: PyTree
    opt_state: Any
    env_state: Any
    obs: Array
    """``[B, *obs_shape]`` observations to act on next."""
    buffer: buffers.ReplayBuffer
    step: Array
    """int32 count of updates done (environment steps overflow int32 past ~2.1e9)."""
    hparams: DQNHparams


def act_epsilon_greedy(
    network: QNetwork, params: PyTree, epsilon: Array, obs: Array, key: Key, masked: bool = False
) -> PolicyStep:
    """Greedy actions, each replaced by a uniformly random one with probability ``epsilon``
    (among the legal ones when ``masked``: the observations carry an action mask)."""
    return PolicyStep(epsilon_greedy(network.apply(params, obs), epsilon, masked).sample(key))


def dqn_loss(
    params: PyTree,
    batch: offpolicy.ReplayItem,
    *,
    network: QNetwork,
    target_params: PyTree,
    gamma: Array,
    double_q: bool,
    kind: str,
) -> tuple[Array, Metrics]:
    """TD loss of a sampled minibatch (leaves ``[N, ...]``) against target-network targets."""
    num = batch.action.shape[0]
    if double_q:
        obs = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), batch.obs, batch.next_obs)
        both = network.apply(params, obs)
        q_values, next_q_online = both[:num], jax.lax.stop_gradient(both[num:])
    else:
        q_values, next_q_online = network.apply(params, batch.obs), None
    next_q_target = network.apply(target_params, batch.next_obs)
    targets = q_learning_targets(
        batch.reward, batch.terminated, next_q_target, gamma, next_q_online
    )
    q_taken = jnp.take_along_axis(q_values, batch.action[:, None], axis=-1)[:, 0]
    loss = td_loss(q_taken, targets, batch.valid, kind)
    return loss, {"loss/td": loss, "q/taken": masked_mean(q_taken, batch.valid)}


def make_dqn(
    cfg: DQNConfig,
    env: Environment,
    env_params: Any = None,
    axis_name: str | None = None,
    torso: nn.Module | None = None,
) -> Algo[DQNState]:
    """Builds DQN for a vectorised environment with discrete actions (see ``make_ppo``)."""
    offpolicy.check_env(env, "DQN", discrete=True)
    network = make_q_network(
        env.spec,
        cfg.hidden_sizes,
        cfg.activation,
        cfg.precision,
        cfg.layer_norm,
        cfg.network if torso is None else torso,
    )
    env_params = env.default_params if env_params is None else env_params
    masked = env.spec.masked
    # Reading next observations from the following slot halves the memory of pixel buffers; it
    # is exact where the environment resets on the step after an episode ends.
    lookahead = 1 if env.spec.autoreset == "next_step" else 0
    anneal = (cfg.num_gradient_steps, 1) if cfg.anneal_lr else None

    def optimizer(hparams: DQNHparams) -> optax.GradientTransformation:
        return make_optimizer(hparams.lr, hparams.max_grad_norm, anneal_over=anneal)

    def init(key: Key) -> DQNState:
        net_key, env_key = jax.random.split(key)
        env_state, obs = env.reset(fold_in_axis(env_key, axis_name), env_params)
        params = network.init(net_key, obs)
        hparams = DQNHparams.from_config(cfg)
        buffer = offpolicy.init_buffer(cfg, env, obs, lookahead)
        opt_state = optimizer(hparams).init(params)
        return DQNState(params, params, opt_state, env_state, obs, buffer, jnp.int32(0), hparams)

    def act(state: DQNState, obs: Array, key: Key, iteration: Array) -> Array:
        epsilon = exploration_rate(cfg, state.hparams, iteration * cfg.env_steps_per_iteration)
        return act_epsilon_greedy(network, state.params, epsilon, obs, key, masked).action

    def learn(state: DQNState, key: Key, iteration: Array) -> offpolicy.Learned:
        """One gradient step on a minibatch sampled with ``key``, then the target update."""
        batch = offpolicy.sample(state.buffer, key, cfg.batch_size, lookahead)
        loss_fn = functools.partial(
            dqn_loss,
            network=network,
            target_params=state.target_params,
            gamma=state.hparams.gamma,
            double_q=cfg.double_q,
            kind=cfg.loss,
        )
        tx = optimizer(state.hparams)
        params, opt_state, metrics = sgd_step(
            state.params, state.opt_state, batch, loss_fn, tx, axis_name
        )
        target = update_target(cfg, params, state.target_params, state.hparams.tau, iteration)
        return params, target, opt_state, metrics

    def update_metrics(state: DQNState, iterations_done: Array) -> Metrics:
        gradient_steps_done = jnp.maximum(iterations_done - cfg.cadence.warmup_iterations, 0)
        # The exploration rate of the update's last iteration.
        last_steps = (iterations_done - 1) * cfg.env_steps_per_iteration
        return {
            "optim/lr": current_lr(state.hparams.lr, gradient_steps_done, anneal),
            "optim/epsilon": exploration_rate(cfg, state.hparams, last_steps),
        }

    def evaluate_act(state: DQNState, obs: Array, key: Key, greedy: bool) -> Array:
        epsilon = 0.0 if greedy else state.hparams.eps_end
        return act_epsilon_greedy(network, state.params, epsilon, obs, key, masked).action

    update = offpolicy.make_update(
        cfg.cadence, env, env_params, act, learn, update_metrics, axis_name, lookahead
    )
    hparams = concrete_hparams(DQNHparams, cfg)
    return Algo(init, update, evaluate_act, hparams, offpolicy.LOCKSTEP)


def exploration_rate(cfg: DQNConfig, hparams: DQNHparams, steps: Array) -> Array:
    """Epsilon after ``steps`` environment steps: linear from ``eps_start`` to ``eps_end`` over
    ``exploration_fraction`` of the run."""
    decay_steps = hparams.exploration_fraction * cfg.total_timesteps
    return linear_schedule(hparams.eps_start, hparams.eps_end, decay_steps)(steps)


def update_target(
    cfg: DQNConfig, params: PyTree, target_params: PyTree, tau: Array, iteration: Array
) -> PyTree:
    """The target network after a gradient step at ``iteration``: moved ``tau`` of the way to
    ``params`` where the iteration's steps cross a multiple of ``target_update_period``."""
    steps_before = iteration * cfg.env_steps_per_iteration
    steps_after = steps_before + cfg.env_steps_per_iteration
    period = cfg.target_update_period
    retarget = steps_after // period > steps_before // period
    target = optax.incremental_update(params, target_params, tau)
    return jax.tree.map(lambda a, b: jnp.where(retarget, a, b), target, target_params)


SPEC = AlgoSpec(
    name="dqn",
    summary="Deep Q-Networks: replay buffer in device memory, target network, (Double) DQN",
    config_cls=DQNConfig,
    hparams_cls=DQNHparams,
    build=make_dqn,
    presets_module="purerl.presets.dqn",
    smoke=DQNConfig(**offpolicy.SMOKE, target_update_period=64),
    excludable=("buffer",),
)
