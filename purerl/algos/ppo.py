"""Proximal Policy Optimization (Schulman et al. 2017) as a recipe of shared building blocks.

One ``update`` collects ``rollout_len`` steps from ``num_envs`` environments, computes GAE
advantages (bootstrapping truncated episodes from their final observation), and runs
``num_epochs`` passes of ``num_minibatches`` clipped-surrogate gradient steps.
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
from purerl.core.env import Environment
from purerl.core.nets import ActorCritic, RecurrentActorCritic, make_actor_critic
from purerl.core.ops.losses import masked_mean, normalize_advantages, ppo_policy_loss, value_loss
from purerl.core.ops.optim import current_lr, make_optimizer
from purerl.core.ops.returns import compute_gae
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
class PPOConfig(MemoryConfig, CommonConfig):
    """PPO hyperparameters; defaults are the CartPole-v1 preset."""

    rollout_len: int = 128
    """Steps per environment between updates."""
    num_epochs: int = 4
    """Passes over each rollout."""
    num_minibatches: int = 4
    """Minibatches per pass; must divide num_envs * rollout_len."""
    lr: float = traced(2.5e-4)
    """Adam learning rate."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over the run."""
    gamma: float = traced(0.99)
    """Discount factor."""
    gae_lambda: float = traced(0.95)
    """GAE lambda (Schulman et al. 2016)."""
    clip_eps: float = traced(0.2)
    """Ratio clip of the surrogate (Schulman et al. 2017, eq. 7); also clips the value update."""
    clip_value_loss: bool = True
    """Clip the value update around the value at collection time."""
    ent_coef: float = traced(0.01)
    """Weight of the entropy bonus."""
    vf_coef: float = traced(0.5)
    """Weight of the value loss."""
    max_grad_norm: float = traced(0.5)
    """Gradients are rescaled so their global norm is at most this."""
    normalize_advantages: bool = True
    """Standardise advantages within each minibatch."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layer widths of the actor and critic MLPs."""
    layer_norm: bool = False
    """LayerNorm before every hidden activation of the actor and critic torsos."""
    activation: Activation = "tanh"
    """Hidden activation."""

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def env_steps_per_update(self) -> int:
        return self.batch_size

    def check(self) -> None:
        require_positive(self, "rollout_len", "num_epochs", "num_minibatches", "lr", "clip_eps")
        require_positive(self, "max_grad_norm")
        require_unit_interval(self, "gamma", "gae_lambda")
        if self.batch_size % self.num_minibatches:
            raise ConfigError(
                f"--num-minibatches {self.num_minibatches} does not divide the batch of "
                f"{self.batch_size} (num_envs {self.num_envs} x rollout_len {self.rollout_len}); "
                "pick a divisor of the batch"
            )
        require_network(self)
        self.check_memory()


PPOHparams = hparams_class(PPOConfig, "PPOHparams")
"""The traced hyperparameters: ``PPOConfig``'s fields marked ``traced``."""


class PPOState(NamedTuple):
    params: PyTree
    opt_state: Any
    env_state: Any
    obs: Array
    """``[B, *obs_shape]`` observations to act on next."""
    step: Array
    """int32 count of updates done."""
    hparams: PPOHparams
    memory: Any = ()
    """A recurrent network's ``Memory`` ``[B, ...]`` between updates (``()`` for an MLP)."""


class PPOExtras(NamedTuple):
    """What the behaviour policy records with each action, ``[B]``."""

    log_prob: Array


class RecurrentPPOExtras(NamedTuple):
    """What a recurrent behaviour policy records with each action, ``[B]``: its value too,
    computed on the way (it shares the torso)."""

    log_prob: Array
    value: Array


class PPOBatch(NamedTuple):
    """Flattened training data, ``[N, ...]`` with ``N = T * B``."""

    obs: Array
    action: Array
    log_prob: Array
    value: Array
    advantage: Array
    target: Array
    valid: Array


def act(network: ActorCritic, params: PyTree, obs: Array, key: Key) -> PolicyStep:
    """Samples an action from the current policy and records its log-probability.

    Values are not computed here: ``rollout.rollout_values`` evaluates the critic on the whole
    rollout at once afterwards, which keeps the critic out of the sequential environment loop.
    """
    dist = network.apply(params, obs, method="policy_dist")
    action = dist.sample(key)
    return PolicyStep(action, PPOExtras(dist.log_prob(action)))


def act_recurrent(
    network: RecurrentActorCritic, params: PyTree, memory: Memory, obs: Array, key: Key
) -> tuple[PyTree, PolicyStep]:
    """``act`` for a recurrent network: one step from ``memory``; returns the cell's state."""
    hidden, dist, value = network.apply(params, memory.hidden, obs[None], memory.start[None])
    action = dist.sample(key)
    return hidden, PolicyStep(action, RecurrentPPOExtras(dist.log_prob(action), value))


def evaluate_batch(
    network: ActorCritic | RecurrentActorCritic, params: PyTree, batch: PPOBatch | Sequences
) -> tuple[Any, Array, PPOBatch]:
    """The policy and values on a minibatch, with its data flat ``[N]`` in the same order: a
    recurrent network replays each sequence from its recorded memory (time-major)."""
    if isinstance(batch, Sequences):
        (_, dist, values), flat = replay_sequences(functools.partial(network.apply, params), batch)
        return dist, values, flat
    dist, values = network.apply(params, batch.obs)
    return dist, values, batch


def ppo_loss(
    params: PyTree,
    batch: PPOBatch | Sequences,
    *,
    network: ActorCritic | RecurrentActorCritic,
    hparams: PPOHparams,
    normalize_adv: bool,
    clip_value: bool,
    axis_name: str | None = None,
) -> tuple[Array, Metrics]:
    """Clipped surrogate + weighted value loss - weighted entropy, over valid entries."""
    dist, values, batch = evaluate_batch(network, params, batch)
    advantages = batch.advantage
    if normalize_adv:
        advantages = normalize_advantages(advantages, batch.valid, axis_name=axis_name)
    policy_loss, aux = ppo_policy_loss(
        dist.log_prob(batch.action), batch.log_prob, advantages, hparams.clip_eps, batch.valid
    )
    v_loss = value_loss(
        values, batch.value, batch.target, batch.valid, hparams.clip_eps if clip_value else None
    )
    entropy = masked_mean(dist.entropy(), batch.valid)
    loss = policy_loss + hparams.vf_coef * v_loss - hparams.ent_coef * entropy
    return loss, {
        "loss/policy": policy_loss,
        "loss/value": v_loss,
        "loss/entropy": entropy,
        "loss/approx_kl": aux["approx_kl"],
        "loss/clip_frac": aux["clip_frac"],
    }


def make_ppo(
    cfg: PPOConfig, env: Environment, env_params: Any = None, axis_name: str | None = None
) -> Algo[PPOState]:
    """Builds PPO for a vectorised environment.

    Args:
        cfg: hyperparameters.
        env: a vectorised environment; its ``num_envs`` is the batch this algorithm steps.
        env_params: environment parameters (default: ``env.default_params``).
        axis_name: mapped axis to average gradients and metrics over (data parallelism).
    """
    num_envs = env.spec.num_envs
    if num_envs is None:
        raise ConfigError(f"PPO needs a vectorised environment; make {env.spec.id} with num_envs")
    if (num_envs * cfg.rollout_len) % cfg.num_minibatches:
        raise ConfigError(
            f"--num-minibatches {cfg.num_minibatches} does not divide the per-device batch of "
            f"{num_envs * cfg.rollout_len}"
        )
    recurrent = cfg.network != "mlp"
    cfg.check_sequences(num_envs)
    network = make_actor_critic(
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

    def optimizer(hparams: PPOHparams):
        return make_optimizer(hparams.lr, hparams.max_grad_norm, anneal_over=anneal)

    initial_memory = functools.partial(fresh_memory, cfg.network, cfg.rnn_size)

    def init(key: Key) -> PPOState:
        net_key, env_key = jax.random.split(key)
        env_state, obs = env.reset(fold_in_axis(env_key, axis_name), env_params)
        memory = vary_over_axis(initial_memory(num_envs), axis_name) if recurrent else ()
        params = init_network(network, net_key, obs, memory)
        hparams = PPOHparams.from_config(cfg)
        return PPOState(
            params, optimizer(hparams).init(params), env_state, obs, jnp.int32(0), hparams, memory
        )

    def collect_with_values(state: PPOState, key: Key) -> tuple[Rollout, RolloutValues]:
        if not recurrent:
            policy = functools.partial(act, network, state.params)
            rollout = collect(
                env, env_params, policy, state.env_state, state.obs, key, cfg.rollout_len
            )
            critic = functools.partial(network.apply, state.params, method="critic")
            return rollout, rollout_values(critic, rollout, env.spec.autoreset)
        policy = functools.partial(act_recurrent, network, state.params)
        rollout = collect(
            env, env_params, policy, state.env_state, state.obs, key, cfg.rollout_len, state.memory
        )

        def critic(hidden, obs, start):
            return network.apply(state.params, hidden, obs[None], start[None], method="critic")

        recorded = rollout.transitions.extras.value
        return rollout, recurrent_rollout_values(critic, rollout, recorded, env.spec.autoreset)

    def update(state: PPOState, key: Key) -> tuple[PPOState, Metrics]:
        rollout_key, sgd_key = jax.random.split(fold_in_axis(key, axis_name))
        rollout, values = collect_with_values(state, rollout_key)
        traj = rollout.transitions
        advantages, targets = compute_gae(
            traj.reward,
            values.values,
            values.next_values,
            traj.terminated,
            traj.terminated | traj.truncated,
            state.hparams.gamma,
            state.hparams.gae_lambda,
        )
        batch = PPOBatch(
            traj.obs,
            traj.action,
            traj.extras.log_prob,
            values.values,
            advantages,
            targets,
            traj.valid,
        )
        if recurrent:
            memories = rollout.memories
            batch = split_sequences(batch, memories.hidden, memories.start, cfg.sequence_len)
        else:
            batch = flatten_time_batch(batch)
        loss_fn = functools.partial(
            ppo_loss,
            network=network,
            hparams=state.hparams,
            normalize_adv=cfg.normalize_advantages,
            clip_value=cfg.clip_value_loss,
            axis_name=axis_name,
        )
        params, opt_state, metrics = minibatch_epochs(
            sgd_key,
            state.params,
            state.opt_state,
            batch,
            loss_fn,
            optimizer(state.hparams),
            cfg.num_epochs,
            cfg.num_minibatches,
            axis_name,
        )
        metrics = {**pmean(metrics, axis_name), **summarize(traj.episode, axis_name)}
        metrics["optim/lr"] = current_lr(
            state.hparams.lr, state.step * cfg.num_epochs * cfg.num_minibatches, anneal
        )
        memory = rollout.memory if recurrent else ()
        new_state = PPOState(
            params, opt_state, rollout.env_state, rollout.obs, state.step + 1, state.hparams, memory
        )
        return new_state, metrics

    def evaluate_act(
        state: PPOState, obs: Array, key: Key, greedy: bool, memory: Memory | None = None
    ) -> Any:
        if memory is None:
            dist = network.apply(state.params, obs, method="policy_dist")
            return dist.mode() if greedy else dist.sample(key)
        hidden, dist, _ = network.apply(state.params, memory.hidden, obs[None], memory.start[None])
        return (dist.mode() if greedy else dist.sample(key)), hidden

    hparams = concrete_hparams(PPOHparams, cfg)
    return Algo(
        init, update, evaluate_act, hparams, initial_memory=initial_memory if recurrent else None
    )


SPEC = AlgoSpec(
    name="ppo",
    summary="Proximal Policy Optimization: clipped surrogate, GAE, minibatch epochs",
    config_cls=PPOConfig,
    hparams_cls=PPOHparams,
    build=make_ppo,
    presets_module="purerl.presets.ppo",
    smoke=PPOConfig(
        num_envs=4,
        rollout_len=16,
        num_minibatches=2,
        num_epochs=2,
        hidden_sizes=(16,),
        total_timesteps=4 * 16 * 6,
    ),
)
