"""Public implementations benchmarked beside purerl in the same process (optional).

rejax (pip install rejax) is the pure-JAX peer. Version 0.1.3 expects gymnax's pre-1.0 step,
which returned ``(obs, state, reward, done, info)``; ``LegacyStep`` restores that signature and
nothing else. Its in-loop evaluation is replaced by a no-op so only training is timed.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from purerl.algos.dqn import DQNConfig
from purerl.algos.ppo import PPOConfig


def rejax_available() -> bool:
    try:
        import rejax  # noqa: F401
    except ImportError:
        return False
    return True


def legacy_gymnax(env_id: str):
    """A gymnax environment whose ``step`` has the pre-1.0 signature rejax 0.1.3 expects."""
    import gymnax

    base_env, params = gymnax.make(env_id)

    class LegacyStep(type(base_env)):
        def step(self, key, state, action, params=None):
            obs, state, reward, terminated, truncated, info = super().step(
                key, state, action, params
            )
            return obs, state, reward, jnp.logical_or(terminated, truncated), info

    return LegacyStep(), params


def without_evaluation(algo):
    return algo.replace(eval_callback=lambda algo, ts, key: jnp.zeros(()))


def make_rejax_ppo(cfg: PPOConfig) -> Callable[[jax.Array], object]:
    """rejax PPO with the same hyperparameters; returns ``train(key)``, not yet jitted."""
    import rejax

    env, params = legacy_gymnax(cfg.env)
    algo = rejax.PPO.create(
        env=env,
        env_params=params,
        num_envs=cfg.num_envs,
        num_steps=cfg.rollout_len,
        num_epochs=cfg.num_epochs,
        num_minibatches=cfg.num_minibatches,
        learning_rate=cfg.lr,
        max_grad_norm=cfg.max_grad_norm,
        total_timesteps=cfg.num_updates * cfg.batch_size,
        eval_freq=cfg.num_updates * cfg.batch_size,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clip_eps=cfg.clip_eps,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        skip_initial_evaluation=True,
        agent_kwargs={"activation": cfg.activation, "hidden_layer_sizes": cfg.hidden_sizes},
    )
    return without_evaluation(algo).train


REJAX_DQN_HIDDEN = (64, 64)
"""rejax 0.1.3's DQN fixes its hidden layers; the benchmark gives purerl the same ones."""


def make_rejax_dqn(cfg: DQNConfig) -> Callable[[jax.Array], object]:
    """rejax DQN with the same hyperparameters; returns ``train(key)``, not yet jitted.

    rejax steps every environment once per iteration and takes one gradient step, so
    ``cfg.train_frequency`` must be 1. Its ``max_grad_norm`` clips element-wise (optax.clip),
    ours by global norm; neither binds at the benchmark's settings. ``polyak=0`` is its hard
    target copy.
    """
    import rejax

    if cfg.train_frequency != 1 or cfg.hidden_sizes != REJAX_DQN_HIDDEN:
        raise ValueError("the rejax DQN peer needs train_frequency 1 and hidden sizes 64, 64")
    env, params = legacy_gymnax(cfg.env)
    steps = cfg.num_updates * cfg.env_steps_per_update
    algo = rejax.DQN.create(
        env=env,
        env_params=params,
        num_envs=cfg.num_envs,
        buffer_size=cfg.buffer_size,
        fill_buffer=cfg.learning_starts,
        batch_size=cfg.batch_size,
        learning_rate=cfg.lr,
        max_grad_norm=cfg.max_grad_norm,
        total_timesteps=steps,
        eval_freq=steps,
        gamma=cfg.gamma,
        eps_start=cfg.eps_start,
        eps_end=cfg.eps_end,
        exploration_fraction=cfg.exploration_fraction,
        target_update_freq=cfg.target_update_period,
        polyak=1.0 - cfg.tau,
        ddqn=cfg.double_q,
        skip_initial_evaluation=True,
        agent_kwargs={"activation": cfg.activation},
    )
    return without_evaluation(algo).train
