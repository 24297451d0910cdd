"""Public implementations benchmarked beside purerl in the same process (optional).

rejax (pip install rejax) is the pure-JAX peer. Version 0.1.3 expects gymnax's pre-1.0 step,
which returned ``(obs, state, reward, done, info)``; ``LegacyStep`` restores that signature and
nothing else. Its in-loop evaluation is replaced by a no-op so only training is timed.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from purerl.algos.ppo import PPOConfig


def rejax_available() -> bool:
    try:
        import rejax  # noqa: F401
    except ImportError:
        return False
    return True


def make_rejax_ppo(cfg: PPOConfig) -> Callable[[jax.Array], object]:
    """rejax PPO with the same hyperparameters; returns ``train(key)``, not yet jitted."""
    import gymnax
    import rejax

    base_env, params = gymnax.make(cfg.env)

    class LegacyStep(type(base_env)):
        def step(self, key, state, action, params=None):
            obs, state, reward, terminated, truncated, info = super().step(
                key, state, action, params
            )
            return obs, state, reward, jnp.logical_or(terminated, truncated), info

    env = LegacyStep()
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
    algo = algo.replace(eval_callback=lambda algo, ts, key: jnp.zeros(()))
    return algo.train
