import math

import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.distributions import Categorical, DiagGaussian


def test_categorical_log_prob_and_entropy_match_numpy():
    logits = np.array([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]], np.float32)
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    dist = Categorical(jnp.asarray(logits))
    np.testing.assert_allclose(
        dist.log_prob(jnp.array([1, 2])), np.log([p[0, 1], p[1, 2]]), rtol=1e-6
    )
    np.testing.assert_allclose(dist.entropy(), -(p * np.log(p)).sum(-1), rtol=1e-6)
    np.testing.assert_array_equal(dist.mode(), [1, 0])


def test_categorical_samples_follow_the_probabilities():
    dist = Categorical(jnp.log(jnp.array([0.2, 0.8])))
    draws = jax.vmap(dist.sample)(jax.random.split(jax.random.key(0), 4000))
    assert draws.dtype == jnp.int32
    assert abs(float(draws.mean()) - 0.8) < 0.03


def test_gaussian_log_prob_and_entropy_match_closed_form():
    mean = np.array([[0.5, -1.0]], np.float32)
    log_std = np.array([0.3, -0.2], np.float32)
    action = np.array([[1.0, 0.0]], np.float32)
    std = np.exp(log_std)
    ref = np.sum(
        -0.5 * ((action - mean) / std) ** 2 - np.log(std) - 0.5 * math.log(2 * math.pi), -1
    )
    dist = DiagGaussian(jnp.asarray(mean), jnp.asarray(log_std))
    np.testing.assert_allclose(dist.log_prob(jnp.asarray(action)), ref, rtol=1e-6)
    np.testing.assert_allclose(
        dist.entropy(), [np.sum(np.log(std) + 0.5 * math.log(2 * math.pi * math.e))], rtol=1e-6
    )


def test_gaussian_samples_have_the_right_moments():
    dist = DiagGaussian(jnp.array([1.0, -2.0]), jnp.log(jnp.array([0.5, 2.0])))
    draws = jax.vmap(dist.sample)(jax.random.split(jax.random.key(1), 5000))
    np.testing.assert_allclose(draws.mean(0), [1.0, -2.0], atol=0.1)
    np.testing.assert_allclose(draws.std(0), [0.5, 2.0], rtol=0.05)


def test_the_policy_gaussian_works_in_units_of_the_action_range():
    from purerl.core.nets import PolicyHead
    from purerl.envs.base import Box

    features = jax.random.normal(jax.random.key(0), (5, 8))
    unit = PolicyHead(Box((-1.0, -1.0), (1.0, 1.0), (2,)))
    params = unit.init(jax.random.key(1), features)
    params["params"]["log_std"] = jnp.array([0.3, -0.2])
    raw = unit.apply(params, features)
    # [-1, 1]: the network's output is the mean itself, bit for bit.
    dense = params["params"]["Dense_0"]
    np.testing.assert_array_equal(raw.mean, features @ dense["kernel"] + dense["bias"])
    np.testing.assert_array_equal(raw.log_std, params["params"]["log_std"])
    # [-2, 2] x [0, 4]: the same parameters give the mean and std in the wider, shifted range.
    wide = PolicyHead(Box((-2.0, 0.0), (2.0, 4.0), (2,))).apply(params, features)
    np.testing.assert_allclose(wide.mean, np.asarray(raw.mean) * 2 + [0.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(np.exp(wide.log_std), 2 * np.exp([0.3, -0.2]), rtol=1e-6)
    # An unbounded dimension keeps the raw output.
    free = PolicyHead(Box((-math.inf, -2.0), (math.inf, 2.0), (2,))).apply(params, features)
    np.testing.assert_array_equal(free.mean[:, 0], raw.mean[:, 0])
    np.testing.assert_allclose(free.mean[:, 1], 2 * np.asarray(raw.mean[:, 1]), rtol=1e-6)
