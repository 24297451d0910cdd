"""Minimal single-closure SAC on a gymnax environment with continuous actions: the speed bar.

``make_sac_train(cfg)`` returns a pure ``train(key)`` that runs the whole budget as one program,
in the style of ``benchmarks/reference.py`` (PureJaxRL's), written from Haarnoja et al. 2018
("Soft Actor-Critic Algorithms and Applications": algorithm 1, eqs. 5-7 and 18, appendix C).
At the configuration it is given (a ``purerl.algos.sac.SACConfig``) it does the work purerl's SAC
does: ``num_envs`` environments under ``vmap``; uniformly random actions for the first
``learning_starts`` environment steps, then actions sampled from a tanh-squashed Gaussian policy
(MLP torso, mean and log-std heads, the log std tanh-rescaled into [-5, 2]); a replay ring of
``buffer_size`` transitions kept per environment; from then on ``gradient_steps`` gradient steps
per vector step, each on ``batch_size`` transitions drawn uniformly with replacement: twin Q
critics (MLPs on the concatenated observation and action) regressed on the soft clipped
double-Q target, bootstrapped from the final observation when an episode is truncated; the
policy (and, with ``autotune``, the temperature towards an entropy of ``-action_dim``) on the
same minibatch, every ``policy_frequency`` gradient steps ``policy_frequency`` times (CleanRL's
delayed update); Polyak-averaged target critics every gradient step. Adam throughout: the
policy at ``policy_lr``, the critics and the temperature at ``q_lr``; flax's default init.

What it leaves out, being the least work the algorithm needs: episode statistics, metrics beyond
the summed reward, masks over valid steps, chunking into updates. It shares no code with purerl,
so ``benchmarks/tests/test_throughput.py`` checks that its losses equal those of purerl's SAC on
the same parameters and minibatch. It is a benchmark, not a library.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class Actor(nn.Module):
    """Mean and log standard deviation ``[N, A]`` of the pre-squash Gaussian."""

    hidden: tuple[int, ...]
    action_dim: int
    activation: str

    @nn.compact
    def __call__(self, obs):
        act = {"tanh": nn.tanh, "relu": nn.relu}[self.activation]
        x = obs.reshape(obs.shape[0], -1)
        for width in self.hidden:
            x = act(nn.Dense(width)(x))
        mean = nn.Dense(self.action_dim)(x)
        log_std = jnp.tanh(nn.Dense(self.action_dim)(x))
        return mean, LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1.0)


class Critic(nn.Module):
    """``Q(s, a)`` ``[N]``; two of them are one set of parameters with a leading axis of 2."""

    hidden: tuple[int, ...]
    activation: str

    @nn.compact
    def __call__(self, obs, action):
        act = {"tanh": nn.tanh, "relu": nn.relu}[self.activation]
        x = jnp.concatenate([obs.reshape(obs.shape[0], -1), action], axis=-1)
        for width in self.hidden:
            x = act(nn.Dense(width)(x))
        return nn.Dense(1)(x)[:, 0]


class Transition(NamedTuple):
    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    next_obs: jax.Array


class Params(NamedTuple):
    actor: Any
    critic: Any
    """Twin critics: leaves ``[2, ...]``."""
    log_alpha: jax.Array


class Nets(NamedTuple):
    """The networks and the action bounds' middle and half-width ``[A]``."""

    actor: Actor
    critic: Critic
    center: np.ndarray
    half_width: np.ndarray

    def sample(self, actor_params, obs, key):
        """A reparameterised squashed action ``[N, A]`` and its log-density ``[N]``:
        ``a = c + h tanh(u)``, ``log pi(a) = log N(u) - sum log(h (1 - tanh(u)^2))``."""
        mean, log_std = self.actor.apply(actor_params, obs)
        u = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
        gaussian = (
            -0.5 * ((u - mean) / jnp.exp(log_std)) ** 2 - log_std - 0.5 * math.log(2 * math.pi)
        )
        # log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), which stays finite for large |u|.
        log_det = 2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u)) + jnp.log(self.half_width)
        return self.center + self.half_width * jnp.tanh(u), (gaussian - log_det).sum(-1)

    def q(self, critic_params, obs, action):
        """Both critics' values ``[2, N]``."""
        return jax.vmap(self.critic.apply, (0, None, None))(critic_params, obs, action)


def critic_loss(critic_params, nets: Nets, batch: Transition, targets):
    """Sum over the twin critics of the mean squared error to the (stopped) targets (eq. 5)."""
    return ((nets.q(critic_params, batch.obs, batch.action) - targets) ** 2).mean(1).sum()


def soft_targets(params: Params, target_critic, nets: Nets, batch: Transition, alpha, gamma, key):
    """``r + gamma (1 - terminated) (min_i Q'_i(s', a') - alpha log pi(a'|s'))``, ``a' ~ pi``."""
    next_action, next_log_prob = nets.sample(params.actor, batch.next_obs, key)
    next_q = nets.q(target_critic, batch.next_obs, next_action).min(0)
    soft_value = next_q - alpha * next_log_prob
    return batch.reward + gamma * (1.0 - batch.terminated) * soft_value


def actor_loss(actor_params, critic_params, nets: Nets, obs, alpha, key):
    """``E[alpha log pi(a|s) - min_i Q_i(s, a)]`` (eq. 7) and the log-probabilities ``[N]``."""
    action, log_prob = nets.sample(actor_params, obs, key)
    return (alpha * log_prob - nets.q(critic_params, obs, action).min(0)).mean(), log_prob


def alpha_loss(log_alpha, log_prob, target_entropy):
    """``-alpha E[log pi + target_entropy]`` (eq. 18, in CleanRL's form)."""
    return -jnp.exp(log_alpha) * (log_prob + target_entropy).mean()


def make_nets(cfg: Any, action_space) -> Nets:
    low, high = np.asarray(action_space.low, np.float32), np.asarray(action_space.high, np.float32)
    action_dim = int(np.prod(action_space.shape))
    return Nets(
        Actor(cfg.hidden_sizes, action_dim, cfg.activation),
        Critic(cfg.hidden_sizes, cfg.activation),
        (high + low) / 2,
        (high - low) / 2,
    )


def make_sac_train(cfg: Any):
    """SAC for ``cfg`` on the gymnax environment ``cfg.env`` (see the module docstring);
    ``train(key)`` returns the final parameters and the summed reward of each vector step."""
    import gymnax

    env, env_params = gymnax.make(cfg.env)
    space = env.action_space(env_params)
    nets = make_nets(cfg, space)
    num_iterations = cfg.num_updates * cfg.rollout_len
    warmup = cfg.learning_starts // cfg.num_envs
    capacity = cfg.buffer_size // cfg.num_envs
    target_entropy = -float(np.prod(space.shape))
    actor_tx = optax.adam(cfg.policy_lr)
    critic_tx = alpha_tx = optax.adam(cfg.q_lr)

    def policy_step(carry, key):
        params, opt_states, batch = carry
        alpha = jnp.exp(params.log_alpha)
        grads, log_prob = jax.grad(actor_loss, has_aux=True)(
            params.actor, params.critic, nets, batch.obs, alpha, key
        )
        updates, actor_opt = actor_tx.update(grads, opt_states[0])
        params = params._replace(actor=optax.apply_updates(params.actor, updates))
        if cfg.autotune:
            grad = jax.grad(alpha_loss)(params.log_alpha, log_prob, target_entropy)
            updates, alpha_opt = alpha_tx.update(grad, opt_states[2])
            params = params._replace(log_alpha=optax.apply_updates(params.log_alpha, updates))
            opt_states = (actor_opt, opt_states[1], alpha_opt)
        else:
            opt_states = (actor_opt, *opt_states[1:])
        return (params, opt_states, batch), None

    def gradient_step(buffer, size, carry, inputs):
        params, target, opt_states = carry
        index, key = inputs
        sample_key, target_key, policy_key = jax.random.split(key, 3)
        rows = jax.random.randint(sample_key, (cfg.batch_size,), 0, size)
        cols = jax.random.randint(jax.random.fold_in(sample_key, 1), (cfg.batch_size,), 0,
                                  cfg.num_envs)  # fmt: skip
        batch = jax.tree.map(lambda b: b[rows, cols], buffer)
        alpha = jnp.exp(params.log_alpha)
        targets = soft_targets(params, target, nets, batch, alpha, cfg.gamma, target_key)
        grads = jax.grad(critic_loss)(params.critic, nets, batch, jax.lax.stop_gradient(targets))
        updates, critic_opt = critic_tx.update(grads, opt_states[1])
        params = params._replace(critic=optax.apply_updates(params.critic, updates))
        opt_states = (opt_states[0], critic_opt, opt_states[2])
        keys = jax.random.split(policy_key, cfg.policy_frequency)

        def policy_steps(params, opt_states):
            (params, opt_states, _), _ = jax.lax.scan(
                policy_step, (params, opt_states, batch), keys
            )
            return params, opt_states

        if cfg.policy_frequency == 1:
            params, opt_states = policy_steps(params, opt_states)
        else:
            params, opt_states = jax.lax.cond(
                index % cfg.policy_frequency == 0,
                policy_steps,
                lambda p, o: (p, o),
                params,
                opt_states,
            )
        target = optax.incremental_update(params.critic, target, cfg.tau)
        return (params, target, opt_states), None

    def iteration(carry, inputs):
        params, target, opt_states, env_state, obs, buffer = carry
        t, key = inputs
        act_key, random_key, env_key, learn_key = jax.random.split(key, 4)
        policy_action, _ = nets.sample(params.actor, obs, act_key)
        random_action = jax.random.uniform(
            random_key, policy_action.shape, minval=space.low, maxval=space.high
        )
        action = jnp.where(t < warmup, random_action, policy_action)
        next_obs, env_state, reward, terminated, _, info = jax.vmap(env.step, (0, 0, 0, None))(
            jax.random.split(env_key, cfg.num_envs), env_state, action, env_params
        )
        item = Transition(obs, action, reward, terminated, info["final_observation"])
        buffer = jax.tree.map(lambda b, x: b.at[t % capacity].set(x), buffer, item)
        size = jnp.minimum(t + 1, capacity)

        def learn(params, target, opt_states):
            first = (t - warmup) * cfg.gradient_steps
            inputs = (first + jnp.arange(cfg.gradient_steps), jax.random.split(learn_key,
                      cfg.gradient_steps))  # fmt: skip
            step = functools.partial(gradient_step, buffer, size)
            return jax.lax.scan(step, (params, target, opt_states), inputs)[0]

        params, target, opt_states = jax.lax.cond(
            t >= warmup, learn, lambda *x: x, params, target, opt_states
        )
        return (params, target, opt_states, env_state, next_obs, buffer), reward.sum()

    def train(key):
        actor_key, critic_key, reset_key, run_key = jax.random.split(key, 4)
        obs, env_state = jax.vmap(env.reset, (0, None))(
            jax.random.split(reset_key, cfg.num_envs), env_params
        )
        action = jnp.zeros((cfg.num_envs, *space.shape))
        critic_params = jax.vmap(nets.critic.init, (0, None, None))(
            jax.random.split(critic_key), obs, action
        )
        params = Params(
            nets.actor.init(actor_key, obs), critic_params, jnp.log(jnp.float32(cfg.alpha))
        )
        opt_states = tuple(
            tx.init(p) for tx, p in zip((actor_tx, critic_tx, alpha_tx), params, strict=True)
        )
        item = Transition(obs, action, jnp.zeros(cfg.num_envs), jnp.zeros(cfg.num_envs, bool), obs)
        buffer = jax.tree.map(lambda x: jnp.zeros((capacity, *x.shape), x.dtype), item)
        carry = (params, params.critic, opt_states, env_state, obs, buffer)
        inputs = (jnp.arange(num_iterations), jax.random.split(run_key, num_iterations))
        carry, rewards = jax.lax.scan(iteration, carry, inputs)
        return carry[0], rewards

    return train
