"""Stopping early: callbacks after every chunk, --stop-at-return and --stop-on-plateau."""

from __future__ import annotations

import json

import numpy as np
import pytest

import purerl
from purerl.core.report import ChunkReport
from purerl.run import rundir
from purerl.run.control import EarlyStop, Report
from tests.helpers import run_cli


def chunk(first: int, returns: list[float], evals: float | None = None) -> ChunkReport:
    """A one-seed chunk whose updates each finished one episode of these returns."""
    metrics = {
        "episode/return": np.asarray([returns], np.float32),
        "episode/count": np.ones((1, len(returns)), np.float32),
    }
    evaluation = None if evals is None else {"eval/return": np.asarray([evals])}
    return ChunkReport(first, metrics, 0.0, 0.0, evaluation)


def test_plateau_counts_reports_without_improvement():
    early = EarlyStop([], num_updates=100, env_steps_per_update=8, stop_on_plateau=2)
    for first, value in enumerate([10.0, 20.0, 19.0]):
        early.write(chunk(first, [value]))
    assert not early.requested()  # recent means 10, 15, 16.3: still improving
    early.write(chunk(3, [0.0]))  # 12.25
    assert not early.requested()
    early.write(chunk(4, [0.0]))  # 9.8: a second report without improvement
    assert early.requested() and "--stop-on-plateau 2" in early.reason


def test_with_evaluations_the_rules_watch_the_evaluation_return():
    early = EarlyStop([], num_updates=100, env_steps_per_update=8, stop_at_return=50.0)
    early.eval_every = 2
    early.write(chunk(0, [80.0]))  # no evaluation in this chunk: the rules wait
    assert not early.requested()
    early.write(chunk(1, [80.0], evals=40.0))
    assert not early.requested()
    early.write(chunk(2, [0.0], evals=60.0))
    assert early.requested() and "evaluation return 60.0" in early.reason


@pytest.mark.slow
def test_a_callback_sees_each_report_and_stops_the_run_on_its_third_call(tmp_path):
    reports: list[Report] = []

    def third(report: Report) -> bool:
        reports.append(report)
        return len(reports) == 3

    result = purerl.train(
        "ppo", num_envs=4, rollout_len=16, num_minibatches=2, num_epochs=1,
        total_timesteps=64 * 10, updates_per_chunk=2, callbacks=[third],
        run_dir=str(tmp_path / "run"),
    )  # fmt: skip
    assert [r.update for r in reports] == [2, 4, 6]
    assert [r.env_steps for r in reports] == [128, 256, 384]
    assert reports[0].num_updates == 10 and reports[0].metrics["loss/policy"].shape == (1, 2)
    assert result.summary.num_updates == 6
    rows = (tmp_path / "run" / rundir.METRICS_FILE).read_text().splitlines()
    assert json.loads(rows[-1])["update"] == 6


@pytest.mark.slow
def test_stop_at_return_ends_the_cartpole_preset_early_and_resumably(tmp_path):
    run = tmp_path / "run"
    result = run_cli("train", "ppo", "--stop-at-return", "150", "--run-dir", str(run),
                     "--no-progress")  # fmt: skip
    assert result.code == 0, result.stderr
    assert "reached --stop-at-return 150" in result.stdout + result.stderr
    rows = (run / rundir.METRICS_FILE).read_text().splitlines()
    assert len(rows) < 976 // 4, len(rows)
    assert rundir.read_summary(run).final_mean_return >= 150
