"""Minimal single-closure PPO for continuous actions on an EnvPool MuJoCo task: the speed bar.

``make_ppo_continuous_train(cfg, num_seeds)`` returns a ``train(key)`` that runs the whole
budget as one program in the style of ``benchmarks/reference.py`` (PureJaxRL's): a Gaussian
policy with a state-independent log standard deviation, separate MLP actor and critic
(orthogonal init), GAE, the clipped surrogate and clipped value loss, Adam with global-norm
clipping and a linearly annealed learning rate, epochs of shuffled minibatches. It steps its own
EnvPool pool through EnvPool's XLA custom call, with float64 actions traced under a local 64-bit
scope as ``purerl.envs.envpool`` does. Several seeds share one pool of ``num_seeds x num_envs``
environments (the custom call cannot sit under ``vmap``): their actions are concatenated for one
step, and the policy and learner are vmapped over the seed axis.

What it does not do, being the least work the algorithm needs: no episode statistics and no
metrics beyond the summed reward; no masking of EnvPool's reset steps (the step after an episode
ends, whose action the pool ignores, is learned from like any other); truncation is treated as
termination (no bootstrapping from the final observation); actions are clipped to the bounds
but the Gaussian is not rescaled to them (HalfCheetah's are [-1, 1]). With ``cfg.normalize_obs``
observations are standardised with running statistics (updated with each batch before use) and
with ``cfg.normalize_reward`` rewards divided by the running deviation of the discounted return,
both clipped to [-10, 10], as Gymnasium's wrappers in CleanRL's ``ppo_continuous_action.py`` do.
It is a benchmark, not a library: purerl's implementation is what the tests check.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.experimental import io_callback

from benchmarks.reference import MLP

CLIP = 10.0
"""Bound of normalised observations and scaled rewards (Gymnasium's wrappers' default)."""


class XlaPool(NamedTuple):
    """An EnvPool pool and its XLA step, for ``num_envs`` environments."""

    pool: Any
    handle: np.ndarray
    xla_step: Any
    num_envs: int
    obs_dim: int
    action_low: np.ndarray
    action_high: np.ndarray

    def reset(self) -> jax.Array:
        """Resets every environment on the host (through a callback); float32 ``[N, obs_dim]``."""

        def host_reset():
            return np.asarray(self.pool.reset()[0], np.float32)

        shape = jax.ShapeDtypeStruct((self.num_envs, self.obs_dim), np.float32)
        return io_callback(host_reset, shape, ordered=False)

    def step(self, handle: jax.Array, action: jax.Array):
        """One step of every environment on float32 actions ``[N, A]``: the new handle, float32
        observations ``[N, obs_dim]`` and rewards ``[N]``, and bool episode ends ``[N]``. The
        simulator's float64 values exist only inside the local 64-bit scope."""
        with jax.enable_x64(True):
            handle, (obs, reward, terminated, truncated, _) = self.xla_step(
                handle, action.astype(jnp.float64)
            )
            return (
                handle,
                obs.astype(jnp.float32),
                reward.astype(jnp.float32),
                (terminated | truncated).astype(bool),
            )


def make_xla_pool(env_id: str, num_envs: int, seed: int = 0) -> XlaPool:
    """A gymnasium-API EnvPool pool with its XLA interface built in a 64-bit scope, so the
    custom call declares its float64 arrays as such."""
    import envpool

    pool = envpool.make(env_id, env_type="gymnasium", num_envs=num_envs, seed=seed)
    with jax.enable_x64(True):
        handle, _, _, xla_step = pool.xla()
    space = pool.action_space
    return XlaPool(
        pool,
        np.asarray(handle),
        xla_step,
        num_envs,
        int(np.prod(pool.observation_space.shape)),
        np.asarray(space.low, np.float32),
        np.asarray(space.high, np.float32),
    )


class RunningStats(NamedTuple):
    mean: jax.Array
    var: jax.Array
    count: jax.Array


class Norm(NamedTuple):
    """One seed's normalisers: observation statistics, discounted returns ``[B]`` and their
    statistics."""

    obs: RunningStats
    returns: jax.Array
    return_stats: RunningStats


def init_stats(shape: tuple[int, ...]) -> RunningStats:
    return RunningStats(jnp.zeros(shape), jnp.ones(shape), jnp.float32(1e-4))


def update_stats(stats: RunningStats, x: jax.Array) -> RunningStats:
    """Chan et al.'s parallel update with the batch ``x`` ``[N, ...]``."""
    n = x.shape[0]
    delta = x.mean(0) - stats.mean
    total = stats.count + n
    m2 = stats.var * stats.count + x.var(0) * n + delta**2 * stats.count * n / total
    return RunningStats(stats.mean + delta * n / total, m2 / total, total)


class Step(NamedTuple):
    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array


class Minibatch(NamedTuple):
    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


def gaussian_log_prob(mean, log_std, action):
    z = (action - mean) * jnp.exp(-log_std)
    return (-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)


def make_ppo_continuous_train(cfg: Any, num_seeds: int = 1, learn: bool = True):
    """PPO for ``cfg`` (a ``purerl.algos.ppo.PPOConfig`` on a MuJoCo id) on a pool of
    ``num_seeds x cfg.num_envs`` environments. ``train(key)`` takes one key, or keys ``[S]``
    when ``num_seeds > 1``; with ``learn`` False it only collects rollouts (a timing aid) and
    returns the sum of everything they record instead of the rewards."""
    pool = make_xla_pool(cfg.env, num_seeds * cfg.num_envs, cfg.seed)
    num_actions = len(pool.action_low)
    actor = MLP(cfg.hidden_sizes, num_actions, cfg.activation, 0.01)
    critic = MLP(cfg.hidden_sizes, 1, cfg.activation, 1.0)
    num_updates = cfg.total_timesteps // (cfg.num_envs * cfg.rollout_len)
    steps_per_update = cfg.num_epochs * cfg.num_minibatches
    batch = cfg.num_envs * cfg.rollout_len
    # One seed runs unmapped, as purerl's does (a vmap of one is slower on CPU).
    seeded = jax.vmap if num_seeds > 1 else lambda fn, **_: fn
    batch_shape = (num_seeds, cfg.num_envs) if num_seeds > 1 else (cfg.num_envs,)

    def schedule(count):
        return cfg.lr * (1.0 - (count // steps_per_update) / num_updates)

    tx = optax.chain(
        optax.clip_by_global_norm(cfg.max_grad_norm),
        optax.adam(schedule if cfg.anneal_lr else cfg.lr, eps=1e-5),
    )

    def init(key, raw_obs):
        actor_key, critic_key = jax.random.split(key)
        obs_stats = update_stats(init_stats(raw_obs.shape[1:]), raw_obs)
        params = {
            "actor": actor.init(actor_key, raw_obs),
            "critic": critic.init(critic_key, raw_obs),
            "log_std": jnp.zeros(num_actions),
        }
        norm = Norm(obs_stats, jnp.zeros(cfg.num_envs), init_stats(()))
        return params, tx.init(params), norm, normalize(obs_stats, raw_obs)

    def normalize(stats, raw_obs):
        if not cfg.normalize_obs:
            return raw_obs
        return jnp.clip((raw_obs - stats.mean) / jnp.sqrt(stats.var + 1e-8), -CLIP, CLIP)

    def act(params, obs, key):
        mean = actor.apply(params["actor"], obs)
        action = mean + jnp.exp(params["log_std"]) * jax.random.normal(key, mean.shape)
        value = critic.apply(params["critic"], obs)[:, 0]
        return action, gaussian_log_prob(mean, params["log_std"], action), value

    def observe(norm, raw_obs, reward, done):
        obs_stats = update_stats(norm.obs, raw_obs) if cfg.normalize_obs else norm.obs
        returns, return_stats = norm.returns, norm.return_stats
        if cfg.normalize_reward:
            returns = returns * cfg.gamma + reward
            return_stats = update_stats(return_stats, returns)
            reward = jnp.clip(reward / jnp.sqrt(return_stats.var + 1e-8), -CLIP, CLIP)
            returns = jnp.where(done, 0.0, returns)
        norm = Norm(obs_stats, returns, return_stats)
        return norm, normalize(obs_stats, raw_obs), reward

    def env_step(carry, step_key):
        params, norm, handle, obs = carry
        action, log_prob, value = seeded(act)(params, obs, step_key)
        clipped = jnp.clip(action, pool.action_low, pool.action_high)
        handle, raw_obs, reward, done = pool.step(handle, clipped.reshape(-1, num_actions))
        raw_obs, reward, done = (
            x.reshape(batch_shape + x.shape[1:]) for x in (raw_obs, reward, done)
        )
        norm, next_obs, scaled = seeded(observe)(norm, raw_obs, reward, done)
        return (params, norm, handle, next_obs), Step(obs, action, log_prob, value, scaled, done)

    def gae(traj, last_value):
        def backward(carry, step):
            advantage, next_value = carry
            not_done = 1.0 - step.done
            delta = step.reward + cfg.gamma * next_value * not_done - step.value
            advantage = delta + cfg.gamma * cfg.gae_lambda * not_done * advantage
            return (advantage, step.value), advantage

        init = (jnp.zeros_like(last_value), last_value)
        _, advantages = jax.lax.scan(backward, init, traj, reverse=True)
        return advantages, advantages + traj.value

    def loss_fn(params, mb):
        mean = actor.apply(params["actor"], mb.obs)
        value = critic.apply(params["critic"], mb.obs)[:, 0]
        log_prob = gaussian_log_prob(mean, params["log_std"], mb.action)
        clipped = mb.value + jnp.clip(value - mb.value, -cfg.clip_eps, cfg.clip_eps)
        value_loss = 0.5 * jnp.maximum((value - mb.target) ** 2, (clipped - mb.target) ** 2).mean()
        ratio = jnp.exp(log_prob - mb.log_prob)
        adv = (mb.advantage - mb.advantage.mean()) / (mb.advantage.std() + 1e-8)
        surrogate = jnp.minimum(
            ratio * adv, jnp.clip(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * adv
        )
        entropy = (params["log_std"] + 0.5 * math.log(2 * math.pi * math.e)).sum()
        return -surrogate.mean() + cfg.vf_coef * value_loss - cfg.ent_coef * entropy

    def sgd_epochs(params, opt_state, traj, last_obs, key):
        """One seed's learning step on its ``[T, B]`` rollout."""
        advantages, targets = gae(traj, critic.apply(params["critic"], last_obs)[:, 0])
        data = Minibatch(traj.obs, traj.action, traj.log_prob, traj.value, advantages, targets)
        data = jax.tree.map(lambda x: x.reshape((batch,) + x.shape[2:]), data)

        def epoch(carry, epoch_key):
            order = jax.random.permutation(epoch_key, batch)
            shuffled = jax.tree.map(
                lambda x: x[order].reshape((cfg.num_minibatches, -1) + x.shape[1:]), data
            )

            def sgd(carry, mb):
                params, opt_state = carry
                updates, opt_state = tx.update(jax.grad(loss_fn)(params, mb), opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), None

            return jax.lax.scan(sgd, carry, shuffled)[0], None

        keys = jax.random.split(key, cfg.num_epochs)
        return jax.lax.scan(epoch, (params, opt_state), keys)[0]

    def update(carry, update_key):
        params, opt_state, norm, handle, obs = carry
        rollout_key, sgd_key = seeded(jax.random.split, out_axes=1)(update_key)
        step_keys = seeded(lambda k: jax.random.split(k, cfg.rollout_len), out_axes=1)(rollout_key)
        (params, norm, handle, obs), traj = jax.lax.scan(
            env_step, (params, norm, handle, obs), step_keys
        )
        if learn:
            learner = seeded(sgd_epochs, in_axes=(0, 0, 1, 0, 0))
            params, opt_state = learner(params, opt_state, traj, obs, sgd_key)
            return (params, opt_state, norm, handle, obs), traj.reward.sum()
        # Rollouts only: every recorded value feeds the output, so XLA keeps all of the acting.
        return (params, opt_state, norm, handle, obs), sum(x.sum() for x in jax.tree.leaves(traj))

    def train(key):
        init_key, run_key = seeded(jax.random.split, out_axes=1)(key)
        raw_obs = pool.reset().reshape(batch_shape + (pool.obs_dim,))
        params, opt_state, norm, obs = seeded(init)(init_key, raw_obs)
        carry = (params, opt_state, norm, jnp.asarray(pool.handle), obs)
        update_keys = seeded(lambda k: jax.random.split(k, num_updates), out_axes=1)(run_key)
        carry, rewards = jax.lax.scan(update, carry, update_keys)
        return carry[0], rewards

    return train
