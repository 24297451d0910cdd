"""DQN learning run with a fixed budget (run alone with ``pytest -m learning``).

Observed on the 2-core development CPU (BENCHMARKS.md): the CartPole-v1 preset (PureJaxRL's
settings) reaches 490.3 +- 0.8 over these 2 vmapped seeds (490.7 +- 6.3 over 4) in 5e5 steps
per seed; the threshold is 400.
"""

import pytest

import purerl


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.learning
def test_cartpole_reaches_400_within_500k_steps():
    result = purerl.train("dqn", env="CartPole-v1", num_seeds=2, total_timesteps=500_000)
    assert result.summary.env_steps_per_seed <= 500_000
    assert result.summary.final_mean_return >= 400, result.summary.per_seed_final_return
