"""PPO learning runs with fixed budgets (run alone with ``pytest -m learning``).

Observed on the 2-core development CPU (BENCHMARKS.md): CartPole-v1 with the preset reaches
500.0 on 8 of 8 seeds in 5e5 steps; Pendulum-v1 reaches -260.8 +- 37.2 (seeds 0 and 1) in 4e5
steps, against about -1200 for the first, near-random update.
"""

import pytest

from tests.helpers import learn


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.learning
def test_cartpole_reaches_475_within_500k_steps(cartpole_run):
    # The session's trained CartPole run: the preset, 4 vmapped seeds, 5e5 steps each.
    summary = cartpole_run.summary
    assert summary.num_seeds == 4 and summary.env_steps_per_seed <= 500_000
    assert summary.final_mean_return >= 475, summary.per_seed_final_return


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.learning
def test_pendulum_improves_clearly_over_random_within_400k_steps(tmp_path):
    summary = learn(
        tmp_path / "run", "ppo", "--env", "Pendulum-v1", "--num-seeds", "2",
        "--total-timesteps", "400000",
    )  # fmt: skip
    assert summary.final_mean_return > -500, summary.per_seed_final_return
