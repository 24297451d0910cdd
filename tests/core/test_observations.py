"""Structured observations and action masks (``core/observations.py``), the distributions that
honour masks, and the networks that encode structures and mask their outputs."""

import dataclasses
from typing import NamedTuple

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.core.distributions import Categorical, EpsilonGreedy, epsilon_greedy
from purerl.core.env import Discrete, EnvSpec, InvalidEnvError
from purerl.core.nets import make_actor_critic, make_q_network
from purerl.core.observations import (
    ILLEGAL,
    allowed,
    encoder_leaves,
    legal,
    mask_values,
    spec_fields,
    structure_of,
)

MASK = np.array([[True, False, True, False], [False, False, False, False]])
"""Two rows: actions 0 and 2 legal; none legal (every action then counts as legal)."""


class Obs(NamedTuple):
    pos: jax.Array
    grid: jax.Array
    action_mask: jax.Array


@flax.struct.dataclass
class Pytree:
    x: jax.Array


@dataclasses.dataclass
class Plain:
    x: jax.Array


def example(batch: tuple = ()) -> Obs:
    return Obs(jnp.zeros(batch + (2,)), jnp.zeros(batch + (6, 6, 3)), jnp.ones(batch + (4,), bool))


def test_structures_are_described_leaf_by_leaf_with_their_mask():
    structure = structure_of(example(), 4, "env")
    assert structure.masked and structure.names == (".pos", ".grid", ".action_mask")
    assert structure.describe() == ".pos 2 float32, .grid 6x6x3 float32, .action_mask 4 bool"
    assert jax.tree.structure(structure.example()) == jax.tree.structure(example())
    as_dict = structure_of({"a": np.zeros(3, np.uint8), "b": Pytree(np.zeros(()))}, 4, "env")
    assert not as_dict.masked and as_dict.names == ("['a']", "['b'].x")
    assert spec_fields(np.zeros((3,), np.float32), 4, "env") == {
        "obs_shape": (3,),
        "obs_dtype": "float32",
    }


@pytest.mark.parametrize(
    "obs, num_actions, message",
    [
        ({"a": Plain(np.zeros(2))}, 4, "field ['a'] as Plain, which purerl cannot encode"),
        ({"k": jax.random.key(0)}, 4, "as an array of key<fry>, which purerl cannot encode"),
        ({"a": np.array(["x"])}, 4, "as an array of <U1"),
        (example(), 3, "an action_mask of shape (4,); a mask needs shape (3,)"),
        (example(), None, "a mask needs a discrete action space"),
        ({}, 4, "an empty observation structure"),
    ],
)
def test_what_cannot_be_encoded_is_one_line(obs, num_actions, message):
    with pytest.raises(InvalidEnvError, match=None) as err:
        structure_of(obs, num_actions, "env.reset")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_encoder_reads_every_leaf_but_the_mask():
    assert [name for name, _ in encoder_leaves(example((5,)))] == [".pos", ".grid"]
    # Only a top-level field is the mask; one deeper down is an input like any other.
    nested = {"inner": {"action_mask": np.ones(2)}, "action_mask": np.ones(2, bool)}
    assert [name for name, _ in encoder_leaves(nested)] == ["['inner']['action_mask']"]


def test_rows_without_a_legal_action_count_every_action_as_legal():
    np.testing.assert_array_equal(legal(MASK), [[True, False, True, False], [True] * 4])
    values = mask_values(jnp.arange(8.0).reshape(2, 4), MASK)
    np.testing.assert_array_equal(values[0], [0.0, ILLEGAL, 2.0, ILLEGAL])
    np.testing.assert_array_equal(values[1], [4.0, 5.0, 6.0, 7.0])
    np.testing.assert_array_equal(allowed(values), legal(MASK))


def test_masked_categoricals_renormalise_over_legal_actions_without_nan():
    logits = jnp.array([[1.0, 2.0, 0.5, -1.0], [0.0, 1.0, 2.0, 3.0]])
    dist = Categorical(mask_values(logits, MASK))
    # Row 0: softmax over actions 0 and 2 alone: p = e^1 / (e^1 + e^0.5), 1 - p.
    p = np.exp(1.0) / (np.exp(1.0) + np.exp(0.5))
    np.testing.assert_allclose(np.exp(dist.log_prob(jnp.array([0, 0]))[0]), p, rtol=1e-6)
    np.testing.assert_allclose(dist.entropy()[0], -(p * np.log(p) + (1 - p) * np.log(1 - p)))
    # Row 1 has no legal action: the plain softmax.
    np.testing.assert_allclose(dist.entropy()[1], Categorical(logits).entropy()[1], rtol=1e-6)
    np.testing.assert_array_equal(dist.mode(), [0, 3])

    def objective(raw):
        masked = Categorical(mask_values(raw, MASK))
        return (masked.log_prob(jnp.array([2, 1])) + masked.entropy()).sum()

    grad = jax.grad(objective)(logits)
    assert np.isfinite(grad).all() and (grad[0, 1] == 0) and (grad[0, 3] == 0)
    draws = jax.vmap(dist.sample)(jax.random.split(jax.random.key(0), 2000))
    assert set(np.unique(draws[:, 0])) == {0, 2} and set(np.unique(draws[:, 1])) == {0, 1, 2, 3}


def test_epsilon_greedy_explores_only_legal_actions_and_is_unchanged_without_a_mask():
    q_values = mask_values(jnp.array([[1.0, 5.0, 0.0, 9.0]] * 2), MASK)
    policy = epsilon_greedy(q_values, 1.0, masked=True)
    np.testing.assert_array_equal(policy.legal, legal(MASK))
    draws = np.asarray(jax.vmap(policy.sample)(jax.random.split(jax.random.key(1), 3000)))
    counts = np.bincount(draws[:, 0], minlength=4)
    assert counts[1] == counts[3] == 0 and abs(counts[0] / 3000 - 0.5) < 0.04
    assert abs(np.bincount(draws[:, 1], minlength=4) / 3000 - 0.25).max() < 0.04
    np.testing.assert_array_equal(epsilon_greedy(q_values, 0.0, True).mode(), [0, 3])
    # Without a mask: the draws of randint, as before masks existed.
    key = jax.random.key(2)
    explore_key, random_key = jax.random.split(key)
    plain = jnp.array([[1.0, 5.0, 0.0, 9.0]] * 5)
    expected = jnp.where(
        jax.random.uniform(explore_key, (5,)) < 0.5,
        jax.random.randint(random_key, (5,), 0, 4, jnp.int32),
        3,
    )
    np.testing.assert_array_equal(EpsilonGreedy(plain, 0.5).sample(key), expected)
    assert epsilon_greedy(plain, 0.5, masked=False).legal is None


def masked_spec(network_obs: Obs) -> EnvSpec:
    one = jax.tree.map(lambda x: x[0], network_obs)
    return EnvSpec("toy", action_space=Discrete(4), num_envs=2, **spec_fields(one, 4, "toy"))


def test_networks_mask_their_outputs_and_ignore_the_mask_as_input():
    obs = example((2,))._replace(
        pos=jnp.array([[1.0, -1.0], [0.5, 2.0]]), action_mask=jnp.asarray(MASK)
    )
    spec = masked_spec(obs)
    actor_critic = make_actor_critic(spec, (8,), "tanh")
    params = actor_critic.init(jax.random.key(0), obs)
    assert "GridCNN_0" in params["params"]["actor_torso"]  # the 6x6x3 grid is convolved
    dist, value = actor_critic.apply(params, obs)
    assert (dist.logits[0, 1] == ILLEGAL) and (dist.logits[1] > ILLEGAL).all()
    unmasked = obs._replace(action_mask=jnp.ones((2, 4), bool))
    np.testing.assert_array_equal(actor_critic.apply(params, unmasked)[1], value)
    q_network = make_q_network(spec, (8,), "relu")
    q_values = q_network.apply(q_network.init(jax.random.key(1), obs), obs)
    np.testing.assert_array_equal(allowed(q_values), legal(MASK))


def test_recurrent_networks_mask_each_step():
    obs = example((2,))._replace(action_mask=jnp.asarray(MASK))
    spec = masked_spec(obs)
    network = make_actor_critic(spec, (8,), "tanh", network="gru", rnn_size=8)
    hidden, steps = jnp.zeros((2, 8)), jax.tree.map(lambda x: jnp.stack([x, x, x]), obs)
    start = jnp.ones((3, 2), bool)
    params = network.init(jax.random.key(0), hidden, steps, start)
    _, dist, _ = network.apply(params, hidden, steps, start)
    np.testing.assert_array_equal(dist.logits > ILLEGAL, np.tile(legal(MASK), (3, 1)))


def test_pixels_in_a_structure_go_through_the_nature_cnn():
    obs = {"frames": jnp.zeros((1, 4, 84, 84), jnp.uint8), "speed": jnp.zeros((1,))}
    spec = EnvSpec("toy", action_space=Discrete(3), **spec_fields(
        jax.tree.map(lambda x: x[0], obs), 3, "toy"
    ))  # fmt: skip
    params = jax.eval_shape(make_q_network(spec, (8,), "relu").init, jax.random.key(0), obs)
    assert set(params["params"]["torso"]) == {"NatureCNN_0", "MLP_0"}
