"""What the benchmark tests share: running a benchmark module, and synthetic run directories
written through purerl's own writer."""

from __future__ import annotations

import contextlib
import io
import runpy
import subprocess
import sys
from pathlib import Path
from unittest import mock

import numpy as np

from purerl.core.report import ChunkReport
from purerl.core.stats import recent_mean_return
from purerl.run.rundir import MetricsWriter, write_json


def run_module(module: str, *args) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` as its ``__main__`` in this process (a benchmark needs no
    process of its own: a fresh one would only add seconds of imports to every test); its
    exit code and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    argv = [module, *map(str, args)]
    code = 0
    with (
        mock.patch.object(sys, "argv", argv),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if isinstance(exit_.code, str):
                print(exit_.code, file=sys.stderr)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def learning_curves(num_seeds: int = 3, num_updates: int = 60) -> np.ndarray:
    """``[S, U]`` rising noisy returns with a few updates that finished no episode (NaN)."""
    rng = np.random.default_rng(0)
    returns = np.linspace(10.0, 200.0, num_updates) + rng.normal(
        0.0, 15.0, (num_seeds, num_updates)
    )
    returns[:, ::7] = np.nan
    return returns


def write_synthetic_run(run_dir: Path, returns: np.ndarray, finished: bool = True) -> Path:
    """A run directory of ``returns`` ``[S, U]`` (one episode per finite value), 100 steps per
    update, five updates per chunk; with ``finished`` a summary as the session writes it."""
    counts = np.where(np.isfinite(returns), 1, 0)
    run_dir.mkdir(parents=True)
    num_seeds, num_updates = returns.shape
    write_json(run_dir / "config.json", {"algo": "dqn", "config": {"env": "Synthetic-v0"}})
    writer = MetricsWriter(run_dir, 100)
    for first in range(0, num_updates, 5):
        cut = slice(first, first + 5)
        metrics = {"episode/return": returns[:, cut], "episode/count": counts[:, cut]}
        writer.write(ChunkReport(first, metrics, 10.0 + first, float(first)))
    writer.close()
    if finished:
        final = recent_mean_return(returns, counts, 100)
        summary = {
            "algo": "dqn", "env": "Synthetic-v0", "final_mean_return": float(np.nanmean(final)),
            "final_std_return": float(np.nanstd(final)), "per_seed_final_return": list(final),
            "final_return_window_episodes": 100, "num_seeds": num_seeds,
            "num_updates": num_updates, "env_steps_per_seed": 100 * num_updates,
            "total_env_steps": 100 * num_updates * num_seeds,
            "total_frames": 100 * num_updates * num_seeds, "resumed_from_update": 0,
            "wall_time_s": 10.0, "compile_time_s": 1.0, "train_time_s": 9.0,
            "checkpoint_time_s": 0.0, "steps_per_second": 1234.0, "sessions": [],
        }  # fmt: skip
        write_json(run_dir / "summary.json", summary)
    return run_dir
