"""SAC presets: ``purerl train sac --env X`` starts from ``PRESETS[X]``.

Flags given on the command line override a preset field by field.
"""

from __future__ import annotations

from purerl.algos.sac import SACConfig
from purerl.envs.mujoco import MUJOCO_IDS

MUJOCO_SAC_TASKS = ("HalfCheetah-v4", "Hopper-v4", "Walker2d-v4", "Ant-v4")
"""The tasks of CleanRL's published sac_continuous_action results."""


def mujoco_sac(env_id: str) -> SACConfig:
    """SAC on a MuJoCo task as CleanRL's ``sac_continuous_action.py`` trains it for its
    published MuJoCo v4 results (CleanRL docs, "sac_continuous_action.py"; its ``Args``
    defaults): one environment, 1M steps, buffer 1e6, batch 256, gamma 0.99, tau 0.005,
    5e3 random steps before learning, one gradient step per step, policy lr 3e-4 and q lr 1e-3
    (Adam), policy and temperature updated twice every second step, targets every step,
    automatic entropy tuning from alpha 1 towards -action_dim, 256x256 relu MLPs."""
    return SACConfig(
        env=env_id,
        num_envs=1,
        rollout_len=1000,
        gradient_steps=1,
        buffer_size=1_000_000,
        batch_size=256,
        learning_starts=5_000,
        gamma=0.99,
        tau=0.005,
        policy_lr=3e-4,
        q_lr=1e-3,
        policy_frequency=2,
        alpha=1.0,
        autotune=True,
        hidden_sizes=(256, 256),
        activation="relu",
        total_timesteps=1_000_000,
    )


def brax_inverted_double_pendulum() -> SACConfig:
    """SAC on Brax's inverted double pendulum, sized to learn on a CPU in a few minutes.

    Brax publishes SAC settings for hopper and walker2d only (the ``train_fn`` table of its
    training notebook, github.com/google/brax ``notebooks/training.ipynb``, run by
    ``brax.training.agents.sac.train``); this task it trains with PPO. The hopper row: 128 envs,
    64 gradient steps of 512 per vector step (0.5 per transition), Adam 6e-4 for actor and
    critics (the trainer's 3e-4 for the temperature), discount 0.997, tau 0.005,
    ``reward_scaling`` 30, observation normalisation, a 2^20 replay and 8,192 steps before
    learning, 6.55M steps on an accelerator; the trainer updates policy and temperature at every
    gradient step, with 256x256 relu MLPs and a target entropy of -action_dim / 2.

    What carries over: the many-env style, policy and temperature at every gradient step
    (``policy_frequency=1``), tau 0.005, relu MLPs, a discount above 0.99 (0.995 here; on the
    tuning seeds 0.99 ended lower and Brax's 0.997 within their spread: BENCHMARKS.md). What
    differs, for a 2-core CPU: 16 envs and one gradient step of 128 per transition (16 per
    vector step), 64x64 MLPs, purerl's learning rates (3e-4 actor, 1e-3 critics) and target
    entropy (-action_dim), 4e3 uniformly random steps first, 200k steps. No reward scale (no such
    field; rewards are about 9.4 a step already) and no observation normalisation:
    ``normalize_obs`` standardises observations before they are stored, so the replay keeps
    them under stale statistics (320 and 524 on seeds 100-101). Chosen on seeds 100-103 (9,307
    on average); about 9,360 is the most a 1,000-step episode pays.
    """
    return SACConfig(
        env="brax/inverted_double_pendulum",
        num_envs=16,
        rollout_len=125,
        gradient_steps=16,
        buffer_size=200_000,
        batch_size=128,
        learning_starts=4_000,
        gamma=0.995,
        policy_frequency=1,
        hidden_sizes=(64, 64),
        total_timesteps=200_000,
    )


PRESETS: dict[str, SACConfig] = {
    # The many-env JAX style, sized to learn on a CPU in about half a minute: 16 envs, 4
    # gradient steps of 256 per vector step (each transition replayed about 4 times), 64x64
    # nets, 2e3 random steps, 6e4 steps (300 episodes; the reported return is the mean of the
    # last 100). Chosen on seeds 100-101 (-157); the learning test trains seeds 0-1.
    "Pendulum-v1": SACConfig(
        env="Pendulum-v1",
        num_envs=16,
        rollout_len=125,
        gradient_steps=4,
        buffer_size=100_000,
        batch_size=256,
        learning_starts=2_000,
        policy_frequency=1,
        hidden_sizes=(64, 64),
        total_timesteps=60_000,
    ),
    "brax/inverted_double_pendulum": brax_inverted_double_pendulum(),
}
PRESETS.update({env_id: mujoco_sac(env_id) for env_id in MUJOCO_IDS if env_id in MUJOCO_SAC_TASKS})
