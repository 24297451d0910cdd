import math

import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.distributions import Categorical, DiagGaussian, SquashedGaussian


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
    from purerl.core.env import Box
    from purerl.core.nets import PolicyHead

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


# ---- the tanh-squashed Gaussian (SAC's policy) ------------------------------------------------


def squashed_log_prob_numpy(pre_tanh, mean, log_std, center, half_width):
    """log N(u; mean, std) - sum log(half_width * (1 - tanh(u)^2)), in float64."""
    u, mean, std = (np.asarray(x, np.float64) for x in (pre_tanh, mean, np.exp(log_std)))
    gaussian = -0.5 * ((u - mean) / std) ** 2 - np.log(std) - 0.5 * math.log(2 * math.pi)
    jacobian = np.log(np.asarray(half_width, np.float64) * (1.0 - np.tanh(u) ** 2))
    return np.sum(gaussian - jacobian, axis=-1)


def test_squashed_gaussian_log_prob_by_hand():
    # One dimension, mean 0, std 1, bounds [-2, 2] (half width 2), u = 0: a = 0 and
    # log p = log N(0) - log(2 * (1 - 0)) = -0.5 log(2 pi) - log 2 = -0.9189385 - 0.6931472.
    dist = SquashedGaussian(jnp.zeros((1, 1)), jnp.zeros((1,)), 0.0, 2.0)
    np.testing.assert_allclose(dist.squash(jnp.zeros((1, 1))), [[0.0]])
    np.testing.assert_allclose(
        dist.log_prob_pre_tanh(jnp.zeros((1, 1))), [-0.9189385 - 0.6931472], rtol=1e-6
    )


def test_squashed_gaussian_sample_and_log_prob_match_numpy():
    mean = np.array([[0.3, -1.2], [2.0, 0.1]], np.float32)
    log_std = np.array([[-0.5, 0.4], [0.0, -2.0]], np.float32)
    center, half_width = np.array([1.0, 0.0], np.float32), np.array([2.0, 0.5], np.float32)
    dist = SquashedGaussian(jnp.asarray(mean), jnp.asarray(log_std), center, half_width)
    key = jax.random.key(3)
    action, log_prob = dist.sample_and_log_prob(key)
    # The same draw by hand: u = mean + std * eps with the key's standard normals.
    u = mean + np.exp(log_std) * np.asarray(jax.random.normal(key, mean.shape))
    np.testing.assert_allclose(action, center + half_width * np.tanh(u), rtol=1e-5, atol=1e-6)
    ref = squashed_log_prob_numpy(u, mean, log_std, center, half_width)
    np.testing.assert_allclose(log_prob, ref, rtol=1e-5)
    assert np.all(np.abs(np.asarray(action) - center) <= half_width)


def test_squashed_gaussian_log_prob_stays_finite_far_in_the_tails():
    # 1 - tanh(u)^2 rounds to 0 in float32 beyond |u| ~ 9; the softplus form keeps the exact
    # value: log(1 - tanh(u)^2) = 2 (log 2 - |u| - softplus(-2|u|)) ~ 2 log 2 - 2|u|.
    u = jnp.array([[-20.0], [20.0]])
    dist = SquashedGaussian(u, jnp.zeros((1,)))
    gaussian = -0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(
        dist.log_prob_pre_tanh(u), [gaussian - (2 * math.log(2) - 40.0)] * 2, rtol=1e-6
    )


def test_squashed_gaussian_mode_is_the_squashed_mean_and_gradients_flow():
    dist = SquashedGaussian(jnp.array([[0.5]]), jnp.array([0.0]), 1.0, 3.0)
    np.testing.assert_allclose(dist.mode(), [[1.0 + 3.0 * np.tanh(0.5)]], rtol=1e-6)

    def sampled_action(mean):
        return SquashedGaussian(mean, jnp.array([0.0])).sample(jax.random.key(0)).sum()

    assert float(jax.grad(sampled_action)(jnp.array([[0.5]]))[0, 0]) > 0  # reparameterised


def test_squashed_gaussian_jit_equals_no_jit():
    dist = SquashedGaussian(jnp.array([[0.2, -0.4]]), jnp.array([-0.3, 0.1]), 0.0, 2.0)
    with jax.disable_jit():
        eager = dist.sample_and_log_prob(jax.random.key(5))
    jitted = jax.jit(lambda d, k: d.sample_and_log_prob(k))(dist, jax.random.key(5))
    for a, b in zip(eager, jitted, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
