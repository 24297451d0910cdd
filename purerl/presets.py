"""Per-environment defaults for the CLIs: ``--env X`` starts from ``PRESETS[algo][X]``.

Flags given on the command line override a preset field by field. Budgets are chosen so the
preset learns on a 2-core CPU in about a minute or less (see BENCHMARKS.md for the returns).
"""

from __future__ import annotations

from purerl.algos.dqn import DQNConfig
from purerl.algos.ppo import PPOConfig
from purerl.envs.envpool import ATARI_GAMES


def atari_ppo(env_id: str) -> PPOConfig:
    """PPO on Atari as in the reference implementations (Schulman et al. 2017, Table 5; Huang
    et al. 2022): 8 x 128 there, 16 x 128 here to keep EnvPool's threads busy; 10M frames."""
    return PPOConfig(
        env=env_id,
        num_envs=16,
        rollout_len=128,
        num_epochs=4,
        num_minibatches=4,
        lr=2.5e-4,
        anneal_lr=True,
        gamma=0.99,
        gae_lambda=0.95,
        clip_eps=0.1,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        total_timesteps=2_500_000,  # x frame skip 4 = 10M frames
    )


def atari_dqn(env_id: str) -> DQNConfig:
    """DQN on Atari after Mnih et al. (2015) and CleanRL's dqn_atari: Adam 1e-4, batch 32, a
    gradient step every 4 environment steps, target copy every 1000 steps, epsilon 1 -> 0.01
    over the first 10% of 10M steps, 80k steps before learning. The Nature paper's buffer holds
    1M transitions (28 GB of uint8 frame stacks); 100k (2.8 GB) is the default here."""
    return DQNConfig(
        env=env_id,
        num_envs=4,
        rollout_len=250,
        train_frequency=1,
        buffer_size=100_000,
        batch_size=32,
        learning_starts=80_000,
        target_update_period=1_000,
        lr=1e-4,
        gamma=0.99,
        eps_start=1.0,
        eps_end=0.01,
        exploration_fraction=0.1,
        max_grad_norm=10.0,
        loss="huber",
        total_timesteps=10_000_000,
    )


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

PPO_PRESETS.update({f"{game}-v5": atari_ppo(f"{game}-v5") for game in ATARI_GAMES})

DQN_PRESETS: dict[str, DQNConfig] = {
    # 10 envs, one gradient step of 128 per vector step, 10k buffer and target period 500 as in
    # PureJaxRL's CartPole DQN; DQNConfig's defaults are this preset.
    "CartPole-v1": DQNConfig(env="CartPole-v1"),
    "Acrobot-v1": DQNConfig(env="Acrobot-v1", total_timesteps=500_000, loss="huber"),
    # Snake 10x10 from its [10, 10, 3] grid, 256 games as for PPO: one gradient step of 512
    # per vector step (replay ratio 2), Double-DQN targets and a Huber loss (BENCHMARKS.md).
    "Snake-v0": DQNConfig(
        env="Snake-v0",
        num_envs=256,
        rollout_len=16,
        buffer_size=256 * 1024,
        batch_size=512,
        learning_starts=256 * 100,
        target_update_period=256 * 50,
        lr=5e-4,
        eps_end=0.02,
        exploration_fraction=0.2,
        loss="huber",
        double_q=True,
        hidden_sizes=(256, 256),
        total_timesteps=3_000_000,
    ),
}

DQN_PRESETS.update({f"{game}-v5": atari_dqn(f"{game}-v5") for game in ATARI_GAMES})

PRESETS = {"ppo": PPO_PRESETS, "dqn": DQN_PRESETS}
