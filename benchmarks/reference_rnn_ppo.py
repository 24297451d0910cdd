"""Minimal single-closure recurrent PPO (a GRU policy) in PureJaxRL's style: the speed bar.

``make_train(cfg)`` returns a pure ``train(key)`` that runs the whole budget as one program, as
``benchmarks/reference.py`` does for the feed-forward PPO. At the configuration it is given (a
``purerl.algos.ppo.PPOConfig`` with ``network="gru"``) it does the work purerl's recurrent PPO
does: ``num_envs`` gymnax environments under ``vmap``; one network whose MLP of
``hidden_sizes`` (orthogonal init, gain sqrt 2) feeds a GRU cell of ``rnn_size`` (flax's, its
recurrent kernel orthogonal), run along time by ``nn.scan`` and reset to zeros where an episode
starts, then a policy head (orthogonal 0.01) and a value head (orthogonal 1.0) on its output;
values recorded while acting; truncated episodes bootstrapped from their final observation,
read from the cell's state after the step; GAE; then ``num_epochs`` passes over the rollout cut
into env sequences of ``bptt_len`` steps (0: the whole rollout), shuffled into
``num_minibatches`` minibatches of whole sequences, each replayed from the cell's state recorded
at its first step; clipped surrogate, clipped value loss, advantages standardised per minibatch,
entropy bonus; Adam with global-norm clipping and the rate annealed per update. With
``normalize_reward`` (the CartPole-NoVelocity-v1 preset's), rewards are divided by the running
standard deviation of each env's discounted return and clipped to [-10, 10], as purerl's
``ScaleReward`` does.

What it leaves out, being the least work the algorithm needs: environment wrappers, episode
statistics, metrics beyond the summed reward, masks over valid steps (gymnax resets in the same
step, so every step is valid), chunking into updates. It shares no code with purerl's recurrent
networks, rollout or update, so ``benchmarks/tests/test_throughput_rnn.py`` checks that its loss
equals purerl's on the same parameters and sequences. It is a benchmark, not a library.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from purerl.core.nets import orthogonal

PARTIAL_VIEWS = {"CartPole-NoVelocity-v1": ("CartPole-v1", (0, 2))}
"""Partially observed tasks: the gymnax game underneath and the observation entries shown."""


def gymnax_env(env_id: str):
    """The gymnax environment, its params, its number of actions and a view of observations."""
    import gymnax

    game, keep = PARTIAL_VIEWS.get(env_id, (env_id, None))
    env, params = gymnax.make(game)

    def view(obs):
        return obs if keep is None else obs[..., np.asarray(keep)]

    return env, params, env.action_space(params).n, view


class ScannedGRU(nn.Module):
    """A GRU cell along the leading (time) axis: ``(hidden [N, H], (x [L, N, F], reset [L, N]))``
    to ``(hidden, outputs [L, N, H])``; the state is zeroed before each step whose ``reset`` is
    set."""

    size: int

    @nn.compact
    def __call__(self, hidden, inputs):
        scan = nn.scan(
            ResetGRUCell, variable_broadcast="params", split_rngs={"params": False}, in_axes=0
        )
        return scan(self.size)(hidden, inputs)


class ResetGRUCell(nn.Module):
    size: int

    @nn.compact
    def __call__(self, hidden, inputs):
        x, reset = inputs
        hidden = jnp.where(reset[:, None], 0.0, hidden)
        # purerl's orthogonal initialiser only so vmapped seeds initialise one QR at a time
        # (flax's values; see reference.MLP): the cell itself is flax's GRUCell.
        cell = nn.GRUCell(self.size, recurrent_kernel_init=orthogonal(1.0))
        return cell(hidden, x)


class RecurrentAgent(nn.Module):
    """Logits ``[L, N, A]`` and values ``[L, N]`` of observations ``[L, N, ...]`` from the GRU's
    state ``[N, H]``; returns the state after the last step first."""

    hidden_sizes: tuple[int, ...]
    rnn_size: int
    num_actions: int
    activation: str

    @nn.compact
    def __call__(self, hidden, obs, reset):
        act = {"tanh": nn.tanh, "relu": nn.relu}[self.activation]
        x = obs.reshape(obs.shape[:2] + (-1,))
        for width in self.hidden_sizes:
            x = act(nn.Dense(width, kernel_init=orthogonal(np.sqrt(2)))(x))
        hidden, x = ScannedGRU(self.rnn_size)(hidden, (x, reset))
        logits = nn.Dense(self.num_actions, kernel_init=orthogonal(0.01))(x)
        value = nn.Dense(1, kernel_init=orthogonal(1.0))(x)[..., 0]
        return hidden, logits, value


class Minibatch(NamedTuple):
    """Whole sequences, time-major: ``[L, S, ...]``, and ``hidden`` ``[S, H]`` at their start."""

    obs: jax.Array
    reset: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array
    hidden: jax.Array


def ppo_loss(params, network: RecurrentAgent, mb: Minibatch, clip_eps, vf_coef, ent_coef):
    """Clipped surrogate + ``vf_coef`` x clipped value loss - ``ent_coef`` x entropy."""
    _, logits, value = network.apply(params, mb.hidden, mb.obs, mb.reset)
    log_probs = jax.nn.log_softmax(logits)
    log_prob = jnp.take_along_axis(log_probs, mb.action[..., None], -1)[..., 0]
    clipped = mb.value + jnp.clip(value - mb.value, -clip_eps, clip_eps)
    value_loss = 0.5 * jnp.maximum((value - mb.target) ** 2, (clipped - mb.target) ** 2).mean()
    ratio = jnp.exp(log_prob - mb.log_prob)
    adv = (mb.advantage - mb.advantage.mean()) / (mb.advantage.std() + 1e-8)
    surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    entropy = -(jnp.exp(log_probs) * log_probs).sum(-1).mean()
    return -surrogate.mean() + vf_coef * value_loss - ent_coef * entropy


def to_sequences(x, length: int):
    """Rollout data ``[T, B, ...]`` to env sequences of ``length`` steps, time-major
    ``[L, W * B, ...]`` with ``W = T / L`` windows; sequence ``w * B + b`` is env ``b``'s
    window ``w``."""
    num_steps, num_envs = x.shape[:2]
    windows = num_steps // length
    x = x.reshape((windows, length, num_envs) + x.shape[2:]).swapaxes(0, 1)
    return x.reshape((length, windows * num_envs) + x.shape[3:])


def sequence_starts(first_hidden, hidden_after, length: int):
    """The GRU's state ``[W * B, H]`` each sequence starts from (``to_sequences``' order): the
    state before the rollout ``[B, H]`` for the first window, else the state after the step
    before the window (``hidden_after`` ``[T, B, H]``)."""
    starts = jnp.concatenate([first_hidden[None], hidden_after[length - 1 :: length][:-1]])
    return starts.reshape(-1, starts.shape[-1])


class ReturnScale(NamedTuple):
    """Each env's discounted return ``[B]`` so far and running statistics of all of them."""

    returns: jax.Array
    mean: jax.Array
    var: jax.Array
    count: jax.Array


def scale_rewards(stats: ReturnScale, reward, done, gamma: float):
    """Rewards ``[B]`` over the running standard deviation of the discounted return, clipped to
    [-10, 10]; the batch of returns is merged into the statistics first (Chan et al. 1979)."""
    returns = stats.returns * gamma + reward
    n = returns.shape[0]
    delta = returns.mean() - stats.mean
    total = stats.count + n
    m2 = stats.var * stats.count + returns.var() * n + delta**2 * stats.count * n / total
    var = m2 / total
    scaled = jnp.clip(reward / jnp.sqrt(var + 1e-8), -10.0, 10.0)
    return scaled, ReturnScale(jnp.where(done, 0.0, returns), stats.mean + delta * n / total,
                               var, total)  # fmt: skip


class Step(NamedTuple):
    obs: jax.Array
    reset: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    terminated: jax.Array
    done: jax.Array
    final_obs: jax.Array
    hidden_after: jax.Array


def make_train(cfg: Any):
    """Recurrent PPO for ``cfg`` (a ``PPOConfig`` with ``network="gru"``), one seed per call."""
    if cfg.network != "gru":
        raise ValueError(f"the recurrent reference is a GRU, not {cfg.network!r}")
    if cfg.normalize_obs:
        raise ValueError("the recurrent reference does not normalise observations")
    env, env_params, num_actions, view = gymnax_env(cfg.env)
    network = RecurrentAgent(tuple(cfg.hidden_sizes), cfg.rnn_size, num_actions, cfg.activation)
    num_envs, num_steps = cfg.num_envs, cfg.rollout_len
    length = cfg.bptt_len or num_steps
    num_sequences = num_envs * (num_steps // length)
    num_updates = cfg.total_timesteps // (num_envs * num_steps)
    steps_per_update = cfg.num_epochs * cfg.num_minibatches

    def schedule(count):
        return cfg.lr * (1.0 - (count // steps_per_update) / num_updates)

    tx = optax.chain(
        optax.clip_by_global_norm(cfg.max_grad_norm),
        optax.adam(schedule if cfg.anneal_lr else cfg.lr, eps=1e-5),
    )

    def train(key):
        key, net_key, reset_key = jax.random.split(key, 3)
        obs, env_state = jax.vmap(env.reset, (0, None))(
            jax.random.split(reset_key, num_envs), env_params
        )
        obs = view(obs)
        hidden = jnp.zeros((num_envs, cfg.rnn_size))
        reset = jnp.ones(num_envs, bool)
        zero = jnp.zeros(())
        env_state = (env_state, ReturnScale(jnp.zeros(num_envs), zero, zero + 1.0, zero + 1e-4))
        params = network.init(net_key, hidden, obs[None], reset[None])
        opt_state = tx.init(params)

        def env_step(carry, step_key):
            params, (env_state, scale), obs, hidden, reset = carry
            act_key, env_key = jax.random.split(step_key)
            hidden_after, logits, value = network.apply(params, hidden, obs[None], reset[None])
            logits, value = logits[0], value[0]
            action = jax.random.categorical(act_key, logits)
            log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
            next_obs, env_state, reward, terminated, truncated, info = jax.vmap(
                env.step, (0, 0, 0, None)
            )(jax.random.split(env_key, num_envs), env_state, action, env_params)
            done = terminated | truncated
            if cfg.normalize_reward:
                reward, scale = scale_rewards(scale, reward, done, cfg.gamma)
            final_obs = view(info["final_observation"])
            step = Step(obs, reset, action, log_prob, value, reward, terminated, done, final_obs,
                        hidden_after)  # fmt: skip
            return (params, (env_state, scale), view(next_obs), hidden_after, done), step

        def bootstrap_values(params, traj, obs, hidden, reset):
            """Values each step reached: its final observation's (from the state after the
            step) where the episode ended, else the next step's; the last from the carry."""
            flat = num_steps * num_envs
            inputs = (
                jnp.concatenate([traj.hidden_after.reshape(flat, -1), hidden]),
                jnp.concatenate([traj.final_obs.reshape((flat,) + obs.shape[1:]), obs])[None],
                jnp.concatenate([jnp.zeros(flat, bool), reset])[None],
            )
            _, _, values = network.apply(params, *inputs)
            final, last = values[0, :flat].reshape(num_steps, num_envs), values[0, flat:]
            following = jnp.concatenate([traj.value[1:], last[None]])
            return jnp.where(traj.done, final, following)

        def gae(traj, next_values):
            deltas = traj.reward + cfg.gamma * (1.0 - traj.terminated) * next_values - traj.value
            decay = cfg.gamma * cfg.gae_lambda * (1.0 - traj.done)

            def backward(advantage, inputs):
                delta, decay = inputs
                advantage = delta + decay * advantage
                return advantage, advantage

            _, advantages = jax.lax.scan(
                backward, jnp.zeros(num_envs), (deltas, decay), reverse=True
            )
            return advantages, advantages + traj.value

        def update(carry, update_key):
            params, opt_state, env_state, obs, hidden, reset = carry
            rollout_key, sgd_key = jax.random.split(update_key)
            first_hidden = hidden
            (params, env_state, obs, hidden, reset), traj = jax.lax.scan(
                env_step,
                (params, env_state, obs, hidden, reset),
                jax.random.split(rollout_key, num_steps),
            )
            advantages, targets = gae(traj, bootstrap_values(params, traj, obs, hidden, reset))
            per_step = (traj.obs, traj.reset, traj.action, traj.log_prob, traj.value, advantages)
            data = Minibatch(
                *(to_sequences(x, length) for x in (*per_step, targets)),
                sequence_starts(first_hidden, traj.hidden_after, length),
            )

            def epoch(carry, epoch_key):
                order = jax.random.permutation(epoch_key, num_sequences)
                per_mb = num_sequences // cfg.num_minibatches

                def split(x, axis):  # sequences on ``axis`` -> [M, ..., S / M, ...]
                    x = jnp.take(x, order, axis=axis)
                    x = x.reshape(
                        x.shape[:axis] + (cfg.num_minibatches, per_mb) + x.shape[axis + 1 :]
                    )
                    return jnp.moveaxis(x, axis, 0)

                shuffled = Minibatch(*(split(x, 1) for x in data[:-1]), split(data.hidden, 0))

                def sgd(carry, mb):
                    params, opt_state = carry
                    grads = jax.grad(ppo_loss)(
                        params, network, mb, cfg.clip_eps, cfg.vf_coef, cfg.ent_coef
                    )
                    updates, opt_state = tx.update(grads, opt_state, params)
                    return (optax.apply_updates(params, updates), opt_state), None

                return jax.lax.scan(sgd, carry, shuffled)[0], None

            (params, opt_state), _ = jax.lax.scan(
                epoch, (params, opt_state), jax.random.split(sgd_key, cfg.num_epochs)
            )
            return (params, opt_state, env_state, obs, hidden, reset), traj.reward.sum()

        carry = (params, opt_state, env_state, obs, hidden, reset)
        carry, rewards = jax.lax.scan(update, carry, jax.random.split(key, num_updates))
        return carry[0], rewards

    return train
