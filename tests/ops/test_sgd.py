import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from purerl.core.ops.sgd import flatten_time_batch, minibatch_epochs, shuffle_into_minibatches


def test_shuffled_minibatches_are_a_permutation_of_the_batch():
    batch = {"x": jnp.arange(24.0), "y": jnp.arange(24) * 10}
    mbs = shuffle_into_minibatches(jax.random.key(0), batch, 4)
    assert mbs["x"].shape == (4, 6)
    assert sorted(np.asarray(mbs["x"]).ravel().tolist()) == list(range(24))
    # leaves stay aligned row by row
    np.testing.assert_array_equal(np.asarray(mbs["y"]), np.asarray(mbs["x"]).astype(int) * 10)
    assert not np.array_equal(np.asarray(mbs["x"]).ravel(), np.arange(24))


def test_indivisible_batch_is_rejected():
    with pytest.raises(ValueError, match="does not split into 5 minibatches"):
        shuffle_into_minibatches(jax.random.key(0), {"x": jnp.zeros(12)}, 5)


def test_flatten_time_batch():
    x = jnp.arange(24).reshape(2, 3, 4)
    assert flatten_time_batch({"x": x})["x"].shape == (6, 4)


def test_minibatch_epochs_equals_a_python_loop_of_sgd_steps():
    rng = np.random.default_rng(0)
    batch = {
        "x": jnp.asarray(rng.normal(size=(12, 3)), jnp.float32),
        "y": jnp.asarray(rng.normal(size=12), jnp.float32),
    }
    params = {"w": jnp.zeros(3)}
    tx = optax.sgd(0.1)

    def loss_fn(p, mb):
        err = mb["x"] @ p["w"] - mb["y"]
        return jnp.mean(err**2), {"loss/mse": jnp.mean(err**2)}

    key = jax.random.key(3)
    out_params, _, metrics = minibatch_epochs(
        key, params, tx.init(params), batch, loss_fn, tx, 2, 3
    )

    manual = {"w": jnp.zeros(3)}
    losses = []
    for epoch_key in jax.random.split(key, 2):
        mbs = shuffle_into_minibatches(epoch_key, batch, 3)
        for i in range(3):
            mb = jax.tree.map(lambda x, i=i: x[i], mbs)
            loss, grads = jax.value_and_grad(lambda p, mb=mb: loss_fn(p, mb)[0])(manual)
            losses.append(loss)
            manual = jax.tree.map(lambda p, g: p - 0.1 * g, manual, grads)
    np.testing.assert_allclose(out_params["w"], manual["w"], rtol=1e-5)
    np.testing.assert_allclose(metrics["loss/mse"], np.mean(losses), rtol=1e-5)
    assert "optim/grad_norm" in metrics
