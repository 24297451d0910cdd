"""The Ray Tune backend: trial reports, rows from them, and a tiny search on a local Ray."""

import csv
import dataclasses
import math
import warnings

import numpy as np
import pytest

from purerl import algos
from purerl.algos.ppo import PPOConfig
from purerl.core.loop import train
from purerl.run.rundir import read_config
from purerl.search.plan import make_plan
from purerl.search.ray_backend import RayOptions, batch_rows, trial_env
from purerl.search.spec import parse_spec
from purerl.search.sweep import ChunkProgress
from purerl.search.trial import report_metrics
from tests.helpers import run_cli
from tests.search.test_cli import TINY
from tests.search.test_spec import spec

NO_RAY = "ray is not installed (pip install 'purerl[search]')"


def tiny_plan():
    parsed = parse_spec({**spec(lr={"grid": [1e-3, 1e-2]}), "num_seeds": 2})
    return make_plan(parsed)


def test_fractional_gpus_cap_jax_memory_and_driver_settings_travel(monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.delenv("XLA_PYTHON_CLIENT_MEM_FRACTION", raising=False)
    env = trial_env(RayOptions(gpus_per_trial=0.125))
    assert env["JAX_PLATFORMS"] == "cpu"
    assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.113"  # 0.9 x 0.125
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in trial_env(RayOptions(gpus_per_trial=1))


def test_reports_carry_the_mean_recent_return_and_per_agent_values():
    progress = ChunkProgress(
        updates_done=3,
        recent_returns=np.array([10.0, np.nan, 30.0, 50.0]),
        diverged=np.array([False, False, False, True]),
        train_time_s=2.0,
        wall_time_s=5.0,
    )
    metrics = report_metrics(progress, num_configs=2, steps_per_update=4 * 64)
    assert metrics["return"] == 20.0  # diverged and episode-less agents left out
    assert metrics["returns"] == [10.0, None, 30.0, None]
    assert metrics["updates"] == 3 and metrics["env_steps"] == 3 * 64
    assert metrics["steps_per_second"] == 3 * 4 * 64 / 2.0
    assert metrics["compile_time_s"] == 3.0


def test_rows_from_finished_stopped_and_failed_trials():
    plan = tiny_plan()
    metrics = {
        "returns": [10.0, 12.0, None, 20.0],
        "diverged": [False, False, False, False],
        "updates": 4,
        "env_steps": 256,
        "steps_per_second": 100.0,
    }
    done = batch_rows(plan, 0, metrics, None)
    assert [r.status for r in done] == ["done", "done"]
    np.testing.assert_array_equal(done[0].result.returns, [10.0, 12.0])
    assert math.isnan(done[1].result.returns[0]) and done[1].result.mean == 20.0
    assert done[0].result.steps_per_second == 50.0
    stopped = batch_rows(plan, 0, {**metrics, "updates": 1, "env_steps": 64}, None)
    assert stopped[0].status == "stopped early at 64 steps" and stopped[0].updates_done == 1
    failed = batch_rows(plan, 0, {}, ValueError("boom\ntraceback ..."))
    assert failed[0].status == "error: ValueError: boom"
    assert np.isnan(failed[0].result.returns).all()


def test_asha_compares_trials_at_equal_environment_steps():
    pytest.importorskip("ray.tune", reason=NO_RAY)
    from purerl.search.ray_backend import make_scheduler

    scheduler = make_scheduler(tiny_plan())
    assert type(scheduler).__name__ == "AsyncHyperBandScheduler"
    assert scheduler._time_attr == "env_steps"


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason=NO_RAY)
    pytest.importorskip("ray.tune", reason=NO_RAY)
    with warnings.catch_warnings():
        # JAX warns on any fork; Ray forks only to exec its own processes.
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
@pytest.mark.long
def test_tiny_search_on_a_local_ray_instance(local_ray, tmp_path):
    search_dir = tmp_path / "search"
    args = [*TINY, "--param", "lr=grid:1e-3,1e-2", "--num-seeds", "2", "--backend", "ray"]
    args += ["--configs-per-trial", "1", "--asha", "--search-dir", str(search_dir)]
    result = run_cli("search", *args)
    assert result.code == 0, result.stderr
    with open(search_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["lr"]) for r in rows] == [1e-3, 1e-2]
    assert [r["batch"] for r in rows] == ["0", "1"]  # one trial per configuration
    for row in rows:
        assert row["status"] == "done" or row["status"].startswith("stopped early at")
        assert math.isfinite(float(row["mean_return"]))
    assert (search_dir / "ray").is_dir() and (search_dir / "best_config.json").exists()
    # A trial that ran to the end reproduces in this process.
    row = next(r for r in rows if r["status"] == "done")
    best = read_config(search_dir / "best_config.json").make_config(PPOConfig, search_dir)
    cfg = dataclasses.replace(best, lr=float(row["lr"]))
    result = train(algos.get("ppo").make(cfg).algo, cfg)
    expected = [float(row["return_seed_0"]), float(row["return_seed_1"])]
    np.testing.assert_allclose(result.final_returns, expected, rtol=1e-5)
