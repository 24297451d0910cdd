"""Twin Delayed DDPG (Fujimoto et al. 2018, "Addressing Function Approximation Error in
Actor-Critic Methods") as a recipe, as CleanRL's ``td3_continuous_action.py`` implements it.

Each gradient step regresses twin critics on the clipped double-Q target at a smoothed target
action (target policy smoothing: clipped Gaussian noise on the target actor's action, Fujimoto
et al. 2018, eq. 14-15; ``ops.returns.clipped_double_q_targets``); every ``policy_frequency``
gradient steps the deterministic actor takes one step up ``Q_1`` and the target actor and
critics move by ``tau`` (delayed updates, Algorithm 1). Exploration adds Gaussian noise of
``exploration_noise`` half-widths to the actor's action. Acting, replay and the learning
cadence are shared with SAC (``algos.continuous``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from purerl.algos import AlgoSpec, continuous, offpolicy
from purerl.algos.continuous import ContinuousConfig
from purerl.algos.offpolicy import ReplayItem
from purerl.config import require_positive, traced
from purerl.core import buffers
from purerl.core.algo import Algo, concrete_hparams, hparams_class
from purerl.core.env import Environment
from purerl.core.nets import Critics, DeterministicActor, action_range, make_continuous_nets
from purerl.core.ops.losses import masked_mean
from purerl.core.ops.returns import clipped_double_q_targets
from purerl.core.ops.sgd import fold_in_axis, pmean
from purerl.core.types import Array, Key, PyTree


@dataclasses.dataclass(frozen=True)
class TD3Config(ContinuousConfig):
    """TD3 hyperparameters; defaults are CleanRL's td3_continuous_action (MuJoCo, 1 env)."""

    learning_starts: int = 25_000
    """Environment steps of uniformly random actions before the first gradient step."""
    policy_lr: float = traced(3e-4)
    """Adam learning rate of the actor."""
    q_lr: float = traced(3e-4)
    """Adam learning rate of the critics."""
    exploration_noise: float = traced(0.1)
    """Standard deviation of the Gaussian exploration noise, in action half-widths."""
    policy_noise: float = traced(0.2)
    """Standard deviation of the target policy smoothing noise, in action half-widths."""
    noise_clip: float = traced(0.5)
    """The smoothing noise is clipped to +- this, in action half-widths."""

    def check(self) -> None:
        super().check()
        require_positive(self, "exploration_noise", "policy_noise", "noise_clip")


TD3Hparams = hparams_class(TD3Config, "TD3Hparams")
"""The traced hyperparameters: ``TD3Config``'s fields marked ``traced``."""


class TD3Params(NamedTuple):
    actor: PyTree
    critic: PyTree
    """Twin critics, leaves ``[2, ...]``."""


class TD3OptState(NamedTuple):
    actor: Any
    critic: Any


class TD3State(NamedTuple):
    params: TD3Params
    target_params: TD3Params
    """Target actor and critics (Polyak averages of ``params``)."""
    opt_state: TD3OptState
    env_state: Any
    obs: Array
    """``[B, *obs_shape]`` observations to act on next."""
    buffer: buffers.ReplayBuffer
    step: Array
    """int32 count of updates done."""
    hparams: TD3Hparams


def optimizers(hparams: TD3Hparams) -> TD3OptState:
    """Plain Adam for actor and critics, as in CleanRL (eps 1e-8, no gradient clipping)."""
    return TD3OptState(optax.adam(hparams.policy_lr), optax.adam(hparams.q_lr))


def smoothed_target_actions(
    target_actions: Array, key: Key, policy_noise: Array, noise_clip: Array, space: Any
) -> Array:
    """Target policy smoothing (Fujimoto et al. 2018, eq. 14): ``clip(mu'(s') + clip(eps, -c,
    c) * half_width, low, high)`` with ``eps ~ N(0, policy_noise^2)``; ``[N, A]``."""
    center, half_width = action_range(space)
    noise = jax.random.normal(key, target_actions.shape) * policy_noise
    noise = jnp.clip(noise, -noise_clip, noise_clip) * half_width
    return jnp.clip(target_actions + noise, center - half_width, center + half_width)


def actor_loss(
    actor_params: PyTree,
    critic_params: PyTree,
    batch: ReplayItem,
    actor: DeterministicActor,
    critics: Critics,
) -> Array:
    """``-E[Q_1(s, mu(s))]`` (Fujimoto et al. 2018, Algorithm 1: the first critic only)."""
    q_values = critics.apply(critic_params, batch.obs, actor.apply(actor_params, batch.obs))
    return -masked_mean(q_values[0], batch.valid)


def make_td3(
    cfg: TD3Config,
    env: Environment,
    env_params: Any = None,
    axis_name: str | None = None,
    torso: nn.Module | None = None,
) -> Algo[TD3State]:
    """Builds TD3 for a vectorised environment with continuous (Box) actions."""
    offpolicy.check_env(env, "TD3")
    space = env.spec.action_space
    network = cfg.network if torso is None else torso
    actor, critics = make_continuous_nets(
        env.spec, cfg.hidden_sizes, cfg.activation, cfg.precision, False, network
    )
    env_params = env.default_params if env_params is None else env_params
    center, half_width = action_range(space)

    def init(key: Key) -> TD3State:
        actor_key, critic_key, env_key = jax.random.split(key, 3)
        env_state, obs = env.reset(fold_in_axis(env_key, axis_name), env_params)
        action = jnp.zeros((obs.shape[0], *space.shape), jnp.float32)
        params = TD3Params(actor.init(actor_key, obs), critics.init(critic_key, obs, action))
        tx = optimizers(TD3Hparams.from_config(cfg))
        opt_state = TD3OptState(tx.actor.init(params.actor), tx.critic.init(params.critic))
        buffer = offpolicy.init_buffer(cfg, env, obs)
        hparams = TD3Hparams.from_config(cfg)
        return TD3State(params, params, opt_state, env_state, obs, buffer, jnp.int32(0), hparams)

    def policy_step(state: TD3State, batch: ReplayItem):
        """One actor step, then Polyak updates of the target actor and critics."""
        tx = optimizers(state.hparams)
        loss, grads = jax.value_and_grad(actor_loss)(
            state.params.actor, state.params.critic, batch, actor, critics
        )
        updates, actor_opt = tx.actor.update(pmean(grads, axis_name), state.opt_state.actor)
        params = state.params._replace(actor=optax.apply_updates(state.params.actor, updates))
        target = optax.incremental_update(params, state.target_params, state.hparams.tau)
        opt_state = state.opt_state._replace(actor=actor_opt)
        return params, target, opt_state, {"loss/actor": loss}

    def skip_policy(state: TD3State, batch: ReplayItem):
        *_, metrics = jax.eval_shape(policy_step, state, batch)
        nans = offpolicy.nan_like(metrics)
        return state.params, state.target_params, state.opt_state, nans

    def learn_step(state: TD3State, batch: ReplayItem, key: Key, gradient_step: Array):
        hp, params, target_params = state.hparams, state.params, state.target_params
        next_actions = smoothed_target_actions(
            actor.apply(target_params.actor, batch.next_obs),
            key,
            hp.policy_noise,
            hp.noise_clip,
            space,
        )
        next_q = critics.apply(target_params.critic, batch.next_obs, next_actions)
        targets = clipped_double_q_targets(batch.reward, batch.terminated, next_q, hp.gamma)
        tx = optimizers(hp).critic
        critic = continuous.critic_step(
            params.critic, state.opt_state.critic, batch, targets, critics, tx, axis_name
        )
        state = state._replace(
            params=params._replace(critic=critic.params),
            opt_state=state.opt_state._replace(critic=critic.opt_state),
        )
        delayed = gradient_step % cfg.policy_frequency == 0
        params, target, opt_state, policy_metrics = jax.lax.cond(
            delayed, policy_step, skip_policy, state, batch
        )
        metrics = {**pmean(critic.metrics, axis_name), **pmean(policy_metrics, axis_name)}
        return params, target, opt_state, {**metrics, "loss/total": critic.loss}

    def explore(state: TD3State, obs: Array, key: Key) -> Array:
        action = actor.apply(state.params.actor, obs)
        noise = jax.random.normal(key, action.shape) * state.hparams.exploration_noise
        return jnp.clip(action + noise * half_width, center - half_width, center + half_width)

    def evaluate_act(state: TD3State, obs: Array, key: Key, greedy: bool) -> Array:
        if greedy:
            return actor.apply(state.params.actor, obs)
        return explore(state, obs, key)

    update = continuous.make_continuous_update(cfg, env, env_params, explore, learn_step, axis_name)
    hparams = concrete_hparams(TD3Hparams, cfg)
    return Algo(init, update, evaluate_act, hparams, offpolicy.LOCKSTEP)


SPEC = AlgoSpec(
    name="td3",
    summary="TD3: deterministic actor, twin critics, target smoothing, delayed updates",
    config_cls=TD3Config,
    hparams_cls=TD3Hparams,
    build=make_td3,
    presets_module="purerl.presets.td3",
    smoke=TD3Config(env="Pendulum-v1", **offpolicy.SMOKE),
    excludable=("buffer",),
)
