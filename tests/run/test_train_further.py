"""``purerl train --resume RUN --total-timesteps N``: a run, finished or not, trains further."""

from __future__ import annotations

import json

import numpy as np
import pytest

from purerl.run import rundir
from tests.helpers import run_cli

TINY = ["--num-envs", "4", "--rollout-len", "16", "--num-minibatches", "2", "--num-epochs", "1"]


@pytest.mark.slow
def test_a_finished_run_trains_further_with_schedules_on_the_new_budget(tmp_path):
    run = tmp_path / "run"
    first = run_cli("train", "ppo", *TINY, "--total-timesteps", "256", "--run-dir", str(run),
                    "--no-progress")  # fmt: skip
    assert first.code == 0, first.stderr
    assert run_cli("train", "--resume", str(run), "--total-timesteps", "512").code == 0
    rows = [json.loads(line) for line in (run / rundir.METRICS_FILE).read_text().splitlines()]
    assert [row["update"] for row in rows] == list(range(1, 9))
    resume = json.loads((run / rundir.RESUMES_FILE).read_text().splitlines()[-1])
    assert resume["from_update"] == 4 and resume["total_timesteps"] == [256, 512]
    assert rundir.read_config(run).config["total_timesteps"] == 512
    # The annealed learning rate follows the new budget from the resume on: 2.5e-4 (1 - 4/8).
    lr = rows[4]["optim/lr"]
    np.testing.assert_allclose(lr if np.isscalar(lr) else lr[0], 2.5e-4 * (1 - 4 / 8), rtol=1e-5)
    # The checkpoints saved under the old budget still belong to the run.
    assert run_cli("eval", str(run), "--checkpoint", "4", "--episodes", "1").code == 0

    shorter = run_cli("train", "--resume", str(run), "--total-timesteps", "128")
    assert shorter.code == 2 and "fewer than the 8 its checkpoint has done" in shorter.stderr
    other = run_cli("train", "--resume", str(run), "--lr", "1e-3")
    assert other.code == 2 and "--lr cannot change when resuming" in other.stderr
