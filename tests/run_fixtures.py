"""Run directories for the reporting tests: real tiny training runs, and synthetic ones.

Synthetic runs go through ``JsonlSink`` with hand-made chunk reports, so their files have the
real format without the cost of training.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from purerl import envs
from purerl.algos.ppo import PPOConfig, make_ppo
from purerl.envs.stats import recent_mean_return
from purerl.logging import ChunkReport, JsonlSink
from purerl.rundir import write_json
from purerl.train import RunOptions, train

TINY_PPO = PPOConfig(
    num_envs=4,
    rollout_len=16,
    num_minibatches=2,
    num_epochs=1,
    hidden_sizes=(8,),
    total_timesteps=4 * 16 * 6,
    num_seeds=2,
)


def train_tiny_run(run_dir: Path, extra_sinks=(), cfg: PPOConfig = TINY_PPO) -> dict:
    """Trains ``cfg`` into ``run_dir`` as the CLI does; returns the summary it writes."""
    run_dir.mkdir(parents=True)
    write_json(run_dir / "config.json", {"algo": "ppo", "config": {"env": cfg.env}})
    jsonl = JsonlSink(run_dir / "metrics.jsonl", cfg.env_steps_per_update)
    options = RunOptions(progress=False, run_dir=str(run_dir), updates_per_chunk=2)
    algo = make_ppo(cfg, envs.make(cfg.env, cfg.num_envs))
    result = train(algo, cfg, options, sinks=[jsonl, *extra_sinks])
    summary = {"algo": "ppo", "env": cfg.env, **result.summary}
    write_json(run_dir / "summary.json", summary)
    return summary


def chunk_reports(returns: np.ndarray, counts: np.ndarray, chunk_len: int) -> list[ChunkReport]:
    """Reports of ``chunk_len`` updates cut from ``[S, U]`` arrays, one second per chunk."""
    reports = []
    for first in range(0, returns.shape[1], chunk_len):
        cut = slice(first, first + chunk_len)
        metrics = {
            "episode/return": returns[:, cut].astype(np.float32),
            "episode/count": counts[:, cut].astype(np.int32),
            "loss/total": np.full(returns[:, cut].shape, 0.5, np.float32),
        }
        seconds = 10.0 + first // chunk_len
        reports.append(ChunkReport(first, metrics, seconds, seconds - 10.0))
    return reports


def write_synthetic_run(
    run_dir: Path,
    returns: np.ndarray,
    counts: np.ndarray | None = None,
    finished: bool = True,
    env_steps_per_update: int = 100,
    frame_skip: int = 1,
    chunk_len: int = 5,
    algo: str = "dqn",
    env: str = "Synthetic-v0",
) -> Path:
    """A run directory holding ``returns`` ``[S, U]`` (NaN: no episode that update).

    ``counts`` defaults to 1 episode wherever a return is given. With ``finished`` a summary
    is written as ``purerl.train`` computes it (last-100-episode means).
    """
    counts = np.where(np.isfinite(returns), 1, 0) if counts is None else counts
    run_dir.mkdir(parents=True)
    config = {"env": env, "num_seeds": returns.shape[0]}
    write_json(run_dir / "config.json", {"algo": algo, "config": config})
    sink = JsonlSink(run_dir / "metrics.jsonl", env_steps_per_update, frame_skip)
    reports = chunk_reports(returns, counts, chunk_len)
    for report in reports:
        sink.write(report)
    sink.close({})
    if finished:
        final = recent_mean_return(returns, counts, 100)
        num_seeds, num_updates = returns.shape
        summary = {
            "final_mean_return": float(np.nanmean(final)),
            "final_std_return": float(np.nanstd(final)),
            "num_seeds": num_seeds,
            "num_updates": num_updates,
            "total_frames": num_updates * env_steps_per_update * frame_skip * num_seeds,
            "wall_time_s": reports[-1].wall_time_s,
            "steps_per_second": 1234.0,
        }
        write_json(run_dir / "summary.json", summary)
    return run_dir


def learning_curves(num_seeds: int = 3, num_updates: int = 60) -> np.ndarray:
    """``[S, U]`` rising noisy returns with a few updates that finished no episode (NaN)."""
    rng = np.random.default_rng(0)
    base = np.linspace(10.0, 200.0, num_updates)
    returns = base + rng.normal(0.0, 15.0, (num_seeds, num_updates))
    returns[:, ::7] = np.nan
    return returns


def png_is_a_plot(path: Path, size: tuple[int, int] = (800, 500)) -> None:
    """Asserts ``path`` is a ``size`` (width, height) PNG with coloured curves on it."""
    from matplotlib.image import imread

    pixels = imread(path)
    assert pixels.shape[:2] == (size[1], size[0]), pixels.shape
    rgb = pixels[..., :3]
    assert rgb.std() > 0.05, "the image is (nearly) one colour"
    # Axes, ticks and text are grey; only the curves and bands are coloured.
    coloured = (rgb.max(axis=-1) - rgb.min(axis=-1)) > 0.15
    assert coloured.mean() > 0.005, f"only {coloured.mean():.4f} of the pixels are coloured"
