"""No illegal action under an action mask: PPO (feed-forward and recurrent), PQN and DQN, in
training, in evaluation and in a policy from ``purerl.load``, on an environment whose legal
actions change every step and whose observation is a NamedTuple (``tests/envs/masked_cue.py``),
and on Jumanji's Maze with its own masks.

An illegal action costs ``ILLEGAL_REWARD`` (-1000) and ends its episode, and a legal episode
returns 0 to 4: every update's mean return over fewer than 250 episodes, and every evaluation
episode's return, is negative exactly where an illegal action was taken.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import purerl
from purerl.run.evaluate import evaluate, load_agents
from tests.envs.masked_cue import ILLEGAL_REWARD, NUM_ACTIONS, MaskedCue

ON_POLICY = dict(
    num_envs=4, rollout_len=16, num_minibatches=2, num_epochs=2, hidden_sizes=(16,),
    total_timesteps=4 * 16 * 4,
)  # fmt: skip
"""4 updates of 64 steps: 16 episodes each."""
CASES = {
    "ppo": ("ppo", ON_POLICY),
    "ppo-gru": ("ppo", {**ON_POLICY, "network": "gru", "rnn_size": 16}),
    "pqn": ("pqn", ON_POLICY),
    "dqn": (
        "dqn",
        dict(
            num_envs=4,
            rollout_len=8,
            buffer_size=64,
            batch_size=16,
            learning_starts=32,
            hidden_sizes=(16,),
            target_update_period=64,
            total_timesteps=4 * 8 * 4,
        ),
    ),  # fmt: skip
}
"""Each algorithm's sizes: the first update explores (PQN and DQN at epsilon 1), the later ones
learn and act on what they learned."""


class Watched(NamedTuple):
    inner: Any
    mask: jax.Array


class WatchedMaze:
    """Jumanji's Maze-v0 (returns 0 or 1), where an action its last observation's mask forbids
    earns ``ILLEGAL_REWARD`` instead of Jumanji's reward (Maze itself ignores a move into a
    wall): a timestep environment of your own, around Jumanji's."""

    def __init__(self):
        import jumanji

        self.env = jumanji.make("Maze-v0")
        self.action_spec = self.env.action_spec

    def reset(self, key):
        state, timestep = self.env.reset(key)
        return Watched(state, timestep.observation.action_mask), timestep

    def step(self, state, action):
        inner, timestep = self.env.step(state.inner, action)
        reward = jnp.where(state.mask[action], timestep.reward, ILLEGAL_REWARD)
        watched = Watched(inner, timestep.observation.action_mask)
        return watched, timestep.replace(reward=reward.astype(jnp.float32))


def fresh_observations(env: Any, num: int = 256):
    """The first observations of ``num`` episodes (masks of every kind), ``[num, ...]``."""
    keys = jax.vmap(jax.random.key_data)(jax.random.split(jax.random.key(5), num))
    return jax.vmap(lambda k: env.reset(k)[1].observation)(keys)


def assert_legal(obs, actions) -> None:
    actions = np.asarray(actions)
    assert actions.min() >= 0 and actions.max() < NUM_ACTIONS
    assert np.asarray(obs.action_mask)[np.arange(len(actions)), actions].all()


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_no_illegal_action_in_training_evaluation_or_a_loaded_policy(case, tmp_path):
    check_masked_run(MaskedCue, *CASES[case], tmp_path, max_steps=20)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "pqn", "dqn"])
def test_no_illegal_action_on_jumanjis_maze(algo, tmp_path):
    pytest.importorskip("jumanji")
    sizes = {**CASES[algo][1], "total_timesteps": CASES[algo][1]["total_timesteps"] * 2}
    check_masked_run(WatchedMaze, algo, sizes, tmp_path, max_steps=120, updates=8)


def check_masked_run(
    make_env: Any, algo: str, sizes: dict, tmp_path, max_steps: int, updates: int = 4
) -> None:
    """Trains ``algo`` (2 seeds) on ``make_env()`` and checks its training, its evaluation
    (greedy and sampled) and its loaded policy for illegal actions."""
    run_dir = tmp_path / "run"
    result = purerl.train(algo, env=make_env(), run_dir=run_dir, num_seeds=2, **sizes)
    returns = result.history["episode/return"]  # [seeds, updates]; NaN: no episode ended
    assert returns.shape == (2, updates) and not (returns < 0).any(), returns

    run = load_agents(run_dir, "latest", make_env(), False)
    for greedy in (True, False):
        episodes = evaluate(run, 16, seed=1, greedy=greedy, max_steps=max_steps)
        finished = np.asarray(episodes.finished)
        assert finished.any() and (np.asarray(episodes.returns)[finished] >= 0).all()

    policy = purerl.load(run_dir, env=make_env())
    obs = fresh_observations(make_env())
    for greedy in (True, False):
        policy.reset()
        assert_legal(obs, policy(obs, greedy=greedy))
    one = jax.tree.map(lambda x: np.asarray(x[3]), obs)
    assert one.action_mask[int(policy(one))]
