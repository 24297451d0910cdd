"""With --eval-every: the summary reports the last evaluation, --keep-best ranks by evaluations,
and ``checkpoint="best"`` loads the best evaluated policy."""

from __future__ import annotations

import json

import numpy as np
import pytest

import purerl
from purerl.run import rundir
from purerl.run.evaluate import load_agents


@pytest.mark.slow
def test_evaluations_rank_checkpoints_and_end_the_summary(tmp_path):
    run = tmp_path / "run"
    result = purerl.train(
        "ppo", num_envs=4, rollout_len=32, num_minibatches=2, total_timesteps=128 * 12,
        eval_every=3, eval_episodes=4, checkpoint_every=3, keep_checkpoints=1, keep_best=1,
        run_dir=str(run),
    )  # fmt: skip
    rows = [json.loads(line) for line in (run / rundir.METRICS_FILE).read_text().splitlines()]
    evals = {row["update"]: row["eval/return"] for row in rows if row.get("eval/return")}
    assert sorted(evals) == [3, 6, 9, 12]
    summary = rundir.read_summary(run)
    assert summary.final_eval_update == 12
    np.testing.assert_allclose(summary.final_eval_return, evals[12], rtol=1e-6)
    assert result.summary.final_eval_return == summary.final_eval_return
    # Checkpoints carry their evaluation's return; the best one is kept beside the latest.
    best = max(evals, key=evals.get)
    kept = sorted(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())
    assert kept == sorted({best, 12})
    record = json.loads(next((run / "checkpoints" / str(best)).glob("record/metadata")).read_text())
    np.testing.assert_allclose(record["mean_return"], evals[best], rtol=1e-6)
    assert load_agents(run, "best").step == best
    assert np.shape(purerl.load(run, checkpoint="best")(np.zeros(4, np.float32))) == ()
