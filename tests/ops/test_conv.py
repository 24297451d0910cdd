"""conv2d and its hand-written gradients against a NumPy reference, and its speed-critical form."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.core.ops.conv import conv2d


def conv_reference(x, kernel, stride):
    """Direct VALID convolution, float64: out[n,i,j,o] = sum x[n,i*s+a,j*s+b,c] k[a,b,c,o]."""
    kh, kw = kernel.shape[:2]
    out_h = (x.shape[1] - kh) // stride + 1
    out_w = (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], out_h, out_w, kernel.shape[3]))
    for i in range(out_h):
        for j in range(out_w):
            patch = x[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :]
            out[:, i, j, :] = np.einsum("nabc,abco->no", patch, kernel)
    return out


def grads_reference(x, kernel, stride, grad_out):
    """The gradients of sum(conv(x, kernel) * grad_out), accumulated patch by patch."""
    kh, kw = kernel.shape[:2]
    grad_x, grad_kernel = np.zeros_like(x), np.zeros_like(kernel)
    for i in range(grad_out.shape[1]):
        for j in range(grad_out.shape[2]):
            rows = slice(i * stride, i * stride + kh)
            cols = slice(j * stride, j * stride + kw)
            g = grad_out[:, i, j, :]
            grad_x[:, rows, cols, :] += np.einsum("no,abco->nabc", g, kernel)
            grad_kernel += np.einsum("nabc,no->abco", x[:, rows, cols, :], g)
    return grad_x, grad_kernel


# Nature CNN shapes (scaled down in batch) and cases where the stride leaves a remainder.
CASES = [
    # (n, h, w, c_in, c_out, k, stride)
    (2, 84, 84, 4, 3, 8, 4),
    (2, 20, 20, 3, 5, 4, 2),
    (2, 9, 9, 5, 4, 3, 1),
    (3, 11, 13, 2, 3, 4, 3),
    (1, 7, 6, 3, 2, 2, 2),
]


@pytest.mark.parametrize("n,h,w,c_in,c_out,k,stride", CASES)
def test_forward_and_gradients_match_numpy(n, h, w, c_in, c_out, k, stride):
    rng = np.random.default_rng(h * 100 + k)
    x = rng.normal(size=(n, h, w, c_in))
    kernel = rng.normal(size=(k, k, c_in, c_out))
    out, vjp = jax.vjp(lambda a, b: conv2d(a, b, stride), jnp.float32(x), jnp.float32(kernel))
    expected = conv_reference(x, kernel, stride)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)

    grad_out = rng.normal(size=expected.shape)
    grad_x, grad_kernel = vjp(jnp.float32(grad_out))
    ref_x, ref_kernel = grads_reference(x, kernel, stride, grad_out)
    np.testing.assert_allclose(grad_x, ref_x, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(grad_kernel, ref_kernel, rtol=1e-4, atol=1e-3)


def test_bfloat16_inputs_give_bfloat16_gradients():
    x = jnp.ones((1, 8, 8, 2), jnp.bfloat16)
    kernel = jnp.ones((3, 3, 2, 4), jnp.bfloat16)
    grad_x, grad_kernel = jax.grad(lambda a, b: conv2d(a, b, 1).sum(), (0, 1))(x, kernel)
    assert grad_x.dtype == jnp.bfloat16 and grad_kernel.dtype == jnp.bfloat16
    assert float(grad_kernel[0, 0, 0, 0]) == 36.0  # 6x6 output positions, all ones


def test_gradients_inside_a_loop_are_channel_last_convolutions():
    # The reason conv2d exists: inside a while loop XLA:CPU keeps JAX's own gradient
    # convolutions in their non-canonical dimension orders and runs them naively.
    x = jnp.ones((4, 20, 20, 3))
    kernel = jnp.ones((4, 4, 3, 8))

    def loop(kernel, conv):
        def step(kernel, _):
            grad = jax.grad(lambda k: conv(x, k, 2).sum())(kernel)
            return kernel - 0.1 * grad, None

        return jax.lax.scan(step, kernel, None, length=2)[0]

    def dimension_orders(conv):
        hlo = jax.jit(lambda k: loop(k, conv)).lower(kernel).compile().as_text()
        return {
            line.split("dim_labels=")[1].split(",")[0]
            for line in hlo.splitlines()
            if " convolution(" in line
        }

    def lax_conv(a, b, stride):
        return jax.lax.conv_general_dilated(
            a, b, (stride, stride), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )

    assert dimension_orders(conv2d) == {"b01f_01io->b01f"}
    # The check can fail: JAX's own gradients in the same loop use other orders.
    assert dimension_orders(lax_conv) != {"b01f_01io->b01f"}
