"""PPO on Gymnasium's CartPole-v1: purerl's host-callback path beside Stable-Baselines3.

    python -m benchmarks.gymnasium_ppo --total-timesteps 100000 --repeats 2

Stable-Baselines3 is not a purerl dependency: install it in the benchmark's own environment
(``pip install stable-baselines3``); without it only purerl's rows run. One configuration for
every row, RL Zoo's PPO for CartPole-v1 (8 envs x 32 steps, minibatches of 256, 20 epochs, lr
1e-3 annealed to 0, clip 0.2, gamma 0.98, lambda 0.8, no entropy bonus, 64x64 tanh actor and
critic), with the value loss unclipped in both (Stable-Baselines3's default). Rows, in one
process, calls alternating after a warm-up call of each:

- ``purerl gymnasium``: ``--env gymnasium/CartPole-v1`` (Gymnasium's SyncVectorEnv stepped from
  the compiled loop through a host callback);
- ``purerl gymnax``: the same on gymnax's CartPole-v1 (pure JAX): what the callback costs;
- ``sb3``: ``stable_baselines3.PPO`` on a ``DummyVecEnv`` of 8 Gymnasium CartPole-v1.

Each call trains a fresh agent (seed = call index) for ``--total-timesteps`` steps. Reported
per row: median steps/s over the whole call (purerl's compile included) and over training alone
(purerl's summary, compile excluded), and the mean final return (last 100 episodes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import platform
import statistics
import sys
import time

import tyro

import purerl

CONFIG = dict(
    num_envs=8, rollout_len=32, num_minibatches=1, num_epochs=20, lr=1e-3, anneal_lr=True,
    clip_eps=0.2, clip_value_loss=False, gamma=0.98, gae_lambda=0.8, ent_coef=0.0, vf_coef=0.5,
    max_grad_norm=0.5, hidden_sizes=(64, 64), activation="tanh",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class BenchArgs:
    total_timesteps: int = 100_000
    """Environment steps per call (RL Zoo's CartPole-v1 budget)."""
    repeats: int = 2
    """Timed calls of each row after its warm-up call."""
    warmup_timesteps: int = 8_192
    """Steps of each row's untimed first call."""


def run_purerl(env: str, steps: int, seed: int) -> tuple[float, float, float]:
    """(wall s, training steps/s, final return) of one purerl run."""
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        result = purerl.train(
            "ppo", env=env, total_timesteps=steps, seed=seed, progress=False, **CONFIG
        )
    wall = time.perf_counter() - start
    summary = result.summary
    return wall, summary.steps_per_second, summary.final_mean_return


def sb3_available() -> bool:
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        return False
    return True


def run_sb3(steps: int, seed: int) -> tuple[float, float, float]:
    """(wall s, steps/s, final return) of one Stable-Baselines3 run at ``CONFIG``."""
    import numpy as np
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    def linear(start: float):
        return lambda remaining: remaining * start

    vec = make_vec_env("CartPole-v1", n_envs=CONFIG["num_envs"], seed=seed)
    model = PPO(
        "MlpPolicy", vec, n_steps=CONFIG["rollout_len"],
        batch_size=CONFIG["num_envs"] * CONFIG["rollout_len"] // CONFIG["num_minibatches"],
        n_epochs=CONFIG["num_epochs"], learning_rate=linear(CONFIG["lr"]),
        clip_range=CONFIG["clip_eps"], gamma=CONFIG["gamma"], gae_lambda=CONFIG["gae_lambda"],
        ent_coef=CONFIG["ent_coef"], vf_coef=CONFIG["vf_coef"],
        max_grad_norm=CONFIG["max_grad_norm"], seed=seed, device="cpu", verbose=0,
    )  # fmt: skip
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    wall = time.perf_counter() - start
    returns = [info["r"] for info in model.ep_info_buffer]
    return wall, steps / wall, float(np.mean(returns)) if returns else float("nan")


def main(argv: list[str]) -> int:
    args = tyro.cli(BenchArgs, args=argv, description=__doc__)
    rows = {
        "purerl gymnasium": lambda steps, seed: run_purerl("gymnasium/CartPole-v1", steps, seed),
        "purerl gymnax": lambda steps, seed: run_purerl("CartPole-v1", steps, seed),
    }
    if sb3_available():
        import stable_baselines3
        import torch

        rows["sb3"] = run_sb3
        peer = f"stable-baselines3 {stable_baselines3.__version__}, torch {torch.__version__}"
    else:
        peer = "stable-baselines3 not installed: its row is left out"
    for run in rows.values():  # warm-up calls, untimed
        run(args.warmup_timesteps, 1000)
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in rows}
    for call in range(args.repeats):
        for name, run in rows.items():
            results[name].append(run(args.total_timesteps, call))
            print(f"call {call} {name}: {results[name][-1]}", file=sys.stderr, flush=True)
    print(f"PPO CartPole-v1, {args.total_timesteps:,} steps per call, {args.repeats} calls per "
          f"row alternating; {platform.processor() or platform.machine()}, {os.cpu_count()} "
          f"cores; {peer}\n")  # fmt: skip
    print("| row | steps/s, whole call | steps/s, training | final return (mean) |")
    print("|---|---:|---:|---:|")
    medians = {}
    for name, values in results.items():
        whole = statistics.median(args.total_timesteps / v[0] for v in values)
        training = statistics.median(v[1] for v in values)
        final = statistics.mean(v[2] for v in values)
        medians[name] = (whole, training)
        print(f"| {name} | {whole:,.0f} | {training:,.0f} | {final:.1f} |")
    base = medians["purerl gymnasium"]
    gymnax = medians["purerl gymnax"]
    print(f"\ncallback path / gymnax: {base[1] / gymnax[1]:.3f}x training steps/s")
    if "sb3" in medians:
        print(f"purerl gymnasium / sb3: {base[0] / medians['sb3'][0]:.2f}x whole-call steps/s, "
              f"{base[1] / medians['sb3'][1]:.2f}x training steps/s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
