"""DQN learning run with a fixed budget (run alone with ``pytest -m learning``).

Observed on the 2-core development CPU (BENCHMARKS.md): the CartPole-v1 preset (PureJaxRL's
settings) reaches 490.3 +- 0.8 over these 2 vmapped seeds (490.7 +- 6.3 over 4) in 5e5 steps
per seed; the threshold is 400.
"""

import pytest

from tests.helpers import learn


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.learning
def test_cartpole_reaches_400_within_500k_steps(tmp_path):
    summary = learn(
        tmp_path / "run", "dqn", "--env", "CartPole-v1", "--num-seeds", "2",
        "--total-timesteps", "500000",
    )  # fmt: skip
    assert summary.env_steps_per_seed <= 500_000
    assert summary.final_mean_return >= 400, summary.per_seed_final_return
