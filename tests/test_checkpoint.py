"""Checkpoints: exact resume, retention, and clear errors that never touch what exists."""

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from purerl import checkpoint
from purerl.algos.dqn import make_dqn
from purerl.algos.ppo import make_ppo
from purerl.cli import Experiment, run_experiment
from purerl.train import RunOptions
from tests.algos.test_dqn import TINY as DQN_TINY
from tests.algos.test_ppo import TINY as PPO_TINY
from tests.algos.test_ppo import leaves_equal

BUILD = {"ppo": make_ppo, "dqn": make_dqn}


class StopAfter:
    """Stands in for ``StopOnSignal``: asks to stop after ``chunks`` chunks."""

    def __init__(self, chunks: int):
        self.left = chunks
        self.signum = 2

    def requested(self) -> bool:
        self.left -= 1
        return self.left == 0


def run(algo_name, cfg, run_dir, stop=None, resume=False, **options):
    options = RunOptions(run_dir=str(run_dir), progress=False, updates_per_chunk=1, **options)
    exp = Experiment(cfg, options, resume=str(run_dir) if resume else None)
    return run_experiment(algo_name, exp, BUILD[algo_name], stop)


def metric_rows(run_dir):
    rows = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    for row in rows:
        del row["wall_time_s"]
    return rows


def tree_digest(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    "algo_name, cfg",
    [("ppo", PPO_TINY), ("dqn", dataclasses.replace(DQN_TINY, num_seeds=2))],
)
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, algo_name, cfg):
    whole = run(algo_name, cfg, tmp_path / "whole")
    stopped = run(algo_name, cfg, tmp_path / "cut", stop=StopAfter(3))
    assert stopped.interrupted and stopped.summary["num_updates"] == 3
    resumed = run(algo_name, cfg, tmp_path / "cut", resume=True)
    assert not resumed.interrupted and resumed.summary["resumed_from_update"] == 3
    assert leaves_equal(whole.agents, resumed.agents)
    assert metric_rows(tmp_path / "whole") == metric_rows(tmp_path / "cut")
    for key in ["per_seed_final_return", "num_updates", "total_env_steps"]:
        assert whole.summary[key] == resumed.summary[key]


def test_resume_drops_metric_rows_written_after_the_last_checkpoint(tmp_path):
    # Checkpoints every 4 updates; stopping after update 5 saves at 5 too, so emulate a kill
    # after update 5 by deleting that checkpoint: rows 5 must go, and the resumed run equals
    # an uninterrupted one.
    whole = run("ppo", PPO_TINY, tmp_path / "whole")
    run("ppo", PPO_TINY, tmp_path / "cut", stop=StopAfter(5), checkpoint_every=4)
    shutil.rmtree(tmp_path / "cut" / "checkpoints" / "5")
    with open(tmp_path / "cut" / "metrics.jsonl", "a") as f:
        f.write('{"update": 6, "trunc')  # a row cut off by the kill
    resumed = run("ppo", PPO_TINY, tmp_path / "cut", resume=True, checkpoint_every=4)
    assert resumed.summary["resumed_from_update"] == 4
    assert metric_rows(tmp_path / "whole") == metric_rows(tmp_path / "cut")
    assert leaves_equal(whole.agents.state.params, resumed.agents.state.params)


def test_keeps_the_latest_and_the_best(tmp_path):
    run("ppo", PPO_TINY, tmp_path / "run", keep_checkpoints=2, keep_best=1)
    steps = checkpoint.available_steps(tmp_path / "run")
    assert steps[-2:] == [5, 6] and len(steps) in (2, 3)
    best = checkpoint.resolve_step(tmp_path / "run", "best")
    assert best in steps
    records = {
        s: json.loads(
            (tmp_path / "run" / "checkpoints" / str(s) / "record" / "metadata").read_text()
        )
        for s in steps
        if (tmp_path / "run" / "checkpoints" / str(s) / "record" / "metadata").exists()
    }
    scored = {s: r["mean_return"] for s, r in records.items() if r["mean_return"] is not None}
    if scored:
        assert scored[best] == max(scored.values())


def test_dqn_without_buffer_in_checkpoints_resumes_with_an_empty_buffer(tmp_path):
    cfg = DQN_TINY
    run("dqn", cfg, tmp_path / "run", stop=StopAfter(3), checkpoint_buffer=False)
    resumed = run("dqn", cfg, tmp_path / "run", resume=True, checkpoint_buffer=False)
    assert resumed.summary["num_updates"] == cfg.num_updates
    latest = checkpoint.resolve_step(tmp_path / "run", "latest")
    saved = tmp_path / "run" / "checkpoints" / str(latest) / "record" / "metadata"
    assert json.loads(saved.read_text())["transient"] == ["buffer"]


def test_errors_name_the_problem_and_leave_checkpoints_alone(tmp_path):
    fresh = run("ppo", PPO_TINY, tmp_path / "run")
    assert fresh.summary["num_updates"] == 6
    before = tree_digest(tmp_path / "run")
    with pytest.raises(checkpoint.CheckpointError, match="does not exist"):
        run("ppo", PPO_TINY, tmp_path / "missing", resume=True)
    other = dataclasses.replace(PPO_TINY, hidden_sizes=(8,))
    with pytest.raises(checkpoint.CheckpointError, match="hidden_sizes"):
        run("ppo", other, tmp_path / "run", resume=True)
    with pytest.raises(checkpoint.CheckpointError, match="written by ppo, not dqn"):
        run("dqn", DQN_TINY, tmp_path / "run", resume=True)
    assert tree_digest(tmp_path / "run") == before
