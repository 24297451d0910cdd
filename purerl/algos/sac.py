"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications") as a
recipe: a tanh-squashed Gaussian policy, twin Q critics with Polyak-averaged targets, and
automatic entropy tuning, as CleanRL's ``sac_continuous_action.py`` and sbx implement it.

Each gradient step regresses both critics on the soft clipped double-Q target (``ops.returns.
clipped_double_q_targets``) and moves the targets by ``tau``; every ``policy_frequency``
gradient steps the policy (and the entropy coefficient) take ``policy_frequency`` steps on the
same minibatch, which keeps one policy step per critic step on average (CleanRL's delayed
update). Acting, replay and the learning cadence are shared with TD3 (``algos.continuous``, on
the replay recipe of ``algos.offpolicy``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from purerl.algos import AlgoSpec, continuous, offpolicy
from purerl.algos.continuous import ContinuousConfig
from purerl.algos.offpolicy import ReplayItem
from purerl.config import require_positive, traced
from purerl.core import buffers
from purerl.core.algo import Algo, concrete_hparams, hparams_class
from purerl.core.env import Environment
from purerl.core.nets import Critics, SquashedGaussianActor, make_continuous_nets
from purerl.core.ops.losses import masked_mean
from purerl.core.ops.returns import clipped_double_q_targets
from purerl.core.ops.sgd import fold_in_axis, pmean
from purerl.core.types import Array, Key, PyTree


@dataclasses.dataclass(frozen=True)
class SACConfig(ContinuousConfig):
    """SAC hyperparameters; defaults are CleanRL's sac_continuous_action (MuJoCo, 1 env)."""

    alpha: float = traced(1.0)
    """Entropy coefficient: its starting value with --autotune (CleanRL starts log alpha at 0,
    alpha 1), its fixed value without."""
    autotune: bool = True
    """Tune the entropy coefficient towards an entropy of -action_dim (Haarnoja et al. 2018,
    section 5)."""

    def check(self) -> None:
        super().check()
        require_positive(self, "alpha")


SACHparams = hparams_class(SACConfig, "SACHparams")
"""The traced hyperparameters: ``SACConfig``'s fields marked ``traced``."""


class SACParams(NamedTuple):
    actor: PyTree
    critic: PyTree
    """Twin critics, leaves ``[2, ...]``."""
    log_alpha_delta: Array
    """``log alpha - log hparams.alpha``: 0 at the start, so the starting coefficient is the
    traced hyperparameter."""


class SACOptState(NamedTuple):
    actor: Any
    critic: Any
    alpha: Any


class SACState(NamedTuple):
    params: SACParams
    target_params: PyTree
    """Target critics (Polyak averages of ``params.critic``)."""
    opt_state: SACOptState
    env_state: Any
    obs: Array
    """``[B, *obs_shape]`` observations to act on next."""
    buffer: buffers.ReplayBuffer
    step: Array
    """int32 count of updates done."""
    hparams: SACHparams


class Optimizers(NamedTuple):
    actor: optax.GradientTransformation
    critic: optax.GradientTransformation
    alpha: optax.GradientTransformation


def optimizers(hparams: SACHparams) -> Optimizers:
    # Plain Adam as in CleanRL (PyTorch's eps 1e-8, no gradient clipping); the temperature
    # shares the critics' rate there.
    return Optimizers(
        optax.adam(hparams.policy_lr), optax.adam(hparams.q_lr), optax.adam(hparams.q_lr)
    )


def entropy_coefficient(params: SACParams, hparams: SACHparams, autotune: bool) -> Array:
    return hparams.alpha * jnp.exp(params.log_alpha_delta) if autotune else hparams.alpha


def actor_loss(
    actor_params: PyTree,
    critic_params: PyTree,
    batch: ReplayItem,
    alpha: Array,
    key: Key,
    actor: SquashedGaussianActor,
    critics: Critics,
) -> tuple[Array, Array]:
    """``E[alpha log pi(a|s) - min_i Q_i(s, a)]``, ``a ~ pi`` reparameterised (Haarnoja et al.
    2018, eq. 7); also returns the log-probabilities ``[N]``."""
    action, log_prob = actor.apply(actor_params, batch.obs).sample_and_log_prob(key)
    q_values = critics.apply(critic_params, batch.obs, action).min(axis=0)
    return masked_mean(alpha * log_prob - q_values, batch.valid), log_prob


def temperature_loss(
    log_alpha_delta: Array, log_prob: Array, target_entropy: float, hparams, valid: Array
) -> Array:
    """``-alpha * E[log pi + target_entropy]`` (Haarnoja et al. 2018, eq. 18; CleanRL's form)."""
    alpha = hparams.alpha * jnp.exp(log_alpha_delta)
    return -alpha * masked_mean(jax.lax.stop_gradient(log_prob) + target_entropy, valid)


def make_sac(
    cfg: SACConfig,
    env: Environment,
    env_params: Any = None,
    axis_name: str | None = None,
    torso: nn.Module | None = None,
) -> Algo[SACState]:
    """Builds SAC for a vectorised environment with continuous (Box) actions."""
    offpolicy.check_env(env, "SAC")
    network = cfg.network if torso is None else torso
    actor, critics = make_continuous_nets(
        env.spec, cfg.hidden_sizes, cfg.activation, cfg.precision, network=network
    )
    env_params = env.default_params if env_params is None else env_params
    target_entropy = -float(np.prod(env.spec.action_space.shape))  # -dim(A), Haarnoja et al.

    def init(key: Key) -> SACState:
        actor_key, critic_key, env_key = jax.random.split(key, 3)
        env_state, obs = env.reset(fold_in_axis(env_key, axis_name), env_params)
        action = jnp.zeros((obs.shape[0], *env.spec.action_space.shape), jnp.float32)
        params = SACParams(
            actor.init(actor_key, obs), critics.init(critic_key, obs, action), jnp.float32(0.0)
        )
        hparams = SACHparams.from_config(cfg)
        tx = optimizers(hparams)
        opt_state = SACOptState(
            tx.actor.init(params.actor),
            tx.critic.init(params.critic),
            tx.alpha.init(params.log_alpha_delta),
        )
        buffer = offpolicy.init_buffer(cfg, env, obs)
        return SACState(
            params, params.critic, opt_state, env_state, obs, buffer, jnp.int32(0), hparams
        )

    def policy_steps(state: SACState, batch: ReplayItem, key: Key):
        """``policy_frequency`` steps of the policy and the temperature on ``batch``."""
        tx = optimizers(state.hparams)

        def body(carry, step_key):
            params, opt_state = carry
            alpha = entropy_coefficient(params, state.hparams, cfg.autotune)
            (loss, log_prob), grads = jax.value_and_grad(actor_loss, has_aux=True)(
                params.actor, params.critic, batch, alpha, step_key, actor, critics
            )
            updates, actor_opt = tx.actor.update(pmean(grads, axis_name), opt_state.actor)
            new_actor = optax.apply_updates(params.actor, updates)
            alpha_loss, alpha_grad = jax.value_and_grad(temperature_loss)(
                params.log_alpha_delta, log_prob, target_entropy, state.hparams, batch.valid
            )
            updates, alpha_opt = tx.alpha.update(pmean(alpha_grad, axis_name), opt_state.alpha)
            delta = params.log_alpha_delta
            if cfg.autotune:
                delta = optax.apply_updates(delta, updates)
            else:
                alpha_opt = opt_state.alpha
            params = params._replace(actor=new_actor, log_alpha_delta=delta)
            opt_state = opt_state._replace(actor=actor_opt, alpha=alpha_opt)
            metrics = {
                "loss/actor": loss,
                "loss/alpha": alpha_loss,
                "policy/alpha": alpha,
                "policy/entropy": -masked_mean(log_prob, batch.valid),
            }
            return (params, opt_state), metrics

        keys = jax.random.split(key, cfg.policy_frequency)
        (params, opt_state), metrics = jax.lax.scan(body, (state.params, state.opt_state), keys)
        return params, opt_state, jax.tree.map(jnp.mean, metrics)

    def skip_policy(state: SACState, batch: ReplayItem, key: Key):
        *_, metrics = jax.eval_shape(policy_steps, state, batch, key)
        return (
            state.params,
            state.opt_state,
            offpolicy.nan_like(metrics),
        )

    def learn_step(state: SACState, batch: ReplayItem, key: Key, gradient_step: Array):
        next_key, policy_key = jax.random.split(key)
        hp, params = state.hparams, state.params
        alpha = entropy_coefficient(params, hp, cfg.autotune)
        next_action, next_log_prob = actor.apply(params.actor, batch.next_obs).sample_and_log_prob(
            next_key
        )
        next_q = critics.apply(state.target_params, batch.next_obs, next_action)
        targets = clipped_double_q_targets(
            batch.reward, batch.terminated, next_q, hp.gamma, next_log_prob, alpha
        )
        tx = optimizers(hp).critic
        critic = continuous.critic_step(
            params.critic, state.opt_state.critic, batch, targets, critics, tx, axis_name
        )
        state = state._replace(
            params=params._replace(critic=critic.params),
            opt_state=state.opt_state._replace(critic=critic.opt_state),
        )
        update_policy = gradient_step % cfg.policy_frequency == 0
        params, opt_state, policy_metrics = jax.lax.cond(
            update_policy, policy_steps, skip_policy, state, batch, policy_key
        )
        target = optax.incremental_update(params.critic, state.target_params, hp.tau)
        metrics = {**pmean(critic.metrics, axis_name), **pmean(policy_metrics, axis_name)}
        return params, target, opt_state, {**metrics, "loss/total": critic.loss}

    def explore(state: SACState, obs: Array, key: Key) -> Array:
        return actor.apply(state.params.actor, obs).sample(key)

    def evaluate_act(state: SACState, obs: Array, key: Key, greedy: bool) -> Array:
        dist = actor.apply(state.params.actor, obs)
        return dist.mode() if greedy else dist.sample(key)

    update = continuous.make_continuous_update(cfg, env, env_params, explore, learn_step, axis_name)
    hparams = concrete_hparams(SACHparams, cfg)
    return Algo(init, update, evaluate_act, hparams, offpolicy.LOCKSTEP)


SPEC = AlgoSpec(
    name="sac",
    summary="Soft Actor-Critic: squashed Gaussian policy, twin critics, entropy tuning",
    config_cls=SACConfig,
    hparams_cls=SACHparams,
    build=make_sac,
    presets_module="purerl.presets.sac",
    smoke=SACConfig(env="Pendulum-v1", **offpolicy.SMOKE),
    excludable=("buffer",),
)
