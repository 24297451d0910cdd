import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from purerl.core.ops.optim import current_lr, linear_decay, linear_schedule, make_optimizer


def test_linear_decay_matches_numpy():
    schedule = linear_decay(0.1, num_updates=5, steps_per_update=4)
    counts = np.arange(0, 26)
    expected = 0.1 * np.maximum(1 - (counts // 4) / 5, 0)
    np.testing.assert_allclose([schedule(c) for c in counts], expected, rtol=1e-6, atol=1e-9)


def test_current_lr_constant_without_annealing():
    assert current_lr(0.3, jnp.int32(1000), None) == np.float32(0.3)


@given(st.floats(0.01, 10.0), st.integers(0, 1000))
def test_clip_by_global_norm_bounds_the_update(max_norm, seed):
    # With lr = 1 and Adam's moments at their first step the update equals sign-like g / |g|;
    # check the clipped gradient itself, which is what the first transform yields.
    grads = {"a": jax.random.normal(jax.random.key(seed), (5,)) * 10, "b": jnp.full((3,), 7.0)}
    clipped, _ = optax.clip_by_global_norm(max_norm).update(grads, optax.EmptyState())
    assert optax.tree.norm(clipped) <= max_norm * (1 + 1e-5)


def test_make_optimizer_first_step_matches_adam_by_hand():
    # Adam's first step: m = (1-b1) g, v = (1-b2) g^2, bias-corrected m/(sqrt(v)+eps) = g/(|g|+eps)
    params = {"w": jnp.array([1.0, -2.0])}
    grads = {"w": jnp.array([0.5, -4.0])}  # global norm 4.03 > 1: clipped by 1/4.03 first
    tx = make_optimizer(0.1, 1.0)
    updates, _ = tx.update(grads, tx.init(params), params)
    g = np.array([0.5, -4.0]) / np.linalg.norm([0.5, -4.0])
    np.testing.assert_allclose(updates["w"], -0.1 * g / (np.abs(g) + 1e-5), rtol=1e-5)


def test_traced_hyperparameters_keep_the_optimizer_state_structure():
    params = {"w": jnp.ones(3)}
    static = jax.tree.structure(make_optimizer(0.1, 0.5, anneal_over=(10, 2)).init(params))

    @jax.jit
    def traced(lr, norm):
        return make_optimizer(lr, norm, anneal_over=(10, 2)).init(params)

    assert jax.tree.structure(traced(jnp.float32(0.2), jnp.float32(1.0))) == static


@pytest.mark.parametrize("start, end, duration", [(1.0, 0.05, 10), (0.0, 2.0, 3), (0.5, 0.1, 0)])
def test_linear_schedule_matches_numpy(start, end, duration):
    counts = np.arange(0, 15)
    fraction = np.clip(counts / duration, 0, 1) if duration > 0 else np.ones(len(counts))
    expected = start + fraction * (end - start)
    schedule = linear_schedule(start, end, duration)
    np.testing.assert_allclose([schedule(c) for c in counts], expected, rtol=1e-6, atol=1e-7)
    traced = jax.jit(lambda c, d: linear_schedule(start, end, d)(c))
    np.testing.assert_allclose(traced(counts, duration), expected, rtol=1e-6, atol=1e-7)
