"""The experiment scripts, run as a user would: subprocesses with tiny sizes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--num-envs",
    "4",
    "--rollout-len",
    "16",
    "--num-minibatches",
    "2",
    "--num-epochs",
    "1",
    "--hidden-sizes",
    "8",
    "--total-timesteps",
    "128",
]


def run_script(script, *args, cwd=None):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.run(
        [sys.executable, str(ROOT / "experiments" / script), *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=env,
        timeout=600,
    )


@pytest.mark.slow
def test_tiny_ppo_run_writes_config_metrics_and_summary(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_script("ppo.py", *TINY, "--num-seeds", "2", "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert "final mean return" in proc.stdout
    config = json.loads((run_dir / "config.json").read_text())
    assert config["algo"] == "ppo" and config["config"]["num_envs"] == 4
    assert config["config"]["hidden_sizes"] == [8]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2]
    assert rows[-1]["env_steps"] == 128 and len(rows[-1]["per_seed"]["loss/total"]) == 2
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in [
        "final_mean_return",
        "final_std_return",
        "per_seed_final_return",
        "total_env_steps",
        "wall_time_s",
        "compile_time_s",
        "steps_per_second",
    ]:
        assert key in summary
    assert summary["total_env_steps"] == 256 and len(summary["per_seed_final_return"]) == 2


def test_default_run_dir_goes_under_runs(tmp_path):
    proc = run_script("ppo.py", *TINY, "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.startswith("ppo-CartPole-v1-")
    assert (run_dir / "summary.json").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--num-minibatches", "3"], "--num-minibatches 3 does not divide the batch of 64"),
        (["--num-envs", "0"], "--num-envs must be positive"),
        (["--env", "CartPol-v1"], "unknown environment id 'CartPol-v1'; did you mean CartPole-v1"),
        (["--total-timesteps", "10"], "is less than one update"),
        (["--gamma", "1.5"], "--gamma must lie in [0, 1]"),
        (["--env-options", "nonsense"], "--env-options takes key=value pairs"),
        (["--env-options", "foo=1"], "CartPole-v1 has no parameter foo"),
        (["--precision", "fp16"], "--precision must be fp32 or bf16"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, args, message):
    run_dir = tmp_path / "run"
    proc = run_script("ppo.py", *TINY, *args, "--run-dir", str(run_dir))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert message in lines[0]
    assert not run_dir.exists()


def test_existing_run_dir_is_never_overwritten(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "keep.txt").write_text("precious")
    proc = run_script("ppo.py", *TINY, "--run-dir", str(run_dir))
    assert proc.returncode == 2 and "already exists and is not empty" in proc.stderr
    assert (run_dir / "keep.txt").read_text() == "precious"
    assert sorted(p.name for p in run_dir.iterdir()) == ["keep.txt"]


def test_help_lists_flags():
    proc = run_script("ppo.py", "--help")
    assert proc.returncode == 0
    for flag in [
        "--env",
        "--num-envs",
        "--num-seeds",
        "--total-timesteps",
        "--seed",
        "--lr",
        "--run-dir",
        "--clip-eps",
        "--ent-coef",
    ]:
        assert flag in proc.stdout


DQN_TINY = [
    "--num-envs",
    "4",
    "--rollout-len",
    "8",
    "--buffer-size",
    "64",
    "--batch-size",
    "16",
    "--learning-starts",
    "32",
    "--hidden-sizes",
    "8",
    "--total-timesteps",
    "96",
]


@pytest.mark.slow
def test_tiny_dqn_run_writes_config_metrics_and_summary(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_script("dqn.py", *DQN_TINY, "--num-seeds", "2", "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    config = json.loads((run_dir / "config.json").read_text())
    assert config["algo"] == "dqn" and config["config"]["buffer_size"] == 64
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2, 3]
    # The first update only fills the buffer: no loss yet, and no error about it either.
    assert rows[0]["loss/total"] is None and rows[0]["optim/gradient_steps"] == 0
    assert rows[-1]["loss/total"] is not None and rows[-1]["optim/gradient_steps"] == 8
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["total_env_steps"] == 192 and len(summary["per_seed_final_return"]) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batch-size", "128"], "--batch-size 128 exceeds --buffer-size 64"),
        (["--learning-starts", "96"], "--learning-starts 96 is not below the run's 96 steps"),
        (["--env", "Pendulum-v1"], "DQN needs discrete actions"),
    ],
)
def test_bad_dqn_arguments_exit_2_with_one_line(tmp_path, args, message):
    run_dir = tmp_path / "run"
    proc = run_script("dqn.py", *DQN_TINY, *args, "--run-dir", str(run_dir))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert message in lines[0]
    assert not run_dir.exists()


def test_dqn_help_lists_its_flags():
    proc = run_script("dqn.py", "--help")
    assert proc.returncode == 0
    for flag in ["--buffer-size", "--learning-starts", "--double-q", "--tau", "--eps-end"]:
        assert flag in proc.stdout


@pytest.mark.slow
def test_tiny_run_writes_learning_curves_and_tensorboard(tmp_path):
    from PIL import Image

    from purerl.tensorboard import read_scalars

    run_dir = tmp_path / "run"
    proc = run_script("ppo.py", *TINY, "--run-dir", str(run_dir), "--tensorboard")
    assert proc.returncode == 0, proc.stderr
    for name in ["returns.png", "returns_smoothed.png"]:
        image = Image.open(run_dir / name)
        assert image.size == (800, 500)
    scalars = read_scalars(run_dir / "tensorboard")
    assert [step for step, _ in scalars["loss/total"]] == [64, 128]
    assert "loss/total/seed_0" in scalars
