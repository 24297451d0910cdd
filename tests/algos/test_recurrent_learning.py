"""Memory, learned: on MemoryChain-bsuite (a context shown at the start of an episode decides the
reward at its end, 5 steps later) PPO's GRU preset recalls it and an MLP cannot (run alone with
``pytest -m learning``).

Observed on the tuning seeds 100-101 at 50k steps: every GRU seed at 1.0 from about 13k steps
on, the MLP at -0.1 +- 0.1 (chance is 0).
"""

import re

import gymnax
import jax
import numpy as np
import pytest

import purerl
from tests.helpers import learn, run_cli


def play(policy, forget: bool, episodes: int = 64) -> float:
    """Mean return of ``episodes`` MemoryChain episodes played in Python by a loaded policy,
    its memory reset at each episode's start, or at every step when ``forget``."""
    env, params = gymnax.make("MemoryChain-bsuite")
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    keys = jax.random.split(jax.random.key(7), episodes)
    obs, state = reset(keys, params)
    policy.reset()
    total = np.zeros(episodes)
    for t in range(params.memory_length + 1):  # every episode lasts memory_length + 1 steps
        if forget:
            policy.reset()
        action = policy(np.asarray(obs))
        keys = jax.random.split(jax.random.key(t), episodes)
        obs, state, reward, *_ = step(keys, state, action, params)
        total += np.asarray(reward)
    return float(total.mean())


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.learning
def test_a_gru_recalls_what_an_mlp_cannot_and_its_loaded_policy_remembers(tmp_path):
    args = ["--env", "MemoryChain-bsuite", "--num-seeds", "2"]
    gru = learn(tmp_path / "gru", "ppo", *args)
    mlp = learn(tmp_path / "mlp", "ppo", *args, "--network", "mlp")
    assert min(gru.per_seed_final_return) >= 0.9, gru.per_seed_final_return
    assert max(mlp.per_seed_final_return) <= 0.3, mlp.per_seed_final_return
    policy = purerl.load(tmp_path / "gru")
    assert play(policy, forget=False) >= 0.9
    assert play(policy, forget=True) <= 0.5  # without its memory it guesses
    # `purerl eval` plays fresh episodes with the memory carried too.
    result = run_cli("eval", tmp_path / "gru", "--episodes", "32")
    assert result.code == 0, result.stderr
    assert float(re.search(r"mean return (\S+)", result.stdout).group(1)) >= 0.9
