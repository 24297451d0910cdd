"""Public implementations benchmarked beside purerl in the same process (optional).

rejax (pip install rejax) is the pure-JAX peer. Version 0.1.3 expects gymnax's pre-1.0 step,
which returned ``(obs, state, reward, done, info)``; ``LegacyStep`` restores that signature and
nothing else. Its in-loop evaluation is replaced by a no-op so only training is timed.

XLand-MiniGrid's recurrent PPO (``xminigrid_ppo_runner``) is the suite's own baseline: the
``training/`` folder of its repository, which the pip package does not ship.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

from purerl.algos.dqn import DQNConfig
from purerl.algos.ppo import PPOConfig
from purerl.algos.sac import SACConfig


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


def make_rejax_sac(cfg: SACConfig) -> Callable[[jax.Array], object]:
    """rejax SAC at the same configuration; returns ``train(key)``, not yet jitted.

    Matched: environments, buffer size, steps before learning (rejax's ``fill_buffer``: both
    learn from the same vector step on), batch size, gamma, gradient steps per vector step
    (rejax's ``num_epochs``), hidden sizes, activation, twin critics, entropy tuning from
    alpha 1 towards ``-action_dim``, Adam. rejax has one learning rate for the policy, the
    critics and the temperature, so ``policy_lr`` must equal ``q_lr`` (the benchmark sets it).
    What cannot be matched, none of it adding work to purerl's side:

    - rejax moves the target critics once per vector step; it gets the rate of purerl's
      ``gradient_steps`` averages with ``tau`` (``polyak = (1 - tau) ** gradient_steps``).
    - It updates the policy every gradient step (``policy_frequency`` must be 1), before the
      critics rather than after them.
    - It samples each minibatch without replacement, weighted over the whole buffer
      (``jax.random.choice(..., replace=False, p=...)``: a Gumbel top-k over ``buffer_size``
      entries per gradient step), where purerl draws uniformly with replacement.
    - It acts with the policy from the first step (no uniformly random actions before
      learning); its critic loss is half the squared error (``optax.l2_loss``); it clips the log
      standard deviation to [-10, 2] where purerl rescales it into [-5, 2] with tanh.
    - Through ``legacy_gymnax`` it sees one ``done``: a truncated episode (every Pendulum-v1
      episode ends so) is not bootstrapped from its final observation.
    """
    import rejax

    if cfg.policy_frequency != 1 or cfg.policy_lr != cfg.q_lr:
        raise ValueError("the rejax SAC peer needs policy_frequency 1 and policy_lr == q_lr")
    if not cfg.autotune or cfg.alpha != 1.0:
        raise ValueError("the rejax SAC peer tunes the entropy coefficient from alpha 1")
    env, params = legacy_gymnax(cfg.env)
    steps = cfg.num_updates * cfg.env_steps_per_update
    algo = rejax.SAC.create(
        env=env,
        env_params=params,
        num_envs=cfg.num_envs,
        buffer_size=cfg.buffer_size,
        fill_buffer=cfg.learning_starts,
        batch_size=cfg.batch_size,
        learning_rate=cfg.q_lr,
        total_timesteps=steps,
        eval_freq=steps,
        gamma=cfg.gamma,
        polyak=(1.0 - cfg.tau) ** cfg.gradient_steps,
        target_update_freq=1,
        num_epochs=cfg.gradient_steps,
        skip_initial_evaluation=True,
        hidden_layer_sizes=cfg.hidden_sizes,
        agent_kwargs={"activation": cfg.activation},
    )
    return without_evaluation(algo).train


XMINIGRID_PPO = {
    "num_epochs": 1,
    "num_minibatches": 16,
    "lr": 1e-3,
    "anneal_lr": True,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_eps": 0.2,
    "clip_value_loss": True,
    "ent_coef": 0.01,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
    "network": "gru",
    "bptt_len": 0,
}
"""The PPO settings of XLand-MiniGrid's ``training/train_single_task.py`` (its ``TrainConfig``
defaults) in purerl's fields; the benchmark applies them to both sides. Its defaults for the
rest: 8192 envs x 16 steps and a GRU of 1024."""

XMINIGRID_HEAD = 256
"""Hidden width of the baseline's actor and critic heads (its ``head_hidden_dim``)."""


def xminigrid_ppo_config(cfg: PPOConfig) -> PPOConfig:
    """``cfg`` with the baseline's PPO settings, and an embedding as wide as the GRU (its conv
    encoder gives the GRU 1,041 inputs on a 7x7 view; purerl's MLP embedding ``rnn_size``)."""
    if not cfg.env.startswith("xminigrid/"):
        raise ValueError("the xminigrid peer trains xminigrid/<Name> environments")
    return dataclasses.replace(cfg, **XMINIGRID_PPO, hidden_sizes=(cfg.rnn_size,))


def xminigrid_ppo_runner(cfg: PPOConfig, baseline: Path) -> tuple[Callable[[int], float], float]:
    """XLand-MiniGrid's single-task recurrent PPO at ``cfg``'s configuration: ``(run, compile_s)``
    as ``benchmarks.throughput`` times its runners, ``run(call)`` training the whole budget once
    on a fresh key.

    ``baseline`` is the ``training/`` folder of a checkout of github.com/corl-team/xland-minigrid
    (it imports ``pyrallis``, ``wandb`` and ``distrax``: pip install them beside it); measured
    with the version whose ``train_single_task.py`` is at commit 1f5bc0c (observations without
    the direction wrapper), its ``nn.py`` at 27c5c72 and ``utils.py`` at 43c66fb, where current
    JAX needs one change: ``RolloutStats``' array defaults as ``default_factory``. Its program
    is built and compiled as its script does (``make_states``, ``make_train`` under ``jax.pmap``
    on one device, then ``lower(...).compile()``). Matched: environment, envs, steps per update,
    epochs, minibatches of whole env sequences, learning rate annealed, the PPO coefficients
    (``XMINIGRID_PPO``) and the GRU's width. What differs: its encoder (three 2x2 convolutions,
    a previous-action embedding and the previous reward) where purerl embeds the flattened view
    with one layer as wide as the GRU; its 256-unit actor and critic heads where purerl's are
    linear (the GRU's 6.3M multiply-adds a step dominate both); and its per-update evaluation,
    cut here to one episode (its ``eval_episodes``, 80 by default), which steps one environment
    inside the timed program.
    """
    if not (baseline / "train_single_task.py").is_file():
        raise FileNotFoundError(
            f"{baseline}: no train_single_task.py there; give the training/ folder of a "
            "checkout of github.com/corl-team/xland-minigrid"
        )
    sys.path.insert(0, str(baseline))
    import train_single_task as xm  # noqa: PLC0415  (the baseline's own module)
    from flax.jax_utils import replicate

    config = xm.TrainConfig(
        env_id=cfg.env.removeprefix("xminigrid/"),
        rnn_hidden_dim=cfg.rnn_size,
        head_hidden_dim=XMINIGRID_HEAD,
        num_envs=cfg.num_envs,
        num_steps=cfg.rollout_len,
        update_epochs=cfg.num_epochs,
        num_minibatches=cfg.num_minibatches,
        total_timesteps=cfg.num_updates * cfg.batch_size,
        lr=cfg.lr,
        clip_eps=cfg.clip_eps,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        max_grad_norm=cfg.max_grad_norm,
        eval_episodes=1,
    )
    start = time.perf_counter()
    _, env, env_params, init_hstate, train_state = xm.make_states(config)
    devices = jax.local_devices()[:1]
    train_state = replicate(train_state, devices)
    init_hstate = replicate(init_hstate, devices)
    # Raw uint32 keys, as its script makes them (distrax samples with them).
    keys = jax.random.split(jax.random.PRNGKey(0), 1)
    train = xm.make_train(env, env_params, config)
    compiled = train.lower(keys, train_state, init_hstate).compile()
    compile_s = time.perf_counter() - start

    def run(call: int) -> float:
        fresh = jax.random.split(jax.random.PRNGKey(call + 1), 1)
        begin = time.perf_counter()
        jax.block_until_ready(compiled(fresh, train_state, init_hstate))
        return time.perf_counter() - begin

    return run, compile_s
