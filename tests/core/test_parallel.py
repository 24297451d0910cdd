"""Devices and processes: seeds split across devices, data parallelism, jax.distributed.

Multi-device checks run in subprocesses with 4 simulated CPU devices (the device count is fixed
when JAX starts); the two-process check runs two processes on localhost with gloo collectives.
"""

import json
import os
import socket
import subprocess
import sys

import pytest

import purerl
from purerl.config import ConfigError
from purerl.core.parallel import cpu_seed_split, even_split, make_placement, select_devices
from tests.helpers import ROOT, TINY_ARGS, run_cli


def run_python(*args, devices=4, timeout=900):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_NUM_CPU_DEVICES": str(devices)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT,
        timeout=timeout,
    )  # fmt: skip


def test_device_selection_errors_name_the_fix():
    assert [d.platform for d in select_devices("auto", None)] == ["cpu"]
    with pytest.raises(ConfigError, match=r"JAX sees no GPU .*pip install 'purerl\[cuda12\]'"):
        select_devices("gpu", None)
    with pytest.raises(ConfigError, match="--device 7: JAX sees only 1 device"):
        select_devices("7", None)
    with pytest.raises(
        ConfigError, match="--num-devices 2: 1 cpu device.*JAX_NUM_CPU_DEVICES=2 before"
    ):
        select_devices("cpu", 2)
    with pytest.raises(ConfigError, match="--device must be auto, cpu, gpu"):
        select_devices("tpu0", None)
    assert select_devices(0, None) == select_devices("0", None)


@pytest.mark.slow
def test_num_devices_on_a_cpu_starts_that_many_cpu_devices(tmp_path):
    # A fresh process, as a user's: no JAX_NUM_CPU_DEVICES, so purerl itself asks JAX for them.
    env = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    proc = subprocess.run(
        [sys.executable, "-m", "purerl", "train", "ppo", *TINY_ARGS, "--num-seeds", "2",
         "--num-devices", "2", "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, env={**env, "JAX_PLATFORMS": "cpu"}, cwd=ROOT,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "devices: 2 x cpu (seeds-parallel)" in proc.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["num_devices"] == 2 and len(summary["per_seed_final_return"]) == 2
    # Evaluation reads the run on this process's one device.
    evaluated = run_cli("eval", tmp_path / "run", "--episodes", "2")
    assert evaluated.code == 0 and "over 4 episodes" in evaluated.stdout, evaluated.stderr


@pytest.mark.parametrize(
    "cores, seeds, split", [(2, 8, 2), (2, 3, 1), (2, 1, 1), (4, 6, 3), (4, 8, 4), (1, 8, 1)]
)
def test_seeds_split_over_as_many_cpu_devices_as_cores_divide_them(
    monkeypatch, cores, seeds, split
):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)))
    assert cpu_seed_split(seeds) == split


@pytest.mark.parametrize("count, most, split", [(6, 4, 3), (8, 4, 4), (5, 4, 1), (2, 8, 2)])
def test_agents_split_over_the_most_devices_that_divide_them(count, most, split):
    assert even_split(count, most) == split


def test_several_seeds_on_one_cpu_device_print_the_split_tip(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    tip = "tip: --num-devices 2 splits the 4 seeds over 2 CPU devices"
    runs = {
        "4 seeds": ["--num-seeds", "4"],
        "3 seeds": ["--num-seeds", "3"],
        "devices chosen": ["--num-seeds", "4", "--num-devices", "1"],
    }
    printed = {}
    for name, args in runs.items():
        result = run_cli("train", "ppo", *TINY_ARGS, *args, "--dry-run")
        assert result.code == 0, result.stderr
        printed[name] = [line for line in result.stdout.splitlines() if line.startswith("tip:")]
    assert printed == {"4 seeds": [printed["4 seeds"][0]], "3 seeds": [], "devices chosen": []}
    assert printed["4 seeds"][0].startswith(tip)


def test_counts_that_do_not_divide_are_refused():
    devices = select_devices("cpu", None) * 4  # the checks only count the devices
    with pytest.raises(ConfigError, match="--num-seeds 3 does not split across 4 devices"):
        make_placement(devices, "seeds", 3, 8)
    with pytest.raises(ConfigError, match="--num-envs 6 does not split across 4 devices"):
        make_placement(devices, "data", 1, 6)
    with pytest.raises(ConfigError, match="--parallel must be one of"):
        make_placement(devices, "pipeline", 4, 4)


@pytest.fixture(scope="module")
def four_devices(tmp_path_factory):
    """Findings of one process with 4 simulated CPU devices (tests/parallel/check_devices.py)."""
    run_dir = tmp_path_factory.mktemp("devices")
    proc = run_python("-m", "tests.parallel.check_devices", str(run_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), run_dir


@pytest.mark.slow
@pytest.mark.long
def test_four_devices_match_one_device_in_both_modes(four_devices):
    found, _ = four_devices
    # Independent agents: each device runs its seed's program; same results as one device.
    assert found["seeds_param_diff"] < 1e-6
    assert found["seeds_returns"][0] == pytest.approx(found["seeds_returns"][1], rel=1e-5)
    # A DQN sweep's batch (2 learning rates x 2 seeds) split one agent per device: DQN's seeds
    # share their update count and buffer position, and branch on them.
    assert found["sweep_param_diff"] < 1e-6 and found["sweep_rates_differ"] > 1e-4
    # Data parallel: 4 devices averaging gradients of quarter batches take the step one device
    # takes on the whole batch (parameters moved by ~1e-2; they agree to float rounding).
    assert found["data_moved"] > 1e-3 and found["data_grad_diff"] < 1e-6
    assert found["data_replicas_equal"]
    assert found["data_param_shape"] == [4, 2, 16] and found["data_updates"] == 6


@pytest.mark.slow
@pytest.mark.parametrize(
    "case, message",
    [
        ("seeds", "--num-seeds 3 does not split across 4"),
        ("envs", "--num-envs 6 does not split across 4"),
        ("gpu", "JAX sees no GPU"),
    ],
)
def test_cli_exits_2_on_bad_device_counts(four_devices, case, message):
    found, run_dir = four_devices
    code, stderr = found[f"refused_{case}"]
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], stderr
    assert not (run_dir / case).exists()


@pytest.mark.slow
def test_cli_trains_data_parallel_over_devices(four_devices):
    found, run_dir = four_devices
    code, stdout, stderr = found["data_run"]
    assert code == 0, stderr
    assert "devices: 4 x cpu (data-parallel)" in stdout
    summary = json.loads((run_dir / "data" / "summary.json").read_text())
    assert summary["num_devices"] == 4 and summary["total_env_steps"] == 2 * 384
    # Evaluation and loading read the 4 replicas' run on this process's one device.
    evaluated = run_cli("eval", run_dir / "data", "--episodes", "2")
    assert evaluated.code == 0 and "over 4 episodes" in evaluated.stdout, evaluated.stderr
    assert purerl.load(run_dir / "data")([0.0, 0.0, 0.05, 0.0]) in (0, 1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.long
def test_two_processes_train_one_data_parallel_agent_and_agree():
    address = f"localhost:{free_port()}"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_NUM_CPU_DEVICES": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "tests/parallel/check_distributed.py", address, str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )  # fmt: skip
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=900) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-3000:]
    lines = [out.strip().splitlines()[-1] for out, _ in outputs]
    assert lines[0].startswith("devices=2 process=0") and lines[1].startswith("devices=2 process=1")
    assert lines[0].split("digest=")[1] == lines[1].split("digest=")[1]


@pytest.mark.slow
def test_a_recurrent_agent_trains_data_parallel_and_evaluates_on_one_device(tmp_path):
    # Each device carries the memory of its own environments from a shared initial state.
    proc = run_python(
        "-m", "purerl", "train", "ppo", "--env", "MemoryChain-bsuite", "--network", "gru",
        "--rnn-size", "8", "--hidden-sizes", "8", "--num-envs", "8", "--rollout-len", "12",
        "--total-timesteps", "384", "--num-devices", "2", "--parallel", "data",
        "--run-dir", str(tmp_path / "run"), "--no-progress", devices=2,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "devices: 2 x cpu (data-parallel)" in proc.stdout
    evaluated = run_cli("eval", tmp_path / "run", "--episodes", "4")
    assert evaluated.code == 0 and "over 4 episodes" in evaluated.stdout, evaluated.stderr
