"""``--init-from RUN[:UPDATE]``: a new run starts from another run's parameters."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purerl
from purerl.run.init_from import split_source
from tests.helpers import run_cli

TINY = ["--num-envs", "4", "--rollout-len", "16", "--num-minibatches", "2", "--num-epochs", "1",
        "--hidden-sizes", "16", "16", "--no-progress"]  # fmt: skip


def test_sources_name_a_checkpoint_or_take_the_newest(tmp_path):
    assert split_source("runs/a") == (tmp_path.__class__("runs/a"), "latest")
    assert split_source("runs/a:12")[1] == "12" and split_source("runs/a:best")[1] == "best"
    assert split_source("C:/runs/a")[1] == "latest"


@pytest.mark.slow
def test_parameters_are_copied_to_every_seed_and_mismatches_are_one_line(tmp_path):
    source = tmp_path / "source"
    assert run_cli("train", "ppo", *TINY, "--total-timesteps", "128", "--run-dir", source).code == 0
    trained = purerl.load(source)
    result = purerl.train("ppo", num_envs=4, rollout_len=16, num_minibatches=2, num_epochs=1,
                          hidden_sizes=(16, 16), total_timesteps=64, num_seeds=2,
                          init_from=str(source), lr=1e-12)  # fmt: skip
    # With a learning rate of 1e-12 the copied parameters stay as they were, in both seeds.
    theirs = jax.tree.leaves(trained.state.params)
    for mine in (result.policy(seed_index=i).state.params for i in range(2)):
        for a, b in zip(jax.tree.leaves(mine), theirs, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-6)

    other = tmp_path / "other"
    wrong = run_cli("train", "ppo", *TINY, "--env", "Acrobot-v1", "--total-timesteps", "64",
                    "--init-from", source, "--run-dir", other)  # fmt: skip
    assert wrong.code == 2 and len(wrong.error_lines) == 1
    assert "is (4, 16) there and (6, 16) here" in wrong.stderr
    assert not other.exists()
    algo = run_cli(
        "train",
        "dqn",
        "--total-timesteps",
        "1000",
        "--learning-starts",
        "100",
        "--init-from",
        source,
    )
    assert algo.code == 2 and "is a ppo run" in algo.stderr


@pytest.mark.slow
@pytest.mark.long
def test_a_trained_cartpole_run_is_fine_tuned_far_past_a_fresh_one(cartpole_run):
    # The session's README run (PPO's CartPole-v1 preset trained to 475 or more) is the source.
    tuned = purerl.train("ppo", total_timesteps=8192, init_from=str(cartpole_run.run_dir))
    fresh = purerl.train("ppo", total_timesteps=8192)
    assert tuned.summary.final_mean_return > 300, tuned.summary.final_mean_return
    assert fresh.summary.final_mean_return < 100, fresh.summary.final_mean_return
