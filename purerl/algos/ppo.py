"""Proximal Policy Optimization (Schulman et al. 2017) as a recipe of shared building blocks.

One ``update`` collects ``rollout_len`` steps from ``num_envs`` environments, computes GAE
advantages (bootstrapping truncated episodes from their final observation), and runs
``num_epochs`` passes of ``num_minibatches`` clipped-surrogate gradient steps.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import flax.linen as nn

from purerl.algos import AlgoSpec
from purerl.algos.onpolicy import (
    SMOKE,
    Behaviour,
    Learner,
    OnPolicyConfig,
    OnPolicyState,
    make_onpolicy,
)
from purerl.config import require_positive, require_unit_interval, traced
from purerl.core.algo import Algo, hparams_class
from purerl.core.distributions import Distribution
from purerl.core.env import Environment
from purerl.core.nets import make_actor_critic
from purerl.core.ops.losses import masked_mean, normalize_advantages, ppo_policy_loss, value_loss
from purerl.core.ops.returns import compute_gae
from purerl.core.rollout import PolicyStep, RolloutValues
from purerl.core.types import Array, Key, Metrics, Transition


@dataclasses.dataclass(frozen=True)
class PPOConfig(OnPolicyConfig):
    """PPO hyperparameters; defaults are the CartPole-v1 preset."""

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
    normalize_advantages: bool = True
    """Standardise advantages within each minibatch."""

    def check(self) -> None:
        super().check()
        require_positive(self, "clip_eps")
        require_unit_interval(self, "gae_lambda")


PPOHparams = hparams_class(PPOConfig, "PPOHparams")
"""The traced hyperparameters: ``PPOConfig``'s fields marked ``traced``."""


class PPOExtras(NamedTuple):
    """What the behaviour policy records with each action, ``[B]``."""

    log_prob: Array


class PPOBatch(NamedTuple):
    """Training data: ``[T, B, ...]`` as collected, ``[N, ...]`` flat."""

    obs: Array
    action: Array
    log_prob: Array
    value: Array
    advantage: Array
    target: Array
    valid: Array


def state_value(outputs: tuple[Distribution, Array]) -> Array:
    """The critic's value in the network's outputs ``(dist, value)``."""
    return outputs[1]


def sample(outputs: tuple[Distribution, Array], key: Key) -> PolicyStep:
    """Samples an action from the policy and records its log-probability."""
    dist, _ = outputs
    action = dist.sample(key)
    return PolicyStep(action, PPOExtras(dist.log_prob(action)))


def training_data(traj: Transition, values: RolloutValues, hparams: Any) -> PPOBatch:
    """GAE advantages and value targets of a rollout (truncated episodes bootstrap)."""
    advantages, targets = compute_gae(
        traj.reward,
        values.values,
        values.next_values,
        traj.terminated,
        traj.terminated | traj.truncated,
        hparams.gamma,
        hparams.gae_lambda,
    )
    return PPOBatch(
        traj.obs,
        traj.action,
        traj.extras.policy.log_prob,
        values.values,
        advantages,
        targets,
        traj.valid,
    )


def ppo_loss(
    outputs: tuple[Distribution, Array],
    batch: PPOBatch,
    hparams: Any,
    *,
    normalize_adv: bool,
    clip_value: bool,
    axis_name: str | None = None,
) -> tuple[Array, Metrics]:
    """Clipped surrogate + weighted value loss - weighted entropy, over valid entries, from the
    network's ``(dist, values)`` on a flat minibatch ``[N]``."""
    dist, values = outputs
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
    cfg: PPOConfig,
    env: Environment,
    env_params: Any = None,
    axis_name: str | None = None,
    torso: nn.Module | None = None,
) -> Algo[OnPolicyState]:
    """Builds PPO for a vectorised environment (``onpolicy.make_onpolicy``).

    Args:
        cfg: hyperparameters.
        env: a vectorised environment; its ``num_envs`` is the batch this algorithm steps.
        env_params: environment parameters (default: ``env.default_params``).
        axis_name: mapped axis to average gradients and metrics over (data parallelism).
        torso: the user's flax module that ``cfg.network`` names (``purerl.algos.torso``),
            copied for the actor and for the critic.
    """
    loss = functools.partial(
        ppo_loss,
        normalize_adv=cfg.normalize_advantages,
        clip_value=cfg.clip_value_loss,
        axis_name=axis_name,
    )
    learner = Learner(
        name="PPO",
        make_network=make_actor_critic,
        value_of=state_value,
        behaviour=lambda state: Behaviour(sample, {}),
        training_data=training_data,
        loss=loss,
        policy=lambda outputs, hparams: outputs[0],
    )
    return make_onpolicy(cfg, env, learner, PPOHparams, env_params, axis_name, torso)


SPEC = AlgoSpec(
    name="ppo",
    summary="Proximal Policy Optimization: clipped surrogate, GAE, minibatch epochs",
    config_cls=PPOConfig,
    hparams_cls=PPOHparams,
    build=make_ppo,
    presets_module="purerl.presets.ppo",
    smoke=PPOConfig(**SMOKE),
)
