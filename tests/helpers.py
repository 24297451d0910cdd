"""Helpers shared by the tests: running the command line in-process, comparing states, and
run directories (real tiny ones and synthetic ones written through the real writer)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.cli.doctor import QUICK_XLA_FLAGS
from purerl.core.report import ChunkReport
from purerl.run.rundir import MetricsWriter, write_json

ROOT = Path(__file__).resolve().parents[1]

TINY_ARGS = [
    "--num-envs", "4", "--rollout-len", "16", "--num-minibatches", "2", "--num-epochs", "2",
    "--hidden-sizes", "16", "--total-timesteps", "384", "--no-progress",
]  # fmt: skip
"""Flags of a tiny PPO run, 6 updates of 64 steps: PPO's smoke configuration. Tests that train
it (with the same seeds and chunks) share compiled programs through the compilation cache."""

DQN_TINY_ARGS = [
    "--num-envs", "4", "--rollout-len", "8", "--buffer-size", "64", "--batch-size", "16",
    "--learning-starts", "32", "--target-update-period", "64", "--hidden-sizes", "16",
    "--total-timesteps", "192", "--no-progress",
]  # fmt: skip
"""Flags of a tiny DQN run, 6 updates of 32 steps: DQN's smoke configuration."""


TINY_TORSO = "tests.helpers:TinyTorso"
"""A torso of the user's as a configuration names it (``--network``)."""


class TinyTorso(nn.Module):
    """A torso of the user's: one tanh layer of 8 units over the flattened observation."""

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return nn.tanh(nn.Dense(8)(obs.reshape(obs.shape[0], -1)))


class CliResult(NamedTuple):
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def run_cli(*argv: str) -> CliResult:
    """``purerl ARGV`` in this process: exit code and what it printed."""
    from purerl.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return CliResult(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def with_curves():
    """Runs in this block draw their learning curves, which the test session otherwise leaves
    out (``PURERL_CURVES=0``, conftest.py); processes started in it inherit the setting."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PURERL_CURVES", raising=False)
        yield


def run_process(
    *argv: str, cwd: Path | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    """A real process (``python ARGV``) with the test session's environment."""
    return subprocess.run(
        [sys.executable, *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=timeout,
    )


def default_level_env() -> dict[str, str]:
    """The session's environment with XLA's default compile settings (conftest.py sets quicker
    ones for the suite's short programs: ``QUICK_XLA_FLAGS``)."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    quick = tuple(flag.split("=")[0] for flag in QUICK_XLA_FLAGS)
    kept = [f for f in flags if not f.startswith(quick)]
    return {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": " ".join(kept)}


LEARNING_XLA_FLAGS = ("--xla_backend_optimization_level=1", "--xla_cpu_use_fusion_emitters=false")
"""XLA settings of the learning runs: the same programs as XLA's defaults compile, rounded
differently, compiled in about half the time and run within 20 % of the defaults' speed (a
learning run of the table is mostly compiling: 6-11 s of its 8-14 s on one core at the
defaults). The learning table's observed returns were measured at these settings; the README
run (``cartpole_run``) keeps the defaults, as its users run it."""


def learning_level_env() -> dict[str, str]:
    """``default_level_env`` with ``LEARNING_XLA_FLAGS`` in place of the suite's quick ones."""
    env = default_level_env()
    return {**env, "XLA_FLAGS": " ".join([*env["XLA_FLAGS"].split(), *LEARNING_XLA_FLAGS])}


def learn(run_dir: Path, algo: str, *args: str, timeout: int = 900):
    """``purerl train ALGO ARGS`` run to the end in its own process, compiled at
    ``LEARNING_XLA_FLAGS`` (the learning tests' budgets and thresholds were measured so): its
    summary."""
    from purerl.run.rundir import read_summary

    proc = subprocess.run(
        [sys.executable, "-m", "purerl", "train", algo, *map(str, args),
         "--run-dir", str(run_dir), "--no-progress"],
        capture_output=True, text=True, cwd=ROOT, env=learning_level_env(), timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary is not None, proc.stdout[-3000:]
    return summary


def one_error_line(result, message: str) -> None:
    """Exit code 2 and exactly one ``error:`` line on stderr, containing ``message``."""
    stderr = result.stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    code = getattr(result, "code", getattr(result, "returncode", None))
    assert code == 2, (code, stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert message in lines[0], lines[0]
    assert "Traceback" not in stderr


def as_numpy(tree):
    """Leaves as NumPy arrays, with typed PRNG keys turned into their raw key data."""

    def convert(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    return jax.tree.map(convert, tree)


def leaves_equal(a, b) -> bool:
    pairs = zip(jax.tree.leaves(as_numpy(a)), jax.tree.leaves(as_numpy(b)), strict=True)
    return all(np.array_equal(x, y, equal_nan=True) for x, y in pairs)


def tree_digest(path: Path) -> dict[str, str]:
    """A digest of every file below ``path``: equal digests mean nothing was touched. The lock
    file is left out: it names the last process that locked the run, which a refused resume
    may be."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(Path(path).rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def metric_rows(run_dir: Path) -> list[dict]:
    """``metrics.jsonl`` rows without their wall-clock times."""
    rows = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    for row in rows:
        del row["wall_time_s"]
    return rows


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
    is written as the session computes it (last-100-episode means).
    """
    from purerl.core.stats import recent_mean_return

    counts = np.where(np.isfinite(returns), 1, 0) if counts is None else counts
    run_dir.mkdir(parents=True)
    config = {"env": env, "num_seeds": returns.shape[0]}
    write_json(run_dir / "config.json", {"algo": algo, "config": config})
    sink = MetricsWriter(run_dir, env_steps_per_update, frame_skip)
    reports = chunk_reports(returns, counts, chunk_len)
    for report in reports:
        sink.write(report)
    sink.close()
    if finished:
        final = recent_mean_return(returns, counts, 100)
        num_seeds, num_updates = returns.shape
        summary = {
            "algo": algo,
            "env": env,
            "final_mean_return": float(np.nanmean(final)),
            "final_std_return": float(np.nanstd(final)),
            "per_seed_final_return": [float(x) for x in final],
            "final_return_window_episodes": 100,
            "num_seeds": num_seeds,
            "num_updates": num_updates,
            "env_steps_per_seed": num_updates * env_steps_per_update,
            "total_env_steps": num_updates * env_steps_per_update * num_seeds,
            "total_frames": num_updates * env_steps_per_update * frame_skip * num_seeds,
            "resumed_from_update": 0,
            "wall_time_s": reports[-1].wall_time_s,
            "compile_time_s": 10.0,
            "train_time_s": reports[-1].train_time_s,
            "checkpoint_time_s": 0.0,
            "steps_per_second": 1234.0,
            "sessions": [],
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


def train_probes(build, cfg, env_ids: list[str]) -> tuple:
    """One agent per probe environment in ``env_ids``, trained as one compiled program (the
    probe kind is data, vmapped over) for ``cfg.num_updates`` updates from ``cfg.seed``.

    Every probe runs with two actions (the one-action probes ignore the choice), so the programs
    have one shape. Returns the environment and ``{env_id: params}``.
    """
    from purerl import envs
    from purerl.envs.probes import make_probe

    env = envs.make("ProbeObsAction-v0", cfg.num_envs)
    kinds = jax.tree.map(lambda *k: jnp.stack(k), *[make_probe(e).default_params for e in env_ids])

    def trained(env_params):
        algo = build(cfg, env, env_params)
        init_key, train_key = jax.random.split(jax.random.key(cfg.seed))
        keys = jax.random.split(train_key, cfg.num_updates)
        state, _ = jax.lax.scan(lambda s, k: algo.update(s, k), algo.init(init_key), keys)
        return state.params

    params = jax.jit(jax.vmap(trained))(kinds)
    return env, {e: jax.tree.map(lambda x, i=i: x[i], params) for i, e in enumerate(env_ids)}


def roll(env, actions, num_seeds=1):
    """Steps ``env`` through ``actions`` ``[T, B, ...]`` (or ``[S, T, B, ...]`` for ``num_seeds``
    agents) inside one jitted scan; returns the first observations and the stacked steps."""

    def run(key, actions):
        state, obs = env.reset(key, None)

        def body(state, action):
            return env.step(None, state, action, None)

        return obs, jax.lax.scan(body, state, actions)[1]

    if num_seeds == 1:
        return jax.jit(run)(jax.random.key(0), actions)
    keys = jax.random.split(jax.random.key(0), num_seeds)
    return jax.jit(jax.vmap(run))(keys, actions)


class CountedTraces:
    """``algo`` with an ``update`` that counts how often JAX traces it (``count``)."""

    def __init__(self, algo):
        self.count = 0

        def counting_update(state, key):
            self.count += 1
            return algo.update(state, key)

        self.algo = algo._replace(update=counting_update)
