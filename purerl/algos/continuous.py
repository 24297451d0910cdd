"""What SAC and TD3 share: their configuration, and their acting and learning on the replay
recipe (``algos.offpolicy``) for continuous actions.

Each iteration is one step of every environment: uniformly random actions until
``learning_starts`` environment steps have been taken (``act_after_warmup``), then the
algorithm's exploration policy; once past the warm-up, ``gradient_steps`` gradient steps on
freshly sampled minibatches (``learn_on_samples``). With one environment and one gradient step
this is CleanRL's protocol (one gradient step per environment step); with many environments it
is the many-env JAX style, and ``gradient_steps`` sets the update-to-data ratio
(``gradient_steps / num_envs`` gradient steps per transition). An algorithm supplies
``explore(state, obs, key) -> actions`` and ``learn_step(state, batch, key, gradient_step) ->
(params, target_params, opt_state, metrics)``; ``gradient_step`` counts the run's gradient steps
from 0 (for delayed policy updates).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from purerl.algos.offpolicy import (
    Cadence,
    Learned,
    ReplayItem,
    check_replay,
    make_update,
    mean_where_defined,
    sample,
)
from purerl.config import (
    Activation,
    CommonConfig,
    require_network,
    require_positive,
    require_unit_interval,
    traced,
)
from purerl.core.env import Box, Environment
from purerl.core.nets import Critics, action_range
from purerl.core.ops.losses import critics_loss, masked_mean
from purerl.core.ops.sgd import pmean
from purerl.core.types import Array, Key, Metrics, PyTree


@dataclasses.dataclass(frozen=True)
class ContinuousConfig(CommonConfig):
    """Settings SAC and TD3 share; defaults are CleanRL's MuJoCo protocol (one environment)."""

    env: str = "Pendulum-v1"
    num_envs: int = 1
    """Parallel environments per agent (each vector step adds num_envs transitions)."""
    rollout_len: int = 1000
    """Steps per environment in one update (one metrics row)."""
    gradient_steps: int = 1
    """Gradient steps per vector step (update-to-data ratio: gradient_steps / num_envs per
    transition)."""
    buffer_size: int = 1_000_000
    """Transitions the replay buffer holds; a multiple of num_envs."""
    batch_size: int = 256
    """Transitions per gradient step."""
    learning_starts: int = 5_000
    """Environment steps of uniformly random actions before the first gradient step."""
    gamma: float = traced(0.99)
    """Discount factor."""
    tau: float = traced(0.005)
    """Polyak rate of the target networks (1 copies)."""
    policy_lr: float = traced(3e-4)
    """Adam learning rate of the actor."""
    q_lr: float = traced(1e-3)
    """Adam learning rate of the critics."""
    policy_frequency: int = 2
    """Gradient steps between policy updates (delayed policy updates)."""
    network: str = "mlp"
    """Torso: mlp (the actor an MLP of hidden_sizes, each critic one over the observation and
    the action), or module:attr, a flax module of yours (a class, or a function returning one):
    the actor and each critic read the observation through their own copy of it
    (docs/guide.md, "Your own network")."""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Hidden layer widths of the actor and critic MLPs (with a torso of yours: the critics'
    MLPs over its features and the action)."""
    activation: Activation = "relu"
    """Hidden activation."""

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.rollout_len

    def check(self) -> None:
        require_positive(self, "rollout_len", "gradient_steps", "buffer_size", "batch_size")
        require_positive(self, "policy_frequency", "policy_lr", "q_lr")
        require_unit_interval(self, "gamma")
        check_replay(self, self.gradient_steps)
        require_network(self)


Explore = Callable[[Any, Array, Key], Array]
LearnStep = Callable[[Any, ReplayItem, Key, Array], Learned]


def make_continuous_update(
    cfg: ContinuousConfig,
    env: Environment,
    env_params: Any,
    explore: Explore,
    learn_step: LearnStep,
    axis_name: str | None = None,
) -> Callable[[Any, Key], tuple[Any, Metrics]]:
    """SAC and TD3's ``update``: ``explore(state, obs, key) -> actions`` after uniformly random
    warm-up actions, ``cfg.gradient_steps`` steps of ``learn_step`` per vector step."""
    cadence = Cadence.from_config(cfg, gradient_steps=cfg.gradient_steps)
    space = env.spec.action_space
    act = functools.partial(act_after_warmup, explore, space, cadence.warmup_iterations)
    learn = functools.partial(learn_on_samples, learn_step, cfg.batch_size, cadence)
    return make_update(cadence, env, env_params, act, learn, continuous_metrics, axis_name)


def uniform_actions(space: Box, num: int, key: Key) -> Array:
    """``[num, *shape]`` actions drawn uniformly within the bounds ([-1, 1] where unbounded)."""
    center, half_width = action_range(space)
    noise = jax.random.uniform(key, (num, *space.shape), jnp.float32, -1.0, 1.0)
    return center.reshape(space.shape) + half_width.reshape(space.shape) * noise


def act_after_warmup(
    explore: Explore,
    space: Box,
    warmup_iterations: int,
    state: Any,
    obs: Array,
    key: Key,
    iteration: Array,
) -> Array:
    """Uniformly random actions in the warm-up iterations, ``explore``'s after them."""
    random_key, explore_key = jax.random.split(key)
    random = uniform_actions(space, obs.shape[0], random_key)
    return jnp.where(iteration < warmup_iterations, random, explore(state, obs, explore_key))


def learn_on_samples(
    learn_step: LearnStep,
    batch_size: int,
    cadence: Cadence,
    state: Any,
    key: Key,
    iteration: Array,
) -> Learned:
    """``cadence.gradient_steps`` steps of ``learn_step(state, batch, key, gradient_step)``, each
    on a freshly sampled minibatch; ``gradient_step`` counts the run's gradient steps from 0 (for
    delayed policy updates). Metrics are their means (``mean_where_defined``)."""
    first_gradient_step = (iteration - cadence.warmup_iterations) * cadence.gradient_steps

    def body(carry, inputs):
        params, target_params, opt_state = carry
        index, step_key = inputs
        sample_key, learn_key = jax.random.split(step_key)
        batch = sample(state.buffer, sample_key, batch_size)
        current = state._replace(params=params, target_params=target_params, opt_state=opt_state)
        *carry, metrics = learn_step(current, batch, learn_key, first_gradient_step + index)
        return tuple(carry), metrics

    carry = (state.params, state.target_params, state.opt_state)
    inputs = (jnp.arange(cadence.gradient_steps, dtype=jnp.int32),)
    inputs += (jax.random.split(key, cadence.gradient_steps),)
    (params, target_params, opt_state), metrics = jax.lax.scan(body, carry, inputs)
    return params, target_params, opt_state, mean_where_defined(metrics)


def continuous_metrics(state: Any, iterations_done: Array) -> Metrics:
    return {"optim/lr": state.hparams.q_lr, "optim/policy_lr": state.hparams.policy_lr}


def critic_loss(
    critic_params: PyTree, batch: ReplayItem, targets: Array, critics: Critics
) -> tuple[Array, Metrics]:
    """Every critic's squared error to the shared targets, summed (``ops.losses.critics_loss``)."""
    q_values = critics.apply(critic_params, batch.obs, batch.action)
    loss = critics_loss(q_values, targets, batch.valid)
    return loss, {"loss/critic": loss, "q/taken": masked_mean(q_values[0], batch.valid)}


class CriticStep(NamedTuple):
    params: PyTree
    opt_state: Any
    loss: Array
    metrics: Metrics


def critic_step(
    critic_params: PyTree,
    opt_state: Any,
    batch: ReplayItem,
    targets: Array,
    critics: Critics,
    tx: optax.GradientTransformation,
    axis_name: str | None = None,
) -> CriticStep:
    """One gradient step of the critics towards ``targets`` ``[N]`` (gradients averaged over
    ``axis_name``)."""
    (loss, metrics), grads = jax.value_and_grad(critic_loss, has_aux=True)(
        critic_params, batch, targets, critics
    )
    updates, opt_state = tx.update(pmean(grads, axis_name), opt_state)
    return CriticStep(optax.apply_updates(critic_params, updates), opt_state, loss, metrics)
