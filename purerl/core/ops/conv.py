"""A 2-D convolution whose gradients are themselves channel-last convolutions.

XLA:CPU runs a convolution fast (through Eigen) only in the canonical channel-last form,
``NHWC`` input, ``HWIO`` kernel, ``NHWC`` output. The gradients JAX derives for a convolution
use other dimension orders (the kernel gradient contracts over the batch axis), and inside a
``while`` loop, which is where every update of a ``lax.scan`` training loop runs, XLA:CPU leaves
them in that form and falls back to a naive loop, so the Nature CNN's backward pass runs far
slower inside the minibatch scan than outside it (jax-ml/jax#12868; figures in
docs/notes). ``conv2d`` writes both gradients as canonical convolutions on explicitly
transposed operands, which XLA:CPU runs at full speed anywhere. Other backends are unaffected
either way.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from purerl.core.types import Array

CHANNELS_LAST = ("NHWC", "HWIO", "NHWC")


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def conv2d(x: Array, kernel: Array, stride: int) -> Array:
    """``VALID`` convolution of ``x [N, H, W, C_in]`` with ``kernel [kh, kw, C_in, C_out]``
    at ``stride`` in both spatial axes; returns ``[N, H_out, W_out, C_out]``."""
    return _forward(x, kernel, stride)


def _forward(x: Array, kernel: Array, stride: int) -> Array:
    return jax.lax.conv_general_dilated(
        x, kernel, (stride, stride), "VALID", dimension_numbers=CHANNELS_LAST
    )


def _conv2d_fwd(x: Array, kernel: Array, stride: int):
    return _forward(x, kernel, stride), (x, kernel)


def _conv2d_bwd(stride: int, residuals, grad_out: Array):
    x, kernel = residuals
    kh, kw = kernel.shape[:2]
    # Input rows the forward pass never reached (VALID drops a remainder when the stride does
    # not divide the input): their gradient is zero, added as extra high padding.
    rest_h = (x.shape[1] - kh) % stride
    rest_w = (x.shape[2] - kw) % stride

    # d/dx: the output gradient, dilated by the stride and fully padded, convolved with the
    # kernel flipped in space and with its channel axes swapped.
    flipped = jnp.flip(kernel, (0, 1)).transpose(0, 1, 3, 2)
    grad_x = jax.lax.conv_general_dilated(
        grad_out,
        flipped.astype(grad_out.dtype),
        (1, 1),
        [(kh - 1, kh - 1 + rest_h), (kw - 1, kw - 1 + rest_w)],
        lhs_dilation=(stride, stride),
        dimension_numbers=CHANNELS_LAST,
    ).astype(x.dtype)

    # d/dkernel: input channels play the batch, the batch plays the contracted channels, and
    # the output gradient (dilated by the stride) is the kernel of that convolution.
    grad_kernel = jax.lax.conv_general_dilated(
        x.transpose(3, 1, 2, 0),
        grad_out.transpose(1, 2, 0, 3).astype(x.dtype),
        (1, 1),
        "VALID",
        rhs_dilation=(stride, stride),
        dimension_numbers=CHANNELS_LAST,
    )[:, :kh, :kw, :]
    return grad_x, grad_kernel.transpose(1, 2, 0, 3).astype(kernel.dtype)


conv2d.defvjp(_conv2d_fwd, _conv2d_bwd)
