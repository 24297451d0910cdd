import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.nets import orthogonal


def test_orthogonal_init_vmapped_equals_flax_one_key_at_a_time():
    # Vmapped over seeds it loops over single QRs (no batched LAPACK call that can deadlock
    # XLA:CPU's pool); each seed must get exactly the matrix flax gives that key alone.
    keys = jax.random.split(jax.random.key(3), 3)
    shape = (7, 5)
    batched = jax.jit(jax.vmap(lambda k: orthogonal(1.7)(k, shape)))(keys)
    flax_init = nn.initializers.orthogonal(1.7)
    for key, matrix in zip(keys, batched, strict=True):
        expected = jax.jit(lambda k: flax_init(k, shape))(key)
        np.testing.assert_array_equal(np.asarray(matrix), np.asarray(expected))
    # Columns are orthogonal with norm 1.7: the property the initialiser exists for.
    gram = np.asarray(batched[0]).T @ np.asarray(batched[0])
    np.testing.assert_allclose(gram, 1.7**2 * np.eye(5), atol=1e-5)


def test_twin_critics_are_independent_and_actors_respect_the_bounds():
    from purerl.core.env import Box, EnvSpec
    from purerl.core.nets import make_continuous_nets

    spec = EnvSpec("toy", (3,), "float32", Box((-2.0, 0.0), (2.0, 1.0), (2,)), num_envs=5)
    obs = jax.random.normal(jax.random.key(0), (5, 3))
    action = jnp.ones((5, 2))
    for stochastic in (True, False):
        actor, critics = make_continuous_nets(spec, (8, 8), "relu", stochastic=stochastic)
        critic_params = critics.init(jax.random.key(1), obs, action)
        q = critics.apply(critic_params, obs, action)
        assert q.shape == (2, 5) and q.dtype == jnp.float32
        assert not np.allclose(q[0], q[1])  # each critic has its own initialisation
        out = actor.apply(actor.init(jax.random.key(2), obs), obs)
        acted = out.sample(jax.random.key(3)) if stochastic else out
        assert acted.shape == (5, 2)
        assert (acted[:, 0] >= -2).all() and (acted[:, 0] <= 2).all()
        assert (acted[:, 1] >= 0).all() and (acted[:, 1] <= 1).all()
