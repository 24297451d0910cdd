"""The recurrent building blocks against plain NumPy: the cells and their resets, the torso's
scan, sequences cut from a rollout, the memory a rollout carries, and the values it bootstraps
from."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.core.env import Step
from purerl.core.nets import MLP, RecurrentTorso, ResettingCell, initial_hidden
from purerl.core.ops.sgd import split_sequences
from purerl.core.rollout import (
    Memory,
    PolicyStep,
    Rollout,
    collect,
    episode_starts,
    recurrent_rollout_values,
)
from purerl.core.types import EpisodeStats, Transition


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_gru(p, h, x):
    """Flax's GRU (Cho et al. 2014, with the reset gate applied after the hidden matmul)."""
    r = sigmoid(x @ p["ir"]["kernel"] + p["ir"]["bias"] + h @ p["hr"]["kernel"])
    z = sigmoid(x @ p["iz"]["kernel"] + p["iz"]["bias"] + h @ p["hz"]["kernel"])
    n = np.tanh(
        x @ p["in"]["kernel"] + p["in"]["bias"] + r * (h @ p["hn"]["kernel"] + p["hn"]["bias"])
    )
    return (1 - z) * n + z * h


def numpy_lstm(p, c, h, x):
    """Flax's optimised LSTM cell: input, forget, cell and output gates."""
    gate = {
        g: x @ p[f"i{g}"]["kernel"] + h @ p[f"h{g}"]["kernel"] + p[f"h{g}"]["bias"] for g in "ifgo"
    }
    c = sigmoid(gate["f"]) * c + sigmoid(gate["i"]) * np.tanh(gate["g"])
    return c, sigmoid(gate["o"]) * np.tanh(c)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_cell_step_matches_numpy_and_resets_where_episodes_start(kind):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    start = np.array([False, True, False, True])
    hidden = jax.tree.map(
        lambda h: jnp.asarray(rng.normal(size=h.shape), jnp.float32), initial_hidden(kind, 3, 4)
    )
    cell = ResettingCell(kind, 3)
    params = cell.init(jax.random.key(1), hidden, (x, start))["params"]["cell"]
    params = jax.tree.map(np.asarray, params)
    new_hidden, out = cell.apply({"params": {"cell": params}}, hidden, (x, start))
    kept = jax.tree.map(lambda h: np.where(start[:, None], 0.0, np.asarray(h)), hidden)
    if kind == "gru":
        expected = numpy_gru(params, kept, x)
        np.testing.assert_allclose(new_hidden, expected, rtol=1e-5, atol=1e-6)
    else:
        c, h = numpy_lstm(params, kept[0], kept[1], x)
        np.testing.assert_allclose(new_hidden[0], c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(new_hidden[1], h, rtol=1e-5, atol=1e-6)
        expected = h
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_torso_over_a_sequence_equals_step_by_step(kind):
    rng = np.random.default_rng(1)
    steps, batch = 5, 3
    obs = jnp.asarray(rng.normal(size=(steps, batch, 4)), jnp.float32)
    start = jnp.asarray(rng.random((steps, batch)) < 0.3)
    torso = RecurrentTorso(kind, 6, MLP((8,)))
    hidden = initial_hidden(kind, 6, batch)
    params = torso.init(jax.random.key(0), hidden, obs, start)
    final, features = torso.apply(params, hidden, obs, start)
    assert features.shape == (steps * batch, 6)
    h = hidden
    for t in range(steps):
        h, f = torso.apply(params, h, obs[t : t + 1], start[t : t + 1])
        np.testing.assert_allclose(f, features[t * batch : (t + 1) * batch], rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree.leaves(h), jax.tree.leaves(final), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # A start flag makes the past irrelevant: any hidden state gives the same output there.
    ones = jax.tree.map(jnp.ones_like, hidden)
    _, fresh = torso.apply(params, ones, obs[:1], jnp.ones((1, batch), bool))
    _, zeros = torso.apply(params, hidden, obs[:1], jnp.ones((1, batch), bool))
    np.testing.assert_allclose(fresh, zeros, rtol=1e-6)


@pytest.mark.parametrize("length", [1, 2, 6])
def test_split_sequences_matches_a_loop(length):
    rng = np.random.default_rng(2)
    steps, batch = 6, 3
    data = {
        "x": rng.normal(size=(steps, batch, 2)).astype(np.float32),
        "y": rng.normal(size=(steps, batch)).astype(np.float32),
    }
    hidden = rng.normal(size=(steps, batch, 4)).astype(np.float32)
    start = rng.random((steps, batch)) < 0.5
    seqs = split_sequences(
        jax.tree.map(jnp.asarray, data), jnp.asarray(hidden), jnp.asarray(start), length
    )
    i = 0
    for window in range(steps // length):
        for env in range(batch):
            rows = slice(window * length, (window + 1) * length)
            np.testing.assert_array_equal(seqs.data["x"][i], data["x"][rows, env])
            np.testing.assert_array_equal(seqs.data["y"][i], data["y"][rows, env])
            np.testing.assert_array_equal(seqs.start[i], start[rows, env])
            np.testing.assert_array_equal(seqs.hidden[i], hidden[window * length, env])
            i += 1
    assert i == seqs.start.shape[0]


def test_split_sequences_refuses_a_length_that_does_not_tile():
    with pytest.raises(ValueError, match="do not tile"):
        split_sequences({}, jnp.zeros((6, 2, 1)), jnp.zeros((6, 2), bool), 4)


def fake_step(terminated, truncated, valid):
    zeros = np.zeros(len(valid), np.float32)
    episode = EpisodeStats(np.zeros(len(valid), bool), zeros, zeros.astype(np.int32))
    return Step(
        zeros,
        zeros,
        np.asarray(terminated),
        np.asarray(truncated),
        zeros,
        np.asarray(valid),
        episode,
    )


def test_episode_starts_for_both_reset_conventions():
    out = fake_step([True, False, False], [False, True, False], [True, True, False])
    np.testing.assert_array_equal(episode_starts(out, "same_step"), [True, True, False])
    np.testing.assert_array_equal(episode_starts(out, "next_step"), [False, False, True])


@pytest.mark.parametrize("autoreset", ["same_step", "next_step"])
def test_recurrent_rollout_values_match_a_loop(autoreset):
    rng = np.random.default_rng(3)
    steps, batch, width = 5, 4, 3
    hidden = rng.normal(size=(steps, batch, width)).astype(np.float32)
    start = rng.random((steps, batch)) < 0.3
    last_hidden = rng.normal(size=(batch, width)).astype(np.float32)
    last_start = rng.random(batch) < 0.5
    done = rng.random((steps, batch)) < 0.3
    terminated = done & (rng.random((steps, batch)) < 0.5)
    obs = rng.normal(size=(steps, batch, 2)).astype(np.float32)
    final_obs = rng.normal(size=(steps, batch, 2)).astype(np.float32)
    next_obs = rng.normal(size=(batch, 2)).astype(np.float32)
    values = rng.normal(size=(steps, batch)).astype(np.float32)

    def value(h, o, s):  # any function of the state, the observation and the start flag
        return np.where(s, 0.0, h.sum(-1)) + o @ np.array([1.0, -2.0], np.float32) + 0.5 * s

    traj = Transition(
        obs, np.zeros((steps, batch), np.int32), values, terminated, done & ~terminated,
        final_obs, np.ones((steps, batch), bool), None, (),
    )  # fmt: skip
    rollout = Rollout(None, next_obs, traj, Memory(last_hidden, last_start), Memory(hidden, start))
    result = recurrent_rollout_values(
        lambda h, o, s: jnp.asarray(value(np.asarray(h), np.asarray(o), np.asarray(s))),
        rollout,
        jnp.asarray(values),
        autoreset,
    )
    expected = np.empty((steps, batch), np.float32)
    for t in range(steps):
        for b in range(batch):
            after = hidden[t + 1, b] if t + 1 < steps else last_hidden[b]
            if autoreset == "same_step" and done[t, b]:
                expected[t, b] = value(after[None], final_obs[t, b][None], np.array([False]))[0]
            elif t + 1 < steps:
                expected[t, b] = values[t + 1, b]
            else:
                expected[t, b] = value(
                    last_hidden[b][None], next_obs[b][None], last_start[b][None]
                )[0]
    np.testing.assert_allclose(result.next_values, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(result.values, values)


def test_collect_carries_memory_and_resets_it_where_episodes_start():
    """A policy whose memory counts the steps of the current episode: the count it reads at
    each step is the step's index in its episode, from the environment's own episode ends."""
    env = envs.make("CartPole-v1", num_envs=3)
    params = env.default_params
    env_state, obs = env.reset(jax.random.key(0), params)

    def act(memory, obs, key):
        count = jnp.where(memory.start, 0, memory.hidden) + 1
        action = jax.random.randint(key, (3,), 0, 2)
        return count, PolicyStep(action, count)

    memory = Memory(jnp.full(3, 7, jnp.int32), jnp.ones(3, bool))
    rollout = jax.jit(collect, static_argnums=(0, 2, 6))(
        env, params, act, env_state, obs, jax.random.key(1), 200, memory
    )
    traj = jax.device_get(rollout.transitions)
    ended = traj.terminated | traj.truncated
    assert ended.sum() >= 3
    expected = np.zeros(3, np.int64)
    for t in range(200):
        expected = expected + 1
        np.testing.assert_array_equal(traj.extras[t], expected)
        np.testing.assert_array_equal(rollout.memories.start[t], t == 0 or ended[t - 1])
        expected = np.where(ended[t], 0, expected)
    np.testing.assert_array_equal(rollout.memory.start, ended[-1])
    np.testing.assert_array_equal(rollout.memory.hidden, traj.extras[-1])
