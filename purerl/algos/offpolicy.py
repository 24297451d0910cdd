"""What SAC and TD3 share: continuous-action off-policy acting, replay and learning cadence.

Not an algorithm itself (it is not in the registry). One ``update`` runs ``rollout_len``
iterations of: one step of every environment (uniformly random actions until
``learning_starts`` environment steps have been taken, then the algorithm's exploration
policy), written to the replay buffer in device memory; then, once past ``learning_starts``,
``gradient_steps`` gradient steps on uniformly sampled minibatches. With one environment and one
gradient step this is CleanRL's protocol (one gradient step per environment step); with many
environments it is the many-env JAX style, and ``gradient_steps`` sets the update-to-data ratio
(``gradient_steps / num_envs`` gradient steps per transition).

An algorithm supplies ``explore(state, obs, key) -> actions`` and ``learn_step(state, batch, key,
gradient_step) -> (params, target_params, opt_state, metrics)``; ``gradient_step`` counts the
run's gradient steps from 0 (for delayed policy updates) and is derived from the update count,
so it is the same for every seed and chunking.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

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
from purerl.core.env import Box, Environment
from purerl.core.nets import Critics, action_range
from purerl.core.ops.losses import critics_loss, masked_mean
from purerl.core.ops.sgd import fold_in_axis, pmean
from purerl.core.rollout import PolicyStep, collect
from purerl.core.stats import summarize
from purerl.core.types import Array, Key, Metrics, PyTree

MAX_STEPS = 2**31 - 1
"""Environment and gradient steps are counted in int32 inside the update."""

LOCKSTEP = ("buffer.position", "buffer.size")
"""Every seed writes one step per iteration: the buffer's counters follow the update count."""


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig(CommonConfig):
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
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Hidden layer widths of the actor and critic MLPs."""
    activation: Activation = "relu"
    """Hidden activation."""

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def warmup_iterations(self) -> int:
        """Iterations (vector steps) before the first one that learns."""
        return self.learning_starts // self.num_envs

    def check(self) -> None:
        require_positive(self, "rollout_len", "gradient_steps", "buffer_size", "batch_size")
        require_positive(self, "policy_frequency", "policy_lr", "q_lr")
        require_unit_interval(self, "gamma")
        if not 0.0 < self.tau <= 1.0:
            raise ConfigError(f"--tau must lie in (0, 1], got {self.tau}")
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
        if self.learning_starts < 0:
            raise ConfigError(
                f"--learning-starts must be 0 or more environment steps, got {self.learning_starts}"
            )
        run_steps = self.num_updates * self.env_steps_per_update
        if self.total_timesteps > MAX_STEPS or run_steps * self.gradient_steps > MAX_STEPS:
            raise ConfigError(
                f"--total-timesteps {self.total_timesteps:,} is beyond the {MAX_STEPS:,} "
                "environment or gradient steps an int32 counter holds; split the run"
            )
        if run_steps and self.learning_starts >= run_steps:
            raise ConfigError(
                f"--learning-starts {self.learning_starts} is not below the run's "
                f"{run_steps} steps: it would never learn"
            )
        require_network(self)


class ReplayItem(NamedTuple):
    """One stored transition, ``[B, ...]`` per step; actions stay float32."""

    obs: Array
    action: Array
    reward: Array
    terminated: Array
    valid: Array
    next_obs: Array
    """The observation the step reached (its final one when the episode ended)."""


def check_env(env: Environment, name: str) -> None:
    if env.spec.num_envs is None:
        raise ConfigError(
            f"{name} needs a vectorised environment; make {env.spec.id} with num_envs"
        )
    if not isinstance(env.spec.action_space, Box):
        raise ConfigError(f"{name} needs continuous (Box) actions; {env.spec.id} has discrete ones")


def init_buffer(cfg: OffPolicyConfig, env: Environment, obs: Array) -> buffers.ReplayBuffer:
    num_envs = obs.shape[0]
    action = jnp.zeros((num_envs, *env.spec.action_space.shape), jnp.float32)
    flags = jnp.zeros((num_envs,), bool)
    example = ReplayItem(obs, action, jnp.zeros((num_envs,), jnp.float32), flags, flags, obs)
    return buffers.init_buffer(example, cfg.buffer_size // env.spec.num_envs)


def uniform_actions(space: Box, num: int, key: Key) -> Array:
    """``[num, *shape]`` actions drawn uniformly within the bounds ([-1, 1] where unbounded)."""
    center, half_width = action_range(space)
    noise = jax.random.uniform(key, (num, *space.shape), jnp.float32, -1.0, 1.0)
    return center.reshape(space.shape) + half_width.reshape(space.shape) * noise


Explore = Callable[[Any, Array, Key], Array]
LearnStep = Callable[[Any, Any, Key, Array], tuple[PyTree, PyTree, Any, Metrics]]


def make_update(
    cfg: OffPolicyConfig,
    env: Environment,
    env_params: Any,
    explore: Explore,
    learn_step: LearnStep,
    axis_name: str | None = None,
) -> Callable[[Any, Key], tuple[Any, Metrics]]:
    """The ``update(state, key)`` of an off-policy continuous-action algorithm.

    The state is a NamedTuple with ``params``, ``target_params``, ``opt_state``, ``env_state``,
    ``obs``, ``buffer``, ``step`` and ``hparams``.
    """
    space = env.spec.action_space

    def learn(state, key: Key, first_gradient_step: Array):
        def body(carry, inputs):
            params, target_params, opt_state = carry
            index, step_key = inputs
            sample_key, learn_key = jax.random.split(step_key)
            batch = buffers.gather(
                state.buffer, buffers.sample_index(state.buffer, sample_key, cfg.batch_size)
            )
            current = state._replace(
                params=params, target_params=target_params, opt_state=opt_state
            )
            *carry, metrics = learn_step(current, batch, learn_key, first_gradient_step + index)
            return tuple(carry), metrics

        carry = (state.params, state.target_params, state.opt_state)
        inputs = (jnp.arange(cfg.gradient_steps, dtype=jnp.int32),)
        inputs += (jax.random.split(key, cfg.gradient_steps),)
        (params, target_params, opt_state), metrics = jax.lax.scan(body, carry, inputs)
        return params, target_params, opt_state, mean_where_defined(metrics)

    def skip_learning(state, key: Key, first_gradient_step: Array):
        """What ``learn`` returns, without gradient steps: the state's networks, NaN metrics."""
        *_, metrics = jax.eval_shape(learn, state, key, first_gradient_step)
        return state.params, state.target_params, state.opt_state, nan_like(metrics)

    def iteration(state, iteration_key: Key, index: Array):
        act_key, learn_key = jax.random.split(iteration_key)
        warm = index < cfg.warmup_iterations

        def policy(obs: Array, key: Key) -> PolicyStep:
            random_key, explore_key = jax.random.split(key)
            random = uniform_actions(space, obs.shape[0], random_key)
            return PolicyStep(jnp.where(warm, random, explore(state, obs, explore_key)))

        rollout = collect(env, env_params, policy, state.env_state, state.obs, act_key, 1)
        traj = rollout.transitions
        items = ReplayItem(
            traj.obs,
            traj.action.astype(jnp.float32),
            traj.reward.astype(jnp.float32),
            traj.terminated,
            traj.valid,
            traj.final_obs,
        )
        state = state._replace(
            env_state=rollout.env_state, obs=rollout.obs, buffer=buffers.add(state.buffer, items)
        )
        learning = index >= cfg.warmup_iterations
        first_gradient_step = (index - cfg.warmup_iterations) * cfg.gradient_steps
        params, target_params, opt_state, metrics = jax.lax.cond(
            learning, learn, skip_learning, state, learn_key, first_gradient_step
        )
        state = state._replace(params=params, target_params=target_params, opt_state=opt_state)
        return state, (metrics, learning, traj.episode)

    def update(state, key: Key) -> tuple[Any, Metrics]:
        first = state.step * cfg.rollout_len

        def body(state, inputs):
            index, iteration_key = inputs
            return iteration(state, iteration_key, first + index)

        keys = jax.random.split(fold_in_axis(key, axis_name), cfg.rollout_len)
        inputs = (jnp.arange(cfg.rollout_len, dtype=jnp.int32), keys)
        state, (metrics, learned, episodes) = jax.lax.scan(body, state, inputs)
        metrics = mean_where_defined(pmean(metrics, axis_name))
        metrics["optim/gradient_steps"] = learned.sum() * cfg.gradient_steps
        metrics["optim/lr"] = state.hparams.q_lr
        metrics["optim/policy_lr"] = state.hparams.policy_lr
        episodes = summarize(episodes, axis_name)
        return state._replace(step=state.step + 1), {**metrics, **episodes}

    return update


def mean_where_defined(metrics: Metrics) -> Metrics:
    """Means over the leading axis of each metric, skipping NaN entries: steps that did not
    compute it (no gradient step yet, or no policy update at a delayed step). NaN if none did."""

    def mean(values: Array) -> Array:
        defined = ~jnp.isnan(values)
        count = defined.sum()
        total = jnp.where(defined, values, 0.0).sum()
        return jnp.where(count > 0, total / jnp.maximum(count, 1), jnp.nan)

    return {name: mean(values) for name, values in metrics.items()}


def nan_like(metrics: Metrics) -> Metrics:
    """NaN metrics shaped like ``metrics``: what a skipped step reports (``mean_where_defined``
    leaves them out)."""
    return jax.tree.map(lambda m: jnp.full_like(m, jnp.nan), metrics)


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
