"""Minimal single-closure PPO and DQN in the style of PureJaxRL, written here as the speed bar.

Each ``make_*_train(cfg)`` returns a pure ``train(key)`` that runs the whole budget as one
program: no environment wrappers beyond ``vmap``, no episode statistics, no metrics beyond the
losses, no masks: the least work these algorithms can do on a gymnax environment with the same
hyperparameters as the purerl configuration it is given. ``benchmarks.throughput --peer
reference`` times it beside purerl. It is a benchmark, not a library: purerl's own
implementations are what the tests check for correctness.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from purerl.core.nets import orthogonal


class MLP(nn.Module):
    """Hidden layers with orthogonal init (gain sqrt 2), then a head with gain ``head_gain``; each
    observation is flattened first, as purerl's MLP torso does.

    The initialiser is flax's, run one matrix at a time under ``vmap``
    (``purerl.core.nets.orthogonal``: the same values). PPO's vmapped ``train`` initialises
    actor and critic inside the program, and two batched QR factorisations running at once can
    deadlock XLA:CPU's thread pool on two cores (why purerl's networks use it).
    """

    hidden: tuple[int, ...]
    outputs: int
    activation: str
    head_gain: float

    @nn.compact
    def __call__(self, x):
        act = {"tanh": nn.tanh, "relu": nn.relu}[self.activation]
        x = x.reshape(x.shape[0], -1)  # [B, *obs_shape]: MinAtar's grids are flattened
        for width in self.hidden:
            x = act(nn.Dense(width, kernel_init=orthogonal(np.sqrt(2)))(x))
        return nn.Dense(self.outputs, kernel_init=orthogonal(self.head_gain))(x)


def gymnax_env(env_id: str):
    import gymnax

    env, params = gymnax.make(env_id)
    return env, params, env.action_space(params).n


class PPOStep(NamedTuple):
    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array


def make_ppo_train(cfg: Any):
    """PPO (clipped surrogate, clipped value loss, GAE, annealed Adam) for ``cfg`` (a
    ``purerl.algos.ppo.PPOConfig``), on ``cfg.num_envs`` environments, one seed per call."""
    env, env_params, num_actions = gymnax_env(cfg.env)
    actor = MLP(cfg.hidden_sizes, num_actions, cfg.activation, 0.01)
    critic = MLP(cfg.hidden_sizes, 1, cfg.activation, 1.0)
    num_updates = cfg.total_timesteps // (cfg.num_envs * cfg.rollout_len)
    steps_per_update = cfg.num_epochs * cfg.num_minibatches
    batch = cfg.num_envs * cfg.rollout_len

    def schedule(count):
        return cfg.lr * (1.0 - (count // steps_per_update) / num_updates)

    tx = optax.chain(
        optax.clip_by_global_norm(cfg.max_grad_norm),
        optax.adam(schedule if cfg.anneal_lr else cfg.lr, eps=1e-5),
    )

    def train(key):
        key, actor_key, critic_key, reset_key = jax.random.split(key, 4)
        obs = jnp.zeros((1, *env.observation_space(env_params).shape))
        params = {"actor": actor.init(actor_key, obs), "critic": critic.init(critic_key, obs)}
        opt_state = tx.init(params)
        obs, env_state = jax.vmap(env.reset, (0, None))(
            jax.random.split(reset_key, cfg.num_envs), env_params
        )

        def env_step(carry, step_key):
            params, env_state, obs = carry
            act_key, env_key = jax.random.split(step_key)
            logits = actor.apply(params["actor"], obs)
            value = critic.apply(params["critic"], obs)[:, 0]
            action = jax.random.categorical(act_key, logits)
            log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
            next_obs, env_state, reward, terminated, truncated, _ = jax.vmap(
                env.step, (0, 0, 0, None)
            )(jax.random.split(env_key, cfg.num_envs), env_state, action, env_params)
            done = jnp.logical_or(terminated, truncated)
            step = PPOStep(obs, action, log_prob, value, reward, done)
            return (params, env_state, next_obs), step

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
            logits = actor.apply(params["actor"], mb.obs)
            value = critic.apply(params["critic"], mb.obs)[:, 0]
            log_probs = jax.nn.log_softmax(logits)
            log_prob = jnp.take_along_axis(log_probs, mb.action[:, None], 1)[:, 0]
            clipped = mb.value + jnp.clip(value - mb.value, -cfg.clip_eps, cfg.clip_eps)
            value_loss = (
                0.5 * jnp.maximum((value - mb.target) ** 2, (clipped - mb.target) ** 2).mean()
            )
            ratio = jnp.exp(log_prob - mb.log_prob)
            adv = (mb.advantage - mb.advantage.mean()) / (mb.advantage.std() + 1e-8)
            surrogate = jnp.minimum(
                ratio * adv, jnp.clip(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * adv
            )
            entropy = -(jnp.exp(log_probs) * log_probs).sum(-1).mean()
            return -surrogate.mean() + cfg.vf_coef * value_loss - cfg.ent_coef * entropy

        class Minibatch(NamedTuple):
            obs: jax.Array
            action: jax.Array
            log_prob: jax.Array
            value: jax.Array
            advantage: jax.Array
            target: jax.Array

        def update(carry, update_key):
            params, opt_state, env_state, obs = carry
            rollout_key, sgd_key = jax.random.split(update_key)
            (params, env_state, obs), traj = jax.lax.scan(
                env_step, (params, env_state, obs), jax.random.split(rollout_key, cfg.rollout_len)
            )
            last_value = critic.apply(params["critic"], obs)[:, 0]
            advantages, targets = gae(traj, last_value)
            data = Minibatch(traj.obs, traj.action, traj.log_prob, traj.value, advantages, targets)
            data = jax.tree.map(lambda x: x.reshape((batch,) + x.shape[2:]), data)

            def epoch(carry, epoch_key):
                order = jax.random.permutation(epoch_key, batch)
                shuffled = jax.tree.map(
                    lambda x: x[order].reshape((cfg.num_minibatches, -1) + x.shape[1:]), data
                )

                def sgd(carry, mb):
                    params, opt_state = carry
                    grads = jax.grad(loss_fn)(params, mb)
                    updates, opt_state = tx.update(grads, opt_state, params)
                    return (optax.apply_updates(params, updates), opt_state), None

                return jax.lax.scan(sgd, carry, shuffled)[0], None

            (params, opt_state), _ = jax.lax.scan(
                epoch, (params, opt_state), jax.random.split(sgd_key, cfg.num_epochs)
            )
            return (params, opt_state, env_state, obs), traj.reward.sum()

        carry = (params, opt_state, env_state, obs)
        carry, rewards = jax.lax.scan(update, carry, jax.random.split(key, num_updates))
        return carry[0], rewards

    return train


class Replay(NamedTuple):
    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    done: jax.Array


def make_dqn_train(cfg: Any):
    """DQN (replay buffer, hard target copies, linear epsilon decay, Adam with global-norm
    clipping) for ``cfg`` (a ``purerl.algos.dqn.DQNConfig`` with ``train_frequency`` 1): one
    gradient step per vector step once ``learning_starts`` steps are taken."""
    env, env_params, num_actions = gymnax_env(cfg.env)
    network = MLP(cfg.hidden_sizes, num_actions, cfg.activation, 1.0)
    num_iterations = cfg.total_timesteps // cfg.num_envs
    capacity = cfg.buffer_size // cfg.num_envs
    tx = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(cfg.lr, eps=1e-5))
    decay = cfg.exploration_fraction * cfg.total_timesteps

    def train(key):
        key, net_key, reset_key = jax.random.split(key, 3)
        obs, env_state = jax.vmap(env.reset, (0, None))(
            jax.random.split(reset_key, cfg.num_envs), env_params
        )
        params = network.init(net_key, obs)
        opt_state = tx.init(params)
        zeros = jnp.zeros((capacity, cfg.num_envs))
        buffer = Replay(
            jnp.zeros((capacity, *obs.shape)), zeros.astype(jnp.int32), zeros,
            jnp.zeros((capacity, *obs.shape)), zeros,
        )  # fmt: skip

        def loss_fn(params, target, batch):
            q = network.apply(params, batch.obs)
            q_taken = jnp.take_along_axis(q, batch.action[:, None], 1)[:, 0]
            next_q = network.apply(target, batch.next_obs).max(-1)
            y = batch.reward + cfg.gamma * (1.0 - batch.done) * next_q
            return 0.5 * ((q_taken - jax.lax.stop_gradient(y)) ** 2).mean()

        def iteration(carry, inputs):
            params, target, opt_state, env_state, obs, buffer = carry
            t, step_key = inputs
            act_key, explore_key, env_key, sample_key = jax.random.split(step_key, 4)
            steps = t * cfg.num_envs
            epsilon = cfg.eps_start + jnp.clip(steps / decay, 0, 1) * (cfg.eps_end - cfg.eps_start)
            greedy = jnp.argmax(network.apply(params, obs), -1)
            random_action = jax.random.randint(act_key, greedy.shape, 0, num_actions)
            explore = jax.random.uniform(explore_key, greedy.shape) < epsilon
            action = jnp.where(explore, random_action, greedy)
            next_obs, env_state, reward, terminated, truncated, info = jax.vmap(
                env.step, (0, 0, 0, None)
            )(jax.random.split(env_key, cfg.num_envs), env_state, action, env_params)
            slot = t % capacity
            item = Replay(obs, action, reward, info["final_observation"], terminated)
            buffer = jax.tree.map(lambda b, x: b.at[slot].set(x), buffer, item)
            size = jnp.minimum(t + 1, capacity)
            rows = jax.random.randint(sample_key, (cfg.batch_size,), 0, size)
            cols = jax.random.randint(jax.random.fold_in(sample_key, 1), (cfg.batch_size,), 0,
                                      cfg.num_envs)  # fmt: skip
            batch = jax.tree.map(lambda b: b[rows, cols], buffer)
            learn = steps + cfg.num_envs > cfg.learning_starts

            def gradient_step(params, opt_state):
                grads = jax.grad(loss_fn)(params, target, batch)
                updates, opt_state = tx.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), opt_state

            params, opt_state = jax.lax.cond(
                learn, gradient_step, lambda p, o: (p, o), params, opt_state
            )
            period = cfg.target_update_period
            copy = learn & ((steps + cfg.num_envs) // period > steps // period)
            target = jax.tree.map(lambda p, q: jnp.where(copy, p, q), params, target)
            return (params, target, opt_state, env_state, next_obs, buffer), reward.sum()

        carry = (params, params, opt_state, env_state, obs, buffer)
        inputs = (jnp.arange(num_iterations), jax.random.split(key, num_iterations))
        carry, rewards = jax.lax.scan(iteration, carry, inputs)
        return carry[0], rewards

    return train
