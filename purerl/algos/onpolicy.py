"""The on-policy recipe PPO and PQN share: collect a rollout with the current network, compute
its targets, and take minibatch epochs of gradient steps on it.

Not an algorithm itself (it is not in the registry). One ``update`` collects ``rollout_len``
steps from ``num_envs`` environments with the behaviour policy, evaluates the values the targets
bootstrap from (truncated episodes from their final observation), builds the training data,
and runs ``num_epochs`` passes of ``num_minibatches`` gradient steps. A feed-forward or recurrent
network is driven the same way (``purerl.core.memory``): a recurrent one carries its memory from
update to update and replays whole sequences from their recorded start.

An algorithm supplies a ``Learner``: its network, where the state value sits in the network's
outputs, its behaviour and trained policies, its training data and its loss.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from purerl.config import (
    Activation,
    CommonConfig,
    ConfigError,
    MemoryConfig,
    Network,
    require_network,
    require_positive,
    require_unit_interval,
    traced,
)
from purerl.core.algo import Algo, concrete_hparams
from purerl.core.distributions import Distribution
from purerl.core.env import Environment
from purerl.core.memory import Stepped, stepped
from purerl.core.ops.optim import Optimizer, current_lr, make_optimizer
from purerl.core.ops.sgd import LossFn, fold_in_axis, minibatch_epochs, pmean, vary_over_axis
from purerl.core.rollout import Memory, PolicyStep, Rollout, RolloutValues, collect
from purerl.core.stats import summarize
from purerl.core.types import Array, Key, Metrics, PyTree, Transition


@dataclasses.dataclass(frozen=True)
class OnPolicyConfig(MemoryConfig, CommonConfig):
    """Settings PPO and PQN share; each sets its own defaults and adds its own fields."""

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
    max_grad_norm: float = traced(0.5)
    """Gradients are rescaled so their global norm is at most this."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layer widths of the network's MLPs (purerl's torsos)."""
    layer_norm: bool = False
    """LayerNorm before every hidden activation of the network's torsos (purerl's)."""
    activation: Activation = "tanh"
    """Hidden activation (of purerl's torsos)."""

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def env_steps_per_update(self) -> int:
        return self.batch_size

    def check(self) -> None:
        require_positive(self, "rollout_len", "num_epochs", "num_minibatches", "lr")
        require_positive(self, "max_grad_norm")
        require_unit_interval(self, "gamma")
        if self.batch_size % self.num_minibatches:
            raise ConfigError(
                f"--num-minibatches {self.num_minibatches} does not divide the batch of "
                f"{self.batch_size} (num_envs {self.num_envs} x rollout_len {self.rollout_len}); "
                "pick a divisor of the batch"
            )
        require_network(self, typing.get_args(Network))
        self.check_memory()


SMOKE = {
    "num_envs": 4,
    "rollout_len": 16,
    "num_minibatches": 2,
    "num_epochs": 2,
    "hidden_sizes": (16,),
    "total_timesteps": 4 * 16 * 6,
}
"""The sizes of an on-policy algorithm's smoke configuration (``AlgoSpec.smoke``)."""


class OnPolicyState(NamedTuple):
    params: PyTree
    opt_state: Any
    env_state: Any
    obs: Array
    """``[B, *obs_shape]`` observations to act on next."""
    step: Array
    """int32 count of updates done."""
    hparams: Any
    """The algorithm's traced hyperparameters."""
    memory: Any = ()
    """A recurrent network's ``Memory`` ``[B, ...]`` between updates (``()`` for an MLP)."""


class Recorded(NamedTuple):
    """What a rollout records with each action, ``[B]``."""

    policy: PyTree
    """What the behaviour policy recorded (PPO: the action's log-probability)."""
    value: Array | tuple
    """The observation's value where the network gives it with the action (a recurrent one's
    shared torso), else ``()``: the values come after the rollout."""


class Behaviour(NamedTuple):
    """How one update acts: the policy and what it reports."""

    act: Callable[[Any, Key], PolicyStep]
    """``(outputs [B], key) -> PolicyStep``: an action for each environment from the network's
    outputs, and what to record with it."""
    metrics: Metrics
    """Per-update metrics of the behaviour (PQN: ``optim/epsilon``; ``{}`` for none)."""


class Learner(NamedTuple):
    """What an on-policy algorithm supplies to ``make_onpolicy``."""

    name: str
    """For messages (``PPO``)."""
    make_network: Callable[..., nn.Module]
    """``core.nets.make_actor_critic`` or ``make_q_network``: the network is built with the
    configuration's torso fields (``hidden_sizes`` ... ``network``, ``rnn_size``)."""
    value_of: Callable[[Any], Array]
    """The state value ``[N]`` in the network's outputs (PPO: the critic's; PQN: the greedy
    action's Q-value)."""
    behaviour: Callable[[OnPolicyState], Behaviour]
    """The behaviour policy of the update about to run from this state."""
    training_data: Callable[[Transition, RolloutValues, Any], PyTree]
    """``(transitions [T, B], values, hparams) -> data [T, B, ...]``: the targets, with ``obs``
    and ``valid`` among the fields."""
    loss: Callable[[Any, PyTree, Any], tuple[Array, Metrics]]
    """``(outputs [N], data [N], hparams) -> (loss, metrics)`` of a minibatch."""
    policy: Callable[[Any, Any], Distribution]
    """``(outputs, hparams) -> distribution``: the trained policy (``act``; greedy: its mode)."""
    optimizer: Optimizer = "adam"


def num_envs_of(env: Environment, cfg: OnPolicyConfig, name: str) -> int:
    """The environments ``env`` steps at once, checked against the configuration."""
    num_envs = env.spec.num_envs
    if num_envs is None:
        raise ConfigError(
            f"{name} needs a vectorised environment; make {env.spec.id} with num_envs"
        )
    if (num_envs * cfg.rollout_len) % cfg.num_minibatches:
        raise ConfigError(
            f"--num-minibatches {cfg.num_minibatches} does not divide the per-device batch of "
            f"{num_envs * cfg.rollout_len}"
        )
    cfg.check_sequences(num_envs)
    return num_envs


def acting(
    net: Stepped, params: PyTree, behave: Callable[[Any, Key], PolicyStep]
) -> Callable[[Memory | tuple, Array, Key], tuple[PyTree, PolicyStep]]:
    """The behaviour policy as ``collect`` drives it: ``(memory, obs [B, ...], key) -> (hidden,
    PolicyStep)``, recording what ``behave`` records and the value where the network gives it
    (``Recorded``)."""

    def act(memory: Memory | tuple, obs: Array, key: Key) -> tuple[PyTree, PolicyStep]:
        hidden, outputs, value = net.act(params, memory, obs)
        step = behave(outputs, key)
        return hidden, PolicyStep(step.action, Recorded(step.extras, value))

    return act


def collect_with_values(
    net: Stepped,
    env: Environment,
    env_params: Any,
    state: OnPolicyState,
    behave: Callable[[Any, Key], PolicyStep],
    key: Key,
    num_steps: int,
) -> tuple[Rollout, RolloutValues]:
    """A rollout of ``num_steps`` from ``state`` with the behaviour policy ``behave``, and the
    values its targets bootstrap from."""
    act = acting(net, state.params, behave)
    rollout = collect(
        env, env_params, act, state.env_state, state.obs, key, num_steps, state.memory
    )
    recorded = rollout.transitions.extras.value
    return rollout, net.values(state.params, rollout, recorded, env.spec.autoreset)


def network_loss(
    net: Stepped, loss: Callable[[Any, PyTree, Any], tuple[Array, Metrics]], hparams: Any
) -> LossFn:
    """``loss`` of the network's outputs as ``(params, minibatch) -> (loss, metrics)``, the
    form ``ops.sgd.minibatch_epochs`` differentiates."""

    def loss_fn(params: PyTree, minibatch: PyTree) -> tuple[Array, Metrics]:
        outputs, flat = net.evaluate(params, minibatch)
        return loss(outputs, flat, hparams)

    return loss_fn


def make_onpolicy(
    cfg: OnPolicyConfig,
    env: Environment,
    learner: Learner,
    hparams_cls: type,
    env_params: Any = None,
    axis_name: str | None = None,
    torso: nn.Module | None = None,
) -> Algo[OnPolicyState]:
    """An on-policy algorithm from its ``learner``, for a vectorised environment.

    Args:
        cfg: the algorithm's configuration.
        env: a vectorised environment; its ``num_envs`` is the batch the algorithm steps.
        learner: what the algorithm supplies.
        hparams_cls: its traced hyperparameters (``hparams_class`` of its configuration).
        env_params: environment parameters (default: ``env.default_params``).
        axis_name: mapped axis to average gradients and metrics over (data parallelism).
        torso: the user's flax module that ``cfg.network`` names, for purerl's torso.
    """
    num_envs = num_envs_of(env, cfg, learner.name)
    network = learner.make_network(
        env.spec,
        cfg.hidden_sizes,
        cfg.activation,
        cfg.precision,
        cfg.layer_norm,
        cfg.network if torso is None else torso,
        cfg.rnn_size,
    )
    net = stepped(network, learner.value_of, cfg.network, cfg.rnn_size)
    env_params = env.default_params if env_params is None else env_params
    steps_per_update = cfg.num_epochs * cfg.num_minibatches
    anneal = (cfg.num_updates, steps_per_update) if cfg.anneal_lr else None

    def optimizer(hparams: Any):
        return make_optimizer(
            hparams.lr, hparams.max_grad_norm, anneal_over=anneal, kind=learner.optimizer
        )

    def init(key: Key) -> OnPolicyState:
        net_key, env_key = jax.random.split(key)
        env_state, obs = env.reset(fold_in_axis(env_key, axis_name), env_params)
        memory = vary_over_axis(net.fresh(num_envs), axis_name)
        params = net.init(net_key, obs, memory)
        hparams = hparams_cls.from_config(cfg)
        tx = optimizer(hparams)
        return OnPolicyState(params, tx.init(params), env_state, obs, jnp.int32(0), hparams, memory)

    def update(state: OnPolicyState, key: Key) -> tuple[OnPolicyState, Metrics]:
        rollout_key, sgd_key = jax.random.split(fold_in_axis(key, axis_name))
        behaviour = learner.behaviour(state)
        rollout, values = collect_with_values(
            net, env, env_params, state, behaviour.act, rollout_key, cfg.rollout_len
        )
        traj = rollout.transitions
        data = learner.training_data(traj, values, state.hparams)
        batch = net.training_data(data, rollout, cfg.sequence_len)
        params, opt_state, metrics = minibatch_epochs(
            sgd_key,
            state.params,
            state.opt_state,
            batch,
            network_loss(net, learner.loss, state.hparams),
            optimizer(state.hparams),
            cfg.num_epochs,
            cfg.num_minibatches,
            axis_name,
        )
        metrics = {**pmean(metrics, axis_name), **summarize(traj.episode, axis_name)}
        metrics["optim/lr"] = current_lr(state.hparams.lr, state.step * steps_per_update, anneal)
        metrics.update(behaviour.metrics)
        new_state = OnPolicyState(
            params,
            opt_state,
            rollout.env_state,
            rollout.obs,
            state.step + 1,
            state.hparams,
            rollout.memory,
        )
        return new_state, metrics

    def evaluate_act(
        state: OnPolicyState, obs: Array, key: Key, greedy: bool, memory: Memory | None = None
    ) -> Any:
        """The trained policy: actions for ``obs``, and with a ``memory`` the cell's state."""
        hidden, outputs, _ = net.act(state.params, () if memory is None else memory, obs)
        dist = learner.policy(outputs, state.hparams)
        action = dist.mode() if greedy else dist.sample(key)
        return action if memory is None else (action, hidden)

    return Algo(
        init,
        update,
        evaluate_act,
        concrete_hparams(hparams_cls, cfg),
        initial_memory=net.initial_memory,
    )
