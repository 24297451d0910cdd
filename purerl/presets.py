"""Per-environment defaults for the CLIs: ``--env X`` starts from ``PRESETS[algo][X]``.

Flags given on the command line override a preset field by field. Budgets are chosen so the
preset learns on a 2-core CPU in about a minute or less (see BENCHMARKS.md for the returns).
"""

from __future__ import annotations

from purerl.algos.dqn import DQNConfig
from purerl.algos.ppo import PPOConfig

PPO_PRESETS: dict[str, PPOConfig] = {
    # Hyperparameters of the PPO reference implementations for classic control
    # (Huang et al. 2022, "The 37 implementation details of PPO").
    "CartPole-v1": PPOConfig(env="CartPole-v1"),
    "Acrobot-v1": PPOConfig(env="Acrobot-v1", num_envs=16, total_timesteps=1_000_000),
    "Pendulum-v1": PPOConfig(
        env="Pendulum-v1",
        num_envs=16,
        rollout_len=256,
        total_timesteps=1_000_000,
        num_epochs=10,
        num_minibatches=16,
        lr=1e-3,
        gamma=0.95,
        ent_coef=0.0,
        normalize_obs=True,
    ),
    "Breakout-MinAtar": PPOConfig(
        env="Breakout-MinAtar",
        num_envs=64,
        total_timesteps=5_000_000,
        num_minibatches=8,
        lr=5e-3,
        activation="relu",
        hidden_sizes=(256, 256),
    ),
    # Snake 10x10 from its [10, 10, 3] grid: many short games per update, a relu MLP and a
    # higher learning rate learn in minutes on CPU (BENCHMARKS.md, test_snake_learning.py).
    "Snake-v0": PPOConfig(
        env="Snake-v0",
        num_envs=256,
        rollout_len=32,
        total_timesteps=3_000_000,
        lr=1e-3,
        activation="relu",
    ),
}

DQN_PRESETS: dict[str, DQNConfig] = {
    # 10 envs, one gradient step of 128 per vector step, 10k buffer and target period 500 as in
    # PureJaxRL's CartPole DQN; DQNConfig's defaults are this preset.
    "CartPole-v1": DQNConfig(env="CartPole-v1"),
    "Acrobot-v1": DQNConfig(env="Acrobot-v1", total_timesteps=500_000, loss="huber"),
}

PRESETS = {"ppo": PPO_PRESETS, "dqn": DQN_PRESETS}
