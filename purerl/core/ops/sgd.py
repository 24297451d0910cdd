"""Minibatch stochastic gradient descent over a collected batch, as nested ``lax.scan``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from purerl.core.types import Array, Key, Metrics, PyTree

LossFn = Callable[[PyTree, PyTree], tuple[Array, Metrics]]
"""``loss_fn(params, minibatch) -> (loss, metrics)``."""


def pmean(x: PyTree, axis_name: str | None) -> PyTree:
    """Mean over the named mapped axis, or ``x`` unchanged when there is none."""
    return x if axis_name is None else jax.lax.pmean(x, axis_name)


def psum(x: PyTree, axis_name: str | None) -> PyTree:
    """Sum over the named mapped axis, or ``x`` unchanged when there is none."""
    return x if axis_name is None else jax.lax.psum(x, axis_name)


def fold_in_axis(key: Key, axis_name: str | None) -> Key:
    """A key of its own for each position on ``axis_name`` (``key`` itself without one).

    Data-parallel replicas draw environment resets, exploration and minibatch orders from
    their own streams, while parameters start from the shared key.
    """
    return key if axis_name is None else jax.random.fold_in(key, jax.lax.axis_index(axis_name))


def vary_over_axis(tree: PyTree, axis_name: str | None) -> PyTree:
    """``tree`` typed as differing along the named mapped axis (``shard_map``'s varying
    arrays), as anything computed from a device's own data is. A loop carry that starts from
    constants (a recurrent network's initial state) needs it: its type may not change from one
    step to the next."""
    return tree if axis_name is None else jax.lax.pcast(tree, axis_name, to="varying")


def flatten_time_batch(tree: PyTree) -> PyTree:
    """``[T, B, ...]`` leaves to ``[T * B, ...]``."""
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), tree)


class Sequences(NamedTuple):
    """Training data cut into sequences a recurrent network replays, ``[S, L, ...]``."""

    data: PyTree
    """Per-step training data, ``[S, L, ...]``."""
    hidden: PyTree
    """The cell's state each sequence starts from, ``[S, ...]``."""
    start: Array
    """bool ``[S, L]``: the step's observation begins an episode (the cell resets there)."""


def split_sequences(data: PyTree, hidden: PyTree, start: Array, length: int) -> Sequences:
    """Rollout data ``[T, B, ...]`` into ``S = T * B / length`` sequences of ``length`` steps of
    one environment each (environment-major within each time window), with the recorded cell
    state ``hidden`` ``[T, B, ...]`` at each sequence's first step."""
    num_steps, num_envs = start.shape
    if num_steps % length:
        raise ValueError(f"sequences of {length} steps do not tile a rollout of {num_steps}")
    windows = num_steps // length

    def cut(x):  # [T, B, ...] -> [T / L * B, L, ...]
        x = x.reshape((windows, length, num_envs) + x.shape[2:]).swapaxes(1, 2)
        return x.reshape((windows * num_envs, length) + x.shape[3:])

    first = jax.tree.map(lambda h: h[::length].reshape((windows * num_envs,) + h.shape[2:]), hidden)
    return Sequences(jax.tree.map(cut, data), first, cut(start))


def time_major(x: Array) -> Array:
    """``[S, L, ...]`` to ``[L, S, ...]``, the layout a recurrent network runs along."""
    return x.swapaxes(0, 1)


def replay_sequences(apply: Callable[..., Any], seqs: Sequences) -> tuple[Any, PyTree]:
    """A recurrent network over minibatch sequences: ``apply(hidden [S, ...], obs [L, S, ...],
    start [L, S])`` from each sequence's recorded state, and the per-step data flat ``[L * S]``
    in the time-major order of its outputs."""
    steps = jax.tree.map(time_major, seqs.data)
    return apply(seqs.hidden, steps.obs, time_major(seqs.start)), flatten_time_batch(steps)


def shuffle_into_minibatches(key: Key, batch: PyTree, num_minibatches: int) -> PyTree:
    """A random permutation of ``batch`` (leaves ``[N, ...]``), split to ``[M, N / M, ...]``."""
    size = jax.tree.leaves(batch)[0].shape[0]
    chex.assert_tree_shape_prefix(batch, (size,))
    if size % num_minibatches:
        raise ValueError(f"batch of {size} does not split into {num_minibatches} minibatches")
    order = jax.random.permutation(key, size)
    return jax.tree.map(
        lambda x: x[order].reshape((num_minibatches, size // num_minibatches) + x.shape[1:]),
        batch,
    )


def sgd_step(
    params: PyTree,
    opt_state: Any,
    minibatch: PyTree,
    loss_fn: LossFn,
    tx: optax.GradientTransformation,
    axis_name: str | None = None,
) -> tuple[PyTree, Any, Metrics]:
    """One gradient step; gradients are averaged over ``axis_name`` when given."""
    (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, minibatch)
    grads = pmean(grads, axis_name)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return (
        params,
        opt_state,
        {**metrics, "loss/total": loss, "optim/grad_norm": optax.tree.norm(grads)},
    )


def minibatch_epochs(
    key: Key,
    params: PyTree,
    opt_state: Any,
    batch: PyTree,
    loss_fn: LossFn,
    tx: optax.GradientTransformation,
    num_epochs: int,
    num_minibatches: int,
    axis_name: str | None = None,
) -> tuple[PyTree, Any, Metrics]:
    """``num_epochs`` passes over ``batch``, each in ``num_minibatches`` shuffled minibatches.

    Args:
        key: shuffling key; each epoch uses its own permutation.
        batch: leaves ``[N, ...]`` with ``N`` divisible by ``num_minibatches``.
        loss_fn: ``(params, minibatch) -> (loss, metrics)``.

    Returns:
        Updated ``(params, opt_state)`` and the metrics averaged over all gradient steps.
    """

    def epoch(carry, epoch_key):
        minibatches = shuffle_into_minibatches(epoch_key, batch, num_minibatches)

        def step(carry, minibatch):
            params, opt_state = carry
            params, opt_state, metrics = sgd_step(
                params, opt_state, minibatch, loss_fn, tx, axis_name
            )
            return (params, opt_state), metrics

        return jax.lax.scan(step, carry, minibatches)

    (params, opt_state), metrics = jax.lax.scan(
        epoch, (params, opt_state), jax.random.split(key, num_epochs)
    )
    return params, opt_state, jax.tree.map(jnp.mean, metrics)
