"""TD3 presets: ``purerl train td3 --env X`` starts from ``PRESETS[X]``.

Flags given on the command line override a preset field by field.
"""

from __future__ import annotations

from purerl.algos.td3 import TD3Config
from purerl.envs.mujoco import MUJOCO_IDS

MUJOCO_TD3_TASKS = ("HalfCheetah-v4", "Hopper-v4", "Walker2d-v4", "Ant-v4")
"""The tasks of CleanRL's published td3_continuous_action results."""


def mujoco_td3(env_id: str) -> TD3Config:
    """TD3 on a MuJoCo task as CleanRL's ``td3_continuous_action.py`` trains it for its
    published MuJoCo v4 results (CleanRL docs, "td3_continuous_action.py"; its ``Args``
    defaults): one environment, 1M steps, buffer 1e6, batch 256, gamma 0.99, tau 0.005,
    25e3 random steps before learning, one gradient step per step, Adam 3e-4 for actor and
    critics, exploration noise 0.1, target smoothing noise 0.2 clipped at 0.5 (all in action
    half-widths), actor and targets updated every second step, 256x256 relu MLPs."""
    return TD3Config(
        env=env_id,
        num_envs=1,
        rollout_len=1000,
        gradient_steps=1,
        buffer_size=1_000_000,
        batch_size=256,
        learning_starts=25_000,
        gamma=0.99,
        tau=0.005,
        policy_lr=3e-4,
        q_lr=3e-4,
        policy_frequency=2,
        exploration_noise=0.1,
        policy_noise=0.2,
        noise_clip=0.5,
        hidden_sizes=(256, 256),
        activation="relu",
        total_timesteps=1_000_000,
    )


def brax_inverted_double_pendulum() -> TD3Config:
    """TD3 on Brax's inverted double pendulum: the SAC preset's sizes and discount
    (``presets.sac.brax_inverted_double_pendulum``; Brax publishes no TD3) with TD3's own
    defaults, CleanRL's: Adam 3e-4 for actor and critics, exploration noise 0.1, target
    smoothing noise 0.2 clipped at 0.5, actor and targets every second gradient step. On seeds
    100-101 it learns later than SAC (about 100k steps against 50k) and ended at 9,160 and 8,979
    (a critic rate of 1e-3, as on Pendulum: 8,489 and 9,359)."""
    return TD3Config(
        env="brax/inverted_double_pendulum",
        num_envs=16,
        rollout_len=125,
        gradient_steps=16,
        buffer_size=200_000,
        batch_size=128,
        learning_starts=4_000,
        gamma=0.995,
        hidden_sizes=(64, 64),
        total_timesteps=200_000,
    )


PRESETS: dict[str, TD3Config] = {
    # The many-env JAX style on a CPU, as SAC's Pendulum preset with 8 gradient steps per
    # vector step (4 gave -232 on the tuning seeds 100-101, 8 gave -157) and a critic rate of
    # 1e-3; the actor and targets still update every second gradient step.
    "Pendulum-v1": TD3Config(
        env="Pendulum-v1",
        num_envs=16,
        rollout_len=125,
        gradient_steps=8,
        buffer_size=100_000,
        batch_size=256,
        learning_starts=2_000,
        q_lr=1e-3,
        hidden_sizes=(64, 64),
        total_timesteps=60_000,
    ),
    "brax/inverted_double_pendulum": brax_inverted_double_pendulum(),
}
PRESETS.update({env_id: mujoco_td3(env_id) for env_id in MUJOCO_IDS if env_id in MUJOCO_TD3_TASKS})
