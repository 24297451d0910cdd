"""PPO and PQN with recurrent networks: the update replays exactly what the rollout saw, and bad
memory settings are refused in one line."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from purerl import algos
from purerl.algos.onpolicy import acting
from purerl.algos.ppo import sample, state_value
from purerl.algos.pqn import greedy_value
from purerl.config import ConfigError
from purerl.core.memory import Recurrent
from purerl.core.nets import make_actor_critic, make_q_network
from purerl.core.ops.sgd import split_sequences
from purerl.core.rollout import PolicyStep, collect
from tests.helpers import one_error_line, run_cli

STEPS = 40


def recurrent_smoke(name: str, network: str, **changes):
    spec = algos.get(name)
    changes = {"network": network, "rnn_size": 8, **changes}
    return spec, dataclasses.replace(spec.smoke, **changes)


@pytest.mark.parametrize("length", [STEPS, 8])
@pytest.mark.parametrize("network", ["gru", "lstm"])
def test_ppo_replays_each_sequence_from_its_recorded_memory(network, length):
    """Cut into sequences and replayed from the memory recorded at each one's start, the
    rollout gives back the log-probabilities and values the policy had as it acted: episode
    starts inside a sequence reset the cell as they did in the rollout."""
    spec, cfg = recurrent_smoke("ppo", network, env="CartPole-v1", rollout_len=STEPS)
    env, algo = spec.make(cfg)
    state = algo.init(jax.random.key(0))
    net = Recurrent(
        make_actor_critic(
            env.spec, cfg.hidden_sizes, cfg.activation, network=network, rnn_size=cfg.rnn_size
        ),
        state_value,
        network,
        cfg.rnn_size,
    )
    policy = acting(net, state.params, sample)

    @jax.jit
    def replay(state, key):
        rollout = collect(
            env, env.default_params, policy, state.env_state, state.obs, key, STEPS, state.memory
        )
        traj = rollout.transitions
        memories = rollout.memories
        seqs = split_sequences(traj, memories.hidden, memories.start, length)
        (dist, values), flat = net.evaluate(state.params, seqs)
        return traj, flat, dist.log_prob(flat.action), values

    # Episodes end inside the rollout (CartPole's random policy lasts about 20 steps).
    traj, flat, log_probs, values = replay(state, jax.random.key(1))
    assert (traj.terminated | traj.truncated).sum() >= 2
    np.testing.assert_allclose(log_probs, flat.extras.policy.log_prob, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(values, flat.extras.value, rtol=1e-5, atol=1e-5)


def test_pqn_replays_each_sequence_from_its_recorded_memory():
    spec, cfg = recurrent_smoke("pqn", "lstm", rollout_len=STEPS)
    env, algo = spec.make(cfg)
    state = algo.init(jax.random.key(0))
    net = Recurrent(
        make_q_network(
            env.spec, cfg.hidden_sizes, cfg.activation, layer_norm=True, network="lstm", rnn_size=8
        ),
        greedy_value,
        "lstm",
        8,
    )

    def policy(memory, obs, key):
        hidden, q_values = net.step(state.params, memory.hidden, obs, memory.start)
        return hidden, random_action(q_values, key)

    @jax.jit
    def replay(key):
        rollout = collect(
            env, env.default_params, policy, state.env_state, state.obs, key, STEPS, state.memory
        )
        memories = rollout.memories
        seqs = split_sequences(rollout.transitions, memories.hidden, memories.start, 10)
        q_values, flat = net.evaluate(state.params, seqs)
        return rollout.transitions, flat, q_values

    traj, flat, q_values = replay(jax.random.key(2))
    assert (traj.terminated | traj.truncated).sum() >= 2
    np.testing.assert_allclose(q_values, flat.extras, rtol=1e-5, atol=1e-5)


def random_action(q_values, key):
    """A random action, recording the Q-values the policy saw."""

    action = jax.random.randint(key, q_values.shape[:1], 0, q_values.shape[1])
    return PolicyStep(action, q_values)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"bptt_len": 5}, "--bptt-len 5 must divide --rollout-len 16"),
        ({"num_minibatches": 8}, "--num-minibatches 8 does not divide the 4 sequences"),
        ({"rnn_size": 0}, "--rnn-size must lie in"),
    ],
)
def test_memory_settings_that_cannot_run_are_refused(changes, message):
    with pytest.raises(ConfigError, match=message):
        recurrent_smoke("ppo", "gru", **changes)


def test_the_command_refuses_a_bptt_len_that_does_not_divide_the_rollout(tmp_path):
    result = run_cli(
        "train", "pqn", "--network", "lstm", "--rollout-len", "16", "--bptt-len", "3",
        "--run-dir", tmp_path / "run",
    )  # fmt: skip
    one_error_line(result, "--bptt-len 3 must divide --rollout-len 16")
    assert not (tmp_path / "run").exists()
