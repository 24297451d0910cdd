"""DQN presets: ``purerl train dqn --env X`` starts from ``PRESETS[X]``.

Flags given on the command line override a preset field by field (see BENCHMARKS.md for the
returns they reach).
"""

from __future__ import annotations

from purerl.algos.dqn import DQNConfig
from purerl.envs.envpool import ATARI_GAMES
from purerl.presets import MINATAR_GAMES


def atari_dqn(env_id: str) -> DQNConfig:
    """DQN on Atari after Mnih et al. (2015) and CleanRL's dqn_atari: Adam 1e-4, batch 32, a
    gradient step every 4 environment steps, target copy every 1000 steps, epsilon 1 -> 0.01
    over the first 10% of 10M agent steps (40M frames), 80k steps before learning. The Nature
    paper's buffer holds 1M transitions (28 GB of uint8 frame stacks); 100k (2.8 GB) is the
    default here. CleanRL plays ``<Game>NoFrameskip-v4`` through Gym wrappers: no sticky
    actions, as in the default Atari protocol here; its episode cap is Gym's rather than
    EnvPool's 108k frames."""
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


def minatar(env: str) -> DQNConfig:
    """One setting for every MinAtar game (from its [10, 10, C] grid), chosen on Breakout and
    not tuned per game: the Snake-v0 preset's recipe scaled to 128 envs, one gradient step of
    256 per vector step (each transition replayed about twice), a 131k-transition buffer,
    Double-DQN targets, Huber loss, relu 256x256, Adam 1e-3 (the best of 1e-3, 5e-4 and 2.5e-4
    on Breakout-MinAtar's tuning seeds, docs/notes), a target copy every 100 gradient steps,
    epsilon 1 -> 0.01 over the first 10%; 5M steps, the MinAtar paper's budget (Young & Tian
    2019: 5M frames, frame skip 1)."""
    return DQNConfig(
        env=env,
        num_envs=128,
        rollout_len=32,
        buffer_size=128 * 1024,
        batch_size=256,
        learning_starts=128 * 200,
        target_update_period=128 * 100,
        lr=1e-3,
        eps_end=0.01,
        exploration_fraction=0.1,
        loss="huber",
        double_q=True,
        hidden_sizes=(256, 256),
        total_timesteps=5_000_000,
    )


PRESETS: dict[str, DQNConfig] = {
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
    **{env: minatar(env) for env in MINATAR_GAMES},
}

PRESETS.update({f"{game}-v5": atari_dqn(f"{game}-v5") for game in ATARI_GAMES})
