"""PPO learns Snake within a fixed CPU budget (run alone with ``pytest -m learning``)."""

import jax
import pytest

import purerl
from purerl import envs


def random_play_mean_return(env_id: str, num_envs: int = 256, num_steps: int = 256) -> float:
    """Mean return of the episodes uniformly random actions finish."""
    env = envs.make(env_id, num_envs)

    def run(key):
        state, _ = env.reset(key, env.default_params)

        def step(state, key):
            action_key, env_key = jax.random.split(key)
            action = jax.random.randint(action_key, (num_envs,), 0, 4)
            state, out = env.step(env_key, state, action, env.default_params)
            return state, out.episode

        return jax.lax.scan(step, state, jax.random.split(key, num_steps))[1]

    episodes = jax.device_get(jax.jit(run)(jax.random.key(0)))
    return float(episodes.returns[episodes.done].mean())


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.learning
def test_ppo_preset_learns_snake_6x6_within_1m_steps():
    # Observed on the 2-core development CPU (BENCHMARKS.md): seeds 0 and 1 reach 12.8 and 12.9
    # (about 14 food per game) in 1e6 steps, ~70 s with compile; random play scores -0.87.
    result = purerl.train(
        "ppo", preset="Snake-v0", env="Snake-6x6-v0", total_timesteps=1_000_000, num_seeds=2
    )
    random_return = random_play_mean_return("Snake-6x6-v0")
    assert random_return < -0.5
    summary = result.summary
    assert summary.final_mean_return > 8.0, summary.per_seed_final_return
    assert min(summary.per_seed_final_return) > 5.0
