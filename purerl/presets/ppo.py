"""PPO presets: ``purerl train ppo --env X`` starts from ``PRESETS[X]``.

Flags given on the command line override a preset field by field. Budgets are kept small
enough for the classic-control presets to train on a CPU (wall-clock times in BENCHMARKS.md).
"""

from __future__ import annotations

import dataclasses

from purerl.algos.ppo import PPOConfig
from purerl.envs.envpool import ATARI_GAMES
from purerl.envs.mujoco import MUJOCO_IDS
from purerl.presets import MINATAR_GAMES


def atari_ppo(env_id: str) -> PPOConfig:
    """PPO on Atari as CleanRL's ``ppo_atari_envpool.py`` trains it for its published results
    (Schulman et al. 2017, Table 5; Huang et al. 2022): 8 envs x 128 steps, 4 epochs x 4
    minibatches, Adam 2.5e-4 annealed, clip 0.1; 10M agent steps (40M frames), on the default
    Atari protocol (EnvPool's, no sticky actions; ``purerl.envs.envpool.AtariProtocol``)."""
    return PPOConfig(
        env=env_id,
        num_envs=8,
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
        total_timesteps=10_000_000,  # agent steps; x frame skip 4 = 40M frames
    )


SLM_LAB_LAMBDA = {"Breakout": 0.70}
"""SLM Lab's per-game GAE lambda where it differs from its 0.95 (its Breakout setting)."""


def slm_lab_atari_ppo(game: str) -> PPOConfig:
    """PPO on Atari as SLM Lab's GPU guide trains it (its ``ppo_atari`` spec with 16 envs, 4
    sessions): 16 envs x 128 steps, 4 epochs of minibatches of 256, Adam 2.5e-4 annealed to
    zero, clip 0.1, entropy 0.01, value weight 0.5, gradient norm 0.5, GAE lambda 0.95 (0.70 on
    Breakout), rewards clipped to their sign, 4 stacked 84x84 frames, sticky actions with
    probability 0.25 as in Gymnasium's ALE v5; 10M frames = 2.5M agent steps at frame skip 4.

    What differs: the Nature CNN (SLM Lab's third convolution has 32 channels, not 64); EnvPool's
    episodic life, up to 30 no-op starts and FIRE at reset (``AtariProtocol``); the minimal action
    set; 10M frames counted as emulator frames (SLM Lab's ``max_frame`` counts its vector env's
    steps: if those are agent steps, its budget is 4x this one)."""
    return dataclasses.replace(
        atari_ppo(f"{game}-v5"),
        num_envs=16,
        num_minibatches=8,
        gae_lambda=SLM_LAB_LAMBDA.get(game, 0.95),
        env_options=("sticky_actions=0.25",),
        total_timesteps=1_221 * 2_048,  # the first whole update past 10M frames
    )


def mujoco_ppo(env_id: str) -> PPOConfig:
    """PPO on a MuJoCo task as CleanRL's ``ppo_continuous_action.py`` trains it for its published
    MuJoCo v4 results (CleanRL docs, "ppo_continuous_action.py", experiment results): one
    environment x 2,048 steps, 10 epochs x 32 minibatches of 64, Adam 3e-4 annealed, clip 0.2
    with the value update clipped too, no entropy bonus, 64x64 tanh actor and critic with a
    state-independent log standard deviation; observations standardised and rewards scaled by the
    discounted return's deviation, both clipped to [-10, 10]; 1M steps. One difference: the
    Gaussian works in units of the action bounds, which changes nothing on the tasks whose bounds
    are [-1, 1] (all but Humanoid, HumanoidStandup, InvertedPendulum and Pusher)."""
    return PPOConfig(
        env=env_id,
        num_envs=1,
        rollout_len=2048,
        num_epochs=10,
        num_minibatches=32,
        lr=3e-4,
        anneal_lr=True,
        gamma=0.99,
        gae_lambda=0.95,
        clip_eps=0.2,
        clip_value_loss=True,
        ent_coef=0.0,
        vf_coef=0.5,
        max_grad_norm=0.5,
        normalize_obs=True,
        normalize_reward=True,
        total_timesteps=1_000_000,
    )


def minatar(env: str) -> PPOConfig:
    """The setting the MinAtar games share, chosen on Breakout-MinAtar (``PRESETS`` lowers only
    Asterix's learning rate): 64 envs x 128 steps, 8 minibatches x 4 epochs, 256x256 relu MLP on
    the flattened grid and lr 5e-3 annealed, for 5M steps. gymnax-blines trains its one MinAtar
    PPO setting, the table's reference, for 10M; ``PRESETS`` takes that budget where 5M falls
    short of its figure on the tuning seeds."""
    return PPOConfig(
        env=env,
        num_envs=64,
        total_timesteps=5_000_000,
        num_minibatches=8,
        lr=5e-3,
        activation="relu",
        hidden_sizes=(256, 256),
    )


def suite_grid(env: str, total_timesteps: int) -> PPOConfig:
    """The setting the Jumanji and XLand-MiniGrid presets share (chosen on seeds 100-101):
    256 envs x 32 steps, 8 minibatches x 4 epochs, lr 1e-3 annealed, a 256x256 relu MLP after
    each observation leaf's encoding (``purerl.core.nets.StructuredTorso``; XLand-MiniGrid's
    7x7x2 view flattened). Legal-action masks apply where the env gives one."""
    return PPOConfig(
        env=env,
        num_envs=256,
        rollout_len=32,
        num_minibatches=8,
        lr=1e-3,
        activation="relu",
        hidden_sizes=(256, 256),
        total_timesteps=total_timesteps,
    )


def brax_published(env_id: str, num_envs: int, unroll_length: int, **overrides) -> PPOConfig:
    """PPO as Brax trains it for its published curves: the ``train_fn`` table of Brax's
    training notebook (github.com/google/brax, ``notebooks/training.ipynb``), run by
    ``brax.training.agents.ppo.train``. These are GPU jobs (a few hundred thousand steps per
    update, 50M steps); on a CPU they run, slowly.

    Brax collects ``batch_size x num_minibatches`` trajectories of ``unroll_length`` steps per
    update, so ``rollout_len`` is ``batch_size * 32 * unroll_length / num_envs`` and one
    minibatch holds Brax's ``batch_size x unroll_length`` transitions. What carries over as
    published: environments, steps per update, 32 minibatches, epochs (``num_updates_per_batch``),
    a constant Adam learning rate of 3e-4, discount 0.97, GAE lambda 0.95, ratio clip 0.3 and no
    value clip, value weight 0.5, the entropy cost, observation normalisation, 1000-step
    episodes, swish activations. What differs: Brax's advantages come from 5- or 10-step
    unrolls bootstrapped at each end, purerl's from the whole rollout; Brax's policy is a
    tanh-squashed Gaussian with a state-dependent scale and an MLP of 4x32, its critic 5x256,
    where purerl's policy is a clipped Gaussian with a learned state-independent scale and both
    MLPs are 5x256 (one ``hidden_sizes``); Brax multiplies rewards by a constant
    ``reward_scaling`` (10 on Ant, 0.1 on Humanoid), which has no field here and, with Adam,
    separate actor and critic parameters, standardised advantages and no gradient clipping,
    changes only the critic's loss scale. Neither preset has been run here (no GPU).
    """
    rollout_len = overrides.pop("batch_size") * 32 * unroll_length // num_envs
    return PPOConfig(
        env=env_id,
        num_envs=num_envs,
        rollout_len=rollout_len,
        num_minibatches=32,
        lr=3e-4,
        anneal_lr=False,
        gamma=0.97,
        gae_lambda=0.95,
        clip_eps=0.3,
        clip_value_loss=False,
        vf_coef=0.5,
        max_grad_norm=1e6,  # Brax clips no gradients (max_grad_norm None)
        normalize_obs=True,
        hidden_sizes=(256,) * 5,
        activation="swish",
        total_timesteps=50_000_000,
        **overrides,
    )


PRESETS: dict[str, PPOConfig] = {
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
        # gamma 0.99 (the default), not 0.95: the policy that is best for a shorter horizon
        # earns less of the undiscounted return that is reported, which caps what PPO can reach
        # (benchmarks/pendulum_ceiling.py; docs/notes/2026-11-25-pendulum-ceiling.md).
        ent_coef=0.0,
        normalize_obs=True,
        # Value clipping keeps the new value within clip_eps (0.2) of the old one, in return
        # units: Pendulum's values run into the hundreds, so it throttles the critic
        # (docs/notes/2026-11-25-pendulum-ceiling.md).
        clip_value_loss=False,
    ),
    # Memory tasks, with a GRU (docs/guide.md, "Recurrent policies"): 16 envs x 32 steps
    # (about five 6-step episodes of MemoryChain per env and rollout), a 64-unit embedding and
    # cell; --network mlp gives the same run without memory.
    "MemoryChain-bsuite": PPOConfig(
        env="MemoryChain-bsuite",
        network="gru",
        num_envs=16,
        rollout_len=32,
        hidden_sizes=(64,),
        rnn_size=64,
        total_timesteps=32_768,
    ),
    # CartPole from positions alone: rewards scaled (values in the hundreds would otherwise
    # swamp the policy's share of the shared torso), lr 1e-3, 8 minibatches of 2 env sequences.
    "CartPole-NoVelocity-v1": PPOConfig(
        env="CartPole-NoVelocity-v1",
        network="gru",
        num_envs=16,
        rollout_len=128,
        num_minibatches=8,
        lr=1e-3,
        normalize_reward=True,
        hidden_sizes=(64,),
        rnn_size=64,
        total_timesteps=300_000,
    ),
    **{env: minatar(env) for env in MINATAR_GAMES},
    # The MinAtar setting with a GRU of 256 after one 256-unit layer (not tuned for flicker).
    "Breakout-MinAtar-Flicker": dataclasses.replace(
        minatar("Breakout-MinAtar-Flicker"), network="gru", hidden_sizes=(256,), rnn_size=256
    ),
    # Asterix takes a lower learning rate: at Breakout's 5e-3 its updates clip many of the
    # ratios, and 2.5e-3 was the best of a grid on the tuning seeds. Asterix and Freeway take
    # gymnax-blines' 10M-step budget, as at 5M they fall short of its figures (docs/notes).
    "Asterix-MinAtar": dataclasses.replace(
        minatar("Asterix-MinAtar"), lr=2.5e-3, total_timesteps=10_000_000
    ),
    "Freeway-MinAtar": dataclasses.replace(minatar("Freeway-MinAtar"), total_timesteps=10_000_000),
    # Snake 10x10 from its [10, 10, 3] grid: many short games per update, a relu MLP and a
    # higher learning rate, a budget a CPU can train (BENCHMARKS.md, tests/algos/test_learning.py).
    "Snake-v0": PPOConfig(
        env="Snake-v0",
        num_envs=256,
        rollout_len=32,
        total_timesteps=3_000_000,
        lr=1e-3,
        activation="relu",
    ),
    # Brax's inverted double pendulum on a CPU (Brax publishes 20M steps over 2048 envs on an
    # accelerator): 128 envs x 32 steps, 8 minibatches x 4 epochs, lr 1e-3 annealed, no entropy
    # bonus, observations and rewards normalised. Chosen on seeds 100-104, which all reach the
    # ~9350 ceiling (10 per step alive over 1000 steps, less small penalties) within 480k
    # steps; seeds 0-1 reach it within 330k and end at 9354 +- 1. 600k steps train in about 40 s
    # on two cores once compiled (compiling takes another 30-45 s there).
    "brax/inverted_double_pendulum": PPOConfig(
        env="brax/inverted_double_pendulum",
        num_envs=128,
        rollout_len=32,
        num_minibatches=8,
        num_epochs=4,
        lr=1e-3,
        ent_coef=0.0,
        normalize_obs=True,
        normalize_reward=True,
        total_timesteps=600_000,
    ),
    # MuJoCo Playground's CartpoleBalance (DeepMind Control suite, 1000-step episodes, reward
    # <= 1 a step) on a CPU: 64 envs x 64 steps, 4 minibatches x 4 epochs, lr 1e-3 annealed, no
    # entropy bonus, observations and rewards normalised. Chosen on seeds 100-104, which all
    # pass 930 within 1.1M steps and end at 980-998; seeds 0-1 end at 995 and 998. 2M steps
    # take 20-40 s on two shared cores, compiling included (MJX physics on the "jax" impl).
    "playground/CartpoleBalance": PPOConfig(
        env="playground/CartpoleBalance",
        num_envs=64,
        rollout_len=64,
        num_minibatches=4,
        num_epochs=4,
        lr=1e-3,
        ent_coef=0.0,
        normalize_obs=True,
        normalize_reward=True,
        total_timesteps=2_000_000,
    ),
    # Jumanji and XLand-MiniGrid (``suite_grid``), budgets a CPU trains in minutes
    # (BENCHMARKS.md). DoorKey-8x8 pays 1 - 0.9 steps / 640 for reaching the goal through the
    # locked door: seeds 100-101 end at 0.96 and 0.92 within 3M steps.
    "xminigrid/MiniGrid-DoorKey-8x8": suite_grid("xminigrid/MiniGrid-DoorKey-8x8", 3_000_000),
    # FourRooms (goal and start drawn anew each episode, 100 steps) pays 1 - 0.9 steps / 100:
    # seeds 100-101 end at 0.43 and 0.52 in 5M steps, still rising.
    "xminigrid/MiniGrid-FourRooms": suite_grid("xminigrid/MiniGrid-FourRooms", 5_000_000),
    # Knapsack-v1 (50 items, the mask keeps to those that fit) pays the value packed: seeds
    # 100-101 end at 19.37 each in 3M steps (the instances' optimum averages 20.25).
    "jumanji/Knapsack-v1": suite_grid("jumanji/Knapsack-v1", 3_000_000),
    # Game2048's rewards are the merged tiles (in the thousands an episode): scaled, seeds
    # 100-101 end at 5,949 +- 124 in 3M steps, unscaled at 2,339 when the scaled run had 4,311.
    "jumanji/Game2048-v1": dataclasses.replace(
        suite_grid("jumanji/Game2048-v1", 3_000_000), normalize_reward=True
    ),
    # Brax's published settings (``brax_published``): GPU jobs of 50M steps.
    "brax/ant": brax_published(
        "brax/ant", num_envs=4096, unroll_length=5, batch_size=2048, num_epochs=4, ent_coef=1e-2
    ),
    "brax/humanoid": brax_published(
        "brax/humanoid",
        num_envs=2048,
        unroll_length=10,
        batch_size=1024,
        num_epochs=8,
        ent_coef=1e-3,
    ),
}

PRESETS.update({f"{game}-v5": atari_ppo(f"{game}-v5") for game in ATARI_GAMES})
PRESETS.update({env_id: mujoco_ppo(env_id) for env_id in MUJOCO_IDS})
# SLM Lab's GPU guide (``slm_lab_atari_ppo``): ``--preset Breakout-v5-slm``.
PRESETS.update(
    {f"{game}-v5-slm": slm_lab_atari_ppo(game) for game in ("Breakout", "Qbert", "MsPacman")}
)
