import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from purerl.core.ops.losses import (
    critics_loss,
    masked_mean,
    normalize_advantages,
    ppo_policy_loss,
    td_loss,
    value_loss,
)


def random_batch(seed, n=32):
    rng = np.random.default_rng(seed)
    old_log_prob = rng.normal(size=n).astype(np.float32) - 1.0
    log_prob = old_log_prob + rng.normal(scale=0.3, size=n).astype(np.float32)
    advantages = rng.normal(size=n).astype(np.float32)
    mask = rng.random(n) < 0.8
    return log_prob, old_log_prob, advantages, mask


def ppo_reference(log_prob, old_log_prob, advantages, clip_eps, mask):
    ratio = np.exp(log_prob.astype(np.float64) - old_log_prob)
    objective = np.minimum(
        ratio * advantages, np.clip(ratio, 1 - clip_eps, 1 + clip_eps) * advantages
    )
    m = mask.astype(np.float64)
    loss = -(objective * m).sum() / m.sum()
    kl = (((ratio - 1) - np.log(ratio)) * m).sum() / m.sum()
    clip_frac = ((np.abs(ratio - 1) > clip_eps) * m).sum() / m.sum()
    return loss, kl, clip_frac


@pytest.mark.parametrize("seed", range(4))
def test_policy_loss_matches_numpy(seed):
    batch = random_batch(seed)
    with jax.numpy_rank_promotion("raise"):
        loss, aux = ppo_policy_loss(*batch[:3], 0.2, batch[3])
    ref_loss, ref_kl, ref_clip = ppo_reference(*batch[:3], 0.2, batch[3])
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(aux["approx_kl"], ref_kl, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(aux["clip_frac"], ref_clip, rtol=1e-6)


def test_policy_loss_hand_computed():
    # ratio = e^0.5 = 1.6487 > 1.2 with A = 2: min(3.297, 1.2 * 2 = 2.4) = 2.4
    # ratio = 1 with A = -1: -1.  loss = -(2.4 - 1) / 2 = -0.7
    loss, aux = ppo_policy_loss(
        jnp.array([0.5, 0.0]), jnp.zeros(2), jnp.array([2.0, -1.0]), 0.2, jnp.ones(2, bool)
    )
    np.testing.assert_allclose(loss, -0.7, rtol=1e-6)
    np.testing.assert_allclose(aux["clip_frac"], 0.5)


@given(st.floats(-1.5, 1.5), st.floats(-3, 3).filter(lambda a: abs(a) > 1e-3))
def test_clipped_policy_loss_has_zero_gradient_where_clipped(log_ratio, advantage):
    grad = jax.grad(
        lambda lp: ppo_policy_loss(
            lp, jnp.zeros(1), jnp.array([advantage]), 0.2, jnp.ones(1, bool)
        )[0]
    )(jnp.array([log_ratio]))
    ratio = np.exp(log_ratio)
    clipped_up = advantage > 0 and ratio > 1.2 + 1e-4
    clipped_down = advantage < 0 and ratio < 0.8 - 1e-4
    if clipped_up or clipped_down:
        assert grad[0] == 0.0
    elif 0.8 + 1e-4 < ratio < 1.2 - 1e-4:
        np.testing.assert_allclose(grad[0], -ratio * advantage, rtol=1e-4)


def test_value_loss_matches_numpy_clipped_and_unclipped():
    rng = np.random.default_rng(0)
    values, old, targets = (rng.normal(size=20).astype(np.float32) for _ in range(3))
    mask = rng.random(20) < 0.7
    m = mask.astype(np.float64)
    unclipped_ref = 0.5 * (((values - targets) ** 2) * m).sum() / m.sum()
    clipped = old + np.clip(values - old, -0.1, 0.1)
    clipped_ref = (
        0.5 * (np.maximum((values - targets) ** 2, (clipped - targets) ** 2) * m).sum() / m.sum()
    )
    np.testing.assert_allclose(value_loss(values, old, targets, mask), unclipped_ref, rtol=1e-5)
    np.testing.assert_allclose(value_loss(values, old, targets, mask, 0.1), clipped_ref, rtol=1e-5)


def test_masked_mean_ignores_masked_entries_and_handles_empty_mask():
    x = jnp.array([1.0, 100.0, 3.0])
    assert masked_mean(x, jnp.array([True, False, True])) == 2.0
    assert masked_mean(x, jnp.zeros(3, bool)) == 0.0


@given(hnp.arrays(np.float32, 16, elements=st.floats(-10, 10, width=32)), hnp.arrays(bool, 16))
def test_normalized_advantages_have_zero_mean_unit_std_over_the_mask(adv, mask):
    if mask.sum() < 2 or np.std(adv[mask]) < 1e-2:
        return
    out = np.asarray(normalize_advantages(jnp.asarray(adv), jnp.asarray(mask)))
    np.testing.assert_allclose(out[mask].mean(), 0.0, atol=1e-4)
    np.testing.assert_allclose(out[mask].std(), 1.0, rtol=1e-3)


def td_reference(q, targets, mask, kind):
    error = q.astype(np.float64) - targets
    if kind == "huber":
        per = np.where(np.abs(error) <= 1, 0.5 * error**2, np.abs(error) - 0.5)
    else:
        per = 0.5 * error**2
    return (per * mask).sum() / mask.sum()


@pytest.mark.parametrize("kind", ["huber", "mse"])
@pytest.mark.parametrize("seed", range(3))
def test_td_loss_matches_numpy(kind, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(scale=2.0, size=32).astype(np.float32)  # errors on both sides of 1
    targets = rng.normal(scale=2.0, size=32).astype(np.float32)
    mask = rng.random(32) < 0.8
    with jax.numpy_rank_promotion("raise"):
        got = td_loss(q, targets, mask, kind)
    np.testing.assert_allclose(got, td_reference(q, targets, mask, kind), rtol=1e-5)


def test_huber_by_hand_and_its_gradient_is_clipped():
    # errors 0.5 and 3: 0.5 * 0.25 = 0.125 and 3 - 0.5 = 2.5; mean 1.3125
    q, targets, mask = jnp.array([0.5, 3.0]), jnp.zeros(2), jnp.ones(2, bool)
    assert td_loss(q, targets, mask, "huber") == pytest.approx(1.3125)
    grad = jax.grad(lambda q: td_loss(q, targets, mask, "huber"))(q)
    np.testing.assert_allclose(grad, [0.25, 0.5])  # d/dq of the mean: error / 2, then 1 / 2


def test_td_loss_rejects_unknown_kind():
    with pytest.raises(ValueError, match="td loss must be one of"):
        td_loss(jnp.zeros(2), jnp.zeros(2), jnp.ones(2, bool), "l1")


def test_critics_loss_by_hand():
    # Critic 0 misses targets [1, 2] by [1, 0]: mean 0.5; critic 1 by [0, 2]: mean 2. The third
    # entry is masked out. Sum 2.5.
    q = np.array([[2.0, 2.0, 100.0], [1.0, 4.0, -100.0]], np.float32)
    targets = np.array([1.0, 2.0, 0.0], np.float32)
    mask = np.array([True, True, False])
    np.testing.assert_allclose(critics_loss(q, targets, mask), 2.5)


@pytest.mark.parametrize("seed", range(3))
def test_critics_loss_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(2, 20)).astype(np.float32)
    targets = rng.normal(size=20).astype(np.float32)
    mask = rng.random(20) < 0.7
    m = mask.astype(np.float64)
    expected = sum((((row - targets) ** 2) * m).sum() / m.sum() for row in q.astype(np.float64))
    with jax.numpy_rank_promotion("raise"):
        np.testing.assert_allclose(critics_loss(q, targets, mask), expected, rtol=1e-5)
        np.testing.assert_allclose(jax.jit(critics_loss)(q, targets, mask), expected, rtol=1e-5)
    # Each critic's gradient is its own error only: 2 (q - target) m / sum(m).
    grad = jax.grad(critics_loss)(q, targets, mask)
    np.testing.assert_allclose(grad, 2 * (q - targets) * m / m.sum(), rtol=1e-5, atol=1e-7)
