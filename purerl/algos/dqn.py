"""Deep Q-Networks (Mnih et al. 2015) with a replay buffer in device memory, as a recipe.

One ``update`` runs ``rollout_len // train_frequency`` iterations of: ``train_frequency``
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

import jax
import jax.numpy as jnp
import optax

from purerl.algos import AlgoSpec
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
from purerl.core.distributions import EpsilonGreedy
from purerl.core.env import Environment
from purerl.core.nets import QNetwork, make_q_network
from purerl.core.ops.losses import TDLoss, masked_mean, td_loss
from purerl.core.ops.optim import current_lr, linear_schedule, make_optimizer
from purerl.core.ops.returns import q_learning_targets
from purerl.core.ops.sgd import fold_in_axis, pmean, sgd_step
from purerl.core.rollout import PolicyStep, collect
from purerl.core.stats import summarize
from purerl.core.types import Array, Key, Metrics, PyTree

MAX_DQN_STEPS = 2**31 - 1
"""Environment steps are counted in int32 inside the update."""


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
    hidden_sizes: tuple[int, ...] = (120, 84)
    """Hidden layer widths of the Q-network MLP."""
    layer_norm: bool = False
    """LayerNorm before every hidden activation of the Q-network (PQN's default)."""
    activation: Activation = "relu"
    """Hidden activation."""

    @property
    def iterations_per_update(self) -> int:
        return self.rollout_len // self.train_frequency

    @property
    def env_steps_per_iteration(self) -> int:
        return self.num_envs * self.train_frequency

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def num_gradient_steps(self) -> int:
        """Gradient steps in the whole run (iterations that end past learning_starts)."""
        iterations = self.num_updates * self.iterations_per_update
        return iterations - min(iterations, self.learning_starts // self.env_steps_per_iteration)

    def check(self) -> None:
        require_positive(self, "rollout_len", "train_frequency", "buffer_size", "batch_size")
        require_positive(self, "target_update_period", "lr", "max_grad_norm")
        require_unit_interval(self, "gamma", "eps_start", "eps_end", "exploration_fraction")
        if not 0.0 < self.tau <= 1.0:
            raise ConfigError(f"--tau must lie in (0, 1], got {self.tau}")
        if self.rollout_len % self.train_frequency:
            raise ConfigError(
                f"--train-frequency {self.train_frequency} does not divide --rollout-len "
                f"{self.rollout_len}; pick a divisor"
            )
        if self.buffer_size % self.num_envs:
            raise ConfigError(
                f"--buffer-size {self.buffer_size} is not a multiple of --num-envs "
                f"{self.num_envs}; each environment keeps buffer_size / num_envs steps"
            )
        if self.batch_size > self.buffer_size:
            raise ConfigError(
                f"--batch-size {self.batch_size} exceeds --buffer-size {self.buffer_size}; "
                "lower the batch or grow the buffer"
            )
        if self.total_timesteps > MAX_DQN_STEPS:
            raise ConfigError(
                f"--total-timesteps {self.total_timesteps:,} is beyond the {MAX_DQN_STEPS:,} "
                "environment steps DQN's int32 step counter holds; split the run"
            )
        if self.learning_starts < 0:
            raise ConfigError(
                f"--learning-starts must be 0 or more environment steps, got {self.learning_starts}"
            )
        run_steps = self.num_updates * self.env_steps_per_update
        if run_steps and self.learning_starts >= run_steps:
            raise ConfigError(
                f"--learning-starts {self.learning_starts} is not below the run's "
                f"{run_steps} steps: it would never learn"
            )
        require_network(self)


DQNHparams = hparams_class(DQNConfig, "DQNHparams")
"""The traced hyperparameters: ``DQNConfig``'s fields marked ``traced``."""


class ReplayItem(NamedTuple):
    """One stored transition, ``[B, ...]`` per step. ``next_obs`` is ``()`` when the next
    observation is read from the following slot instead (environments that reset on the step
    after an episode ends, where the successor's observation is the one the step reached)."""

    obs: Array
    action: Array
    reward: Array
    terminated: Array
    valid: Array
    next_obs: Array | tuple


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
    network: QNetwork, params: PyTree, epsilon: Array, obs: Array, key: Key
) -> PolicyStep:
    """Greedy actions, each replaced by a uniformly random one with probability ``epsilon``."""
    return PolicyStep(EpsilonGreedy(network.apply(params, obs), epsilon).sample(key))


def dqn_loss(
    params: PyTree,
    batch: ReplayItem,
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
        both = network.apply(params, jnp.concatenate([batch.obs, batch.next_obs]))
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
    cfg: DQNConfig, env: Environment, env_params: Any = None, axis_name: str | None = None
) -> Algo[DQNState]:
    """Builds DQN for a vectorised environment with discrete actions (see ``make_ppo``)."""
    if env.spec.num_envs is None:
        raise ConfigError(f"DQN needs a vectorised environment; make {env.spec.id} with num_envs")
    if not env.spec.discrete:
        raise ConfigError(f"DQN needs discrete actions; {env.spec.id} has continuous ones")
    network = make_q_network(
        env.spec, cfg.hidden_sizes, cfg.activation, cfg.precision, cfg.layer_norm
    )
    env_params = env.default_params if env_params is None else env_params
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
        example = replay_item(obs, jnp.zeros(obs.shape[:1], jnp.int32), obs, lookahead)
        buffer = buffers.init_buffer(example, cfg.buffer_size // env.spec.num_envs)
        opt_state = optimizer(hparams).init(params)
        return DQNState(params, params, opt_state, env_state, obs, buffer, jnp.int32(0), hparams)

    def learn(state: DQNState, key: Key) -> tuple[PyTree, Any, Metrics]:
        index = buffers.sample_index(state.buffer, key, cfg.batch_size, lookahead)
        batch = buffers.gather(state.buffer, index)
        if lookahead:
            batch = batch._replace(next_obs=buffers.gather(state.buffer, index, 1).obs)
        loss_fn = functools.partial(
            dqn_loss,
            network=network,
            target_params=state.target_params,
            gamma=state.hparams.gamma,
            double_q=cfg.double_q,
            kind=cfg.loss,
        )
        tx = optimizer(state.hparams)
        return sgd_step(state.params, state.opt_state, batch, loss_fn, tx, axis_name)

    def skip_learning(state: DQNState, key: Key) -> tuple[PyTree, Any, Metrics]:
        """What ``learn`` returns, without a gradient step: unchanged parameters, zero metrics."""
        _, _, metrics = jax.eval_shape(learn, state, key)
        # zeros_like keeps the manual axes learn's metrics vary over: under shard_map with a
        # shared step (seeds over devices) both branches must vary alike.
        zeros = jax.tree.map(jnp.zeros_like, metrics)
        return state.params, state.opt_state, zeros

    def iteration(state: DQNState, iteration_key: Key, steps_before: Array):
        act_key, learn_key = jax.random.split(iteration_key)
        decay_steps = state.hparams.exploration_fraction * cfg.total_timesteps
        hp = state.hparams
        epsilon = linear_schedule(hp.eps_start, hp.eps_end, decay_steps)(steps_before)
        policy = functools.partial(act_epsilon_greedy, network, state.params, epsilon)
        rollout = collect(
            env, env_params, policy, state.env_state, state.obs, act_key, cfg.train_frequency
        )
        traj = rollout.transitions
        items = replay_item(traj.obs, traj.action, traj.final_obs, lookahead, traj)
        state = state._replace(
            env_state=rollout.env_state,
            obs=rollout.obs,
            buffer=buffers.add(state.buffer, items),
        )
        steps_after = steps_before + cfg.env_steps_per_iteration
        learning = steps_after > cfg.learning_starts
        params, opt_state, metrics = jax.lax.cond(learning, learn, skip_learning, state, learn_key)
        retarget = learning & (
            steps_after // cfg.target_update_period > steps_before // cfg.target_update_period
        )
        target = optax.incremental_update(params, state.target_params, hp.tau)
        target = jax.tree.map(lambda a, b: jnp.where(retarget, a, b), target, state.target_params)
        state = state._replace(params=params, target_params=target, opt_state=opt_state)
        return state, (metrics, learning, epsilon, traj.episode)

    def update(state: DQNState, key: Key) -> tuple[DQNState, Metrics]:
        iterations = cfg.iterations_per_update
        first = state.step * iterations

        def body(state, inputs):
            index, iteration_key = inputs
            steps_before = (first + index) * cfg.env_steps_per_iteration
            return iteration(state, iteration_key, steps_before)

        keys = jax.random.split(fold_in_axis(key, axis_name), iterations)
        inputs = (jnp.arange(iterations, dtype=jnp.int32), keys)
        state, (metrics, learned, epsilon, episodes) = jax.lax.scan(body, state, inputs)
        metrics = learning_metrics(pmean(metrics, axis_name), learned)
        gradient_steps_done = jnp.maximum(
            (first + iterations) - cfg.learning_starts // cfg.env_steps_per_iteration, 0
        )
        metrics["optim/lr"] = current_lr(state.hparams.lr, gradient_steps_done, anneal)
        metrics["optim/epsilon"] = epsilon[-1]
        episodes = summarize(episodes, axis_name)
        return state._replace(step=state.step + 1), {**metrics, **episodes}

    def evaluate_act(state: DQNState, obs: Array, key: Key, greedy: bool) -> Array:
        epsilon = 0.0 if greedy else state.hparams.eps_end
        return act_epsilon_greedy(network, state.params, epsilon, obs, key).action

    # Every seed writes one block of steps per iteration, so the buffer's position and fill
    # advance with the update count: one copy serves all vmapped seeds, so under vmap a write
    # goes to one position for every seed (a slice update, not a scatter; docs/notes).
    lockstep = ("buffer.position", "buffer.size")
    return Algo(init, update, evaluate_act, concrete_hparams(DQNHparams, cfg), lockstep)


def replay_item(
    obs: Array, action: Array, final_obs: Array, lookahead: int, traj: Any = None
) -> ReplayItem:
    """What the buffer stores of a step (``traj`` None: an all-zero example for shapes)."""
    shape = action.shape
    return ReplayItem(
        obs=obs,
        action=action.astype(jnp.int32),
        reward=jnp.zeros(shape, jnp.float32) if traj is None else traj.reward,
        terminated=jnp.zeros(shape, bool) if traj is None else traj.terminated,
        valid=jnp.zeros(shape, bool) if traj is None else traj.valid,
        next_obs=() if lookahead else final_obs,
    )


def learning_metrics(metrics: Metrics, learned: Array) -> Metrics:
    """Means over the iterations of an update that took a gradient step (NaN if none did)."""
    count = learned.sum()
    nan_if_none = jnp.where(count > 0, 1.0, jnp.nan)
    weights = learned.astype(jnp.float32)
    out = {
        name: (values * weights).sum() / jnp.maximum(count, 1) * nan_if_none
        for name, values in metrics.items()
    }
    out["optim/gradient_steps"] = count
    return out


SPEC = AlgoSpec(
    name="dqn",
    summary="Deep Q-Networks: replay buffer in device memory, target network, (Double) DQN",
    config_cls=DQNConfig,
    hparams_cls=DQNHparams,
    build=make_dqn,
    presets_module="purerl.presets.dqn",
    smoke=DQNConfig(
        num_envs=4,
        rollout_len=8,
        buffer_size=64,
        batch_size=16,
        learning_starts=32,
        target_update_period=64,
        hidden_sizes=(16,),
        total_timesteps=4 * 8 * 6,
    ),
    excludable=("buffer",),
)
