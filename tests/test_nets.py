import flax.linen as nn
import jax
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
